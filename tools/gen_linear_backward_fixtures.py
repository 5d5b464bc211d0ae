#!/usr/bin/python3
"""Fixtures for spec/linear_backward_spec.lua: the gradients of sum(linear(x, w, b) * gout)
with respect to x, w and b (what the op linear_backward computes), as PyTorch 1.13
computes them in float64.

Run with Debian's Python (python3-torch): /usr/bin/python3 tools/gen_linear_backward_fixtures.py
"""

import torch
import torch.nn.functional as F

from fixture_common import seeded, write  # float64 default, Lua literals
g, r = seeded(18)


def case(lead, n_in, n_out):
    x = r(*lead, n_in).requires_grad_()
    w, b = r(n_out, n_in).requires_grad_(), r(n_out).requires_grad_()
    out = F.linear(x, w, b)
    gout = r(*out.shape)
    (out * gout).sum().backward()
    return {"x": x.detach(), "w": w.detach(), "b": b.detach(), "gout": gout,
            "dx": x.grad, "dw": w.grad, "db": b.grad}


def main():
    out = {"batched": case((2, 3), 4, 5), "matrix": case((6,), 3, 2), "vector": case((), 4, 3)}
    write("spec/fixtures/linear_backward.lua", out, "tools/gen_linear_backward_fixtures.py")


main()
