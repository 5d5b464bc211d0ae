-- Misuse raises a Lua error that names the op and what was wrong, and the runtime keeps
-- working afterwards (DESIGN.md, "Errors and resources").
local ltc = require "ltc"

-- Calls fn(...) expecting an error; returns its message (a string).
local function err(fn, ...)
  local ok, msg = pcall(fn, ...)
  assert(not ok, "expected an error, got none")
  assert(type(msg) == "string", "error is not a string: " .. tostring(msg))
  return msg
end

-- Asserts the message starts with "<op>:" and contains each of the plain strings. Like
-- every luaL_error, a message raised under a call from Lua code is led by that caller's
-- position ("spec/errors_spec.lua:31: "), which is dropped before the check.
local function names(msg, op, ...)
  msg = msg:gsub("^[^\n:]+:%d+: ", "", 1)
  assert(msg:sub(1, #op + 1) == op .. ":",
    string.format("message does not start with %q: %s", op .. ":", msg))
  for _, s in ipairs({...}) do
    assert(msg:find(s, 1, true), string.format("message lacks %q: %s", s, msg))
  end
end

local function A() return ltc.tensor({{1, 2, 3}, {4, 5, 6}}) end

describe("a shape mismatch", function()
  it("in add names the op and both shapes", function()
    local msg = err(ltc.add, ltc.zeros(2, 3), ltc.zeros(4))
    assert.are.equal("add: shapes [2,3] and [4] are not broadcastable", msg)
  end)

  it("in the + operator names add and both shapes", function()
    local msg = err(function() return ltc.zeros(2, 3) + ltc.zeros(4) end)
    names(msg, "add", "[2,3]", "[4]")
  end)

  it("in a method names the op and both shapes", function()
    names(err(function() return ltc.zeros(2, 3):mul(ltc.zeros(3, 2)) end), "mul", "[2,3]", "[3,2]")
    names(err(function() return ltc.zeros(2, 3):lt(ltc.zeros(2)) end), "lt", "[2,3]", "[2]")
  end)

  it("in matmul of 2x3 by 2x3 names matmul and both shapes", function()
    local msg = err(ltc.matmul, ltc.zeros(2, 3), ltc.zeros(2, 3))
    names(msg, "matmul", "[2,3] and [2,3]")
  end)

  it("in matmul of a vector by a vector of another length names both shapes", function()
    names(err(ltc.matmul, ltc.zeros(3), ltc.zeros(4)), "matmul", "[3]", "[4]")
  end)

  it("leaves the runtime computing correctly, pending work included", function()
    local a = ltc.tensor({1, 2, 3})
    local pending = a * 10 + 1
    assert.is_true(ltc.debug.pending().pending_tensors >= 1)
    err(function() return pending + ltc.zeros(2) end)
    err(ltc.matmul, ltc.zeros(2, 3), ltc.zeros(2, 3))
    assert.are.same({11, 21, 31}, pending:totable())
    assert.are.same({{2, 4, 6}, {8, 10, 12}}, (A() * 2):totable())
    assert.are.same({12, 22, 32}, (pending + 1):totable())
  end)
end)

describe("a dim argument", function()
  it("of 0 is an error naming the op", function()
    names(err(function() return A():sum(0) end), "sum", "0")
    names(err(function() return A():softmax(0) end), "softmax", "0")
    names(err(function() return A():max(0) end), "max", "0")
    names(err(function() return A():transpose(0, 1) end), "transpose", "0")
    names(err(function() return A():size(0) end), "size", "0")
  end)

  it("out of range is an error naming the op and the dim", function()
    names(err(function() return A():sum(3) end), "sum", "3")
    names(err(function() return A():mean(-3) end), "mean", "-3")
    names(err(function() return A():argmax(5) end), "argmax", "5")
    names(err(function() return A():transpose(1, 3) end), "transpose", "3")
    names(err(function() return A():select(3, 1) end), "select", "3")
    names(err(function() return A():log_softmax(3) end), "log_softmax", "3")
  end)

  it("leaves the runtime working", function()
    err(function() return A():sum(3) end)
    assert.are.same({6, 15}, A():sum(2):totable())
  end)
end)

describe("an index argument", function()
  it("out of range in select and narrow is an error", function()
    names(err(function() return A():select(1, 3) end), "select", "3")
    names(err(function() return A():select(2, -4) end), "select", "-4")
    names(err(function() return A():narrow(2, 2, 3) end), "narrow", "3")
    names(err(function() return A():narrow(2, 0, 1) end), "narrow", "0")
  end)

  it("t[i] out of range or 0 is an error", function()
    local v = ltc.tensor({1, 2})
    assert.is_truthy(err(function() return v[3] end):find("out of range", 1, true))
    assert.is_truthy(err(function() return v[0] end):find("0", 1, true))
  end)
end)

describe("view", function()
  it("with a wrong element count names both shapes", function()
    names(err(function() return A():view(4) end), "view", "[2,3]", "[4]")
    names(err(function() return A():reshape(4, 2) end), "reshape", "[2,3]")
  end)

  it("with a -1 that cannot be inferred is an error", function()
    names(err(function() return A():view(4, -1) end), "view", "[2,3]")
    names(err(function() return A():view(-1, -1) end), "view", "-1")
  end)
end)

describe("a non-tensor argument", function()
  it("is an error naming the op and the type", function()
    names(err(ltc.add, "x", A()), "add", "string")
    names(err(ltc.exp, nil), "exp", "nil")
    names(err(function() return A():matmul({}) end), "matmul", "table")
    names(err(function() return A() + {} end), "add", "table")
  end)

  it("for a sum dim that is not an integer is an error", function()
    names(err(function() return A():sum(1.5) end), "sum")
    names(err(function() return A():sum("x") end), "sum")
  end)
end)

describe("a dtype mismatch", function()
  it("in matmul names both dtypes", function()
    names(err(ltc.matmul, ltc.zeros({2, 2}, "int64"), ltc.zeros({2, 2}, "int64")), "matmul",
      "int64")
    names(err(ltc.matmul, ltc.zeros(2, 2), ltc.zeros({2, 2}, "float64")), "matmul",
      "float32", "float64")
  end)

  it("in mean of an int tensor names the dtype", function()
    names(err(function() return ltc.tensor({1, 2}, "int64"):mean() end), "mean", "int64")
  end)
end)

describe("ltc.tensor", function()
  it("of a ragged table is an error", function()
    names(err(ltc.tensor, {{1, 2}, {3}}), "tensor", "ragged")
    names(err(ltc.tensor, {{1, 2}, 3}), "tensor")
    names(err(ltc.tensor, {1, {2}}), "tensor")
  end)

  it("of a non-number element is an error", function()
    names(err(ltc.tensor, {1, "two"}), "tensor", "string")
  end)

  it("of a fractional value for an int dtype is an error", function()
    names(err(ltc.tensor, {1.5}, "int64"), "tensor", "int64")
  end)
end)

describe("an unknown dtype name", function()
  it("is an error naming the op and the name", function()
    names(err(ltc.tensor, {1}, "float8"), "tensor", "float8")
    names(err(ltc.zeros, {2}, "complex"), "zeros", "complex")
    names(err(function() return A():to("quarter") end), "to", "quarter")
  end)
end)

describe("reductions of an empty tensor", function()
  it("max is an error", function()
    names(err(function() return ltc.zeros(0):max() end), "max", "empty")
  end)
end)

describe("item", function()
  it("of a tensor with more than one element is an error", function()
    names(err(function() return A():item() end), "item", "6")
  end)
end)

describe("a sync that fails at run time", function()
  -- A label out of range is only found when the graph runs. The failed graph's tensors
  -- leave the pending set: each is computed again on its own, and those that depend on the
  -- failure go back to their values from before the step if they were written in place, or
  -- raise the error when used if they are new results. Later syncs of other work succeed.
  it("keeps a training loop usable: parameters keep their values from before the step", function()
    local nn = ltc.nn
    ltc.manual_seed(0)
    local model = nn.Linear(4, 3)
    local opt = ltc.optim.SGD(model:parameters(), { lr = 0.1 })
    local x = ltc.randn(8, 4)
    local w0, b0 = model.weight:totable(), model.bias:totable()
    local grad
    local function step(labels)
      opt:zero_grad()
      local loss = nn.functional.cross_entropy(model(x), ltc.tensor(labels, "int64"))
      loss:backward()
      grad = model.weight.grad
      opt:step()
      ltc.sync()
      return loss:item()
    end
    local msg = err(step, { 1, 2, 3, 1, 2, 3, 1, 4 })
    names(msg, "cross_entropy_backward", "target 4 out of range for 3 classes")
    assert.are.same(w0, model.weight:totable())
    assert.are.same(b0, model.bias:totable())
    names(err(function() return grad:totable() end), "this tensor has no value",
      "target 4 out of range")
    -- the next step trains from the kept values, as if the bad step never ran
    local l1 = step({ 1, 2, 3, 1, 2, 3, 1, 2 })
    local w1 = model.weight:totable()
    model.weight.data = ltc.tensor(w0)
    model.bias.data = ltc.tensor(b0)
    assert.are.equal(l1, step({ 1, 2, 3, 1, 2, 3, 1, 2 }))
    assert.are.same(w1, model.weight:totable())
  end)

  it("does not come back on later syncs of other work", function()
    local bad = ltc.ones(3):index_select(1, ltc.tensor({ 4 }, "int64"))
    local other = ltc.ones(2) * 3
    names(err(function() return bad:totable() end), "index_select", "index 4 out of range")
    -- `other` was in the failed graph but does not depend on the failure: it was computed
    assert.are.same({ 3, 3 }, other:totable())
    assert.are.same({ 3, 3 }, (ltc.ones(2) * 3):totable())
    names(err(function() return (bad + 1):totable() end), "add", "this tensor has no value")
  end)

  it("frees an out-of-memory graph and keeps going", function()
    -- (not ones(1):expand(1e12):sum(): the expand fuses into the sum and needs no buffer)
    local msg = err(function() return ltc.zeros(1e12):sum():item() end)
    assert.truthy(msg:find("out of memory", 1, true), msg)
    assert.are.equal(6, (ltc.ones(2) * 3):sum():item())
  end)
end)

describe("ltc.nn and ltc.data constructors", function()
  local nn = ltc.nn
  it("name the layer and the bad argument", function()
    names(err(nn.Linear, "a", 4), "Linear", "in_features must be a positive integer (got string)")
    names(err(nn.Linear, 3, -4), "Linear", "out_features must be a positive integer (got -4)")
    names(err(nn.Conv2d, 0, 4, 3), "Conv2d", "in_channels must be a positive integer (got 0)")
    names(err(nn.Sequential, nn.ReLU(), 5), "Sequential", "module 2 is a number, not an ltc.nn module")
    names(err(function() nn.Sequential():add("x") end), "Sequential", "module 1 is a string")
    names(err(ltc.data.DataLoader, { 1, 2, 3 }, { batch_size = 2 }), "DataLoader",
      "item 1 is a number, not a tensor with rows")
    names(err(ltc.data.DataLoader, 5), "DataLoader", "expected a tensor or a list of tensors, got number")
  end)

  it("take Conv2d's stride and padding positionally, as PyTorch", function()
    local c = nn.Conv2d(1, 4, 3, 2, 1)
    assert.are.equal(2, c.stride)
    assert.are.equal(1, c.padding)
    assert.are.same({ 1, 4, 3, 3 }, c(ltc.ones(1, 1, 6, 6)):size())
    local d = nn.Conv2d(1, 4, 3, { stride = 2, padding = 1 })
    assert.are.same({ 1, 4, 3, 3 }, d(ltc.ones(1, 1, 6, 6)):size())
  end)
end)

describe("arguments that were silently accepted", function()
  it("raise errors naming the function and the argument", function()
    local t = ltc.ones(2, 3)
    assert.are.equal(1, t[{ 2, 1 }]) -- Torch7's table index: taken since (lua/ltc/torch7.lua)
    names(err(function() return t[{ 3, 1 }] end), "index", "index 3 out of range for dim 1 of size 2")
    assert.are.equal(1, t[2][1])
    names(err(ltc.tensor, { a = 1 }), "tensor", "keys that are not 1..n")
    assert.are.equal(0, ltc.tensor({}):numel())
    names(err(function() return t:mean(2, "yes") end), "mean", "boolean expected, got string")
    assert.are.same({ 2, 1 }, t:mean(2, true):size())
    local p = { ltc.ones(2):requires_grad_() }
    names(err(ltc.optim.Adam, p, { betas = { 2, 0.9 } }), "Adam", "beta 1 must be in [0, 1) (got 2)")
    names(err(ltc.optim.SGD, p, { lr = 0.1, momentum = -1 }), "SGD", "momentum must be a number >= 0")
  end)
end)
