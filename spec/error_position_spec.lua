-- Errors point at the user's line and name the function the user called (issues 16 and 17):
-- every function of ltc, ltc.nn.functional, ltc.nn, ltc.nn.init, ltc.nn.utils.rnn, ltc.optim,
-- ltc.debug and ltc.data, every tensor method, and a sample of modules and optimizers, called
-- with bad arguments, raise either no error or one whose position is this file's line: never
-- a line inside lua/ltc/, never "[C]" or no position, never lauxlib's "bad argument #1 to
-- 'f'" (the name of a local variable) or "to '?'".
local ltc = require "ltc"

local bad_calls, raised = {}, 0

-- Calls f(...) from a line of this file and records a misplaced message.
local function try(label, f, ...)
  local args = table.pack(...)
  local ok, msg = pcall(function() local _ = f(table.unpack(args, 1, args.n)) end)
  if ok then return end
  raised = raised + 1
  msg = tostring(msg)
  if not msg:find("^[^\n]*error_position_spec%.lua:%d+: ") or msg:find(" to '[^']*' %(")
    or msg:find("lua/ltc/", 1, true) then
    bad_calls[#bad_calls + 1] = label .. " => " .. msg:sub(1, 200)
  end
end

local function names(tbl)
  local r = {}
  for k, v in pairs(tbl) do
    if type(v) == "function" and type(k) == "string" and not k:find("^_") then r[#r + 1] = k end
  end
  table.sort(r)
  return r
end

-- not called: they end the process, start a REPL, or change global state for the rest of the run
local skip = { sync = true, manual_seed = true, repl = true,
  exit = true, help = true, set_backend = true, set_default_device = true, config_set = true,
  config_assign = true, set_printoptions = true, use_deterministic_algorithms = true,
  set_num_threads = true, set_default_dtype = true }

local function bad_args()
  return { {}, { "x" }, { {} }, { ltc.ones(2, 3), "x" }, { ltc.ones(2, 3), ltc.ones(4, 5) },
    { 1.5, "y", {} }, { ltc.ones(2, 3), 99 }, { ltc.ones(2, 3), -99, "x" }, { { 2, 3 } },
    { ltc.ones(2, 3), 0 }, { ltc.ones(2, 3), { foo = 1 } },
    { ltc.ones(2, 3, "int64"), ltc.ones(2, 3) }, { ltc.ones(2, 3), ltc.ones(2, 3), ltc.ones(5) },
    { -1 }, { 2, -3 } }
end

describe("an error from misuse", function()
  it("is raised at the caller's line, naming the function, across the API", function()
    local groups = { { "ltc.", ltc }, { "F.", ltc.nn.functional }, { "nn.", ltc.nn },
      { "init.", ltc.nn.init }, { "rnn.", ltc.nn.utils.rnn },
      { "optim.", ltc.optim }, { "debug.", ltc.debug }, { "data.", ltc.data } }
    for _, g in ipairs(groups) do
      for _, n in ipairs(names(g[2])) do
        if not skip[n] then
          for i, b in ipairs(bad_args()) do try(g[1] .. n .. "#" .. i, g[2][n], table.unpack(b)) end
        end
      end
    end
    for _, n in ipairs(names(require("ltc.core").methods)) do
      if n ~= "close" then
        for i, b in ipairs({ {}, { "x" }, { {} }, { ltc.ones(4, 5) }, { 1.5, "y" } }) do
          try("t:" .. n .. "#" .. i, function(...)
            local t = ltc.ones(2, 3)
            return t[n](t, ...)
          end, table.unpack(b))
        end
      end
    end
    local mods = { { "Linear", { 3, 2 } }, { "Conv2d", { 1, 2, 3 } }, { "Conv1d", { 1, 2, 3 } },
      { "BatchNorm1d", { 3 } }, { "BatchNorm2d", { 3 } }, { "LayerNorm", { 3 } },
      { "Embedding", { 10, 4 } }, { "LSTM", { 3, 4 } }, { "GRU", { 3, 4 } },
      { "MaxPool2d", { 2 } }, { "MultiheadAttention", { 4, 2 } }, { "GroupNorm", { 2, 4 } },
      { "Dropout", { 0.5 } }, { "CrossEntropyLoss", {} }, { "MSELoss", {} },
      { "ConvTranspose2d", { 1, 2, 3 } }, { "TransformerEncoderLayer", { 4, 2 } },
      { "TransformerEncoder", { ltc.nn.TransformerEncoderLayer(4, 2, 8), 2 } } }
    for _, m in ipairs(mods) do
      local C = ltc.nn[m[1]]
      local mod = C(table.unpack(m[2]))
      for i, b in ipairs({ { ltc.ones(7, 5) }, { "x" }, { ltc.ones(2, 3, 5, 5, 1, 1) } }) do
        try("mod:" .. m[1] .. "#" .. i, function(...) return mod(...) end, table.unpack(b))
      end
      for i, b in ipairs({ { "x" }, { -1 }, { 3, 2, { bogus = 1 } }, { 0.5, "q" } }) do
        try("new:" .. m[1] .. "#" .. i, C, table.unpack(b))
      end
    end
    for _, n in ipairs({ "SGD", "Adam", "AdamW", "RMSprop", "Adagrad" }) do
      local p = ltc.ones(2):requires_grad_()
      for i, b in ipairs({ { {} }, { { 5 } }, { "x" }, { { p }, { lr = "x" } },
        { { p }, { bogus = 1 } }, { { p }, { lr = -1 } } }) do
        try("optim:" .. n .. "#" .. i, ltc.optim[n], table.unpack(b))
      end
    end
    assert.is_true(raised > 3000, "only " .. raised .. " errors raised")
    assert.are.same({}, bad_calls)
  end)

  it("names the function when it was called through a local (not 'f')", function()
    local f = ltc.config_get
    local ok, msg = pcall(function() local _ = f({}) end)
    assert.is_false(ok)
    assert.truthy(msg:find("error_position_spec%.lua:%d+: config_get: bad argument #1 %(string "
      .. "expected, got table%)"), msg)
    local g = ltc.Graph
    ok, msg = pcall(function() local _ = g(5) end)
    assert.truthy(msg:find("error_position_spec%.lua:%d+: Graph: bad argument #1"), msg)
    local begin = ltc.Graph({}).capture_begin
    ok, msg = pcall(function() begin(5) end)
    assert.truthy(msg:find("error_position_spec%.lua:%d+: capture_begin: bad argument #1 "
      .. "%(ltc.Graph expected, got number%)"), msg)
    local close = ltc.ones(1).close
    ok, msg = pcall(function() close(5) end)
    assert.truthy(msg:find("error_position_spec%.lua:%d+: close: bad argument #1 %(ltc.Tensor "
      .. "expected, got number%)"), msg)
  end)

  it("from F.conv1d names conv1d with its 3-d sizes, not the conv2d it is built on", function()
    local F = ltc.nn.functional
    local ok, msg = pcall(function() local _ = F.conv1d(ltc.ones(1, 2, 5), ltc.ones(3, 4, 2)) end)
    assert.is_false(ok)
    assert.truthy(msg:find("error_position_spec%.lua:%d+: conv1d: weight %[3, 4, 2%] does not "
      .. "fit input %[1, 2, 5%]"), msg)
    ok, msg = pcall(function() local _ = F.conv1d(ltc.ones(1, 2, 5), ltc.ones(3, 2, 9)) end)
    assert.truthy(msg:find("conv1d: the padded input length %(5%) is smaller than the dilated "
      .. "kernel %(9%)"), msg)
    -- an error of the op underneath still names the function called first
    ok, msg = pcall(function()
      local _ = F.conv1d(ltc.ones(1, 2, 5), ltc.ones(3, 2, 2), ltc.ones(4))
    end)
    assert.truthy(msg:find("error_position_spec%.lua:%d+: conv1d: conv2d: bias"), msg)
    ok, msg = pcall(function() local _ = ltc.nn.Conv1d(2, 3, 2)(ltc.ones(1, 4, 5)) end)
    assert.truthy(msg:find("error_position_spec%.lua:%d+: conv1d: weight %[3, 2, 2%]"), msg)
  end)

  it("from F.layer_norm, F.embedding and F.conv_transpose2d names them and their sizes", function()
    local F = ltc.nn.functional
    local ok, msg = pcall(function() local _ = F.layer_norm(ltc.ones(2, 3), { 4 }) end)
    assert.is_false(ok)
    assert.truthy(msg:find("layer_norm: normalized_shape [4] must be the last dims of the input "
      .. "[2, 3]", 1, true), msg)
    ok, msg = pcall(function() local _ = F.embedding(ltc.tensor({ 1 }, "int64"), ltc.ones(2)) end)
    assert.truthy(msg:find("embedding: weight must be 2-d", 1, true), msg)
    ok, msg = pcall(function()
      local _ = F.conv_transpose2d(ltc.ones(1, 2, 5, 5), ltc.ones(3, 2, 2, 2))
    end)
    assert.truthy(msg:find("conv_transpose2d: weight [3, 2, 2, 2] does not fit input "
      .. "[1, 2, 5, 5]", 1, true), msg)
  end)
end)

describe("ltc.opencl.use", function()
  it("checks its options at the caller's line", function()
    local ok, ocl = pcall(require, "ltc.opencl")
    if not ok then return end -- the module was not built
    local okc, msg = pcall(function() ocl.use(5) end)
    assert.is_false(okc)
    assert.truthy(msg:find("error_position_spec%.lua:%d+: opencl.use: bad argument #1"), msg)
  end)
end)
