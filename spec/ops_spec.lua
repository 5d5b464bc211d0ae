-- The values of every op in codegen/ops.yaml, against results computed by hand.
local ltc = require "ltc"

local close = dofile("spec/support/close.lua")

-- Asserts every leaf of a nested table is a Lua integer (math.type "integer").
local function all_integers(tbl)
  if type(tbl) ~= "table" then
    assert.are.equal("integer", math.type(tbl))
    return
  end
  for _, v in ipairs(tbl) do all_integers(v) end
end

local function A() return ltc.tensor({{1, 2, 3}, {4, 5, 6}}) end

describe("creation ops", function()
  it("zeros makes a float32 tensor of zeros from varargs sizes", function()
    local z = ltc.zeros(2, 3)
    assert.are.same({2, 3}, z:size())
    assert.are.equal("float32", z:dtype())
    assert.are.same({{0, 0, 0}, {0, 0, 0}}, z:totable())
  end)

  it("zeros takes a size table and a dtype", function()
    local z = ltc.zeros({2, 3}, "float64")
    assert.are.same({2, 3}, z:size())
    assert.are.equal("float64", z:dtype())
    assert.are.same({{0, 0, 0}, {0, 0, 0}}, z:totable())
  end)

  it("ones fills with 1, as integers for an int dtype", function()
    local o = ltc.ones({2, 2}, "int32")
    assert.are.equal("int32", o:dtype())
    assert.are.same({{1, 1}, {1, 1}}, o:totable())
    all_integers(o:totable())
    assert.are.same({1, 1, 1}, ltc.ones(3):totable())
    assert.are.equal("float32", ltc.ones(3):dtype())
  end)

  it("full fills with the value, float32 unless a dtype is given", function()
    local f = ltc.full({2, 2}, 7)
    assert.are.equal("float32", f:dtype())
    assert.are.same({{7, 7}, {7, 7}}, f:totable())
    local g = ltc.full({3}, 2.5, "float64")
    assert.are.equal("float64", g:dtype())
    assert.are.same({2.5, 2.5, 2.5}, g:totable())
  end)

  it("arange(n) counts from 0 to n-1 as int64", function()
    local r = ltc.arange(5)
    assert.are.equal("int64", r:dtype())
    assert.are.same({0, 1, 2, 3, 4}, r:totable())
    all_integers(r:totable())
  end)

  it("arange(a, b) excludes b", function()
    assert.are.same({2, 3, 4}, ltc.arange(2, 5):totable())
  end)

  it("arange with a float step gives float32", function()
    local r = ltc.arange(0, 1, 0.25)
    assert.are.equal("float32", r:dtype())
    assert.are.same({0, 0.25, 0.5, 0.75}, r:totable())
  end)

  it("arange counts down with a negative step", function()
    assert.are.same({5, 3, 1}, ltc.arange(5, 0, -2):totable())
  end)

  it("arange takes a dtype", function()
    local r = ltc.arange(3, "float64")
    assert.are.equal("float64", r:dtype())
    assert.are.same({0, 1, 2}, r:totable())
  end)

  it("tensor builds from nested tables, float32 by default", function()
    local t = A()
    assert.are.equal("float32", t:dtype())
    assert.are.same({2, 3}, t:size())
    assert.are.equal(2, t:dim())
    assert.are.equal(6, t:numel())
    assert.are.equal(2, #t)
    assert.are.equal(3, t:size(2))
    assert.are.equal(3, t:size(-1))
    assert.are.same({{1, 2, 3}, {4, 5, 6}}, t:totable())
  end)

  it("tensor takes a dtype and keeps integers exact", function()
    local t = ltc.tensor({9007199254740993, -2}, "int64")
    assert.are.equal("int64", t:dtype())
    assert.are.same({9007199254740993, -2}, t:totable())
    all_integers(t:totable())
  end)

  it("tensor of booleans is a bool tensor", function()
    local t = ltc.tensor({true, false})
    assert.are.equal("bool", t:dtype())
    assert.are.same({true, false}, t:totable())
  end)

  it("tensor of a number is 0-d", function()
    local t = ltc.tensor(3.5)
    assert.are.equal(0, t:dim())
    assert.are.same({}, t:size())
    assert.are.equal(3.5, t:item())
  end)

  it("rand draws float32 values in [0, 1)", function()
    ltc.manual_seed(1)
    local r = ltc.rand(3, 4)
    assert.are.same({3, 4}, r:size())
    assert.are.equal("float32", r:dtype())
    local vals, sum, distinct = ltc.rand(1000):totable(), 0, {}
    for _, v in ipairs(vals) do
      assert.is_true(v >= 0 and v < 1, "rand value out of [0, 1): " .. v)
      sum = sum + v
      distinct[v] = true
    end
    assert.is_true(math.abs(sum / 1000 - 0.5) < 0.05, "mean of 1000 uniforms: " .. sum / 1000)
    local n = 0
    for _ in pairs(distinct) do n = n + 1 end
    assert.is_true(n > 990, "only " .. n .. " distinct values in 1000 draws")
  end)

  it("rand gives the same numbers after the same seed, others after another", function()
    ltc.manual_seed(42)
    local a = ltc.rand(5):totable()
    local b = ltc.rand(5):totable()
    ltc.manual_seed(42)
    local c = ltc.rand(5):totable()
    ltc.manual_seed(43)
    local d = ltc.rand(5):totable()
    assert.are.same(a, c)
    assert.are_not.same(a, b)
    assert.are_not.same(a, d)
  end)

  it("randn draws standard normal values", function()
    ltc.manual_seed(7)
    local vals = ltc.randn(4000):totable()
    local sum, sq, neg = 0, 0, 0
    for _, v in ipairs(vals) do
      sum, sq = sum + v, sq + v * v
      if v < 0 then neg = neg + 1 end
    end
    local mean = sum / #vals
    local var = sq / #vals - mean * mean
    assert.is_true(math.abs(mean) < 0.1, "mean " .. mean)
    assert.is_true(math.abs(var - 1) < 0.1, "variance " .. var)
    assert.is_true(neg > 1800 and neg < 2200, neg .. " negatives of 4000")
    ltc.manual_seed(7)
    assert.are.same(vals, ltc.randn(4000):totable())
  end)
end)

describe("add", function()
  it("adds two tensors of the same shape", function()
    assert.are.same({{2, 4, 6}, {8, 10, 12}}, (A() + A()):totable())
    assert.are.same({{2, 4, 6}, {8, 10, 12}}, ltc.add(A(), A()):totable())
    assert.are.same({{2, 4, 6}, {8, 10, 12}}, A():add(A()):totable())
  end)

  it("broadcasts a row over a matrix", function()
    local row = ltc.tensor({10, 20, 30})
    assert.are.same({{11, 22, 33}, {14, 25, 36}}, (A() + row):totable())
    assert.are.same({{11, 22, 33}, {14, 25, 36}}, (row + A()):totable())
  end)

  it("broadcasts a column over a matrix", function()
    local col = ltc.tensor({{100}, {200}})
    assert.are.same({{101, 102, 103}, {204, 205, 206}}, (A() + col):totable())
  end)

  it("broadcasts a column against a row into a matrix", function()
    local col, row = ltc.tensor({{1}, {2}}), ltc.tensor({10, 20, 30})
    local s = col + row
    assert.are.same({2, 3}, s:size())
    assert.are.same({{11, 21, 31}, {12, 22, 32}}, s:totable())
  end)

  it("takes a Lua number on either side", function()
    assert.are.same({{2, 3, 4}, {5, 6, 7}}, (A() + 1):totable())
    assert.are.same({{2, 3, 4}, {5, 6, 7}}, (1 + A()):totable())
    assert.are.same({{1.5, 2.5, 3.5}, {4.5, 5.5, 6.5}}, (A() + 0.5):totable())
  end)
end)

describe("sub", function()
  it("subtracts with broadcasting", function()
    local row = ltc.tensor({1, 1, 1})
    assert.are.same({{0, 1, 2}, {3, 4, 5}}, (A() - row):totable())
    assert.are.same({{0, 1, 2}, {3, 4, 5}}, A():sub(row):totable())
  end)

  it("takes a Lua number on either side", function()
    assert.are.same({{0, 1, 2}, {3, 4, 5}}, (A() - 1):totable())
    assert.are.same({{9, 8, 7}, {6, 5, 4}}, (10 - A()):totable())
  end)
end)

describe("mul", function()
  it("multiplies by a column", function()
    local col = ltc.tensor({{1}, {2}})
    assert.are.same({{1, 2, 3}, {8, 10, 12}}, (A() * col):totable())
    assert.are.same({{1, 2, 3}, {8, 10, 12}}, ltc.mul(col, A()):totable())
  end)

  it("takes a Lua number on either side", function()
    assert.are.same({{2, 4, 6}, {8, 10, 12}}, (A() * 2):totable())
    assert.are.same({{-3, -6, -9}, {-12, -15, -18}}, (-3 * A()):totable())
  end)
end)

describe("div", function()
  it("divides elementwise", function()
    assert.are.same({{0.5, 1, 1.5}, {2, 2.5, 3}}, (A() / 2):totable())
    close({{12, 6, 4}, {3, 2.4, 2}}, (12 / A()):totable())
    assert.are.same({{1, 1, 1}, {1, 1, 1}}, A():div(A()):totable())
  end)

  it("gives inf for x / 0 and NaN for 0 / 0", function()
    close({math.huge, -math.huge, 0 / 0}, (ltc.tensor({1, -1, 0}) / 0):totable())
  end)
end)

describe("pow", function()
  it("raises to a Lua number and a Lua number to a tensor", function()
    assert.are.same({{1, 4, 9}, {16, 25, 36}}, (A() ^ 2):totable())
    assert.are.same({{2, 4, 8}, {16, 32, 64}}, (2 ^ A()):totable())
    close({2, 3, 0.5}, (ltc.tensor({4, 9, 0.25}) ^ 0.5):totable())
  end)

  it("raises elementwise with broadcasting", function()
    assert.are.same({{1, 4, 27}, {4, 25, 216}},
      A():pow(ltc.tensor({1, 2, 3})):totable())
  end)
end)

describe("neg", function()
  it("negates with unary minus and as a function", function()
    assert.are.same({{-1, -2, -3}, {-4, -5, -6}}, (-A()):totable())
    assert.are.same({3, 0, -2}, ltc.neg(ltc.tensor({-3, 0, 2})):totable())
    local n = -ltc.tensor({5, -6}, "int64")
    assert.are.equal("int64", n:dtype())
    assert.are.same({-5, 6}, n:totable())
  end)
end)

describe("exp", function()
  it("computes e to each element", function()
    close({1, 2.718281828459045, 7.38905609893065, 0.36787944117144233},
      ltc.tensor({0, 1, 2, -1}):exp():totable())
  end)

  it("gives float32 for an integer tensor", function()
    local e = ltc.tensor({0, 1}, "int64"):exp()
    assert.are.equal("float32", e:dtype())
    close({1, 2.718281828459045}, e:totable())
  end)
end)

describe("log", function()
  it("computes the natural logarithm", function()
    close({0, 0.6931471805599453, 2.302585092994046}, ltc.log(ltc.tensor({1, 2, 10})):totable())
  end)

  it("gives -inf at 0 and NaN below 0", function()
    close({-math.huge, 0 / 0}, ltc.tensor({0, -1}):log():totable())
  end)
end)

describe("relu", function()
  it("zeroes the negatives", function()
    assert.are.same({0, 0, 0, 1.5, 3}, ltc.tensor({-2, -0.5, 0, 1.5, 3}):relu():totable())
  end)

  it("keeps NaN", function()
    close({0 / 0, 0}, ltc.tensor({0 / 0, -1}):relu():totable())
  end)

  it("keeps an integer dtype", function()
    local r = ltc.tensor({-4, 4}, "int32"):relu()
    assert.are.equal("int32", r:dtype())
    assert.are.same({0, 4}, r:totable())
  end)
end)

describe("sigmoid", function()
  it("computes 1 / (1 + exp(-x))", function()
    close({0.5, 0.8807970779778823, 0.11920292202211755},
      ltc.tensor({0, 2, -2}):sigmoid():totable())
  end)
end)

describe("tanh", function()
  it("computes the hyperbolic tangent", function()
    close({0, 0.7615941559557649, -0.46211715726000974},
      ltc.tensor({0, 1, -0.5}):tanh():totable())
  end)
end)

describe("comparisons", function()
  local x, y = ltc.tensor({1, 2, 3}), ltc.tensor({3, 2, 1})

  it("eq gives a bool tensor", function()
    local e = x:eq(y)
    assert.are.equal("bool", e:dtype())
    assert.are.same({false, true, false}, e:totable())
    assert.are.same({false, true, false}, ltc.eq(x, y):totable())
  end)

  it("lt and gt compare elementwise", function()
    assert.are.same({true, false, false}, x:lt(y):totable())
    assert.are.same({false, false, true}, x:gt(y):totable())
  end)

  it("compare with a Lua number", function()
    assert.are.same({false, true, true}, x:gt(1):totable())
    assert.are.same({false, true, false}, x:eq(2):totable())
    assert.are.same({true, true, false}, x:lt(2.5):totable())
  end)

  it("broadcast a column against a row", function()
    local col = ltc.tensor({{1}, {2}})
    assert.are.same({{false, true, true}, {false, false, true}}, col:lt(x):totable())
  end)

  it("compare in the promoted dtype", function()
    assert.are.same({false, true}, ltc.tensor({1, 2}, "int64"):gt(1.5):totable())
  end)
end)

describe("floor_divide", function()
  it("floors float quotients toward negative infinity", function()
    assert.are.same({3, -4, 3, -3}, (ltc.tensor({7, -7, 7.5, 7}) // ltc.tensor({2, 2, 2, -3})):totable())
  end)

  it("floors int64 quotients toward negative infinity", function()
    local q = ltc.tensor({-7, 7, 6, 7, -7}, "int64") // ltc.tensor({2, 2, 2, -2, -2}, "int64")
    assert.are.equal("int64", q:dtype())
    assert.are.same({-4, 3, 3, -4, 3}, q:totable())
    all_integers(q:totable())
  end)

  it("floors -7 // 2 to -4 with a Lua number divisor", function()
    local q = ltc.tensor({-7}, "int64") // 2
    assert.are.equal("int64", q:dtype())
    assert.are.same({-4}, q:totable())
    assert.are.same({-4}, ltc.floor_divide(ltc.tensor({-7}, "int32"), 2):totable())
  end)

  it("raises for integer division by zero, as PyTorch (ZeroDivisionError)", function()
    local ok, e = pcall(function() return (ltc.tensor({5, -5}, "int64") // 0):totable() end)
    assert.is_false(ok)
    assert.matches("floor_divide: integer division by zero", e)
  end)
end)

describe("remainder", function()
  it("takes the sign of the divisor on int64 tensors", function()
    local r = ltc.tensor({-7, 7, 7, -7, 6}, "int64") % ltc.tensor({3, 3, -3, -3, 3}, "int64")
    assert.are.equal("int64", r:dtype())
    assert.are.same({2, 1, -2, -1, 0}, r:totable())
    all_integers(r:totable())
  end)

  it("gives -7 % 3 == 2 and 7 % -3 == -2 with Lua number divisors", function()
    assert.are.same({2}, (ltc.tensor({-7}, "int64") % 3):totable())
    assert.are.same({-2}, (ltc.tensor({7}, "int64") % -3):totable())
    assert.are.same({2}, ltc.remainder(ltc.tensor({-7}, "int32"), 3):totable())
  end)

  it("takes the sign of the divisor on float tensors", function()
    assert.are.same({1, 2, 2.5, -2}, (ltc.tensor({7, -7, 5.5, 7}) % ltc.tensor({3, 3, 3, -3})):totable())
  end)

  it("raises for integer x % 0, as PyTorch (ZeroDivisionError)", function()
    local ok, e = pcall(function() return (ltc.tensor({5}, "int64") % 0):totable() end)
    assert.is_false(ok)
    assert.matches("remainder: integer modulo by zero", e)
  end)
end)

describe("to", function()
  it("truncates floats toward zero when converting to an integer dtype", function()
    local i = ltc.tensor({1.7, -1.7, 0}):to("int32")
    assert.are.equal("int32", i:dtype())
    assert.are.same({1, -1, 0}, i:totable())
    all_integers(i:totable())
  end)

  it("gives x ~= 0 when converting to bool", function()
    assert.are.same({true, true, false}, ltc.tensor({2, -0.5, 0}):bool():totable())
  end)

  it("has the shorthands float, double, int, long and bool", function()
    local t = ltc.tensor({1, 2})
    assert.are.equal("float64", t:double():dtype())
    assert.are.equal("int32", t:int():dtype())
    assert.are.equal("int64", t:long():dtype())
    assert.are.equal("bool", t:bool():dtype())
    assert.are.equal("float32", t:long():float():dtype())
    assert.are.same({1, 0}, ltc.tensor({true, false}):float():totable())
  end)

  it("copies even when the dtype is unchanged", function()
    local t = ltc.tensor({1, 2})
    local c = t:to("float32")
    assert.are.equal("float32", c:dtype())
    assert.are.same({1, 2}, c:totable())
    assert.are_not.equal(t, c)
  end)
end)

describe("type promotion", function()
  it("keeps float32 when a float32 tensor is multiplied by 0.5", function()
    local r = ltc.tensor({1, 2}) * 0.5
    assert.are.equal("float32", r:dtype())
    assert.are.same({0.5, 1}, r:totable())
  end)

  it("makes an int32 tensor times 2.5 float32", function()
    local r = ltc.tensor({1, 2}, "int32") * 2.5
    assert.are.equal("float32", r:dtype())
    assert.are.same({2.5, 5}, r:totable())
  end)

  it("keeps int32 when an int32 tensor is multiplied by a Lua integer", function()
    local r = ltc.tensor({1, 2}, "int32") * 2
    assert.are.equal("int32", r:dtype())
    assert.are.same({2, 4}, r:totable())
  end)

  it("promotes int32 and int64 tensors to int64, float32 and float64 to float64", function()
    assert.are.equal("int64", (ltc.tensor({1}, "int32") + ltc.tensor({1}, "int64")):dtype())
    assert.are.equal("float64", (ltc.tensor({1}) + ltc.tensor({1}, "float64")):dtype())
    assert.are.equal("float32", (ltc.tensor({1}, "int64") + ltc.tensor({1})):dtype())
  end)

  it("makes a bool tensor plus a Lua integer int64", function()
    local r = ltc.tensor({true, false}) + 1
    assert.are.equal("int64", r:dtype())
    assert.are.same({2, 1}, r:totable())
  end)

  it("sums an int tensor to int64", function()
    local s = ltc.tensor({{1, 2}, {3, 4}}, "int32"):sum()
    assert.are.equal("int64", s:dtype())
    assert.are.equal(10, s:item())
    assert.are.equal("integer", math.type(s:item()))
    assert.are.equal("int64", ltc.tensor({true, true, false}):sum():dtype())
    assert.are.equal(2, ltc.tensor({true, true, false}):sum():item())
  end)

  it("divides ints to float32", function()
    local r = ltc.tensor({1, 7}, "int64") / 2
    assert.are.equal("float32", r:dtype())
    assert.are.same({0.5, 3.5}, r:totable())
    local q = ltc.tensor({7}, "int32") / ltc.tensor({2}, "int32")
    assert.are.equal("float32", q:dtype())
    assert.are.same({3.5}, q:totable())
  end)
end)

describe("sum", function()
  it("sums all elements into a 0-d tensor", function()
    local s = A():sum()
    assert.are.equal(0, s:dim())
    assert.are.equal(21, s:item())
  end)

  it("sums along dim 1 and dim 2", function()
    assert.are.same({5, 7, 9}, A():sum(1):totable())
    assert.are.same({6, 15}, A():sum(2):totable())
    assert.are.same({6, 15}, A():sum(-1):totable())
  end)

  it("keeps the reduced dim as size 1 with keepdim", function()
    local s = A():sum(2, true)
    assert.are.same({2, 1}, s:size())
    assert.are.same({{6}, {15}}, s:totable())
    local c = A():sum(1, true)
    assert.are.same({1, 3}, c:size())
    assert.are.same({{5, 7, 9}}, c:totable())
  end)

  it("gives 0 for an empty tensor", function()
    assert.are.equal(0, ltc.zeros(0):sum():item())
  end)
end)

describe("mean", function()
  it("averages all elements", function()
    assert.are.equal(3.5, A():mean():item())
  end)

  it("averages along a dim, with and without keepdim", function()
    assert.are.same({2.5, 3.5, 4.5}, A():mean(1):totable())
    local m = A():mean(2, true)
    assert.are.same({2, 1}, m:size())
    assert.are.same({{2}, {5}}, m:totable())
  end)

  it("gives NaN for an empty tensor", function()
    local m = ltc.zeros(0):mean():item()
    assert.is_true(m ~= m, "mean of empty: " .. tostring(m))
  end)
end)

describe("max", function()
  local function B() return ltc.tensor({{3, 9, 2}, {7, 1, 8}}) end

  it("gives the largest element of the whole tensor", function()
    local m = B():max()
    assert.are.equal(0, m:dim())
    assert.are.equal(9, m:item())
  end)

  it("returns values and 1-based int64 indices along a dim", function()
    local v, i = B():max(1)
    assert.are.same({7, 9, 8}, v:totable())
    assert.are.same({2, 1, 2}, i:totable())
    assert.are.equal("int64", i:dtype())
    all_integers(i:totable())
    local v2, i2 = B():max(2)
    assert.are.same({9, 8}, v2:totable())
    assert.are.same({2, 3}, i2:totable())
  end)

  it("keeps the reduced dim with keepdim", function()
    local v, i = B():max(-1, true)
    assert.are.same({2, 1}, v:size())
    assert.are.same({{9}, {8}}, v:totable())
    assert.are.same({{2}, {3}}, i:totable())
  end)

  it("gives the first index on ties", function()
    local _, i = ltc.tensor({{5, 5, 1}, {0, 4, 4}}):max(2)
    assert.are.same({1, 2}, i:totable())
  end)

  it("propagates NaN", function()
    local m = ltc.tensor({1, 0 / 0, 3}):max():item()
    assert.is_true(m ~= m, "max with a NaN: " .. tostring(m))
  end)
end)

describe("argmax", function()
  local function B() return ltc.tensor({{3, 9, 2}, {7, 1, 8}}) end

  it("gives the 1-based index in the flattened tensor", function()
    local a = B():argmax()
    assert.are.equal("int64", a:dtype())
    assert.are.equal(2, a:item())
    assert.are.equal(6, ltc.tensor({{1, 2, 3}, {4, 5, 9}}):argmax():item())
  end)

  it("gives 1-based indices along a dim", function()
    assert.are.same({2, 1, 2}, B():argmax(1):totable())
    assert.are.same({2, 3}, B():argmax(2):totable())
    assert.are.same({{2}, {3}}, B():argmax(2, true):totable())
  end)

  it("gives the first on ties", function()
    assert.are.equal(2, ltc.tensor({0, 4, 4}):argmax():item())
  end)
end)

describe("matmul", function()
  it("multiplies a 2x3 by a 3x4 matrix", function()
    local b = ltc.tensor({{1, 0, 2, -1}, {0, 1, 1, 2}, {3, -1, 0, 1}})
    local c = A():matmul(b)
    assert.are.same({2, 4}, c:size())
    assert.are.same({{10, -1, 4, 6}, {22, -1, 13, 12}}, c:totable())
    assert.are.same({{10, -1, 4, 6}, {22, -1, 13, 12}}, ltc.matmul(A(), b):totable())
  end)

  it("gives the dot product of two vectors as a 0-d tensor", function()
    local d = ltc.tensor({1, 2, 3}):matmul(ltc.tensor({4, 5, 6}))
    assert.are.equal(0, d:dim())
    assert.are.equal(32, d:item())
  end)

  it("multiplies a matrix by a vector", function()
    local v = A():matmul(ltc.tensor({1, 0, -1}))
    assert.are.same({2}, v:size())
    assert.are.same({-2, -2}, v:totable())
  end)

  it("multiplies a vector by a matrix", function()
    local v = ltc.tensor({1, -1}):matmul(A())
    assert.are.same({3}, v:size())
    assert.are.same({-3, -3, -3}, v:totable())
  end)

  it("multiplies batches of matrices", function()
    local x = ltc.tensor({{{1, 2}, {3, 4}}, {{0, 1}, {1, 0}}})
    local y = ltc.tensor({{{1}, {1}}, {{2}, {3}}})
    local z = x:matmul(y)
    assert.are.same({2, 2, 1}, z:size())
    assert.are.same({{{3}, {7}}, {{3}, {2}}}, z:totable())
  end)

  it("broadcasts a matrix over a batch", function()
    local x = ltc.tensor({{{1, 2}, {3, 4}}, {{0, 1}, {1, 0}}})
    local m = ltc.tensor({{1, 0}, {0, 2}})
    local z = x:matmul(m)
    assert.are.same({2, 2, 2}, z:size())
    assert.are.same({{{1, 4}, {3, 8}}, {{0, 2}, {1, 0}}}, z:totable())
  end)

  it("works in float64", function()
    local a = ltc.tensor({{0.1, 0.2}}, "float64")
    local b = ltc.tensor({{10}, {100}}, "float64")
    local c = a:matmul(b)
    assert.are.equal("float64", c:dtype())
    close({{21}}, c:totable(), 1e-12)
  end)
end)

describe("transpose", function()
  it("swaps the two dims of a matrix", function()
    local t = A():transpose(1, 2)
    assert.are.same({3, 2}, t:size())
    assert.are.same({{1, 4}, {2, 5}, {3, 6}}, t:totable())
  end)

  it("swaps the outer dims of a 3-d tensor, with negative dims", function()
    local x = ltc.tensor({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}})
    assert.are.same({{{1, 5}, {3, 7}}, {{2, 6}, {4, 8}}}, x:transpose(1, 3):totable())
    assert.are.same({{{1, 5}, {3, 7}}, {{2, 6}, {4, 8}}}, x:transpose(-1, 1):totable())
  end)

  it("t() transposes a matrix and leaves a vector as it is", function()
    assert.are.same({{1, 4}, {2, 5}, {3, 6}}, A():t():totable())
    assert.are.same({{1, 4}, {2, 5}, {3, 6}}, ltc.t(A()):totable())
    assert.are.same({1, 2, 3}, ltc.tensor({1, 2, 3}):t():totable())
  end)

  it("feeds a transposed operand into matmul", function()
    assert.are.same({{14, 32}, {32, 77}}, A():matmul(A():t()):totable())
  end)
end)

describe("view and reshape", function()
  it("view infers a -1 size", function()
    local v = ltc.arange(6):view(2, -1)
    assert.are.same({2, 3}, v:size())
    assert.are.same({{0, 1, 2}, {3, 4, 5}}, v:totable())
  end)

  it("view flattens with -1 and takes a size table", function()
    assert.are.same({1, 2, 3, 4, 5, 6}, A():view(-1):totable())
    assert.are.same({{1, 2}, {3, 4}, {5, 6}}, A():view({3, 2}):totable())
  end)

  it("reshape works as view", function()
    local r = A():reshape(-1, 2)
    assert.are.same({3, 2}, r:size())
    assert.are.same({{1, 2}, {3, 4}, {5, 6}}, r:totable())
    assert.are.same({{{1}, {2}, {3}}, {{4}, {5}, {6}}}, A():reshape(2, 3, 1):totable())
  end)

  it("reshapes a transposed matrix in its logical order", function()
    assert.are.same({1, 4, 2, 5, 3, 6}, A():t():reshape(-1):totable())
  end)
end)

describe("narrow", function()
  it("takes length elements from a 1-based start", function()
    assert.are.same({{2, 3}, {5, 6}}, A():narrow(2, 2, 2):totable())
    assert.are.same({{1, 2, 3}}, A():narrow(1, 1, 1):totable())
  end)

  it("counts a negative start and dim from the end", function()
    assert.are.same({{2, 3}, {5, 6}}, A():narrow(2, -2, 2):totable())
    assert.are.same({{4, 5, 6}}, A():narrow(1, -1, 1):totable())
    assert.are.same({{3}, {6}}, A():narrow(-1, 3, 1):totable())
  end)
end)

describe("select", function()
  it("removes the dim at a 1-based index", function()
    local s = A():select(1, 2)
    assert.are.same({3}, s:size())
    assert.are.same({4, 5, 6}, s:totable())
    assert.are.same({2, 5}, A():select(2, 2):totable())
  end)

  it("counts negative indices and dims from the end", function()
    assert.are.same({3, 6}, A():select(2, -1):totable())
    assert.are.same({1, 4}, A():select(-1, 1):totable())
    assert.are.same({4, 5, 6}, A():select(1, -1):totable())
  end)

  it("t[i] selects along dim 1, and gives a number for a 1-d tensor", function()
    local a = A()
    assert.are.same({4, 5, 6}, a[2]:totable())
    assert.are.equal(6, a[2][3])
    assert.are.equal(3, a[1][-1])
    local v = ltc.tensor({10, 20, 30}, "int64")
    assert.are.equal(30, v[-1])
    assert.are.equal("integer", math.type(v[1]))
  end)
end)

describe("softmax", function()
  it("normalises each row", function()
    local x = ltc.tensor({{0, 0.6931471805599453, 1.0986122886681098}, {10, 10, 10}})
    close({{1 / 6, 2 / 6, 3 / 6}, {1 / 3, 1 / 3, 1 / 3}}, x:softmax(2):totable())
    close({{1 / 6, 2 / 6, 3 / 6}, {1 / 3, 1 / 3, 1 / 3}}, x:softmax(-1):totable())
  end)

  it("normalises each column along dim 1", function()
    local x = ltc.tensor({{0, 0}, {0.6931471805599453, 0}})
    close({{1 / 3, 0.5}, {2 / 3, 0.5}}, x:softmax(1):totable())
  end)

  it("is stable for large inputs", function()
    close({{0.5, 0.5}}, ltc.tensor({{1000, 1000}}):softmax(2):totable())
  end)
end)

describe("log_softmax", function()
  it("subtracts the log-sum-exp of each row", function()
    local x = ltc.tensor({{0, 0.6931471805599453, 1.0986122886681098}, {0, 0, 0}})
    close({{-1.791759469228055, -1.0986122886681098, -0.6931471805599453},
           {-1.0986122886681098, -1.0986122886681098, -1.0986122886681098}},
      x:log_softmax(2):totable(), 1e-5)
  end)

  it("is stable for large inputs", function()
    close({{-0.6931471805599453, -0.6931471805599453}},
      ltc.tensor({{1000, 1000}}):log_softmax(-1):totable(), 1e-5)
  end)
end)
