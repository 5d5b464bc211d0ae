-- Integer overflow wraps as in PyTorch (two's complement), on both backends, with C that is
-- defined (the kernels compute in unsigned arithmetic, ltc_kernel.h's LTC_WRAP_U): under
-- `make test-asan` (UBSan, no recovery) each of these aborted the process before (issue 17,
-- r01 and r21). Expected values worked out by hand (mod 2^32 and 2^64).
local ltc = require "ltc"

local MIN, MAX = math.mininteger, math.maxinteger
local I = function(v, dt) return ltc.tensor(v, dt or "int64") end

for _, backend in ipairs({ "cpu", "ref" }) do
  describe("integer overflow on the " .. backend .. " backend", function()
    setup(function() ltc.set_backend(backend) end)
    teardown(function() ltc.set_backend("cpu") end)

    it("wraps int32 add, sub and mul", function()
      assert.are.same({ -2147483648 }, (I({ 2147483647 }, "int32") + I({ 1 }, "int32")):totable())
      assert.are.same({ 2147483647 }, (I({ -2147483648 }, "int32") - I({ 1 }, "int32")):totable())
      assert.are.same({ 0, -2 }, (I({ 65536, 2147483647 }, "int32") * I({ 65536, 2 }, "int32")):totable())
    end)

    it("wraps int64 add, sub and mul", function()
      assert.are.same({ MIN }, (I({ MAX }) + 1):totable())
      assert.are.same({ MAX }, (I({ MIN }) - 1):totable())
      assert.are.same({ -2, 0 }, (I({ MAX, MIN }) * 2):totable())
    end)

    it("wraps index_add and scatter_add into int32 and int64 (ASan fuzz seed 20261201)", function()
      -- values from torch 1.13: index_add/scatter_add wrap as the add does
      local one = I({ 1 })
      assert.are.same({ -2147483646, 5 },
        I({ 2147483647, 5 }, "int32"):index_add(1, I({ 1, 1 }), I({ 1, 2 }, "int32")):totable())
      assert.are.same({ MIN }, I({ MAX }):index_add(1, one, I({ 1 })):totable())
      assert.are.same({ -2147483648 },
        I({ 2147483647 }, "int32"):scatter_add(1, one, I({ 1 }, "int32")):totable())
      assert.are.same({ MIN }, I({ MAX }):scatter_add(1, one, I({ 1 })):totable())
    end)

    it("negates and takes abs of the most negative integer to itself", function()
      assert.are.same({ MIN, 5 }, (-I({ MIN, -5 })):totable())
      assert.are.same({ -2147483648 }, (-I({ -2147483648 }, "int32")):totable())
      assert.are.same({ MIN, 3 }, I({ MIN, -3 }):abs():totable())
      assert.are.same({ -2147483648 }, I({ -2147483648 }, "int32"):abs():totable())
    end)

    it("raises integers to integer powers exactly, wrapping", function()
      -- 7^21 = 558545864083284007 (past 2^53: a double pow would round it)
      -- 3^40 = 12157665459056928801 = 2^64 - 6289078614652622815
      local got = I({ 7, 3, 5, 1, -1, -1, 2 }):pow(I({ 21, 40, -1, -7, -3, -4, 0 })):totable()
      assert.are.same({ 558545864083284007, -6289078614652622815, 0, 1, -1, 1, 1 }, got)
      -- int32: 3^20 = 3486784401 = 2^32 - 808182895
      assert.are.same({ -808182895 }, I({ 3 }, "int32"):pow(I({ 20 }, "int32")):totable())
    end)

    it("rejects a class label of math.mininteger with an error naming the target (r01)", function()
      local ok, err = pcall(function()
        return ltc.cross_entropy(ltc.zeros(2, 3), I({ 1, MIN })):item()
      end)
      assert.is_false(ok)
      assert.truthy(err:find("target -9223372036854775808 out of range for 3 classes", 1, true))
      ok, err = pcall(function()
        return ltc.nll_loss(ltc.zeros(2, 3), I({ MIN, 1 })):item()
      end)
      assert.is_false(ok)
      assert.truthy(err:find("nll_loss", 1, true) and err:find("out of range", 1, true))
      assert.are.equal(3, ltc.ones(3):sum():item())
    end)
  end)
end
