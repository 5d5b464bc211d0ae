"""peers.py - the Python peers of `make bench` (NumPy, PyTorch eager, PyTorch lazy).

Run with Debian's python3 (/usr/bin/python3: python3-numpy, python3-torch). Each command
prints "key value" lines that bench/lib.lua parses; a peer that cannot run prints
"<key>_missing <reason>" instead. Times are the best of BENCH_REPS runs, in milliseconds.

  peers.py chain N            numpy_ms, torch_ms: relu(a*b + c)*0.5 + exp(-a), float32
  peers.py gemm N nn|nt       numpy_gflops, torch_gflops
  peers.py trace OPS          torch_lazy_us, torch_eager_us: per op, 4x4 tensor, then a sync
  peers.py softmax R C        torch_ms, numpy_ms: softmax over the last dim
  peers.py layernorm R C      torch_ms: layer_norm over the last dim (weight and bias)
  peers.py conv2d N C H W K   torch_ms: conv2d, K filters 3x3, padding 1
  peers.py memory N           numpy_peak_mb, numpy_base_mb: the chain's peak RSS in NumPy
  peers.py rnn_step B K H T S torch_ms: one SGD step of bench/rnn_step.lua's GRU, eager
  peers.py sdpa B H L E C      torch_ms: attention forward + backward (q, k, v [B, H, L, E],
                              causal when C is 1), softmax written out (torch 1.13 has no
                              F.scaled_dot_product_attention)
"""
import os
import resource
import sys
import time

REPS = int(os.environ.get("BENCH_REPS", "10"))
MIN_TIME = float(os.environ.get("BENCH_MIN_TIME", "0.5"))  # as bench/lib.lua's lib.more
THREADS = int(os.environ.get("LTC_NUM_THREADS", str(os.cpu_count() or 1)))


def best(fn, reps=REPS):
    """Best wall time of fn() after a warm-up call: reps runs and at least MIN_TIME seconds
    (at most 50 x reps runs), the rule of bench/lib.lua."""
    fn()
    t = float("inf")
    r, start = 0, time.perf_counter()
    while r < reps or (r < 50 * reps and time.perf_counter() - start < MIN_TIME):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
        r += 1
    return t


def torch_or_none():
    try:
        import torch
        torch.set_num_threads(THREADS)
        return torch
    except Exception as e:  # noqa: BLE001 - report any import problem as missing
        print("torch_missing", str(e).replace("\n", " ")[:80])
        return None


def chain(n):
    import numpy as np
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
    print("numpy_ms %.3f" % (1e3 * best(lambda: np.maximum(a * b + c, 0) * 0.5 + np.exp(-a))))
    torch = torch_or_none()
    if torch:
        ta, tb, tc = (torch.from_numpy(x) for x in (a, b, c))
        print("torch_ms %.3f" % (1e3 * best(lambda: torch.relu(ta * tb + tc) * 0.5 + torch.exp(-ta))))


