#!/usr/bin/python3
"""Fixtures for spec/transformer_decoder_spec.lua: nn.TransformerDecoderLayer,
nn.TransformerDecoder and nn.Transformer as PyTorch 1.13 computes them in float64 with dropout
0: the parameters (PyTorch's state dict names), the inputs and masks, the output, and the
gradients of sum(out * gw) with respect to tgt and memory (nn.Transformer: src and tgt).
Small sizes (d_model 4, 2 heads, dim_feedforward 8) keep the file small.

Run with Debian's Python (python3-torch): /usr/bin/python3 tools/gen_transformer_fixtures.py
"""
import torch
import torch.nn as nn

from fixture_common import write  # float64 default, Lua literals

torch.manual_seed(7)
D, H, FF = 4, 2, 8


def params(m):
    """the state dict's parameters; biases and norms drawn away from PyTorch's zeros and ones
    so that a mix-up of names shows"""
    with torch.no_grad():
        for n, p in m.named_parameters():
            if "norm" in n or n.endswith("bias"):
                p.uniform_(-0.5, 1.5)
    return {k: v.detach().clone() for k, v in m.named_parameters()}


def seq(n, batch, batch_first):
    return torch.randn(batch, n, D) if batch_first else torch.randn(n, batch, D)


def padding(batch, n):
    m = torch.zeros(batch, n, dtype=torch.bool)
    m[0, -1] = True
    if batch > 1:
        m[1, -2:] = True
    return m


def run(m, inputs, call, extra):
    """out = call(*inputs) with the inputs requiring grad; the case's table"""
    xs = [x.clone().requires_grad_() for x in inputs]
    out = call(*xs)
    gw = torch.randn(*out.shape)
    (out * gw).sum().backward()
    c = {"params": params_of(m), "out": out.detach(), "gw": gw}
    for i, x in enumerate(xs):
        c["x%d" % (i + 1)] = x.detach()
        c["grad%d" % (i + 1)] = x.grad
    c.update(extra)
    return c


def params_of(m):
    return {k: v.detach().clone() for k, v in m.named_parameters()}


def layer_case(opts, masks, T=3, S=5, N=2):
    layer = nn.TransformerDecoderLayer(D, H, dim_feedforward=FF, dropout=0.0, **opts)
    params(layer)
    bf = opts.get("batch_first", False)
    tgt, mem = seq(T, N, bf), seq(S, N, bf)
    kw = {}
    if "tgt_mask" in masks:
        kw["tgt_mask"] = nn.Transformer.generate_square_subsequent_mask(T)
    if "memory_mask" in masks:
        mm = torch.rand(T, S) > 0.6
        mm[:, 0] = False
        kw["memory_mask"] = mm
    if "tgt_key_padding_mask" in masks:
        kw["tgt_key_padding_mask"] = padding(N, T)
    if "memory_key_padding_mask" in masks:
        kw["memory_key_padding_mask"] = padding(N, S)
    return run(layer, [tgt, mem], lambda t, m: layer(t, m, **kw),
               {"opts": opts, "masks": {k: v for k, v in kw.items()}})


def decoder_case(T=3, S=4, N=2):
    layer = nn.TransformerDecoderLayer(D, H, dim_feedforward=FF, dropout=0.0)
    dec = nn.TransformerDecoder(layer, 2, nn.LayerNorm(D))
    params(dec)
    tgt, mem = seq(T, N, False), seq(S, N, False)
    mask = nn.Transformer.generate_square_subsequent_mask(T)
    kp = padding(N, S)
    return run(dec, [tgt, mem], lambda t, m: dec(t, m, tgt_mask=mask, memory_key_padding_mask=kp),
               {"masks": {"tgt_mask": mask, "memory_key_padding_mask": kp}})


def transformer_case(S=5, T=3, N=2):
    m = nn.Transformer(D, H, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=FF,
                       dropout=0.0, batch_first=True, norm_first=True, activation="gelu")
    params(m)
    src, tgt = seq(S, N, True), seq(T, N, True)
    kw = {"tgt_mask": m.generate_square_subsequent_mask(T),
          "src_key_padding_mask": padding(N, S), "memory_key_padding_mask": padding(N, S)}
    return run(m, [src, tgt], lambda s, t: m(s, t, **kw), {"masks": kw})


def main():
    out = {
        "post_relu": layer_case({}, ["tgt_mask", "memory_mask"]),
        "pre_gelu_bf": layer_case({"norm_first": True, "activation": "gelu", "batch_first": True},
                                  ["tgt_mask", "tgt_key_padding_mask", "memory_key_padding_mask"]),
        "post_padding": layer_case({"layer_norm_eps": 1e-3},
                                   ["tgt_key_padding_mask", "memory_key_padding_mask", "memory_mask"]),
        "decoder": decoder_case(),
        "transformer": transformer_case(),
        "square_mask": nn.Transformer.generate_square_subsequent_mask(4),
    }
    write("spec/fixtures/transformer_decoder.lua", out, "tools/gen_transformer_fixtures.py")


main()
