-- The narrow dtypes uint8, int8, int16, float16 and bfloat16 against PyTorch
-- (spec/fixtures/dtypes_narrow.lua and spec/fixtures/npy_narrow/, from
-- tools/gen_dtype_fixtures.py): storage in their own width, casts (rounding to nearest even,
-- wrap-around), arithmetic computed in float32/int32 and cast back, torch.result_type for
-- every pair, reductions, .npy/.npz files as NumPy writes them, and the errors.
local ltc = require "ltc"

local fx = dofile("spec/fixtures/dtypes_narrow.lua")
local npyv = dofile("spec/fixtures/npy_narrow/values.lua")
local NPY = "spec/fixtures/npy_narrow/"
local NARROW = { "uint8", "int8", "int16", "float16", "bfloat16" }

-- exact equality, NaN equal to NaN, -0.0 equal to 0.0 (fixtures come from .tolist())
local function same(expected, got, what)
  if type(expected) == "table" then
    assert.are.equal(#expected, #got, what .. ": length")
    for i = 1, #expected do same(expected[i], got[i], what .. "[" .. i .. "]") end
  elseif expected ~= expected then
    assert.is_true(got ~= got, what .. ": expected NaN, got " .. tostring(got))
  else
    assert.are.equal(expected, got, what)
  end
end

describe("narrow dtypes", function()
  teardown(function() -- the fixtures are large tables: free them for later specs
    fx, npyv = nil, nil
    collectgarbage()
  end)
  it("store in their own width and keep their names", function()
    local sizes = { uint8 = 1, int8 = 1, int16 = 2, float16 = 2, bfloat16 = 2 }
    for _, dt in ipairs(NARROW) do
      local t = ltc.zeros({ 3 }, dt)
      assert.are.equal(dt, t:dtype())
      assert.are.equal(sizes[dt], t:element_size())
      assert.are.equal(dt, ltc[dt])
      local path = os.tmpname()
      ltc.save(path, ltc.zeros({ 1000 }, dt == "bfloat16" and "float16" or dt))
      local f = assert(io.open(path, "rb"))
      local n = #f:read("a")
      f:close()
      os.remove(path)
      assert.is_true(n >= 1000 * sizes[dt] and n < 1000 * sizes[dt] + 200, dt .. " file of " .. n .. " bytes")
    end
  end)

  it("accept PyTorch's and Torch7's names", function()
    local x = ltc.tensor({ 1.5, -2 })
    assert.are.equal("float16", x:half():dtype())
    assert.are.equal("bfloat16", x:bfloat16():dtype())
    assert.are.equal("uint8", ltc.tensor({ 1, 2 }):byte():dtype())
    assert.are.equal("int8", x:char():dtype())
    assert.are.equal("int16", x:short():dtype())
    assert.are.equal("float16", x:to("half"):dtype())
    assert.are.equal("uint8", ltc.zeros(2, "byte"):dtype())
    assert.are.equal("float16", ltc.ones({ 2 }, ltc.half):dtype())
    assert.are.equal("int16", ltc.full({ 2 }, 3, ltc.short):dtype())
  end)

  for _, backend in ipairs({ "cpu", "ref" }) do
    describe("on the " .. backend .. " backend", function()
      setup(function() ltc.set_backend(backend) end)
      teardown(function() ltc.set_backend("cpu") end)

      it("cast as PyTorch does (round to nearest even, NaN kept, integers wrap)", function()
        for _, c in ipairs(fx.casts) do
          local x = ltc.tensor(c.x, c.from)
          local y = x:to(c.to)
          assert.are.equal(c.to, y:dtype())
          local back = (c.to == "bool" or not y:is_floating_point()) and y or y:to("float64")
          same(c.y, back:totable(), c.from .. " -> " .. c.to)
        end
      end)

      -- x and y agree element for element, NaN with NaN (as a count of disagreements)
      local function mismatches(x, y)
        local same = x:eq(y):logical_or(x:ne(x):logical_and(y:ne(y)))
        return same:logical_not():sum():item()
      end

      it("convert every float16 to float32 and float64 exactly (as NumPy)", function()
        local h = ltc.load(NPY .. "all_f16.npy")
        local want = ltc.load(NPY .. "all_f16_as_f32.npy")
        assert.are.equal("float16", h:dtype())
        assert.are.equal(0, mismatches(h:to("float32"), want))
        assert.are.equal(0, mismatches(h:to("float64"), want:to("float64")))
      end)

      it("round float32 to float16 as NumPy and to bfloat16 as PyTorch, bit for bit", function()
        local x = ltc.load(NPY .. "f32_samples.npy")
        local h = ltc.load(NPY .. "f32_samples_f16.npy")
        local b = ltc.load(NPY .. "f32_samples_bf16.npy")
        assert.are.equal(0, mismatches(x:to("float16"):to("float32"), h:to("float32")))
        assert.are.equal(0, mismatches(x:to("bfloat16"):to("float32"), b))
        -- through a fused op's casts too: x * 1 computes in float32 and rounds once
        assert.are.equal(0, mismatches((x:to("float16") * 1):to("float32"), h:to("float32")))
      end)

      it("keep NaN through float16 and bfloat16", function()
        for _, dt in ipairs({ "float16", "bfloat16" }) do
          local v = ltc.tensor({ 0 / 0, 1 }):to(dt):to("float32"):totable()
          assert.is_true(v[1] ~= v[1], dt)
          assert.are.equal(1, v[2])
        end
      end)

      it("compute elementwise ops in float32/int32 and round or wrap the result", function()
        for _, c in ipairs(fx.arith) do
          local a, b = ltc.tensor(c.x, c.dtype), ltc.tensor(c.y, c.dtype)
          local ops = {
            add = function() return a + b end, sub = function() return a - b end,
            mul = function() return a * b end, div = function() return a / b end,
            add_scalar = function() return a + 1 end, mul_scalar = function() return a * 3 end,
            add_float = function() return a + 0.5 end, lt = function() return a:lt(b) end,
            eq = function() return a:eq(b) end, maximum = function() return ltc.maximum(a, b) end,
            neg = function() return c.dtype == "uint8" and 0 - a or -a end,
            exp = function() return a:exp() end, sqrt = function() return a:abs():sqrt() end,
            mul_point1 = function() return a * 0.1 end,
            sub_scalar_float = function() return a - 1.25 end,
            floor_divide = function() return a // b end, remainder = function() return a % b end,
            add_big_scalar = function() return a + 300 end,
          }
          local r = ops[c.op]()
          local what = c.dtype .. " " .. c.op
          assert.are.equal(c.out_dtype, r:dtype(), what)
          same(c.out, (r:is_floating_point() and r:to("float64") or r):totable(), what)
        end
      end)

      it("run every op on float16 and bfloat16 as float32 on the rounded inputs, rounded", function()
        -- the definition of the narrow float dtypes' arithmetic: each op's float32 result on
        -- the same (rounded) values, rounded once (random ops draw the same numbers)
        local C = dofile("spec/support/op_calls.lua")
        for _, dt in ipairs({ "float16", "bfloat16" }) do
          local ulp = dt == "float16" and 2 ^ -10 or 2 ^ -7
          local function conv(v, narrow)
            if ltc.is_tensor(v) then
              if v:dtype() ~= "float32" then return v end
              return narrow and v:to(dt) or v:to(dt):to("float32")
            elseif type(v) == "table" then
              local o = {}
              for k, x in pairs(v) do o[k] = conv(x, narrow) end
              return o
            end
            return (v == "float32" and narrow) and dt or v
          end
          local function flat(r, out)
            out = out or {}
            local function walk(x)
              if type(x) == "table" then for _, y in ipairs(x) do walk(y) end else out[#out + 1] = x end
            end
            if ltc.is_tensor(r) then
              walk((r:is_floating_point() and r:to(dt):to("float64") or r):totable())
            elseif type(r) == "table" then
              for _, x in ipairs(r) do flat(x, out) end
            end
            return out
          end
          for _, op in ipairs(C.OPS) do
            local args = C.valid_args(op)
            local function run(narrow)
              ltc.manual_seed(0)
              return pcall(function()
                return flat(ltc[op.name](table.unpack(conv(args, narrow), 1, #op.args)))
              end)
            end
            local ok1, r1 = run(true)
            local ok2, r2 = run(false)
            assert.are.equal(ok2, ok1, dt .. " " .. op.name .. ": " .. tostring(ok1 and r2 or r1))
            if ok1 then
              assert.are.equal(#r2, #r1, dt .. " " .. op.name)
              for i = 1, #r1 do
                local a, b = r1[i], r2[i]
                local close = a == b or (a ~= a and b ~= b) or (type(a) == "number" and
                  math.abs(a - b) <= 1e-6 + 2 * ulp * math.max(math.abs(a), math.abs(b)))
                assert.is_true(close, string.format("%s %s [%d]: %s vs %s", dt, op.name, i,
                  tostring(a), tostring(b)))
              end
            end
          end
        end
      end)

      it("wraps uint8 200 + 100 to 44", function()
        assert.are.same({ 44 }, (ltc.tensor({ 200 }, "uint8") + ltc.tensor({ 100 }, "uint8")):totable())
      end)

      it("promotes mixed operands as torch.result_type", function()
        for _, c in ipairs(fx.mixed) do
          local r = ltc.tensor(c.x, c.a) + ltc.tensor(c.y, c.b)
          assert.are.equal(c.out_dtype, r:dtype(), c.a .. " + " .. c.b)
          same(c.out, (r:is_floating_point() and r:to("float64") or r):totable(), c.a .. " + " .. c.b)
        end
      end)

      it("reduces as PyTorch (sum of uint8 is int64)", function()
        for _, c in ipairs(fx.reductions) do
          local a = ltc.tensor(c.x, c.dtype)
          local r
          if c.op == "max" or c.op == "min" then r = a[c.op](a)
          elseif c.op == "cumsum" then r = a:cumsum(1)
          else r = a[c.op](a) end
          local what = c.dtype .. " " .. c.op
          assert.are.equal(c.out_dtype, r:dtype(), what)
          local v = (r:is_floating_point() and r:to("float64") or r):totable()
          same(c.out, v, what)
        end
      end)

      it("multiplies and softmaxes bfloat16 matrices", function()
        local a, b = ltc.tensor(fx.bf16_matmul.a, "bfloat16"), ltc.tensor(fx.bf16_matmul.b, "bfloat16")
        local m = a:matmul(b)
        assert.are.equal("bfloat16", m:dtype())
        same(fx.bf16_matmul.out, m:to("float64"):totable(), "matmul")
        local s = ltc.tensor(fx.bf16_softmax.a, "bfloat16"):softmax(-1)
        same(fx.bf16_softmax.out, s:to("float64"):totable(), "softmax")
      end)

      it("views, copies, concatenates and indexes without changing the dtype", function()
        for _, dt in ipairs(NARROW) do
          local t = ltc.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, dt)
          assert.are.same({ 2, 5 }, t:select(2, 2):to("int64"):totable())
          assert.are.same({ { 1, 4 }, { 2, 5 }, { 3, 6 } }, t:t():contiguous():to("int64"):totable())
          local c = ltc.cat({ t, t }, 1)
          assert.are.equal(dt, c:dtype())
          assert.are.same({ 4, 3 }, c:size())
          local idx = t:index_select(2, ltc.tensor({ 3, 1 }, "int64"))
          assert.are.equal(dt, idx:dtype())
          assert.are.same({ { 3, 1 }, { 6, 4 } }, idx:to("int64"):totable())
          local u = t:clone()
          u[1][2] = 9
          u:narrow(2, 3, 1):fill_(7)
          assert.are.same({ { 1, 9, 7 }, { 4, 5, 7 } }, u:to("int64"):totable())
          assert.are.same({ { 1, 2, 3 }, { 4, 5, 6 } }, t:to("int64"):totable(), dt .. " clone")
          local z = ltc.zeros({ 2, 3 }, dt)
          z:copy_(ltc.tensor({ 1, 2, 3 }))
          assert.are.same({ { 1, 2, 3 }, { 1, 2, 3 } }, z:to("int64"):totable())
          assert.are.equal(5, t[2][2])
          assert.are.equal(dt, ltc.stack({ t, t }):dtype())
          assert.are.same({ 0, 1, 2 }, ltc.arange(0, 3, 1, dt):to("int64"):totable())
        end
      end)

      it("draws random numbers in range", function()
        for _, dt in ipairs({ "float16", "bfloat16" }) do
          local r = ltc.rand({ 1000 }, dt)
          assert.are.equal(dt, r:dtype())
          assert.is_true(r:min():item() >= 0 and r:max():item() <= 1)
          assert.are.equal(dt, ltc.randn({ 4 }, dt):dtype())
        end
      end)

      it("writes a float result into an integer narrow tensor in place as an error", function()
        local t = ltc.tensor({ 1, 2 }, "uint8")
        local ok, err = pcall(function() t:mul_(1.5) end)
        assert.is_false(ok)
        assert.matches("uint8", tostring(err))
        t:add_(255)
        assert.are.same({ 0, 1 }, t:totable())
      end)
    end)
  end

  describe("errors", function()
    it("raise for integer // and % by zero and negative integer powers, as for int32", function()
      local ok, err = pcall(function() return (ltc.tensor({ 4 }, "uint8") // ltc.tensor({ 0 }, "uint8")):totable() end)
      assert.is_false(ok)
      assert.matches("floor_divide: integer division by zero", tostring(err))
      ok, err = pcall(function() return (ltc.tensor({ 4 }, "int8") % 0):totable() end)
      assert.is_false(ok)
      assert.matches("remainder: integer modulo by zero", tostring(err))
      ok, err = pcall(function() return ltc.tensor({ 4 }, "int16") ^ -1 end)
      assert.is_false(ok)
      assert.matches("int16 tensor %^ %-1", tostring(err))
      ok, err = pcall(function() return ltc.tensor({ true }) - ltc.tensor({ 1 }, "uint8") end)
      assert.is_false(ok)
      assert.matches("subtraction with a bool tensor", tostring(err))
    end)

    it("refuse grad on integer narrow tensors and give float ones grads of their dtype", function()
      local ok, err = pcall(function() ltc.zeros({ 2 }, "uint8"):requires_grad_() end)
      assert.is_false(ok)
      assert.matches("uint8", tostring(err))
      for _, dt in ipairs({ "float16", "bfloat16" }) do
        local w = ltc.tensor({ { 1, -2 }, { 0.5, 3 } }, dt):requires_grad_()
        local x = ltc.tensor({ { 1, 2 } }, dt)
        local y = x:matmul(w):relu():sum()
        assert.are.equal(dt, y:dtype())
        y:backward()
        assert.are.equal(dt, w.grad:dtype())
        -- d/dw of relu(x w): x^T where x w > 0 (x w = {2, 4})
        assert.are.same({ { 1, 1 }, { 2, 2 } }, w.grad:to("float64"):totable())
      end
    end)
  end)

  it("run modules and jitted functions in float16", function()
    local m = ltc.nn.Linear(3, 2)
    m:to("float16")
    assert.are.equal("float16", m.weight:dtype())
    assert.are.equal("float16", m(ltc.ones(4, 3):half()):dtype())
    local f = ltc.jit(function(a, b) return a * b + 1 end)
    local r
    for _ = 1, 4 do r = f(ltc.tensor({ 1.5, 2 }):half(), ltc.tensor({ 2, 0.1 }):half()) end
    assert.are.equal("float16", r:dtype())
    assert.are.same({ 4, 1.2001953125 }, r:to("float64"):totable())
  end)

  it("promotes every pair of dtypes as torch.result_type", function()
    local DT = { "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
                 "float32", "float64" }
    local function one(dt, nd) return nd == 0 and ltc.ones({}, dt) or ltc.ones({ 2 }, dt) end
    for _, a in ipairs(DT) do
      for _, b in ipairs(DT) do
        assert.are.equal(fx.promotion[a .. "+" .. b], ltc.result_type(one(a), one(b)), a .. " + " .. b)
        assert.are.equal(fx.promotion[a .. "+0d:" .. b], ltc.result_type(one(a), one(b, 0)),
          a .. " + 0-d " .. b)
      end
      assert.are.equal(fx.promotion[a .. "+int"], ltc.result_type(one(a), 1), a .. " + 1")
      assert.are.equal(fx.promotion[a .. "+float"], ltc.result_type(one(a), 1.5), a .. " + 1.5")
      assert.are.equal(fx.promotion[a .. "+bool"], ltc.result_type(one(a), true), a .. " + true")
    end
  end)

  it("prints narrow tensors with their dtype", function()
    local s = tostring(ltc.tensor({ 1.5, 2 }, "bfloat16"))
    assert.matches("1%.5000", s)
    assert.matches("ltc%.bfloat16 of size 2", s)
    assert.matches("ltc%.uint8", tostring(ltc.tensor({ 7 }, "uint8")))
  end)

  describe("creation range checks", function()
    it("raise for values that do not fit, as PyTorch", function()
      local cases = {
        { "uint8", 300 }, { "uint8", -256 }, { "int8", 128 }, { "int8", -129 }, { "int16", 32768 },
        { "float16", 1e5 }, { "bfloat16", 1e39 }, { "uint8", 1.5e3 },
      }
      for _, c in ipairs(cases) do
        local ok, err
        if c[1]:find("float") then -- torch.tensor([1e5], dtype=float16) is inf, as here
          assert.are.same({ math.huge }, ltc.tensor({ c[2] }, c[1]):totable())
        else
          ok, err = pcall(ltc.tensor, { c[2] }, c[1])
          assert.is_false(ok, c[1] .. " " .. c[2])
          assert.matches("cannot be converted to " .. c[1], tostring(err))
        end
        -- full's value is a graph parameter: checked where it is computed, as for int32
        ok, err = pcall(function() return ltc.full({ 2 }, c[2], c[1]):totable() end)
        assert.is_false(ok, "full " .. c[1] .. " " .. c[2])
        assert.matches(c[1], tostring(err))
      end
    end)

    it("take the extremes", function()
      assert.are.same({ 0, 255 }, ltc.tensor({ 0, 255 }, "uint8"):totable())
      assert.are.same({ -128, 127 }, ltc.tensor({ -128, 127 }, "int8"):totable())
      assert.are.same({ -32768, 32767 }, ltc.tensor({ -32768, 32767 }, "int16"):totable())
      assert.are.same({ 65504 }, ltc.tensor({ 65504 }, "float16"):totable())
      assert.are.same({ 7, 7 }, ltc.full({ 2 }, 7, "int8"):totable())
    end)

    it("names unknown dtypes", function()
      local ok, err = pcall(ltc.zeros, { 2 }, "uint16")
      assert.is_false(ok)
      assert.matches("unknown dtype 'uint16'.*bfloat16", tostring(err))
    end)
  end)

  describe(".npy and .npz", function()
    it("load the files NumPy writes (narrow, big-endian, Fortran order)", function()
      for name, v in pairs(npyv) do
        local t = ltc.load(NPY .. name .. ".npy")
        assert.are.equal(v.dtype, t:dtype(), name)
        assert.are.same(v.shape, t:size(), name)
        local got = t:is_floating_point() and t:to("float64"):totable() or t:totable()
        same(v.values, got, name)
      end
    end)

    it("round-trip every narrow dtype", function()
      for _, dt in ipairs(NARROW) do
        local t = ltc.tensor({ { 1, 2.5, -3 }, { 100, 0.1, 7 } }):to(dt)
        local path = os.tmpname() .. ".npy"
        ltc.save(path, t)
        local u = ltc.load(path)
        os.remove(path)
        local want = dt == "bfloat16" and "float32" or dt -- no bfloat16 in NumPy
        assert.are.equal(want, u:dtype(), dt)
        same(t:to("float64"):totable(), u:to("float64"):totable(), dt)
      end
    end)

    it("load compressed and plain .npz archives", function()
      local z = ltc.load(NPY .. "compressed.npz")
      assert.are.same({ 0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2, 2.25 }, z.a:totable())
      assert.are.equal("uint8", z.b:dtype())
      assert.are.same({ { 1, 2 }, { 3, 4 } }, z.b:totable())
      local p = ltc.load(NPY .. "plain.npz")
      assert.are.equal("int16", p.a:dtype())
      assert.are.same({ 0, 1, 2 }, p.a:totable())
    end)
  end)
end)


-- The OpenCL backend has no kernels for the narrow dtypes: their nodes run on the host.
local has_ocl = pcall(require, "ltc.opencl")
describe("narrow dtypes on the opencl backend", function()
  if not has_ocl then
    pending("ltc.opencl is not built here")
    return
  end
  setup(function() ltc.set_backend("opencl") end)
  teardown(function() ltc.set_backend("cpu") end)

  it("compute on the host and give the CPU's values", function()
    local a = ltc.tensor({ 200, 100, 5 }, "uint8")
    assert.are.same({ 144, 200, 10 }, (a + a):totable())
    local h = ltc.tensor({ 1.5, 2.25, 0.1 }):to("float16")
    assert.are.same({ 3, 4.5, 0.199951171875 }, (h * 2):to("float64"):totable())
    assert.are.equal("float16", ltc.cat({ h, h }):dtype())
    assert.are.same({ 7, 7 }, ltc.full({ 2 }, 7, "int16"):totable())
    local ok, err = pcall(function() return ltc.full({ 2 }, 300, "uint8"):totable() end)
    assert.is_false(ok)
    assert.matches("cannot be converted to uint8", tostring(err))
  end)
end)
