#!/usr/bin/python3
"""Fixtures for spec/nn_losses_spec.lua, spec/optim_sched_spec.lua and spec/rnn_spec.lua:
values PyTorch computes, written as Lua tables (inputs and expected outputs side by side).

Run with Debian's Python (python3-torch): /usr/bin/python3 tools/gen_nn_fixtures.py
Labels are written 1-based (ltc's convention); PyTorch gets them 0-based.
"""
import math
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F

from fixture_common import lua, seeded, write  # float64 default, Lua literals


def losses():
    g, r = seeded(0)
    out = {}
    x = r(4, 3)
    t = torch.tensor([0, 2, 1, 2])
    w = torch.tensor([0.2, 1.0, 3.0])
    xs = r(2, 3, 2, 2)
    ts = torch.tensor([[[0, 1], [2, 1]], [[1, 1], [0, 2]]])
    p = torch.softmax(r(4, 3), 1)
    cases = [
        ("ce_plain", x, t, {}),
        ("ce_weight", x, t, {"weight": w}),
        ("ce_ignore", x, t, {"ignore_index": 2}),
        ("ce_smooth", x, t, {"label_smoothing": 0.1}),
        ("ce_all", x, t, {"weight": w, "ignore_index": 1, "label_smoothing": 0.2}),
        ("ce_sum_weight", x, t, {"weight": w, "reduction": "sum"}),
        ("ce_none_smooth", x, t, {"label_smoothing": 0.3, "reduction": "none"}),
        ("ce_spatial", xs, ts, {"weight": w}),
        ("ce_spatial_none", xs, ts, {"reduction": "none"}),
        ("ce_probs", x, p, {}),
        ("ce_probs_smooth_weight", x, p, {"label_smoothing": 0.1, "weight": w}),
    ]
    for name, inp, tgt, o in cases:
        inp = inp.clone().requires_grad_()
        l = F.cross_entropy(inp, tgt, **o)
        l.sum().backward()
        lo = dict(o)
        tl = tgt + 1 if tgt.dtype == torch.int64 else tgt
        out[name] = {"x": inp.detach(), "t": tl, "int": tgt.dtype == torch.int64, "opts": lo,
                     "out": l.detach(), "grad": inp.grad}
    lp = torch.log_softmax(x, 1)
    for name, o in [("nll_weight", {"weight": w}), ("nll_ignore", {"ignore_index": 0}),
                    ("nll_none", {"weight": w, "reduction": "none"})]:
        inp = lp.clone().requires_grad_()
        l = F.nll_loss(inp, t, **o)
        l.sum().backward()
        out[name] = {"x": inp.detach(), "t": t + 1, "int": True, "opts": o, "out": l.detach(),
                     "grad": inp.grad}
    a, b = r(3, 4), r(3, 4)
    prob = torch.sigmoid(a)
    y01 = (r(3, 4) > 0).double()
    pw = torch.tensor([0.5, 1.0, 2.0, 3.0])
    ew = torch.rand(3, 4, generator=g)
    simple = [
        ("l1", F.l1_loss, a, b, {}),
        ("l1_sum", F.l1_loss, a, b, {"reduction": "sum"}),
        ("smooth_l1", F.smooth_l1_loss, a, b, {}),
        ("smooth_l1_beta", F.smooth_l1_loss, a, b, {"beta": 0.5}),
        ("huber", F.huber_loss, a, b, {"delta": 0.7}),
        ("huber_none", F.huber_loss, a, b, {"reduction": "none"}),
        ("bce", F.binary_cross_entropy, prob, y01, {}),
        ("bce_weight", F.binary_cross_entropy, prob, y01, {"weight": ew}),
        ("bce_logits", F.binary_cross_entropy_with_logits, a, y01, {}),
        ("bce_logits_pw", F.binary_cross_entropy_with_logits, a, y01, {"pos_weight": pw, "weight": ew}),
        ("kl", F.kl_div, torch.log_softmax(a, 1), torch.softmax(b, 1), {"reduction": "batchmean"}),
        ("kl_mean", F.kl_div, torch.log_softmax(a, 1), torch.softmax(b, 1), {}),
        ("kl_log", F.kl_div, torch.log_softmax(a, 1), torch.log_softmax(b, 1), {"log_target": True, "reduction": "sum"}),
        ("mse", F.mse_loss, a, b, {}),
    ]
    for name, fn, i1, i2, o in simple:
        inp = i1.clone().requires_grad_()
        l = fn(inp, i2, **o)
        l.sum().backward()
        out[name] = {"x": inp.detach(), "t": i2, "opts": o, "out": l.detach(), "grad": inp.grad}
    y = torch.tensor([1, -1, 1])
    for name, o in [("cosine_emb", {"margin": 0.2}), ("cosine_emb_none", {"reduction": "none"})]:
        inp = a.clone().requires_grad_()
        l = F.cosine_embedding_loss(inp, b, y, **o)
        l.sum().backward()
        out[name] = {"x": inp.detach(), "x2": b, "y": y, "opts": o, "out": l.detach(), "grad": inp.grad}
    return out


