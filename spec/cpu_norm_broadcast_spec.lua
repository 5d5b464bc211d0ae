-- The CPU backend's own norm kernel (src/cpu/reduce_norm.c; norm ran on the reference
-- backend as an eager fallback before, splitting every clip_grad_norm_ graph in pieces) and
-- the broadcasting driver's short rows of a stride-0 operand ([R, C] * [R, 1]).
local ltc = require "ltc"
local close = dofile("spec/support/close.lua")

-- norm of x (a Lua table) by p, dim, keepdim on the reference backend
local function ref_norm(x, dtype, p, dim, keepdim)
  ltc.set_backend("ref")
  local ok, r = pcall(function() return ltc.tensor(x, dtype):norm(p, dim, keepdim):totable() end)
  ltc.set_backend("cpu")
  assert(ok, r)
  return r
end

describe("norm on the cpu backend", function()
  after_each(function() ltc.set_backend("cpu") end)

  it("gives hand-computed values for every kind of p", function()
    local x = ltc.tensor({ 3, -4, 0, 12 })
    close(13, x:norm():item(), 1e-6)
    close(19, x:norm(1):item(), 1e-6)
    assert.equal(3, x:norm(0):item())
    assert.equal(12, x:norm(math.huge):item())
    assert.equal(0, x:norm(-math.huge):item())
    close((27 + 64 + 1728) ^ (1 / 3), x:norm(3):item(), 1e-6)
    close(1 / (1 / 3 + 1 / 4 + 1 / 12), ltc.tensor({ 3, -4, 12 }):norm(-1):item(), 1e-6)
    assert.equal(0, x:norm(-1):item()) -- a zero: 1 / 0 in the sum, its -1st power 0 (PyTorch too)
  end)

  it("runs on the cpu plan, not the eager fallback", function()
    local x = ltc.tensor({ { 1, 2 }, { 3, 4 } })
    local n = x:norm()
    assert.is_nil(ltc.debug.backend_text(n):find("eager fallback"))
    close(math.sqrt(30), n:item(), 1e-6)
  end)

  it("matches the reference backend along dims, keepdim, f64 and integers", function()
    local x = {}
    for i = 1, 3 do
      x[i] = {}
      for j = 1, 4 do
        x[i][j] = {}
        for k = 1, 5 do x[i][j][k] = math.sin(i * 7 + j * 3 + k) * (k - 2) end
      end
    end
    for _, p in ipairs({ 2, 1, 0, 3, 0.5, -1, math.huge, -math.huge }) do
      for _, dim in ipairs({ false, 1, 2, 3 }) do
        for _, dtype in ipairs({ "float32", "float64" }) do
          local d = dim or nil
          local got = ltc.tensor(x, dtype):norm(p, d, dim == 2):totable()
          close(ref_norm(x, dtype, p, d, dim == 2), got, dtype == "float64" and 1e-12 or 1e-6,
            string.format("p=%s dim=%s %s", p, tostring(dim), dtype))
        end
      end
    end
    local ints = { { 3, -4, 0 }, { 1, 2, 2 } }
    local got = ltc.tensor(ints, "int64"):norm(2, 2)
    assert.equal("float32", got:dtype())
    close({ 5, 3 }, got:totable(), 1e-6)
    close(ref_norm(ints, "int32", 3, 1), ltc.tensor(ints, "int32"):norm(3, 1):totable(), 1e-6)
  end)

  it("combines the partials of long lines, and propagates NaN", function()
    local n = 40000 -- more than one block of 16384 per line
    local x = ltc.ones({ 2, n }) * ltc.tensor({ { 1 }, { 2 } })
    close({ math.sqrt(n), 2 * math.sqrt(n) }, x:norm(2, 2):totable(), 1e-6)
    close({ n, 2 * n }, x:norm(1, 2):totable(), 1e-6)
    local y = ltc.arange(1, n + 1):to("float32")
    assert.equal(n, y:norm(math.huge):item())
    assert.equal(1, y:norm(-math.huge):item())
    local z = ltc.tensor({ 1, 0 / 0, 2 })
    for _, p in ipairs({ 2, 1, 3, math.huge, -math.huge }) do
      local v = z:norm(p):item()
      assert.is_true(v ~= v, "p = " .. tostring(p))
    end
    assert.equal(3, z:norm(0):item()) -- NaN is nonzero
  end)

  it("gives 0 (or inf for -inf) on empty lines", function()
    assert.equal(0, ltc.zeros(0):norm():item())
    assert.equal(0, ltc.zeros(0):norm(math.huge):item())
    assert.same({ 0, 0 }, ltc.zeros({ 2, 0 }):norm(2, 2):totable())
  end)
end)

