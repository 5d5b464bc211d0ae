-- tostring(t): Torch7's layout (right-aligned cells, each led by a space, joined by a
-- space), then a footer naming the dtype, the size and the device. Expected strings are
-- written out by hand.
local ltc = require "ltc"

describe("tostring", function()
  it("prints a 2x2 float tensor of whole numbers without decimals", function()
    assert.are.equal(" 1  2\n" ..
                     " 3  4\n" ..
                     "[ltc.float32 of size 2x2 on cpu:0]",
      tostring(ltc.tensor({{1, 2}, {3, 4}})))
  end)

  it("prints a negative zero among whole numbers as -0 (PyTorch: -0.)", function()
    assert.are.equal(" -0\n  1\n[ltc.float32 of size 2 on cpu:0]", tostring(ltc.tensor({-0.0, 1})))
    assert.are.equal(" 0\n 1\n[ltc.int64 of size 2 on cpu:0]", tostring(ltc.tensor({0, 1}, "int64")))
  end)

  it("prints a 2x2 float tensor with four decimals, right-aligned", function()
    assert.are.equal("  1.5000  -2.2500\n" ..
                     "  0.1250  10.0000\n" ..
                     "[ltc.float32 of size 2x2 on cpu:0]",
      tostring(ltc.tensor({{1.5, -2.25}, {0.125, 10}})))
  end)

  it("prints an int tensor right-aligned to the widest value", function()
    assert.are.equal("   1  -20\n" ..
                     " 300    4\n" ..
                     "[ltc.int64 of size 2x2 on cpu:0]",
      tostring(ltc.tensor({{1, -20}, {300, 4}}, "int64")))
  end)

  it("prints a 1-d tensor as a column", function()
    assert.are.equal("  1.0000\n" ..
                     "  2.5000\n" ..
                     " -3.0000\n" ..
                     "[ltc.float32 of size 3 on cpu:0]",
      tostring(ltc.tensor({1, 2.5, -3})))
  end)

  it("prints a 0-d tensor as one value and a scalar footer", function()
    assert.are.equal(" 3\n[ltc.float32 scalar on cpu:0]", tostring(ltc.tensor({1, 2}):sum()))
    assert.are.equal(" 3.5000\n[ltc.float64 scalar on cpu:0]", tostring(ltc.tensor(3.5, "float64")))
  end)

  it("prints a bool tensor as true and false", function()
    assert.are.equal("  true\n" ..
                     " false\n" ..
                     "[ltc.bool of size 2 on cpu:0]",
      tostring(ltc.tensor({true, false})))
  end)

  it("prints large values in scientific notation", function()
    assert.are.equal(" 1.2346e+05  1.0000e+00\n" ..
                     "[ltc.float32 of size 1x2 on cpu:0]",
      tostring(ltc.tensor({{123456.5, 1}})))
  end)

  it("prints inf and nan", function()
    assert.are.equal(" 1.0000\n" ..
                     "   -inf\n" ..
                     "    nan\n" ..
                     "[ltc.float32 of size 3 on cpu:0]",
      tostring(ltc.tensor({1, 0, -1}):log() + ltc.tensor({1, 0, 0})))
  end)

  it("prints a 3-d tensor as slices", function()
    assert.are.equal("(1,.,.) = \n" ..
                     " 1  2\n" ..
                     " 3  4\n" ..
                     "\n" ..
                     "(2,.,.) = \n" ..
                     " 5  6\n" ..
                     " 7  8\n" ..
                     "\n" ..
                     "[ltc.float32 of size 2x2x2 on cpu:0]",
      tostring(ltc.tensor({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}})))
  end)

  it("prints only the footer for an empty tensor", function()
    assert.are.equal("[ltc.float32 of size 0x3 on cpu:0]", tostring(ltc.zeros(0, 3)))
  end)

  it("prints the values of a pending tensor (printing syncs)", function()
    local t = ltc.tensor({{1, 2}, {3, 4}}, "int32") * 3
    assert.are.equal("  3   6\n" ..
                     "  9  12\n" ..
                     "[ltc.int32 of size 2x2 on cpu:0]", tostring(t))
  end)
end)
