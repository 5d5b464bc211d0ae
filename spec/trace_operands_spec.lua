-- Lua numbers as op operands and what autograd saves (issue 18, the trace bench): a float
-- number made for one op call is converted in place by that op's promotion, and an argument is
-- saved only when the formula of an argument that needs a gradient reads it. Neither may change
-- a value; the expected values are worked out by hand (float32(1.0001) = 1.00010001659393310546875).
local ltc = require "ltc"

local F32_10001 = 1.00010001659393310546875

describe("a Lua number operand", function()
  it("keeps float64 precision in a float64 op", function()
    local r = (ltc.tensor({ 1, 2 }, "float64") * 1.0001):totable()
    assert.equal(1.0001, r[1])
    assert.equal(2 * 1.0001, r[2])
  end)

  it("is rounded to float32 in a float32 op, on either side", function()
    local x = ltc.tensor { 1, 2 }
    assert.same({ F32_10001, 2 * F32_10001 }, (x * 1.0001):totable())
    assert.same({ F32_10001, 2 * F32_10001 }, (1.0001 * x):totable())
    assert.equal("float32", (1.0001 * x):dtype())
  end)

  it("makes an int32 tensor's product float32", function()
    local q = ltc.tensor({ 1, 2 }, "int32") * 2.5
    assert.equal("float32", q:dtype())
    assert.same({ 2.5, 5 }, q:totable())
  end)

  it("gives the gradient of a product in the operand's dtype", function()
    local a = ltc.tensor({ 1, 2 }, "float64"):requires_grad_()
    local ya = a * 1.0001
    ya:sum():backward()
    assert.same({ 1.0001, 1.0001 }, a.grad:totable())
    local b = ltc.tensor({ 1, 2 }):requires_grad_()
    local yb = b * 1.0001
    yb:sum():backward()
    assert.same({ F32_10001, F32_10001 }, b.grad:totable())
  end)

  it("gives the same values in a traced loop with grad as without", function()
    local x = ltc.tensor { 0.5, -1 }
    local xg = ltc.tensor({ 0.5, -1 }):requires_grad_()
    local y, yg = x, xg
    for _ = 1, 20 do
      y = y * 1.0001 + 0.5
      yg = yg * 1.0001 + 0.5
    end
    yg:sum():backward()
    assert.same(y:totable(), yg:totable())
    local g = ltc.tensor({ F32_10001 }):pow(20):item() -- float32(1.0001)^20, in float32
    assert.near(g, xg.grad[1], 1e-6)
    assert.near(g, xg.grad[2], 1e-6)
  end)
end)

describe("what a product saves for backward", function()
  it("needs no copy of self when other needs no gradient (self written in place after)", function()
    local a = ltc.tensor({ 1, 2 }):requires_grad_()
    local b = ltc.tensor { 3, 4 }
    local c = a * 1
    local y = c * b
    c:add_(10)
    y:sum():backward()
    assert.same({ 3, 4 }, a.grad:totable())
  end)

  it("uses other's value at the product when other is written in place after", function()
    local a = ltc.tensor({ 1, 2 }):requires_grad_()
    local b = ltc.tensor { 3, 4 }
    local y = a * b
    b:add_(10)
    y:sum():backward()
    assert.same({ 3, 4 }, a.grad:totable())
  end)

  it("saves both when both need gradients", function()
    local a = ltc.tensor({ 1, 2 }):requires_grad_()
    local b = ltc.tensor({ 3, 4 }):requires_grad_()
    local y = a * b
    y:sum():backward()
    assert.same({ 3, 4 }, a.grad:totable())
    assert.same({ 1, 2 }, b.grad:totable())
  end)

  it("second order through a product whose other needs no gradient", function()
    local x = ltc.tensor({ 0.5, -2 }, "float64"):requires_grad_()
    local y = x * x * 3 -- dy/dx = 6x
    y:sum():backward { create_graph = true }
    assert.same({ 3, -12 }, x.grad:totable())
    local g = x.grad
    x.grad = nil
    g:sum():backward() -- d(6x)/dx = 6
    assert.same({ 6, 6 }, x.grad:totable())
  end)
end)
