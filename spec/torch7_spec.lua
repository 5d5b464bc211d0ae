-- Torch7 idioms (lua/ltc/torch7.lua): nElement, uniform_, normal_, resize_/resizeAs_,
-- ltc.range and the table index t[{...}]. Expected values are written out by hand, as
-- Torch7 gives them (torch.range includes its end; x[{ {1, 2}, 2 }] is rows 1..2 of col 2).
local ltc = require "ltc"

local err = dofile("spec/support/err.lua")

describe("the table index t[{...}]", function()
  local function x34() return ltc.arange(1, 13):view(3, 4) end

  it("reads ranges and selections", function()
    local x = x34()
    assert.same({ 2, 6 }, x[{ { 1, 2 }, 2 }]:totable())
    assert.same({ { 2, 3, 4 }, { 6, 7, 8 }, { 10, 11, 12 } }, x[{ {}, { 2, -1 } }]:totable())
    assert.same({ { 5, 6, 7, 8 } }, x[{ { 2 } }]:totable())
    assert.same({ 9, 10, 11, 12 }, x[{ -1 }]:totable())
    assert.equal(7, x[{ 2, 3 }]) -- every dim selected: a number, as Torch7
  end)

  it("writes through them into the tensor", function()
    local x = x34()
    x[{ {}, { 2, -1 } }] = 0
    x[{ 1, { 1, 2 } }] = ltc.tensor({ 7, 8 }, "int64")
    x[{ 3, 4 }] = 5
    assert.same({ { 7, 8, 0, 0 }, { 5, 0, 0, 0 }, { 9, 0, 0, 5 } }, x:totable())
  end)

  it("names the bad index and the line that used it", function()
    local x = x34()
    local m = err(function() return x[{ 5 }] end)
    assert.matches("torch7_spec.lua:%d+: index: index 5 out of range for dim 1 of size 3", m)
    assert.matches("index: 3 indices for a 2%-d tensor", err(function() return x[{ 1, 1, 1 }] end))
    assert.matches("newindex: entry 1 is a string", err(function() x[{ "a" }] = 1 end))
    assert.matches("empty range {3, 2}", err(function() return x[{ { 3, 2 } }] end))
  end)
end)

describe("Torch7 methods", function()
  it("nElement is numel", function()
    assert.equal(12, ltc.zeros(3, 4):nElement())
  end)

  it("uniform_ and normal_ fill in place from the generator", function()
    ltc.manual_seed(1)
    local u = ltc.zeros(1000)
    assert.equal(u, u:uniform_(2, 3))
    assert.is_true(u:min():item() >= 2 and u:max():item() < 3)
    assert.near(2.5, u:mean():item(), 0.05)
    local n = ltc.zeros(4000):normal_(10, 2)
    assert.near(10, n:mean():item(), 0.15)
    assert.near(2, n:std():item(), 0.15)
    assert.matches("normal_: expected a number mean and std >= 0", err(function() n:normal_(0, -1) end))
  end)

  it("resize_ keeps the first elements in order and zero-fills new ones", function()
    local y = ltc.tensor { { 1, 2, 3 }, { 4, 5, 6 } }
    assert.equal(y, y:resize_(4))
    assert.same({ 1, 2, 3, 4 }, y:totable())
    y:resize_({ 2, 3 })
    assert.same({ { 1, 2, 3 }, { 4, 0, 0 } }, y:totable())
    y:resizeAs_(ltc.zeros(1, 2))
    assert.same({ { 1, 2 } }, y:totable())
    assert.same({ 1, 2 }, y:size())
  end)

  it("resize_ refuses a view, and a view of a resized tensor raises when read", function()
    local y = ltc.zeros(2, 3)
    local row = y[1]
    assert.matches("resize_: cannot resize a view", err(function() row:resize_(6) end))
    y:resize_(6)
    assert.matches("its base was resized", err(function() return row:totable() end))
    assert.matches("its base was resized", err(function() row:fill_(1) end))
    assert.same({ 0, 0, 0, 0, 0, 0 }, y:totable())
  end)
end)

describe("ltc.range", function()
  it("includes its end and is float32 by default, as torch.range", function()
    local r = ltc.range(1, 5)
    assert.same({ 1, 2, 3, 4, 5 }, r:totable())
    assert.equal("float32", r:dtype())
    assert.same({ 0, 0.25, 0.5, 0.75, 1 }, ltc.range(0, 1, 0.25):totable())
    assert.same({ 3, 2, 1 }, ltc.range(3, 1, -1):totable())
    assert.equal("int64", ltc.range(1, 3, "int64"):dtype())
    assert.matches("range: expected numbers a, b and a nonzero step", err(function() ltc.range(1, 3, -1) end))
  end)
end)

-- Strides as PyTorch gives them (torch: x = arange(6).view(2, 3); x.t().stride() == (1, 3);
-- x[:, 1:].stride() == (3, 1); zeros(3, 1).expand(3, 4).stride() == (1, 0);
-- zeros(2, 3, 4).permute(2, 0, 1).stride() == (1, 12, 4)).
describe("stride and isContiguous", function()
  it("follow the view ops from a contiguous base", function()
    local x = ltc.arange(0, 6):view(2, 3)
    assert.same({ 3, 1 }, x:stride())
    assert.is_true(x:isContiguous())
    assert.same({ 1, 3 }, x:t():stride())
    assert.is_false(x:t():isContiguous())
    assert.equal(3, x:t():stride(-1))
    assert.same({ 3, 1 }, x:narrow(2, 2, 2):stride())
    assert.is_false(x:narrow(2, 2, 2):is_contiguous())
    assert.is_true(x:narrow(1, 2, 1):isContiguous())
    assert.same({ 1, 0 }, ltc.zeros(3, 1):expand(3, 4):stride())
    assert.same({ 1, 12, 4 }, ltc.zeros(2, 3, 4):permute({ 3, 1, 2 }):stride())
    assert.same({ 1 }, x[2]:stride())
  end)

  it("raise for a view() that no strides express", function()
    local v = ltc.arange(0, 6):view(2, 3):t():view(6)
    assert.matches("stride: this tensor is a view that no strides express", err(function() v:stride() end))
    assert.is_false(v:isContiguous())
  end)
end)

describe("reshape and flatten of a non-contiguous tensor", function()
  it("copy, as PyTorch: a write through the result leaves the tensor alone", function()
    local x = ltc.arange(0, 6):view(2, 3)
    local f = x:t():reshape(6)
    assert.same({ 0, 3, 1, 4, 2, 5 }, f:totable())
    f[1] = 100
    local g = x:t():flatten()
    g[2] = 100
    assert.same({ { 0, 1, 2 }, { 3, 4, 5 } }, x:totable())
  end)

  it("stay views where a view can express them", function()
    local x = ltc.arange(0, 6):view(2, 3)
    local r = x:reshape(3, 2)
    r[1][1] = 7
    local n = x:narrow(1, 2, 1):flatten()
    n[1] = 9
    assert.same({ { 7, 1, 2 }, { 9, 4, 5 } }, x:totable())
  end)
end)
