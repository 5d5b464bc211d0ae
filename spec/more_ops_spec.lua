-- The ops of issue 15 beyond their fixtures (spec/fixtures/ops, run by backends_spec.lua):
-- errors named by op, and behaviour that fixtures cannot show.
local ltc = require "ltc"

describe("polygamma", function()
  it("is +inf at the poles of trigamma", function()
    assert.are.same({ math.huge, math.huge }, ltc.tensor({ -2, 0 }, "float64"):polygamma(1):totable())
  end)

  it("rejects an order other than 0 or 1, naming it", function()
    assert.has_error(function() ltc.ones(2):polygamma(2) end,
      "polygamma: order must be 0 (digamma) or 1 (trigamma), got 2")
    assert.are.same({ 1, 1 }, ltc.ones(2):totable()) -- the runtime goes on
  end)
end)

describe("sorting", function()
  it("keeps equal elements in order (stable), also descending", function()
    local v, i = ltc.tensor({ 2, 1, 2, 1, 2 }):sort(1, true)
    assert.are.same({ 2, 2, 2, 1, 1 }, v:totable())
    assert.are.same({ 1, 3, 5, 2, 4 }, i:totable())
  end)

  it("counts NaN apart in mode (NaN never equals NaN)", function()
    local v, i = ltc.tensor({ 1, 0 / 0, 0 / 0, 0.5 }):mode()
    assert.are.equal(0.5, v:item())
    assert.are.equal(4, i:item())
  end)

  it("names k and the size when k is out of range", function()
    local m = ltc.zeros(2, 3)
    assert.has_error(function() m:topk(4) end, "topk: k (4) out of range for dim 2 of [2,3] (0..3)")
    assert.has_error(function() m:kthvalue(0, 1) end, "kthvalue: k (0) out of range for dim 1 of [2,3] (1..2)")
    assert.has_error(function() ltc.zeros(0):median() end)
  end)

  it("refuses k = 0 of a 0-d tensor, whose 0-d result would hold no value (fuzz seed 146453)", function()
    assert.has_error(function() ltc.tensor(true):topk(0) end,
      "topk: k = 0 of a 0-d tensor: the 0-d result would hold no value (use k = 1, or a 1-d tensor)")
    local v, i = ltc.tensor(3.0):topk(1)
    assert.are.equal(3, v:item())
    assert.are.equal(1, i:item())
  end)
end)

describe("tril and triu", function()
  it("want at least 2 dims", function()
    assert.has_error(function() ltc.ones(3):tril() end,
      "tril: self must have at least 2 dims (matrices), got [3]")
  end)
end)

