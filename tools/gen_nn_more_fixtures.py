#!/usr/bin/python3
"""Fixtures for spec/nn_more_spec.lua: nn.LSTM with proj_size (PyTorch's LSTM with projections,
weight_hr_l<k>) as PyTorch 1.13 computes it in float64: the parameters (PyTorch's names), the
input and initial states, the output and final states, and the gradients of sum(out * gw) +
sum(h_n * gh) + sum(c_n * gc) with respect to the input, h0, c0 and weight_hr_l0.

Run with Debian's Python (python3-torch): /usr/bin/python3 tools/gen_nn_more_fixtures.py
"""
import torch
import torch.nn as nn

from fixture_common import write  # float64 default, Lua literals

torch.manual_seed(11)


def lstm_case(I, H, P, T=4, B=2, **o):
    m = nn.LSTM(I, H, proj_size=P, **o)
    L, D = o.get("num_layers", 1), 2 if o.get("bidirectional") else 1
    x = (torch.randn(B, T, I) if o.get("batch_first") else torch.randn(T, B, I)).requires_grad_()
    h0 = torch.randn(L * D, B, P).requires_grad_()
    c0 = torch.randn(L * D, B, H).requires_grad_()
    y, (hn, cn) = m(x, (h0, c0))
    gw, gh, gc = torch.randn(*y.shape), torch.randn(*hn.shape), torch.randn(*cn.shape)
    ((y * gw).sum() + (hn * gh).sum() + (cn * gc).sum()).backward()
    return {"I": I, "H": H, "opts": dict(o, proj_size=P),
            "params": {k: v.detach() for k, v in m.named_parameters()},
            "x": x.detach(), "h0": h0.detach(), "c0": c0.detach(), "out": y.detach(),
            "hn": hn.detach(), "cn": cn.detach(), "gw": gw, "gh": gh, "gc": gc,
            "grad_x": x.grad, "grad_h0": h0.grad, "grad_c0": c0.grad,
            "grad_whr": m.weight_hr_l0.grad}


def main():
    out = {"lstm_proj": lstm_case(3, 5, 2, num_layers=2),
           "lstm_proj_bidir_bf": lstm_case(3, 4, 3, bidirectional=True, batch_first=True)}
    write("spec/fixtures/nn_more.lua", out, "tools/gen_nn_more_fixtures.py")


main()
