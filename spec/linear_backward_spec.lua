-- linear_backward, the one op of linear's three gradients (src/cpu/linear.c: both gemms as
-- halves shared among the worker threads; src/ref/loss.c; src/opencl/lower_more.c), and
-- linear's autograd through it, against PyTorch 1.13 fixtures
-- (spec/fixtures/linear_backward.lua from tools/gen_linear_backward_fixtures.py), the
-- reference backend at sizes that split, finite differences, and second derivatives (under
-- create_graph the derivative stays matmul and sum).
local ltc = require "ltc"
local close = dofile("spec/support/close.lua")
local err = dofile("spec/support/err.lua")
local fx = dofile("spec/fixtures/linear_backward.lua")

local function T(v, dtype) return ltc.tensor(v, dtype or "float64") end

local names = {}
for name in pairs(fx) do names[#names + 1] = name end
table.sort(names)

describe("linear_backward", function()
  after_each(function() ltc.set_backend("cpu") end)

  for _, name in ipairs(names) do
    it("gives PyTorch's gradients of input, weight and bias: " .. name, function()
      local c = fx[name]
      local dx, dw, db = ltc.linear_backward(T(c.gout), T(c.x), T(c.w))
      close(c.dx, dx:totable(), 1e-12, "dx")
      close(c.dw, dw:totable(), 1e-12, "dw")
      close(c.db, db:totable(), 1e-12, "db")
      -- and through linear's autograd, float64 and float32, with and without the bias
      for _, dtype in ipairs { "float64", "float32" } do
        local x, w, b = T(c.x, dtype):requires_grad_(), T(c.w, dtype):requires_grad_(), T(c.b, dtype):requires_grad_()
        ;(ltc.nn.functional.linear(x, w, b) * T(c.gout, dtype)):sum():backward()
        local tol = dtype == "float64" and 1e-12 or 1e-5
        close(c.dx, x.grad:totable(), tol, name .. " dx " .. dtype)
        close(c.dw, w.grad:totable(), tol, name .. " dw " .. dtype)
        close(c.db, b.grad:totable(), tol, name .. " db " .. dtype)
        x, w = T(c.x, dtype):requires_grad_(), T(c.w, dtype):requires_grad_()
        ;(ltc.nn.functional.linear(x, w) * T(c.gout, dtype)):sum():backward()
        close(c.dx, x.grad:totable(), tol, name .. " dx nobias " .. dtype)
        close(c.dw, w.grad:totable(), tol, name .. " dw nobias " .. dtype)
      end
    end)
  end

  it("shares its gemms among the threads as the reference backend computes them", function()
    -- 256 x 128 x 130 multiply-adds (over LTC_GEMM_SMALL): four halves on two threads; odd
    -- sizes split unevenly
    ltc.manual_seed(6)
    local g, x, w = ltc.randn(2, 129, 130), ltc.randn(2, 129, 127), ltc.randn(130, 127)
    local saved = ltc.config.LTC_NUM_THREADS
    local runs = {}
    for i, threads in ipairs { 1, 2 } do
      ltc.config.LTC_NUM_THREADS = threads
      runs[i] = { ltc.linear_backward(g, x, w) }
      for k = 1, 3 do runs[i][k] = runs[i][k]:totable() end
    end
    ltc.config.LTC_NUM_THREADS = saved
    local gt, xt, wt = g:totable(), x:totable(), w:totable()
    ltc.set_backend("ref")
    local ref = { ltc.linear_backward(T(gt, "float32"), T(xt, "float32"), T(wt, "float32")) }
    for k = 1, 3 do
      close(ref[k]:totable(), runs[1][k], 1e-3, "one thread, output " .. k)
      close(ref[k]:totable(), runs[2][k], 1e-3, "two threads, output " .. k)
    end
  end)

  -- f() on one thread, then on two with the row blocks on the threads (LTC_GEMM_SPLIT 1),
  -- then on two without (0: OpenBLAS's own threads), then twice timed (2: the first call of
  -- a size splits, the second runs as one call on one OpenBLAS thread). OpenBLAS sums each
  -- element along k in one order on some CPUs whatever the blocks, but not on all: its
  -- Haswell kernels (chosen on AMD EPYC too) round a [256, 128] x [128, 64] product's rows
  -- differently as two blocks of 128 than as one call, as they do on 2 threads against 1.
  -- So the ways agree within float32 rounding of sums of 127-258 products of about 1 (1e-4
  -- of values up to 25), not always in bits
  -- (LTC_DETERMINISTIC keeps one thread and one call for bits that never change).
  local function on_threads(f)
    local saved, split = ltc.config.LTC_NUM_THREADS, ltc.config.LTC_GEMM_SPLIT
    local runs = {}
    for i, c in ipairs { { 1, 2 }, { 2, 1 }, { 2, 0 }, { 2, 2 }, { 2, 2 } } do
      ltc.config.LTC_NUM_THREADS, ltc.config.LTC_GEMM_SPLIT = c[1], c[2]
      local ok, res = pcall(f)
      if not ok then
        ltc.config.LTC_NUM_THREADS, ltc.config.LTC_GEMM_SPLIT = saved, split
        error(res, 0)
      end
      runs[i] = res
    end
    ltc.config.LTC_NUM_THREADS, ltc.config.LTC_GEMM_SPLIT = saved, split
    for i = 2, 5 do close(runs[1], runs[i], 1e-4, "way " .. i .. " against one thread") end
    return runs
  end

  it("shares linear's rows among the threads as the reference backend computes them", function()
    -- 263 x 129 x 127 multiply-adds (over LTC_GEMM_SPLIT): four uneven row blocks
    ltc.manual_seed(7)
    local x, w, b = ltc.randn(263, 127), ltc.randn(129, 127), ltc.randn(129)
    local runs = on_threads(function() return ltc.linear(x, w, b):totable() end)
    ltc.set_backend("ref")
    local ref = ltc.linear(T(x:totable(), "float32"), T(w:totable(), "float32"),
      T(b:totable(), "float32")):totable()
    close(ref, runs[1], 1e-3, "one thread")
    close(ref, runs[2], 1e-3, "two threads")
  end)

  it("shares dW's rows among the threads when dX is not needed", function()
    -- x needs no gradient: the plan's fold skips dX, dW goes as four uneven row blocks
    -- (131 rows of dW: 32, 33, 33, 33) over 2 x 129 x 127 x 131 multiply-adds
    ltc.manual_seed(8)
    local x, w0, b0 = ltc.randn(2, 129, 127), ltc.randn(131, 127), ltc.randn(131)
    local g = ltc.randn(2, 129, 131)
    local function grads()
      local w, b = w0:clone():requires_grad_(), b0:clone():requires_grad_()
      ltc.sum(ltc.linear(x, w, b) * g):backward()
      return { w.grad:totable(), b.grad:totable() }
    end
    local runs = on_threads(grads)
    local gt, xt = g:totable(), x:totable()
    ltc.set_backend("ref")
    local ref = { ltc.linear_backward(T(gt, "float32"), T(xt, "float32"),
      T(w0:to("ref"):totable(), "float32")) }
    for k = 2, 3 do
      close(ref[k]:totable(), runs[1][k - 1], 1e-3, "one thread, output " .. k)
      close(ref[k]:totable(), runs[2][k - 1], 1e-3, "two threads, output " .. k)
    end
  end)

  it("gives zeros for empty products", function()
    local dx, dw, db = ltc.linear_backward(ltc.zeros(0, 4), ltc.zeros(0, 3), ltc.randn(4, 3))
    assert.are.same({ 0, 3 }, dx:size())
    assert.are.same({ { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } }, dw:totable())
    assert.are.same({ 0, 0, 0, 0 }, db:totable())
    dx, dw, db = ltc.linear_backward(ltc.ones(2, 3), ltc.zeros(2, 0), ltc.zeros(3, 0))
    assert.are.same({ { }, { } }, dx:totable())
    assert.are.same({ 3, 0 }, dw:size())
    assert.are.same({ 2, 2, 2 }, db:totable())
  end)

  it("matches finite differences in float64", function()
    ltc.manual_seed(7)
    local x0, w0, b0 = ltc.randn({ 2, 3 }, "float64"), ltc.randn({ 4, 3 }, "float64"), ltc.randn({ 4 }, "float64")
    local gout = ltc.randn({ 2, 4 }, "float64")
    local function loss(x, w, b) return (ltc.linear(x, w, b) * gout):sum() end
    local ts = { x0:clone():requires_grad_(), w0:clone():requires_grad_(), b0:clone():requires_grad_() }
    loss(table.unpack(ts)):backward()
    local base = { x0, w0, b0 }
    for i = 1, 3 do
      local g, flat, size = ts[i].grad:reshape({ -1 }):totable(), base[i]:reshape({ -1 }):totable(), base[i]:size()
      for j = 1, #flat do
        local function at(d)
          local f = { table.unpack(flat) }
          f[j] = f[j] + d
          local args = { x0, w0, b0 }
          args[i] = ltc.tensor(f, "float64"):reshape(size)
          return loss(table.unpack(args)):item()
        end
        local fd = (at(1e-6) - at(-1e-6)) / 2e-6
        assert(math.abs(fd - g[j]) < 1e-7, string.format("input %d element %d: %g against %g", i, j, g[j], fd))
      end
    end
  end)

  -- cpu_backend.yaml's skips_unread_outputs: a gradient nobody asked for is an unread result
  -- of the plan, the kernel gets NULL and skips its gemm; the others keep their values
  it("skips the gradients nobody reads (first layer, frozen weight) with the others' values", function()
    for _, dims in ipairs { { 5, 3, 4 }, { 256, 128, 128 } } do -- the second splits the gemms
      local n, i, o = dims[1], dims[2], dims[3]
      ltc.manual_seed(3)
      local x0, w0, b0, gout = ltc.randn(n, i), ltc.randn(o, i), ltc.randn(o), ltc.randn(n, o)
      local want = { ltc.linear_backward(gout, x0, w0) }
      for _, needs in ipairs { { false, true, true }, { true, false, true }, { true, true, false },
        { false, true, false } } do
        local ts = { x0:clone(), w0:clone(), b0:clone() }
        for k = 1, 3 do if needs[k] then ts[k]:requires_grad_() end end
        local y = ltc.linear(ts[1], ts[2], ts[3])
        ;(y * gout):sum():backward()
        local text = ltc.debug.backend_text(ts[1].grad or ts[2].grad, ts[3].grad or ts[2].grad)
        local _, unread = text:gsub(" unread", "")
        local skipped = 0
        for k = 1, 3 do
          if needs[k] then
            local got, w = ts[k].grad:reshape({ -1 }):totable(), want[k]:reshape({ -1 }):totable()
            for j = 1, #w do assert(math.abs(got[j] - w[j]) <= 1e-4 * math.max(1, math.abs(w[j]))) end
          else
            assert.is_nil(ts[k].grad)
            skipped = skipped + 1
          end
        end
        assert.equal(skipped, unread, text)
      end
    end
  end)

  it("keeps second derivatives: under create_graph it is matmul and sum", function()
    -- s(x) = sum((dL/dw)^2) with L = sum(tanh(linear(x, w, b))): depends on x through dL/dw
    local x0, w, b = T({ { 0.5, -1 }, { 2, 0.3 } }), T({ { 0.1, 0.2 }, { -0.3, 0.4 }, { 0.5, -0.6 } }), T({ 0.1, 0, -0.1 })
    local function s(x, create)
      local wr = w:clone():requires_grad_()
      local L = ltc.linear(x, wr, b):tanh():sum()
      local gw = ltc.autograd.grad(L, wr, { create_graph = create })
      return (gw * gw):sum()
    end
    local x = x0:clone():requires_grad_()
    s(x, true):backward()
    local g, flat = x.grad:reshape({ -1 }):totable(), x0:reshape({ -1 }):totable()
    for j = 1, #flat do
      local function at(d)
        local f = { table.unpack(flat) }
        f[j] = f[j] + d
        return s(ltc.tensor(f, "float64"):reshape({ 2, 2 }), false):item()
      end
      local fd = (at(1e-6) - at(-1e-6)) / 2e-6
      assert(math.abs(fd - g[j]) < 1e-6, string.format("element %d: %g against %g", j, g[j], fd))
    end
  end)

  it("raises clear errors for bad sizes and dtypes", function()
    local x, w = ltc.randn(2, 3), ltc.randn(4, 3)
    local msg = err(function() ltc.linear_backward(ltc.randn(2, 5), x, w) end)
    assert.truthy(msg:find("linear_backward", 1, true), msg)
    assert.truthy(msg:find("grad_output float32 [2,5] must be the output's size and dtype, float32 [2,4]", 1, true), msg)
    msg = err(function() ltc.linear_backward(ltc.randn(2, 4), x, ltc.randn(4, 2)) end)
    assert.truthy(msg:find("expected self [..., in] and weight [out, in], got [2,3] and [4,2]", 1, true), msg)
    msg = err(function() ltc.linear_backward(ltc.randn(2, 4), x, w:double()) end)
    assert.truthy(msg:find("linear_backward", 1, true), msg)
    assert.truthy(msg:find("float64", 1, true), msg)
    msg = err(function() ltc.linear_backward(ltc.ones({ 2, 4 }, "int64"), x:long(), w:long()) end)
    assert.truthy(msg:find("linear_backward", 1, true), msg)
  end)
end)
