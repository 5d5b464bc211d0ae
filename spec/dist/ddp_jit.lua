-- A DistributedDataParallel step under ltc.jit (warm-up, capture, then replays of the captured
-- graph with its gradient all_reduce) gives, on every rank, the same losses and parameters as
-- the same step run untraced, compiles nothing after the warm-up and the capture, and its
-- replays do communicate (the collectives run inside the replayed plan). Buckets of 105 bytes
-- (float64: two all_reduces a step) and the default 25 MB (float32: one).
package.path = (arg[0]:match("^(.*)/[^/]*$") or ".") .. "/?.lua;" .. package.path
local S = require "support"
local ltc, dist, rank, ws = S.init()
local nn = ltc.nn

local GLOBAL, STEPS, N = 12, 9, 48

local function model_of(dtype) return S.mlp(dtype) end
local function data_of(dtype) return S.data(dtype, N) end

-- trains STEPS steps; returns the parameters, the losses (the global batch's mean, an
-- all_reduce avg of each rank's loss), the UncachedCompile count after each step, the number
-- of collective calls of the last step, and the jitted function (nil untraced)
local function train(dtype, jit, bucket_cap_mb)
  local model = model_of(dtype)
  local ddp = nn.parallel.DistributedDataParallel(model, { bucket_cap_mb = bucket_cap_mb })
  local opt = ltc.optim.SGD(ddp:parameters(), { lr = 0.2, momentum = 0.9 })
  local x, y = data_of(dtype)
  local loader = ltc.data.DataLoader({ x, y }, { batch_size = GLOBAL // ws, shuffle = true, seed = 3,
    distributed = true })
  local function step_fn(xb, yb)
    opt:zero_grad()
    local loss = nn.functional.cross_entropy(ddp(xb), yb)
    loss:backward()
    opt:step()
    return ltc.all_reduce(loss:detach(), 1)
  end
  local f = jit and ltc.jit(step_fn) or step_fn
  local losses, compiles, step, calls = {}, {}, 0, nil
  while step < STEPS do
    for _, xb, yb in loader:batches() do
      step = step + 1
      if step > STEPS then break end
      if step == STEPS then dist.reset_stats() end
      local loss = f(xb, yb)
      ltc.sync()
      if step == STEPS then calls = dist.stats() end
      losses[step] = loss:item()
      compiles[step] = ltc.metrics.counter("UncachedCompile")
    end
  end
  local vals = {}
  for i, p in ipairs(model:parameters()) do vals[i] = p:totable() end
  ddp:remove()
  return vals, losses, compiles, calls, jit and f or nil
end

for _, case in ipairs({ { "float64", 1e-9, 0.0001, 2 }, { "float32", 1e-5, nil, 1 } }) do
  local dtype, tol, cap, buckets = case[1], case[2], case[3], case[4]
  local ref, ref_losses = train(dtype, false, cap)
  local recaptures = ltc.metrics.counter("JitRecapture")
  local got, losses, compiles, calls, f = train(dtype, true, cap)
  for i = 1, #ref do
    S.equal(string.format("jitted DDP: parameter %d equals the untraced step's (%s)", i, dtype),
      got[i], ref[i], tol)
  end
  S.equal("jitted DDP: losses equal the untraced step's (" .. dtype .. ")", losses, ref_losses, tol)
  S.check("jitted DDP: captured and replayed (" .. dtype .. ")", f.graph ~= nil and f.calls == STEPS
    and ltc.metrics.counter("JitRecapture") == recaptures, string.format("graph %s, calls %d, "
    .. "recaptures %d", tostring(f.graph), f.calls, ltc.metrics.counter("JitRecapture") - recaptures))
  S.check("jitted DDP: no compile after the warm-up and the capture (" .. dtype .. ")",
    compiles[STEPS] == compiles[2], string.format("UncachedCompile %d after step 2, %d after step %d",
      compiles[2], compiles[STEPS], STEPS))
  -- a replayed step communicates: an all_reduce per bucket and the loss's average, all checked
  -- by one descriptor exchange (the step is one computation)
  S.check("jitted DDP: a replay runs the step's collectives (" .. dtype .. ")",
    calls.calls - calls.checks == buckets + 1 and calls.checks == 1,
    string.format("collective calls in the last step: %d, of which %d descriptor exchanges",
      calls.calls, calls.checks))
end

-- dist.all_reduce inside a jitted function: run at once at the warm-up, recorded by the
-- capture, repeated by every replay (each call reduces that call's values)
do
  local f = ltc.jit(function(a)
    local s = a * 1
    dist.all_reduce(s, "sum")
    return s + 0
  end)
  local ok = true
  local got = {}
  for call = 1, 5 do
    local out = f(ltc.full({ 3 }, (rank + 1) * call, "float64"))
    got[call] = out:totable()[1]
    ok = ok and S.close(out:totable(), { call * ws * (ws + 1) / 2, call * ws * (ws + 1) / 2,
      call * ws * (ws + 1) / 2 }, 1e-12)
  end
  S.check("jitted dist.all_reduce reduces each call's values", ok and f.graph ~= nil,
    "got " .. S.show(got))
end

S.done()
