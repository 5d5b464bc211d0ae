-- N steps of DistributedDataParallel on each rank's shard equal single-process training on
-- the global batch (float64 within 1e-5, float32 within 1e-4), and after step 3 no step
-- compiles anything on any rank. Each rank also trains the single-process reference itself
-- (no collectives), from the same seed.
package.path = (arg[0]:match("^(.*)/[^/]*$") or ".") .. "/?.lua;" .. package.path
local S = require "support"
local ltc, dist, rank, ws = S.init()
local nn = ltc.nn

local GLOBAL, STEPS, N = 12, 8, 48 -- 12 rows a step, split over 2 or 3 ranks

local function model_of(dtype) return S.mlp(dtype) end
local function data_of(dtype) return S.data(dtype, N) end

-- trains and returns the parameters' values and the UncachedCompile count per step
local function train(dtype, distributed, bucket_cap_mb)
  local model = model_of(dtype)
  local net = distributed and nn.parallel.DistributedDataParallel(model, { bucket_cap_mb = bucket_cap_mb })
    or model
  local opt = ltc.optim.SGD(net:parameters(), { lr = 0.2, momentum = 0.9 })
  local x, y = data_of(dtype)
  local loader = ltc.data.DataLoader({ x, y }, { batch_size = distributed and GLOBAL // ws or GLOBAL,
    shuffle = true, seed = 3, distributed = distributed })
  local compiles, step = {}, 0
  while step < STEPS do
    for _, xb, yb in loader:batches() do
      step = step + 1
      if step > STEPS then break end
      if step == STEPS then dist.reset_stats() end
      opt:zero_grad()
      local loss = nn.functional.cross_entropy(net(xb), yb)
      loss:backward()
      opt:step()
      ltc.sync()
      compiles[step] = ltc.metrics.counter("UncachedCompile")
    end
  end
  local vals = {}
  for i, p in ipairs(model:parameters()) do vals[i] = p:totable() end
  if distributed then net:remove() end
  return vals, compiles, dist.stats()
end

-- float64 with 105-byte buckets, float32 with the default 25 MB. A bucket takes gradients, last
-- parameter first, until it holds the cap or more: {b2 24 B, W2 144 B} and {b1 48 B, W1 240 B}
-- in float64 (2 all_reduces a step); all four in float32 (1 all_reduce)
for _, case in ipairs({ { "float64", 1e-5, 0.0001 }, { "float32", 1e-4, nil } }) do
  local dtype, tol = case[1], case[2]
  local ref = train(dtype, false)
  local got, compiles, st = train(dtype, true, case[3])
  -- one all_reduce per bucket, and one descriptor exchange that checks the step's collectives
  local buckets = case[3] and 2 or 1
  S.check("DDP buckets (" .. dtype .. ")", st.calls - st.checks == buckets and st.checks == 1,
    string.format("calls in the last step: %d, of which %d descriptor exchanges", st.calls, st.checks))
  for i = 1, #ref do
    S.equal(string.format("DDP parameter %d equals single-process training (%s)", i, dtype),
      got[i], ref[i], tol)
  end
  S.check("DDP: no compile after step 3 (" .. dtype .. ")", compiles[STEPS] == compiles[3],
    string.format("UncachedCompile %d after step 3, %d after step %d", compiles[3], compiles[STEPS], STEPS))
end

-- the DistributedSampler: shards are disjoint and cover one shuffled order
do
  local idx = ltc.arange(1, 31):long() -- 30 rows: 10 per rank of 3, 15 of 2
  local loader = ltc.data.DataLoader(idx, { batch_size = 4, shuffle = true, seed = 5, distributed = true })
  local mine = {}
  for _, b in loader:batches() do for _, v in ipairs(b:totable()) do mine[#mine + 1] = v end end
  local all = dist.all_gather(ltc.tensor(mine, "int64"))
  local seen, dup = {}, false
  for _, part in ipairs(all) do
    for _, v in ipairs(part:totable()) do dup = dup or seen[v]; seen[v] = true end
  end
  local count = 0
  for _ in pairs(seen) do count = count + 1 end
  S.check("DistributedSampler shards are disjoint and cover the epoch", not dup and count == 30,
    "rows seen " .. count)
  S.check("DistributedSampler: #loader counts this rank's batches", #loader == (30 // ws + 3) // 4, #loader)
end

S.done()