def rnn():
    """Recurrent modules: weights (PyTorch's names), input, initial states, outputs, final
    states, and the gradients of sum(output * gw) with respect to the input and weight_hh_l0."""
    torch.manual_seed(0)
    out = {}
    T, B, I, H = 5, 2, 3, 4
    cfgs = [
        ("rnn_tanh", nn.RNN, {"num_layers": 2}),
        ("rnn_relu_bidir", nn.RNN, {"nonlinearity": "relu", "bidirectional": True}),
        ("lstm", nn.LSTM, {"num_layers": 2}),
        ("lstm_bidir_bf", nn.LSTM, {"num_layers": 2, "bidirectional": True, "batch_first": True}),
        ("gru", nn.GRU, {"num_layers": 2}),
        ("gru_bidir_nobias", nn.GRU, {"bidirectional": True, "bias": False}),
    ]
    for name, cls, o in cfgs:
        m = cls(I, H, **o)
        L = o.get("num_layers", 1)
        D = 2 if o.get("bidirectional") else 1
        x = torch.randn(B, T, I) if o.get("batch_first") else torch.randn(T, B, I)
        x.requires_grad_()
        h0 = torch.randn(L * D, B, H)
        if cls is nn.LSTM:
            c0 = torch.randn(L * D, B, H)
            y, (hn, cn) = m(x, (h0, c0))
        else:
            c0 = cn = None
            y, hn = m(x, h0)
        gw = torch.randn(*y.shape)
        (y * gw).sum().backward()
        case = {"opts": o, "params": {k: v.detach() for k, v in m.named_parameters()},
                "x": x.detach(), "h0": h0, "out": y.detach(), "hn": hn.detach(), "gw": gw,
                "grad_x": x.grad, "grad_whh": m.weight_hh_l0.grad}
        if c0 is not None:
            case["c0"] = c0
            case["cn"] = cn.detach()
        out[name] = case
    for name, cls in [("rnncell", nn.RNNCell), ("lstmcell", nn.LSTMCell), ("grucell", nn.GRUCell)]:
        m = cls(I, H)
        x = torch.randn(B, I, requires_grad=True)
        h = torch.randn(B, H)
        case = {"params": {k: v.detach() for k, v in m.named_parameters()}, "x": x.detach(), "h0": h}
        if cls is nn.LSTMCell:
            c = torch.randn(B, H)
            h1, c1 = m(x, (h, c))
            case["c0"], case["cn"] = c, c1.detach()
            (h1.sum() + (c1 * 2).sum()).backward()
        else:
            h1 = m(x, h)
            h1.sum().backward()
        case["hn"] = h1.detach()
        case["grad_x"] = x.grad
        out[name] = case
    return out


