--- char-rnn: a 2-layer LSTM language model over characters, trained on Debian's fortunes.
--
--   bin/ltc examples/char_lstm.lua [--steps 300] [--hidden 128] [--embed 64] [--seq 64] [--batch 32]
--                                  [--lr 0.002] [--chars 400000] [--temperature 0.8]
--                                  [--plot char_lstm_loss.svg] [--checkpoint FILE.npz]
--                                  [--resume FILE.npz] [--init-dir DIR] [--seed 0]
--
-- Karpathy's char-rnn (Torch7's best-known program) in ltc: the text of the fortune files in
-- /usr/share/games/fortunes (Debian's `fortunes`) becomes bytes; the vocabulary is the bytes
-- that occur. The training text is cut into `batch` parallel streams, read `seq` characters
-- at a time (truncated backpropagation through time: the LSTM state is carried from one
-- window to the next, detached). Model: Embedding(vocab, 64) - LSTM(64, hidden, 2 layers) -
-- Linear(hidden, vocab); Adam, gradients clipped at norm 5 in the graph. Every window is one
-- lazy graph (forward, backward, clipping, update): after warm-up every step is a compile-
-- cache hit. It prints a progress line, the validation loss (the last tenth of the text) at
-- the end and every `--eval-every` steps, writes a loss-curve picture (SVG), a checkpoint
-- (ltc.save of model and optimizer state, `--resume` continues from one), and samples text
-- with temperature. `--init-dir DIR` writes the initial weights and the data as .npy for the
-- PyTorch twin (bench/char_lstm.py, run by bench/char_lstm.lua); `--keyvals 1` prints the
-- figures as key/value lines for it.
local ltc = require "ltc"
local common = dofile((arg and arg[0] and arg[0]:match("^(.*)/[^/]*$") or "examples") .. "/text_common.lua")
local nn = ltc.nn

local opts = { steps = 300, hidden = 128, seq = 64, batch = 32, lr = 0.002, chars = 400000,
  temperature = 0.8, plot = "char_lstm_loss.svg", checkpoint = "char_lstm.npz", resume = "",
  init_dir = "", seed = 0, eval_every = 100, sample = 300, embed = 64, keyvals = 0,
  data = "/usr/share/games/fortunes" }
common.options("char_lstm", opts,
  "[--steps N] [--hidden N] [--embed N] [--seq N] [--batch N] [--lr X] "
    .. "[--chars N] [--temperature X] [--plot FILE.svg] [--checkpoint FILE.npz] [--resume FILE.npz] "
    .. "[--init-dir DIR] [--eval-every N] [--sample N] [--seed N] [--data DIR] [--keyvals 1]")

---------------------------------------------------------------------------------------------
-- data: the fortune files' text, bytes as 1-based class indices

local codes, vocab, index = common.corpus("char_lstm", opts.data, opts.chars)
local V = #vocab

ltc.manual_seed(opts.seed)
math.randomseed(opts.seed)
local B, T, H = opts.batch, opts.seq, opts.hidden
local n_val = #codes // 10
local n_train = #codes - n_val
-- [B, L] streams of the training text, and [1, n_val] of the validation text
local L = (n_train - 1) // B
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
local train_x, train_y = streams(1, L, B)
local vrows = 8
local VL = (n_val - 1) // vrows
local val_x, val_y = streams(n_train + 1, VL, vrows)
local windows = L // T
print(string.format("data: %d characters (%d training, %d validation), vocabulary %d; "
  .. "%d streams of %d windows of %d", #codes, n_train, n_val, V, B, windows, T))

---------------------------------------------------------------------------------------------
-- model

local CharLSTM = nn.class("CharLSTM")
function CharLSTM:__init(vocab, embed, hidden)
  self.embed = nn.Embedding(vocab, embed)
  self.lstm = nn.LSTM(embed, hidden, { num_layers = 2 })
  self.head = nn.Linear(hidden, vocab)
end
--- model(x [T, B] int64, state) -> logits [T, B, vocab], state {h, c}
function CharLSTM:forward(x, state)
  local out, st = self.lstm(self.embed(x), state)
  return self.head(out), st
end

local model = CharLSTM(V, opts.embed, H)
print(model)
local opt = ltc.optim.Adam(model:parameters(), { lr = opts.lr })

if opts.init_dir ~= "" then
  os.execute("mkdir -p '" .. opts.init_dir .. "'")
  for name, p in pairs(model:state_dict()) do ltc.save(opts.init_dir .. "/" .. name .. ".npy", p) end
  ltc.save(opts.init_dir .. "/train_x.npy", train_x)
  ltc.save(opts.init_dir .. "/train_y.npy", train_y)
  ltc.save(opts.init_dir .. "/val_x.npy", val_x)
  ltc.save(opts.init_dir .. "/val_y.npy", val_y)
  ltc.save(opts.init_dir .. "/meta.npy", ltc.tensor({ T, opts.lr }, "float64"))
end

-- checkpoints: one file (ltc.save of a nested table, as torch.save of a dict) holding the
-- model's and the optimizer's state_dict(), the step and the LSTM state carried into the next
-- window (h, c), so a resumed run goes on as one would have
local function save_checkpoint(path, step, carried)
  ltc.save(path, { model = model:state_dict(), opt = opt:state_dict(), step = step,
    h = carried[1], c = carried[2] })
end

local first_step = 1
local resumed_state
if opts.resume ~= "" then
  local ok, e = pcall(function()
    local t = ltc.load(opts.resume)
    model:load_state_dict(t.model)
    opt:load_state_dict(t.opt)
    return t
  end)
  if not ok then -- a missing file, or one written with other --hidden, --embed or --chars
    io.stderr:write(string.format("char_lstm: --resume %s: %s (a checkpoint of this example, "
      .. "written with the same --hidden, --embed and data?)\n", opts.resume,
      tostring(e):gsub("^[^:]*:%d+: ", "")))
    os.exit(1)
  end
  local t = e
  first_step = t.step + 1
  if t.h and t.c then resumed_state = { t.h, t.c } end
  print(string.format("resumed from %s at step %d", opts.resume, first_step))
end

---------------------------------------------------------------------------------------------
-- training

-- the k-th window of T characters of every stream, [T, B]: an index_select by an int64
-- index tensor (data, so a graph parameter; a narrow's start would be an attribute of the
-- graph and every window would compile anew)
local function window(x, y, k)
  local s = ((k - 1) % (x:size(2) // T)) * T
  local idx = {}
  for j = 1, T do idx[j] = s + j end
  idx = ltc.tensor(idx, "int64")
  return x:index_select(2, idx):t(), y:index_select(2, idx):t()
end

local function detach(st) return { st[1]:detach(), st[2]:detach() } end

local function evaluate()
  model:eval()
  local total, count = 0, 0
  ltc.no_grad(function()
    local st
    for k = 1, VL // T do
      local x, y = window(val_x, val_y, k)
      local logits
      logits, st = model(x:contiguous(), st)
      local loss = nn.functional.cross_entropy(logits:reshape({ -1, V }), y:reshape({ -1 }))
      total = total + loss:item()
      count = count + 1
    end
  end)
  model:train()
  return total / count
end

local state = resumed_state or { ltc.zeros(2, B, H), ltc.zeros(2, B, H) }
local losses = {}
ltc.sync()
ltc.metrics.reset()
local clock = ltc.clock or os.clock
local t0, cpu0 = clock(), os.clock()
local t_warm, warm_compiles
local warmup = first_step + 2
local last_line = t0
for step = first_step, first_step + opts.steps - 1 do
  local x, y = window(train_x, train_y, step)
  opt:zero_grad()
  local logits
  logits, state = model(x:contiguous(), state)
  local loss = nn.functional.cross_entropy(logits:reshape({ -1, V }), y:reshape({ -1 }))
  loss:backward()
  nn.utils.clip_grad_norm_(model:parameters(), 5)
  opt:step()
  state = detach(state)
  -- (no collectgarbage(): the sync runs a young collection of Lua's generational GC, which
  -- finds this step's unreachable tensors so that they do not become outputs of its graph)
  ltc.sync()
  losses[#losses + 1] = loss:item()
  if step == warmup then t_warm, warm_compiles = clock(), ltc.metrics.counter("UncachedCompile") end
  local now = clock()
  if now - last_line > 2 or step == first_step + opts.steps - 1 then
    last_line = now
    local done = step - first_step + 1
    io.write(string.format("\rstep %4d/%d  loss %.4f  %.1f ms/step   ", step,
      first_step + opts.steps - 1, losses[#losses], (now - t0) / done * 1000))
    io.flush()
  end
  if opts.eval_every > 0 and step % opts.eval_every == 0 and step < first_step + opts.steps - 1 then
    print(string.format("\nstep %d: validation loss %.4f", step, evaluate()))
  end
end
local t1, cpu1 = clock(), os.clock()
print()
local step_ms, how = common.step_ms(t0, t1, t_warm, opts.steps, first_step + opts.steps - 1 - warmup)
local train_compiles = ltc.metrics.counter("UncachedCompile")
local val = evaluate()
print(string.format("training: %d steps in %.1f s, %.1f s of CPU (%s); "
  .. "final training loss %.4f; validation loss %.4f (%.3f bits/char)", opts.steps, t1 - t0,
  cpu1 - cpu0, common.format_ms(step_ms, how), losses[#losses], val, val / math.log(2)))
print(string.format("compiles: %d during training, %d after step %d", train_compiles,
  train_compiles - (warm_compiles or train_compiles), warmup))

if opts.keyvals ~= 0 then -- for bench/char_lstm.lua
  print(string.format("ltc_step_ms %.3f\nltc_train_loss %.6f\nltc_val_loss %.6f\nltc_compiles_after_warmup %d",
    step_ms or 0 / 0, losses[#losses], val, train_compiles - (warm_compiles or train_compiles)))
end

save_checkpoint(opts.checkpoint, first_step + opts.steps - 1, state)
print("checkpoint written to " .. opts.checkpoint .. " (continue with --resume " .. opts.checkpoint .. ")")

---------------------------------------------------------------------------------------------
-- the loss curve (SVG) and a sample

local function write_svg(path, ys)
  local w, h, m = 720, 360, 40
  local ymax = 0
  for _, v in ipairs(ys) do if v > ymax then ymax = v end end
  local function pts(vals)
    local p = {}
    for i, v in ipairs(vals) do
      p[#p + 1] = string.format("%.1f,%.1f", m + (w - 2 * m) * (i - 1) / math.max(#vals - 1, 1),
        h - m - (h - 2 * m) * v / ymax)
    end
    return table.concat(p, " ")
  end
  local f = assert(io.open(path, "w"))
  f:write(string.format('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
    .. 'font-family="sans-serif" font-size="12">\n<rect width="%d" height="%d" fill="white"/>\n', w, h, w, h))
  f:write(string.format('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>\n', m, h - m, w - m, h - m))
  f:write(string.format('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>\n', m, m, m, h - m))
  f:write(string.format('<polyline fill="none" stroke="#08519c" stroke-width="1.5" points="%s"/>\n', pts(ys)))
  f:write(string.format('<text x="4" y="%d">%.2f</text><text x="24" y="%d">0</text>\n', m + 4, ymax, h - m + 4))
  f:write(string.format('<text x="%d" y="%d">step %d</text>\n', w - m - 60, h - m + 20, first_step + #ys - 1))
  f:write(string.format('<text x="%d" y="20">char-rnn on fortunes: training loss per step '
    .. '(nats/char); validation loss %.3f</text>\n</svg>\n', m, val))
  f:close()
end
write_svg(opts.plot, losses)
print("loss curve written to " .. opts.plot)

local function sample(n, temperature, prime)
  model:eval()
  local out = { prime }
  ltc.no_grad(function()
    local st
    local x
    for i = 1, #prime do
      x = ltc.tensor({ { index[prime:byte(i)] } }, "int64")
      local _
      _, st = model(x, st)
    end
    local c = index[prime:byte(#prime)]
    for _ = 1, n do
      local logits
      logits, st = model(ltc.tensor({ { c } }, "int64"), st)
      local p = (logits:reshape({ V }) / temperature):softmax(1):totable()
      local r, acc = math.random(), 0
      c = V
      for k = 1, V do
        acc = acc + p[k]
        if r <= acc then c = k; break end
      end
      out[#out + 1] = string.char(vocab[c])
    end
  end)
  return table.concat(out)
end
if opts.sample > 0 then
  print(string.format("sample (temperature %.2f):\n%s", opts.temperature,
    sample(opts.sample, opts.temperature, "The ")))
end
