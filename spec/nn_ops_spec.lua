-- Values of the indexing, loss and linear-layer ops (index_select, index_add, gather,
-- scatter_add, one_hot, nll_loss, cross_entropy and their backward ops, linear, addmm),
-- against values worked out by hand, on the CPU backend and on the reference backend.
local ltc = require "ltc"

local function close(expected, actual, tol, path)
  tol, path = tol or 1e-5, path or ""
  if type(expected) == "table" then
    assert(type(actual) == "table", "at " .. path .. ": expected a table, got " .. tostring(actual))
    assert(#actual == #expected, string.format("at %s: %d entries, expected %d", path, #actual, #expected))
    for i = 1, #expected do close(expected[i], actual[i], tol, path .. "[" .. i .. "]") end
    return
  end
  assert(math.abs(actual - expected) <= tol * (1 + math.abs(expected)),
    string.format("at %s: expected %s, got %s", path, tostring(expected), tostring(actual)))
end

local X = { { 1, 2, 3 }, { 4, 5, 6 } }
local lse1 = math.log(math.exp(1) + math.exp(2) + math.exp(3))
local lse2 = math.log(math.exp(4) + math.exp(5) + math.exp(6))

for _, backend in ipairs({ "cpu", "ref" }) do
  describe("on the " .. backend .. " backend", function()
    local saved
    setup(function()
      saved = ltc.get_backend and ltc.get_backend() or "cpu"
      if ltc.set_backend then ltc.set_backend(backend) end
    end)
    teardown(function() if ltc.set_backend then ltc.set_backend(saved) end end)

    it("index_select picks 1-based positions along a dim, repeats allowed", function()
      local x = ltc.tensor(X)
      assert.are.same({ { 3, 1, 3 }, { 6, 4, 6 } }, x:index_select(2, ltc.tensor({ 3, 1, 3 }, "int64")):totable())
      assert.are.same({ { 4, 5, 6 } }, x:index_select(1, ltc.tensor({ 2 }, "int32")):totable())
    end)

    it("index_add accumulates repeated positions", function()
      local y = ltc.zeros(2, 3):index_add(2, ltc.tensor({ 2, 2 }, "int64"), ltc.tensor({ { 1, 2 }, { 3, 4 } }))
      assert.are.same({ { 0, 3, 0 }, { 0, 7, 0 } }, y:totable())
    end)

    it("gather and scatter_add follow PyTorch with 1-based indices", function()
      local x = ltc.tensor(X)
      local idx = ltc.tensor({ { 3, 1 }, { 2, 2 } }, "int64")
      assert.are.same({ { 3, 1 }, { 5, 5 } }, x:gather(2, idx):totable())
      assert.are.same({ { 4, 2, 6 } }, x:gather(1, ltc.tensor({ { 2, 1, 2 } }, "int64")):totable())
      local s = ltc.zeros(2, 3):scatter_add(2, idx, ltc.tensor({ { 1, 2 }, { 3, 4 } }))
      assert.are.same({ { 2, 0, 1 }, { 0, 7, 0 } }, s:totable())
    end)

    it("one_hot marks the 1-based class in int64", function()
      local y = ltc.tensor({ 3, 1 }, "int64"):one_hot(3)
      assert.are.equal("int64", y:dtype())
      assert.are.same({ { 0, 0, 1 }, { 1, 0, 0 } }, y:totable())
    end)

    it("nll_loss takes -x[target] with mean, sum and no reduction", function()
      local x, t = ltc.tensor(X), ltc.tensor({ 3, 1 }, "int64")
      close(-(3 + 4) / 2, x:nll_loss(t):item())
      close(-(3 + 4), x:nll_loss(t, 2):item())
      close({ -3, -4 }, x:nll_loss(t, 0):totable())
    end)

    it("cross_entropy is log_softmax then nll_loss", function()
      local x, t = ltc.tensor(X), ltc.tensor({ 3, 1 }, "int64")
      close(((lse1 - 3) + (lse2 - 4)) / 2, x:cross_entropy(t):item())
      close({ lse1 - 3, lse2 - 4 }, x:cross_entropy(t, 0):totable())
      close(lse1 - 2, ltc.tensor({ 1, 2, 3 }):cross_entropy(ltc.tensor(2, "int64")):item())
    end)

    it("the loss backward ops give the gradient of the mean", function()
      local x, t = ltc.tensor(X), ltc.tensor({ 3, 1 }, "int64")
      local g = ltc.nll_loss_backward(ltc.tensor(1), x, t)
      close({ { 0, 0, -0.5 }, { -0.5, 0, 0 } }, g:totable())
      local ce = ltc.cross_entropy_backward(ltc.tensor(1), x, t):totable()
      local e1, e2 = math.exp(1 - lse1), math.exp(4 - lse2)
      close(e1 / 2, ce[1][1])
      close((math.exp(3 - lse1) - 1) / 2, ce[1][3])
      close((e2 - 1) / 2, ce[2][1])
    end)

    it("linear is x . w^T + b, with or without a bias", function()
      local x = ltc.tensor(X)
      local w = ltc.tensor({ { 1, 0, 0 }, { 0, 1, 1 } })
      assert.are.same({ { 11, 15 }, { 14, 21 } }, ltc.linear(x, w, ltc.tensor({ 10, 10 })):totable())
      assert.are.same({ { 1, 5 }, { 4, 11 } }, ltc.linear(x, w):totable())
      assert.are.same({ 1, 5 }, ltc.linear(ltc.tensor({ 1, 2, 3 }), w):totable())
    end)

    it("addmm is beta * self + alpha * mat1 . mat2 with self broadcast", function()
      local m1, m2 = ltc.tensor({ { 1, 2 }, { 3, 4 } }), ltc.tensor({ { 1, 0 }, { 0, 1 } })
      assert.are.same({ { 3, 5 }, { 7, 9 } }, ltc.addmm(ltc.tensor({ 1, 1 }), m1, m2, 1, 2):totable())
      assert.are.same({ { 1, 2 }, { 3, 4 } }, ltc.addmm(ltc.tensor(0 / 0), m1, m2, 0):totable())
    end)

    it("an index or label out of range is an error naming the op and the value", function()
      local x = ltc.tensor(X)
      local ok, err = pcall(function() return x:index_select(2, ltc.tensor({ 4 }, "int64")):totable() end)
      assert.is_false(ok)
      assert.matches("index_select: index 4 out of range (1..3", err, 1, true)
      ok, err = pcall(function() return x:cross_entropy(ltc.tensor({ 0, 1 }, "int64")):item() end)
      assert.is_false(ok)
      assert.matches("target 0 out of range for 3 classes", err, 1, true)
      collectgarbage() -- the failed graphs' tensors must not join a later sync
    end)
  end)
end

describe("shape errors", function()
  it("name the op and the shapes at trace time", function()
    local ok, err = pcall(ltc.linear, ltc.zeros(2, 3), ltc.zeros(4, 5))
    assert.is_false(ok)
    assert.matches("linear: expected self [..., in] and weight [out, in], got [2,3] and [4,5]", err, 1, true)
    ok, err = pcall(ltc.nll_loss, ltc.zeros(2, 3), ltc.tensor({ 1, 2, 3 }, "int64"))
    assert.is_false(ok)
    assert.matches("nll_loss: expected input [N, C] and target [N]", err, 1, true)
    ok, err = pcall(ltc.one_hot, ltc.tensor({ 1 }, "int64"), 0)
    assert.is_false(ok)
    assert.matches("num_classes must be at least 1", err, 1, true)
  end)
end)
