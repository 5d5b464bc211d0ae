#!/usr/bin/python3
"""Writes spec/fixtures/day_one.lua (PyTorch 1.13 values for spec/day_one_spec.lua: the
functionals' keyword arguments and F.avg_pool2d, F.pad, F.normalize, F.batch_norm,
F.cosine_similarity) and spec/fixtures/torch_pickle.pt (a torch.save file ltc.load refuses).
Run with Debian's python3: /usr/bin/python3 tools/gen_day_one_fixtures.py"""
import torch
import torch.nn.functional as F

from fixture_common import write  # float64 default, Lua literals

x = torch.arange(1.0, 2 * 2 * 4 * 4 + 1).reshape(2, 2, 4, 4) / 7 - 2
w = torch.arange(1.0, 2 * 2 * 2 * 2 + 1).reshape(2, 2, 2, 2) / 10 - 0.7
v = torch.tensor([[3.0, -4.0, 1.0], [0.5, 2.0, -1.5]])
u = torch.tensor([[1.0, 2.0, 2.0], [-1.0, 0.0, 4.0]])
rm, rv = torch.tensor([0.5, -0.5]), torch.tensor([2.0, 0.5])
bw, bb = torch.tensor([1.5, 0.5]), torch.tensor([0.1, -0.2])
out = {
    "x": x, "w": w, "v": v, "u": u,
    "conv_stride2": F.conv2d(x, w, None, stride=2),
    "conv_pad1_dil2": F.conv2d(x, w, None, padding=1, dilation=2),
    "max_pool_stride1": F.max_pool2d(x, 2, stride=1),
    "avg_pool2": F.avg_pool2d(x, 2),
    "avg_pool3_s2_p1": F.avg_pool2d(x, 3, stride=2, padding=1),
    "avg_pool3_s2_p1_nopad": F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
    "softmax_dim0": F.softmax(v, dim=0),
    "pad_1_2": F.pad(v, (1, 2)),
    "pad_1_0_0_1_val": F.pad(v, (1, 0, 0, 1), value=-1.5),
    "pad_neg": F.pad(v, (-1, 1)),
    "normalize": F.normalize(v),
    "normalize_p1_dim0": F.normalize(v, p=1, dim=0),
    "cosine": F.cosine_similarity(v, u),
    "cosine_dim0": F.cosine_similarity(v, u, dim=0),
    "bn_eval": F.batch_norm(x, rm, rv, bw, bb, training=False, eps=1e-5),
}
rm2, rv2 = rm.clone(), rv.clone()
out["bn_train"] = F.batch_norm(x, rm2, rv2, bw, bb, training=True, momentum=0.2)
out["bn_train_rm"], out["bn_train_rv"] = rm2, rv2

write("spec/fixtures/day_one.lua", out, "tools/gen_day_one_fixtures.py")
torch.save({"w": torch.ones(2)}, "spec/fixtures/torch_pickle.pt")
