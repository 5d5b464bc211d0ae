-- The random ops dropout, randint and bernoulli (and rand_like/randn_like), which PyTorch
-- fixtures cannot pin down: checked by their defining properties and by the two backends
-- drawing the same numbers from the same seed. Also the in-place and data-dependent
-- companions of the masking ops (masked_fill_, masked_select and nonzero syncing).
local ltc = require "ltc"

local function flat(t, out)
  out = out or {}
  if type(t) ~= "table" then out[#out + 1] = t; return out end
  for _, v in ipairs(t) do flat(v, out) end
  return out
end

-- Runs f on both backends from the same seed; the results' values must be identical.
local function same_on_both(f)
  local got = {}
  for _, be in ipairs({ "cpu", "ref" }) do
    ltc.set_backend(be)
    ltc.manual_seed(11)
    got[be] = f():totable()
  end
  ltc.set_backend("cpu")
  assert.are.same(got.cpu, got.ref)
  return got.cpu
end

describe("dropout", function()
  after_each(function() ltc.set_backend("cpu") end)

  it("zeroes about p of the elements and scales the rest by 1/(1-p), the same on both backends", function()
    local x = ltc.randn(4000) + 3
    local xs = flat(x:totable())
    local v = flat(same_on_both(function() return ltc.dropout(x, 0.25) end))
    local zeros = 0
    for i, y in ipairs(v) do
      if y == 0 then zeros = zeros + 1
      else assert(math.abs(y - xs[i] / 0.75) <= 1e-5 * math.abs(y), "kept element not scaled") end
    end
    assert(zeros > 850 and zeros < 1150, "zeroed " .. zeros .. " of 4000 at p = 0.25")
  end)

  it("draws fresh numbers each call and matches ltc.rand's draws", function()
    ltc.manual_seed(3)
    local a = ltc.dropout(ltc.ones(64), 0.5):totable()
    local b = ltc.dropout(ltc.ones(64), 0.5):totable()
    assert.are_not.same(a, b)
    ltc.manual_seed(3)
    local keep = ltc.rand(64):lt(0.5):totable()
    for i = 1, 64 do assert.are.equal(keep[i] and 2 or 0, a[i]) end
  end)

  it("is the identity when not training or when p is 0, and gives zeros for p = 1", function()
    local x = ltc.tensor({ { 1, -2 }, { 3.5, 4 } }, "float64")
    assert.are.same(x:totable(), x:dropout(0.5, false):totable())
    assert.are.same(x:totable(), x:dropout(0):totable())
    assert.are.same({ { 0, 0 }, { 0, 0 } }, x:dropout(1):totable())
  end)

  it("rejects p outside [0, 1] and integer tensors", function()
    assert.has_error(function() ltc.dropout(ltc.ones(3), 1.5) end)
    assert.has_error(function() ltc.dropout(ltc.ones(3, "int64"), 0.5) end)
  end)

  it("compiles once in a loop (the generator state is a parameter, not baked in)", function()
    local x = ltc.ones(8)
    ltc.sync()
    ltc.dropout(x, 0.5):sum():item()
    ltc.metrics.reset()
    for _ = 1, 3 do ltc.dropout(x, 0.5):sum():item() end
    assert.are.equal(0, ltc.metrics.counter("UncachedCompile"))
  end)
end)

describe("randint", function()
  after_each(function() ltc.set_backend("cpu") end)

  it("draws int64 values in [low, high) covering the range, the same on both backends", function()
    local v = flat(same_on_both(function() return ltc.randint(-3, 4, 50, 40) end))
    local seen, sum = {}, 0
    for _, x in ipairs(v) do
      assert(math.type(x) == "integer" and x >= -3 and x < 4, "out of range: " .. tostring(x))
      seen[x] = true
      sum = sum + x
    end
    for k = -3, 3 do assert(seen[k], "never drew " .. k) end
    assert(math.abs(sum / #v) < 0.2, "mean " .. sum / #v)
    assert.are.equal("int64", ltc.randint(0, 2, { 3 }):dtype())
    assert.are.equal("int32", ltc.randint(0, 2, { 3 }, "int32"):dtype())
  end)

  it("rejects an empty range", function()
    assert.has_error(function() ltc.randint(5, 5, 3) end, "randint: low (5) must be less than high (5)")
  end)
end)

describe("bernoulli", function()
  after_each(function() ltc.set_backend("cpu") end)

  it("draws 1 with probability p from a tensor of probabilities, the same on both backends", function()
    local p = ltc.tensor({ 0, 1, 0.3 }):repeatTensor(2000, 1)
    local v = same_on_both(function() return ltc.bernoulli(p) end)
    local ones = 0
    for _, row in ipairs(v) do
      assert.are.equal(0, row[1])
      assert.are.equal(1, row[2])
      ones = ones + row[3]
    end
    assert(ones > 520 and ones < 680, ones .. " ones of 2000 at p = 0.3")
  end)

  it("t:bernoulli(p) keeps t's size and dtype", function()
    local v = same_on_both(function() return ltc.zeros({ 3000 }, "int32"):bernoulli(0.75) end)
    local ones = 0
    for _, x in ipairs(v) do ones = ones + x end
    assert(ones > 2150 and ones < 2350, ones .. " ones of 3000 at p = 0.75")
    assert.are.equal("int32", ltc.zeros({ 2 }, "int32"):bernoulli(0.5):dtype())
    assert.has_error(function() ltc.ones(2):bernoulli(2) end)
  end)
end)

describe("creation from another tensor", function()
  it("rand_like and randn_like take the size and dtype, and draw from the generator", function()
    local t = ltc.zeros({ 2, 3 }, "float64")
    ltc.manual_seed(5)
    local a = ltc.rand_like(t)
    ltc.manual_seed(5)
    assert.are.same(ltc.rand({ 2, 3 }, "float64"):totable(), a:totable())
    assert.are.same({ 2, 3 }, ltc.randn_like(t):size())
    assert.are.equal("float32", ltc.randn_like(t, "float32"):dtype())
  end)
end)

describe("masking", function()
  after_each(function() ltc.set_backend("cpu") end)

  for _, be in ipairs({ "cpu", "ref" }) do
    it("masked_fill_ writes in place, also through a view, on the " .. be .. " backend", function()
      ltc.set_backend(be)
      local x = ltc.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, "int64")
      local r = x:narrow(2, 2, 2)
      r:masked_fill_(r:gt(2), 0.5) -- int64 keeps its dtype: 0.5 becomes 0
      assert.are.same({ { 1, 2, 0 }, { 4, 0, 0 } }, x:totable())
      x:masked_fill_(ltc.tensor({ true, false, false }), -7)
      assert.are.same({ { -7, 2, 0 }, { -7, 0, 0 } }, x:totable())
    end)
  end

  it("masked_select and nonzero sync to learn their size", function()
    local x = ltc.tensor({ 1, 0, 2 }) * 3
    ltc.metrics.reset()
    assert.are.same({ 3, 6 }, x:masked_select(x:gt(0)):totable())
    assert.are.same({ { 1 }, { 3 } }, x:nonzero():totable())
    assert(ltc.metrics.counter("MarkStep") >= 2, "no sync counted")
  end)

  it("masked_select rejects a mask that is not bool or does not broadcast", function()
    local x = ltc.ones(2, 3)
    assert.has_error(function() x:masked_select(ltc.ones(2, 3)) end,
      "masked_select: mask must be a bool tensor, got float32")
    assert.has_error(function() x:masked_select(ltc.ones({ 4 }, "bool")) end,
      "masked_select: sizes {2,3} and {4} are not broadcastable")
  end)
end)

describe("batch_norm's front end", function()
  it("leaves the running statistics alone in inference and updates them when training", function()
    local x = ltc.tensor({ { 1, 2 }, { 3, 6 } })
    local rm, rv = ltc.zeros(2), ltc.ones(2)
    ltc.batch_norm(x, rm, rv):totable()
    assert.are.same({ 0, 0 }, rm:totable())
    ltc.batch_norm(x, rm, rv, nil, nil, true, 0.5):totable()
    assert.are.same({ 1, 2 }, rm:totable())   -- 0.5 * 0 + 0.5 * {2, 4}
    assert.are.same({ 1.5, 4.5 }, rv:totable()) -- 0.5 * 1 + 0.5 * {2, 8} (unbiased)
  end)
end)
