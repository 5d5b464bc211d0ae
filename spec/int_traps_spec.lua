-- Integers as PyTorch has them: errors where it raises (integer // and % by zero, an
-- integer tensor to a negative Lua integer, a value that does not fit the dtype at
-- creation), wrap-around where it wraps (overflow inside arithmetic). Expected values and
-- messages are PyTorch 2's (torch.tensor / torch.full / torch.randint / // / % / **).
local ltc = require "ltc"

local err = dofile("spec/support/err.lua")

describe("integer division by zero", function()
  it("raises for // and % of integer tensors, as PyTorch's ZeroDivisionError", function()
    local a = ltc.tensor({ 7, -7 }, "int64")
    assert.matches("floor_divide: integer division by zero",
      err(function() return (a // ltc.tensor({ 0, 1 }, "int64")):totable() end))
    assert.matches("remainder: integer modulo by zero", err(function() return (a % 0):totable() end))
    assert.matches("floor_divide: integer division by zero", err(function()
      return (ltc.tensor({ 1, 2 }, "int32") // ltc.tensor({ 1, 0 }, "int32")):sum():item()
    end))
  end)

  it("leaves the runtime working after the error", function()
    local a = ltc.tensor({ 7, -7 }, "int64")
    err(function() return (a // 0):totable() end)
    assert.same({ 3, -4 }, (a // 2):totable())
    assert.same({ 1, 2 }, (a % 3):totable())
    assert.same({ 8, -6 }, (a + 1):totable())
  end)

  it("keeps float division by zero as inf and nan", function()
    local r = (ltc.tensor { 1, -1, 0 } // 0):totable()
    assert.equal(math.huge, r[1])
    assert.equal(-math.huge, r[2])
    assert.is_true(r[3] ~= r[3])
  end)
end)

describe("integer powers", function()
  it("raises for an integer tensor to a negative Lua integer", function()
    local msg = "pow: integers to negative integer powers are not allowed"
    assert.matches(msg, err(function() return ltc.tensor({ 0, 2 }, "int64") ^ -1 end))
    assert.matches(msg, err(function() return ltc.tensor({ 2 }, "int32"):pow(-2) end))
    assert.matches(msg, err(function() return ltc.pow(ltc.tensor({ 2 }, "int64"), -1) end))
  end)

  it("computes with a tensor of negative exponents, as PyTorch: {0, 0, 1, -1}", function()
    local r = ltc.tensor({ 0, 2, 1, -1 }, "int64") ^ ltc.tensor({ -1, -1, -2, -3 }, "int64")
    assert.same({ 0, 0, 1, -1 }, r:totable())
  end)
end)

describe("values that do not fit the dtype at creation", function()
  it("raise in ltc.tensor", function()
    assert.matches("tensor: element %[1%] %(9223372036854775807%) cannot be converted to int32",
      err(function() return ltc.tensor({ math.maxinteger }, "int32") end))
    assert.matches("cannot be converted to int32", err(function() return ltc.tensor({ 2 ^ 31 }, "int32") end))
    assert.matches("cannot be converted to int64", err(function() return ltc.tensor({ 2 ^ 63 }, "int64") end))
    assert.same({ -2147483648, 2147483647 }, ltc.tensor({ -2 ^ 31, 2 ^ 31 - 1 }, "int32"):totable())
  end)

  it("raise in ltc.full and ltc.scalar_tensor", function()
    assert.matches("full: value 1e%+300 cannot be converted to int64 without overflow",
      err(function() return ltc.full({ 2 }, 1e300, "int64"):totable() end))
    assert.matches("full: value 1e%+300 cannot be converted to float32",
      err(function() return ltc.full({ 2 }, 1e300):totable() end))
    assert.matches("cannot be converted to int64",
      err(function() return ltc.full({ 2 }, 0 / 0, "int64"):totable() end))
    assert.matches("scalar_tensor: value 1e%+20 cannot be converted to int32",
      err(function() return ltc.scalar_tensor(1e20, "int32") end))
    assert.same({ 2147483647 }, ltc.full({ 1 }, 2 ^ 31 - 1, "int32"):totable())
    assert.same({ math.huge }, ltc.full({ 1 }, math.huge):totable()) -- inf is a float32 value
  end)

  it("raise in ltc.randint for a range beyond the dtype", function()
    assert.matches("randint: the range %[0, 1099511627776%) does not fit int32",
      err(function() return ltc.randint(0, 1 << 40, { 4 }, "int32") end))
    local r = ltc.randint(-(1 << 31), 1 << 31, { 64 }, "int32"):totable()
    for _, v in ipairs(r) do assert.is_true(v >= -(1 << 31) and v < (1 << 31)) end
  end)
end)

describe("integer overflow inside arithmetic", function()
  it("wraps around, as in PyTorch", function()
    assert.same({ -2147483648 }, (ltc.tensor({ 2 ^ 31 - 1 }, "int32") + 1):totable())
    assert.same({ 0 }, (ltc.tensor({ 1 << 62 }, "int64") * 4):totable())
  end)
end)