def nadam_v2(p, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, momentum_decay=4e-3):
    """PyTorch 2's NAdam (_single_tensor_nadam), written out: torch 1.13's multiplies mu
    into mu_product_next twice (fixed in 2.0), and ltc follows the fixed formula."""
    b1, b2 = betas
    p = p.clone()
    m, v, mu_product, out = torch.zeros_like(p), torch.zeros_like(p), 1.0, []
    for step, g in enumerate(grads, 1):
        if weight_decay:
            g = g + weight_decay * p
        mu = b1 * (1. - 0.5 * 0.96 ** (step * momentum_decay))
        mu_next = b1 * (1. - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
        mu_product *= mu
        m = m * b1 + g * (1 - b1)
        v = v * b2 + g * g * (1 - b2)
        denom = (v / (1 - b2 ** step)).sqrt() + eps
        p = p - lr * (1. - mu) / (1. - mu_product) * g / denom
        p = p - lr * mu_next / (1. - mu_product * mu_next) * m / denom
        out.append(p.clone())
    return out


def optim_cases():
    g = torch.Generator().manual_seed(1)
    p0 = torch.randn(3, 2, generator=g)
    grads = [torch.randn(3, 2, generator=g) for _ in range(8)]
    O = torch.optim
    cfgs = [
        ("RMSprop", O.RMSprop, {}), ("RMSprop_centered_mom", O.RMSprop, {"centered": True, "momentum": 0.9, "weight_decay": 0.1}),
        ("Adagrad", O.Adagrad, {"lr_decay": 0.1, "initial_accumulator_value": 0.5, "weight_decay": 0.01}),
        ("Adadelta", O.Adadelta, {"weight_decay": 0.1}), ("Adadelta_lr", O.Adadelta, {"lr": 0.5, "rho": 0.8}),
        ("Adamax", O.Adamax, {"weight_decay": 0.1}),
        ("RAdam", O.RAdam, {"lr": 0.01}), ("RAdam_wd", O.RAdam, {"lr": 0.01, "betas": (0.5, 0.6), "weight_decay": 0.1}),
        ("Adam_amsgrad", O.Adam, {"lr": 0.01, "amsgrad": True}),
        ("AdamW_amsgrad", O.AdamW, {"lr": 0.01, "amsgrad": True}),
        ("SGD_nesterov", O.SGD, {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
        # maximize: the gradient ascended (every optimizer of PyTorch 1.13 that has it)
        ("SGD_maximize", O.SGD, {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.1, "maximize": True}),
        ("Adam_maximize", O.Adam, {"lr": 0.01, "weight_decay": 0.1, "maximize": True}),
        ("AdamW_maximize", O.AdamW, {"lr": 0.01, "maximize": True}),
        ("RMSprop_maximize", O.RMSprop, {"momentum": 0.5, "maximize": True}),
        ("Adagrad_maximize", O.Adagrad, {"maximize": True}),
        ("Adadelta_maximize", O.Adadelta, {"maximize": True}),
        ("Adamax_maximize", O.Adamax, {"maximize": True}),
    ]
    out = {"p0": p0, "grads": grads, "cases": {}}
    for name, cls, o in cfgs:
        p = p0.clone().requires_grad_()
        opt = cls([p], **o)
        traj = []
        for gr in grads:
            p.grad = gr.clone()
            opt.step()
            traj.append(p.detach().clone())
        lo = dict(o)
        if "betas" in lo:
            lo["betas"] = list(lo["betas"])
        out["cases"][name] = {"cls": cls.__name__, "opts": lo, "traj": traj}
    out["cases"]["NAdam"] = {"cls": "NAdam", "opts": {"weight_decay": 0.1},
                             "traj": nadam_v2(p0, grads, weight_decay=0.1)}
    out["cases"]["NAdam_lr"] = {"cls": "NAdam", "opts": {"lr": 0.01, "momentum_decay": 0.01},
                                "traj": nadam_v2(p0, grads, lr=0.01, momentum_decay=0.01)}
    return out


def sched_cases():
    S = torch.optim.lr_scheduler
    out = {}

    def run(name, make, steps=25, sgd=True, metrics=None):
        p = torch.zeros(1, requires_grad=True)
        opt = torch.optim.SGD([p], lr=0.1, momentum=0.9) if sgd else torch.optim.Adam([p], lr=0.1)
        s = make(opt)
        lrs, moms = [opt.param_groups[0]["lr"]], []
        mom = lambda: opt.param_groups[0]["momentum"] if sgd else opt.param_groups[0]["betas"][0]
        moms.append(mom())
        for k in range(steps):
            opt.step()
            if metrics is not None:
                s.step(metrics[k])
            else:
                s.step()
            lrs.append(opt.param_groups[0]["lr"])
            moms.append(mom())
        out[name] = {"lrs": lrs, "moms": moms}

    run("StepLR", lambda o: S.StepLR(o, step_size=4, gamma=0.5))
    run("MultiStepLR", lambda o: S.MultiStepLR(o, milestones=[3, 7, 20], gamma=0.3))
    run("ExponentialLR", lambda o: S.ExponentialLR(o, gamma=0.9))
    run("CosineAnnealingLR", lambda o: S.CosineAnnealingLR(o, T_max=10, eta_min=0.001))
    run("CosineAnnealingWarmRestarts", lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.01))
    run("LinearLR", lambda o: S.LinearLR(o, start_factor=0.25, total_iters=8))
    run("LambdaLR", lambda o: S.LambdaLR(o, lr_lambda=lambda e: 1.0 / (1 + e)))
    run("OneCycleLR", lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=25))
    run("OneCycleLR_adam_linear_3", lambda o: S.OneCycleLR(o, max_lr=0.5, total_steps=25, anneal_strategy="linear", three_phase=True, pct_start=0.2), sgd=False)
    run("SequentialLR", lambda o: S.SequentialLR(o, schedulers=[S.LinearLR(o, start_factor=0.1, total_iters=5), S.CosineAnnealingLR(o, T_max=15)], milestones=[5]))
    metrics = [1.0, 0.9, 0.95, 0.96, 0.97, 0.97, 0.89, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    run("ReduceLROnPlateau", lambda o: S.ReduceLROnPlateau(o, patience=2, factor=0.5, cooldown=1, min_lr=0.01), metrics=metrics)
    run("ReduceLROnPlateau_max_abs", lambda o: S.ReduceLROnPlateau(o, mode="max", threshold_mode="abs", threshold=0.1, patience=1), metrics=metrics)
    out["metrics"] = metrics
    return out


def layers():
    """Activations, normalisation, pooling, convolutions, resizing and attention: inputs,
    parameters (PyTorch's names), outputs and the gradient of sum(out * gw) for the input."""
    torch.manual_seed(0)
    out = {}

    def grad_case(fn, x, extra=None):
        x = x.clone().requires_grad_()
        y = fn(x)
        gw = torch.randn(*y.shape)
        (y * gw).sum().backward()
        c = {"x": x.detach(), "out": y.detach(), "gw": gw, "grad": x.grad}
        c.update(extra or {})
        return c

    x = torch.randn(3, 4) * 2
    out["leaky_relu"] = grad_case(lambda t: F.leaky_relu(t, 0.2), x)
    out["elu"] = grad_case(lambda t: F.elu(t, 0.5), x)
    out["silu"] = grad_case(F.silu, x)
    out["mish"] = grad_case(F.mish, x)
    out["softplus"] = grad_case(lambda t: F.softplus(t, 2.0, 1.0), x)
    out["hardtanh"] = grad_case(lambda t: F.hardtanh(t, -0.5, 0.7), x)

    def module_case(m, x, train=True):
        m.train(train)
        c = grad_case(m, x, {"params": {k: v.detach().clone() for k, v in m.named_parameters()}})
        c["buffers"] = {k: v.detach().clone() for k, v in m.named_buffers()}
        return c

    bn = nn.BatchNorm2d(3, momentum=0.2)
    with torch.no_grad():
        bn.weight.uniform_(0.5, 1.5); bn.bias.uniform_(-0.5, 0.5)
    c = module_case(bn, torch.randn(4, 3, 2, 2))
    bn.eval()
    c["eval_out"] = bn(c["x"]).detach()
    out["batchnorm2d"] = c
    bn1 = nn.BatchNorm1d(3)
    out["batchnorm1d"] = module_case(bn1, torch.randn(5, 3))
    gn = nn.GroupNorm(2, 4)
    with torch.no_grad():
        gn.weight.uniform_(0.5, 1.5); gn.bias.uniform_(-0.5, 0.5)
    out["groupnorm"] = module_case(gn, torch.randn(2, 4, 3))
    out["avgpool"] = module_case(nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False), torch.randn(1, 2, 5, 5))
    out["adaptive"] = module_case(nn.AdaptiveAvgPool2d((3, 2)), torch.randn(1, 2, 5, 7))
    out["conv1d"] = module_case(nn.Conv1d(3, 4, 3, stride=2, padding=1), torch.randn(2, 3, 7))
    ct = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1)
    c = module_case(ct, torch.randn(1, 3, 3, 4))
    c["grad_w"] = ct.weight.grad
    out["convtranspose2d"] = c
    out["up_nearest"] = module_case(nn.Upsample(scale_factor=2, mode="nearest"), torch.randn(1, 2, 2, 3))
    out["up_bilinear"] = module_case(nn.Upsample(size=(5, 7), mode="bilinear", align_corners=False), torch.randn(1, 2, 3, 4))
    out["up_bilinear_ac"] = module_case(nn.Upsample(size=(5, 7), mode="bilinear", align_corners=True), torch.randn(1, 2, 3, 4))

    def sdpa(q, k, v, attn_mask=None, is_causal=False):
        """PyTorch 2's F.scaled_dot_product_attention (torch 1.13 has none), written out."""
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if is_causal:
            attn_mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        if attn_mask is not None:
            s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else s + attn_mask
        return torch.softmax(s, -1) @ v

    q, k, v = torch.randn(2, 2, 4, 8), torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 6)
    bmask = torch.rand(4, 5) > 0.3
    bmask[:, 0] = True
    fmask = torch.randn(4, 5)
    out["sdpa_bool"] = grad_case(lambda t: sdpa(t, k, v, attn_mask=bmask), q, {"k": k, "v": v, "mask": bmask})
    out["sdpa_float"] = grad_case(lambda t: sdpa(t, k, v, attn_mask=fmask), q, {"k": k, "v": v, "mask": fmask})
    kc, vc = torch.randn(2, 2, 4, 8), torch.randn(2, 2, 4, 6)
    out["sdpa_causal"] = grad_case(lambda t: sdpa(t, kc, vc, is_causal=True), q, {"k": kc, "v": vc})

    mha = nn.MultiheadAttention(8, 2)
    L, N, S = 4, 2, 5
    kx, vx = torch.randn(S, N, 8), torch.randn(S, N, 8)
    kpm = torch.zeros(N, S, dtype=torch.bool)
    kpm[1, 3:] = True
    am = torch.rand(L, S) > 0.8
    am[:, 0] = False
    qx = torch.randn(L, N, 8).requires_grad_()
    o, w = mha(qx, kx, vx, key_padding_mask=kpm, attn_mask=am)
    gw = torch.randn(*o.shape)
    (o * gw).sum().backward()
    out["mha"] = {"x": qx.detach(), "k": kx, "v": vx, "kpm": kpm, "am": am, "out": o.detach(),
                  "weights": w.detach(), "gw": gw, "grad": qx.grad,
                  "params": {k2: v2.detach() for k2, v2 in mha.named_parameters()}}
    for name, o2 in [("enc_post", {}), ("enc_pre_gelu", {"norm_first": True, "activation": "gelu"})]:
        layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, **o2)
        with torch.no_grad():
            for n2, p2 in layer.named_parameters():
                if "norm" in n2 or n2.endswith("in_proj_bias") or n2.endswith("out_proj.bias"):
                    p2.uniform_(-0.5, 1.5)
        src = torch.randn(5, 2, 8)
        mask = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
        c = grad_case(lambda t: layer(t, src_mask=mask), src,
                      {"params": {k2: v2.detach() for k2, v2 in layer.named_parameters()}, "opts": o2})
        out[name] = c
    return out


if __name__ == "__main__":
    which = sys.argv[1:] or ["losses"]
    if "losses" in which:
        write("spec/fixtures/nn_losses.lua", losses(), "tools/gen_nn_fixtures.py")
    if "optim" in which:
        write("spec/fixtures/nn_optim.lua", {"optim": optim_cases(), "sched": sched_cases()}, "tools/gen_nn_fixtures.py")
    if "layers" in which:
        write("spec/fixtures/nn_layers.lua", layers(), "tools/gen_nn_fixtures.py")
    if "rnn" in which:
        write("spec/fixtures/nn_rnn.lua", rnn(), "tools/gen_nn_fixtures.py")
