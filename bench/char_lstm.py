#!/usr/bin/python3
"""bench/char_lstm.py INIT_DIR STEPS [THREADS]: the PyTorch twin of examples/char_lstm.lua.

Same model (Embedding(V, 64) - LSTM(64, H, 2 layers) - Linear(H, V)), same initial weights
and same data (the .npy files the example writes with --init-dir), same windows (truncated
BPTT over `seq` characters of `batch` streams, the state carried over detached), Adam with
the same lr, gradients clipped at norm 5. Eager PyTorch on the CPU. Prints key/value lines:
torch_step_ms (mean after 3 warm-up steps), torch_train_loss (last step), torch_val_loss.
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
    train_x, train_y = ld("train_x") - 1, ld("train_y") - 1   # ltc's labels are 1-based
    val_x, val_y = ld("val_x") - 1, ld("val_y") - 1
    meta = ld("meta")
    T, lr = int(meta[0]), float(meta[1])
    emb_w = ld("embed.weight")
    V, E = emb_w.shape
    H = ld("lstm.weight_hh_l0").shape[1]
    B = train_x.shape[0]

    class CharLSTM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(V, E)
            self.lstm = nn.LSTM(E, H, num_layers=2)
            self.head = nn.Linear(H, V)

        def forward(self, x, state):
            out, st = self.lstm(self.embed(x), state)
            return self.head(out), st

    model = CharLSTM()
    model.load_state_dict({k: ld(k) for k in model.state_dict().keys()})
    opt = torch.optim.Adam(model.parameters(), lr=lr)

    def window(x, y, k):
        s = ((k - 1) % (x.shape[1] // T)) * T
        return x[:, s:s + T].t().contiguous(), y[:, s:s + T].t().contiguous()

    state = (torch.zeros(2, B, H), torch.zeros(2, B, H))
    times, loss = [], None
    for step in range(1, steps + 1):
        t0 = time.perf_counter()
        x, y = window(train_x, train_y, step)
        opt.zero_grad()
        logits, state = model(x, state)
        loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5)
        opt.step()
        state = (state[0].detach(), state[1].detach())
        lv = loss.item()
        times.append(time.perf_counter() - t0)
    model.eval()
    total, count, st = 0.0, 0, None
    with torch.no_grad():
        for k in range(1, val_x.shape[1] // T + 1):
            x, y = window(val_x, val_y, k)
            logits, st = model(x, st)
            total += F.cross_entropy(logits.reshape(-1, V), y.reshape(-1)).item()
            count += 1
    warm = times[3:] or times
    print("torch_step_ms %.3f" % (1000 * sum(warm) / len(warm)))
    print("torch_train_loss %.6f" % lv)
    print("torch_val_loss %.6f" % (total / count))


if __name__ == "__main__":
    main()
