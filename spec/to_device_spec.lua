-- t:to with a device and a dtype in either order (PyTorch's Tensor.to(device, dtype); the
-- dtype was dropped), and the warning when a tensor that requires grad moves between
-- devices (autograd does not record the move: the copy is a leaf, no gradient flows back).
local ltc = require "ltc"

describe("t:to", function()
  local saved
  before_each(function() saved = ltc._warn end)
  after_each(function() ltc._warn = saved end)

  it("takes a device and a dtype in either order", function()
    local a = ltc.tensor({ 1.5, 2.5 })
    local y = a:to("ref", "float64")
    assert.are.same({ "ref:0", "float64", { 1.5, 2.5 } }, { y:device(), y:dtype(), y:totable() })
    local z = a:to("int32", "ref")
    assert.are.same({ "ref:0", "int32", { 1, 2 } }, { z:device(), z:dtype(), z:totable() })
    local w = a:to("cpu", "float64") -- there already: only the cast
    assert.are.same({ "cpu:0", "float64" }, { w:device(), w:dtype() })
  end)

  it("warns once per line when a tensor that requires grad moves, and not otherwise", function()
    local msgs = {}
    ltc._warn = function(m) msgs[#msgs + 1] = m end
    local x = ltc.ones(2):requires_grad_()
    for _ = 1, 3 do
      local r = x:to("ref")
      assert.is_false(r.requires_grad) -- a new leaf, as the warning says
    end
    assert.are.equal(1, #msgs)
    assert.truthy(msgs[1]:find("to_device_spec.lua:%d+: to: the copy on ref of a tensor that requires grad is a new leaf"))
    ltc.no_grad(function() return x:to("ref") end)
    ltc.ones(2):to("ref")
    assert.are.equal(x, x:to("cpu"))
    assert.are.equal(1, #msgs)
  end)
end)
