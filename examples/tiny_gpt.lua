--- tiny GPT: a small decoder-only transformer over characters, trained on Debian's fortunes.
--
--   bin/ltc examples/tiny_gpt.lua [--steps 200] [--width 128] [--layers 4] [--heads 4]
--                                 [--seq 64] [--batch 16] [--lr 0.003] [--warmup 20]
--                                 [--chars 400000] [--temperature 0.8] [--init-dir DIR]
--                                 [--seed 0] [--keyvals 1] [--jit 1]
--
-- Token and position embeddings, `layers` pre-norm blocks (nn.TransformerEncoderLayer with
-- norm_first, GELU, causal self-attention over `seq` characters, feed-forward 4 x width), a
-- final LayerNorm and a linear head; AdamW with a linear warm-up then a cosine schedule
-- (ltc.optim.lr_scheduler.SequentialLR of LinearLR and CosineAnnealingLR: the learning rate
-- is a graph parameter, so the schedule never recompiles), gradients clipped at norm 1 in
-- the graph. The text is cut into `batch` streams as in examples/char_lstm.lua; step k reads
-- the k-th window of each. It prints progress, the validation loss (last tenth of the text)
-- and a sample. `--init-dir DIR` writes the initial weights and data as .npy for the PyTorch
-- twin (bench/tiny_gpt.py, run by bench/tiny_gpt.lua).
--
-- The training step (forward, backward, clipping, AdamW) is wrapped in ltc.jit (tinygrad's
-- TinyJit idea): step 1 traces it, step 2 captures its graph, and later steps replay that
-- graph with no tracing, hashing or cache look-up; the schedule's learning rate is a live
-- graph parameter, so the replays honour it. `--jit 0` traces every step instead (one sync
-- per step, one cached computation): the same losses to the last digit, a few ms a step
-- slower (the tracing of some 2000 IR nodes and the sync's hashing and collection).
local ltc = require "ltc"
local common = dofile((arg and arg[0] and arg[0]:match("^(.*)/[^/]*$") or "examples") .. "/text_common.lua")
local nn = ltc.nn

local opts = { steps = 200, width = 128, layers = 4, heads = 4, seq = 64, batch = 16, lr = 0.003,
  warmup = 20, chars = 400000, temperature = 0.8, init_dir = "", seed = 0, keyvals = 0,
  sample = 200, data = "/usr/share/games/fortunes", jit = 1 }
common.options("tiny_gpt", opts,
  "[--steps N] [--width N] [--layers N] [--heads N] [--seq N] "
    .. "[--batch N] [--lr X] [--warmup N] [--chars N] [--temperature X] [--init-dir DIR] "
    .. "[--seed N] [--sample N] [--data DIR] [--keyvals 1] [--jit 0|1]")

-- the fortune files' text (as examples/char_lstm.lua reads it)
local codes, vocab, index = common.corpus("tiny_gpt", opts.data, opts.chars)
local V = #vocab

ltc.manual_seed(opts.seed)
math.randomseed(opts.seed)
local B, T, C = opts.batch, opts.seq, opts.width
local n_val = #codes // 10
local n_train = #codes - n_val
local function streams(first, count, rows)
  local xs, ys = {}, {}
  for r = 1, rows do
    local xr, yr = {}, {}
    for j = 1, count do
      local k = first + (r - 1) * count + j - 1
      xr[j], yr[j] = codes[k], codes[k + 1]
    end
    xs[r], ys[r] = xr, yr
  end
  return ltc.tensor(xs, "int64"), ltc.tensor(ys, "int64")
end
local L = (n_train - 1) // B
local train_x, train_y = streams(1, L, B)
local VL = (n_val - 1) // 8
local val_x, val_y = streams(n_train + 1, VL, 8)
print(string.format("data: %d characters (%d training, %d validation), vocabulary %d", #codes,
  n_train, n_val, V))

-- [B, T] windows by an int64 index tensor (a graph parameter: no recompiles)
local function window(x, y, k)
  local s = ((k - 1) % (x:size(2) // T)) * T
  local idx = {}
  for j = 1, T do idx[j] = s + j end
  idx = ltc.tensor(idx, "int64")
  return x:index_select(2, idx), y:index_select(2, idx)
end

local GPT = nn.class("GPT")
function GPT:__init()
  self.tok = nn.Embedding(V, C)
  self.pos = nn.Embedding(T, C)
  self.blocks = nn.ModuleList()
  for _ = 1, opts.layers do
    self.blocks:append(nn.TransformerEncoderLayer(C, opts.heads, { dim_feedforward = 4 * C,
      dropout = 0, activation = "gelu", norm_first = true, batch_first = true }))
  end
  self.norm = nn.LayerNorm(C)
  self.head = nn.Linear(C, V, { bias = false })
  self.mask = ltc.ones({ T, T }, "bool"):triu(1) -- true: may not attend (a later position)
  self.positions = ltc.arange(1, T + 1)
end
--- gpt(x [B, t] int64, t <= seq) -> logits [B, t, V]
function GPT:forward(x)
  local t = x:size(2)
  local h = self.tok(x) + self.pos(self.positions:narrow(1, 1, t))
  local mask = t == T and self.mask or self.mask:narrow(1, 1, t):narrow(2, 1, t)
  -- is_causal: the hint (PyTorch's) that src_mask is the causal mask, so the fused attention
  -- skips the masked blocks instead of reading the mask
  for _, blk in ipairs(self.blocks:children()) do h = blk(h, { src_mask = mask, is_causal = true }) end
  return self.head(self.norm(h))
end

local model = GPT()
local n_params = 0
for _, p in ipairs(model:parameters()) do n_params = n_params + p:numel() end
print(string.format("model: %d layers, %d heads, width %d, %d parameters", opts.layers, opts.heads,
  C, n_params))

if opts.init_dir ~= "" then
  os.execute("mkdir -p '" .. opts.init_dir .. "'")
  for name, p in pairs(model:state_dict()) do ltc.save(opts.init_dir .. "/" .. name .. ".npy", p) end
  ltc.save(opts.init_dir .. "/train_x.npy", train_x)
  ltc.save(opts.init_dir .. "/train_y.npy", train_y)
  ltc.save(opts.init_dir .. "/val_x.npy", val_x)
  ltc.save(opts.init_dir .. "/val_y.npy", val_y)
  ltc.save(opts.init_dir .. "/meta.npy", ltc.tensor({ T, opts.lr, opts.layers, opts.heads,
    opts.warmup, opts.steps }, "float64"))
end

local S = ltc.optim.lr_scheduler
local opt = ltc.optim.AdamW(model:parameters(), { lr = opts.lr, weight_decay = 0.1, betas = { 0.9, 0.95 } })
local sched = S.SequentialLR(opt, { schedulers = {
  S.LinearLR(opt, { start_factor = 1 / opts.warmup, total_iters = opts.warmup }),
  S.CosineAnnealingLR(opt, { T_max = math.max(opts.steps - opts.warmup, 1), eta_min = opts.lr / 10 }) },
  milestones = { opts.warmup } })

local function evaluate()
  model:eval()
  local total, count = 0, 0
  ltc.no_grad(function()
    for k = 1, VL // T do
      local x, y = window(val_x, val_y, k)
      local loss = nn.functional.cross_entropy(model(x):reshape({ -1, V }), y:reshape({ -1 }))
      total, count = total + loss:item(), count + 1
    end
  end)
  model:train()
  return total / count
end

-- One training step on a window: the loss (with --jit 1, a tensor the replay fills in).
local params = model:parameters()
local function train_step(x, y)
  opt:zero_grad()
  local loss = nn.functional.cross_entropy(model(x):reshape({ -1, V }), y:reshape({ -1 }))
  loss:backward()
  nn.utils.clip_grad_norm_(params, 1.0)
  opt:step()
  return loss
end
local step_fn = opts.jit ~= 0 and ltc.jit(train_step) or train_step

local losses = {}
ltc.sync()
ltc.metrics.reset()
local clock = ltc.clock or os.clock
local t0, cpu0 = clock(), os.clock()
local t_warm, warm_compiles
local last_line = t0
for step = 1, opts.steps do
  local x, y = window(train_x, train_y, step)
  local loss = step_fn(x, y)
  sched:step()
  -- (no collectgarbage(): the sync runs a young collection of Lua's generational GC, which
  -- finds this step's unreachable tensors so that they do not become outputs of its graph)
  ltc.sync()
  losses[step] = loss:item()
  if step == 3 then t_warm, warm_compiles = clock(), ltc.metrics.counter("UncachedCompile") end
  local now = clock()
  if now - last_line > 2 or step == opts.steps then
    last_line = now
    io.write(string.format("\rstep %4d/%d  loss %.4f  lr %.5f  %.1f ms/step   ", step, opts.steps,
      losses[step], opt.lr, (now - t0) / step * 1000))
    io.flush()
  end
end
local t1, cpu1 = clock(), os.clock()
print()
local step_ms, how = common.step_ms(t0, t1, t_warm, opts.steps, opts.steps - 3)
local train_compiles = ltc.metrics.counter("UncachedCompile")
local val = evaluate()
print(string.format("training: %d steps in %.1f s, %.1f s of CPU (%s); "
  .. "final training loss %.4f; validation loss %.4f (%.3f bits/char)", opts.steps, t1 - t0,
  cpu1 - cpu0, common.format_ms(step_ms, how), losses[#losses], val, val / math.log(2)))
print(string.format("compiles: %d during training, %d after step 3 (%s)", train_compiles,
  train_compiles - (warm_compiles or train_compiles),
  opts.jit ~= 0 and "ltc.jit: steps from 3 on replay the step captured at step 2"
    or "--jit 0: every step traced and synced"))
if opts.keyvals ~= 0 then
  print(string.format("ltc_step_ms %.3f\nltc_train_loss %.6f\nltc_val_loss %.6f\nltc_compiles_after_warmup %d",
    step_ms or 0 / 0, losses[#losses], val, train_compiles - (warm_compiles or train_compiles)))
end

if opts.sample > 0 then
  model:eval()
  local ctx = { index[string.byte("T")], index[string.byte("h")], index[string.byte("e")] }
  local out = { "The" }
  ltc.no_grad(function()
    for _ = 1, opts.sample do
      local first = math.max(1, #ctx - T + 1)
      local x = ltc.tensor({ table.move(ctx, first, #ctx, 1, {}) }, "int64")
      local logits = model(x):select(2, x:size(2)):reshape({ V })
      local p = (logits / opts.temperature):softmax(1):totable()
      local r, acc, c = math.random(), 0, V
      for k = 1, V do
        acc = acc + p[k]
        if r <= acc then c = k; break end
      end
      ctx[#ctx + 1] = c
      out[#out + 1] = string.char(vocab[c])
    end
  end)
  print(string.format("sample (temperature %.2f):\n%s", opts.temperature, table.concat(out)))
end
