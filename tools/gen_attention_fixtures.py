#!/usr/bin/python3
"""Fixtures for spec/attention_spec.lua: scaled_dot_product_attention's output and the
gradients of sum(out * gout) with respect to query, key and value (and a float mask), as
PyTorch computes them.

torch 1.13 has no F.scaled_dot_product_attention: the reference is its definition written out
(PyTorch 2's math path), softmax(q k^T * scale + mask) v, with a bool mask's False entries
at -inf and is_causal the top-left tril of ones [L, S].

Run with Debian's Python (python3-torch): /usr/bin/python3 tools/gen_attention_fixtures.py
"""
import math

import torch

from fixture_common import seeded, write  # float64 default, Lua literals
g, r = seeded(15)


def sdpa(q, k, v, attn_mask=None, is_causal=False, scale=None):
    s = q @ k.transpose(-2, -1) * (scale if scale is not None else 1 / math.sqrt(q.shape[-1]))
    if is_causal:
        attn_mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else s + attn_mask
    return torch.softmax(s, -1) @ v


def case(lead, L, S, E, Ev, mask=None, causal=False, scale=None):
    q, k, v = r(*lead, L, E), r(*lead, S, E), r(*lead, S, Ev)
    q.requires_grad_(), k.requires_grad_(), v.requires_grad_()
    if mask is not None and mask.dtype != torch.bool:
        mask.requires_grad_()
    out = sdpa(q, k, v, mask, causal, scale)
    gout = r(*out.shape)
    (out * gout).sum().backward()
    c = {"q": q.detach(), "k": k.detach(), "v": v.detach(), "gout": gout, "out": out.detach(),
         "dq": q.grad, "dk": k.grad, "dv": v.grad, "causal": causal}
    if scale is not None:
        c["scale"] = scale
    if mask is not None:
        c["mask"] = mask.detach()
        c["mask_bool"] = mask.dtype == torch.bool
        if mask.grad is not None:
            c["dmask"] = mask.grad
    return c


def main():
    out = {}
    out["plain"] = case((2, 3), 5, 7, 4, 3)
    bm = torch.rand(6, 9, generator=g) > 0.4
    bm[:, 0] = True
    out["bool_mask"] = case((2, 2), 6, 9, 5, 4, mask=bm)
    out["float_mask"] = case((2, 3), 4, 6, 3, 5, mask=r(2, 1, 4, 6), scale=0.7)
    fm = r(1, 5, 7)
    fm[0, 1, 2] = float("-inf")
    out["float_mask_inf"] = case((2, 2), 5, 7, 3, 2, mask=fm)
    out["causal_l_gt_s"] = case((1, 2), 6, 4, 3, 2, causal=True)
    out["causal_l_lt_s"] = case((1, 2), 4, 6, 3, 2, causal=True)
    out["unbatched"] = case((), 3, 4, 2, 5)
    out["three_d"] = case((2,), 3, 4, 2, 2, mask=torch.rand(2, 3, 4, generator=g) > -1)
    # sizes that are no multiple of the CPU kernel's blocks (64 queries, 128 keys)
    bm = torch.rand(70, 131, generator=g) > 0.3
    out["odd_blocks"] = case((1, 2), 70, 131, 5, 3, mask=bm)
    out["odd_causal"] = case((1, 1), 130, 130, 2, 3, causal=True)
    # a row no key may see: NaN in its output and, through it, in the gradients
    bm = torch.ones(3, 4, dtype=torch.bool)
    bm[1, :] = False
    out["masked_row"] = case((1, 1), 3, 4, 2, 2, mask=bm)
    write("spec/fixtures/attention.lua", out, "tools/gen_attention_fixtures.py")


main()
