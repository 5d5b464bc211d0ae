--- bench/replay.lua - graph replay overhead: the trace suite's workload (2000 tiny
-- elementwise ops, y = y*1.0001 + 0.5 on a 4x4 tensor, then a sync) captured once with
-- ltc.Graph and replayed; time per op, against tracing the same ops and syncing (cache hit)
-- in the same run, and through ltc.jit. Target: at most 50 ns per op replayed.
local lib = require "bench.lib"
local ltc = lib.ltc

local OPS = 2000
local x = ltc.randn(4, 4)
ltc.sync()
local y
local function traced()
  y = x
  for _ = 1, OPS // 2 do y = y * 1.0001 + 0.5 end
  ltc.sync()
end
traced() -- compile once

local g = ltc.Graph()
g:capture_begin()
traced()
g:capture_end()
local replay = function() g:replay() end
local compiles = ltc.metrics.counter("UncachedCompile")
local reps = math.max(20, lib.reps)
local t_replay = lib.best(replay, reps)
local t_traced = lib.best(traced, math.max(5, lib.reps))

local f = ltc.jit(function(a)
  local z = a
  for _ = 1, OPS // 2 do z = z * 1.0001 + 0.5 end
  return z
end)
f(x)
f(x)
local t_jit = lib.best(function() f(x) end, reps)
local recompiled = ltc.metrics.counter("UncachedCompile") - compiles

-- the replay must compute what tracing computes
local want = y:totable()
g:replay()
local ok = true
for i, row in ipairs(y:totable()) do
  for j, v in ipairs(row) do ok = ok and math.abs(v - want[i][j]) <= 1e-4 * (1 + math.abs(v)) end
end

local ns = t_replay / OPS * 1e9
local info = ltc.graph_pool_info(g:pool())
print(string.format("replay: %d ops on 4x4: %.1f ns/op replayed, %.1f ns/op through ltc.jit, "
  .. "%.1f ns/op traced + cached sync (%.0fx); %d recompiles; pool %d mallocs, %d reuses%s",
  OPS, ns, t_jit / OPS * 1e9, t_traced / OPS * 1e9, t_traced / t_replay, recompiled,
  info.mallocs, info.reuses, ok and "" or "; REPLAY DIFFERS"))
lib.row { bench = "replay", workload = "2000 ops on 4x4, captured graph replayed",
  ltc = lib.fmt(ns, "ns/op", 1),
  peers = string.format("ltc traced + cached sync %s; ltc.jit %s",
    lib.fmt(t_traced / OPS * 1e9, "ns/op", 1), lib.fmt(t_jit / OPS * 1e9, "ns/op", 1)),
  ratio = string.format("%s faster than traced", lib.fmt(t_traced / t_replay, "x")),
  target = "<= 50 ns/op", met = ns <= 50 and ok }
