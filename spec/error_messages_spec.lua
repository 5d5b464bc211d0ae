-- Misuse raises an error that names the function and the bad argument, at the caller's line
-- (this file's), never at a line inside lua/ltc/ and never as a raw Lua error ("attempt to
-- index a nil value") (issue 17, r19).
local ltc = require "ltc"

-- The message of the error f raises. f must make its call in a statement (not `return
-- g(...)`), so that the caller's line is a line of this file.
local function err(f)
  local ok, msg = pcall(f)
  assert(not ok, "expected an error, got none")
  assert(type(msg) == "string", "error is not a string: " .. tostring(msg))
  return msg
end

-- Asserts msg is "<this file>:<line>: <fname>: ..." and contains each plain string.
local function raised_here(msg, fname, ...)
  assert(msg:find("^[^\n]*error_messages_spec%.lua:%d+: " .. fname:gsub("%p", "%%%0") .. ":"),
    string.format("not raised here naming %s: %s", fname, msg))
  assert(not msg:find("lua/ltc/", 1, true), "a line inside lua/ltc/: " .. msg)
  for _, s in ipairs({ ... }) do
    assert(msg:find(s, 1, true), string.format("message lacks %q: %s", s, msg))
  end
end

describe("an in-place op", function()
  it("names itself in dtype, shape and expand-view errors", function()
    raised_here(err(function() local _ = ltc.ones(3, "int64"):add_(0.5) end), "add_",
      "float32", "int64")
    raised_here(err(function() local _ = ltc.ones(1, 3):expand(2, 3):mul_(2) end), "mul_",
      "expand view")
    raised_here(err(function() local _ = ltc.ones(3):add_(ltc.ones(2, 3)) end), "add_",
      "[2,3]", "[3]")
    raised_here(err(function() local _ = ltc.ones(3):add_("x") end), "add_", "got string")
  end)

  it("fill_ and zero_ name themselves, not copy_", function()
    raised_here(err(function() local _ = ltc.ones(2):fill_("x") end), "fill_", "got string")
    local b = ltc.ones(1, 2):requires_grad_() * 1
    raised_here(err(function() local _ = b:expand(2, 2):zero_() end), "zero_", "expand view")
  end)

  it("still writes and returns the tensor", function()
    local t = ltc.ones(3)
    assert.are.equal(t, t:add_(1))
    assert.are.same({ 2, 2, 2 }, t:totable())
    assert.are.same({ 7, 7, 7 }, t:fill_(7):totable())
  end)

  it("ltc.assign_ takes only a string as the op name", function()
    raised_here(err(function()
      local _ = ltc.assign_(ltc.ones(1):requires_grad_(), ltc.ones(1), ltc.tensor(3.5))
    end), "assign_", "bad argument #3", "got ltc.Tensor")
  end)
end)

describe("a Lua-written function", function()
  it("checks its arguments", function()
    raised_here(err(function() ltc.no_grad(nil) end), "no_grad", "a function expected, got nil")
    raised_here(err(function() ltc.enable_grad(5) end), "enable_grad", "got number")
    raised_here(err(function() local _ = ltc.load(nil) end), "load", "got nil")
    raised_here(err(function() local _ = ltc.expand_as(ltc.ones(2), 3) end), "expand_as",
      "bad argument #2", "got number")
    raised_here(err(function() local _ = ltc.ones(3):expand_as(ltc.ones(2)) end), "expand_as",
      "cannot expand")
    raised_here(err(function() local _ = ltc.chunk("", 3) end), "chunk", "bad argument #1",
      "got string")
    raised_here(err(function() local _ = ltc.split("", 3) end), "split", "bad argument #1")
    local p = ltc.ones(2):requires_grad_()
    raised_here(err(function() (p * p):sum():backward("x") end), "backward", "got string")
    raised_here(err(function() (p * p):backward(ltc.ones(2), 1) end), "backward",
      "bad argument #3", "got number")
    raised_here(err(function() ltc.ones(2).zero_grad(0 / 0) end), "zero_grad", "got number")
  end)

  it("nn, optim and data name the function and the argument", function()
    local m = ltc.nn.Linear(2, 2)
    raised_here(err(function() m:load_state_dict(5) end), "load_state_dict", "got number")
    raised_here(err(function() m:load_state_dict(nil) end), "load_state_dict", "got nil")
    local sd = m:state_dict()
    sd.weight = 5
    raised_here(err(function() m:load_state_dict(sd) end), "load_state_dict", "'weight'",
      "number")
    raised_here(err(function() local _ = ltc.optim.SGD({ 5 }, { lr = 0.1 }) end), "SGD",
      "parameter 1 is number")
    raised_here(err(function() local _ = ltc.optim.Adam({ { params = 5 } }) end), "Adam",
      "parameter group 1")
    raised_here(err(function() local _ = ltc.data.permutation("x") end), "permutation",
      "bad argument #1")
    raised_here(err(function() local _ = ltc.nn.LayerNorm("x") end), "LayerNorm",
      "bad argument #1")
    raised_here(err(function() local _ = ltc.io.read_csv("/nonexistent/x.csv") end),
      "read_csv", "/nonexistent/x.csv")
    raised_here(err(function() ltc.config.LTC_NUM_THREADS = -1 end), "config",
      "LTC_NUM_THREADS")
    raised_here(err(function() ltc.config.LTC_NUM_THREADS = 2.5 end), "config",
      "LTC_NUM_THREADS", "non-integer number 2.5")
  end)

  it("nn.functional checks its tensor arguments", function()
    raised_here(err(function() local _ = ltc.nn.functional.relu(nil) end), "relu",
      "bad argument #1", "got nil")
    raised_here(err(function() local _ = ltc.nn.functional.cross_entropy(ltc.ones(2, 3), 1) end),
      "cross_entropy", "bad argument #2", "got number")
    raised_here(err(function() local _ = ltc.nn.functional.mse_loss(ltc.ones(2), "x") end),
      "mse_loss", "bad argument #2", "ltc.Tensor or number expected")
    assert.are.equal(0, ltc.nn.functional.mse_loss(ltc.ones(2), 1):item())
    raised_here(err(function() local _ = ltc.nn.functional.group_norm(ltc.ones(2, 4), nil) end),
      "group_norm", "bad argument #2", "an integer expected, got nil")
    raised_here(err(function() local _ = ltc.nn.functional.conv1d(ltc.ones(1, 1, 4), nil) end),
      "conv1d", "bad argument #2")
    raised_here(err(function()
      local _ = ltc.nn.functional.conv_transpose2d(ltc.ones(2, 3), ltc.ones(2, 3))
    end), "conv_transpose2d", "must be 4-d")
    -- the modules call the checked functions
    raised_here(err(function() local _ = ltc.nn.ReLU()(nil) end), "relu", "got nil")
    raised_here(err(function() local _ = ltc.nn.Softmax(1)("x") end), "softmax", "got string")
    raised_here(err(function() local _ = ltc.nn.CrossEntropyLoss()(ltc.ones(2, 3), nil) end),
      "cross_entropy", "bad argument #2")
    raised_here(err(function() local _ = ltc.nn.TransformerEncoderLayer(nil, 2) end),
      "MultiheadAttention", "embed_dim")
    -- ltc.help shows the checked function's own doc comment
    assert.truthy(ltc.doc(ltc.nn.functional.mse_loss):find("(input - target)^2", 1, true))
  end)

  it("checks a few calls deep name the caller's line (indexing, data, io, optim)", function()
    raised_here(err(function() local _ = ltc.take_along_dim(ltc.ones(2), nil) end),
      "take_along_dim", "index must be a tensor, got nil")
    raised_here(err(function() local _ = ltc.ones(2, 2):index_fill(9, ltc.tensor({ 1 }, "int64"), 0) end),
      "index_fill", "dim 9 out of range")
    raised_here(err(function() local _ = ltc.data.mnist({}) end), "mnist", "got table")
    raised_here(err(function() local _ = ltc.io.load_npz(nil) end), "load_npz", "got nil")
    raised_here(err(function() local _ = ltc.tensor(nil) end), "tensor", "got nil")
    -- (a number second is the lr, PyTorch's positional form: Adam(params, 5) is valid)
    raised_here(err(function() local _ = ltc.optim.Adam({ ltc.ones(1) }, "x") end), "Adam",
      "lr must be a number >= 0", 'got the string "x"')
    raised_here(err(function() local _ = ltc.optim.Adam({ ltc.ones(1) }, 5, { lr = 1 }) end), "Adam",
      "got multiple values for 'lr'")
  end)

  it("keeps working for good arguments", function()
    assert.are.equal(3, #ltc.data.permutation(3, 5))
    assert.are.same(ltc.data.permutation(10, 4), ltc.data.permutation(10.0, 4))
    assert.are.equal(3, ltc.no_grad(function(a) return a + 1 end, 2))
    local e = ltc.ones(3):expand_as(ltc.ones(2, 3))
    assert.are.same({ 2, 3 }, { e:size(1), e:size(2) })
    assert.are.equal(2, #ltc.ones(4):chunk(2))
  end)
end)

describe("an error of the C binding", function()
  it("names the caller's line when the op was called by one of ltc's Lua functions", function()
    raised_here(err(function() local _ = ltc.dropout(nil) end), "dropout", "got nil")
    raised_here(err(function() local _ = ltc.full("x") end), "full", "got string")
    raised_here(err(function() local _ = ltc.flatten(true) end), "flatten", "got boolean")
    raised_here(err(function() local _ = ltc.ones(2):repeatTensor("x") end), "repeat")
  end)

  it("names no line when a C function (pcall) called it, as luaL_error", function()
    local ok, msg = pcall(ltc.add, ltc.zeros(2), ltc.zeros(3))
    assert.is_false(ok)
    assert.are.equal("add: shapes [2] and [3] are not broadcastable", msg)
  end)
end)

describe("a closed tensor", function()
  local function closed()
    local c = ltc.ones(2)
    c:close()
    return c
  end

  it("is reported as closed", function()
    local c = closed()
    raised_here(err(function() local _ = ltc.cat({ ltc.ones(2), c }) end), "cat",
      "entry 2 is a closed ltc.Tensor")
    raised_here(err(function() c:backward() end), "backward", "closed")
    raised_here(err(function() local _ = ltc.chunk(c, 2) end), "chunk", "closed")
    raised_here(err(function() local _ = ltc.optim.SGD({ c }) end), "SGD", "closed")
    assert.are.equal("ltc.Tensor (closed)", tostring(c))
  end)

  it("is closed by a <close> variable as by t:close()", function()
    local keep
    do
      local t <close> = ltc.ones(2)
      keep = t
    end
    assert.are.equal("ltc.Tensor (closed)", tostring(keep))
    keep:close() -- twice is fine
  end)
end)

describe("the counters", function()
  it("past the table's 255 names are reported once and counted as OtherCounters, not lost", function()
    -- in a child process: the counter names are global to the process
    local cmd = string.format("LUA_PATH='%s' LUA_CPATH='%s' ", package.path, package.cpath)
      .. "lua5.4 -e 'local ltc = require \"ltc\"; local core = require \"ltc.core\"; "
      .. "for i = 1, 300 do core._counter_add(\"SpecCounter\" .. i, 1) end; "
      .. "local n = 0; for _, name in ipairs(ltc.metrics.counter_names()) do "
      .. "n = n + ltc.metrics.counter(name) end; print(\"total\", n)' 2>&1"
    local p = io.popen(cmd)
    local out = p:read("a")
    p:close()
    local _, warnings = out:gsub("more than 255 counter names", "")
    assert.are.equal(1, warnings, out)
    assert.truthy(out:find("are counted together as OtherCounters", 1, true), out)
    -- every add is in some counter: none silently stays 0
    local total = tonumber(out:match("total\t(%d+)"))
    assert.is_true(total >= 300, out)
  end)
end)
