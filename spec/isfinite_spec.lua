-- isfinite (PyTorch torch.isfinite): true where a value is neither NaN nor +-inf; always true
-- for integers. Values by hand, on every backend of this build.
local ltc = require "ltc"

describe("isfinite", function()
  after_each(function() ltc.set_backend("cpu") end)
  local inf, nan = math.huge, 0 / 0
  for _, backend in ipairs { "cpu", "ref" } do
    it("marks NaN and infinities false, everything else true, on " .. backend, function()
      ltc.set_backend(backend)
      for _, dt in ipairs { "float32", "float64", "float16", "bfloat16" } do
        local t = ltc.tensor({ 1, nan, inf, -inf, -2.5, 0 }, dt)
        local got = t:isfinite()
        assert.are.equal("bool", got:dtype())
        assert.are.same({ true, false, false, false, true, true }, got:totable(), dt)
        assert.are.same({ true, false, false, false, true, true }, ltc.isfinite(t):totable(), dt)
      end
      assert.are.same({ true, true, true }, ltc.tensor({ 0, -7, 9 }, "int64"):isfinite():totable())
      assert.are.same({ { true, false }, { false, true } },
        ltc.tensor({ { 1, 1 / 0 }, { 0 / 0, 3 } }):isfinite():totable())
    end)
  end
  it("is the negation of isnan or isinf, and has no gradient", function()
    local x = ltc.tensor({ 1, nan, inf, -inf, 5 }):requires_grad_()
    local a = x:isfinite():totable()
    local b = (x:isnan():logical_or(x:isinf())):logical_not():totable()
    assert.are.same(b, a)
    assert.is_false(x:isfinite().requires_grad)
  end)
end)