describe("broadcasting a [R, 1] operand over short rows", function()
  it("multiplies [R, C] by [R, 1] for every element size", function()
    local a = { { 1, 2, 3 }, { 4, 5, 6 } }
    local s = { { 2 }, { -1 } }
    local want = { { 2, 4, 6 }, { -4, -5, -6 } }
    for _, dtype in ipairs({ "float32", "float64", "int32", "int64", "int16" }) do
      local ok = pcall(ltc.tensor, a, dtype)
      if ok then
        -- rows of 192 (past the short-row limit) and of 3
        local wa = {}
        for i = 1, 2 do
          wa[i] = {}
          for j = 1, 192 do wa[i][j] = a[i][(j - 1) % 3 + 1] end
        end
        local wide = (ltc.tensor(wa, dtype) * ltc.tensor(s, dtype)):totable()
        assert.same(want, (ltc.tensor(a, dtype) * ltc.tensor(s, dtype)):totable(), dtype)
        assert.equal(-6, wide[2][192], dtype)
        assert.equal(2, wide[1][190], dtype)
        assert.equal(6, wide[1][192], dtype)
      end
    end
    local b = ltc.tensor({ { true }, { false } }, "bool"):broadcast_to({ 2, 300 }):totable()
    assert.is_true(b[1][300])
    assert.is_false(b[2][1])
  end)

  it("expands [R, 1] to [R, C] (broadcast_to) with the right values", function()
    local r = ltc.tensor({ { 1.5 }, { -2 }, { 7 } }):broadcast_to({ 3, 100 }):totable()
    for i, v in ipairs({ 1.5, -2, 7 }) do
      assert.equal(v, r[i][1])
      assert.equal(v, r[i][100])
    end
  end)
end)

describe("gelu's float32 kernel (the erf of PyTorch's vectorized CPU gelu)", function()
  -- x from -10 to 10 by 1/64, and float64 (libm's erf) as the standard
  local xs = {}
  for i = -640, 640 do xs[#xs + 1] = i / 64 end
  local g = {}
  for i = 1, #xs do g[i] = (i % 7 - 3) / 2 end

  it("is within 3e-7 of the float64 gelu, absolutely, and gelu(0) = 0", function()
    local want = ltc.tensor(xs, "float64"):gelu():totable()
    local got = ltc.tensor(xs, "float32"):gelu():totable()
    for i = 1, #xs do
      assert(math.abs(got[i] - want[i]) <= 3e-7 * (1 + math.abs(want[i])),
        string.format("gelu(%g): %.9g, float64 %.9g", xs[i], got[i], want[i]))
    end
    assert.equal(0, ltc.tensor({ 0 }):gelu():item())
    close({ -0.15865525393145707, 0.8413447460685429, 2.995950212 }, ltc.tensor({ -1, 1, 3 }):gelu():totable(), 1e-6)
  end)

  it("has a backward within 3e-7 of float64's, also with a broadcast gradient", function()
    local want = ltc.gelu_backward(ltc.tensor(g, "float64"), ltc.tensor(xs, "float64")):totable()
    local got = ltc.gelu_backward(ltc.tensor(g), ltc.tensor(xs)):totable()
    for i = 1, #xs do
      assert(math.abs(got[i] - want[i]) <= 3e-7 * (1 + math.abs(want[i])),
        string.format("gelu_backward(%g, %g): %.9g, float64 %.9g", g[i], xs[i], got[i], want[i]))
    end
    -- d/dx x Phi(x) at 1: Phi(1) + phi(1) = 0.8413447 + 0.2419707
    close({ { 1.0833154705876864, 2 * 1.0833154705876864 } },
      ltc.gelu_backward(ltc.tensor({ { 1, 2 } }), ltc.tensor({ 1 })):totable(), 1e-6)
  end)
end)

describe("broadcast_to and expand in a fused step", function()
  it("read their input as a broadcast operand and give the expanded values", function()
    local s = ltc.tensor({ { 1 }, { -2 }, { 3 } })
    local a = ltc.ones({ 3, 300 }) * 0.5
    local y = s:broadcast_to({ 3, 300 }) * a + 1
    assert.truthy(ltc.debug.backend_text(y):find("fused%(broadcast_to, mul, mul, add%)"))
    local t = y:totable()
    for i, v in ipairs({ 1.5, 0, 2.5 }) do
      assert.equal(v, t[i][1])
      assert.equal(v, t[i][300])
    end
    local e = (ltc.tensor({ 1, 2, 3 }):expand({ 2, 3 }) - ltc.tensor({ { 1, 1, 1 }, { 0, 0, 0 } })):totable()
    assert.same({ { 0, 1, 2 }, { 1, 2, 3 } }, e)
    local b = ltc.tensor({ { true }, { false } }, "bool"):broadcast_to({ 2, 3 }):logical_and(
      ltc.tensor({ { true, false, true }, { true, true, true } }, "bool")):totable()
    assert.same({ { true, false, true }, { false, false, false } }, b)
  end)
end)
