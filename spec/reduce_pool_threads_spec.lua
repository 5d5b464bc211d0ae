-- The multi-threaded CPU reductions (sum, mean, max, argmax, over all elements and along a
-- dim) and pooling kernels (max_pool2d, avg_pool2d and their backward ops) against the
-- reference backend, at shapes that cut rows into blocks and columns into column blocks;
-- the same result twice in a row and with 1 or 4 threads.
local ltc = require "ltc"

-- Runs fn on a backend with the same random inputs (made there from one seed); each result
-- flattened to a Lua table.
local function run(backend, fn)
  ltc.set_backend(backend)
  ltc.manual_seed(5)
  local out = {}
  for i, y in ipairs { fn() } do out[i] = y:reshape(-1):totable() end
  return out
end

local function close(cpu, ref, tol)
  assert.are.equal(#ref, #cpu)
  for k = 1, #ref do
    assert.are.equal(#ref[k], #cpu[k])
    for i = 1, #ref[k] do
      local a, b = cpu[k][i], ref[k][i]
      if a ~= b then -- equal infinities, or both NaN
        assert.is_true(a ~= a and b ~= b or math.abs(a - b) <= tol * (1 + math.abs(b)),
          string.format("result %d, element %d: cpu %s, ref %s", k, i, tostring(a), tostring(b)))
      end
    end
  end
end

-- The same values element by element (NaN equal to NaN).
local function same(a, b)
  close(a, b, 0)
end

-- fn on the CPU backend equals the reference within tol, and is bitwise the same when run
-- again and when run on 1 and on 4 threads.
local function check(fn, tol)
  local saved = ltc.config.LTC_NUM_THREADS
  local first = run("cpu", fn)
  close(first, run("ref", fn), tol or 1e-5)
  same(first, run("cpu", fn))
  ltc.config.LTC_NUM_THREADS = 1
  local one = run("cpu", fn)
  ltc.config.LTC_NUM_THREADS = 4
  local four = run("cpu", fn)
  ltc.config.LTC_NUM_THREADS = saved
  same(first, one)
  same(first, four)
end

describe("CPU reductions on threads", function()
  after_each(function() ltc.set_backend("cpu") end)

  for _, case in ipairs {
    { { 300000 }, nil },        -- all elements: many blocks, the last one partial; threads
    { { 3, 91000 }, nil },
    { { 300, 20000 }, 2 },      -- rows of two blocks
    { { 5000, 7 }, 2 },         -- many short rows
    { { 3, 5000, 70 }, 2 },     -- outer slices, inner 70
    { { 2, 7, 700 }, 2 },       -- column blocks, the last one partial
    { { 9000, 300 }, 1 },       -- one slice, two column blocks over 9000 rows
    { { 4, 1, 5 }, 2 },
    { { 256, 128 }, 1 },        -- column sums: rows four at a time into the accumulators
    { { 7, 3 }, 1 },            -- rows 5..7 after one group of four, 3 columns
    { { 257, 33 }, 1 },         -- one row left over, an odd number of columns
    { { 5, 3, 19 }, 2 },        -- fewer than four rows per outer slice
  } do
    local size, dim = case[1], case[2]
    local name = table.concat(size, "x") .. (dim and " along " .. dim or ", all elements")
    it("sum and mean match the reference backend: " .. name, function()
      check(function()
        local x = ltc.randn(size) * 3 + 1
        if dim then return x:sum(dim), x:mean(dim), x:sum(dim, true) end
        return x:sum(), x:mean()
      end, 1e-5)
    end)
    it("sum and mean in float64 match the reference backend: " .. name, function()
      check(function()
        local x = ltc.randn(size, "float64")
        if dim then return x:sum(dim), x:mean(dim) end
        return x:sum(), x:mean()
      end, 1e-12)
    end)
    it("sum of int32, int64 and bool matches the reference backend: " .. name, function()
      check(function()
        local x = (ltc.randn(size) * 1000):to("int32")
        local w = x:to("int64") * 4000000000
        if dim then return x:sum(dim), x:gt(0):sum(dim), w:sum(dim) end
        return x:sum(), x:gt(0):sum(), w:sum()
      end, 0)
    end)
    it("max and argmax match the reference backend: " .. name, function()
      check(function()
        local x = ltc.randn(size)
        if dim then
          local v, i = x:max(dim)
          return v, i, x:argmax(dim)
        end
        return x:max(), x:argmax()
      end, 0)
    end)
  end

  it("column sums give the written-out values in every dtype, int64 wrapping", function()
    local rows = { { 1, -2, 3 }, { 4, 5, -6 }, { 7, 8, 9 }, { -10, 11, 12 }, { 13, 14, 15 } }
    for _, dt in ipairs { "float32", "float64", "int32", "int64" } do
      local s = ltc.tensor(rows, dt):sum(1)
      assert.are.same({ 15, 36, 33 }, s:totable(), dt)
      assert.are.equal(dt == "int32" and "int64" or dt, s:dtype())
    end
    local b = ltc.tensor(rows):gt(3):sum(1)
    assert.are.same({ 3, 4, 3 }, b:totable())
    local big = ltc.tensor({ { math.maxinteger, 1 }, { 1, 2 }, { 1, 3 }, { 1, 4 }, { 1, 5 } }, "int64")
    assert.are.same({ math.mininteger + 3, 15 }, big:sum(1):totable())
  end)

  it("argmax over blocks takes the first of equal maxima, and the first NaN", function()
    check(function()
      local x = ltc.zeros(3, 40000)
      x[1][30000] = 2
      x[1][39000] = 2
      x[2][20000] = 0 / 0
      x[2][35000] = 0 / 0
      x[2][3] = 5
      local v, i = x:max(2)
      return v, i, x:argmax(), x:view(-1):max(), ltc.ones(50000):argmax()
    end, 0)
  end)
end)

describe("CPU pooling on threads", function()
  after_each(function() ltc.set_backend("cpu") end)

  for _, c in ipairs {
    { "2x2", { 4, 16, 24, 20 }, { 2 } },
    { "3x3, stride 1, padding 1", { 3, 10, 17, 15 }, { 3, 1, 1 } },
    { "3x3, stride 2, padding 1, ceil mode", { 2, 9, 15, 13 }, { 3, 2, 1, 1, true } },
    { "unbatched", { 40, 12, 12 }, { 2 } },
    { "2x2, odd sizes (the last row and column in no window)", { 3, 5, 9, 7 }, { 2 } },
    { "2x2, rows of 21 windows (16 and a tail of 5)", { 2, 3, 6, 42 }, { 2 } },
    { "2x2 in float64", { 2, 3, 10, 6 }, { 2 }, "float64" },
  } do
    local size, args, dt = c[2], c[3], c[4]
    it("max_pool2d and its backward match the reference backend: " .. c[1], function()
      check(function()
        local x = ltc.randn(size, dt)
        local k, s, p, d, ceil = args[1], args[2], args[3], args[4], args[5]
        local y = ltc.max_pool2d(x, k, s, p, d, ceil)
        local g = ltc.randn(y:size(), dt)
        local k2, s2, p2, d2 = { k, k }, { s or k, s or k }, { p or 0, p or 0 }, { d or 1, d or 1 }
        return y, ltc.max_pool2d_backward(g, x, k2, s2, p2, d2, ceil or false)
      end, 1e-5)
    end)
    it("max_pool2d picks the first of equal maxima and the last NaN, as the reference: " .. c[1], function()
      check(function()
        -- few distinct values: many ties; NaN in some windows (one or two of them)
        local x = ltc.randint(0, 3, size):to(dt or "float32")
        x = ltc.where(ltc.randint(0, 9, size):eq(0), ltc.full({}, 0 / 0, dt), x)
        local k, s, p, d, ceil = args[1], args[2], args[3], args[4], args[5]
        local y = ltc.max_pool2d(x, k, s, p, d, ceil)
        local g = ltc.arange(1, y:numel() + 1):to(dt or "float32"):view(y:size())
        local k2, s2, p2, d2 = { k, k }, { s or k, s or k }, { p or 0, p or 0 }, { d or 1, d or 1 }
        return y, ltc.max_pool2d_backward(g, x, k2, s2, p2, d2, ceil or false)
      end, 0)
    end)
    it("avg_pool2d and its backward match the reference backend: " .. c[1], function()
      check(function()
        local x = ltc.randn(size, "float64")
        local k, s, p, ceil = args[1], args[2], args[3], args[5]
        local y = ltc.avg_pool2d(x, k, s, p, ceil, false)
        local g = ltc.randn(y:size(), "float64")
        local k2, s2, p2 = { k, k }, { s or k, s or k }, { p or 0, p or 0 }
        return y, ltc.avg_pool2d_backward(g, x, k2, s2, p2, ceil or false, false)
      end, 1e-12)
    end)
  end
end)
