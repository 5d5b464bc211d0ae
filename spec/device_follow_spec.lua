-- Tensors off the default device: the autograd engine's seed and zero fills, .grad, the
-- *_like functions and the Lua library's helper tensors (masks, index ranges, random draws,
-- RNN states, optimizer state) are made on the input's device, as in PyTorch. Each case runs
-- on cpu:0 and on ref:0 (and opencl:0 where PoCL is installed), with the same seed: the
-- values must equal the cpu ones and every result must be on the input's device.
local ltc = require "ltc"
local close = dofile("spec/support/close.lua")

-- case(dev) returns a list of tensors; each must be on dev and equal the cpu result
local cases = {}
local function case(name, fn) cases[#cases + 1] = { name = name, fn = fn } end

local function data(dev, ...) return ltc.tensor(...):to(dev) end
local function r234(dev)
  return data(dev, { { { 1, -2, 3, -4 }, { 0.5, 6, -7, 8 }, { 9, -1, 2, 0 } },
                     { { -3, 4, 1, 2 }, { 5, -6, 0, 7 }, { -8, 3, 2, 1 } } })
end

case("backward of x * x (the seed)", function(dev)
  local x = ltc.tensor({ 1, 2 }, { device = dev }):requires_grad_()
  ;(x * x):sum():backward()
  return { x.grad }
end)
case(".grad of a moved leaf (x * 3)", function(dev)
  local z = ltc.tensor({ 1, 2 }):to(dev):requires_grad_()
  ;(z * 3):sum():backward()
  return { z.grad }
end)
case("backward of a non-scalar with a gradient, a sum over broadcast", function(dev)
  local a = data(dev, { { 1, 2, 3 } }):requires_grad_()
  local b = data(dev, { { 1 }, { 2 } }):requires_grad_()
  local y = a * b + 1
  y:backward(ltc.ones_like(y))
  return { a.grad, b.grad }
end)
case("ltc.autograd.grad", function(dev)
  local x = data(dev, { 1, 2, 3 }):requires_grad_()
  local gx = ltc.autograd.grad((x:exp() * x):sum(), { x })
  return { gx }
end)
case("an unused output's gradient (zeros), max with indices", function(dev)
  local x = data(dev, { { 1, 5, 2 }, { 7, 3, 4 } }):requires_grad_()
  local v = x:max(2)
  v:sum():backward()
  return { x.grad }
end)
case("cross_entropy backward through Linear", function(dev)
  ltc.manual_seed(1)
  local m = ltc.nn.Linear(3, 2)
  m:to(dev)
  local x = ltc.tensor({ { 1, 2, 3 }, { -1, 0, 1 }, { 2, 2, 2 }, { 0, 1, 0 } }):to(dev)
  ltc.nn.functional.cross_entropy(m(x), ltc.tensor({ 1, 2, 1, 2 }, "int64"):to(dev)):backward()
  return { m.weight.grad, m.bias.grad }
end)
case("zeros_like, ones_like, full_like, empty_like (size)", function(dev)
  local r = r234(dev)
  return { ltc.zeros_like(r), ltc.ones_like(r), ltc.full_like(r, 2.5), ltc.empty_like(r):zero_() }
end)
case("rand_like, randn_like (same seed)", function(dev)
  local r = r234(dev)
  ltc.manual_seed(7)
  return { ltc.rand_like(r), ltc.randn_like(r) }
end)
case("dropout", function(dev)
  ltc.manual_seed(3)
  return { ltc.nn.functional.dropout(r234(dev), 0.5) }
end)
case("scaled_dot_product_attention, causal", function(dev)
  local r = r234(dev) / 4
  return { ltc.nn.functional.scaled_dot_product_attention(r, r, r, { is_causal = true }) }
end)
case("nonzero", function(dev) return { r234(dev):gt(0):nonzero() } end)
case("unique", function(dev) return { ltc.unique(r234(dev)) } end)
case("LSTM", function(dev)
  ltc.manual_seed(2)
  local l = ltc.nn.LSTM(4, 5)
  l:to(dev)
  local out, hc = l(r234(dev) / 8)
  return { out, hc[1], hc[2] }
end)
case("GRU and its backward", function(dev)
  ltc.manual_seed(4)
  local g = ltc.nn.GRU(4, 3)
  g:to(dev)
  local out = g(r234(dev) / 8)
  out:sum():backward()
  return { out, g.weight_ih_l0.grad }
end)
case("einsum, var, std", function(dev)
  local r = r234(dev)
  return { ltc.einsum("bij,bkj->bik", r, r), r:var(2), r:std() }
end)
case("masked_select, masked_fill_, where with a number", function(dev)
  local r = r234(dev)
  local w = r:clone()
  w:masked_fill_(w:lt(0), 0)
  return { r:masked_select(r:gt(2)), w, ltc.where(r:gt(0), r, 0) }
end)
case("one_hot, embedding", function(dev)
  ltc.manual_seed(5)
  local e = ltc.nn.Embedding(5, 3)
  e:to(dev)
  local idx = ltc.tensor({ 1, 3, 5 }, "int64"):to(dev)
  return { ltc.nn.functional.one_hot(idx, 5), e(idx) }
end)
case("BatchNorm1d in training, and an Adam step", function(dev)
  ltc.manual_seed(6)
  local bn = ltc.nn.BatchNorm1d(4)
  bn:to(dev)
  local x = r234(dev)[1]
  local opt = ltc.optim.Adam(bn:parameters(), { lr = 0.1 })
  bn(x):pow(2):sum():backward()
  opt:step()
  return { bn.weight, bn.bias, bn.running_mean }
end)
case("SGD with momentum and clip_grad_norm_", function(dev)
  local w = data(dev, { 1, -2, 3 }):requires_grad_()
  local opt = ltc.optim.SGD({ w }, { lr = 0.1, momentum = 0.9 })
  for _ = 1, 2 do
    opt:zero_grad()
    ;(w * w):sum():backward()
    ltc.nn.utils.clip_grad_norm_({ w }, 1.0)
    opt:step()
  end
  return { w }
end)
case("NAdam, Adagrad and RMSprop with momentum (state made at the first step)", function(dev)
  local out = {}
  for _, make in ipairs { function(ps) return ltc.optim.NAdam(ps, { lr = 0.1 }) end,
                          function(ps) return ltc.optim.Adagrad(ps, { lr = 0.1, initial_accumulator_value = 0.5 }) end,
                          function(ps) return ltc.optim.RMSprop(ps, { lr = 0.1, momentum = 0.5 }) end } do
    local w = data(dev, { 1, -2, 3 }):requires_grad_()
    local opt = make({ w })
    for _ = 1, 2 do
      opt:zero_grad()
      ;(w * w * w):sum():backward()
      opt:step()
    end
    out[#out + 1] = w
  end
  return out
end)
case("a DataLoader over tensors on the device", function(dev)
  local x = data(dev, { { 1, 2 }, { 3, 4 }, { 5, 6 } })
  local y = data(dev, { 10, 20, 30 })
  local loader = ltc.data.DataLoader({ x, y }, { batch_size = 2, shuffle = true, seed = 3 })
  local out = {}
  for _, bx, by in loader:batches() do out[#out + 1] = bx; out[#out + 1] = by end
  return out
end)case("ltc.jit of a function on tensors of the device (runs untraced there)", function(dev)
  local f = ltc.jit(function(a, b) return (a * b):relu() + ltc.zeros_like(a) end)
  local a, out = r234(dev), {}
  for i = 1, 4 do out[i] = f(a, a - i) end
  return out
end)
case("Conv2d, MultiheadAttention and TransformerEncoderLayer with masks, and backward", function(dev)
  ltc.manual_seed(9)
  local conv = ltc.nn.Conv2d(2, 3, 3)
  local mha = ltc.nn.MultiheadAttention(4, 2)
  local enc = ltc.nn.TransformerEncoderLayer(4, 2, { dim_feedforward = 8, dropout = 0.1 })
  conv:to(dev); mha:to(dev); enc:to(dev)
  local img = ltc.tensor({ { { { 1, 2, 0, 1 }, { 0, 1, 3, 1 }, { 2, 1, 0, 0 }, { 1, 1, 1, 2 } },
                            { { 0, 1, 1, 0 }, { 2, 0, 1, 3 }, { 1, 2, 2, 1 }, { 0, 0, 1, 1 } } } }):to(dev)
  local r = r234(dev) / 8
  local pad = ltc.tensor({ { false, false }, { false, true }, { true, false } }):to(dev) -- [N=3, S=2]
  local a = mha(r, r, r, { need_weights = false, is_causal = true })
  local e = enc(r, { src_key_padding_mask = pad })
  ;(a:sum() + e:sum() + conv(img):sum()):backward()
  return { conv(img), a, e, conv.weight.grad, mha.in_proj_weight.grad, enc.linear1.weight.grad }
end)

local function run_on(dev)
  for _, c in ipairs(cases) do
    it(c.name, function()
      local want = c.fn("cpu")
      local got = c.fn(dev)
      assert.are.equal(#want, #got)
      for i = 1, #want do
        assert.are.equal(dev .. ":0", got[i]:device(), c.name .. ": result " .. i)
        assert.are.same(want[i]:size(), got[i]:size())
        close(want[i]:totable(), got[i]:totable(), 1e-5, c.name .. " [" .. i .. "]")
      end
    end)
  end
end

describe("tensors follow their input's device on ref:0", function()
  run_on("ref")
  it("a Lua number operand follows the tensor", function()
    local x = ltc.tensor({ 1, 2 }, { device = "ref" })
    assert.are.equal("ref:0", (x * 3):device())
    assert.are.equal("ref:0", (2 - x):device())
    assert.are.equal("ref:0", x:clamp(0, 1.5):device())
  end)
  it("the device guard is restored after a call, also after an error", function()
    local x = ltc.tensor({ 1, 2 }, { device = "ref" })
    ltc.zeros_like(x)
    assert.are.equal("cpu:0", ltc.zeros(2):device())
    assert.has_error(function() ltc.nn.functional.dropout(x, 2) end)
    assert.are.equal("cpu:0", ltc.zeros(2):device())
    assert.has_error(function() x:mul(ltc.zeros(2)) end,
      nil) -- an op on two devices is still an error naming both
    local ok, err = pcall(function() return x + ltc.zeros(2) end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("expected all tensors on one device, found", 1, true))
  end)
  it("a call follows its first tensor argument wherever it stands (a list's first as the first or second)", function()
    local x = ltc.tensor({ 1, 2 }, { device = "ref" })
    local make = require("ltc.follow").follow(function() return ltc.zeros(2) end)
    assert.are.equal("ref:0", make(1, 2, 3, x):device())
    assert.are.equal("ref:0", make(nil, "a", nil, nil, x):device())
    assert.are.equal("ref:0", make(1, { x }):device())
    assert.are.equal("cpu:0", make(ltc.zeros(1), 2, 3, x):device()) -- the first one counts
    assert.are.equal("cpu:0", make(1, 2, 3, 4, 5):device())
    assert.are.equal("cpu:0", make():device())
    assert.are.equal("cpu:0", ltc.zeros(2):device())
  end)
  it("ltc.help still finds a wrapped function's doc comment", function()
    assert.truthy(ltc.doc(ltc.nn.functional.dropout):find("zeroes each element", 1, true))
  end)
end)

local ok_mod, ocl = pcall(require, "ltc.opencl")
local avail, why = false, nil
if ok_mod then avail, why = ocl.available() else why = ocl end
if not avail then
  describe("tensors follow their input's device on opencl:0", function()
    pending("skipped: " .. tostring(why):gsub("\n.*", ""))
  end)
  return
end
ocl.open()
describe("tensors follow their input's device on opencl:0", function()
  run_on("opencl")
end)