def gemm(n, mode):
    import numpy as np
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    flops = 2.0 * n * n * n
    if mode == "nt":
        t = best(lambda: a @ b.T, max(3, REPS // 2))
    else:
        t = best(lambda: a @ b, max(3, REPS // 2))
    print("numpy_gflops %.3f" % (flops / t * 1e-9))
    torch = torch_or_none()
    if torch:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        if mode == "nt":
            t = best(lambda: ta @ tb.t(), max(3, REPS // 2))
        else:
            t = best(lambda: ta @ tb, max(3, REPS // 2))
        print("torch_gflops %.3f" % (flops / t * 1e-9))


def trace(ops):
    torch = torch_or_none()
    if not torch:
        return
    x = torch.randn(4, 4)

    def eager():
        y = x
        for _ in range(ops // 2):
            y = y * 1.0001 + 0.5
        return y
    print("torch_eager_us %.3f" % (1e6 * best(eager, 5) / ops))
    try:
        import torch._lazy
        import torch._lazy.ts_backend
        torch._lazy.ts_backend.init()
        xl = x.to("lazy")

        def lazy():
            y = xl
            for _ in range(ops // 2):
                y = y * 1.0001 + 0.5
            torch._lazy.mark_step()
            return y
        lazy()
        print("torch_lazy_us %.3f" % (1e6 * best(lazy, 5) / ops))
    except Exception as e:  # noqa: BLE001
        print("torch_lazy_missing", str(e).replace("\n", " ")[:80])


def softmax(r, c):
    import numpy as np
    a = np.random.default_rng(0).standard_normal((r, c), dtype=np.float32)

    def np_softmax():
        e = np.exp(a - a.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    print("numpy_ms %.3f" % (1e3 * best(np_softmax)))
    torch = torch_or_none()
    if torch:
        ta = torch.from_numpy(a)
        print("torch_ms %.3f" % (1e3 * best(lambda: torch.softmax(ta, -1))))


def layernorm(r, c):
    torch = torch_or_none()
    if torch:
        x = torch.randn(r, c)
        w, b = torch.randn(c), torch.randn(c)
        print("torch_ms %.3f" % (1e3 * best(lambda: torch.nn.functional.layer_norm(x, (c,), w, b))))


def conv2d(n, c, h, w, k):
    torch = torch_or_none()
    if torch:
        x = torch.randn(n, c, h, w)
        f, b = torch.randn(k, c, 3, 3), torch.randn(k)
        print("torch_ms %.3f" % (1e3 * best(lambda: torch.nn.functional.conv2d(x, f, b, padding=1), 5)))


def mlp_step(batch, d_in, hidden, d_out, steps):
    """One SGD step of a d_in-hidden-d_out MLP (ReLU, cross-entropy) in PyTorch eager."""
    torch = torch_or_none()
    if not torch:
        return
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(d_in, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, d_out))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(batch, d_in), torch.randint(0, d_out, (batch,))

    def run():
        for _ in range(steps):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    run()
    print("torch_us %.3f" % (1e6 * best(run, 5) / steps))


def rnn_step(batch, vocab, hidden, steps_t, steps):
    """One SGD step of a character GRU unrolled over steps_t steps, written out as in
    bench/rnn_step.lua (embedding rows, one linear for the three gates of h, a read-out and
    cross-entropy per step)."""
    torch = torch_or_none()
    if not torch:
        return
    torch.manual_seed(0)
    B, K, H, T = batch, vocab, hidden, steps_t

    def param(*shape):
        return (torch.randn(*shape) * 0.1).requires_grad_()
    emb, wh, bh, wo, bo = param(K, 3 * H), param(3 * H, H), param(3 * H), param(K, H), param(K)
    x = torch.randint(0, K, (T, B))
    y = torch.randint(0, K, (T, B))
    F = torch.nn.functional

    def step():
        h = torch.zeros(B, H)
        total = 0
        for t in range(T):
            gx = emb.index_select(0, x[t])
            gh = F.linear(h, wh, bh)
            xr, xz, xn = gx.split(H, 1)
            hr, hz, hn = gh.split(H, 1)
            r = torch.sigmoid(xr + hr)
            z = torch.sigmoid(xz + hz)
            n = torch.tanh(xn + r * hn)
            h = (1 - z) * n + z * h
            total = total + F.cross_entropy(F.linear(h, wo, bo), y[t])
        loss = total / T
        loss.backward()
        with torch.no_grad():
            for p in (emb, wh, bh, wo, bo):
                p.sub_(p.grad * 0.1)
                p.grad = None

    def run():
        for _ in range(steps):
            step()
    print("torch_ms %.3f" % (1e3 * best(run, 3) / steps))


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def memory(n):
    import numpy as np
    base = rss_mb()
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
    y = np.maximum(a * b + c, 0) * 0.5 + np.exp(-a)
    del y
    y = np.maximum(a * b + c, 0) * 0.5 + np.exp(-a)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("numpy_peak_mb %.1f" % peak)
    print("numpy_base_mb %.1f" % base)


def sdpa(b, h, l, e, causal):
    torch = torch_or_none()
    if torch:
        q, k, v = (torch.randn(b, h, l, e, requires_grad=True) for _ in range(3))
        g = torch.randn(b, h, l, e)
        mask = torch.ones(l, l, dtype=torch.bool).tril() if causal else None

        def step():
            s = q @ k.transpose(-2, -1) / e ** 0.5
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            out = torch.softmax(s, -1) @ v
            torch.autograd.grad((out * g).sum(), (q, k, v))
        print("torch_ms %.3f" % (1e3 * best(step)))


def main():
    cmd, args = sys.argv[1], [int(x) if x.isdigit() else x for x in sys.argv[2:]]
    {"chain": chain, "gemm": gemm, "trace": trace, "softmax": softmax,
     "layernorm": layernorm, "conv2d": conv2d, "memory": memory,
     "mlp_step": mlp_step, "rnn_step": rnn_step, "sdpa": sdpa}[cmd](*args)


if __name__ == "__main__":
    main()
