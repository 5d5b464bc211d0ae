#!/usr/bin/python3
"""Fixtures for spec/attention_packed_spec.lua: nn.MultiheadAttention (batch_first) as
self-attention, causal and not, as PyTorch 1.13 computes it in float64: the output and the
gradients of sum(out * gout) with respect to the input, in_proj_weight and in_proj_bias
(what ltc's packed path, one in-projection GEMM and scaled_dot_product_attention_packed,
computes).

Run with Debian's Python (python3-torch): /usr/bin/python3 tools/gen_attention_packed_fixtures.py
"""

import torch

from fixture_common import write  # float64 default, Lua literals
torch.manual_seed(17)


def case(N, L, E, heads, causal):
    m = torch.nn.MultiheadAttention(E, heads, batch_first=True)
    with torch.no_grad():
        m.in_proj_bias.normal_()
        m.out_proj.bias.normal_()
    x = torch.randn(N, L, E).requires_grad_()
    mask = torch.ones(L, L, dtype=torch.bool).triu(1) if causal else None
    out, _ = m(x, x, x, attn_mask=mask, need_weights=False)
    gout = torch.randn(*out.shape)
    (out * gout).sum().backward()
    return {"N": N, "L": L, "E": E, "heads": heads, "causal": causal, "x": x.detach(),
            "in_proj_weight": m.in_proj_weight.detach(), "in_proj_bias": m.in_proj_bias.detach(),
            "out_proj_weight": m.out_proj.weight.detach(), "out_proj_bias": m.out_proj.bias.detach(),
            "gout": gout, "out": out.detach(), "dx": x.grad, "dw": m.in_proj_weight.grad,
            "db": m.in_proj_bias.grad}


def main():
    out = {"causal": case(2, 7, 12, 3, True), "full": case(3, 5, 8, 2, False),
           "one_head": case(1, 4, 6, 1, True)}
    write("spec/fixtures/attention_packed.lua", out, "tools/gen_attention_packed_fixtures.py")


main()
