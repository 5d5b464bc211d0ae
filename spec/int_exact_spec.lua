-- int64 values past 2^53 keep every bit through clamp, and a float argument given a Lua
-- integer with no exact double raises instead of being rounded (a break-it finding: clamp
-- compared and selected int64 elements through a double, so 2^53 + 1 came back as 2^53 even
-- with bounds of 0; arange(2^53 + 1, 2^53 + 4) had 4 elements). Expected values by hand
-- (2^53 + 2 and 2^53 + 4 are exact doubles, 2^53 + 1 and 2^53 + 3 are not).
local ltc = require "ltc"

local B = 1 << 53
local I = function(v, dt) return ltc.tensor(v, dt or "int64") end

for _, backend in ipairs({ "cpu", "ref" }) do
  describe("int64 clamp past 2^53 on the " .. backend .. " backend", function()
    setup(function() ltc.set_backend(backend) end)
    teardown(function() ltc.set_backend("cpu") end)

    it("keeps elements that lie inside the bounds bit for bit", function()
      assert.are.same({ B + 1, B + 3, 0, 7 }, I({ B + 1, B + 3, -5, 7 }):clamp(0):totable())
      assert.are.same({ B + 1, B + 3 }, I({ B + 1, B + 3 }):clamp(0, 1 << 62):totable())
      assert.are.same({ B + 1, 3 }, I({ B + 1, 3 }):clamp(nil, B + 2):totable())
      assert.are.same({ math.maxinteger, math.mininteger },
        I({ math.maxinteger, math.mininteger }):clamp(math.mininteger):totable())
    end)

    it("compares with exact bounds past 2^53 as integers", function()
      -- through doubles, B + 3 rounds to B + 4 and stays below the bound B + 4 unseen
      assert.are.same({ B + 4, B + 4, B + 5 }, I({ B + 1, B + 3, B + 5 }):clamp(B + 4):totable())
      assert.are.same({ B + 3, B + 4 }, I({ B + 3, B + 5 }):clamp(nil, B + 4):totable())
      assert.are.same({ B + 2, B + 4 }, I({ B + 1, B + 5 }):clamp(B + 2, B + 4):totable())
    end)

    it("gives max everywhere when min > max, in int32 and int64", function()
      assert.are.same({ 2, 2, 2 }, I({ 1, 5, 9 }, "int32"):clamp(6, 2):totable())
      assert.are.same({ 2, 5, 6 }, I({ 1, 5, 9 }, "int32"):clamp(2, 6):totable())
      assert.are.same({ B + 2, B + 2 }, I({ 1, B + 5 }):clamp(B + 4, B + 2):totable())
    end)

    it("clamps in place with the same rule", function()
      local t = I({ B + 1, -3 })
      t:clamp_(0)
      assert.are.same({ B + 1, 0 }, t:totable())
    end)
  end)
end

describe("a float argument given an integer past 2^53", function()
  it("raises naming the op, the argument and the integer", function()
    local ok, err = pcall(function() return I({ 1 }):clamp(B + 1) end)
    assert.is_false(ok)
    assert.matches("clamp: argument #2: the integer 9007199254740993 has no exact float64 value",
      tostring(err), 1, true)
    ok, err = pcall(ltc.arange, B + 1, B + 4)
    assert.is_false(ok)
    assert.matches("arange: argument #1: the integer 9007199254740993", tostring(err), 1, true)
  end)

  it("accepts integers that are exact doubles, and leaves the runtime usable", function()
    assert.are.same({ B + 2 }, I({ 1 }):clamp(B + 2):totable())
    assert.are.same({ 0, 1, 2 }, ltc.arange(3):totable())
    assert.are.same({ 1, 4 }, I({ -1, 4 }):clamp(1):totable())
  end)
end)

for _, backend in ipairs({ "cpu", "ref" }) do
  describe("int64 arange past 2^53 on the " .. backend .. " backend", function()
    setup(function() ltc.set_backend(backend) end)
    teardown(function() ltc.set_backend("cpu") end)

    it("counts in integers when start and step are integers", function()
      -- through the double, B + 2 + 1 rounds to B + 4 (ties to even)
      assert.are.same({ B + 2, B + 3 }, ltc.arange(B + 2, B + 4, 1, "int64"):totable())
      assert.are.same({ B + 4, B + 3 }, ltc.arange(B + 4, B + 2, -1, "int64"):totable())
      -- PyTorch: torch.arange(0.5, 3, dtype=torch.int64) is [0, 1, 2]
      assert.are.same({ 0, 1, 2 }, ltc.arange(0.5, 3, 1, "int64"):totable())
      assert.are.same({ 2147483646, 2147483647 },
        ltc.arange(2147483646, 2147483648, 1, "int32"):totable())
    end)
  end)
end

-- div with rounding_mode: integers in one exact op (div_trunc) whose division by zero names div
-- and the rounding_mode, not floor_divide; bool operands raise as in PyTorch ("div_trunc_cpu" not implemented
-- for 'Bool'); expected quotients by hand (C's truncating division).
for _, backend in ipairs({ "cpu", "ref" }) do
  describe("div with rounding_mode on the " .. backend .. " backend", function()
    setup(function() ltc.set_backend(backend) end)
    teardown(function() ltc.set_backend("cpu") end)

    it("truncates integer quotients exactly, the most negative integer / -1 wrapping", function()
      local q = I({ 7, -7, 7, -7, math.mininteger, B + 3 })
        :div(I({ 2, 2, -2, -2, -1, 3 }), { rounding_mode = "trunc" })
      assert.are.equal("int64", q:dtype())
      assert.are.same({ 3, -3, -3, 3, math.mininteger, 3002399751580331 }, q:totable())
      assert.are.same({ 3, -3 }, I({ 7, -7 }, "int32"):div(2, { rounding_mode = "trunc" }):totable())
      assert.are.same({ 3, -3 }, ltc.tensor({ 7.5, -7.5 }):div(2, { rounding_mode = "trunc" }):totable())
    end)

    it("raises an integer division by zero naming div and its rounding_mode, and recovers", function()
      local ok, err = pcall(function()
        return I({ 7, 3 }):div(I({ 0, 1 }), { rounding_mode = "trunc" }):totable()
      end)
      assert.is_false(ok)
      assert.matches("div: rounding_mode \"trunc\": integer division by zero", tostring(err), 1, true)
      assert.are.same({ 3 }, I({ 7 }):div(2, { rounding_mode = "trunc" }):totable())
    end)
  end)
end

describe("div with rounding_mode on bool operands", function()
  it("raises naming div and the mode, as PyTorch has no bool kernel", function()
    local a = ltc.tensor({ true, false })
    for _, mode in ipairs({ "trunc", "floor" }) do
      local ok, err = pcall(function() return a:div(a, { rounding_mode = mode }) end)
      assert.is_false(ok)
      assert.matches('div: rounding_mode "' .. mode .. '" is not implemented for bool operands',
        tostring(err), 1, true)
    end
    -- true division of bools gives float32, as torch.div does
    assert.are.same({ 1, 0 }, a:div(ltc.tensor({ true, true })):totable())
  end)
end)
