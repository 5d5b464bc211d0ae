-- PyTorch's positional constructor arguments followed by an options table, and keyword
-- tables whose values have the wrong type: a break-it session of 2026-12-04 found
-- nn.Conv2d(1, 2, 3, 1, {padding = 1}) building a conv without padding (its forward then
-- raised about a table of 0), nn.Conv2d(1, 2, 3, 2, 1, {bias = false}) keeping its bias,
-- nn.MaxPool2d(2, 2, {padding = 1}) printing "padding=()", nn.Linear(2, 3, true, {bias =
-- false}) keeping the positional bias silently, and x:sum{dim = 2, keepdim = 1} dropping the
-- dim (a 1 read as false). Each now goes through ltc.nn_positional as Conv1d and LSTM do.
local ltc = require "ltc"
local nn = ltc.nn

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok)
  return tostring(e)
end

describe("module constructors with positional arguments and an options table", function()
  it("Conv2d reads the options after its positional ones (PyTorch: Conv2d(1, 2, 3, 1, padding=1))", function()
    local m = nn.Conv2d(1, 2, 3, 1, { padding = 1 })
    assert.are.equal(1, m.padding)
    -- a 5x5 image stays 5x5 with padding 1 (by hand: (5 + 2 - 3) / 1 + 1)
    assert.are.same({ 1, 2, 5, 5 }, m(ltc.ones(1, 1, 5, 5)):size())
    assert.is_nil(nn.Conv2d(1, 2, 3, 2, 1, { bias = false }).bias)
    -- the all-ones image through a one-filter conv of ones, no bias, padding 1: 4 at a corner
    local c = nn.Conv2d(1, 1, 3, 1, { padding = 1, bias = false })
    c.weight = ltc.ones(1, 1, 3, 3)
    local y = c(ltc.ones(1, 1, 3, 3))
    assert.are.same({ { 4, 6, 4 }, { 6, 9, 6 }, { 4, 6, 4 } }, y[1][1]:totable())
    -- a {h, w} pair is a positional value, not an options table
    local p = nn.Conv2d(1, 2, { 3, 3 }, { 2, 1 }, 1)
    assert.are.same({ 2, 1 }, p.stride)
    assert.truthy(err_of(nn.Conv2d, 1, 2, 3, 1, 1, { padding = 1 }):find(
      "Conv2d: got multiple values for 'padding'", 1, true))
    assert.truthy(err_of(nn.Conv2d, 1, 2, 3, { paddin = 1 }):find("Conv2d: unknown option 'paddin'", 1, true))
  end)

  it("MaxPool2d and AvgPool2d read the options after their positional ones", function()
    local mp = nn.MaxPool2d(2, 2, { padding = 1 })
    assert.are.equal(1, mp.padding)
    assert.are.equal(2, mp.stride)
    -- 4x4 with padding 1, window 2, stride 2: (4 + 2 - 2) / 2 + 1 = 3
    assert.are.same({ 1, 1, 3, 3 }, mp(ltc.ones(1, 1, 4, 4)):size())
    local ap = nn.AvgPool2d(2, 2, { padding = 1 })
    assert.are.equal(1, ap.padding)
    assert.are.same({ 1, 1, 3, 3 }, ap(ltc.ones(1, 1, 4, 4)):size())
    assert.are.same({ 2, 1 }, nn.AvgPool2d(2, { 2, 1 }).stride)
    assert.are.equal(1, nn.MaxPool2d(2, { stride = 1 }).stride)
  end)

  it("Linear takes bias positionally or in the table, not both", function()
    assert.is_nil(nn.Linear(2, 3, false).bias)
    assert.is_nil(nn.Linear(2, 3, { bias = false }).bias)
    assert.truthy(err_of(nn.Linear, 2, 3, true, { bias = false }):find(
      "Linear: got multiple values for 'bias'", 1, true))
    assert.truthy(err_of(nn.Linear, 2, 3, 1):find("Linear", 1, true))
  end)
end)

describe("a reduction's keyword keepdim", function()
  it("must be a boolean (a 1 was read as false and the dim dropped)", function()
    local x = ltc.ones(2, 3)
    assert.are.same({ 2, 1 }, x:sum { dim = 2, keepdim = true }:size())
    assert.are.same({ 2 }, x:sum { dim = 2, keepdim = false }:size())
    for _, f in ipairs { "sum", "mean", "amax", "var" } do
      local e = err_of(function() local y = x[f](x, { dim = 2, keepdim = 1 }); return y end)
      assert.truthy(e:find(f .. ": option keepdim must be a boolean, not number", 1, true), e)
    end
    assert.are.same({ 1, 1, 1, 1, 1, 1 }, x:reshape(-1):totable()) -- the runtime goes on
  end)
end)
