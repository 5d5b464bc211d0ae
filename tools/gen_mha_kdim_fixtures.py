#!/usr/bin/python3
"""Fixtures for spec/mha_kdim_spec.lua: nn.MultiheadAttention with kdim and vdim other than
embed_dim (separate q_proj_weight, k_proj_weight and v_proj_weight), as PyTorch 1.13 computes
it in float64: the output, the attention weights, and the gradients of sum(out * gout) with
respect to query, key, value and the three projection weights.

Run with Debian's Python (python3-torch): /usr/bin/python3 tools/gen_mha_kdim_fixtures.py
"""
import torch

from fixture_common import write  # float64 default, Lua literals

torch.manual_seed(21)


def case(E, heads, kdim, vdim, L, S, N, batch_first=False, mask=False, padding=False,
         average=True):
    m = torch.nn.MultiheadAttention(E, heads, kdim=kdim, vdim=vdim, batch_first=batch_first)
    with torch.no_grad():
        m.in_proj_bias.normal_()
        m.out_proj.bias.normal_()
    def size(n, d):
        if N is None:
            return (n, d)
        return (N, n, d) if batch_first else (n, N, d)
    q = torch.randn(*size(L, E)).requires_grad_()
    k = torch.randn(*size(S, kdim)).requires_grad_()
    v = torch.randn(*size(S, vdim)).requires_grad_()
    am = torch.rand(L, S) > 0.7 if mask else None
    if am is not None:
        am[:, 0] = False
    kp = None
    if padding:
        kp = torch.zeros((N, S) if N is not None else (S,), dtype=torch.bool)
        kp[..., -1] = True
    out, w = m(q, k, v, attn_mask=am, key_padding_mask=kp, average_attn_weights=average)
    gout = torch.randn(*out.shape)
    (out * gout).sum().backward()
    c = {"E": E, "heads": heads, "kdim": kdim, "vdim": vdim, "batch_first": batch_first,
         "average": average, "q": q.detach(), "k": k.detach(), "v": v.detach(),
         "q_proj_weight": m.q_proj_weight.detach(), "k_proj_weight": m.k_proj_weight.detach(),
         "v_proj_weight": m.v_proj_weight.detach(), "in_proj_bias": m.in_proj_bias.detach(),
         "out_proj_weight": m.out_proj.weight.detach(), "out_proj_bias": m.out_proj.bias.detach(),
         "gout": gout, "out": out.detach(), "weights": w.detach(), "dq": q.grad, "dk": k.grad,
         "dv": v.grad, "dwq": m.q_proj_weight.grad, "dwk": m.k_proj_weight.grad,
         "dwv": m.v_proj_weight.grad, "db": m.in_proj_bias.grad}
    if am is not None:
        c["attn_mask"] = am
    if kp is not None:
        c["key_padding_mask"] = kp
    return c


def main():
    out = {"seq_first": case(8, 2, 5, 3, 4, 6, 2),
           "batch_first_masks": case(6, 3, 4, 7, 3, 5, 2, batch_first=True, mask=True,
                                     padding=True, average=False),
           "kdim_only": case(4, 1, 6, 4, 2, 3, 3),
           "unbatched": case(6, 2, 3, 5, 4, 3, None, padding=True)}
    write("spec/fixtures/mha_kdim.lua", out, "tools/gen_mha_kdim_fixtures.py")


main()
