-- lstm_layer and gru_layer (and their backwards), the fused LSTM and GRU recurrences, against
-- PyTorch's cells run step by step (spec/fixtures/rnn_layer.lua, from
-- tools/gen_rnn_layer_fixtures.py): outputs, saved gates and the four gradients, forward and
-- reverse, on the CPU and the reference backend; bad input; the compile cache and ltc.jit.
local ltc = require "ltc"
local close = dofile("spec/support/close.lua")
local err = dofile("spec/support/err.lua")
local fx = dofile("spec/fixtures/rnn_layer.lua")

local function T(v, dt) return ltc.tensor(v, dt or "float64") end

-- The fixture's loss: sum(output * gw) + sum(c_seq * gc) + sum(h_n * ghn) + sum(c_n * gcn),
-- h_n and c_n the step processed last (T forward, 1 in reverse).
local function run(c, dt)
  local p = T(c.input_proj, dt):requires_grad_()
  local h0, c0 = T(c.h0, dt):requires_grad_(), T(c.c0, dt):requires_grad_()
  local w = T(c.weight_hh, dt):requires_grad_()
  local out, c_seq, gates = ltc.lstm_layer(p, h0, c0, w, c.reverse)
  local last = c.reverse and 1 or out:size(1)
  local loss = (out * T(c.gw, dt)):sum() + (c_seq * T(c.gc, dt)):sum()
    + (out:select(1, last) * T(c.ghn, dt)):sum() + (c_seq:select(1, last) * T(c.gcn, dt)):sum()
  loss:backward()
  return { output = out, c_seq = c_seq, gates = gates, grad_input_proj = p.grad,
    grad_h0 = h0.grad, grad_c0 = c0.grad, grad_weight_hh = w.grad }
end

local function check(c, r, tol)
  for _, k in ipairs { "output", "c_seq", "gates", "grad_input_proj", "grad_h0", "grad_c0",
    "grad_weight_hh" } do
    assert(r[k], k .. " is missing")
    close(c[k], r[k]:totable(), tol, k)
  end
end

