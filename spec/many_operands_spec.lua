-- cat and stack of more tensors than a graph node takes (64 operands): a cat of runs of 64,
-- with gradients, so recurrent modules run over long sequences (seen: nn.GRU over 140 steps
-- raised "stack: at most 64 tensors").
local ltc = require "ltc"

describe("cat and stack of many tensors", function()
  it("stack 150 tensors: values and gradients", function()
    local ts = {}
    for i = 1, 150 do ts[i] = ltc.tensor({ i, -i }, "float64"):requires_grad_() end
    local s = ltc.stack(ts, 1)
    assert.are.same({ 150, 2 }, s:size())
    assert.are.same({ 150, -150 }, s[150]:totable())
    assert.are.same({ 65, -65 }, s[65]:totable())
    local w = ltc.arange(1, 301, 1, "float64"):reshape({ 150, 2 })
    ;(s * w):sum():backward()
    assert.are.same({ 1, 2 }, ts[1].grad:totable())
    assert.are.same({ 129, 130 }, ts[65].grad:totable())
    assert.are.same({ 299, 300 }, ts[150].grad:totable())
    local s2 = ltc.stack(ts, -1)
    assert.are.same({ 2, 150 }, s2:size())
    assert.are.same({ 64, -64 }, { s2[1][64], s2[2][64] })
  end)

  it("cat 200 tensors along a dim, empty ones included", function()
    local ts = {}
    for i = 1, 200 do ts[i] = ltc.full({ 1, 2 }, i) end
    ts[100] = ltc.zeros(0, 2)
    local c = ltc.cat(ts, 1)
    assert.are.same({ 199, 2 }, c:size())
    assert.are.same({ 99, 99 }, c[99]:totable())
    assert.are.same({ 101, 101 }, c[100]:totable())
    assert.are.same({ 200, 200 }, c[199]:totable())
  end)

  it("an nn.GRU over 140 steps", function()
    ltc.manual_seed(1)
    local gru = ltc.nn.GRU(3, 5)
    local out, h = gru(ltc.randn(140, 2, 3))
    assert.are.same({ 140, 2, 5 }, out:size())
    assert.are.same({ 1, 2, 5 }, h:size())
    assert.are.same(out[140]:totable(), h[1]:totable())
  end)
end)
