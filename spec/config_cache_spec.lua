-- Options read when a graph is compiled (LTC_FUSION, LTC_GEMM_EPILOGUE) are part of the
-- graph's hash: setting one at run time reaches a graph already in the compile cache, and
-- setting it back finds the earlier computation again (no recompile).
local ltc = require "ltc"

describe("compile-time options and the compile cache", function()
  local function plan_of(f)
    return ltc.debug.backend_text(f())
  end

  it("LTC_FUSION set at run time changes the plan of a graph compiled before", function()
    ltc.manual_seed(3)
    local a = ltc.randn(300)
    ltc.sync()
    local f = function() return (a * 2 + 1):exp() end
    local saved = ltc.config.LTC_FUSION
    ltc.config.LTC_FUSION = 1
    local fused = plan_of(f)
    assert.truthy(fused:find("fused(mul, add, exp)", 1, true), fused)
    local want = f():totable()
    ltc.config.LTC_FUSION = 0
    local ok, err = pcall(function()
      local text = plan_of(f)
      assert.falsy(text:find("fused", 1, true), text)
      assert.are.same(want, f():totable())
      local before = ltc.metrics.counter("UncachedCompile")
      ltc.config.LTC_FUSION = 1
      assert.truthy(plan_of(f):find("fused(mul, add, exp)", 1, true))
      assert.are.equal(before, ltc.metrics.counter("UncachedCompile"))
    end)
    ltc.config.LTC_FUSION = saved
    assert(ok, err)
  end)

  it("LTC_GEMM_EPILOGUE set at run time changes the plan of a graph compiled before", function()
    ltc.manual_seed(4)
    local x, w = ltc.randn(20, 8), ltc.randn(6, 8)
    ltc.sync()
    local f = function() return ltc.linear(x, w):relu() end
    local saved = ltc.config.LTC_GEMM_EPILOGUE
    ltc.config.LTC_GEMM_EPILOGUE = 1
    local merged = plan_of(f)
    assert.truthy(merged:find("linear.nobias + fused(relu)", 1, true), merged)
    ltc.config.LTC_GEMM_EPILOGUE = 0
    local ok, err = pcall(function()
      local text = plan_of(f)
      assert.falsy(text:find("+ fused", 1, true), text)
    end)
    ltc.config.LTC_GEMM_EPILOGUE = saved
    assert(ok, err)
  end)
end)
