-- Autograd's record of a view (its base and the view steps from it) stays small however
-- many views were taken before it (issue 17's r07: each view used to copy its source's
-- steps), and writes through fused steps still differentiate right.
local ltc = require "ltc"

describe("autograd view lineage", function()
  it("does not grow when a buffer is consumed chunk by chunk with narrow", function()
    local rest = ltc.arange(0, 501, 1, "float32")
    local total = 0
    for _ = 1, 500 do
      total = total + rest[1]
      rest = rest:narrow(1, 2, rest:size(1) - 1)
    end
    assert.are.equal(1, ltc.autograd.view_steps(rest))
    assert.are.equal(500 * 499 / 2, total)
    assert.are.same({ 500 }, rest:totable())
  end)

  it("drops t of t and transpose of the same transpose, and fuses reshapes", function()
    local x = ltc.arange(1, 13, 1, "float32"):reshape({ 3, 4 })
    for _ = 1, 101 do x = x:t() end
    assert.are.equal(2, ltc.autograd.view_steps(x))   -- the reshape and one t
    assert.are.same({ { 1, 5, 9 }, { 2, 6, 10 }, { 3, 7, 11 }, { 4, 8, 12 } }, x:totable())
    local y = ltc.ones(3, 4)
    for _ = 1, 50 do y = y:transpose(1, 2):transpose(2, 1) end
    assert.are.equal(0, ltc.autograd.view_steps(y))
    local z = ltc.ones(3, 4)
    for _ = 1, 50 do z = z:view(12):view(4, 3):unsqueeze(1):squeeze(1) end
    assert.are.equal(1, ltc.autograd.view_steps(z))
    assert.are.same({ 4, 3 }, z:size())
  end)

  it("differentiates a write through fused narrows into the right elements", function()
    local x = ltc.tensor({ 1, 2, 3, 4, 5, 6, 7, 8 }, "float64"):requires_grad_()
    local y = x * 1
    local v = y:narrow(1, 2, 6):narrow(1, 2, 3)      -- elements 3..5 of y
    v:mul_(2)
    assert.are.same({ 1, 2, 6, 8, 10, 6, 7, 8 }, y:totable())
    y:sum():backward()
    assert.are.same({ 1, 1, 2, 2, 2, 1, 1, 1 }, x.grad:totable())
  end)

  it("differentiates a write through views that fused away or into one reshape", function()
    local x = ltc.tensor({ 1, 2, 3, 4 }, "float64"):requires_grad_()
    local y = x * 1
    local v = y:view(2, 2):t():t()                   -- the reshape only
    v:mul_(3)
    local w = y:view(4):view(2, 2):view(1, 4):view(2, 2)
    w[2]:mul_(x:narrow(1, 1, 2):reshape({ 2 }))      -- row 2 times {x1, x2}
    assert.are.same({ 3, 6, 9, 24 }, y:totable())
    y:sum():backward()
    -- y = {3 x1, 3 x2, 3 x3 x1, 3 x4 x2}: d/dx = {3 + 3 x3, 3 + 3 x4, 3 x1, 3 x2}
    assert.are.same({ 12, 15, 3, 6 }, x.grad:totable())
  end)
  -- fuzz seed 44 program 1396: the copy's source is a stale view of the target's own root;
  -- the node that replays the view saved that root and became the root's history, a cycle
  -- that was never freed (2 tensors left per copy)
  it("copies from a stale view of the target itself with the gradient and no leak", function()
    collectgarbage(); collectgarbage()
    ltc.sync()
    local live0 = ltc.debug.pending().live_tensors
    do
      local w = ltc.tensor({ { 0.0 }, { 0.25 }, { 2.0 } }, "float64"):requires_grad_()
      local x = ltc.zeros({ 2, 3, 1 }, "float64")
      local s = x:squeeze(2) -- size 3: a view of the same shape
      x[-2] = w
      x:copy_(s)
      assert.are.same({ { { 0 }, { 0.25 }, { 2 } }, { { 0 }, { 0 }, { 0 } } }, x:totable())
      -- no backward here: it frees the graph, which broke the cycle too
    end
    collectgarbage(); collectgarbage()
    ltc.sync()
    assert.equal(0, ltc.debug.pending().live_tensors - live0)
    local w = ltc.tensor({ { 0.0 }, { 0.25 }, { 2.0 } }, "float64"):requires_grad_()
    local x = ltc.zeros({ 2, 3, 1 }, "float64")
    local s = x:squeeze(2)
    x[-2] = w
    x:copy_(s)
    x:sum():backward()
    assert.are.same({ { 1 }, { 1 }, { 1 } }, w.grad:totable())
  end)
end)