describe("multinomial", function()
  it("draws with replacement in proportion to the weights, never a zero weight", function()
    ltc.manual_seed(11)
    local n = 20000
    local counts = ltc.tensor({ 0.1, 0, 0.6, 0.3 }):multinomial(n, true):one_hot(4):sum(1):totable()
    assert.are.equal(0, counts[2])
    for i, p in ipairs({ 0.1, 0, 0.6, 0.3 }) do
      local sd = math.sqrt(n * p * (1 - p))
      assert(math.abs(counts[i] - n * p) <= 4 * sd + 1e-9, "category " .. i .. ": " .. counts[i])
    end
  end)

  it("draws distinct categories without replacement, the first in proportion to the weights", function()
    ltc.manual_seed(12)
    local rows = 6000
    local w = ltc.tensor({ 0.2, 0.5, 0.3 }):expand(rows, 3)
    local s = w:multinomial(3)
    assert.are.same({ rows, 3 }, s:size())
    assert.are.same(ltc.full({ rows }, 6, "int64"):totable(), s:sum(2):totable()) -- 1 + 2 + 3
    assert.are.same(ltc.full({ rows }, 6, "int64"):totable(), s:prod(2):totable()) -- distinct
    local first = s:select(2, 1):one_hot(3):sum(1):totable()
    for i, p in ipairs({ 0.2, 0.5, 0.3 }) do
      assert(math.abs(first[i] - rows * p) <= 4 * math.sqrt(rows * p * (1 - p)), "first " .. i)
    end
  end)

  it("draws the same numbers on both backends, fresh ones each step from one compiled graph", function()
    local w = ltc.tensor({ { 1, 2, 3, 4, 5 }, { 5, 0, 1, 0, 2 } })
    ltc.manual_seed(5)
    local a, b = w:multinomial(3):totable(), w:multinomial(3, true):totable()
    ltc.set_backend("ref")
    ltc.manual_seed(5)
    local ok, err = pcall(function()
      assert.are.same(a, w:multinomial(3):totable())
      assert.are.same(b, w:multinomial(3, true):totable())
    end)
    ltc.set_backend("cpu")
    assert(ok, err)
    ltc.metrics.reset()
    local seen = {}
    for _ = 1, 4 do seen[#seen + 1] = table.concat(ltc.tensor({ 1, 1, 1, 1 }):multinomial(4):totable(), ",") end
    assert.are.equal(1, ltc.metrics.counter("UncachedCompile"))
    assert(seen[1] ~= seen[2] or seen[2] ~= seen[3] or seen[3] ~= seen[4], "no fresh draws")
  end)

  it("rejects bad weights, naming the row and the weight, and goes on", function()
    assert.has_error(function() ltc.tensor({ 0.5, -1 }):multinomial(1):totable() end,
      "multinomial: weight 2 of row 1 is -1 (must be finite and >= 0)")
    assert.has_error(function() ltc.tensor({ { 1, 1 }, { 0, 0 } }):multinomial(1, true):totable() end,
      "multinomial: row 2 has 0 positive weights, needs at least 1")
    assert.has_error(function() ltc.tensor({ 0.5, 0 }):multinomial(2):totable() end,
      "multinomial: row 1 has 1 positive weights, fewer than num_samples without replacement")
    assert.has_error(function() ltc.tensor({ 0.5, 0 }):multinomial(3) end,
      "multinomial: cannot draw 3 samples from 2 categories without replacement")
    assert.has_error(function() ltc.tensor({ 1, 2 }, "int64"):multinomial(1) end,
      "multinomial: weights must be of a floating dtype, got int64")
    assert.are.same({ 2 }, ltc.tensor({ 0, 1 }):multinomial(1):totable())
  end)
end)

describe("randperm", function()
  it("is a permutation of 1..n, the same on both backends, different each call", function()
    ltc.manual_seed(9)
    local p, q = ltc.randperm(50), ltc.randperm(50, "int32")
    local sorted = p:sort():totable()
    for i = 1, 50 do assert.are.equal(i, sorted[i]) end
    assert.are.equal("int32", q:dtype())
    assert.are_not.same(p:totable(), q:to("int64"):totable())
    ltc.set_backend("ref")
    ltc.manual_seed(9)
    local r = ltc.randperm(50):totable()
    ltc.set_backend("cpu")
    assert.are.same(p:totable(), r)
    assert.are.same({}, ltc.randperm(0):totable())
    assert.has_error(function() ltc.randperm(-1) end, "randperm: size must be >= 0, got -1")
  end)
end)

describe("reductions over several dims", function()
  it("send the gradient back to every reduced element", function()
    local x = ltc.ones({ 2, 3, 4 }, "float64"):requires_grad_()
    x:sum({ 1, 3 }):sum():backward()
    assert.are.same(ltc.ones({ 2, 3, 4 }, "float64"):totable(), x.grad:totable())
    local y = ltc.arange(6):reshape({ 2, 3 }):double():requires_grad_()
    y:var({ 1, 2 }, 0):backward() -- d/dy mean((y - m)^2) = 2 (y - m) / n
    local g = y.grad:totable()
    assert(math.abs(g[1][1] - 2 * (0 - 2.5) / 6) < 1e-12)
  end)

  it("reject a repeated or out-of-range dim and a bad correction", function()
    local x = ltc.zeros(2, 3)
    assert.has_error(function() x:sum({ 1, -2 }) end, "sum: dim 1 appears twice in the dims")
    assert.has_error(function() x:mean({ 3 }) end, "mean: dim 3 out of range for a 2-d tensor")
    assert.has_error(function() x:var(1, -1) end, "var: correction must be a number >= 0 or a boolean, got -1")
    -- a string is neither (the binding's "boolean expected" left out the number)
    assert.has_error(function() x:var(1, "a") end, "var: correction must be a number >= 0 or a boolean, got a")
    assert.has_error(function() x:std(1, {}) end)
  end)
end)

describe("einsum", function()
  it("is one graph of ordinary ops and differentiates through them", function()
    local a = ltc.tensor({ { 1, 2 }, { 3, 4 } }, "float64"):requires_grad_()
    local b = ltc.tensor({ { 5, 6 }, { 7, 8 } }, "float64"):requires_grad_()
    local c = ltc.einsum("ij,jk->ik", a, b)
    assert.are.same({ { 19, 22 }, { 43, 50 } }, c:totable())
    c:sum():backward()
    assert.are.same({ { 11, 15 }, { 11, 15 } }, a.grad:totable()) -- row sums of b
    assert.are.same({ 10 }, { ltc.einsum("ii", ltc.tensor({ { 1, 2 }, { 3, 9 } }, "int64")):item() })
  end)

  it("names the problem in the equation", function()
    local x, y = ltc.ones(2, 3), ltc.ones(3, 4)
    assert.has_error(function() ltc.einsum("ij,jk", x) end, "einsum: the equation has 2 operands, got 1 tensors")
    assert.has_error(function() ltc.einsum("ijk,jk", x, y) end,
      "einsum: operand 1 has 2 dims but its subscripts 'ijk' name 3")
    assert.has_error(function() ltc.einsum("ij,ik", x, y) end,
      "einsum: subscript i has size 3 in operand 2 but 2 before")
    assert.has_error(function() ltc.einsum("ij,jk->iz", x, y) end, "einsum: output subscript z is in no operand")
    assert.has_error(function() ltc.einsum("i1,jk", x, y) end,
      "einsum: bad subscript '1' in operand 1 (letters only)")
    assert.has_error(function() ltc.einsum("ij,jk", x, y:long()) end,
      "einsum: operands must share one floating dtype (float32, float64, float16 or bfloat16), got float32 and int64")
  end)
end)

describe("ops.yaml's inplace and operator keys", function()
  it("give t:<name>_ and the Lua operators", function()
    local x = ltc.tensor({ 0.5, -0.25 }, "float64")
    local y = x:erf_()
    assert.are.equal(x, y)
    assert(math.abs(x[1] - 0.52049987781304654) < 1e-15)
    local m = ltc.ones(2, 2)
    m:tril_()
    assert.are.same({ { 1, 0 }, { 1, 1 } }, m:totable())
    local a = ltc.tensor({ 7, -7 }, "int64")
    assert.are.same({ 3, -4 }, (a // 2):totable())
    assert.are.same({ 1, 1 }, (a % 2):totable())
    assert.are.same({ -7, 7 }, (-a):totable())
    local t = ltc.ones(1)
    assert(t.add_ and t.tril_ and t.scatter_add_ and t.lgamma_ and not t.matmul_ and not t.sort_)
  end)
end)

describe("indexing written in Lua", function()
  it("syncs once in unique, and differentiates through take_along_dim and index_copy", function()
    ltc.metrics.reset()
    local v, inv, cnt = ltc.tensor({ 3, 1, 3, 0 / 0, 1 }):unique(true, true, true)
    local vs = v:totable()
    assert.are.same({ 1, 3 }, { vs[1], vs[2] })
    assert(vs[3] ~= vs[3])
    assert.are.same({ 2, 1, 2, 3, 1 }, inv:totable())
    assert.are.same({ 2, 2, 1 }, cnt:totable())
    local x = ltc.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, "float64"):requires_grad_()
    x:take_along_dim(ltc.tensor({ { 3, 3 }, { 1, 2 } }, "int64"), 2):sum():backward()
    assert.are.same({ { 0, 0, 2 }, { 1, 1, 0 } }, x.grad:totable())
    local s = ltc.ones({ 1, 3 }, "float64"):requires_grad_()
    ltc.zeros(2, 3, "float64"):index_copy(1, ltc.tensor({ 2 }, "int64"), s):mul(2):sum():backward()
    assert.are.same({ { 2, 2, 2 } }, s.grad:totable())
  end)

  it("names the op and the problem", function()
    local x = ltc.zeros(2, 3)
    assert.has_error(function() x:index_fill(1, ltc.tensor({ 1.5 }), 0) end,
      "index_fill: index must be int64 or int32, got float32")
    assert.has_error(function() x:index_copy(2, ltc.tensor({ 1 }, "int64"), ltc.ones(2, 2)) end,
      "index_copy: source [2,2] must be self's size [2,3] with 1 along dim 2")
    assert.has_error(function() x:unfold(2, 4, 1) end, "unfold: size 4 out of range for dim 2 of size 3")
    assert.has_error(function() x:take_along_dim(ltc.ones({ 3 }, "int64"), 1) end,
      "take_along_dim: self [2,3] and indices [3] must have the same number of dims")
    assert.has_error(function() ltc.im2col(ltc.zeros(1, 1, 2, 2), 3) end,
      "im2col: a 3x3 kernel (dilation 1x1) does not fit the padded 2x2 input")
    assert.has_error(function() x:unique(true, false, false, 1) end,
      "unique: dim is not supported (only the flattened tensor)")
  end)
end)
