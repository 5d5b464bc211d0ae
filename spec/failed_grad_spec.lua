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

-- fuzz seed 357833, program 1751 (CI): a sync that fails rewinds the tensors it wrote in
-- place; giving a tensor back the autograd node it had released the node of the failed
-- write (lerp_'s, which saved the weight) at once, freeing tensors the recovery was still
-- walking: a use after free in rewind_dependents, then a double free. That release now
-- waits for the end of the sync.
describe("the recovery of a failed sync", function()
  it("rewinds an in-place write whose autograd node held a tensor of the step, and the runtime goes on", function()
    local a = ltc.tensor(1.5, "float64"):requires_grad_()
    local b = ltc.tensor({ { -0.5 }, { -2.0 } }, "float16")
    local e = ltc.addcdiv(b, a, ltc.tensor({ { -0.5 }, { -3.0 } }, "float16"), -1.0)
    local w = ltc.tensor({ { 1.5 } }):requires_grad_()
    local ce = w:cross_entropy(ltc.tensor({ 0 }, "int64"), 0) -- out of range: fails at the sync
    e:lerp_(b:ceil(), ce)
    local ok, msg = pcall(ltc.sync)
    assert.is_false(ok)
    assert.truthy(tostring(msg):find("cross_entropy: target 0 out of range for 1 classes", 1, true), msg)
    collectgarbage()
    collectgarbage()
    assert.is_true((pcall(ltc.sync)))
    -- e went back to its value before the failed write: addcdiv(b, a, d, -1) = b - a / d
    assert.are.same({ { 2.5 }, { -1.5 } }, e:to("float32"):totable())
    for i = 1, 50 do assert.are.equal(3 * i, (ltc.ones(3) * i):sum():item()) end
  end)
end)
