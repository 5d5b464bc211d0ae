-- A tensor as a key (Torch7's t[mask] and t[LongTensor]; PyTorch's boolean and integer-array
-- indexing along the first dim), and t.key = false reaching a setter as a boolean
-- (t.requires_grad = false froze nothing when booleans were turned into 0 for every key).
-- Expected values by hand, as PyTorch 1.13 gives them.
local ltc = require "ltc"
local err = dofile("spec/support/err.lua")

local function T(v, dt) return ltc.tensor(v, dt or "float32") end

describe("a tensor key", function()
  it("reads the elements under a bool mask, in order, as a 1-d tensor", function()
    local t = T({ { 0, 1, 2 }, { 3, 4, 5 } })
    assert.are.same({ 3, 4, 5 }, t[t:gt(2)]:totable())
    assert.are.same({ 1, 4 }, t[T({ false, true, false }, "bool")]:totable()) -- broadcast
  end)

  it("reads the slices along dim 1 at 1-based int64 or int32 positions, repeats allowed, no negatives", function()
    local t = T({ { 0, 1, 2 }, { 3, 4, 5 } })
    assert.are.same({ { 3, 4, 5 }, { 0, 1, 2 }, { 3, 4, 5 } }, t[T({ 2, 1, 2 }, "int64")]:totable())
    assert.are.same({ { 3, 4, 5 } }, t[T({ 2 }, "int32")]:totable())
    err(function() return t[T({ -1 }, "int64")]:totable() end, "index_select: index -1 out of range (1..2")
  end)

  it("writes a number or a 0-d tensor under a mask, a tensor's elements in order", function()
    local t = T({ { 0, 1, 2 }, { 3, 4, 5 } })
    t[t:gt(3)] = 0
    assert.are.same({ { 0, 1, 2 }, { 3, 0, 0 } }, t:totable())
    t[t:eq(0)] = T(9)
    assert.are.same({ { 9, 1, 2 }, { 3, 9, 9 } }, t:totable())
    t[t:eq(9)] = T({ 6, 7, 8 })
    assert.are.same({ { 6, 1, 2 }, { 3, 7, 8 } }, t:totable())
    t[t:lt(3)] = true
    assert.are.same({ { 6, 1, 1 }, { 3, 7, 8 } }, t:totable())
  end)

  it("writes slices at index positions: a number fills, a tensor is broadcast and copied", function()
    local t = T({ { 0, 1, 2 }, { 3, 4, 5 }, { 6, 7, 8 } })
    t[T({ 2 }, "int64")] = 7
    assert.are.same({ { 0, 1, 2 }, { 7, 7, 7 }, { 6, 7, 8 } }, t:totable())
    t[T({ 1, 3 }, "int64")] = T({ -1, -2, -3 })
    assert.are.same({ { -1, -2, -3 }, { 7, 7, 7 }, { -1, -2, -3 } }, t:totable())
    t[T({ 3 }, "int64")] = T({ { 4, 5, 6 } })
    assert.are.same({ 4, 5, 6 }, t[3]:totable())
  end)

  it("carries gradients as masked_select and index_select do", function()
    local a = T({ 1, -2, 3 }):requires_grad_()
    ;(a[a:gt(0)] * 2):sum():backward()
    assert.are.same({ 2, 0, 2 }, a.grad:totable())
    local b = T({ { 1, 2 }, { 3, 4 } }):requires_grad_()
    b[T({ 2, 2 }, "int64")]:sum():backward()
    assert.are.same({ { 0, 0 }, { 2, 2 } }, b.grad:totable())
  end)

  it("raises naming the key's dtype and sizes for a float or a 2-d integer key", function()
    local t = T({ { 0, 1, 2 }, { 3, 4, 5 } })
    err(function() return t[T({ 1 })] end, "index: an index tensor of dtype float32 and size [1] into a tensor of size [2x3]")
    err(function() t[T({ { 1, 2 } }, "int64")] = 1 end, "newindex: an index tensor of dtype int64 and size [1x2]")
    assert.are.same({ { 0, 1, 2 }, { 3, 4, 5 } }, t:totable()) -- untouched
  end)
end)

describe("t.key = false", function()
  it("sets requires_grad to false (PyTorch's way to freeze a parameter)", function()
    local w = ltc.ones(2):requires_grad_()
    w.requires_grad = false
    assert.is_false(w.requires_grad)
    w.requires_grad = true
    assert.is_true(w.requires_grad)
  end)

  it("freezes a module's weight: no gradient, and the optimizer leaves it", function()
    ltc.manual_seed(3)
    local m = ltc.nn.Linear(2, 2)
    m.weight.requires_grad = false
    local w0, b0 = m.weight:totable(), m.bias:totable()
    local opt = ltc.optim.SGD(m:parameters(), { lr = 0.5 })
    m(T({ { 1, 2 } })):sum():backward()
    opt:step()
    assert.is_nil(m.weight.grad)
    assert.are.same(w0, m.weight:totable())
    assert.are.same({ 1, 1 }, m.bias.grad:totable())
    assert.are.same({ b0[1] - 0.5, b0[2] - 0.5 }, m.bias:totable())
  end)

  it("still writes 0 for t[i] = false", function()
    local t = T({ 5, 6 })
    t[2] = false
    assert.are.same({ 5, 0 }, t:totable())
  end)
end)
