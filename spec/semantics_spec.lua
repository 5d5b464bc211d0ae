-- Issue 3's "Semantics that must hold", one spec each, on both backends (the CPU backend with
-- its eager fallback, and the reference backend). Many are also covered elsewhere (fixtures
-- in spec/backends_spec.lua, spec/views_spec.lua, spec/ops_spec.lua); here they are together,
-- in the issue's words, with the values written out.
local ltc = require "ltc"

local function isnan(v) return v ~= v end

for _, be in ipairs({ "cpu", "ref" }) do
  describe("on the " .. be .. " backend", function()
    setup(function() ltc.set_backend(be) end)
    teardown(function() ltc.set_backend("cpu") end)

    describe("type promotion", function()
      it("a Lua number is a weak scalar: float32 times 0.5 stays float32", function()
        local y = ltc.tensor({ 1, 2 }) * 0.5
        assert.are.equal("float32", y:dtype())
        assert.are.same({ 0.5, 1 }, y:totable())
        assert.are.equal("float64", (ltc.tensor({ 1 }, "float64") * 0.5):dtype())
      end)

      it("int32 times 2.5 gives float32; int32 plus 2 stays int32", function()
        local y = ltc.tensor({ 1, 2 }, "int32") * 2.5
        assert.are.equal("float32", y:dtype())
        assert.are.same({ 2.5, 5 }, y:totable())
        assert.are.equal("int32", (ltc.tensor({ 1 }, "int32") + 2):dtype())
      end)

      it("sum and prod of an integer or bool tensor give int64", function()
        for _, dt in ipairs({ "int32", "int64", "bool" }) do
          local t = ltc.tensor({ 1, 1, 0 }, dt)
          assert.are.equal("int64", t:sum():dtype())
          assert.are.equal("int64", t:prod():dtype())
        end
        assert.are.equal(6, ltc.tensor({ 1, 2, 3 }, "int32"):prod():item())
        assert.are.equal(2, ltc.tensor({ true, true, false }):sum():item())
      end)

      it("-7 // 2 == -4, -7 % 3 == 2, 7 % -3 == -2, fmod(-7, 3) == -1 for integer tensors", function()
        local i = function(v) return ltc.tensor(v, "int64") end
        assert.are.same({ -4 }, (i({ -7 }) // i({ 2 })):totable())
        assert.are.same({ 2 }, (i({ -7 }) % i({ 3 })):totable())
        assert.are.same({ -2 }, (i({ 7 }) % i({ -3 })):totable())
        assert.are.same({ -1 }, i({ -7 }):fmod(i({ 3 })):totable())
        assert.are.same({ -4 }, (i({ -7 }) // 2):totable())
        assert.are.same({ 2 }, (ltc.tensor({ -7 }, "int32") % 3):totable())
      end)

      it("110 // 55 == 2 and 110 % 55 == 0 for integer tensors", function()
        for _, dt in ipairs({ "int32", "int64" }) do
          local a, b = ltc.tensor({ 110 }, dt), ltc.tensor({ 55 }, dt)
          assert.are.same({ 2 }, (a // b):totable())
          assert.are.same({ 0 }, (a % b):totable())
          assert.are.equal(dt, (a // b):dtype())
        end
      end)
    end)

    describe("reductions", function()
      it("max, min, maximum and minimum propagate NaN", function()
        local t = ltc.tensor({ 1, 0 / 0, 3 })
        assert(isnan(t:max():item()), "max")
        assert(isnan(t:min():item()), "min")
        local v = t:max(1)
        assert(isnan(v:item()), "max along a dim")
        local m = t:maximum(ltc.tensor({ 0 / 0, 5, 2 })):totable()
        assert(isnan(m[1]) and isnan(m[2]) and m[3] == 3, "maximum")
        m = t:minimum(ltc.tensor({ 0 / 0, 5, 2 })):totable()
        assert(isnan(m[1]) and isnan(m[2]) and m[3] == 2, "minimum")
      end)

      it("of an empty tensor: sum 0, prod 1, mean NaN", function()
        local e = ltc.zeros(0)
        assert.are.equal(0, e:sum():item())
        assert.are.equal(1, e:prod():item())
        assert(isnan(e:mean():item()), "mean of nothing")
        assert.are.same({ 0, 0 }, ltc.zeros(2, 0):sum(2):totable())
      end)

      it("max of an empty tensor is an error", function()
        assert.has_error(function() return ltc.zeros(0):max():item() end)
        assert.has_error(function() return ltc.zeros(0):min():item() end)
        assert.are.equal(3, (ltc.tensor({ 1, 2 }) + 1):max():item()) -- and the runtime still works
      end)
    end)

    describe("views", function()
      it("share storage: after v = x:view(10, 1) and a sync, v[1][1] = 1 changes x", function()
        local x = ltc.zeros(10)
        local v = x:view(10, 1)
        ltc.sync()
        v[1][1] = 1
        assert.are.same({ 1, 0, 0, 0, 0, 0, 0, 0, 0, 0 }, x:totable())
      end)

      it("after v = x:view(2, 5), rebinding x = x + 1 leaves v unchanged", function()
        local x = ltc.arange(0, 10, 1, "float32")
        local v = x:view(2, 5)
        x = x + 1
        assert.are.same({ { 0, 1, 2, 3, 4 }, { 5, 6, 7, 8, 9 } }, v:totable())
        assert.are.equal(1, x:totable()[1])
      end)

      it("a strided in-place copy through narrow lands only where it should", function()
        local x = ltc.zeros(3, 4)
        x:narrow(2, 2, 2):copy_(ltc.tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } }))
        assert.are.same({ { 0, 1, 2, 0 }, { 0, 3, 4, 0 }, { 0, 5, 6, 0 } }, x:totable())
      end)

      it("a strided in-place copy through select lands only where it should", function()
        local x = ltc.zeros(3, 4)
        x:select(2, 3):copy_(ltc.tensor({ 7, 8, 9 }))
        x:select(1, 1):narrow(1, 1, 2):fill_(-1)
        assert.are.same({ { -1, -1, 7, 0 }, { 0, 0, 8, 0 }, { 0, 0, 9, 0 } }, x:totable())
      end)

      it("an in-place op pending on a tensor runs once, however many times it is read", function()
        local x = ltc.ones(3)
        x:add_(1)
        assert.are.same({ 2, 2, 2 }, x:totable())
        assert.are.same({ 2, 2, 2 }, x:totable())
        assert.are.equal(6, x:sum():item())
        local y = x * 1
        assert.are.same({ 2, 2, 2 }, y:totable())
        x:mul_(3):add_(1)
        local a, b = x:sum(), x:max()
        assert.are.equal(21, a:item())
        assert.are.equal(7, b:item())
        assert.are.same({ 7, 7, 7 }, x:totable())
      end)
    end)

    describe("matmul", function()
      -- a = {{1, 2, 3}, {4, 5, 6}}, b = {{1, 0}, {2, 1}, {0, 3}}: a . b = {{5, 11}, {14, 23}}
      it("gives NumPy's answer for transposed operands", function()
        local at = ltc.tensor({ { 1, 4 }, { 2, 5 }, { 3, 6 } })
        local bt = ltc.tensor({ { 1, 2, 0 }, { 0, 1, 3 } })
        assert.are.same({ { 5, 11 }, { 14, 23 } }, at:t():matmul(bt:t()):totable())
        assert.are.same({ { 5, 14 }, { 11, 23 } }, bt:matmul(at):totable())
      end)

      it("gives NumPy's answer for permuted and non-contiguous operands", function()
        -- a stored as [3, 1, 2] and permuted back to [1, 2, 3]
        local ap = ltc.tensor({ { { 1, 4 } }, { { 2, 5 } }, { { 3, 6 } } }):permute(2, 3, 1)
        local b = ltc.tensor({ { 1, 0 }, { 2, 1 }, { 0, 3 } })
        assert.are.same({ { { 5, 11 }, { 14, 23 } } }, ap:matmul(b):totable())
        -- narrow views with a stride: every other column of a wider matrix
        local wide = ltc.tensor({ { 1, 9, 2, 9, 3 }, { 4, 9, 5, 9, 6 } })
        local cols = wide:index_select(2, ltc.tensor({ 1, 3, 5 }, "int64"))
        assert.are.same({ { 5, 11 }, { 14, 23 } }, cols:matmul(b):totable())
        local bn = ltc.tensor({ { 9, 1, 0 }, { 9, 2, 1 }, { 9, 0, 3 } }):narrow(2, 2, 2)
        assert.are.same({ { 5, 11 }, { 14, 23 } }, wide:narrow(2, 1, 1):expand(2, 3):mul(0)
          :add(ltc.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })):matmul(bn):totable())
        -- 1-d . 2-d and batched broadcasting
        assert.are.same({ 5, 11 }, ltc.tensor({ 1, 2, 3 }):matmul(b):totable())
        assert.are.same({ 2, 2, 2 }, ltc.ones(2, 2, 3):matmul(b):size())
      end)
    end)
  end)
end

describe("dtype names", function()
  it("are module fields, with PyTorch's aliases, taken by every dtype argument", function()
    assert.are.equal("float32", ltc.float32)
    assert.are.equal("float32", ltc.float)
    assert.are.equal("float64", ltc.double)
    assert.are.equal("int32", ltc.int)
    assert.are.equal("int64", ltc.long)
    assert.are.equal("bool", ltc.bool)
    assert.are.equal("int64", ltc.ones(2, 3, ltc.int64):dtype())
    assert.are.equal("float64", ltc.tensor({ 1, 2 }, ltc.float64):dtype())
    assert.are.equal("int32", ltc.zeros(2):to(ltc.int32):dtype())
    assert.are.same({ 1, 0 }, ltc.tensor({ 3, 0 }):to(ltc.bool):to(ltc.long):totable())
  end)
end)
