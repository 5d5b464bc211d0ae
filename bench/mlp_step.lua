--- bench/mlp_step.lua - one training step of a small MLP (64-128-10, ReLU, cross-entropy,
-- SGD), batch 256: forward, backward and update, one cached graph per step in ltc; against
-- PyTorch eager in the same run. Target: at least 5x faster than PyTorch eager.
local lib = require "bench.lib"
local ltc = lib.ltc
local nn = ltc.nn

local B, D, H, K, STEPS = 256, 64, 128, 10, 200
ltc.manual_seed(0)
local model = nn.Sequential(nn.Linear(D, H), nn.ReLU(), nn.Linear(H, K))
local opt = ltc.optim.SGD(model:parameters(), { lr = 0.1 })
local x = ltc.randn(B, D)
local y = (ltc.arange(0, B) % K + 1):long()
ltc.sync()

local function step()
  opt:zero_grad()
  local loss = nn.functional.cross_entropy(model(x), y)
  loss:backward()
  opt:step()
  ltc.sync()
end
local function run() for _ = 1, STEPS do step() end end
run() -- compile
local compiles = ltc.metrics.counter("UncachedCompile")
local us = lib.best(run, math.max(3, lib.reps // 2)) / STEPS * 1e6
local recompiled = ltc.metrics.counter("UncachedCompile") - compiles

local py = lib.py("mlp_step", B, D, H, K, STEPS)
local r = type(py.torch_us) == "number" and py.torch_us / us or nil
print(string.format("mlp-step: %d-%d-%d MLP, batch %d: ltc %.1f us/step (%d recompiles); PyTorch eager %s",
  D, H, K, B, us, recompiled, lib.fmt(py.torch_us, "us/step", 1)))
lib.row { bench = "mlp-step", workload = string.format("%d-%d-%d MLP, batch %d, fwd+bwd+SGD", D, H, K, B),
  ltc = lib.fmt(us, "us/step", 1), peers = "PyTorch eager " .. lib.fmt(py.torch_us, "us/step", 1),
  ratio = string.format("%s faster than PyTorch eager", lib.fmt(r, "x")),
  target = ">= 5x PyTorch eager", met = r ~= nil and r >= 5 }
