--- bench/opencl.lua - the OpenCL backend against its device's own limits, same run: the
-- chain relu(a*b + c)*0.5 + exp(-a) against the device's copy-kernel bandwidth (16 bytes
-- per element at the copy's GB/s), a GEMM through the backend against raw CLBlast on the
-- same device, MLP 784-256-10 training steps (SGD, batch 128) and the Fashion-MNIST CNN's
-- steps (batch 64, with the host steps they take: none) against the CPU backend.
-- Targets: chain at most 2x the copy floor; GEMM at least 0.9 of raw CLBlast. On PoCL the
-- device is this CPU, so slower than the CPU backend is expected; the MLP row has no target.
-- Nothing here is specific to PoCL: on a GPU it measures the GPU. Skips with one line where
-- the module is not built or no OpenCL device exists.
-- Sizes: BENCH_OPENCL_N (chain elements, default 2^22), BENCH_OPENCL_GEMM (default 512),
-- BENCH_OPENCL_STEPS (MLP steps, default 40), BENCH_OPENCL_CNN_STEPS (CNN steps, default 5).
local lib = require "bench.lib"
local ltc = lib.ltc

local ok, ocl = pcall(require, "ltc.opencl")
local avail, why = false, ok and nil or ocl
if ok then avail, why = ocl.available() end
if not avail then
  print("opencl: skipped (" .. tostring(why):gsub("\n.*", "") .. ")")
  return
end
local info = ocl.open()
print(string.format("device: %s (%s; %s; %d compute units, %.1f GB)", info.name, info.vendor,
  info.platform_name, info.compute_units, info.memory / 2^30))

local N = tonumber(os.getenv("BENCH_OPENCL_N") or "") or 1 << 22
local G = tonumber(os.getenv("BENCH_OPENCL_GEMM") or "") or 512
local STEPS = tonumber(os.getenv("BENCH_OPENCL_STEPS") or "") or 40
local reps = math.min(lib.reps, 5)

-- the chain on the device
ltc.set_backend("opencl")
ltc.manual_seed(0)
local a, b, c = ltc.randn(N), ltc.randn(N), ltc.randn(N)
ltc.sync()
local y
local function chain()
  y = nil
  y = (a * b + c):relu() * 0.5 + (-a):exp()
  ltc.sync()
  ocl.finish() -- a sync does not wait for the device
end
chain()
local t_chain = lib.best(chain, reps) * 1e3
local gbs = ocl._bench_copy(2 * N, reps)
local floor_ms = 16 * N / (gbs * 1e9) * 1e3
print(string.format("chain: %d elements: %.2f ms; copy kernel %.1f GB/s -> floor %.2f ms (%.2fx)",
  N, t_chain, gbs, floor_ms, t_chain / floor_ms))
lib.row { bench = "opencl-chain", workload = "relu(a*b+c)*0.5+exp(-a), f32, " .. N .. " on " .. info.name,
  ltc = lib.fmt(t_chain, "ms"), peers = string.format("copy-kernel floor %s (%.1f GB/s)", lib.fmt(floor_ms, "ms"), gbs),
  ratio = lib.fmt(t_chain / floor_ms, "x") .. " of floor", target = "<= 2.0x floor",
  met = t_chain / floor_ms <= 2.0 }

-- GEMM through the backend against raw CLBlast
local ga, gb = ltc.randn(G, G), ltc.randn(G, G)
ltc.sync()
local gy
local function gemm()
  gy = nil
  gy = ga:matmul(gb)
  ltc.sync()
  ocl.finish()
end
gemm()
local t_gemm = lib.best(gemm, reps) * 1e3
local t_raw = ocl._bench_gemm(G, G, G, reps)
print(string.format("gemm %dx%dx%d: ltc %.2f ms (%.1f GFLOP/s), raw CLBlast %.2f ms: %.2f of raw",
  G, G, G, t_gemm, 2 * G ^ 3 / t_gemm * 1e-6, t_raw, t_raw / t_gemm))
lib.row { bench = "opencl-gemm", workload = string.format("%dx%dx%d f32 on %s", G, G, G, info.name),
  ltc = lib.fmt(t_gemm, "ms"), peers = "raw CLBlast " .. lib.fmt(t_raw, "ms"),
  ratio = lib.fmt(t_raw / t_gemm, "x") .. " of raw CLBlast", target = ">= 0.9 of raw CLBlast",
  met = t_raw / t_gemm >= 0.9 }
a, b, c, y, ga, gb, gy = nil, nil, nil, nil, nil, nil, nil

