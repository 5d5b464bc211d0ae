#!/usr/bin/python3
"""Fixtures for spec/layer_norm_backward_spec.lua: layer_norm's output and the gradients of
sum(out * gout) with respect to input, weight and bias (what the op layer_norm_backward
computes, PyTorch's native_layer_norm_backward), as PyTorch 1.13 computes them in float64.

Run with Debian's Python (python3-torch): /usr/bin/python3 tools/gen_layer_norm_fixtures.py
"""

import torch
import torch.nn.functional as F

from fixture_common import seeded, write  # float64 default, Lua literals
g, r = seeded(16)


def case(shape, k, eps=1e-5, scale=1.0, shift=0.0):
    ns = list(shape[len(shape) - k:])
    x = (r(*shape) * scale + shift).requires_grad_()
    w, b = (r(*ns) + 1).requires_grad_(), r(*ns).requires_grad_()
    out = F.layer_norm(x, ns, w, b, eps)
    gout = r(*out.shape)
    (out * gout).sum().backward()
    return {"x": x.detach(), "w": w.detach(), "b": b.detach(), "ns": ns, "eps": eps,
            "gout": gout, "out": out.detach(), "dx": x.grad, "dw": w.grad, "db": b.grad}


def main():
    out = {}
    out["last_dim"] = case((4, 5, 6), 1)
    out["last_two"] = case((3, 4, 5), 2, eps=0.1)
    out["one_row"] = case((7,), 1)
    out["off_centre"] = case((2, 3, 8), 1, scale=3.0, shift=5.0)
    write("spec/fixtures/layer_norm_backward.lua", out, "tools/gen_layer_norm_fixtures.py")


main()
