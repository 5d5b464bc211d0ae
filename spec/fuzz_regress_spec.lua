-- Programs the differential fuzzer (tools/fuzz.lua) shrank, one per bug fixed: each must
-- behave the same on the CPU and the reference backend.
local ltc = require "ltc"

-- Runs fn on both backends; returns {ok, value-or-message} for each.
local function on_both(fn)
  local out = {}
  for _, b in ipairs({ "cpu", "ref" }) do
    ltc.set_backend(b)
    local ok, v = pcall(fn)
    out[b] = { ok = ok, v = v }
  end
  ltc.set_backend("cpu")
  return out
end

describe("the reference backend agrees with the CPU backend", function()
  -- seed 3, programs 571, 1225, 1373: the reference kernels checked an index only when
  -- they copied through it, so an empty result let any index through
  it("rejects an out-of-range index of index_select when the result is empty", function()
    local r = on_both(function()
      local x = ltc.full({ 0, 4 }, -3, "int64")
      return x:index_select(-1, ltc.tensor({ 0 }, "int64")):totable()
    end)
    assert.is_false(r.cpu.ok)
    assert.is_false(r.ref.ok)
    assert.truthy(r.ref.v:find("index_select: index 0 out of range", 1, true))

    r = on_both(function()
      local x = ltc.full({ 5, 0 }, -0.5)
      return x:index_select(-2, ltc.tensor({ 1, -1, 2 }, "int64")):totable()
    end)
    assert.is_false(r.cpu.ok)
    assert.is_false(r.ref.ok)
    assert.truthy(r.ref.v:find("index -1 out of range", 1, true))
  end)

  it("rejects an out-of-range index of index_add when the source is empty", function()
    local r = on_both(function()
      local x = ltc.zeros(0, 3)
      return x:index_add(2, ltc.tensor({ 4 }, "int64"), ltc.zeros(0, 1)):totable()
    end)
    assert.is_false(r.cpu.ok)
    assert.is_false(r.ref.ok)
  end)
end)

describe("integer division by -1", function()
  -- seed 7, program 22282: int32 remainder of the most negative int32 by -1 killed the
  -- process with SIGFPE (x86 idiv overflow), on both backends
  it("of the most negative integer does not trap, and wraps as two's complement", function()
    for _, b in ipairs({ "cpu", "ref" }) do
      ltc.set_backend(b)
      for _, dt in ipairs({ "int32", "int64" }) do
        local m = dt == "int32" and -2147483648 or math.mininteger
        local x = ltc.tensor({ m, 7, -7 }, dt)
        assert.are.same({ m, -7, 7 }, (x // -1):totable())
        assert.are.same({ 0, 0, 0 }, (x % -1):totable())
        assert.are.same({ 0, 0, 0 }, x:fmod(-1):totable())
      end
    end
    ltc.set_backend("cpu")
  end)
end)

describe("cross_entropy on the CPU backend", function()
  -- seed 7, program 22651: logits of 1e30 lost log(2): max + log(sum) rounded it away
  it("subtracts the target logit from the max before adding log(sum)", function()
    local r = on_both(function()
      return ltc.cross_entropy(ltc.full({ 1, 2 }, 1e30, "float64"), ltc.tensor({ 2 }, "int64")):item()
    end)
    assert.is_true(r.cpu.ok and r.ref.ok)
    assert.is_true(math.abs(r.cpu.v - math.log(2)) < 1e-12, "cpu gives " .. r.cpu.v)
    assert.is_true(math.abs(r.ref.v - math.log(2)) < 1e-12, "ref gives " .. r.ref.v)
  end)
end)

describe("conv2d with zero padding", function()
  -- seed 7, program 60921: the reference backend skipped padded positions, so a -inf weight
  -- over padding gave 0 there; the CPU backend (and PyTorch) multiply the padded zero: NaN
  it("multiplies padded zeros by the weight on both backends, as PyTorch", function()
    local r = on_both(function()
      local x = ltc.ones(1, 1, 1, 1, "float64")
      local w = ltc.full({ 1, 1, 1, 1 }, -math.huge, "float64")
      return ltc.conv2d(x, w, nil, 1, 1):totable()
    end)
    assert.is_true(r.cpu.ok and r.ref.ok)
    for _, be in ipairs { "cpu", "ref" } do
      local v = r[be].v[1][1]
      assert.is_true(v[1][1] ~= v[1][1], be .. ": corner should be NaN")
      assert.equal(-math.huge, v[2][2], be .. ": centre")
    end
  end)
end)
