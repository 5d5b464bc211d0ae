--- bench/nn.lua - softmax, layer_norm and conv2d at typical shapes, against PyTorch eager
-- (and NumPy for softmax). Target: at least as fast as PyTorch eager. Ops that ltc does
-- not have yet are reported as such.
local lib = require "bench.lib"
local ltc = lib.ltc

local function bench(name, workload, make, run_py)
  local ok, fn = pcall(make)
  if not ok or not fn then
    print(string.format("%s: not available in ltc%s", name, ok and "" or (": " .. tostring(fn))))
    lib.row { bench = name, workload = workload, ltc = "not available", peers = "", ratio = "",
      target = "<= PyTorch eager" }
    return
  end
  local t = lib.best(fn) * 1e3
  local py = run_py()
  local r = type(py.torch_ms) == "number" and py.torch_ms / t or nil
  print(string.format("%s %s: ltc %s; PyTorch eager %s; NumPy %s", name, workload,
    lib.fmt(t, "ms", 3), lib.peer(py, "torch_ms", "ms", 3), lib.peer(py, "numpy_ms", "ms", 3)))
  lib.row { bench = name, workload = workload, ltc = lib.fmt(t, "ms", 3),
    peers = string.format("PyTorch eager %s%s", lib.peer(py, "torch_ms", "ms", 3),
      py.numpy_ms and ("; NumPy " .. lib.peer(py, "numpy_ms", "ms", 3)) or ""),
    ratio = string.format("%s speed of PyTorch", lib.fmt(r, "x")),
    target = ">= 1x PyTorch eager", met = r ~= nil and r >= 1 }
end

local R, C = 8192, 1024
bench("softmax", string.format("f32 %dx%d, last dim", R, C), function()
  local x = ltc.randn(R, C)
  ltc.sync()
  local y
  return function() y = nil; y = x:softmax(-1); ltc.sync() end
end, function() return lib.py("softmax", R, C) end)

bench("layernorm", string.format("f32 %dx%d, last dim, affine", R, C), function()
  local ln = lib.find("layer_norm", "nn.functional.layer_norm")
  if not ln then return nil end
  local x, w, b = ltc.randn(R, C), ltc.randn(C), ltc.randn(C)
  ltc.sync()
  local y
  return function() y = nil; y = ln(x, { C }, w, b); ltc.sync() end
end, function() return lib.py("layernorm", R, C) end)

local N, CI, H, W, K = 8, 64, 56, 56, 64
bench("conv2d", string.format("f32 %dx%dx%dx%d, %d filters 3x3, pad 1", N, CI, H, W, K), function()
  local conv = lib.find("conv2d", "nn.functional.conv2d")
  if not conv then return nil end
  local x, f, b = ltc.randn(N, CI, H, W), ltc.randn(K, CI, 3, 3), ltc.randn(K)
  ltc.sync()
  local y
  return function() y = nil; y = conv(x, f, b, 1, 1); ltc.sync() end
end, function() return lib.py("conv2d", N, CI, H, W, K) end)
