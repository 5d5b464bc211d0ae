-- PyTorch's tensor fields t.shape, t.ndim and t.T (they were nil, silently).
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
