-- Semantics that used to differ from PyTorch for no reason (found comparing random programs
-- against PyTorch). Each expected value is what PyTorch 2 gives (python3 + torch, by hand):
-- torch.tensor([True]) - 1 raises; torch.tensor([True, False]).sign() is itself;
-- len(torch.zeros(0, 2).chunk(3, 0)) == 3; (x % x).rsqrt() of x = [-1.75] is [-inf];
-- avg/max_pool2d of [1, 0, 4, 4] raise; torch.tensor([nan, 1, 0]).norm(0) == 2;
-- torch.cat([torch.tensor([]), torch.ones(2, 3)], -2).shape == (2, 3);
-- torch.tensor([-0.0]).abs().rsqrt() == [inf].
local ltc = require "ltc"

local err = dofile("spec/support/err.lua")

describe("PyTorch's semantics", function()
  it("refuses subtraction with a bool tensor", function()
    local msg = "sub: subtraction with a bool tensor is not supported"
    assert.matches(msg, err(function() return ltc.tensor { true, false } - ltc.tensor { true, true } end))
    assert.matches(msg, err(function() return ltc.tensor { true } - 1 end))
    assert.matches(msg, err(function() return 1 - ltc.tensor { true } end))
    assert.matches(msg, err(function() return ltc.tensor { true }:sub(ltc.tensor { 1 }) end))
    assert.same({ 1, 0 }, (ltc.tensor { true, false }:to("int64") - 0):totable()) -- converted: fine
  end)

  it("gives the sign of a bool tensor as itself", function()
    local s = ltc.tensor { true, false }:sign()
    assert.equal("bool", s:dtype())
    assert.same({ true, false }, s:totable())
  end)

  it("chunks an empty dim into `chunks` empty pieces", function()
    local c = ltc.zeros(0, 2):chunk(3, 1)
    assert.equal(3, #c)
    for i = 1, 3 do assert.same({ 0, 2 }, c[i]:size()) end
  end)

  it("gives a zero remainder the divisor's sign", function()
    local x = ltc.tensor { -1.75 }
    assert.same({ -math.huge }, (x % x):rsqrt():totable())
    assert.same({ math.huge }, (ltc.tensor { 1.75 } % 1.75):rsqrt():totable())
    assert.same({ 2, -2, 1.5, 5, math.huge }, (ltc.tensor { -7, 7, -0.5, 5, -5 }
      % ltc.tensor { 3, -3, 2, math.huge, math.huge }):totable())
  end)

  it("takes the absolute value of -0.0 as +0.0", function()
    assert.same({ math.huge }, ltc.tensor({ -0.0 }):abs():rsqrt():totable())
    assert.same({ 3, 0, 2 }, ltc.tensor({ -3, 0, 2 }, "int64"):abs():totable())
  end)

  it("refuses pooling an input with 0 channels, height or width (a 0 batch is fine)", function()
    local msg = "input must have nonzero channels, height and width"
    assert.matches(msg, err(function() return ltc.avg_pool2d(ltc.zeros(1, 0, 4, 4), 2) end))
    assert.matches(msg, err(function() return ltc.max_pool2d(ltc.zeros(1, 0, 4, 4), 2) end))
    assert.same({ 0, 1, 2, 2 }, ltc.max_pool2d(ltc.zeros(0, 1, 4, 4), 2):size())
  end)

  it("counts NaN as nonzero in norm(0)", function()
    assert.equal(2, ltc.tensor({ 0 / 0, 1, 0 }):norm(0):item())
    assert.equal(0, ltc.zeros(0):norm(math.huge):item()) -- PyTorch 2 gives 0 as well
  end)

  it("skips empty 1-d tensors in cat, as PyTorch's legacy rule", function()
    local c = ltc.cat({ ltc.tensor {}, ltc.ones(2, 3) }, -2)
    assert.same({ 2, 3 }, c:size())
    assert.same({ { 1, 1, 1 }, { 1, 1, 1 } }, c:totable())
    assert.same({ 1, 2 }, ltc.cat({ ltc.tensor {}, ltc.tensor { 1, 2 } }):totable())
  end)
end)
