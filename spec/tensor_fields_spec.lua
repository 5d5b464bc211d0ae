-- PyTorch's tensor fields t.shape, t.ndim and t.T (they were nil, silently), and the error of
-- Lua's < and <= on a tensor (it named neither operand nor what to use).
local ltc = require "ltc"

describe("tensor fields", function()
  it("t.shape is t:size(), t.ndim t:dim()", function()
    local x = ltc.zeros(2, 3, 4)
    assert.are.same({ 2, 3, 4 }, x.shape)
    assert.are.equal(3, x.ndim)
    assert.are.same({}, ltc.tensor(5).shape)
    assert.are.equal(0, ltc.tensor(5).ndim)
  end)

  it("t.T reverses the dims (torch: x.T[3][2][1] == x[0][1][2]), a view", function()
    local x = ltc.arange(24):view(2, 3, 4)
    assert.are.same({ 4, 3, 2 }, x.T.shape)
    assert.are.equal(x[1][2][3], x.T[3][2][1])
    assert.are.same({ { 1, 3 }, { 2, 4 } }, ltc.tensor({ { 1, 2 }, { 3, 4 } }).T:totable())
    assert.are.same({ 1, 2 }, ltc.tensor({ 1, 2 }).T:totable())
    local m = ltc.zeros(2, 2)
    m.T[1][2] = 7 -- writes through the view
    assert.are.same({ { 0, 0 }, { 7, 0 } }, m:totable())
  end)
end)

describe("Lua's < and <= on tensors", function()
  local err = dofile("spec/support/err.lua")
  it("raise naming the operands and the elementwise ops to use", function()
    err(function() return ltc.ones(2) < ltc.ones(2) end,
      "attempt to compare a tensor of size [2] with a tensor of size [2]: a comparison of tensors is elementwise, t:lt(x)")
    err(function() return 3 <= ltc.tensor(1) end, "attempt to compare number with a tensor of size []")
  end)
  it("say what a number argument is under ltc.jit", function()
    local f = ltc.jit(function(x, n) if n > 2 then return x * 2 end return x end)
    err(function() f(ltc.ones(2), 3) end, "under ltc.jit, Lua-number arguments reach fn as 0-d tensors")
  end)
end)

describe("t.grad_fn", function()
  it("names the op and prints as PyTorch prints one", function()
    local a = ltc.ones(2):requires_grad_()
    local y = (a * 2):log_softmax(1)
    assert.are.equal("log_softmax", y.grad_fn.name)
    assert.are.equal("<LogSoftmaxBackward>", tostring(y.grad_fn))
    assert.are.equal("<MaxBackward>", tostring(a:max(1).grad_fn))
    assert.is_nil(a.grad_fn)
  end)
end)
