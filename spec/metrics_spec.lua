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
