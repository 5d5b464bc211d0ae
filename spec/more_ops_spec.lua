-- The ops of issue 15 beyond their fixtures (spec/fixtures/ops, run by backends_spec.lua):
-- errors named by op, and behaviour that fixtures cannot show.
local ltc = require "ltc"

describe("polygamma", function()
  it("is +inf at the poles of trigamma", function()
    assert.are.same({ math.huge, math.huge }, ltc.tensor({ -2, 0 }, "float64"):polygamma(1):totable())
  end)

  it("rejects an order other than 0 or 1, naming it", function()
    assert.has_error(function() ltc.ones(2):polygamma(2) end,
      "polygamma: order must be 0 (digamma) or 1 (trigamma), got 2")
    assert.are.same({ 1, 1 }, ltc.ones(2):totable()) -- the runtime goes on
  end)
end)

describe("sorting", function()
  it("keeps equal elements in order (stable), also descending", function()
    local v, i = ltc.tensor({ 2, 1, 2, 1, 2 }):sort(1, true)
    assert.are.same({ 2, 2, 2, 1, 1 }, v:totable())
    assert.are.same({ 1, 3, 5, 2, 4 }, i:totable())
  end)

  it("counts NaN apart in mode (NaN never equals NaN)", function()
    local v, i = ltc.tensor({ 1, 0 / 0, 0 / 0, 0.5 }):mode()
    assert.are.equal(0.5, v:item())
    assert.are.equal(4, i:item())
  end)

  it("names k and the size when k is out of range", function()
    local m = ltc.zeros(2, 3)
    assert.has_error(function() m:topk(4) end, "topk: k (4) out of range for dim 2 of [2,3] (0..3)")
    assert.has_error(function() m:kthvalue(0, 1) end, "kthvalue: k (0) out of range for dim 1 of [2,3] (1..2)")
    assert.has_error(function() ltc.zeros(0):median() end)
  end)
end)

describe("tril and triu", function()
  it("want at least 2 dims", function()
    assert.has_error(function() ltc.ones(3):tril() end,
      "tril: self must have at least 2 dims (matrices), got [3]")
  end)
end)
