--- bench/trace.lua - the tracing fast path: 2000 tiny elementwise ops (y = y*1.0001 + 0.5
-- on a 4x4 tensor), then a cached sync; time per op. Peers: PyTorch lazy (TorchScript
-- backend) and PyTorch eager. Target: at most 1 microsecond per op. A second row runs the
-- same ops on an operand that requires grad, then y:sum():backward() and the sync: time
-- per recorded op, its share of the backward's construction included (target 1 us/op).
local lib = require "bench.lib"
local ltc = lib.ltc

local OPS = 2000
local x = ltc.randn(4, 4)
ltc.sync()
local y
local function run()
  y = x
  for _ = 1, OPS // 2 do y = y * 1.0001 + 0.5 end
  ltc.sync()
end
run() -- compile once
local compiles = ltc.metrics.counter("UncachedCompile")
local t = lib.best(run, math.max(5, lib.reps))
local recompiled = ltc.metrics.counter("UncachedCompile") - compiles
local us = t / OPS * 1e6
-- the sync alone (graph walk, hash, cache hit, run): timed apart
local ts = lib.best(function() y = x; for _ = 1, OPS // 2 do y = y * 1.0001 + 0.5 end end,
  math.max(5, lib.reps))
local py = lib.py("trace", OPS)
print(string.format("trace: %d ops on 4x4 then a sync: %.3f us/op (tracing alone %.3f us/op, "
  .. "%d recompiles)", OPS, us, ts / OPS * 1e6, recompiled))
print(string.format("  PyTorch lazy %s/op; PyTorch eager %s/op",
  lib.peer(py, "torch_lazy_us", "us", 3), lib.peer(py, "torch_eager_us", "us", 3)))
if py.torch_lazy_missing then print("  PyTorch lazy unavailable: " .. py.torch_lazy_missing) end
lib.row { bench = "trace", workload = "2000 ops on 4x4 + cached sync",
  ltc = lib.fmt(us, "us/op", 3),
  peers = string.format("PyTorch lazy %s; PyTorch eager %s",
    py.torch_lazy_us and lib.peer(py, "torch_lazy_us", "us/op", 3) or "unavailable",
    lib.peer(py, "torch_eager_us", "us/op", 3)),
  ratio = type(py.torch_lazy_us) == "number"
    and string.format("%s faster than PyTorch lazy", lib.fmt(py.torch_lazy_us / us, "x")) or "",
  target = "<= 1 us/op", met = us <= 1.0 and recompiled == 0 }

-- the same ops recorded by autograd (x requires grad), then the backward built and synced
local xg = ltc.randn(4, 4):requires_grad_()
ltc.sync()
local function run_grad()
  xg.grad = nil
  y = xg
  for _ = 1, OPS // 2 do y = y * 1.0001 + 0.5 end
  y:sum():backward()
  ltc.sync()
end
run_grad() -- compile once
local gcompiles = ltc.metrics.counter("UncachedCompile")
local tg = lib.best(run_grad, math.max(5, lib.reps))
local grecompiled = ltc.metrics.counter("UncachedCompile") - gcompiles
local gus = tg / OPS * 1e6
-- recording and backward construction alone (the sync after each, untimed)
local tb, r, start = math.huge, 0, ltc.clock()
while lib.more(r, start, math.max(5, lib.reps)) do
  r = r + 1
  xg.grad = nil
  local t0 = ltc.clock()
  y = xg
  for _ = 1, OPS // 2 do y = y * 1.0001 + 0.5 end
  y:sum():backward()
  local dt = ltc.clock() - t0
  ltc.sync()
  if dt < tb then tb = dt end
end
local bus = tb / OPS * 1e6
print(string.format("trace with requires_grad: %d ops, backward, sync: %.3f us/op (recording and "
  .. "backward construction alone %.3f us/op, %d recompiles)", OPS, gus, bus, grecompiled))
lib.row { bench = "trace", workload = "recording + backward construction, per op (no sync)",
  ltc = lib.fmt(bus, "us/op", 3), peers = string.format("ltc tracing without grad %s",
    lib.fmt(ts / OPS * 1e6, "us/op", 3)),
  ratio = string.format("%s of tracing without grad", lib.fmt(bus / (ts / OPS * 1e6), "x")),
  target = "<= 1 us/op", met = bus <= 1.0 }
lib.row { bench = "trace", workload = "the same ops requiring grad + backward + sync",
  ltc = lib.fmt(gus, "us/op", 3), peers = string.format("ltc without grad %s",
    lib.fmt(us, "us/op", 3)),
  ratio = string.format("%s of the op without grad", lib.fmt(gus / us, "x")),
  target = "<= 1 us/op", met = gus <= 1.0 and grecompiled == 0 }
