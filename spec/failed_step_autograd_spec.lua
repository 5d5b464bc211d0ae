-- A failed in-place write leaves no trace in autograd (issue 17: "autograd keeps the failed
-- op, so a later backward raises the same error"): when a sync fails and a tensor goes back to
-- its value before the failing write, its grad_fn goes back with it; valid writes before the
-- failing one keep theirs.
local ltc = require "ltc"

describe("autograd after a failed sync", function()
  it("drops the failed write's grad_fn and keeps the valid write before it", function()
    local w = ltc.tensor({ 1.0, 2.0 }):requires_grad_()
    local s = ltc.tensor({ 1.0 }):requires_grad_()
    local x = w * 1
    x:mul_(3)
    local ok, err = pcall(function()
      x:index_add_(1, ltc.tensor({ 3 }, "int64"), s)   -- index 3 of 2: fails at the sync
      x:totable()
    end)
    assert.is_false(ok)
    assert.matches("index 3 out of range", err, 1, true)
    assert.are.same({ 3, 6 }, x:totable())
    assert.are.equal("mul", x.grad_fn.name)
    x:sum():backward()
    assert.are.same({ 3, 3 }, w.grad:totable())  -- through mul_ (kept) and w * 1
    assert.is_nil(s.grad)                         -- the failed index_add_ is gone
  end)

  it("goes back to the history before every write when all of them depended on it", function()
    local w = ltc.tensor({ 1.0, 2.0 }):requires_grad_()
    local x = (w * 2):detach():requires_grad_(false)
    ltc.sync()
    local ok = pcall(function()
      x:index_add_(1, ltc.tensor({ 0 }, "int64"), w:narrow(1, 1, 1))
      x:totable()
    end)
    assert.is_false(ok)
    assert.are.same({ 2, 4 }, x:totable())
    assert.is_false(x.requires_grad)
    assert.is_nil(x.grad_fn)
  end)
end)
