#!/usr/bin/python3
"""bench/tiny_gpt.py INIT_DIR STEPS [THREADS]: the PyTorch twin of examples/tiny_gpt.lua.

Same model (token and position embeddings, pre-norm nn.TransformerEncoderLayer blocks with
GELU and a causal mask, final LayerNorm, linear head without bias), the same initial weights
and data (the .npy files the example writes with --init-dir; ltc's ModuleList children are
numbered from 1, PyTorch's from 0), AdamW (betas 0.9, 0.95, weight decay 0.1), linear warm-up
then cosine (SequentialLR), gradients clipped at norm 1, eager on the CPU. Prints key/value
lines: torch_step_ms (mean after 3 warm-up steps), torch_train_loss, torch_val_loss.
"""
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    d, steps = sys.argv[1], int(sys.argv[2])
    if len(sys.argv) > 3:
        torch.set_num_threads(int(sys.argv[3]))
    ld = lambda n: torch.from_numpy(np.load(os.path.join(d, n + ".npy")))
    train_x, train_y = ld("train_x") - 1, ld("train_y") - 1
    val_x, val_y = ld("val_x") - 1, ld("val_y") - 1
    T, lr, layers, heads, warmup, total = [float(v) for v in ld("meta")]
    T, layers, heads, warmup, total = int(T), int(layers), int(heads), int(warmup), int(total)
    V, C = ld("tok.weight").shape

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(V, C)
            self.pos = nn.Embedding(T, C)
            self.blocks = nn.ModuleList([nn.TransformerEncoderLayer(
                C, heads, dim_feedforward=4 * C, dropout=0.0, activation="gelu",
                norm_first=True, batch_first=True) for _ in range(layers)])
            self.norm = nn.LayerNorm(C)
            self.head = nn.Linear(C, V, bias=False)
            self.register_buffer("mask", torch.triu(torch.ones(T, T, dtype=torch.bool), 1), persistent=False)

        def forward(self, x):
            t = x.shape[1]
            h = self.tok(x) + self.pos(torch.arange(t))
            for blk in self.blocks:
                h = blk(h, src_mask=self.mask[:t, :t])
            return self.head(self.norm(h))

    model = GPT()
    sd = {}
    for k in model.state_dict().keys():
        parts = k.split(".")
        if parts[0] == "blocks":
            parts[1] = str(int(parts[1]) + 1)
        sd[k] = ld(".".join(parts))
    model.load_state_dict(sd)
    S = torch.optim.lr_scheduler
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.1)
    sched = S.SequentialLR(opt, [S.LinearLR(opt, start_factor=1 / warmup, total_iters=warmup),
                                 S.CosineAnnealingLR(opt, T_max=max(total - warmup, 1), eta_min=lr / 10)],
                           milestones=[warmup])

    def window(x, y, k):
        s = ((k - 1) % (x.shape[1] // T)) * T
        return x[:, s:s + T].contiguous(), y[:, s:s + T].contiguous()

    times = []
    for step in range(1, steps + 1):
        t0 = time.perf_counter()
        x, y = window(train_x, train_y, step)
        opt.zero_grad()
        loss = F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        lv = loss.item()
        times.append(time.perf_counter() - t0)
    model.eval()
    total_l, count = 0.0, 0
    with torch.no_grad():
        for k in range(1, val_x.shape[1] // T + 1):
            x, y = window(val_x, val_y, k)
            total_l += F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1)).item()
            count += 1
    warm = times[3:] or times
    print("torch_step_ms %.3f" % (1000 * sum(warm) / len(warm)))
    print("torch_train_loss %.6f" % lv)
    print("torch_val_loss %.6f" % (total_l / count))


if __name__ == "__main__":
    main()
