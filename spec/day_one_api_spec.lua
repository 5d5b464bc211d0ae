-- The everyday API of PyTorch's day one: keyword tables for every op of ops.yaml, the default
-- dtype, inference mode, small composites, clip_grad_norm_'s inf norm, Ellipsis indexing.
-- Expected values from PyTorch 2 (torch on /usr/bin/python3; each block says the call that
-- gave them) or by hand.
local ltc = require "ltc"
local core = require "ltc.core"
local err = dofile("spec/support/err.lua")

local function x23() return ltc.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }) end

describe("keyword tables for generated ops", function()
  it("put keywords in the schema's places (dims 1-based)", function()
    local x = x23()
    -- x.sum(dim=1, keepdim=True) -> [[6.0], [15.0]]
    assert.same({ { 6 }, { 15 } }, x:sum{ dim = 2, keepdim = true }:totable())
    assert.same({ { 6 }, { 15 } }, ltc.sum(x, { dim = 2, keepdim = true }):totable())
    -- x.transpose(dim0=0, dim1=1)
    assert.same({ { 1, 4 }, { 2, 5 }, { 3, 6 } }, x:transpose{ dim0 = 1, dim1 = 2 }:totable())
    -- x.narrow(dim=1, start=1, length=1) (start 1-based here)
    assert.same({ { 2 }, { 5 } }, x:narrow{ dim = 2, start = 2, length = 1 }:totable())
    -- x.clamp(max=2.5)
    assert.same({ { 1, 2, 2.5 }, { 2.5, 2.5, 2.5 } }, x:clamp{ max = 2.5 }:totable())
    assert.same({ { 2, 2, 3 }, { 3, 3, 3 } }, x:clamp(2, { max = 3 }):totable())
  end)

  it("take positional values in the table's array part (ltc.cat{{a, b}, dim = 2})", function()
    local x = x23()
    -- torch.cat([x, x], dim=1): size [2, 6], first row [1, 2, 3, 1, 2, 3]
    local c = ltc.cat{ { x, x }, dim = 2 }
    assert.same({ 2, 6 }, c:size())
    assert.same({ 1, 2, 3, 1, 2, 3 }, c[1]:totable())
    assert.same({ 2, 6 }, ltc.cat({ x, x }, { dim = 2 }):size())
    assert.same({ 4, 3 }, ltc.stack{ { x, x }, dim = 1 }:reshape(4, 3):size())
  end)

  it("reach ops that Lua functions replaced, and their in-place forms", function()
    local x = x23()
    -- x.softmax(dim=0)[0] -> 0.04742587357759476 each
    local s = x:softmax{ dim = 1 }[1]:totable()
    for i = 1, 3 do assert.is_true(math.abs(s[i] - 0.04742587357759476) < 1e-6) end
    local y = x23()
    y:clamp_{ min = 3 }
    assert.same({ { 3, 3, 3 }, { 4, 5, 6 } }, y:totable())
  end)

  it("come from the generator: core._keywords lists each overload's argument names", function()
    assert.same({ "self", "dim", "keepdim" }, { table.unpack(core._keywords.sum[1]) })
    assert.equal(1, core._keywords.sum[1].n_required)
    assert.same({ "tensors", "dim" }, { table.unpack(core._keywords.cat[1]) })
  end)

  it("raise an error naming the op and an unknown key", function()
    local x = x23()
    assert.matches("abs: unknown keyword argument 'foo'", err(function() return x:abs{ foo = 1 } end))
    assert.matches("cat: unknown keyword argument 'axis' %(expected dim%)",
      err(function() return ltc.cat{ { x, x }, axis = 2 } end))
    assert.matches("transpose: unknown keyword argument 'dim3'",
      err(function() return x:transpose{ dim3 = 1 } end))
    assert.matches("narrow: argument 'dim' given by position and by keyword",
      err(function() return x:narrow(1, { dim = 1, start = 1, length = 1 }) end))
  end)

  it("leave the creation functions' options and div's rounding_mode as they were", function()
    assert.equal("int64", ltc.zeros(2, { dtype = "int64" }):dtype())
    local q = ltc.tensor({ -7, 7 }, "int32"):div(2, { rounding_mode = "floor" })
    assert.same({ -4, 3 }, q:totable())
  end)
end)

