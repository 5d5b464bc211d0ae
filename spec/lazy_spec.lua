-- Laziness, the compile cache and the live-tensor accounting (DESIGN.md, "Hashing and the
-- compile cache"). Counters are compared as deltas, since other specs share the process.
local ltc = require "ltc"

local NAMES = {"MarkStep", "UncachedCompile", "CachedCompile", "CreateLtcTensor",
               "DestroyLtcTensor"}

local function snapshot()
  local s = {}
  for _, n in ipairs(NAMES) do s[n] = ltc.metrics.counter(n) end
  return s
end

local function delta(before)
  local d = {}
  for _, n in ipairs(NAMES) do d[n] = ltc.metrics.counter(n) - before[n] end
  return d
end

-- Starts a test from a clean slate: nothing pending, no unreachable tensors.
local function settle()
  ltc.sync()
  collectgarbage()
  collectgarbage()
end

describe("tracing", function()
  before_each(settle)

  it("executes nothing before a sync", function()
    local before = snapshot()
    local a = ltc.tensor({{1, -2}, {3, -4}})
    local b = ((a * 2 + 1):relu():exp():log() - 1):sum()
    local d = delta(before)
    assert.are.equal(0, d.MarkStep)
    assert.are.equal(0, d.UncachedCompile)
    assert.are.equal(0, d.CachedCompile)
    assert.is_true(ltc.debug.pending().pending_tensors >= 1)
    -- relu(a*2+1) = {{3, 0}, {7, 0}}; exp then log gives it back; minus 1, summed: 2 + -1 + 6 + -1
    assert.are.equal(6, b:item())
    d = delta(before)
    assert.are.equal(1, d.MarkStep)
    assert.are.equal(1, d.UncachedCompile + d.CachedCompile)
    assert.are.equal(0, ltc.debug.pending().pending_tensors)
  end)

  it("syncs on totable, tostring, a number read and ltc.sync", function()
    local a = ltc.tensor({1, 2, 3})
    local reads = {
      function() return (a + 1):totable()[1] end,
      function() tostring(a + 1); return 2 end,
      function() return (a + 1)[1] end,
      function() local b = a + 1; ltc.sync(); return 2 end,
    }
    for k, read in ipairs(reads) do
      local before = snapshot()
      assert.are.equal(2, read())
      assert.are.equal(1, delta(before).MarkStep, "read " .. k .. " did not sync once")
    end
  end)

  it("does not sync to read a tensor that holds data", function()
    local a = ltc.tensor({5, 6})
    local before = snapshot()
    assert.are.same({5, 6}, a:totable())
    assert.are.equal(5, a[1])
    assert.are.equal(0, delta(before).MarkStep)
  end)
end)

describe("the compile cache", function()
  before_each(settle)

  it("compiles a loop of 10 identical steps with a changing Lua scalar once", function()
    -- a 1x3 float64 input, a shape no other spec uses, so the first step must compile
    local x = ltc.tensor({{1, 2, 3}}, "float64")
    local before = snapshot()
    for i = 1, 10 do
      local s = i / 2 -- 0.5, 1.0 (equal to the other scalar), 1.5, ..., 5.0
      local y = x * s + 1
      assert.are.same({{1 + s, 1 + 2 * s, 1 + 3 * s}}, y:totable(), "step " .. i)
    end
    local d = delta(before)
    assert.are.equal(10, d.MarkStep)
    assert.are.equal(1, d.UncachedCompile)
    assert.are.equal(9, d.CachedCompile)
  end)

  it("gives t0*t1+t2 and t0*t2+t1 their own answers", function()
    local t0, t1, t2 = ltc.tensor({2, 3}), ltc.tensor({5, 7}), ltc.tensor({11, 13})
    assert.are.same({21, 34}, (t0 * t1 + t2):totable())
    assert.are.same({27, 46}, (t0 * t2 + t1):totable())
    -- and again, now that both are cached, in the other order
    assert.are.same({27, 46}, (t0 * t2 + t1):totable())
    assert.are.same({21, 34}, (t0 * t1 + t2):totable())
  end)

  it("gives t0*t1+t2 and t0*t2+t1 their own answers over computed inputs", function()
    local t0, t1, t2 = ltc.tensor({1, 2}) + 1, ltc.tensor({4, 6}) + 1, ltc.tensor({10, 12}) + 1
    ltc.sync()
    assert.are.same({21, 34}, (t0 * t1 + t2):totable())
    assert.are.same({27, 46}, (t0 * t2 + t1):totable())
  end)

  it("gives t0*t0 and t0*t1 their own answers", function()
    local t0, t1 = ltc.tensor({2, 3}), ltc.tensor({5, 7})
    assert.are.same({10, 21}, (t0 * t1):totable())
    assert.are.same({4, 9}, (t0 * t0):totable())
    assert.are.same({10, 21}, (t0 * t1):totable())
    local u0, u1 = ltc.tensor({-1, 4}), ltc.tensor({3, 0.5})
    assert.are.same({1, 16}, (u0 * u0):totable())
    assert.are.same({-3, 2}, (u0 * u1):totable())
  end)

  it("gives t0*t1+t0 and t0*t1+t1 their own answers (same nodes, other wiring)", function()
    local t0, t1 = ltc.tensor({2, 3}), ltc.tensor({5, 7})
    assert.are.same({12, 24}, (t0 * t1 + t0):totable())
    assert.are.same({15, 28}, (t0 * t1 + t1):totable())
    assert.are.same({12, 24}, (t0 * t1 + t0):totable())
  end)

  it("gives ops with neighbouring numbers and attributes their own graphs (tril 1 vs triu 0)", function()
    -- the node hash once chained op and attributes through XXH3's seed only, and these two
    -- one-node graphs hashed alike: triu reused tril's computation (fuzz seed 505)
    local a = ltc.tensor({ { 0.5 }, { -0.5 }, { -1.0 } }, "float64")
    ltc.sync()
    assert.are.same({ { 0.5 }, { -0.5 }, { -1 } }, ltc.tril(a, 1):totable())
    assert.are.same({ { 0.5 }, { 0 }, { 0 } }, ltc.triu(a):totable())
    local h1 = ltc.debug.ir(ltc.tril(a, 1)):match("hash (%x+)")
    local h2 = ltc.debug.ir(ltc.triu(a, 0)):match("hash (%x+)")
    assert.are_not.equal(h1, h2)
  end)

  it("keeps a scalar equal to another scalar its own parameter", function()
    local x = ltc.tensor({1, 2})
    assert.are.same({6, 8}, ((x + 2) * 2):totable())
    assert.are.same({9, 12}, ((x + 2) * 3):totable())
    assert.are.same({6, 9}, ((x + 1) * 3):totable())
  end)

  it("compiles a randn loop once and draws different numbers each step", function()
    ltc.manual_seed(123)
    local before = snapshot()
    local prev
    for i = 1, 5 do
      local r = ltc.randn(3, 7):totable()
      assert.are.equal(3, #r)
      assert.are.equal(7, #r[1])
      if prev then assert.are_not.same(prev, r, "step " .. i .. " drew the same numbers") end
      prev = r
    end
    local d = delta(before)
    assert.are.equal(1, d.UncachedCompile)
    assert.are.equal(4, d.CachedCompile)
  end)
end)

describe("tensor lifetimes", function()
  before_each(settle)

  it("count created tensors and destroyed ones after collectgarbage", function()
    local before = snapshot()
    local t = ltc.tensor({1, 2})
    assert.are.equal(1, delta(before).CreateLtcTensor)
    assert.are.equal(0, delta(before).DestroyLtcTensor)
    local u = t * 2
    assert.is_true(delta(before).CreateLtcTensor >= 2)
    assert.are.same({2, 4}, u:totable())
    t, u = nil, nil
    collectgarbage()
    collectgarbage()
    local d = delta(before)
    assert.are.equal(d.CreateLtcTensor, d.DestroyLtcTensor)
  end)

  it("frees a tensor at the end of a <close> scope", function()
    local before = snapshot()
    do
      local t <close> = ltc.tensor({1, 2, 3})
      assert.are.equal(3, t:numel())
    end
    assert.are.equal(1, delta(before).DestroyLtcTensor)
  end)
end)

describe("ltc.debug.pending", function()
  before_each(settle)

  it("counts live tensors, pending tensors and pending nodes", function()
    local p0 = ltc.debug.pending()
    assert.are.equal(0, p0.pending_tensors)
    assert.are.equal(0, p0.pending_nodes)
    local a = ltc.tensor({1, 2})
    local p1 = ltc.debug.pending()
    assert.are.equal(p0.live_tensors + 1, p1.live_tensors)
    assert.are.equal(0, p1.pending_tensors)
    local b = a + 1
    local p2 = ltc.debug.pending()
    assert.are.equal(p0.live_tensors + 2, p2.live_tensors)
    assert.are.equal(1, p2.pending_tensors)
    assert.is_true(p2.pending_nodes >= 1)
    local c = b:exp()
    local p3 = ltc.debug.pending()
    assert.are.equal(p0.live_tensors + 3, p3.live_tensors)
    assert.are.equal(2, p3.pending_tensors)
    assert.are.equal(p2.pending_nodes + 1, p3.pending_nodes)
    ltc.sync()
    local p4 = ltc.debug.pending()
    assert.are.equal(0, p4.pending_tensors)
    assert.are.equal(0, p4.pending_nodes)
    assert.are.equal(p0.live_tensors + 3, p4.live_tensors)
    assert.are.same({2, 3}, b:totable())
    a, b, c = nil, nil, nil
    collectgarbage()
    collectgarbage()
    assert.are.equal(p0.live_tensors, ltc.debug.pending().live_tensors)
  end)
end)
