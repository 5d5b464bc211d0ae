-- r07 at full length (issue 17): consuming a buffer with narrow, one read (a sync) per step,
-- and x = x:t() in a loop, 100,000 steps each, at flat memory. Each view used to copy its
-- source's step list: 4,000 narrow steps peaked at 3.66 GB and 6,000 t() at 8.2 GB.
local ltc = require "ltc"

-- Under AddressSanitizer (make test-asan) freed memory sits in its quarantine, so RSS says
-- nothing there: the steps run (10,000 of them) and the memory check is left out.
local sanitized = os.getenv("ASAN_OPTIONS") ~= nil
local N = sanitized and 10000 or 100000

local function rss_kb()
  if sanitized then return nil end
  local f = io.open("/proc/self/status")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return tonumber(s:match("VmRSS:%s*(%d+) kB"))
end

describe("100,000 chained views", function()
  it("consume a buffer with narrow at flat memory, reading each head", function()
    local rest = ltc.arange(0, N + 1, 1, "float64")
    local total, warm = 0, nil
    for i = 1, N do
      total = total + rest[1]
      rest = rest:narrow(1, 2, rest:size(1) - 1)
      if i == N // 10 then collectgarbage(); warm = rss_kb() end
    end
    collectgarbage()
    local last = rss_kb()
    assert.are.equal(N * (N - 1) / 2, total)
    assert.are.same({ N }, rest:totable())
    assert.are.equal(1, ltc.debug.view_steps(rest))
    if warm and last then
      assert.is_true(last < warm * 1.05 + 4096, string.format("RSS %d kB -> %d kB", warm, last))
    end
  end)

  it("x = x:t() 100,000 times keeps one step and flat memory", function()
    local x = ltc.arange(1, 13, 1, "float32"):reshape({ 3, 4 })
    local warm
    for i = 1, N do
      x = x:t()
      if i % 10000 == 0 then assert.are.equal(78, x:sum():item()) end
      if i == N // 10 then collectgarbage(); warm = rss_kb() end
    end
    collectgarbage()
    local last = rss_kb()
    assert.are.same({ 3, 4 }, x:size())
    assert.are.equal(1, ltc.debug.view_steps(x))   -- the reshape (the t()s cancel)
    if warm and last then
      assert.is_true(last < warm * 1.05 + 4096, string.format("RSS %d kB -> %d kB", warm, last))
    end
  end)
end)
