-- A lazy error raised at a sync names the op and, with LTC_IR_DEBUG, the source line that
-- traced it (the plan step keeps the node's record), not only the line of the sync.
local ltc = require "ltc"

describe("an error found when a graph runs", function()
  after_each(function() ltc.config.LTC_IR_DEBUG = 0 end)

  it("names the op and the line that traced it", function()
    ltc.config.LTC_IR_DEBUG = 1
    local a = ltc.tensor({ 7, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11 }, "int64") -- a shape of its own
    local q = a // 0 local line = debug.getinfo(1, "l").currentline
    local ok, e = pcall(function() return q:totable() end)
    assert.is_false(ok)
    assert.matches("floor_divide: integer division by zero", e)
    assert.matches("the op was traced at [^ ]*lazy_error_line_spec%.lua:" .. line, e)
  end)

  it("keeps the message as it is without LTC_IR_DEBUG", function()
    local q = ltc.tensor({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 }, "int32") % 0
    local ok, e = pcall(function() return q:totable() end)
    assert.is_false(ok)
    assert.matches("remainder: integer modulo by zero %(// 0 and %% 0 of an integer tensor, "
      .. "uint8, int8, int16 or int32, raise, as PyTorch's ZeroDivisionError; use a float "
      .. "tensor for inf/nan%)$", e)
  end)
end)
