-- Vectorized elementwise math gives the same value for equal inputs wherever they sit in a
-- tensor (the SIMD body and the tail of a loop must not use different exp/erf versions).
-- Found by the differential fuzzer: argmax of gelu(ones(9)) was 3, var of a constant was not 0.
local ltc = require "ltc"

local function all_equal(t)
  for i = 2, #t do
    if t[i] ~= t[1] then return false, i end
  end
  return true
end

describe("vectorized elementwise math", function()
  for _, op in ipairs { "exp", "log", "tanh", "sigmoid", "gelu", "silu", "sin", "cos", "expm1", "log1p" } do
    it(op .. " of a constant is constant at every position (lengths 1..70)", function()
      for n = 1, 70 do
        local ok, at = all_equal(ltc[op](ltc.full({ n }, 0.37)):totable())
        assert.is_true(ok, op .. " differs at position " .. tostring(at) .. " of " .. n)
      end
    end)
  end

  it("ties stay ties: argmax of gelu(ones(9)) is the first index", function()
    assert.equal(1, ltc.ones(9):gelu():argmax():item())
    local _, idx = ltc.ones(3, 9):exp():max(2)
    assert.same({ 1, 1, 1 }, idx:totable())
  end)

  it("a broadcast operand gives the same values as a full one", function()
    local a = ltc.full({ 5, 33 }, 0.25)
    local row = ltc.full({ 33 }, 0.25)
    assert.same((a:exp() + 0):totable(), (ltc.zeros(5, 33) + row:exp()):totable())
  end)
end)
