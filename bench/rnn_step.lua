--- bench/rnn_step.lua - one training step of a character-level GRU, hand-written and unrolled
-- over T = 64 time steps (batch 32, vocabulary 64, hidden 128: embedding, a GRU cell per step,
-- a linear read-out and cross-entropy at every step, SGD): about 40 recorded ops per time step,
-- so tracing and autograd dominate. Traced (the default path) against the same step under
-- ltc.jit (captured once, then replayed) and PyTorch eager (bench/peers.py rnn_step, the same
-- cell written out, at its best thread count). Target (issue 18): traced within 2x of the
-- replay.
local lib = require "bench.lib"
local ltc = lib.ltc

local B, K, H, T, STEPS = 32, 64, 128, 64, 5

local function model(seed)
  ltc.manual_seed(seed)
  local function param(...) return (ltc.randn(...) * 0.1):requires_grad_() end
  return {
    emb = param(K, 3 * H), wh = param(3 * H, H), bh = param(3 * H),
    wo = param(K, H), bo = param(K),
  }
end

local function params(m) return { m.emb, m.wh, m.bh, m.wo, m.bo } end

-- loss of one sequence batch: x, y [T, B] int64 (1-based classes)
local function loss_of(m, x, y)
  local h = ltc.zeros(B, H)
  local total
  for t = 1, T do
    local gx = m.emb:index_select(1, x[t])            -- [B, 3H]
    local gh = h:linear(m.wh, m.bh)                   -- [B, 3H]
    local xr, xz, xn = gx:narrow(2, 1, H), gx:narrow(2, H + 1, H), gx:narrow(2, 2 * H + 1, H)
    local hr, hz, hn = gh:narrow(2, 1, H), gh:narrow(2, H + 1, H), gh:narrow(2, 2 * H + 1, H)
    local r = (xr + hr):sigmoid()
    local z = (xz + hz):sigmoid()
    local n = (xn + r * hn):tanh()
    h = (1 - z) * n + z * h
    local l = ltc.nn.functional.cross_entropy(h:linear(m.wo, m.bo), y[t])
    total = total and total + l or l
  end
  return total / T
end

local function sgd(m, lr)
  ltc.no_grad(function()
    for _, p in ipairs(params(m)) do
      p:sub_(p.grad * lr)
      p.grad = nil
    end
  end)
end

ltc.manual_seed(1)
local x = (ltc.rand(T, B) * K):floor():long() + 1
local y = (ltc.rand(T, B) * K):floor():long() + 1
ltc.sync()

local m = model(0)
local function step()
  local loss = loss_of(m, x, y)
  loss:backward()
  sgd(m, 0.1)
  ltc.sync()
end
local function run() for _ = 1, STEPS do step() end end
run() -- compile
local compiles = ltc.metrics.counter("UncachedCompile")
local t_run, ms_threads = lib.best_ltc(run, math.max(3, lib.reps // 3))
local ms = t_run / STEPS * 1e3
local recompiled = ltc.metrics.counter("UncachedCompile") - compiles

local jm = model(0)
local jstep = ltc.jit(function(xb, yb)
  local loss = loss_of(jm, xb, yb)
  loss:backward()
  sgd(jm, 0.1)
  return loss
end)
local function jrun() for _ = 1, STEPS do jstep(x, y) end ltc.sync() end
jrun() -- warm-up and capture
local t_jrun, jit_threads = lib.best_ltc(jrun, math.max(3, lib.reps // 3))
local jit_ms = t_jrun / STEPS * 1e3
-- " (n threads)": the thread count of ltc's best (lib.best_ltc)
local function at(n) return lib.at_threads({ t = 0, t_threads = n }, "t") end

local py = lib.py("rnn_step", B, K, H, T, STEPS)
print(string.format("rnn-step: GRU %d-%d, %d steps unrolled, batch %d: traced %.2f ms/step "
  .. "%s (%d recompiles), ltc.jit %.2f ms/step%s, PyTorch eager %s", K, H, T, B, ms, at(ms_threads),
  recompiled, jit_ms, at(jit_threads),
  lib.peer(py, "torch_ms", "ms/step")))
local r = type(py.torch_ms) == "number" and py.torch_ms / ms or nil
lib.row { bench = "rnn-step", workload = string.format("GRU %d-%d, %d steps unrolled, batch %d, fwd+bwd+SGD",
  K, H, T, B),
  ltc = lib.fmt(ms, "ms/step", 2) .. at(ms_threads),
  peers = string.format("ltc.jit %s; PyTorch eager %s", lib.fmt(jit_ms, "ms/step", 2) .. at(jit_threads),
    lib.peer(py, "torch_ms", "ms/step")),
  ratio = string.format("%s of ltc.jit; %s faster than PyTorch eager", lib.fmt(ms / jit_ms, "x"),
    lib.fmt(r, "x")),
  target = "<= 2x ltc.jit", met = ms <= 2 * jit_ms and recompiled == 0 }
