-- Wrong values and silent traps a new user hit, each checked against PyTorch 1.13/2.x
-- (values from /usr/bin/python3 torch, noted by each case): positional arguments of
-- scaled_dot_product_attention, keyword options of the reductions, dtype inference of
-- ltc.tensor, range checks of t[i] = v and uint8's negative fills.
local ltc = require "ltc"
local F = require("ltc.nn").functional

local err = dofile("spec/support/err.lua")

local function close(a, b, tol)
  assert.is_true((a - b):abs():max():item() < (tol or 1e-6))
end

describe("F.scaled_dot_product_attention positional arguments", function()
  ltc.manual_seed(3)
  local q, k, v = ltc.randn({ 2, 4, 3 }), ltc.randn({ 2, 4, 3 }), ltc.randn({ 2, 4, 3 })

  it("takes PyTorch's order: attn_mask, dropout_p, is_causal, scale", function()
    local causal = F.scaled_dot_product_attention(q, k, v, { is_causal = true })
    close(F.scaled_dot_product_attention(q, k, v, nil, 0.0, true), causal)
    -- is_causal changes the result (the first row sees only key 1: its output is v's row 1)
    assert.is_true((causal - F.scaled_dot_product_attention(q, k, v)):abs():max():item() > 1e-3)
    close(causal:select(2, 1), v:select(2, 1))
    local mask = ltc.tensor({ { true, true, false, false }, { true, true, true, true },
      { true, false, false, false }, { true, true, true, false } })
    close(F.scaled_dot_product_attention(q, k, v, mask),
      F.scaled_dot_product_attention(q, k, v, { attn_mask = mask }))
    close(F.scaled_dot_product_attention(q, k, v, nil, 0, false, 0.5),
      F.scaled_dot_product_attention(q, k, v, { scale = 0.5 }))
  end)

  it("raises for anything else, naming the op", function()
    assert.matches("scaled_dot_product_attention: argument #4 %(attn_mask%) must be a tensor or nil",
      err(function() F.scaled_dot_product_attention(q, k, v, 3, 0.0) end))
    assert.matches("argument #6 %(is_causal%) must be a boolean",
      err(function() F.scaled_dot_product_attention(q, k, v, nil, 0.0, 1) end))
    assert.matches("argument #5 %(dropout_p%) must be a number",
      err(function() F.scaled_dot_product_attention(q, k, v, nil, true) end))
    assert.matches("at most 7 arguments",
      err(function() F.scaled_dot_product_attention(q, k, v, nil, 0, true, 1, 1) end))
    assert.matches("scaled_dot_product_attention: options must be a table",
      err(function() F.scaled_dot_product_attention(q, k, v, true) end))
  end)
end)

describe("reductions with PyTorch's keyword options", function()
  local x = ltc.tensor({ { 1, 2, 3 }, { 4, 6, 8 } })

  it("take {dim = d, keepdim = b}", function()
    -- torch: x.sum(dim=0) = [5, 8, 11]; x.mean(dim=1, keepdim=True) = [[2], [6]]
    assert.are.same({ 5, 8, 11 }, x:sum({ dim = 1 }):totable())
    assert.are.same({ { 2 }, { 6 } }, x:mean({ dim = 2, keepdim = true }):totable())
    assert.are.same({ { 24 } }, x:sum({ dim = { 1, 2 }, keepdim = true }):totable())
    assert.are.same({ { 24 } }, x:sum({ keepdim = true }):totable())
    assert.are.same({ 4.5, 8, 12.5 }, x:var({ dim = 1 }):totable()) -- unbiased
    assert.are.same({ 1, 4 }, x:var({ dim = 2, unbiased = true }):totable())
    assert.are.same({ 2.25, 4, 6.25 }, x:var({ dim = 1, correction = 0 }):totable())
    assert.are.same({ { 1 }, { 2 } }, x:std({ dim = 2, keepdim = true }):totable())
    assert.are.same({ 4, 6, 8 }, x:amax({ dim = 1 }):totable())
    assert.are.same({ 1, 4 }, x:amin({ dim = 2 }):totable())
    -- torch: x.norm(2, dim=0) = [sqrt(17), sqrt(40), sqrt(73)]
    close(x:norm(2, { dim = 1 }), ltc.tensor({ math.sqrt(17), math.sqrt(40), math.sqrt(73) }), 1e-5)
    close(x:logsumexp({ dim = 2 }), x:logsumexp(2))
  end)

  it("keep an empty array as every dim", function()
    assert.are.same(24, x:sum({}):item())
    assert.are.same({ 5, 8, 11 }, x:sum({ 1 }):totable())
  end)

  it("raise for unknown keys, naming the op", function()
    assert.matches("sum: unknown option 'dims' %(known: dim, keepdim%)",
      err(function() x:sum({ dims = 1 }) end))
    assert.matches("mean: unknown option '1'", err(function() x:mean({ 1, keepdim = true }) end))
    assert.matches("var: give unbiased or correction, not both",
      err(function() x:var({ dim = 1, unbiased = true, correction = 1 }) end))
    assert.matches("amax: option dim must be an integer", err(function() x:amax({ dim = "a" }) end))
  end)
end)

describe("ltc.tensor dtype inference", function()
  it("gives bool only when every element is a boolean", function()
    -- torch.tensor([True, 0.5]) = [1.0, 0.5]; torch.tensor([False, 2]) = [0, 2]
    local a = ltc.tensor({ true, 0.5 })
    assert.are.equal("float32", a:dtype())
    assert.are.same({ 1, 0.5 }, a:totable())
    local b = ltc.tensor({ { false }, { 2 } })
    assert.are.equal("float32", b:dtype())
    assert.are.same({ { 0 }, { 2 } }, b:totable())
    assert.are.equal("bool", ltc.tensor({ { true, false }, { false, true } }):dtype())
  end)
end)

describe("t[i] = v range checks", function()
  it("raise when v does not fit the dtype, as PyTorch", function()
    -- torch: x = torch.zeros(2, dtype=torch.int8); x[0] = 200 raises
    local t = ltc.zeros(2, "int8")
    assert.matches("newindex: value 200 cannot be converted to int8 without overflow",
      err(function() t[1] = 200 end))
    local m = ltc.zeros({ 2, 2 }, "int8")
    assert.matches("newindex: value %-129 cannot be converted to int8",
      err(function() m[2] = -129 end))
    assert.matches("newindex: value 100000 cannot be converted to float16",
      err(function() ltc.zeros(2, "float16")[1] = 1e5 end))
    t[1] = 127
    assert.are.same({ 127, 0 }, t:totable())
  end)
end)

describe("uint8 takes negative integers down to -255, as PyTorch", function()
  local mask = ltc.tensor({ true, false })
  it("wraps -1 to 255 in fill_, full, masked_fill, t[i] = v and ltc.tensor", function()
    -- torch 1.13: fill_(-1), full((2,), -1, dtype=uint8), masked_fill(mask, -1) give 255
    assert.are.same({ 255, 255 }, ltc.zeros(2, "uint8"):fill_(-1):totable())
    assert.are.same({ 1, 1 }, ltc.zeros(2, "uint8"):fill_(-255):totable())
    assert.are.same({ 255, 255 }, ltc.full({ 2 }, -1, "uint8"):totable())
    assert.are.same({ 255, 0 }, ltc.zeros(2, "uint8"):masked_fill(mask, -1):totable())
    local u = ltc.zeros(2, "uint8")
    u[1] = -1
    assert.are.same({ 255, 0 }, u:totable())
    assert.are.same({ 255 }, ltc.tensor({ -1 }, "uint8"):totable())
  end)

  it("raises below -255, and for negative floats, naming the op", function()
    assert.matches("fill_: value %-256 cannot be converted to uint8",
      err(function() ltc.zeros(2, "uint8"):fill_(-256) end))
    assert.matches("fill_: value %-1 cannot be converted to uint8", -- torch: fill_(-1.0) raises
      err(function() ltc.zeros(2, "uint8"):fill_(-1.0) end))
    assert.matches("masked_fill: value %-256 cannot be converted to uint8",
      err(function() ltc.zeros(2, "uint8"):masked_fill(mask, -256) end))
    assert.matches("masked_fill: value 200 cannot be converted to int8",
      err(function() ltc.zeros(2, "int8"):masked_fill(mask, 200) end))
    assert.matches("cannot be converted to uint8",
      err(function() return ltc.full({ 2 }, -256, "uint8"):totable() end))
  end)
end)

describe("cat and stack of mixed dtypes", function()
  it("promote to the operands' result_type, as PyTorch", function()
    -- torch.cat([uint8 [1, 255], int8 [-1, 2]]) is int16 [1, 255, -1, 2]
    local c = ltc.cat({ ltc.tensor({ 1, 255 }, "uint8"), ltc.tensor({ -1, 2 }, "int8") })
    assert.are.equal("int16", c:dtype())
    assert.are.same({ 1, 255, -1, 2 }, c:totable())
    assert.are.equal("float64", ltc.cat({ ltc.ones(2), ltc.ones(2, "float64") }):dtype())
    -- torch.stack([int32, float32]) is float32; stack([bool, int64]) int64
    local s = ltc.stack({ ltc.tensor({ 3, 4 }, "int32"), ltc.tensor({ 0.5, 1 }) })
    assert.are.equal("float32", s:dtype())
    assert.are.same({ { 3, 4 }, { 0.5, 1 } }, s:totable())
    assert.are.equal("int64", ltc.stack({ ltc.tensor({ true }), ltc.tensor({ 7 }, "int64") }):dtype())
  end)

  it("give gradients of each operand's own dtype", function()
    local a, b = ltc.ones(2):requires_grad_(), ltc.ones(3, "float64"):requires_grad_()
    ltc.cat({ a, b }):mul(2):sum():backward()
    assert.are.equal("float32", a.grad:dtype())
    assert.are.equal("float64", b.grad:dtype())
    assert.are.same({ 2, 2 }, a.grad:totable())
  end)

  it("still raise for mismatched sizes", function()
    assert.matches("cat: tensor 2 has size %[3%], tensor 1 %[2,2%]",
      err(function() ltc.cat({ ltc.ones({ 2, 2 }), ltc.ones(3, "float64") }) end))
  end)
end)

describe("printing small and spread values", function()
  local function body(t) return (tostring(t):gsub("\n%[.*$", "")) end
  it("switches to scientific notation by PyTorch's rule", function()
    -- torch: tensor([1.0000e-05, 1.0000e+00]); tensor([0.0010, 1.0000]);
    -- tensor([1.0000e+00, 1.0010e+03]); tensor([0.0000e+00, 1.0000e-05]); tensor([123456.5000])
    assert.are.equal(" 1.0000e-05\n 1.0000e+00", body(ltc.tensor({ 1e-5, 1 })))
    assert.are.equal(" 0.0010\n 1.0000", body(ltc.tensor({ 0.001, 1 })))
    assert.are.equal(" 1.0000e+00\n 1.0010e+03", body(ltc.tensor({ 1, 1001 })))
    assert.are.equal(" 0.0000e+00\n 1.0000e-05", body(ltc.tensor({ 0, 1e-5 })))
    assert.are.equal(" 123456.5000", body(ltc.tensor({ 123456.5 }, "float64")))
    assert.are.equal("    1\n 1000", body(ltc.tensor({ 1, 1000 })))
    assert.are.equal(" 1.0000e+09", body(ltc.tensor({ 1e9 })))
  end)
end)

describe("element reads t[{i, j}]", function()
  it("compile nothing per element on a tensor that has data", function()
    local x = ltc.arange(0, 40):reshape({ 5, 8 }) * 1
    ltc.sync()
    local n0 = ltc.metrics.counter("UncachedCompile")
    local ok = true
    for i = 1, 5 do
      for j = 1, 8 do ok = ok and x[{ i, j }] == (i - 1) * 8 + j - 1 end
    end
    assert.is_true(ok)
    assert.are.equal(39, x[{ -1, -1 }])
    assert.are.equal(n0, ltc.metrics.counter("UncachedCompile"))
  end)

  it("read views and pending tensors right, and writes through views", function()
    local x = ltc.arange(0, 12):reshape({ 3, 4 }) * 1
    local m = x:t()
    for i = 1, 4 do
      for j = 1, 3 do assert.are.equal((j - 1) * 4 + i - 1, m[{ i, j }]) end
    end
    x[{ 1, 1 }] = 100
    assert.are.equal(100, m[{ 1, 1 }])
    assert.are.equal(6, x:narrow(2, 2, 2)[{ 2, 2 }])
    assert.are.equal(101, (x + 1)[{ 1, 1 }])
    assert.is_false(ltc.tensor({ { true, false } })[{ 1, 2 }])
    assert.matches("index: index 4 out of range for dim 1 of size 3", err(function() return x[{ 4, 1 }] end))
  end)
end)

describe("booleans as fill values, and clamp's integer bounds", function()
  it("fill and assign booleans, as PyTorch", function()
    -- torch: x = ones(3, bool); x.fill_(False); x[0] = True -> [True, False, False]
    local b = ltc.ones(3, "bool")
    b:fill_(false)
    b[1] = true
    b[{ 3 }] = true
    assert.are.same({ true, false, true }, b:totable())
    local m = ltc.ones({ 2, 2 }, "bool")
    m[1] = false
    assert.are.same({ { false, false }, { true, true } }, m:totable())
    assert.are.same({ 1, 1 }, ltc.zeros(2):fill_(true):totable()) -- fill_(True) on float: 1.0
  end)

  it("raise for an integer bound the dtype cannot hold, as PyTorch", function()
    -- torch.zeros(2, dtype=torch.int8).clamp(-200, 50) raises; clamp(-100, 50) is [0, 0]
    assert.matches("clamp: value %-200 cannot be converted to int8 without overflow",
      err(function() return ltc.zeros(2, "int8"):clamp(-200, 50) end))
    assert.matches("clamp: value 300 cannot be converted to uint8",
      err(function() return ltc.zeros(2, "uint8"):clamp(0, 300) end))
    assert.are.same({ 0, 0 }, ltc.zeros(2, "int8"):clamp(-100, 50):totable())
    -- torch.zeros(2, dtype=torch.uint8).clamp(-1, 50) is [50, 50]: -1 is 255
    assert.are.same({ 50, 50 }, ltc.zeros(2, "uint8"):clamp(-1, 50):totable())
    assert.are.same({ 0, 0 }, ltc.zeros(2, "int32"):clamp(-200, 50):totable())
  end)
end)

describe("clamp of a narrow float tensor with float bounds", function()
  it("keeps the dtype, as PyTorch's result_type (bfloat16 with 0.5 is bfloat16)", function()
    assert.are.equal("bfloat16", ltc.zeros(2, "bfloat16"):clamp(0.5):dtype())
    assert.are.same({ 0.5, 0.5 }, ltc.zeros(2, "bfloat16"):clamp(0.5):totable())
    assert.are.equal("float16", ltc.zeros(2, "float16"):clamp(nil, -0.5):dtype())
  end)
end)