describe("lstm_layer", function()
  after_each(function() ltc.set_backend("cpu") end)

  for _, name in ipairs { "forward", "reverse" } do
    for _, backend in ipairs { "cpu", "ref" } do
      it(string.format("matches PyTorch's LSTM cell step by step (%s, %s): outputs, gates and "
        .. "the gradients of input_proj, h0, c0 and weight_hh, h_n and c_n in the loss", name,
        backend), function()
        ltc.set_backend(backend)
        check(fx[name], run(fx[name]), 1e-10)
      end)
    end
    it("matches in float32 too (" .. name .. ")", function()
      local r = run(fx[name], "float32")
      assert.are.equal("float32", r.output:dtype())
      check(fx[name], r, 2e-5)
    end)
  end

  it("is what nn.LSTM runs on the CPU: one lstm_layer per layer and direction", function()
    local m = ltc.nn.LSTM(5, 3, { num_layers = 2, bidirectional = true })
    local out = m(ltc.randn(4, 2, 5))
    local n = 0
    for _ in ltc.debug.ir(out):gmatch("lstm_layer%(") do n = n + 1 end
    assert.are.equal(4, n)
  end)

  it("is all nn.LSTM and nn.GRU trace: no probe op to learn whether the device lowers it", function()
    -- the calls of ltc.lstm_layer / ltc.gru_layer in one forward: one per layer and direction
    -- (a probe traced one more on every forward)
    for _, c in ipairs { { "LSTM", "lstm_layer" }, { "GRU", "gru_layer" } } do
      local m = ltc.nn[c[1]](5, 3, { num_layers = 2, bidirectional = true })
      local x = ltc.randn(4, 2, 5)
      local orig, n = ltc[c[2]], 0
      ltc[c[2]] = function(...) n = n + 1; return orig(...) end
      local ok, e = pcall(function() for _ = 1, 2 do m(x) end end)
      ltc[c[2]] = orig
      assert(ok, e)
      assert.are.equal(8, n, c[1])
    end
    -- the core's answer about the op kind, which the modules cache
    assert.is_true(ltc.debug.lowers_op("cpu", "lstm_layer"))
    assert.is_true(ltc.debug.lowers_op("cpu:0", "gru_layer", "bfloat16"))
    assert.is_true(ltc.debug.lowers_op("ref", "lstm_layer", "float64"))
    assert.has_error(function() ltc.debug.lowers_op("cpu", "lstm") end, "ltc.debug.lowers_op: unknown op 'lstm'")
    assert.has_error(function() ltc.debug.lowers_op("nodevice", "add") end,
      "ltc.debug.lowers_op: unknown device type 'nodevice' in 'nodevice' (a backend's device type "
      .. "exists once its module is loaded, such as require \"ltc.opencl\")")
    -- its own name, not the core's _device_lowers_op (fresh-eyes tester)
    assert.has_error(function() ltc.debug.lowers_op("cpu") end,
      "ltc.debug.lowers_op: bad argument #2 (an op name such as \"lstm_layer\" expected, got nil)")
    assert.has_error(function() ltc.debug.lowers_op(nil, "add") end,
      "ltc.debug.lowers_op: bad argument #1 (a device name such as \"cpu\" or \"opencl:0\" expected, got nil)")
  end)

  it("asks the core whether the device lowers the fused op once per module, device and dtype", function()
    local core = require "ltc.core"
    local orig, asked = core._device_lowers_op, {}
    core._device_lowers_op = function(dev, op, dt)
      asked[#asked + 1] = dev .. " " .. op .. " " .. dt
      return orig(dev, op, dt)
    end
    local ok, e = pcall(function()
      local m = ltc.nn.GRU(3, 2)
      for _ = 1, 3 do m(ltc.randn(2, 1, 3)) end
      m:double()
      for _ = 1, 2 do m(ltc.randn(2, 1, 3, "float64")) end
      m(ltc.randn(2, 3, "float64")) -- unbatched: the same device and dtype
    end)
    core._device_lowers_op = orig
    assert(ok, e)
    assert.are.same({ "cpu:0 gru_layer float32", "cpu:0 gru_layer float64" }, asked)
  end)

  it("lowers_op says to require \"ltc.opencl\" when the opencl device type is not registered", function()
    -- a fresh process: a backend's registration lasts for the process
    local p = io.popen([[bin/ltc -e 'print(select(2, pcall(ltc.debug.lowers_op, "opencl", "lstm_layer")))' 2>&1]])
    local out = p:read("a")
    p:close()
    assert.are.equal("ltc.debug.lowers_op: unknown device type 'opencl' in 'opencl' (its backend registers "
      .. "it: require \"ltc.opencl\" first)\n", out)
  end)

  it("runs the backward as one lstm_layer_backward node for the four gradients", function()
    local c = fx.forward
    local p, w = T(c.input_proj):requires_grad_(), T(c.weight_hh):requires_grad_()
    local h0, c0 = T(c.h0):requires_grad_(), T(c.c0):requires_grad_()
    local out = ltc.lstm_layer(p, h0, c0, w, false)
    out:sum():backward()
    local ir = ltc.debug.ir(p.grad, h0.grad, c0.grad, w.grad)
    local n = 0
    for _ in ir:gmatch("lstm_layer_backward") do n = n + 1 end
    assert.are.equal(1, n, ir)
  end)

  it("matches the reference backend on larger float32 layers (whole and partial tiles)", function()
    -- B 10, H 40: the CPU's 8-row tiles and 1-row tails, 32-column strips and column tails
    ltc.manual_seed(5)
    local p, h0, c0 = ltc.randn(4, 10, 4 * 40), ltc.randn(10, 40), ltc.randn(10, 40)
    local w, go, gc = ltc.randn(4 * 40, 40) * 0.2, ltc.randn(4, 10, 40), ltc.randn(4, 10, 40)
    ltc.sync()
    local function both(backend)
      ltc.set_backend(backend)
      local res = {}
      for _, rev in ipairs { false, true } do
        local o, cs, g = ltc.lstm_layer(p, h0, c0, w, rev)
        local a, b, c, d = ltc.lstm_layer_backward(go, gc, h0, c0, w, o, cs, g, rev)
        for _, t in ipairs { o, cs, g, a, b, c, d } do res[#res + 1] = t:totable() end
      end
      ltc.set_backend("cpu")
      return res
    end
    close(both("ref"), both("cpu"), 1e-5)
  end)

  it("shares batch rows out on the pool's threads to the same values (B 33: 5 chunks)", function()
    ltc.manual_seed(7)
    local p, h0, c0 = ltc.randn(3, 33, 4 * 16), ltc.randn(33, 16), ltc.randn(33, 16)
    local w, go, gc = ltc.randn(4 * 16, 16) * 0.3, ltc.randn(3, 33, 16), ltc.randn(3, 33, 16)
    local gp, gw, gb = ltc.randn(3, 33, 3 * 16), ltc.randn(3 * 16, 16) * 0.3, ltc.randn(3 * 16)
    ltc.sync()
    local function both(backend)
      ltc.set_backend(backend)
      local res = {}
      local o, cs, g = ltc.lstm_layer(p, h0, c0, w, true)
      for _, t in ipairs { o, cs, g, ltc.lstm_layer_backward(go, gc, h0, c0, w, o, cs, g, true) } do
        res[#res + 1] = t:totable()
      end
      local go2, gg = ltc.gru_layer(gp, h0, gw, gb, false)
      for _, t in ipairs { go2, gg, ltc.gru_layer_backward(go, h0, gw, go2, gg, false) } do
        res[#res + 1] = t:totable()
      end
      ltc.set_backend("cpu")
      return res
    end
    close(both("ref"), both("cpu"), 1e-5)
  end)

  it("raises clear errors naming the op and the sizes for bad input", function()
    local p, h, c, w = ltc.zeros(5, 3, 16), ltc.zeros(3, 4), ltc.zeros(3, 4), ltc.zeros(16, 4)
    local e = err(function() ltc.lstm_layer(p, h, c, ltc.zeros(16, 5), false) end)
    assert.truthy(e:find("lstm_layer: input_proj [5,3,16], h0 [3,4], c0 [3,4] and weight_hh "
      .. "[16,5] do not fit (input_proj [T, B, 4H], h0 and c0 [B, H], weight_hh [4H, H])", 1, true), e)
    e = err(function() ltc.lstm_layer(ltc.zeros(5, 3, 15), h, c, w, false) end)
    assert.truthy(e:find("input_proj [5,3,15]", 1, true), e)
    e = err(function() ltc.lstm_layer(p, ltc.zeros(2, 4), c, w, false) end)
    assert.truthy(e:find("h0 [2,4]", 1, true), e)
    e = err(function() ltc.lstm_layer(ltc.zeros(3, 16), h, c, w, false) end)
    assert.truthy(e:find("do not fit", 1, true), e)
    e = err(function() ltc.lstm_layer(p, h, c:double(), w, false) end)
    assert.truthy(e:find("lstm_layer: input_proj, h0, c0 and weight_hh must have one dtype, "
      .. "got float32, float32, float64 and float32", 1, true), e)
    e = err(function() ltc.lstm_layer(p:long(), h:long(), c:long(), w:long(), false) end)
    assert.truthy(e:find("lstm_layer: input_proj must be of a floating dtype, got int64", 1, true), e)
    local o, cs, g = ltc.lstm_layer(p, h, c, w, false)
    e = err(function() ltc.lstm_layer_backward(ltc.zeros(5, 3, 5), cs, h, c, w, o, cs, g, false) end)
    assert.truthy(e:find("lstm_layer_backward: grad_output [5,3,5] must be [5,3,4] (gates [5,3,16])", 1, true), e)
    e = err(function() ltc.lstm_layer_backward(o, cs, h, c, w, o, cs, ltc.zeros(5, 3, 12), false) end)
    assert.truthy(e:find("lstm_layer_backward: input_proj [5,3,12]", 1, true), e)
    -- nothing pending was harmed
    assert.are.equal(0, o:sum():item())
  end)

  it("does not recompile from step to step, and replays under ltc.jit", function()
    ltc.manual_seed(1)
    local m = ltc.nn.LSTM(6, 8, { num_layers = 2 })
    local x = ltc.randn(5, 3, 6)
    local function step()
      m:zero_grad()
      local out, st = m(x)
      ;(out:sum() + st[1]:sum() + st[2]:sum()):backward()
      ltc.sync()
      return m.weight_hh_l0.grad:totable()
    end
    local g1
    for _ = 1, 3 do g1 = step() end
    local n = ltc.metrics.counter("UncachedCompile")
    close(g1, step(), 0)
    assert.are.equal(n, ltc.metrics.counter("UncachedCompile"))
    -- the same step under ltc.jit: captured once, then replayed, with the same gradients
    local f = ltc.jit(function(xx)
      m:zero_grad()
      local out, st = m(xx)
      ;(out:sum() + st[1]:sum() + st[2]:sum()):backward()
      return m.weight_hh_l0.grad * 1
    end)
    local replays = ltc.metrics.counter("GraphReplay")
    for _ = 1, 4 do close(g1, f(x):totable(), 1e-6) end
    assert.is_true(ltc.metrics.counter("GraphReplay") >= replays + 2)
  end)
end)

-- gru_layer's fixture loss: sum(output * gw) + sum(h_n * ghn).
local function run_gru(c, dt)
  local p, h0 = T(c.input_proj, dt):requires_grad_(), T(c.h0, dt):requires_grad_()
  local w, b = T(c.weight_hh, dt):requires_grad_(), T(c.bias_hh, dt):requires_grad_()
  local out, gates = ltc.gru_layer(p, h0, w, b, c.reverse)
  local last = c.reverse and 1 or out:size(1)
  ;((out * T(c.gw, dt)):sum() + (out:select(1, last) * T(c.ghn, dt)):sum()):backward()
  return { output = out, gates = gates, grad_input_proj = p.grad, grad_h0 = h0.grad,
    grad_weight_hh = w.grad, grad_bias_hh = b.grad }
end

describe("gru_layer", function()
  after_each(function() ltc.set_backend("cpu") end)
  local keys = { "output", "gates", "grad_input_proj", "grad_h0", "grad_weight_hh", "grad_bias_hh" }

  for _, name in ipairs { "gru_forward", "gru_reverse" } do
    for _, backend in ipairs { "cpu", "ref" } do
      it(string.format("matches PyTorch's GRU cell step by step (%s, %s): output, gates and the "
        .. "gradients of input_proj, h0, weight_hh and bias_hh, h_n in the loss", name, backend), function()
        ltc.set_backend(backend)
        local r = run_gru(fx[name])
        for _, k in ipairs(keys) do close(fx[name][k], r[k]:totable(), 1e-10, k) end
      end)
    end
    it("matches in float32 too (" .. name .. ")", function()
      local r = run_gru(fx[name], "float32")
      for _, k in ipairs(keys) do close(fx[name][k], r[k]:totable(), 2e-5, k) end
    end)
  end

  it("is what nn.GRU runs on the CPU, its backward one gru_layer_backward node", function()
    local m = ltc.nn.GRU(5, 3, { num_layers = 2, bidirectional = true })
    local x = ltc.randn(4, 2, 5):requires_grad_()
    local out = m(x)
    local n = 0
    for _ in ltc.debug.ir(out):gmatch("gru_layer%(") do n = n + 1 end
    assert.are.equal(4, n)
    out:sum():backward()
    local ir = ltc.debug.ir(m.weight_hh_l0.grad, m.bias_hh_l0.grad)
    n = 0
    for _ in ir:gmatch("gru_layer_backward") do n = n + 1 end
    assert.is_true(n >= 1, ir)
  end)

  it("matches the reference backend on larger float32 layers (whole and partial tiles)", function()
    ltc.manual_seed(6)
    local p, h0 = ltc.randn(4, 10, 3 * 40), ltc.randn(10, 40)
    local w, b, go = ltc.randn(3 * 40, 40) * 0.2, ltc.randn(3 * 40), ltc.randn(4, 10, 40)
    ltc.sync()
    local function both(backend)
      ltc.set_backend(backend)
      local res = {}
      for _, rev in ipairs { false, true } do
        local o, g = ltc.gru_layer(p, h0, w, b, rev)
        local a, bb, c, d = ltc.gru_layer_backward(go, h0, w, o, g, rev)
        for _, t in ipairs { o, g, a, bb, c, d } do res[#res + 1] = t:totable() end
      end
      ltc.set_backend("cpu")
      return res
    end
    close(both("ref"), both("cpu"), 1e-5)
  end)

  it("raises clear errors naming the op and the sizes for bad input", function()
    local p, h, w, b = ltc.zeros(5, 3, 12), ltc.zeros(3, 4), ltc.zeros(12, 4), ltc.zeros(12)
    local e = err(function() ltc.gru_layer(p, h, w, ltc.zeros(9), false) end)
    assert.truthy(e:find("gru_layer: input_proj [5,3,12], h0 [3,4], weight_hh [12,4] and bias_hh "
      .. "[9] do not fit (input_proj [T, B, 3H], h0 [B, H], weight_hh [3H, H], bias_hh [3H])", 1, true), e)
    e = err(function() ltc.gru_layer(ltc.zeros(5, 3, 16), h, w, b, false) end)
    assert.truthy(e:find("input_proj [5,3,16]", 1, true), e)
    e = err(function() ltc.gru_layer(p, h, w:double(), b, false) end)
    assert.truthy(e:find("gru_layer: input_proj, h0, weight_hh and bias_hh must have one dtype, "
      .. "got float32, float32, float64 and float32", 1, true), e)
    e = err(function() ltc.gru_layer(p:long(), h:long(), w:long(), b:long(), false) end)
    assert.truthy(e:find("gru_layer: input_proj must be of a floating dtype, got int64", 1, true), e)
    local o, g = ltc.gru_layer(p, h, w, b, false)
    e = err(function() ltc.gru_layer_backward(ltc.zeros(5, 3, 5), h, w, o, g, false) end)
    assert.truthy(e:find("gru_layer_backward: grad_output [5,3,5] and output [5,3,4] must be [5,3,4]", 1, true), e)
    e = err(function() ltc.gru_layer_backward(o, h, w, o, ltc.zeros(5, 3, 12), false) end)
    assert.truthy(e:find("gru_layer_backward: gates [5,3,12]", 1, true), e)
    assert.are.equal(0, o:sum():item())
  end)

  it("does not recompile from step to step, and replays under ltc.jit", function()
    ltc.manual_seed(2)
    local m = ltc.nn.GRU(6, 8, { num_layers = 2 })
    local x = ltc.randn(5, 3, 6)
    local function loss(xx)
      m:zero_grad()
      local out, hn = m(xx)
      ;(out:sum() + hn:sum()):backward()
    end
    local g1
    for _ = 1, 3 do loss(x); ltc.sync(); g1 = m.bias_hh_l0.grad:totable() end
    local n = ltc.metrics.counter("UncachedCompile")
    loss(x)
    ltc.sync()
    close(g1, m.bias_hh_l0.grad:totable(), 0)
    assert.are.equal(n, ltc.metrics.counter("UncachedCompile"))
    local f = ltc.jit(function(xx) loss(xx); return m.bias_hh_l0.grad * 1 end)
    for _ = 1, 4 do close(g1, f(x):totable(), 1e-6) end
  end)
end)

describe("lstm_layer on OpenCL", function()
  local O = dofile("spec/support/opencl.lua")
  if O.skipped(assert, pending) then return end
  it("is not lowered there, so nn.LSTM takes the step-by-step ops (ltc.debug.lowered)", function()
    O.ocl.open()
    ltc.set_backend("opencl")
    local z = ltc.zeros(2, 3)
    local o = ltc.lstm_layer(ltc.zeros(4, 2, 12), z, z, ltc.zeros(12, 3), false)
    local lowered = ltc.debug.lowered(o)
    local out = ltc.nn.LSTM(5, 3)(ltc.zeros(4, 2, 5))
    local ir = ltc.debug.ir(out)
    ltc.set_backend("cpu")
    assert.is_false(lowered)
    assert.is_nil(ir:find("lstm_layer", 1, true), ir)
    assert.is_true(ltc.debug.lowered(ltc.lstm_layer(ltc.zeros(4, 2, 12), ltc.zeros(2, 3),
      ltc.zeros(2, 3), ltc.zeros(12, 3), false)))
  end)
  it("runs through the core's eager fallback (the CPU kernels), forward and backward", function()
    O.ocl.open()
    local c = fx.reverse
    local _, _, fb = O.same(function()
      local r = run(c, "float32")
      return r.output, r.c_seq, r.grad_input_proj, r.grad_h0, r.grad_c0, r.grad_weight_hh
    end, 1e-5, true)
    assert.is_true(fb >= 2) -- the forward op and the backward op
  end)
end)

teardown(function() fx = nil end)

describe("nn.LSTM and nn.GRU on the fused layers", function()
  it("run float16 and bfloat16 as float32 (as every op), close to the float32 module", function()
    ltc.manual_seed(1)
    for _, mode in ipairs { "LSTM", "GRU" } do
      for _, case in ipairs { { "float16", 2e-3 }, { "bfloat16", 2e-2 } } do
        local m = ltc.nn[mode](4, 6, { num_layers = 2 })
        local x = ltc.randn(5, 3, 4)
        local want = m(x):view(-1):totable()
        m:to(case[1])
        local out = m(x:to(case[1]))
        assert.are.equal(case[1], out:dtype())
        close(want, out:float():view(-1):totable(), case[2])
      end
    end
  end)
  it("raise a clear error for an integer input", function()
    local m = ltc.nn.GRU(4, 6)
    assert.matches("GRU: input must be of a floating dtype, got int64",
      err(function() return m(ltc.ones(5, 3, 4):long()) end))
  end)
  it("raise, naming the op, for second derivatives through the fused layer (create_graph), "
    .. "and first derivatives go on working", function()
    for _, mode in ipairs { "LSTM", "GRU" } do
      local m = ltc.nn[mode](4, 6):double()
      local x = ltc.randn(5, 3, 4, "float64"):requires_grad_()
      local msg = err(function()
        local gx = ltc.autograd.grad({ m(x):pow(2):sum() }, { x }, nil, { create_graph = true })[1]
        gx:pow(2):sum():backward()
      end)
      assert.matches(mode:lower() .. "_layer_backward is not differentiable", msg)
      x.grad = nil
      m(x):sum():backward()
      assert.is_true(x.grad:abs():sum():item() > 0)
    end
  end)
end)
