-- Printing past a threshold (first and last edgeitems indices with "..."), the print
-- options, and ltc.Size. Expected strings are written out by hand.
local ltc = require "ltc"

describe("tostring of a large tensor", function()
  after_each(function() ltc.set_printoptions { profile = "default" } end)

  it("summarises a 1000x1000 tensor to its corners, reading only those values", function()
    local t = ltc.arange(0, 1000000):view(1000, 1000)
    local s = tostring(t)
    local want = {
      "      0       1       2  ...     997     998     999",
      "   1000    1001    1002  ...    1997    1998    1999",
      "   2000    2001    2002  ...    2997    2998    2999",
      " ...",
      " 997000  997001  997002  ...  997997  997998  997999",
      " 998000  998001  998002  ...  998997  998998  998999",
      " 999000  999001  999002  ...  999997  999998  999999",
      "[ltc.int64 of size 1000x1000 on cpu:0]",
    }
    assert.equal(table.concat(want, "\n"), s)
  end)

  it("honours threshold and edgeitems", function()
    ltc.set_printoptions { threshold = 10, edgeitems = 1 }
    assert.equal("  0  ...   3\n ...\n  8  ...  11\n[ltc.int64 of size 3x4 on cpu:0]",
      tostring(ltc.arange(0, 12):view(3, 4)))
    assert.equal("  0\n ...\n 11\n[ltc.int64 of size 12 on cpu:0]", tostring(ltc.arange(0, 12)))
    assert.equal("(1,.,.) = \n  0  ...   2\n\n...\n\n(4,.,.) = \n  9  ...  11\n\n"
      .. "[ltc.int64 of size 4x1x3 on cpu:0]", tostring(ltc.arange(0, 12):view(4, 1, 3)))
    ltc.set_printoptions { threshold = math.huge }
    assert.equal(" 0\n 1\n 2\n 3\n[ltc.int64 of size 4 on cpu:0]", tostring(ltc.arange(0, 4)))
  end)

  it("honours precision and sci_mode, and profile resets them", function()
    ltc.set_printoptions { precision = 2 }
    assert.equal("  1.50\n -2.25\n[ltc.float32 of size 2 on cpu:0]", tostring(ltc.tensor { 1.5, -2.25 }))
    ltc.set_printoptions { sci_mode = true }
    assert.equal("  1.50e+00\n -2.25e+00\n[ltc.float32 of size 2 on cpu:0]",
      tostring(ltc.tensor { 1.5, -2.25 }))
    ltc.set_printoptions { sci_mode = false, precision = 1 }
    assert.equal(" 123456.5\n[ltc.float64 of size 1 on cpu:0]", tostring(ltc.tensor({ 123456.5 }, "float64")))
    ltc.set_printoptions { profile = "default" }
    assert.equal("  1.5000\n -2.2500\n[ltc.float32 of size 2 on cpu:0]", tostring(ltc.tensor { 1.5, -2.25 }))
  end)

  it("rejects unknown options and bad values, naming them", function()
    local function e(o) local ok, m = pcall(ltc.set_printoptions, o); assert.is_false(ok); return m end
    assert.matches("unknown option 'treshold'", e { treshold = 3 })
    assert.matches("edgeitems must be a whole number >= 0 %(got %-1%)", e { edgeitems = -1 })
    assert.matches("sci_mode must be true, false or nil", e { sci_mode = "yes" })
    assert.matches("unknown profile 'long'", e { profile = "long" })
    assert.equal(" 1.5000\n[ltc.float32 of size 1 on cpu:0]", tostring(ltc.tensor { 1.5 })) -- unchanged
  end)
end)

describe("t:size()", function()
  it("prints as a size, compares with ==, and indexes as a table", function()
    local s = ltc.zeros(2, 3):size()
    assert.equal("ltc.Size{2, 3}", tostring(s))
    assert.is_true(s == ltc.Size { 2, 3 })
    assert.is_true(s == { 2, 3 })
    assert.is_false(s == { 3, 2 })
    assert.is_false(s == { 2, 3, 1 })
    assert.equal(3, s[2])
    assert.equal(2, #s)
    assert.same({ 2, 3 }, { table.unpack(s) })
    assert.equal(6, s:numel())
    assert.equal(3, ltc.zeros(2, 3):size(2))
    assert.equal("ltc.Size{}", tostring(ltc.tensor(1):size()))
    assert.same({ 3, 2 }, ltc.zeros(2, 3):t():size())
  end)

  it("makes sizes that ops take", function()
    assert.same({ 3, 2 }, ltc.zeros(ltc.Size { 3, 2 }):size())
    assert.same({ 2, 3 }, ltc.ones(2, 3):view(ltc.zeros(6):view(2, 3):size()):size())
    assert.has_error(function() ltc.Size { 2, -1 } end, "Size: size 2 is -1, not a whole number >= 0")
  end)
end)
