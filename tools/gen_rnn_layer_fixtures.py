#!/usr/bin/python3
"""Fixtures for spec/rnn_layer_spec.lua: the fused recurrences lstm_layer and gru_layer against
PyTorch's own cells (nn.LSTMCell, nn.GRUCell with weight_ih the identity and no input bias, so
that their input is the input projection), step by step, in float64. Written as a Lua table.

Run with Debian's Python (python3-torch): /usr/bin/python3 tools/gen_rnn_layer_fixtures.py
"""
import torch
import torch.nn as nn

from fixture_common import write  # float64 default, Lua literals


def case(reverse, T=5, B=3, H=4):
    """input_proj [T, B, 4H], h0, c0 [B, H], weight_hh [4H, H]; output, c_seq and the
    activated gates; the gradients of sum(output * gw) + sum(c_seq * gc) + sum(h_n * ghn) +
    sum(c_n * gcn) (h_n, c_n: the step processed last) with respect to the four inputs."""
    proj = torch.randn(T, B, 4 * H, requires_grad=True)
    h0 = torch.randn(B, H, requires_grad=True)
    c0 = torch.randn(B, H, requires_grad=True)
    cell = nn.LSTMCell(4 * H, H, bias=False)
    with torch.no_grad():
        cell.weight_ih.copy_(torch.eye(4 * H))
        cell.weight_hh.normal_(0, 0.5)
    w = cell.weight_hh
    hs, cs, gates = [None] * T, [None] * T, [None] * T
    h, c = h0, c0
    for s in range(T):
        t = T - 1 - s if reverse else s
        with torch.no_grad():
            pre = proj[t] + h @ w.t()
            i, f, g, o = pre.split(H, dim=1)
            gates[t] = torch.cat([i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()], 1)
        h, c = cell(proj[t], (h, c))
        hs[t], cs[t] = h, c
    out, cseq = torch.stack(hs), torch.stack(cs)
    gw, gc = torch.randn(T, B, H), torch.randn(T, B, H)
    ghn, gcn = torch.randn(B, H), torch.randn(B, H)
    ((out * gw).sum() + (cseq * gc).sum() + (h * ghn).sum() + (c * gcn).sum()).backward()
    return {"input_proj": proj.detach(), "h0": h0.detach(), "c0": c0.detach(),
            "weight_hh": w.detach(), "reverse": reverse, "output": out.detach(),
            "c_seq": cseq.detach(), "gates": torch.stack(gates), "gw": gw, "gc": gc,
            "ghn": ghn, "gcn": gcn, "grad_input_proj": proj.grad, "grad_h0": h0.grad,
            "grad_c0": c0.grad, "grad_weight_hh": w.grad}


def gru_case(reverse, T=5, B=3, H=4):
    """input_proj [T, B, 3H], h0 [B, H], weight_hh [3H, H], bias_hh [3H]; output and the gates
    r, z, n, gh_n; the gradients of sum(output * gw) + sum(h_n * ghn) with respect to the
    four inputs."""
    proj = torch.randn(T, B, 3 * H, requires_grad=True)
    h0 = torch.randn(B, H, requires_grad=True)
    cell = nn.GRUCell(3 * H, H)
    with torch.no_grad():
        cell.weight_ih.copy_(torch.eye(3 * H))
        cell.bias_ih.zero_()
        cell.weight_hh.normal_(0, 0.5)
        cell.bias_hh.normal_(0, 0.5)
    w, bh = cell.weight_hh, cell.bias_hh
    hs, gates = [None] * T, [None] * T
    h = h0
    for s in range(T):
        t = T - 1 - s if reverse else s
        with torch.no_grad():
            gh = h @ w.t() + bh
            pr, pz, pn = proj[t].split(H, dim=1)
            r, z = (pr + gh[:, :H]).sigmoid(), (pz + gh[:, H:2 * H]).sigmoid()
            n = (pn + r * gh[:, 2 * H:]).tanh()
            gates[t] = torch.cat([r, z, n, gh[:, 2 * H:]], 1)
        h = cell(proj[t], h)
        hs[t] = h
    out = torch.stack(hs)
    gw, ghn = torch.randn(T, B, H), torch.randn(B, H)
    ((out * gw).sum() + (h * ghn).sum()).backward()
    return {"input_proj": proj.detach(), "h0": h0.detach(), "weight_hh": w.detach(),
            "bias_hh": bh.detach(), "reverse": reverse, "output": out.detach(),
            "gates": torch.stack(gates), "gw": gw, "ghn": ghn, "grad_input_proj": proj.grad,
            "grad_h0": h0.grad, "grad_weight_hh": w.grad, "grad_bias_hh": bh.grad}


if __name__ == "__main__":
    torch.manual_seed(0)
    cases = {"forward": case(False), "reverse": case(True), "gru_forward": gru_case(False),
             "gru_reverse": gru_case(True)}
    write("spec/fixtures/rnn_layer.lua", cases, "tools/gen_rnn_layer_fixtures.py")
