--- Fashion-MNIST: train a classifier on 60000 28x28 clothing images and test it on 10000.
--
--   bin/ltc examples/fashion_mnist.lua [--epochs 1] [--model mlp|cnn] [--batch-size 128]
--                                      [--lr 0.1] [--data DIR] [--plot FILE.svg] [--seed 0]
--                                      [--jit] [--distributed] [--device cpu|opencl]
--
-- The default is an MLP 784-256-10 trained with SGD (lr 0.1, batch 128) for one epoch;
-- expect a test accuracy above 0.80. `--model cnn` trains Conv2d(1, 16, 3, pad 1)-ReLU-
-- MaxPool2d(2)-Conv2d(16, 32, 3, pad 1)-ReLU-MaxPool2d(2)-Flatten-Linear(32*7*7, 10) the same
-- way (about 0.84 after one epoch; slower per step). Each training step (forward, backward through the
-- autograd graph, SGD update) is one lazy graph: after the first steps every step is a
-- compile-cache hit, which the compile counters printed at the end show. The data come from
-- Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist), read from the IDX
-- files in C; a batch is an index_select of the whole data tensor by an int64 index tensor,
-- so batches never recompile. Full batches only (drop_last): 468 steps an epoch.
--
-- `--jit` wraps the training step in ltc.jit: step 1 runs it traced (warm-up, which makes
-- the optimizer's state), step 2 captures it, every later step replays the captured graph
-- with the batch copied into its static inputs (no tracing, hashing or cache look-up for
-- the step; the batch's gather is still a small traced graph). Same seed, same numbers:
-- the test accuracy equals the traced run's (MLP and CNN). The learning rate is a constant
-- of the capture (change it through an argument of the jitted function, not opt.lr).
--
-- `--distributed` trains data-parallel across the processes of an Open MPI job (ltc.distributed):
--   mpirun --oversubscribe -np 2 bin/ltc examples/fashion_mnist.lua --distributed
-- The global batch (--batch-size) is split over the ranks (each takes batch_size / ranks rows of
-- its DistributedSampler shard), rank 0's initial parameters are broadcast, and the gradients
-- are averaged by an all_reduce inside each step's graph (DistributedDataParallel); the loss
-- printed is the global batch's mean. Rank 0 alone prints. Same seed and global batch, same
-- model: the accuracy equals the single-process run's within rounding.
local ltc = require "ltc"
local nn = ltc.nn

local opts = { epochs = 1, model = "mlp", batch_size = 128, lr = 0.1, seed = 0,
               data = ltc.data.FASHION_MNIST_DIR, plot = "fashion_mnist_loss.svg", jit = false,
               distributed = false, device = "cpu" }
do
  local i, a = 1, arg or {}
  while a[i] do
    local k, v = a[i], a[i + 1]
    local key = k:match("^%-%-([%w%-]+)$")
    key = key and key:gsub("%-", "_")
    local flag = key and type(opts[key]) == "boolean"
    if not key or (v == nil and not flag) then
      io.stderr:write("usage: fashion_mnist.lua [--epochs N] [--model mlp|cnn] [--batch-size N] "
        .. "[--lr X] [--data DIR] [--plot FILE.svg] [--seed N] [--jit] [--distributed] [--device cpu|opencl]\n")
      os.exit(2)
    end
    if opts[key] == nil then io.stderr:write("unknown option --" .. key .. "\n"); os.exit(2) end
    if flag then
      opts[key] = true
      i = i + 1
    else
      opts[key] = type(opts[key]) == "number" and (math.tointeger(tonumber(v)) or tonumber(v)) or v
      i = i + 2
    end
  end
end

local files, missing = ltc.data.mnist_files(opts.data)
if not files then
  io.stderr:write(string.format("fashion_mnist: no data set in %s (%s).\nInstall Debian's "
    .. "dataset-fashion-mnist (sudo apt-get install dataset-fashion-mnist, or make deps), or pass "
    .. "--data DIR with the four IDX files.\n", opts.data, missing))
  os.exit(3)
end

-- --device opencl: the OpenCL backend (require "ltc.opencl"); data and parameters live on
-- the device, every sync runs there. Without the module or any OpenCL device, say so.
if opts.device == "opencl" then
  local ok, ocl = pcall(require, "ltc.opencl")
  local avail, why = false, ok and nil or tostring(ocl)
  if ok then avail, why = ocl.available() end
  if not avail then
    io.stderr:write("fashion_mnist: --device opencl: no OpenCL device on this machine (" ..
      tostring(why) .. ")\n")
    os.exit(3)
  end
  local info = ocl.use()
  print(string.format("device: opencl:0 = %s (%s, %s, %d compute units)", info.name, info.vendor,
    info.platform_name, info.compute_units))
elseif opts.device ~= "cpu" then
  io.stderr:write("fashion_mnist: --device must be cpu or opencl\n")
  os.exit(2)
end

local clock = ltc.clock or os.clock
-- --distributed: one rank of an Open MPI job; only rank 0 prints
local dist, rank, world = nil, 0, 1
if opts.distributed then
  dist = require "ltc.distributed"
  rank, world = dist.init()
  if opts.batch_size % world ~= 0 then
    io.stderr:write(string.format("fashion_mnist: --batch-size %d is not divisible by the %d ranks\n",
      opts.batch_size, world))
    os.exit(2)
  end
end
local print = rank == 0 and print or function() end
ltc.manual_seed(opts.seed)

local t0 = clock()
local d = ltc.data.fashion_mnist(opts.data)
print(string.format("data: %d training and %d test images from %s (%.2f s)", d.train_x:size(1),
  d.test_x:size(1), opts.data, clock() - t0))

local model
if opts.model == "mlp" then
  model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
elseif opts.model == "cnn" then
  if not (ltc.conv2d and ltc.max_pool2d) then
    io.stderr:write("fashion_mnist: --model cnn needs the conv2d and max_pool2d ops, which this "
      .. "build does not have\n")
    os.exit(2)
  end
  model = nn.Sequential(
    nn.Conv2d(1, 16, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(32 * 7 * 7, 10))
else
  io.stderr:write("fashion_mnist: --model must be mlp or cnn\n")
  os.exit(2)
end
local function forward(x)
  if opts.model == "cnn" then x = x:reshape({ x:size(1), 1, 28, 28 }) end
  return model(x)
end
print(model)
if opts.distributed then
  nn.parallel.DistributedDataParallel(model) -- rank 0's parameters; gradients averaged after backward
  print(string.format("distributed: %d ranks, %d rows of the global batch of %d each", world,
    opts.batch_size // world, opts.batch_size))
end

local loss_fn = nn.CrossEntropyLoss()
local opt = ltc.optim.SGD(model:parameters(), { lr = opts.lr })
local loader = ltc.data.DataLoader({ d.train_x, d.train_y },
  { batch_size = opts.batch_size // world, shuffle = true, seed = opts.seed, drop_last = true,
    distributed = opts.distributed })
ltc.sync() -- the initial parameters

-- One training step: forward, loss, backward through the autograd graph, SGD update. It
-- returns the loss; traced, the caller syncs. With --jit the jitted function takes the
-- batch tensors as arguments (copied into the capture's static inputs).
local function train_step(x, y)
  opt:zero_grad()
  local loss = loss_fn(forward(x), y)
  loss:backward()
  opt:step()
  if opts.distributed then return ltc.all_reduce(loss:detach(), 1) end -- the global batch's mean
  return loss
end
local step_fn = opts.jit and ltc.jit(train_step) or train_step

ltc.metrics.reset()
if dist then dist.reset_stats() end
local losses, compiles_after_warmup = {}, nil
local warmup = opts.jit and 2 or 3 -- jit: the warm-up and the capture
local steps_per_epoch = #loader
local train_t0 = clock()
local seen, last_t, last_seen = 0, train_t0, 0
for epoch = 1, opts.epochs do
  model:train()
  local epoch_t0 = clock()
  for step, x, y in loader:batches() do
    local loss = step_fn(x, y)
    if not opts.jit then ltc.sync() end -- one graph per step: forward, backward and the update
    local l = loss:item()
    losses[#losses + 1] = l
    seen = seen + x:size(1) * world
    local global = (epoch - 1) * steps_per_epoch + step
    if global == warmup then compiles_after_warmup = ltc.metrics.counter("UncachedCompile") end
    if step % 50 == 0 or step == steps_per_epoch then
      local now = clock()
      local line = string.format("epoch %d step %4d/%d  loss %.4f  %8.0f samples/s", epoch, step,
        steps_per_epoch, l, (seen - last_seen) / math.max(now - last_t, 1e-9))
      last_t, last_seen = now, seen
      print(line)
    end
  end
  print(string.format("epoch %d: %.2f s%s", epoch, clock() - epoch_t0, opts.jit and epoch == 1
    and " (steps 1-2: warm-up and capture, then replays)" or ""))
end
local train_time = clock() - train_t0
local comm = dist and dist.stats()
local uncached = ltc.metrics.counter("UncachedCompile")
local cached = ltc.metrics.counter("CachedCompile")

-- test accuracy: the whole test set as one graph, no autograd recording
model:eval()
local accuracy = ltc.no_grad(function()
  local pred = forward(d.test_x):argmax(2)
  return pred:eq(d.test_y):float():mean():item()
end)

print(string.format("training: %d epoch(s), %d steps, %.2f s (%.2f s/epoch, %.0f samples/s)",
  opts.epochs, #losses, train_time, train_time / opts.epochs, seen / train_time))
print(string.format("test accuracy %.4f (%d test images)", accuracy, d.test_x:size(1)))
if comm then
  print(string.format("communication (rank 0): %.2f s of the %.2f s of training (%.1f%%), of "
    .. "which %.2f s waiting for the other ranks in the descriptor checks; %d calls, %.1f MB",
    comm.seconds, train_time, 100 * comm.seconds / train_time, comm.wait_seconds or 0, comm.calls,
    comm.bytes / 1e6))
end
print(string.format("compiles: UncachedCompile %d, CachedCompile %d during training; %d new "
  .. "compile(s) after step %d", uncached, cached, uncached - (compiles_after_warmup or uncached),
  warmup))
if opts.jit then
  print(string.format("jit: %d capture(s), %d replays, %d recapture(s); the training step ran "
    .. "as Lua %d time(s)%s", ltc.metrics.counter("JitCapture"), ltc.metrics.counter("JitReplay"),
    ltc.metrics.counter("JitRecapture"), step_fn.graph and 2 or step_fn.calls,
    cached > 0 and " (CachedCompile: the batches' gathers)" or ""))
end

-- the loss curve as an SVG picture: per-step loss (light) and a 20-step moving average
local function write_svg(path, ys)
  local w, h, m = 720, 360, 40
  local ymax = 0
  for _, v in ipairs(ys) do if v > ymax then ymax = v end end
  ymax = ymax > 0 and ymax or 1
  local function pts(vals)
    local p = {}
    for i, v in ipairs(vals) do
      local x = m + (w - 2 * m) * (i - 1) / math.max(#vals - 1, 1)
      local y = h - m - (h - 2 * m) * v / ymax
      p[#p + 1] = string.format("%.1f,%.1f", x, y)
    end
    return table.concat(p, " ")
  end
  local avg, acc = {}, 0
  for i, v in ipairs(ys) do
    acc = acc + v
    if i > 20 then acc = acc - ys[i - 20] end
    avg[i] = acc / math.min(i, 20)
  end
  local f = assert(io.open(path, "w"))
  f:write(string.format('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
    .. 'font-family="sans-serif" font-size="12">\n', w, h))
  f:write(string.format('<rect width="%d" height="%d" fill="white"/>\n', w, h))
  f:write(string.format('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>\n', m, h - m, w - m, h - m))
  f:write(string.format('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>\n', m, m, m, h - m))
  f:write(string.format('<polyline fill="none" stroke="#9ecae1" stroke-width="1" points="%s"/>\n', pts(ys)))
  f:write(string.format('<polyline fill="none" stroke="#08519c" stroke-width="2" points="%s"/>\n', pts(avg)))
  f:write(string.format('<text x="%d" y="%d">%.2f</text>\n', 4, m + 4, ymax))
  f:write(string.format('<text x="%d" y="%d">0</text>\n', 24, h - m + 4))
  f:write(string.format('<text x="%d" y="%d">step %d</text>\n', w - m - 50, h - m + 20, #ys))
  f:write(string.format('<text x="%d" y="%d">Fashion-MNIST %s: training loss per step '
    .. '(dark: 20-step mean); test accuracy %.4f</text>\n', m, 20, opts.model, accuracy))
  f:write("</svg>\n")
  f:close()
end
if rank == 0 then
  write_svg(opts.plot, losses)
  print("loss curve written to " .. opts.plot)
end

if opts.model == "mlp" and opts.epochs >= 1 and accuracy < 0.80 then
  io.stderr:write("test accuracy below 0.80\n")
  os.exit(1)
end
