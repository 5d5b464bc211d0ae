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

  it("div of integers by zero with rounding_mode raises at the sync, naming div", function()
    -- before, the error named floor_divide, the op div is written with
    for _, mode in ipairs { "trunc", "floor" } do
      for _, dt in ipairs { "int64", "int32" } do
        local a = ltc.tensor({ 7, -7, 5 }, dt)
        for _, d in ipairs { ltc.tensor({ 2, 0, 1 }, dt), 0 } do
          local q = a:div(d, { rounding_mode = mode })
          local ok, e = pcall(function() return q:totable() end)
          assert.is_false(ok)
          assert.matches('^[^ ]*pytorch_forms_spec%.lua:%d+: div: rounding_mode "' .. mode
            .. '": integer division by zero', e)
          assert.is_nil(tostring(e):find("floor_divide", 1, true), e)
        end
      end
    end
    -- the runtime goes on; // itself still names floor_divide
    assert.are.same({ 3, -4 }, ltc.tensor({ 7, -7 }, "int64"):div(2, { rounding_mode = "floor" }):totable())
    local ok, e = pcall(function() return (ltc.tensor({ 1 }, "int64") // 0):totable() end)
    assert.is_false(ok)
    assert.matches("floor_divide: integer division by zero", e)
  end)

  it("div with rounding_mode nil is true division, differentiable in both operands", function()
    local x = ltc.tensor({ 1, 2 }, "float64"):requires_grad_()
    local y = ltc.tensor({ 4, -8 }, "float64"):requires_grad_()
    x:div(y, { rounding_mode = nil }):sum():backward()
    assert.are.same({ 0.25, -0.125 }, x.grad:totable())
    assert.are.same({ -1 / 16, -2 / 64 }, y.grad:totable()) -- -x / y^2
  end)
end)
