"""dist_torch.py - the PyTorch peer of bench/dist.lua: one epoch of the Fashion-MNIST MLP
784-256-10 (SGD lr 0.1, global batch 128, shuffled, full batches only) with
DistributedDataParallel over WORLD processes of one thread each (torch.multiprocessing,
backend gloo; Debian's python3-torch), as `mpirun -np WORLD bin/ltc examples/fashion_mnist.lua
--distributed`.

  dist_torch.py DATA_DIR [WORLD]

Prints "key value" lines from rank 0: torch_ddp_epoch_s, torch_ddp_accuracy, torch_ddp_steps;
or torch_ddp_missing <reason>.
"""
import os
import socket
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_mnist import find, read_idx  # noqa: E402


def worker(rank, world, data, port):
    import torch
    import torch.distributed as dist
    import torch.nn as nn

    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    xtr = read_idx(find(data, "train-images-idx3-ubyte")).reshape(-1, 784).astype(np.float32) / 255
    ytr = read_idx(find(data, "train-labels-idx1-ubyte")).astype(np.int64)
    xte = read_idx(find(data, "t10k-images-idx3-ubyte")).reshape(-1, 784).astype(np.float32) / 255
    yte = read_idx(find(data, "t10k-labels-idx1-ubyte")).astype(np.int64)
    ds = torch.utils.data.TensorDataset(torch.from_numpy(xtr), torch.from_numpy(ytr))
    sampler = torch.utils.data.distributed.DistributedSampler(ds, world, rank, shuffle=True, seed=0,
                                                              drop_last=True)
    loader = torch.utils.data.DataLoader(ds, batch_size=128 // world, sampler=sampler, drop_last=True)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    loss_fn = nn.CrossEntropyLoss()
    sampler.set_epoch(0)
    dist.barrier()
    t0 = time.perf_counter()
    steps = 0
    for x, y in loader:
        opt.zero_grad()
        loss = loss_fn(ddp(x), y)
        loss.backward()
        opt.step()
        loss.item()
        steps += 1
    dist.barrier()
    t = time.perf_counter() - t0
    if rank == 0:
        with torch.no_grad():
            acc = (model(torch.from_numpy(xte)).argmax(1) == torch.from_numpy(yte)).float().mean().item()
        print("torch_ddp_epoch_s %.6f" % t)
        print("torch_ddp_accuracy %.6f" % acc)
        print("torch_ddp_steps %d" % steps)
        sys.stdout.flush()
    dist.destroy_process_group()


def main():
    data = sys.argv[1]
    world = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    try:
        import torch.multiprocessing as mp
    except Exception as e:  # noqa: BLE001
        print("torch_ddp_missing %s" % str(e).replace("\n", " ")[:80])
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(world, data, port), nprocs=world, join=True)


if __name__ == "__main__":
    main()
