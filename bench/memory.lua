--- bench/memory.lua - peak RSS of the chain relu(a*b + c)*0.5 + exp(-a) over 2^24 float32
-- elements, above the process's RSS after loading ltc, against the bytes of its three
-- inputs and one output. Peer: NumPy measured the same way. Target: at most 1.15x.
-- Runs itself in a child process (a fresh peak).
local lib = require "bench.lib"
local ltc = lib.ltc

local N = tonumber(os.getenv("BENCH_CHAIN_N") or "") or 1 << 24

if arg[1] == "--child" then
  local base = lib.rss().rss
  ltc.manual_seed(0)
  local a, b, c = ltc.randn(N), ltc.randn(N), ltc.randn(N)
  ltc.sync()
  local y
  for _ = 1, 3 do
    y = nil
    y = (a * b + c):relu() * 0.5 + (-a):exp()
    ltc.sync()
  end
  print("base " .. base)
  print("hwm " .. lib.rss().hwm)
  return
end

local src = debug.getinfo(1, "S").source:match("^@(.*)$")
local f = io.popen(string.format("lua5.4 %s --child 2>&1", src))
local r = {}
for line in f:lines() do
  local k, v = line:match("^(%a+) (%d+)$")
  if k then r[k] = tonumber(v) else print(line) end
end
f:close()
local bytes = 4 * 4 * N
local ratio = r.hwm and (r.hwm - r.base) / bytes
local py = lib.py("memory", N)
local npr = type(py.numpy_peak_mb) == "number" and (py.numpy_peak_mb - py.numpy_base_mb) * 2 ^ 20 / bytes
print(string.format("memory: chain of %d elements: inputs+output %.0f MB; ltc peak %.0f MB above "
  .. "a %.0f MB base (%sx); NumPy %sx", N, bytes / 2 ^ 20, ((r.hwm or 0) - (r.base or 0)) / 2 ^ 20,
  (r.base or 0) / 2 ^ 20, lib.fmt(ratio, "", 2), lib.fmt(npr, "", 2)))
lib.row { bench = "memory", workload = "peak RSS of the chain, 2^24",
  ltc = ratio and string.format("%.0f MB (%.2fx)", (r.hwm - r.base) / 2 ^ 20, ratio) or "n/a",
  peers = string.format("inputs+output %.0f MB; NumPy %sx", bytes / 2 ^ 20, lib.fmt(npr, "", 2)),
  ratio = lib.fmt(ratio, "x of inputs+output"), target = "<= 1.15x",
  met = ratio ~= nil and ratio <= 1.15 }