-- MLP training steps, device against the CPU backend
local function mlp(backend)
  ltc.set_backend(backend)
  ltc.manual_seed(0)
  local nn = ltc.nn
  local data = ltc.randn(1024, 784)
  local labels = (ltc.arange(0, 1024) % 10 + 1):long()
  local model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
  local opt = ltc.optim.SGD(model:parameters(), { lr = 0.1 })
  ltc.sync()
  local function step(i)
    local lo = ((i - 1) % 8) * 128 + 1
    opt:zero_grad()
    local loss = nn.functional.cross_entropy(model(data:narrow(1, lo, 128)), labels:narrow(1, lo, 128))
    loss:backward()
    opt:step()
    ltc.sync()
    return loss
  end
  for i = 1, 3 do step(i) end -- warm-up: compiles
  local t0 = ltc.clock()
  local loss
  for i = 1, STEPS do loss = step(i) end
  if backend == "opencl" then ocl.finish() end
  local ms = (ltc.clock() - t0) / STEPS * 1e3
  return ms, loss:item()
end
local dev_ms, dev_loss = mlp("opencl")
local cpu_ms, cpu_loss = mlp("cpu")
print(string.format("mlp step (784-256-10, batch 128): opencl %.2f ms, cpu %.2f ms (%.2fx); " ..
  "final loss %.4f vs %.4f", dev_ms, cpu_ms, dev_ms / cpu_ms, dev_loss, cpu_loss))
lib.row { bench = "opencl-mlp", workload = "MLP 784-256-10 SGD step, batch 128, on " .. info.name,
  ltc = lib.fmt(dev_ms, "ms"), peers = "cpu backend " .. lib.fmt(cpu_ms, "ms"),
  ratio = lib.fmt(dev_ms / cpu_ms, "x") .. " of the cpu backend's time",
  target = "(none: same CPU under PoCL)", met = math.abs(dev_loss - cpu_loss) < 1e-3 }

-- CNN training steps (the Fashion-MNIST example's network, batch 64), device against the
-- CPU backend, and the eager-fallback steps the device run took (target: none)
local function fallbacks()
  local n = 0
  for _, name in ipairs(ltc.metrics.counter_names()) do
    if name:match("^EagerFallback::") then n = n + ltc.metrics.counter(name) end
  end
  return n
end
local CNN_STEPS = tonumber(os.getenv("BENCH_OPENCL_CNN_STEPS") or "") or 5
local function cnn(backend)
  ltc.set_backend(backend)
  ltc.manual_seed(0)
  local nn = ltc.nn
  local model = nn.Sequential(nn.Conv2d(1, 16, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
    nn.Linear(32 * 7 * 7, 10))
  local opt = ltc.optim.SGD(model:parameters(), { lr = 0.05 })
  local x = ltc.randn(64, 1, 28, 28)
  local labels = {}
  for i = 1, 64 do labels[i] = i % 10 + 1 end
  local y = ltc.tensor(labels, "int64")
  ltc.sync()
  local loss
  local function step()
    opt:zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss:backward()
    opt:step()
    ltc.sync()
  end
  for _ = 1, 2 do step() end -- warm-up: compiles
  local f0, t0 = fallbacks(), ltc.clock()
  for _ = 1, CNN_STEPS do step() end
  if backend == "opencl" then ocl.finish() end
  return (ltc.clock() - t0) / CNN_STEPS * 1e3, loss:item(), (fallbacks() - f0) / CNN_STEPS
end
local cdev_ms, cdev_loss, cdev_fb = cnn("opencl")
local ccpu_ms, ccpu_loss = cnn("cpu")
print(string.format("cnn step (conv-relu-pool x2, linear; batch 64): opencl %.1f ms (%.1f host " ..
  "steps per step), cpu %.1f ms (%.2fx); loss %.4f vs %.4f", cdev_ms, cdev_fb, ccpu_ms,
  cdev_ms / ccpu_ms, cdev_loss, ccpu_loss))
lib.row { bench = "opencl-cnn", workload = "Fashion-MNIST CNN SGD step, batch 64, on " .. info.name,
  ltc = lib.fmt(cdev_ms, "ms"), peers = "cpu backend " .. lib.fmt(ccpu_ms, "ms"),
  ratio = string.format("%s of the cpu backend's time, %.1f host steps", lib.fmt(cdev_ms / ccpu_ms, "x"), cdev_fb),
  target = "0 host (eager-fallback) steps", met = cdev_fb == 0 and math.abs(cdev_loss - ccpu_loss) < 1e-3 }
