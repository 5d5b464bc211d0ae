-- A fill value the dtype cannot hold raises at the call, as PyTorch 1.13 does
-- (torch.full((2,), 1e300, dtype=torch.int64), torch.full((2,), 2**31, dtype=torch.int32),
-- torch.full((2,), 1e300), torch.full_like(int32_tensor, 2**40) and
-- torch.zeros(2, dtype=torch.int32).fill_(2**40) raise "value cannot be converted to type
-- ... without overflow"); before, ltc.full raised only at the sync and fill_ not at all.
local ltc = require "ltc"

local function raised_here(f, pattern)
  local ok, msg = pcall(f)
  assert.is_false(ok)
  assert.truthy(msg:find("^[^\n]*creation_value_spec%.lua:%d+: " .. pattern), msg)
end

describe("a fill value out of the dtype's range", function()
  it("raises at the call of full and full_like", function()
    raised_here(function() local _ = ltc.full({ 2 }, 1e300, "int64") end,
      "full: value 1e%+300 cannot be converted to int64 without overflow")
    raised_here(function() local _ = ltc.full({ 2 }, 2 ^ 31, "int32") end,
      "full: value 2147483648 cannot be converted to int32")
    raised_here(function() local _ = ltc.full({ 2 }, 1e300) end,
      "full: value 1e%+300 cannot be converted to float32")
    raised_here(function() local _ = ltc.full_like(ltc.ones(2, "int32"), 2 ^ 40) end,
      "full: value 1099511627776 cannot be converted to int32")
  end)

  it("raises at the call of fill_", function()
    raised_here(function() local _ = ltc.zeros(2, "int32"):fill_(2 ^ 40) end,
      "fill_: value 1099511627776 cannot be converted to int32")
  end)

  it("is taken when it fits", function()
    assert.are.same({ -2147483648, -2147483648 }, ltc.full({ 2 }, -2 ^ 31, "int32"):totable())
    assert.are.same({ 1e300 }, ltc.full({ 1 }, 1e300, "float64"):totable())
    assert.are.same({ 5, 5 }, ltc.zeros(2, "int64"):fill_(5):totable())
  end)
end)

-- torch.tensor([5]).clamp(1e30) is tensor([1.0000e+30]) and clamp(2.5) tensor([5.]) (float
-- bounds promote, as any float scalar does); clamp(2) stays int64; clamp_(2.5) of an int64
-- tensor raises ("result type Float can't be cast to the desired output type Long").
describe("clamp of an integer tensor", function()
  it("with a float bound is float32, as PyTorch promotes (no out-of-range conversion)", function()
    local r = ltc.tensor({ 5 }, "int64"):clamp(1e30)
    assert.are.equal("float32", r:dtype())
    assert.is_true(math.abs(r:item() - 1e30) < 1e23) -- 1e30 in float32
    assert.are.same({ 5 }, ltc.tensor({ 5 }, "int64"):clamp(2.5):totable())
    assert.are.same({ 2.5 }, ltc.tensor({ 5 }, "int64"):clamp(nil, 2.5):totable())
  end)

  it("with integer bounds keeps its dtype", function()
    local r = ltc.tensor({ 5, -7 }, "int32"):clamp(-3, 2)
    assert.are.equal("int32", r:dtype())
    assert.are.same({ 2, -3 }, r:totable())
  end)

  it("in place with a float bound raises naming clamp_", function()
    raised_here(function() ltc.tensor({ 5 }, "int64"):clamp_(2.5) end,
      "clamp_: result type float32 can't be cast to the tensor's dtype int64 in place")
  end)
end)
