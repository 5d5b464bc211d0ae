-- A loop that never syncs is cut by trim syncs, and each trim first collects Lua garbage,
-- so only reachable tensors are computed and kept (without that, every dead intermediate
-- of the loop got its own buffer: 18 GB for 200000 steps of a 256x256 tensor).
local ltc = require "ltc"

local function rss_kb()
  for line in io.lines("/proc/self/status") do
    local kb = line:match("^VmRSS:%s+(%d+)")
    if kb then return tonumber(kb) end
  end
end

describe("graph trimming", function()
  it("keeps memory flat in a loop with no sync", function()
    local old = ltc.config.LTC_TRIM_GRAPH_SIZE
    ltc.config.LTC_TRIM_GRAPH_SIZE = 2000
    local x = ltc.zeros(32, 32)
    ltc.sync()
    collectgarbage()
    local trims, r0 = ltc.metrics.counter("TrimIrGraph"), rss_kb()
    for _ = 1, 60000 do x = x + 1 end
    local grown = rss_kb() - r0
    ltc.config.LTC_TRIM_GRAPH_SIZE = old
    assert.is_true(ltc.metrics.counter("TrimIrGraph") - trims >= 25)
    assert.equal(60000, x[1][1])
    -- 60000 dead 4 KB intermediates would be 240 MB; reachable ones only: a few MB
    assert.is_true(grown < 48 * 1024, "RSS grew by " .. grown .. " kB")
  end)
end)
