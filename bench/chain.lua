--- bench/chain.lua - relu(a*b + c)*0.5 + exp(-a) over 2^24 float32 elements: ltc against
-- the memory-bandwidth floor (16 bytes per element at the copy loop's bandwidth), a
-- hand-written one-pass C loop, NumPy and PyTorch eager.
-- Targets: at most 2.0x the floor; at least 5x faster than NumPy.
local lib = require "bench.lib"
local ltc = lib.ltc

local N = tonumber(os.getenv("BENCH_CHAIN_N") or "") or 1 << 24
ltc.manual_seed(0)
local a, b, c = ltc.randn(N), ltc.randn(N), ltc.randn(N)
ltc.sync()

local y
local function chain()
  y = nil
  y = (a * b + c):relu() * 0.5 + (-a):exp()
  ltc.sync()
end
local t = lib.best(chain)
y = nil
local ms = t * 1e3

-- the copy moves the chain's bytes: 2N floats read and 2N written (256 MB at 2^24)
local copy = lib.c("copy", 2 * N, lib.threads)
local cfused = lib.c("chain", N, lib.threads)
local py = lib.py("chain", N)
local floor_ms = type(copy.copy_gbs) == "number" and 16 * N / (copy.copy_gbs * 1e9) * 1e3 or nil

print(string.format("chain: %d elements, %d threads", N, lib.threads))
print(string.format("  ltc            %9.2f ms  (%.1f GB/s effective at 16 B/element)", ms,
  16 * N / t * 1e-9))
print(string.format("  floor (copy)   %9s     (copy loop %s)", lib.fmt(floor_ms, "ms"),
  lib.fmt(copy.copy_gbs, "GB/s")))
print(string.format("  C one pass     %9s", lib.fmt(cfused.chain_ms, "ms")))
print(string.format("  NumPy          %9s", lib.peer(py, "numpy_ms", "ms")))
print(string.format("  PyTorch eager  %9s", lib.peer(py, "torch_ms", "ms")))

local peers = string.format("floor %s; C one pass %s; NumPy %s; PyTorch eager %s",
  lib.fmt(floor_ms, "ms"), lib.fmt(cfused.chain_ms, "ms"), lib.peer(py, "numpy_ms", "ms"),
  lib.peer(py, "torch_ms", "ms"))
local vs_floor = floor_ms and ms / floor_ms
local vs_numpy = type(py.numpy_ms) == "number" and py.numpy_ms / ms or nil
lib.row { bench = "chain", workload = "relu(a*b+c)*0.5+exp(-a), f32, 2^24",
  ltc = lib.fmt(ms, "ms"), peers = peers,
  ratio = string.format("%s of floor; %s faster than NumPy; %s faster than PyTorch",
    lib.fmt(vs_floor, "x"), lib.fmt(vs_numpy, "x"),
    lib.fmt(type(py.torch_ms) == "number" and py.torch_ms / ms or nil, "x")),
  target = "<= 2.0x floor; >= 5x NumPy",
  met = vs_floor ~= nil and vs_numpy ~= nil and vs_floor <= 2.0 and vs_numpy >= 5 }
