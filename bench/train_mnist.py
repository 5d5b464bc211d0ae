"""train_mnist.py - the PyTorch side of bench/train.lua: one epoch of the Fashion-MNIST MLP
784-256-10 (SGD lr 0.1, batch 128, shuffled, full batches only: 468 steps), as in
examples/fashion_mnist.lua, then the test accuracy.

  train_mnist.py eager|lazy DATA_DIR [INIT_DIR]

INIT_DIR (written by bench/train.lua) holds ltc's initial parameters as .npy files named as
in its state_dict ("1.weight", ...) and perm.npy, ltc's 1-based shuffling order: with it both
runs start from the same weights and see the same batches.

eager: PyTorch on the CPU. lazy: torch._lazy with the TorchScript backend (a mark_step per
step). Prints "key value" lines: <mode>_epoch_s, <mode>_accuracy, <mode>_steps; or
<mode>_missing <reason> when the mode cannot run. Uses Debian's python3-torch and the IDX
files of dataset-fashion-mnist (read with gzip and numpy, outside the timed loop).
"""
import gzip
import os
import sys
import time

import numpy as np


def read_idx(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(d, name):
    for p in (os.path.join(d, name + ".gz"), os.path.join(d, name)):
        if os.path.exists(p):
            return p
    raise FileNotFoundError(os.path.join(d, name))


def main():
    mode, data = sys.argv[1], sys.argv[2]
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        print("%s_missing %s" % (mode, str(e).replace("\n", " ")[:80]))
        return
    threads = int(os.environ.get("LTC_NUM_THREADS", str(os.cpu_count() or 1)))
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    xtr = read_idx(find(data, "train-images-idx3-ubyte")).reshape(-1, 784).astype(np.float32) / 255
    ytr = read_idx(find(data, "train-labels-idx1-ubyte")).astype(np.int64)
    xte = read_idx(find(data, "t10k-images-idx3-ubyte")).reshape(-1, 784).astype(np.float32) / 255
    yte = read_idx(find(data, "t10k-labels-idx1-ubyte")).astype(np.int64)
    device = "cpu"
    if mode == "lazy":
        try:
            import torch._lazy
            import torch._lazy.ts_backend
            torch._lazy.ts_backend.init()
            device = "lazy"
        except Exception as e:  # noqa: BLE001
            print("lazy_missing %s" % str(e).replace("\n", " ")[:80])
            return
    xtr_t, ytr_t = torch.from_numpy(xtr), torch.from_numpy(ytr)
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = torch.nn.CrossEntropyLoss()
    bs = 128
    n = xtr.shape[0]
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(0))
    init = sys.argv[3] if len(sys.argv) > 3 else None
    if init:
        with torch.no_grad():
            for name, p in model.named_parameters():  # "0.weight" is ltc's "1.weight"
                i, kind = name.split(".")
                p.copy_(torch.from_numpy(np.load(os.path.join(init, "%d.%s.npy" % (int(i) + 1, kind)))))
        perm = torch.from_numpy(np.load(os.path.join(init, "perm.npy")) - 1)
    steps = n // bs
    # the batches, made before the clock starts (ltc's loader makes its index tensors inside
    # the timed loop, so this favours PyTorch slightly)
    batches = [(xtr_t[perm[i * bs:(i + 1) * bs]], ytr_t[perm[i * bs:(i + 1) * bs]])
               for i in range(steps)]
    t0 = time.perf_counter()
    for x, y in batches:
        if device != "cpu":
            x, y = x.to(device), y.to(device)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if device != "cpu":
            torch._lazy.mark_step()
        loss.item()  # as the ltc loop reads each step's loss
    t = time.perf_counter() - t0
    with torch.no_grad():
        xt = torch.from_numpy(xte).to(device)
        pred = model(xt).argmax(1).cpu().numpy()
    acc = float((pred == yte).mean())
    print("%s_epoch_s %.4f" % (mode, t))
    print("%s_accuracy %.4f" % (mode, acc))
    print("%s_steps %d" % (mode, steps))


if __name__ == "__main__":
    main()
