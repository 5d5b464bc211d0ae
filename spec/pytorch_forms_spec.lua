-- PyTorch's other call forms of a few ops (each raised before): t:max(other) / t:min(other)
-- (torch.max(input, other) is maximum), ltc.randint(high, size), div with rounding_mode.
-- Expected values by hand, as torch 1.13 gives them.
local ltc = require "ltc"
local err = dofile("spec/support/err.lua")

describe("PyTorch's call forms", function()
  it("t:max(other) and t:min(other) are elementwise, with gradients", function()
    local a, b = ltc.tensor({ 1, 5 }):requires_grad_(), ltc.tensor({ 3, 2 })
    assert.are.same({ 3, 5 }, a:max(b):totable())
    assert.are.same({ 1, 2 }, ltc.min(a, b):totable())
    a:max(b):sum():backward()
    assert.are.same({ 0, 1 }, a.grad:totable())
    assert.are.equal(5, a:max():item()) -- the other forms stay
    local v, i = ltc.tensor({ { 1, 7 } }):max(2)
    assert.are.same({ { 7 }, { 2 } }, { v:totable(), i:totable() })
  end)

  it("ltc.randint(high, size) draws from [0, high)", function()
    ltc.manual_seed(1)
    local r = ltc.randint(3, { 2000 })
    assert.are.same({ "int64", 0, 2 }, { r:dtype(), r:min():item(), r:max():item() })
  end)

  it("div rounds with rounding_mode trunc or floor, integers staying integers", function()
    local x = ltc.tensor({ -7.0, 7, 5.5 })
    assert.are.same({ -3, 3, 2 }, x:div(2, { rounding_mode = "trunc" }):totable())
    assert.are.same({ -4, 3, 2 }, ltc.div(x, 2, { rounding_mode = "floor" }):totable())
    assert.are.same({ -3.5, 3.5, 2.75 }, x:div(2, { rounding_mode = nil }):totable())
    local q = ltc.tensor({ -7, 7 }, "int64"):div(2, { rounding_mode = "trunc" })
    assert.are.same({ "int64", { -3, 3 } }, { q:dtype(), q:totable() })
    local f = ltc.tensor({ -7, 7 }, "int64"):div(2, { rounding_mode = "floor" })
    assert.are.same({ "int64", { -4, 3 } }, { f:dtype(), f:totable() })
    err(function() x:div(2, { rounding_mode = "round" }) end, 'div: rounding_mode must be "trunc", "floor" or nil, got round')
    err(function() x:div(2, { mode = "floor" }) end, "div: unknown option 'mode' (expected rounding_mode)")
  end)
end)
