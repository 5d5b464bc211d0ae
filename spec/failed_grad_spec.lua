-- A backward whose sync fails leaves no gradient behind where there was none (issue 17, "a
-- failed step loses nothing"): PyTorch's .grad stays None when a backward raises. Before, the
-- leaf's grad was a failed tensor: reading it raised, and the next backward into it raised
-- "clone: this tensor has no value" for ever.
local ltc = require "ltc"

describe("a backward whose sync fails", function()
  it("leaves a leaf that had no grad with none, and the next backward works", function()
    local w = ltc.ones(2):requires_grad_()
    local z = w * 2
    local ok, msg = pcall(function()
      local q = z:index_select(1, ltc.tensor({ 9 }, "int64"))
      q:sum():backward()
      ltc.sync()
    end)
    assert.is_false(ok)
    assert.truthy(tostring(msg):find("index 9 out of range", 1, true), msg)
    assert.is_nil(w.grad)
    local _ = (w * 3):sum():backward()
    assert.are.same({ 3, 3 }, w.grad:totable())
  end)

  it("keeps a grad that had a value", function()
    local w = ltc.ones(2):requires_grad_()
    local _ = (w * 5):sum():backward()
    ltc.sync()
    local ok = pcall(function()
      local q = (w * 2):index_select(1, ltc.tensor({ 9 }, "int64"))
      q:sum():backward()
      ltc.sync()
    end)
    assert.is_false(ok)
    assert.are.same({ 5, 5 }, w.grad:totable())
    local _ = (w * 1):sum():backward()
    assert.are.same({ 6, 6 }, w.grad:totable())
  end)
end)
