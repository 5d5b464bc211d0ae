#!/usr/bin/python3
"""Fixtures for spec/loss_ignore_spec.lua: F.cross_entropy and F.nll_loss with labels of
-100 (PyTorch's default ignore_index) among the targets, no other options: the loss for
reductions none, mean and sum, and the gradient with respect to the input of
sum(loss * gout), as PyTorch 1.13 computes them in float64.

Run with Debian's Python (python3-torch): /usr/bin/python3 tools/gen_loss_ignore_fixtures.py
Labels are written 1-based (ltc's convention), -100 stays -100; PyTorch gets them 0-based.
Inputs either written out ("x") or, for the large cases, the formula
x[i][j] = 3 sin(0.37 i + 0.11 j) (0-based i, j) that the spec evaluates too ("n", "c", and
the upstream gradient of reduction none gout_none[i] = 0.5 + cos(0.3 i)); of those only
sampled gradient entries are written ("at": 1-based {i, j, value}).
"""
import torch
import torch.nn.functional as F

from fixture_common import seeded, write  # float64 default, Lua literals

g, r = seeded(31)
REDS = ("none", "mean", "sum")


def formula(n, c):
    i = torch.arange(n, dtype=torch.float64).unsqueeze(1)
    j = torch.arange(c, dtype=torch.float64).unsqueeze(0)
    return 3 * torch.sin(0.37 * i + 0.11 * j)


def one(fn, x, t, red, gout):
    """fn's loss and the gradient of sum(loss * gout) with respect to x."""
    xi = x.clone().requires_grad_()
    loss = fn(xi, t, reduction=red)
    (loss * gout).sum().backward()
    return loss.detach(), xi.grad


def case(x, t, written=True, samples=None):
    """Both ops (nll_loss on x itself: it need not hold log-probabilities) and every reduction
    over input x [N, C] (or [C]) and 0-based labels t (-100 kept)."""
    out = {"t": torch.where(t == -100, t, t + 1), "gout": r(1)[0]}
    if written:
        out["x"] = x
        out["gout_none"] = gn = r(*t.shape) if t.dim() else r(1)[0]
    else:
        out["n"], out["c"] = x.shape
        gn = 0.5 + torch.cos(0.3 * torch.arange(x.shape[0], dtype=torch.float64))
    for name, fn in (("ce", F.cross_entropy), ("nll", F.nll_loss)):
        for red in REDS:
            loss, grad = one(fn, x, t, red, gn if red == "none" else out["gout"])
            key = name + "_" + red
            out[key] = loss
            if samples is None:
                out[key + "_grad"] = grad
            else:
                out[key + "_at"] = [[i + 1, j + 1, grad[i, j].item()] for i, j in samples]
    return out


def samples(n, c, t):
    """Gradient entries to check: each row's first, middle and last class and its label's."""
    at = []
    for i in range(n):
        cols = {0, c // 2, c - 1}
        if t[i] != -100:
            cols.add(int(t[i]))
        at += [(i, j) for j in sorted(cols)]
    return at


def main():
    out = {}
    # some rows ignored, in the first, middle and last places
    out["mixed"] = case(r(6, 4), torch.tensor([-100, 2, 0, -100, 3, -100]))
    # every row ignored: mean is 0/0 = NaN, the gradient is zero
    out["all_ignored"] = case(r(3, 4), torch.tensor([-100, -100, -100]))
    # one row [C] and a 0-d label
    out["vector"] = case(r(5), torch.tensor(-100))
    out["vector_kept"] = case(r(5), torch.tensor(3))
    # rows longer than the CPU kernel's exp block (1024 classes): another summation path
    t = torch.tensor([4, -100, 1098])
    out["long_rows"] = case(formula(3, 1100), t, False, samples(3, 1100, t))
    # many short rows: the CPU kernel works in blocks of 102 rows of 10 classes, ignored rows in each
    n = 300
    t = torch.tensor([-100 if i % 7 == 3 else (i * 3) % 10 for i in range(n)])
    out["many_rows"] = case(formula(n, 10), t, False, samples(n, 10, t)[::19])
    write("spec/fixtures/loss_ignore.lua", out, "tools/gen_loss_ignore_fixtures.py")


main()
