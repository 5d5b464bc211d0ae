-- LTC_SPECIAL_SCALARS (PyTorch LTC's special scalars): with the flag on, the Lua numbers
-- 0, 1 and -1 in ops are baked into the graph as scalar_tensor constants instead of
-- parameters; off (the default), every Lua number is a parameter.
local ltc = require "ltc"

describe("special scalars", function()
  after_each(function() ltc.config.LTC_SPECIAL_SCALARS = 0 end)

  it("are parameters by default", function()
    local x = ltc.tensor({ 1, 2, 3 })
    local ir = ltc.debug.ir(x * 1 + 0)
    assert.is_nil(ir:find("scalar_tensor", 1, true))
    assert.matches("param #2", ir)
  end)

  it("become graph constants with the flag on, with the same values", function()
    ltc.config.LTC_SPECIAL_SCALARS = 1
    local x = ltc.tensor({ 1, 2, 3 })
    local y = x * -1 + 1
    local ir = ltc.debug.ir(y)
    assert.matches("scalar_tensor%(value=%-1", ir)
    assert.matches("scalar_tensor%(value=1", ir)
    assert.is_nil(ir:find("param #1", 1, true))
    assert.same({ 0, -1, -2 }, y:totable())
    assert.equal("float32", y:dtype())
  end)

  it("keep other numbers as parameters: a loop over them compiles once", function()
    ltc.config.LTC_SPECIAL_SCALARS = 1
    local x = ltc.tensor({ 1, 2 }, "int64")
    ltc.sync()
    local before = ltc.metrics.counter("UncachedCompile")
    for i = 2, 6 do assert.same({ i, 2 * i }, (x * i):totable()) end
    assert.equal(before + 1, ltc.metrics.counter("UncachedCompile"))
  end)

  for _, backend in ipairs { "cpu", "ref" } do
    it("scalar_tensor makes a 0-d constant on the " .. backend .. " backend", function()
      ltc.set_backend(backend)
      local s = ltc.scalar_tensor(2.5, "float64")
      local i = ltc.scalar_tensor(-3.75, "int32")
      local f = ltc.scalar_tensor(7)
      ltc.set_backend("cpu")
      assert.equal(0, s:dim())
      assert.equal("float64", s:dtype())
      assert.equal(2.5, s:item())
      assert.equal(-3, i:item())
      assert.equal("float32", f:dtype())
      assert.equal(7, f:item())
    end)
  end
end)
