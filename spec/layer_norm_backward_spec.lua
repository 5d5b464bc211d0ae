-- layer_norm_backward, the fused op of layer_norm's gradients (src/cpu/norm.c, src/ref/nn.c,
-- src/opencl/kernels_more.c), and layer_norm's autograd through it, against PyTorch 1.13
-- fixtures (spec/fixtures/layer_norm_backward.lua from tools/gen_layer_norm_fixtures.py),
-- finite differences in float64, the reference backend, and the formula over the
-- elementwise ops that create_graph still takes (second derivatives).
local ltc = require "ltc"
local close = dofile("spec/support/close.lua")
local err = dofile("spec/support/err.lua")
local fx = dofile("spec/fixtures/layer_norm_backward.lua")

local function T(v, dtype) return ltc.tensor(v, dtype or "float64") end

local names = {}
for name in pairs(fx) do names[#names + 1] = name end
table.sort(names)

-- out, dx, dw, db of sum(layer_norm(x) * gout) through autograd, as tables
local function through_autograd(c, dtype)
  local x = T(c.x, dtype):requires_grad_()
  local w, b = T(c.w, dtype):requires_grad_(), T(c.b, dtype):requires_grad_()
  local out = ltc.nn.functional.layer_norm(x, c.ns, w, b, c.eps)
  ;(out * T(c.gout, dtype)):sum():backward()
  return out:totable(), x.grad:totable(), w.grad:totable(), b.grad:totable()
end

describe("layer_norm_backward", function()
  after_each(function() ltc.set_backend("cpu") end)

  for _, name in ipairs(names) do
    it("gives PyTorch's gradients of input, weight and bias: " .. name, function()
      local c = fx[name]
      local dx, dw, db = ltc.layer_norm_backward(T(c.gout), T(c.x), c.ns, T(c.w), c.eps)
      close(c.dx, dx:totable(), 1e-10, "dx")
      close(c.dw, dw:totable(), 1e-10, "dw")
      close(c.db, db:totable(), 1e-10, "db")
      assert.are.same(ltc.tensor(c.x):size(), dx:size())
      assert.are.same(c.ns, dw:size())
      assert.are.same(c.ns, db:size())
    end)
  end

  it("is what layer_norm's autograd gives, in float64 and float32", function()
    for _, name in ipairs(names) do
      local c = fx[name]
      local out, dx, dw, db = through_autograd(c, "float64")
      close(c.out, out, 1e-10, name .. " out")
      close(c.dx, dx, 1e-10, name .. " dx")
      close(c.dw, dw, 1e-10, name .. " dw")
      close(c.db, db, 1e-10, name .. " db")
      out, dx, dw, db = through_autograd(c, "float32")
      close(c.dx, dx, 1e-4, name .. " dx float32")
      close(c.dw, dw, 1e-4, name .. " dw float32")
      close(c.db, db, 1e-4, name .. " db float32")
    end
  end)

  it("matches finite differences in float64", function()
    ltc.manual_seed(3)
    local x0, w0, b0 = ltc.randn({ 3, 5 }, "float64"), ltc.randn({ 5 }, "float64") + 1, ltc.randn({ 5 }, "float64")
    local gout = ltc.randn({ 3, 5 }, "float64")
    local function loss(x, w, b) return (ltc.layer_norm(x, 5, w, b, 1e-3) * gout):sum() end
    local x, w, b = x0:clone():requires_grad_(), w0:clone():requires_grad_(), b0:clone():requires_grad_()
    loss(x, w, b):backward()
    local h = 1e-6
    for _, case in ipairs { { x, x0, { 3, 5 } }, { w, w0, { 5 } }, { b, b0, { 5 } } } do
      local t, base, size = case[1], case[2], case[3]
      local g, flat = t.grad:reshape({ -1 }):totable(), base:reshape({ -1 }):totable()
      for j = 1, #flat do
        local function at(d)
          local f = { table.unpack(flat) }
          f[j] = f[j] + d
          local moved = ltc.tensor(f, "float64"):reshape(size)
          local args = { x0, w0, b0 }
          args[t == x and 1 or t == w and 2 or 3] = moved
          return loss(table.unpack(args)):item()
        end
        local fd = (at(h) - at(-h)) / (2 * h)
        assert(math.abs(fd - g[j]) < 1e-6, string.format("element %d: %g against %g", j, g[j], fd))
      end
    end
  end)

  it("crosses the CPU kernel's blocks of rows as the reference backend computes", function()
    -- 4096 / 13 = 315 rows per block of partial weight and bias sums: 700 rows take three
    ltc.manual_seed(4)
    local g, x, w = ltc.randn(700, 13) * 2, ltc.randn(700, 13) * 3 + 5, ltc.randn(13)
    local cpu = { ltc.layer_norm_backward(g, x, { 13 }, w, 1e-5) }
    local gt, xt, wt = g:totable(), x:totable(), w:totable()
    ltc.set_backend("ref")
    local ref = { ltc.layer_norm_backward(ltc.tensor(gt), ltc.tensor(xt), { 13 }, ltc.tensor(wt), 1e-5) }
    for i = 1, 3 do close(ref[i]:totable(), cpu[i]:totable(), 2e-4, "output " .. i) end
  end)

  it("keeps second derivatives: under create_graph it is the formula over the elementwise ops", function()
    ltc.manual_seed(5)
    local x0, w0 = ltc.randn({ 2, 4 }, "float64"), ltc.randn({ 4 }, "float64") + 1
    local b0, gout = ltc.randn({ 4 }, "float64"), ltc.randn({ 2, 4 }, "float64")
    -- s(w) = sum(dL/dx ^ 2) with L = sum(layer_norm(x, w, b) * gout); ds/dw by autograd and
    -- by central differences
    local function s(w, create)
      local x = x0:clone():requires_grad_()
      local L = (ltc.layer_norm(x, 4, w, b0) * gout):sum()
      local gx = ltc.autograd.grad(L, x, { create_graph = create })
      return (gx * gx):sum()
    end
    local w = w0:clone():requires_grad_()
    s(w, true):backward()
    local g, flat = w.grad:totable(), w0:totable()
    for j = 1, 4 do
      local function at(d)
        local f = { table.unpack(flat) }
        f[j] = f[j] + d
        return s(ltc.tensor(f, "float64"), false):item()
      end
      local fd = (at(1e-6) - at(-1e-6)) / 2e-6
      assert(math.abs(fd - g[j]) < 1e-5, string.format("weight %d: %g against %g", j, g[j], fd))
    end
  end)

  it("raises clear errors for bad sizes and dtypes", function()
    local x, w = ltc.randn(2, 3), ltc.randn(3)
    local msg = err(function() ltc.layer_norm_backward(ltc.randn(2, 4), x, { 3 }, w) end)
    assert.truthy(msg:find("layer_norm_backward", 1, true), msg)
    assert.truthy(msg:find("grad_output float32 [2,4] must be self's size and dtype, float32 [2,3]", 1, true), msg)
    msg = err(function() ltc.layer_norm_backward(x, x, { 3 }, ltc.randn(4)) end)
    assert.truthy(msg:find("weight must be float32 of size normalized_shape", 1, true), msg)
    msg = err(function() ltc.layer_norm_backward(x, x, { 2 }, w) end)
    assert.truthy(msg:find("normalized_shape [2] must be the last dims of self [2,3]", 1, true), msg)
    msg = err(function() ltc.layer_norm_backward(x:long(), x:long(), { 3 }, w:long()) end)
    assert.truthy(msg:find("layer_norm_backward", 1, true), msg)
    assert.truthy(msg:find("floating", 1, true) or msg:find("float", 1, true), msg)
    msg = err(function() ltc.layer_norm_backward(x, x, { 3 }, w, -1) end)
    assert.truthy(msg:find("eps must be >= 0", 1, true), msg)
  end)

  -- rows go to the threads in chunks of 16K elements (norm.c): [1024, 128] in 8, odd sizes
  -- with a short last chunk and block; the bits do not depend on the thread count (the
  -- weight and bias sums add fixed blocks of rows in block order) and agree with the
  -- reference backend
  it("gives the same bits on one and two threads, and the reference's values", function()
    local saved = ltc.config.LTC_NUM_THREADS
    for _, size in ipairs { { 16, 64, 128 }, { 1031, 129 }, { 3, 700, 33 } } do
      local n = size[#size]
      ltc.manual_seed(5)
      local x, g = ltc.randn(size), ltc.randn(size)
      local w, b = ltc.randn(n), ltc.randn(n)
      local xt, gt, wt, bt = x:totable(), g:totable(), w:totable(), b:totable()
      local function run(backend, threads)
        ltc.set_backend(backend)
        ltc.config.LTC_NUM_THREADS = threads
        local X, G = ltc.tensor(xt, "float32"), ltc.tensor(gt, "float32")
        local W, B = ltc.tensor(wt, "float32"), ltc.tensor(bt, "float32")
        local out = ltc.nn.functional.layer_norm(X, { n }, W, B, 1e-5)
        local dx, dw, db = ltc.layer_norm_backward(G, X, { n }, W, 1e-5)
        return { out:totable(), dx:totable(), dw:totable(), db:totable() }
      end
      local ok, res = pcall(function()
        return { run("cpu", 1), run("cpu", 2), run("ref", 0) }
      end)
      ltc.config.LTC_NUM_THREADS = saved
      assert(ok, res)
      local what = table.concat(size, "x")
      for i = 1, 4 do
        assert.are.same(res[1][i], res[2][i], what .. " result " .. i .. " on two threads")
        close(res[3][i], res[1][i], 1e-4, what .. " result " .. i .. " against the reference")
      end
    end
  end)
end)
