-- Autograd: every differentiable op's gradient against central finite differences in
-- float64 (with broadcasting and views), and the engine's behaviour.
local ltc = require "ltc"

-- ---- helpers ---------------------------------------------------------------------------

local function flatten(t, out)
  out = out or {}
  if type(t) ~= "table" then out[#out + 1] = t; return out end
  for _, v in ipairs(t) do flatten(v, out) end
  return out
end

local function shape_of(t)
  local s = {}
  while type(t) == "table" do s[#s + 1] = #t; t = t[1] end
  return s
end

-- A float64 tensor of `shape` from flat values.
local function make(flat, shape)
  return ltc.tensor(flat, "float64"):reshape(shape)
end

-- Fixed weights so that the checked scalar is sum(out * w) with a non-trivial gradient.
local function weights(out)
  local n, flat = out:numel(), {}
  for k = 1, n do flat[k] = ((k * 37) % 11 - 5) / 7 + 0.05 end
  return ltc.tensor(flat, "float64"):reshape(out:size())
end

-- Checks the gradients of sum(f(inputs...) * w) with respect to every input against
-- central differences. inputs: nested tables (float64). Returns nothing; asserts.
local function gradcheck(f, inputs, opts)
  opts = opts or {}
  local eps, tol = opts.eps or 1e-6, opts.tol or 1e-5
  local flats, shapes, ts = {}, {}, {}
  for i, v in ipairs(inputs) do
    flats[i], shapes[i] = flatten(v), shape_of(v)
    ts[i] = make(flats[i], shapes[i]):requires_grad_()
  end
  local out = f(table.unpack(ts))
  local w = weights(out)
  local loss = (out * w):sum()
  loss:backward()
  local function value(i, j, delta)
    return ltc.no_grad(function()
      local args = {}
      for k = 1, #inputs do
        if k == i then
          local fl = { table.unpack(flats[k]) }
          fl[j] = fl[j] + delta
          args[k] = make(fl, shapes[k])
        else
          args[k] = make(flats[k], shapes[k])
        end
      end
      return (f(table.unpack(args)) * w):sum():item()
    end)
  end
  for i = 1, #inputs do
    if not (opts.skip and opts.skip[i]) then
      local g = ts[i].grad
      assert(g, "input " .. i .. " got no gradient")
      assert.are.same(shapes[i], g:size())
      local got = flatten(g:totable())
      for j = 1, #flats[i] do
        local num = (value(i, j, eps) - value(i, j, -eps)) / (2 * eps)
        assert(math.abs(num - got[j]) <= tol * (1 + math.abs(num)),
          string.format("input %d element %d: analytic %.8g, numeric %.8g", i, j, got[j], num))
      end
    end
  end
end

local A = { { 0.5, -1.2, 2.0 }, { 1.5, 0.3, -0.7 } }          -- 2x3
local B = { { 0.8, -0.4, 1.1 }, { -1.3, 0.9, 0.6 } }           -- 2x3
local P = { { 0.5, 1.2, 2.0 }, { 1.5, 0.3, 0.7 } }             -- positive 2x3
local R = { 0.7, -1.1, 1.9 }                                   -- 3
local C = { { 0.4 }, { -0.6 } }                                -- 2x1
local M34 = { { 0.1, 0.2, -0.3, 0.4 }, { 0.5, -0.6, 0.7, 0.8 }, { -0.9, 1.0, 1.1, -1.2 } }

-- One case per differentiable op (full op name); checked below that none is missing.
local cases = {
  add = function() gradcheck(function(a, b) return a + b end, { A, R }) end,
  sub = function() gradcheck(function(a, c) return a - c end, { A, C }) end,
  mul = function() gradcheck(function(a, b) return a * b * 3 end, { A, B }) end,
  div = function() gradcheck(function(a, b) return a / b end, { A, { 1.5, -2.0, 0.8 } }) end,
  remainder = function() gradcheck(function(a, b) return a % b end, { { 5.3, 7.1, -2.2 }, { 2.0, 3.0, 1.5 } }) end,
  pow = function() gradcheck(function(a, b) return a ^ b end, { P, { 1.5, 2.0, 0.5 } }) end,
  neg = function() gradcheck(function(a) return -a end, { A }) end,
  exp = function() gradcheck(function(a) return a:exp() end, { A }) end,
  log = function() gradcheck(function(a) return a:log() end, { P }) end,
  relu = function() gradcheck(function(a) return a:relu() end, { A }) end,
  sigmoid = function() gradcheck(function(a) return a:sigmoid() end, { A }) end,
  tanh = function() gradcheck(function(a) return a:tanh() end, { A }) end,
  to = function() gradcheck(function(a) return a:to("float64") * 2 end, { A }) end,
  sum = function()
    gradcheck(function(a) return a:sum() end, { A })
    gradcheck(function(a) return a:sum(2) end, { A })
    gradcheck(function(a) return a:sum(-2, true) end, { A })
  end,
  mean = function()
    gradcheck(function(a) return a:mean() end, { A })
    gradcheck(function(a) return a:mean(1) end, { A })
  end,
  max = function() gradcheck(function(a) return a:max() end, { A }) end,
  ["max.dim"] = function()
    gradcheck(function(a) local v = a:max(2); return v end, { A })
    gradcheck(function(a) local v = a:max(1, true); return v end, { A })
  end,
  matmul = function()
    gradcheck(function(a, m) return a:matmul(m) end, { A, M34 })
    gradcheck(function(r, m) return r:matmul(m) end, { R, M34 })
    gradcheck(function(m, r) return m:t():matmul(r) end, { M34, R })
    gradcheck(function(r, s) return r:matmul(s) end, { R, { 0.3, -0.2, 0.5 } })
    gradcheck(function(a, m) return a:reshape({ 1, 2, 3 }):matmul(m) end, { A, M34 })
  end,
  transpose = function() gradcheck(function(a) return a:transpose(1, 2) end, { A }) end,
  t = function() gradcheck(function(a) return a:t() end, { A }) end,
  view = function() gradcheck(function(a) return a:view(3, 2) end, { A }) end,
  reshape = function() gradcheck(function(a) return a:reshape({ 6 }) end, { A }) end,
  narrow = function() gradcheck(function(a) return a:narrow(2, 2, 2) end, { A }) end,
  select = function() gradcheck(function(a) return a:select(1, 2) * 2 end, { A }) end,
  broadcast_to = function() gradcheck(function(c) return c:broadcast_to({ 2, 3 }) end, { C }) end,
  narrow_scatter = function()
    gradcheck(function(a, s) return a:narrow_scatter(s, 2, 2) end, { A, { { 1, 2 }, { 3, 4 } } })
  end,
  select_scatter = function()
    gradcheck(function(a, s) return a:select_scatter(s, 1, 2) end, { A, { 1, 2, 3 } })
  end,
  softmax = function() gradcheck(function(a) return a:softmax(2) end, { A }) end,
  log_softmax = function() gradcheck(function(a) return a:log_softmax(1) end, { A }) end,
  index_select = function()
    local idx = ltc.tensor({ 3, 1, 3 }, "int64")
    gradcheck(function(a) return a:index_select(2, idx) end, { A })
    gradcheck(function(a) return a:index_select(1, ltc.tensor({ 2, 2 }, "int32")) end, { A })
  end,
  index_add = function()
    local idx = ltc.tensor({ 2, 2 }, "int64")
    gradcheck(function(a, s) return a:index_add(2, idx, s) end, { A, { { 1, 2 }, { 3, 4 } } })
  end,
  gather = function()
    local idx = ltc.tensor({ { 1, 3 }, { 2, 2 } }, "int64")
    gradcheck(function(a) return a:gather(2, idx) end, { A })
    gradcheck(function(a) return a:gather(1, ltc.tensor({ { 2, 1, 2 } }, "int64")) end, { A })
  end,
  scatter_add = function()
    local idx = ltc.tensor({ { 1, 3 }, { 3, 3 } }, "int64")
    gradcheck(function(a, s) return a:scatter_add(2, idx, s) end, { A, { { 1, 2 }, { 3, 4 } } })
  end,
  nll_loss = function()
    local target = ltc.tensor({ 3, 1 }, "int64")
    gradcheck(function(x) return x:nll_loss(target) end, { A })
    gradcheck(function(x) return x:nll_loss(target, 0) end, { A })
    gradcheck(function(x) return x:nll_loss(ltc.tensor(2, "int64"), 2) end, { R })
  end,
  nll_loss_backward = function()
    local target = ltc.tensor({ 3, 1 }, "int64")
    gradcheck(function(g, x) return ltc.nll_loss_backward(g, x, target, 1) end, { 0.7, A })
    gradcheck(function(g, x) return ltc.nll_loss_backward(g, x, target, 0) end, { { 0.7, -2 }, A })
  end,
  cross_entropy = function()
    local target = ltc.tensor({ 3, 1 }, "int64")
    gradcheck(function(x) return x:cross_entropy(target) end, { A })
    gradcheck(function(x) return x:cross_entropy(target, 0) end, { A })
    gradcheck(function(x) return x:cross_entropy(ltc.tensor(2, "int64"), 2) end, { R })
  end,
  linear = function()
    gradcheck(function(x, w, b) return ltc.linear(x, w, b) end, { A, { { 0.1, 0.2, -0.3 },
      { 0.4, 0.5, -0.6 }, { 0.7, 0.8, 0.9 }, { -1.0, 1.1, 1.2 } }, { 0.5, -0.5, 0.25, 1 } })
    gradcheck(function(x, w, b) return ltc.linear(x, w, b) end, { R, { { 0.1, 0.2, -0.3 } }, { 0.5 } })
  end,
  ["linear.nobias"] = function()
    gradcheck(function(x, w) return ltc.linear(x, w) end, { A, { { 0.1, 0.2, -0.3 }, { 0.4, 0.5, -0.6 } } })
  end,
  addmm = function()
    gradcheck(function(s, m1, m2) return ltc.addmm(s, m1, m2, 0.5, 2) end,
      { { 1, 2, 3, 4 }, A, M34 })
    gradcheck(function(s, m1, m2) return ltc.addmm(s, m1, m2) end, { C, A, M34 })
  end,
  abs = function() gradcheck(function(a) return a:abs() end, { A }) end,
  sign = function() gradcheck(function(a) return a:sign() + a end, { A }) end,
  sqrt = function() gradcheck(function(p) return p:sqrt() end, { P }) end,
  rsqrt = function() gradcheck(function(p) return p:rsqrt() end, { P }) end,
  log1p = function() gradcheck(function(p) return p:log1p() end, { P }) end,
  expm1 = function() gradcheck(function(a) return a:expm1() end, { A }) end,
  sin = function() gradcheck(function(a) return a:sin() end, { A }) end,
  cos = function() gradcheck(function(a) return a:cos() end, { A }) end,
  gelu = function() gradcheck(function(a) return a:gelu() end, { A }) end,
  gelu_backward = function()
    gradcheck(function(g, a) return ltc.gelu_backward(g, a) end, { B, A })
  end,
  silu = function() gradcheck(function(a) return a:silu() end, { A }) end,
  leaky_relu = function()
    gradcheck(function(a) return a:leaky_relu() end, { A })
    gradcheck(function(a) return a:leaky_relu(0.2) end, { A })
  end,
  clamp = function()
    gradcheck(function(a) return a:clamp(-1, 1) end, { A })
    gradcheck(function(a) return a:clamp(0.4) end, { A })
    gradcheck(function(a) return a:clamp(nil, 0.4) end, { A })
  end,
  minimum = function()
    gradcheck(function(a, b) return ltc.minimum(a, b) end, { A, B })
    gradcheck(function(a, r) return ltc.minimum(a, r) end, { A, R })
  end,
  maximum = function()
    gradcheck(function(a, b) return ltc.maximum(a, b) end, { A, B })
    gradcheck(function(a, c) return ltc.maximum(a, c) end, { A, C })
  end,
  floor = function() gradcheck(function(a) return a:floor() + a * 2 end, { B }) end,
  ceil = function() gradcheck(function(a) return a:ceil() + a * 2 end, { B }) end,
  round = function() gradcheck(function(a) return a:round() + a * 2 end, { B }) end,
  fmod = function()
    gradcheck(function(a, b) return ltc.fmod(a, b) end, { { 5.3, -7.1, 2.2 }, { 2.0, 3.0, -1.5 } })
  end,
  where = function()
    local cond = ltc.tensor({ { true, false, true }, { false, true, false } })
    gradcheck(function(a, b) return ltc.where(cond, a, b) end, { A, B })
    gradcheck(function(a, r) return ltc.where(cond, a, r) end, { A, R })
  end,
  lerp = function()
    gradcheck(function(a, b, w) return ltc.lerp(a, b, w) end, { A, B, { 0.2, 0.7, 0.5 } })
    gradcheck(function(a, b) return ltc.lerp(a, b, 0.3) end, { A, B })
  end,
  addcmul = function()
    gradcheck(function(s, a, b) return ltc.addcmul(s, a, b, 0.5) end, { R, A, B })
  end,
  addcdiv = function()
    gradcheck(function(s, a, b) return ltc.addcdiv(s, a, b, 2) end, { C, A, P })
  end,
  prod = function()
    gradcheck(function(a) return a:prod() end, { A })
    gradcheck(function(a) return a:prod(2) end, { A })
    gradcheck(function(a) return a:prod(1, true) end, { A })
    gradcheck(function(a) return a:prod(2) end, { { { 0, 2, 3 }, { 0, 0, 3 } } })
    gradcheck(function(a) return a:prod() end, { { 0.5, 0, 4 } })
  end,
  min = function() gradcheck(function(a) return a:min() end, { A }) end,
  ["min.dim"] = function()
    gradcheck(function(a) local v = a:min(2); return v end, { A })
    gradcheck(function(a) local v = a:min(-2, true); return v end, { A })
  end,
  var = function()
    gradcheck(function(a) return a:var() end, { A })
    gradcheck(function(a) return a:var(2) end, { A })
    gradcheck(function(a) return a:var(1, false, true) end, { A })
  end,
  std = function()
    gradcheck(function(a) return a:std() end, { A })
    gradcheck(function(a) return a:std(2, false) end, { A })
  end,
  logsumexp = function()
    gradcheck(function(a) return a:logsumexp() end, { A })
    gradcheck(function(a) return a:logsumexp(2) end, { A })
    gradcheck(function(a) return a:logsumexp(1, true) end, { A })
  end,
  norm = function()
    gradcheck(function(a) return a:norm() end, { A })
    gradcheck(function(a) return a:norm(2, 2) end, { A })
    gradcheck(function(a) return a:norm(1, 1, true) end, { A })
    gradcheck(function(a) return a:norm(3, 2) end, { A })
    gradcheck(function(a) return a:norm(math.huge, 2) end, { A })
    gradcheck(function(a) return a:norm(-math.huge) end, { A })
  end,
  cumsum = function()
    gradcheck(function(a) return a:cumsum(2) end, { A })
    gradcheck(function(a) return a:cumsum(1) end, { A })
  end,
  conv2d = function()
    local x = { { { { 0.1, -0.2, 0.3, 0.4 }, { 0.5, 0.6, -0.7, 0.8 }, { -0.9, 1.0, 1.1, 1.2 },
      { 1.3, -1.4, 1.5, 1.6 } } } }                                   -- 1x1x4x4
    local w = { { { { 0.2, -0.1 }, { 0.4, 0.3 } } }, { { { -0.5, 0.6 }, { 0.7, 0.1 } } } } -- 2x1x2x2
    gradcheck(function(xx, ww, bb) return ltc.conv2d(xx, ww, bb) end, { x, w, { 0.5, -0.25 } })
    gradcheck(function(xx, ww, bb) return ltc.conv2d(xx, ww, bb, 2, 1) end, { x, w, { 0.5, -0.25 } })
    gradcheck(function(xx, ww, bb) return ltc.conv2d(xx, ww, bb, 1, 1, 2) end, { x[1], w, { 0.5, -0.25 } })
  end,
  ["conv2d.nobias"] = function()
    local x = { { { { 0.1, -0.2, 0.3 }, { 0.5, 0.6, -0.7 }, { -0.9, 1.0, 1.1 } },
      { { 0.2, 0.4, -0.6 }, { 0.8, -1.0, 1.2 }, { 1.4, 1.6, -1.8 } } } }  -- 1x2x3x3
    local w = { { { { 0.2, -0.1 }, { 0.4, 0.3 } } }, { { { -0.5, 0.6 }, { 0.7, 0.1 } } } } -- 2x1x2x2
    gradcheck(function(xx, ww) return ltc.conv2d(xx, ww, nil, 1, 0, 1, 2) end, { x, w })
  end,
  conv2d_backward_input = function()
    local w = { { { { 0.2, -0.1 }, { 0.4, 0.3 } } }, { { { -0.5, 0.6 }, { 0.7, 0.1 } } } } -- 2x1x2x2
    local g = { { { { 0.3, -0.6 }, { 0.9, 0.2 } }, { { -0.4, 0.5 }, { 0.1, 0.8 } } } }   -- 1x2x2x2
    gradcheck(function(gg, ww)
      return ltc.conv2d_backward_input(gg, ww, { 1, 1, 4, 4 }, { 2, 2 }, { 0, 0 }, { 1, 1 }, 1)
    end, { g, w })
  end,
  conv2d_backward_weight = function()
    local x = { { { { 0.1, -0.2, 0.3 }, { 0.5, 0.6, -0.7 }, { -0.9, 1.0, 1.1 } } } } -- 1x1x3x3
    local g = { { { { 0.3, -0.6 }, { 0.9, 0.2 } }, { { -0.4, 0.5 }, { 0.1, 0.8 } } } } -- 1x2x2x2
    gradcheck(function(gg, xx)
      return ltc.conv2d_backward_weight(gg, xx, { 2, 1, 2, 2 }, { 1, 1 }, { 0, 0 }, { 1, 1 }, 1)
    end, { g, x })
  end,
  max_pool2d = function()
    local x = { { { { 0.1, -0.2, 0.3, 0.4 }, { 0.5, 0.6, -0.7, 0.8 }, { -0.9, 1.0, 1.1, 1.2 },
      { 1.3, -1.4, 1.5, 1.65 } } } }
    gradcheck(function(xx) return ltc.max_pool2d(xx, 2) end, { x })
    gradcheck(function(xx) return ltc.max_pool2d(xx, 3, 1, 1) end, { x })
  end,
  avg_pool2d = function()
    local x = { { { 0.1, -0.2, 0.3, 0.4 }, { 0.5, 0.6, -0.7, 0.8 }, { -0.9, 1.0, 1.1, 1.2 } } }
    gradcheck(function(xx) return ltc.avg_pool2d(xx, 2) end, { x })
    gradcheck(function(xx) return ltc.avg_pool2d(xx, 3, 2, 1, true, false) end, { x })
  end,
  avg_pool2d_backward = function()
    local x = ltc.zeros({ 1, 4, 4 }, "float64")
    gradcheck(function(g)
      return ltc.avg_pool2d_backward(g, x, { 2, 2 }, { 2, 2 }, { 0, 0 }, false, true)
    end, { { { { 0.3, -0.6 }, { 0.9, 0.2 } } } })
  end,
  permute = function()
    gradcheck(function(a) return a:permute(2, 1) end, { A })
    gradcheck(function(a) return a:reshape({ 1, 2, 3 }):permute(3, -3, 2) * 2 end, { A })
  end,
  unsqueeze = function()
    gradcheck(function(a) return a:unsqueeze(2) end, { A })
    gradcheck(function(a) return a:unsqueeze(-1) end, { A })
  end,
  squeeze = function() gradcheck(function(c) return c:squeeze() end, { C }) end,
  ["squeeze.dim"] = function() gradcheck(function(c) return c:squeeze(2) end, { C }) end,
  flatten = function()
    gradcheck(function(a) return a:flatten() end, { A })
    gradcheck(function(a) return a:reshape({ 1, 2, 3 }):flatten(2, 3) end, { A })
  end,
  expand = function()
    gradcheck(function(c) return c:expand(2, 3) end, { C })
    gradcheck(function(r) return r:expand(2, -1) end, { R })
  end,
  cat = function()
    gradcheck(function(a, c, b) return ltc.cat({ a, c, b }, 2) end, { A, C, B })
    gradcheck(function(a, b) return ltc.cat({ a, b }) end, { A, B })
  end,
  stack = function()
    gradcheck(function(a, b) return ltc.stack({ a, b }) end, { A, B })
    gradcheck(function(a, b) return ltc.stack({ a, b }, -1) end, { A, B })
  end,
  ["repeat"] = function()
    gradcheck(function(a) return a:repeatTensor(2, 1) end, { A })
    gradcheck(function(r) return r:repeatTensor(2, 1, 2) end, { R })
  end,
  flip = function()
    gradcheck(function(a) return a:flip({ 2 }) end, { A })
    gradcheck(function(a) return a:flip({ 1, 2 }) * 3 end, { A })
  end,
  mm = function() gradcheck(function(a, m) return a:mm(m) end, { A, M34 }) end,
  bmm = function()
    gradcheck(function(a, b) return a:reshape({ 2, 1, 3 }):bmm(b:reshape({ 2, 3, 1 })) end, { A, B })
  end,
  dot = function() gradcheck(function(r, s) return r:dot(s) end, { R, { 0.3, -0.2, 0.5 } }) end,
  outer = function() gradcheck(function(r, s) return r:outer(s) end, { R, { 0.3, -0.2 } }) end,
  masked_fill = function()
    local mask = ltc.tensor({ { true, false, true }, { false, false, true } })
    gradcheck(function(a) return a:masked_fill(mask, 0.5) end, { A })
    gradcheck(function(r) return r:masked_fill(mask, -1) end, { R })
  end,
  scatter = function()
    local idx = ltc.tensor({ { 1, 3 }, { 3, 2 } }, "int64")
    gradcheck(function(a, s) return a:scatter(2, idx, s) end, { A, { { 1, 2 }, { 3, 4 } } })
    gradcheck(function(a) return a:scatter(2, idx, 0.5) end, { A })
  end,
  mse_loss = function()
    gradcheck(function(a, b) return a:mse_loss(b) end, { A, B })
    gradcheck(function(a, b) return a:mse_loss(b, 0) end, { A, B })
    gradcheck(function(a, r) return a:mse_loss(r, 2) end, { A, R })
  end,
  embedding = function()
    gradcheck(function(w) return ltc.embedding(w, ltc.tensor({ { 2, 1 }, { 2, 2 } }, "int64")) end, { A })
  end,
  clone = function() gradcheck(function(a) return a:clone() * 2 end, { A }) end,
  assert_in_range = function() gradcheck(function(a) return a:assert_in_range(-5, 5) * 3 end, { A }) end,
  contiguous = function() gradcheck(function(a) return a:t():contiguous() end, { A }) end,
  dropout = function()
    gradcheck(function(a) return ltc.dropout(a, 0.3, false) end, { A })
    local x = ltc.tensor({ 0.5, -1, 2, 3, -4, 0.25, 1, 2 }, "float64"):requires_grad_()
    local y = ltc.dropout(x, 0.5)
    ;(y * 3):sum():backward()
    local ys, gs = y:totable(), x.grad:totable()
    for i = 1, #ys do assert.are.equal(ys[i] ~= 0 and 6 or 0, gs[i]) end
  end,
  layer_norm = function()
    gradcheck(function(x, w, b) return ltc.layer_norm(x, 3, w, b) end, { A, { 0.5, -1, 2 }, R })
    gradcheck(function(x, w, b) return ltc.layer_norm(x:reshape({ 1, 2, 3 }), { 2, 3 }, w, b, 0.1) end,
      { A, B, P })
    gradcheck(function(x) return ltc.layer_norm(x, 3) end, { A })
  end,
  batch_norm = function()
    local x = { { { 0.5, -1.2 }, { 2.0, 1.5 } }, { { 0.3, -0.7 }, { 0.8, -0.4 } },
      { { 1.1, -1.3 }, { 0.9, 0.6 } } }                              -- 3x2x2
    local rm, rv = ltc.tensor({ 0.1, -0.2 }, "float64"), ltc.tensor({ 0.5, 2 }, "float64")
    gradcheck(function(xx, w, b) return ltc.batch_norm(xx, rm, rv, w, b, false) end,
      { x, { 0.5, -2 }, { 1, 0.25 } })
    gradcheck(function(xx, w, b)
      return ltc.batch_norm(xx, ltc.zeros({ 2 }, "float64"), ltc.ones({ 2 }, "float64"), w, b, true)
    end, { x, { 0.5, -2 }, { 1, 0.25 } })
    gradcheck(function(xx) return ltc.batch_norm(xx, ltc.zeros({ 3 }, "float64"),
      ltc.ones({ 3 }, "float64"), nil, nil, true, 0.1, 0.01) end, { A })
  end,
}

for name, case in pairs(dofile("spec/support/grad_cases_ops.lua")(gradcheck, ltc)) do
  assert(not cases[name], name .. " has two finite-difference cases")
  cases[name] = case
end

-- The collectives on one process (the identity communicator): the formulas' mechanics; the
-- values across ranks are checked under mpirun (spec/distributed_spec.lua).
cases.all_reduce = function()
  for op = 0, 4 do gradcheck(function(a) return ltc.all_reduce(a, op) * 2 end, { A }) end
end
cases.broadcast = function() gradcheck(function(a) return ltc.broadcast(a, 0) end, { A }) end
cases.reduce = function() gradcheck(function(a) return ltc.reduce(a, 0) end, { A }) end
cases.all_gather = function() gradcheck(function(a) return ltc.all_gather(a, 1) end, { A }) end
cases.reduce_scatter = function()
  for op = 0, 4 do gradcheck(function(a) return ltc.reduce_scatter(a, op, 1) end, { A }) end
end

describe("derivatives", function()
  local D = ltc.autograd.derivatives()
  local names = {}
  for name, entry in pairs(D) do
    if entry.formulas then names[#names + 1] = name end
  end
  table.sort(names)

  it("every op with a derivative formula has a finite-difference case here", function()
    local missing = {}
    for _, name in ipairs(names) do
      if not cases[name] then missing[#missing + 1] = name end
    end
    assert.are.same({}, missing)
  end)

  for _, name in ipairs(names) do
    if cases[name] then
      it(name .. " matches central differences in float64", cases[name])
    end
  end
end)

describe("autograd engine", function()
  it("reduces a broadcast input's gradient to its shape", function()
    local a = ltc.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }):requires_grad_()
    local b = ltc.tensor({ 10, 20, 30 }):requires_grad_()
    local c = ltc.tensor(2):requires_grad_()
    ;((a + b) * c):sum():backward()
    assert.are.same({ 3 }, b.grad:size())
    assert.are.same({ 4, 4, 4 }, b.grad:totable())
    assert.are.same({}, c.grad:size())
    assert.are.equal(21 + 120, c.grad:item())
  end)

  it("accumulates gradients over backward calls until grad is cleared", function()
    local w = ltc.tensor({ 1, 2 }):requires_grad_()
    ;(w * 3):sum():backward()
    ;(w * 3):sum():backward()
    assert.are.same({ 6, 6 }, w.grad:totable())
    w.grad = nil
    assert.is_nil(w.grad)
    ;(w * w):sum():backward()
    assert.are.same({ 2, 4 }, w.grad:totable())
    w:zero_grad()
    assert.is_nil(w.grad)
  end)

  it("takes an explicit gradient for a non-scalar output", function()
    local x = ltc.tensor({ 1, 2, 3 }):requires_grad_()
    local y = x * x
    y:backward(ltc.tensor({ 1, 0.5, 2 }))
    assert.are.same({ 2, 2, 12 }, x.grad:totable())
    local z = ltc.tensor({ 1, 2 }):requires_grad_()
    assert.has_error(function() (z * 2):backward() end,
      "backward: grad can be implicitly created only for a tensor with one element, not size 2; pass grad")
  end)

  it("builds lazy IR: nothing runs until a sync", function()
    local w = ltc.randn(4, 3):requires_grad_()
    local x = ltc.randn(5, 4)
    ltc.sync()
    local marks = ltc.metrics.counter("MarkStep")
    local loss = x:matmul(w):tanh():sum()
    loss:backward()
    assert.are.equal(marks, ltc.metrics.counter("MarkStep"))
    assert.is_true(ltc.debug.pending().pending_tensors > 0)
    assert.are.same({ 4, 3 }, w.grad:size())
  end)

  it("records nothing under no_grad, and detach cuts the history", function()
    local w = ltc.tensor({ 1, 2 }):requires_grad_()
    local y = ltc.no_grad(function() return w * 2 end)
    assert.is_false(y.requires_grad)
    assert.is_true(ltc.is_grad_enabled())
    local d = (w * 2):detach()
    assert.is_false(d.requires_grad)
    assert.are.same({ 2, 4 }, d:totable())
    local z = w * 2
    assert.is_true(z.requires_grad)
    assert.is_false(z.is_leaf)
    assert.are.equal("mul", z.grad_fn.name)
  end)

  it("marks non-differentiable results (comparisons, floor division, argmax)", function()
    local w = ltc.tensor({ 1.5, -2 }):requires_grad_()
    assert.is_false(w:gt(0).requires_grad)
    assert.is_false((w // 1).requires_grad)
    assert.is_false(w:argmax().requires_grad)
  end)

  it("raises a clear error naming an op without a formula", function()
    -- cross_entropy_backward has no `derivatives:` entry in ops.yaml
    local ok, err = pcall(function()
      local w = ltc.tensor({ { 1, 2 }, { 0, 1 } }):requires_grad_()
      ltc.cross_entropy_backward(ltc.tensor(1), w, ltc.tensor({ 1, 2 }, "int64")):sum():backward()
    end)
    assert.is_false(ok)
    assert.matches("op 'cross_entropy_backward' has no derivative formula", err, 1, true)
    local w = ltc.tensor({ 1, 2 }):requires_grad_()     -- the runtime stays usable
    w:exp():sum():backward()
    local g = w.grad:totable()
    assert.is_true(math.abs(g[1] - math.exp(1)) < 1e-5 and math.abs(g[2] - math.exp(2)) < 1e-5)
  end)

  it("frees saved tensors after backward unless retain_graph is set", function()
    local w = ltc.tensor({ 1, 2 }):requires_grad_()
    local y = (w * w):sum()
    y:backward({ retain_graph = true })
    y:backward()
    assert.are.same({ 4, 8 }, w.grad:totable())
    assert.has_error(function() y:backward() end)
  end)

  it("refuses requires_grad on integer tensors and on non-leaves", function()
    assert.has_error(function() ltc.tensor({ 1, 2 }, "int64"):requires_grad_() end)
    local w = ltc.tensor({ 1.0 }):requires_grad_()
    assert.has_error(function() (w * 2).requires_grad = false end)
  end)

  it("gives second derivatives with create_graph", function()
    local x = ltc.tensor({ 2.0 }, "float64"):requires_grad_()
    local y = (x * x * x):sum()
    y:backward({ create_graph = true })
    local g = x.grad                      -- 3x^2 = 12
    assert.are.same({ 12 }, g:totable())
    x.grad = nil
    g:sum():backward()                    -- 6x = 12
    assert.are.same({ 12 }, x.grad:totable())
  end)
end)

describe("autograd and in-place writes", function()
  local C23 = { { 1, 2, 3 }, { 4, 5, 6 } }
  local function t(v) return ltc.tensor(v, "float64") end

  it("a write through a view gives the base the new value's history inside the view", function()
    local w = t({ { 1, 1, 1 }, { 1, 1, 1 } }):requires_grad_()
    local x = t({ { 7, 8 }, { 9, 10 } }):requires_grad_()
    local b = w * 1
    b:narrow(2, 2, 2):copy_(x)
    assert.are.equal("copy_slices", b.grad_fn.name)
    ;(b * t(C23)):sum():backward()
    assert.are.same({ { 1, 0, 0 }, { 4, 0, 0 } }, w.grad:totable())
    assert.are.same({ { 2, 3 }, { 5, 6 } }, x.grad:totable())
    assert.are.same({ { 1, 7, 8 }, { 1, 9, 10 } }, b:totable())
  end)

  it("records an in-place op through t[i] (a select view)", function()
    local w = t({ { 1, 1, 1 }, { 1, 1, 1 } }):requires_grad_()
    local b = w * 2
    b[1]:mul_(3)
    ;(b * t(C23)):sum():backward()
    assert.are.same({ { 6, 12, 18 }, { 8, 10, 12 } }, w.grad:totable())
  end)

  it("t[i] = v records v's history into a base that did not require grad", function()
    local x = t({ 1, 2, 3 }):requires_grad_()
    local b = ltc.zeros({ 2, 3 }, "float64")
    b[2] = x * 2
    assert.is_true(b.requires_grad)
    ;(b * t(C23)):sum():backward()
    assert.are.same({ 8, 10, 12 }, x.grad:totable())
    local y = t({ 5 }):requires_grad_()
    local c = ltc.zeros({ 2, 2 }, "float64")
    c[1] = y                                   -- broadcast, and v a leaf
    ;(c * t({ { 1, 2 }, { 3, 4 } })):sum():backward()
    assert.are.same({ 3 }, y.grad:totable())
  end)

  it("gives views taken before the write their history from the base again", function()
    local w = t({ { 1, 2, 3 }, { 4, 5, 6 } }):requires_grad_()
    local x = t({ { 10 }, { 20 } }):requires_grad_()
    local b = w * 1
    local u = b:t()                             -- taken before the write
    b:narrow(2, 1, 1):copy_(x)
    assert.are.same({ { 10, 20 }, { 2, 5 }, { 3, 6 } }, u:totable())
    ;(u * t({ { 1, 2 }, { 3, 4 }, { 5, 6 } })):sum():backward()
    assert.are.same({ { 0, 3, 5 }, { 0, 4, 6 } }, w.grad:totable())
    assert.are.same({ { 1 }, { 2 } }, x.grad:totable())
  end)

  it("matches central differences through an in-place op on a view", function()
    gradcheck(function(a, s)
      local b = a * 1
      b:narrow(2, 2, 2):mul_(s)
      b[1]:add_(s:sum())
      return b:exp()
    end, { A, { { 0.5, -1.5 }, { 2, 0.25 } } })
  end)

  it("refuses in-place writes into a leaf that requires grad or a view of one, naming the op", function()
    local w = t({ { 1, 2 }, { 3, 4 } }):requires_grad_()
    assert.has_error(function() w:add_(1) end,
      "add_: a leaf tensor that requires grad is used in an in-place operation (use ltc.no_grad, or t.data)")
    assert.has_error(function() w:narrow(1, 1, 1):mul_(2) end,
      "mul_: a view of a leaf tensor that requires grad is used in an in-place operation (use ltc.no_grad, or t.data)")
    assert.has_error(function() w[1] = 5 end,
      "newindex: a view of a leaf tensor that requires grad is used in an in-place operation (use ltc.no_grad, or t.data)")
    assert.has_error(function() w[2]:fill_(0) end,
      "fill_: a view of a leaf tensor that requires grad is used in an in-place operation (use ltc.no_grad, or t.data)")
    ltc.no_grad(function() w[1] = 5 end)
    assert.are.same({ { 5, 5 }, { 3, 4 } }, w:totable())
    assert.is_true(w.is_leaf and w.requires_grad)
    local d = w:detach()
    d:add_(1)                                   -- shares storage, not history
    assert.are.same({ { 6, 6 }, { 4, 5 } }, w:totable())
    assert.is_true(w.is_leaf)
    assert.is_false(d.requires_grad)
  end)

  it("differentiates with the values a tensor had before it was written in place", function()
    local x = t({ 0.5, -1 }):requires_grad_()
    local y = x:exp()
    y:add_(1)                                   -- exp saved y (its result)
    y:sum():backward()
    assert.are.same(ltc.tensor({ 0.5, -1 }, "float64"):exp():totable(), x.grad:totable())
    local s = t({ 2, 3 }):requires_grad_()
    local z = x * 1
    z:mul_(s)                                   -- mul saved z (its self)
    z[1] = 0                                    -- and a write through t[i] after that
    z:sum():backward()
    assert.are.same({ 0, -1 }, s.grad:totable())
  end)

  it("records t[i] of a matrix as select", function()
    local w = t({ { 1, 2 }, { 3, 4 } }):requires_grad_()
    local r = w[2]
    assert.are.equal("select", r.grad_fn.name)
    ;(r * r):sum():backward()
    assert.are.same({ { 0, 0 }, { 6, 8 } }, w.grad:totable())
    assert.are.equal(4, w:detach()[2][2])
  end)
end)
