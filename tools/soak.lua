--- tools/soak.lua - the long run (make soak [STEPS=20000]): trains a small MLP with plain
-- ops and hand-written gradients on synthetic data (a fixed random teacher network labels
-- random inputs), one sync per step, and samples the process's RSS (/proc/self/status
-- VmRSS), the live-tensor count and the pending IR-node count. After warm-up RSS must grow
-- less than 2 percent and the counts must stay flat. A second phase trains with no sync at
-- all: graph trimming (LTC_TRIM_GRAPH_SIZE) must cut the trace, so pending nodes and RSS stay
-- bounded. Prints the samples; exits with status 1 if a limit is broken.
--
-- usage: lua5.4 tools/soak.lua [--steps N] [--nosync-steps N] [--every N]
local ltc = require "ltc"

local opts = { steps = 20000, nosync_steps = 3000, every = 1000 }
do
  local i = 1
  while i <= #arg do
    local k, v = arg[i], tonumber(arg[i + 1])
    if k == "--steps" then opts.steps = v
    elseif k == "--nosync-steps" then opts.nosync_steps = v
    elseif k == "--every" then opts.every = v
    else io.stderr:write("soak: unknown option " .. k .. "\n"); os.exit(2) end
    i = i + 2
  end
end

local function rss_kb()
  local f = io.open("/proc/self/status")
  if not f then return 0 end
  local s = f:read("a")
  f:close()
  return tonumber(s:match("VmRSS:%s*(%d+)")) or 0
end

ltc.manual_seed(1)
local N, D, H, C, BATCHES = 64, 16, 32, 4, 8

-- data: BATCHES batches of N inputs, labelled by a fixed teacher network (one-hot targets)
local teacher = ltc.randn(D, C)
local X, Y = {}, {}
for b = 1, BATCHES do
  local x = ltc.randn(N, D)
  local logits = x:matmul(teacher)
  local m = logits:max(2, true)
  X[b], Y[b] = x, logits:eq(m):to("float32")
end
ltc.sync()

local W1, B1 = ltc.randn(D, H) * 0.3, ltc.zeros(H)
local W2, B2 = ltc.randn(H, C) * 0.3, ltc.zeros(C)
local lr = 0.5

-- one step of plain gradient descent on softmax cross-entropy; returns the loss (pending)
local function step(x, y)
  local pre = x:matmul(W1) + B1
  local h = pre:relu()
  local logits = h:matmul(W2) + B2
  local p = logits:softmax(2)
  local loss = -(y * p:log()):sum() / N
  local dlogits = (p - y) / N
  local dW2 = h:t():matmul(dlogits)
  local dB2 = dlogits:sum(1)
  local dh = dlogits:matmul(W2:t()) * pre:gt(0):to("float32")
  local dW1 = x:t():matmul(dh)
  local dB1 = dh:sum(1)
  W1, B1 = W1 - dW1 * lr, B1 - dB1 * lr
  W2, B2 = W2 - dW2 * lr, B2 - dB2 * lr
  return loss
end

local function sample(phase, i, loss)
  collectgarbage()
  local p = ltc.debug.pending()
  return { phase = phase, step = i, rss = rss_kb(), live = p.live_tensors,
           pending = p.pending_nodes, loss = loss,
           compiles = ltc.metrics.counter("UncachedCompile"),
           trims = ltc.metrics.counter("TrimIrGraph") }
end

local function show(s)
  print(string.format("%-7s step %6d  RSS %7d kB  live tensors %4d  pending nodes %5d  " ..
    "compiles %3d  trims %4d  loss %s", s.phase, s.step, s.rss, s.live, s.pending, s.compiles,
    s.trims, s.loss and string.format("%.4f", s.loss) or "-"))
  io.stdout:flush()
end

local t0 = ltc.clock()
local samples = {}
for i = 1, opts.steps do
  local b = (i - 1) % BATCHES + 1
  local loss = step(X[b], Y[b])
  ltc.sync()
  if i % opts.every == 0 or i == 1 then
    local s = sample("sync", i, loss:item())
    samples[#samples + 1] = s
    show(s)
  end
end
local t1 = ltc.clock()

-- phase 2: no sync at all; the trimming cuts the graph
ltc.config.LTC_TRIM_GRAPH_SIZE = 20000
local nosync = {}
for i = 1, opts.nosync_steps do
  local b = (i - 1) % BATCHES + 1
  step(X[b], Y[b])
  if i % (opts.nosync_steps // 5) == 0 then
    local p = ltc.debug.pending()
    local s = { phase = "no-sync", step = i, rss = rss_kb(), live = p.live_tensors,
                pending = p.pending_nodes, compiles = ltc.metrics.counter("UncachedCompile"),
                trims = ltc.metrics.counter("TrimIrGraph") }
    nosync[#nosync + 1] = s
    show(s)
  end
end
local t2 = ltc.clock()

-- verdict: after warm-up (the sample at 10 percent of the steps), RSS grows < 2 percent;
-- live tensors and pending nodes stay flat; the trace without sync stays bounded
local fails = {}
local warm
for _, s in ipairs(samples) do
  if s.step >= opts.steps // 10 then warm = warm or s end
end
local last = samples[#samples]
if warm and last and warm ~= last then
  local growth = (last.rss - warm.rss) / warm.rss * 100
  print(string.format("RSS after warm-up (step %d): %d kB -> %d kB at step %d: %+.2f%%",
    warm.step, warm.rss, last.rss, last.step, growth))
  if growth >= 2 then fails[#fails + 1] = string.format("RSS grew %.2f%%", growth) end
  for _, s in ipairs(samples) do
    if s.step >= warm.step and (s.live ~= warm.live or s.pending ~= warm.pending) then
      fails[#fails + 1] = string.format("counts moved at step %d: live %d (was %d), pending %d (was %d)",
        s.step, s.live, warm.live, s.pending, warm.pending)
      break
    end
  end
  if last.compiles ~= warm.compiles then
    fails[#fails + 1] = string.format("%d compiles after warm-up", last.compiles - warm.compiles)
  end
end
if #nosync > 0 then
  local maxp = 0
  for _, s in ipairs(nosync) do maxp = math.max(maxp, s.pending) end
  print(string.format("without sync: %d steps, TrimIrGraph %d, at most %d pending nodes",
    opts.nosync_steps, nosync[#nosync].trims - last.trims, maxp))
  if nosync[#nosync].trims == last.trims then fails[#fails + 1] = "no trimming without sync" end
  if maxp > 4 * 20000 then fails[#fails + 1] = "the trace without sync grew to " .. maxp .. " nodes" end
end
print(string.format("%d steps in %.1f s (%.0f steps/s); %d steps without sync in %.1f s",
  opts.steps, t1 - t0, opts.steps / (t1 - t0), opts.nosync_steps, t2 - t1))
if #fails > 0 then
  print("soak: FAILED: " .. table.concat(fails, "; "))
  os.exit(1)
end
print("soak: ok")
