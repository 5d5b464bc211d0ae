-- Views share their base's storage; in-place writes go through them (functionalization).
local ltc = require "ltc"

describe("views and in-place writes", function()
  it("writes through a view after a sync change the base", function()
    local x = ltc.arange(1, 11, 1, "float32")
    local v = x:view(10, 1)
    ltc.sync()
    v[1][1] = 100
    assert.same({ 100, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, x:totable())
  end)

  it("rebinding the base variable leaves a view unchanged", function()
    local x = ltc.arange(0, 10, 1, "float32")
    local v = x:view(2, 5)
    x = x + 1
    assert.same({ { 0, 1, 2, 3, 4 }, { 5, 6, 7, 8, 9 } }, v:totable())
    assert.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, x:totable())
  end)

  it("an in-place write to the base is seen by its views", function()
    local x = ltc.zeros(2, 3)
    local row = x[2]
    local col = x:narrow(2, 3, 1)
    x:add_(1)
    assert.same({ 1, 1, 1 }, row:totable())
    x[2][3] = 7
    assert.same({ { 1 }, { 7 } }, col:totable())
    assert.same({ 1, 1, 7 }, row:totable())
  end)

  it("a strided copy through narrow lands only where it should", function()
    local x = ltc.zeros(3, 4, "int64")
    x:narrow(2, 2, 2):copy_(ltc.tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } }, "int64"))
    assert.same({ { 0, 1, 2, 0 }, { 0, 3, 4, 0 }, { 0, 5, 6, 0 } }, x:totable())
  end)

  it("a write through a transposed narrow view of a view reaches the base", function()
    local x = ltc.zeros(2, 3)
    local tv = x:t()              -- 3x2
    tv:narrow(1, 2, 1):fill_(5)   -- row 2 of x^T is column 2 of x
    assert.same({ { 0, 5, 0 }, { 0, 5, 0 } }, x:totable())
    assert.same({ { 0, 0 }, { 5, 5 }, { 0, 0 } }, tv:totable())
  end)

  it("broadcasts a row in copy_ and keeps the tensor's dtype", function()
    local x = ltc.zeros(2, 3, "int32")
    x:copy_(ltc.tensor({ 1.9, 2.1, -3.7 }))
    assert.same({ { 1, 2, -3 }, { 1, 2, -3 } }, x:totable())
    assert.equal("int32", x:dtype())
  end)

  it("runs a pending in-place op once however often the tensor is read", function()
    local x = ltc.ones(3)
    x:mul_(2)
    local before = ltc.metrics.counter("MarkStep")
    assert.same({ 2, 2, 2 }, x:totable())
    assert.same({ 2, 2, 2 }, x:totable())
    assert.equal(4, (x + x)[1])
    assert.equal(before + 2, ltc.metrics.counter("MarkStep"))
  end)

  it("refuses a float result in an int tensor and leaves it intact", function()
    local x = ltc.tensor({ 1, 2 }, "int64")
    local ok, err = pcall(function() x:add_(0.5) end)
    assert.is_false(ok)
    assert.matches("can't be cast", err)
    assert.same({ 1, 2 }, x:totable())
  end)

  it("fill_ and zero_ write every element", function()
    local x = ltc.ones(2, 2)
    x[1]:fill_(3)
    assert.same({ { 3, 3 }, { 1, 1 } }, x:totable())
    x:zero_()
    assert.same({ { 0, 0 }, { 0, 0 } }, x:totable())
  end)

  it("a select view of a 1-d tensor takes a number", function()
    local x = ltc.zeros(4)
    x[-1] = 9
    x[2] = 4
    assert.same({ 0, 4, 0, 9 }, x:totable())
  end)

  it("a loop of in-place updates compiles once", function()
    local w = ltc.zeros(4)
    ltc.sync()
    local before = ltc.metrics.counter("UncachedCompile")
    for i = 1, 5 do
      w:add_(i)
      ltc.sync()
    end
    assert.equal(before + 1, ltc.metrics.counter("UncachedCompile"))
    assert.same({ 15, 15, 15, 15 }, w:totable())
  end)
end)