describe("the default dtype", function()
  after_each(function() ltc.set_default_dtype("float32") end)

  it("is float32 and can be float64, float16 or bfloat16", function()
    assert.equal("float32", ltc.get_default_dtype())
    for _, d in ipairs { "float64", "float16", "bfloat16", "float32" } do
      ltc.set_default_dtype(d)
      assert.equal(d, ltc.get_default_dtype())
    end
    ltc.set_default_dtype(ltc.double)
    assert.equal("float64", ltc.get_default_dtype())
  end)

  it("refuses other dtypes, naming set_default_dtype", function()
    assert.matches("set_default_dtype: the default dtype must be a floating dtype",
      err(function() ltc.set_default_dtype("int64") end))
    assert.matches("set_default_dtype: unknown dtype 'foo'", err(function() ltc.set_default_dtype("foo") end))
    assert.equal("float32", ltc.get_default_dtype())
  end)

  it("is the dtype of tensors of numbers, creation functions and float promotion", function()
    ltc.set_default_dtype("float64")
    -- with torch.set_default_dtype(torch.float64): tensor([1.5]), zeros(2), arange(0.5, 2),
    -- int32 * 2.5 and int32.sqrt() are float64; arange(3) int64; float32 * 2.5 float32
    assert.equal("float64", ltc.tensor({ 1.5 }):dtype())
    assert.equal("float64", ltc.tensor(2):dtype())
    for _, t in ipairs { ltc.zeros(2), ltc.ones(2), ltc.full({ 2 }, 1), ltc.rand(2), ltc.randn(2),
                         ltc.arange(0.5, 2), ltc.linspace(0, 1, 3), ltc.eye(2) } do
      assert.equal("float64", t:dtype())
    end
    assert.equal("int64", ltc.arange(3):dtype())
    local i = ltc.tensor({ 1, 2 }, "int32")
    assert.equal("float64", (i * 2.5):dtype())
    assert.equal("float64", i:sqrt():dtype())
    assert.equal("float32", (ltc.ones(2, "float32") * 2.5):dtype())
    -- float64 keeps what float32 rounds: 0.1 + 0.2 ~= 0.3 exactly as in double arithmetic
    assert.equal(0.1 + 0.2, (ltc.tensor({ 0.1 }) + 0.2)[1])
  end)
end)

describe("inference mode", function()
  it("turns recording off inside fn and restores it after", function()
    local w = ltc.ones(2):requires_grad_()
    assert.is_false(ltc.is_inference_mode_enabled())
    local inside, grad, y = ltc.inference_mode(function(a)
      return ltc.is_inference_mode_enabled(), ltc.is_grad_enabled(), w * a
    end, 2)
    assert.same({ true, false, false }, { inside, grad, y.requires_grad })
    assert.same({ false, true }, { ltc.is_inference_mode_enabled(), ltc.is_grad_enabled() })
    assert.same({ 2, 2 }, y:totable())
  end)

  it("restores the modes when fn raises", function()
    assert.matches("boom", err(function() ltc.inference_mode(function() error("boom") end) end))
    assert.same({ false, true }, { ltc.is_inference_mode_enabled(), ltc.is_grad_enabled() })
  end)

  it("holds for a block as a to-be-closed guard, and inference_mode(false, fn) leaves it", function()
    local w = ltc.ones(2):requires_grad_()
    do
      local _ <close> = ltc.inference_mode()
      assert.is_true(ltc.is_inference_mode_enabled())
      assert.is_false((w * 2).requires_grad)
      local inf, rg = ltc.inference_mode(false, function()
        return ltc.is_inference_mode_enabled(), (w * 2).requires_grad
      end)
      assert.same({ false, true }, { inf, rg })
      assert.is_true(ltc.is_inference_mode_enabled())
    end
    assert.same({ false, true }, { ltc.is_inference_mode_enabled(), ltc.is_grad_enabled() })
    do
      local _ <close> = ltc.no_grad()
      assert.is_false(ltc.is_grad_enabled())
    end
    assert.is_true(ltc.is_grad_enabled())
  end)

  it("names inference_mode when fn is not a function", function()
    assert.matches("inference_mode: bad argument #1 %(a function expected, got number%)",
      err(function() ltc.inference_mode(3) end))
  end)
end)
