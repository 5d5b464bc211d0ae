-- ltc.metrics: counters and timed metrics, reported in PyTorch LTC's text format.
local ltc = require "ltc"

describe("ltc.metrics", function()
  it("reports timers with samples, accumulator, rates and percentiles, then counters", function()
    ltc.sync()
    ltc.metrics.reset()
    for i = 1, 3 do
      local _ = (ltc.ones(4, 13) * i):exp():sum():item() -- one compile, three executions
    end
    assert.are.equal(1, ltc.metrics.counter("UncachedCompile"))
    assert.are.equal(2, ltc.metrics.counter("CachedCompile"))
    local r = ltc.metrics.report()
    local exec = r:match("Metric: ExecuteTime\n(.-)\nMetric") or r:match("Metric: ExecuteTime\n(.-)\nCounter")
    assert.truthy(exec, r)
    assert.truthy(exec:match("^  TotalSamples: 3\n"), exec)
    assert.truthy(exec:match("\n  Accumulator: [%dsmu.]+us\n"), exec)
    assert.truthy(exec:match("\n  ValueRate: [%dsmu.]+us / second\n"), exec)
    assert.truthy(exec:match("\n  Rate: [%d.e+]+ / second\n"), exec)
    assert.truthy(exec:match("\n  Percentiles: 1%%=[%dsmu.]+us; 5%%=.*; 99%%=[%dsmu.]+us$"), exec)
    assert.truthy(r:find("Metric: CompileTime\n  TotalSamples: 1\n", 1, true), r)
    assert.truthy(r:find("Counter: UncachedCompile\n  Value: 1\n", 1, true), r)
    assert.truthy(r:find("Counter: CachedCompile\n  Value: 2\n", 1, true), r)
    assert.truthy(r:find("Counter: MarkStep\n  Value: 3\n", 1, true), r)
  end)

  -- Nearest-rank percentiles: with two samples, 99% is the larger (it was the smaller: the
  -- index (n - 1) * p / 100 rounded every percentile of two samples down to the first).
  it("shows the largest of a few samples at the top percentiles", function()
    local x = ltc.randn(1 << 22)
    ltc.sync()
    ltc.metrics.reset()
    local _ = (ltc.ones(2) * 3):sum():item()   -- a tiny execution
    _ = ((x * 3):exp() + x):sin():sum():item() -- a 4M-element one, far slower
    local exec = ltc.metrics.report():match("Metric: ExecuteTime\n(.-)\nMetric")
      or ltc.metrics.report():match("Metric: ExecuteTime\n(.-)\nCounter")
    assert.truthy(exec:match("^  TotalSamples: 2\n"), exec)
    local function us(p)
      local v, unit = exec:match(" " .. p .. "%%=([%d.]+)(%a+)")
      local scale = { us = 1, ms = 1e3, s = 1e6, ns = 1e-3 }
      assert.truthy(v and scale[unit], exec)
      return tonumber(v) * scale[unit]
    end
    assert.is_true(us(99) > 10 * us(1), exec)
    assert.are.equal(us(1), us(50))
    assert.are.equal(us(80), us(99))
  end)

  it("names its counters and resets them", function()
    local _ = ltc.ones(2):sum():item()
    local names = {}
    for _, n in ipairs(ltc.metrics.counter_names()) do names[n] = true end
    assert.is_true(names.MarkStep)
    assert.is_true(names.CreateLtcTensor)
    assert.is_true(ltc.metrics.counter("MarkStep") > 0)
    ltc.metrics.reset()
    assert.are.equal(0, ltc.metrics.counter("MarkStep"))
    assert.are.equal(0, ltc.metrics.counter("NoSuchCounter"))
    assert.falsy(ltc.metrics.report():find("Metric: ExecuteTime", 1, true))
  end)
end)
