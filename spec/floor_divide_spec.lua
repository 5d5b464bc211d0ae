-- Float floor division as PyTorch's torch.div(a, b, rounding_mode="floor") and Python's //:
-- from the remainder fmod(a, b), not floor(a / b), whose rounding gave 7 for 6.3 // 0.9 (a
-- break-it session found 6-7% of random one-decimal float quotients off). Expected values
-- are PyTorch 1.13's.
local ltc = require "ltc"

describe("floor division of floats", function()
  local a = { 6.3, 1.0, 8.1, -7, 7, -7.5, 0.5, -0.5, 5, -5, 3 }
  local b = { 0.9, 0.1, -0.3, 2, -2, 2, 3, 3, 0, 0, 3 }
  it("gives PyTorch's quotients in float64 and float32, by // and by div's rounding_mode", function()
    local want = {
      float64 = { 6, 9, -27, -4, -4, -4, 0, -1, math.huge, -math.huge, 1 },
      float32 = { 7, 9, -28, -4, -4, -4, 0, -1, math.huge, -math.huge, 1 },
    }
    for dt, w in pairs(want) do
      local x, y = ltc.tensor(a, dt), ltc.tensor(b, dt)
      assert.are.same(w, (x // y):totable(), dt)
      assert.are.same(w, x:div(y, { rounding_mode = "floor" }):totable(), dt)
    end
  end)

  it("keeps b * (a // b) + a % b equal to a, and the sign of a zero quotient", function()
    local x, y = ltc.tensor(a, "float64"), ltc.tensor(b, "float64")
    local q, r = (x // y):totable(), (x % y):totable()
    for i = 1, #a - 3 do
      assert.is_true(math.abs(b[i] * q[i] + r[i] - a[i]) < 1e-12, i .. ": " .. q[i] .. ", " .. r[i])
    end
    local z = (ltc.tensor({ -0.5, 0.5 }, "float64") // ltc.tensor({ 3, -3 }, "float64")):totable()
    assert.are.same({ -1, -1 }, z)
    local zero = (ltc.tensor({ 0.5, -0.5 }, "float64") // 3):totable()
    assert.are.same({ "0.0", "-1.0" }, { string.format("%.1f", zero[1]), string.format("%.1f", zero[2]) })
    assert.are.equal(1 / 0, 1 / (ltc.tensor({ 0.5 }, "float64") // 3):item()) -- +0, not -0
    assert.are.equal(-1 / 0, 1 / (ltc.tensor({ -0.0 }, "float64") // 3):item()) -- -0 // 3 is -0
  end)
end)
