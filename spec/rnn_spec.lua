-- ltc.nn recurrent modules against PyTorch (spec/fixtures/nn_rnn.lua, from
-- tools/gen_nn_fixtures.py): the same weights give the same outputs, final states and
-- gradients, in float64.
local ltc = require "ltc"
local nn = ltc.nn
local close = dofile("spec/support/close.lua")
local fx = dofile("spec/fixtures/nn_rnn.lua")

local function T(v) return ltc.tensor(v, "float64") end

local function load(m, params)
  local sd = {}
  for k, v in pairs(params) do sd[k] = T(v) end
  m:double():load_state_dict(sd)
  return m
end

describe("RNN, LSTM and GRU", function()
  for _, case in ipairs { { "rnn_tanh", nn.RNN }, { "rnn_relu_bidir", nn.RNN }, { "lstm", nn.LSTM },
    { "lstm_bidir_bf", nn.LSTM }, { "gru", nn.GRU }, { "gru_bidir_nobias", nn.GRU } } do
    local name, cls = case[1], case[2]
    it("match PyTorch for the same weights: " .. name, function()
      local c = fx[name]
      local m = load(cls(3, 4, c.opts), c.params)
      local x = T(c.x):requires_grad_()
      local out, hn
      if cls == nn.LSTM then
        local st
        out, st = m(x, { T(c.h0), T(c.c0) })
        hn = st[1]
        close(c.cn, st[2]:totable(), 1e-9)
      else
        out, hn = m(x, T(c.h0))
      end
      close(c.out, out:totable(), 1e-9)
      close(c.hn, hn:totable(), 1e-9)
      ;(out * T(c.gw)):sum():backward()
      close(c.grad_x, x.grad:totable(), 1e-9)
      close(c.grad_whh, m.weight_hh_l0.grad:totable(), 1e-9)
    end)
  end

  it("start from zero states when none is given, and take unbatched input", function()
    local c = fx.gru
    local m = load(nn.GRU(3, 4, c.opts), c.params)
    local x = T(c.x)
    local full, hfull = m(x, ltc.zeros({ 2, 2, 4 }, "float64"))
    local out, h = m(x)
    close(full:totable(), out:totable(), 1e-12)
    close(hfull:totable(), h:totable(), 1e-12)
    local o1, h1 = m(x:select(2, 2))
    close(full:select(2, 2):totable(), o1:totable(), 1e-12)
    assert.are.same({ 2, 4 }, h1:size())
  end)

  it("name their parameters as PyTorch and print their options", function()
    local m = nn.LSTM(3, 4, { num_layers = 2, bidirectional = true })
    assert.are.equal(16, #m:parameters())
    assert.are.equal("weight_ih_l1_reverse", m:named_parameters()[13][1])
    assert.are.same({ 16, 8 }, m.weight_ih_l1:size())
    assert.are.equal("LSTM(3, 4, num_layers=2, bidirectional=true)", tostring(m))
  end)

  it("apply dropout between layers only while training", function()
    ltc.manual_seed(0)
    local m = nn.GRU(3, 4, { num_layers = 2, dropout = 0.5 })
    local x = ltc.randn(6, 2, 3)
    m:eval()
    local a = m(x):totable()
    close(a, m(x):totable(), 0)
    m:train()
    local ok = pcall(close, a, m(x):totable(), 1e-6)
    assert.is_false(ok)
  end)

  it("raise clear errors for bad sizes and options", function()
    local m = nn.LSTM(3, 4)
    assert.has_error(function() m(ltc.zeros(5, 2, 2)) end,
      "LSTM: input of size [5, 2, 2] must be 2-d or 3-d with a last dim of input_size 3")
    assert.has_error(function() m(ltc.zeros(5, 2, 3), { ltc.zeros(1, 3, 4), ltc.zeros(1, 2, 4) }) end,
      "LSTM: h0 has size [1, 3, 4], expected [1, 2, 4] ([num_layers, batch, hidden_size]: num_layers 1, "
        .. "batch 2 (dim 2 of the input [seq, batch, input_size], batch_first = false), hidden_size 4)")
    assert.has_error(function() nn.GRU(3, 4, { layers = 2 }) end,
      "GRU: unknown option 'layers' (known: batch_first, bias, bidirectional, dropout, num_layers)")
    assert.has_error(function() nn.RNN(3, 4, { nonlinearity = "sigmoid" }) end,
      "RNN: nonlinearity must be 'tanh' or 'relu', not 'sigmoid'")
    assert.has_error(function() nn.LSTM(3, 4, { dropout = 2 }) end,
      "LSTM: dropout must be between 0 and 1, got 2")
  end)

  it("name the module and both dtypes when the input or a state is not of the weights' dtype", function()
    -- PyTorch raises too ("mat1 and mat2 must have the same dtype"); the error named linear
    for _, name in ipairs { "RNN", "LSTM", "GRU" } do
      local m = nn[name](3, 4)
      assert.has_error(function() m(ltc.zeros(5, 2, 3, "float64")) end, name
        .. ": input dtype float64 does not match the weights' dtype float32 (convert the input "
        .. 'with :to("float32") or the module with :to("float64"))')
      m:double()
      assert.has_error(function() m(ltc.zeros(5, 3)) end, name
        .. ": input dtype float32 does not match the weights' dtype float64 (convert the input "
        .. 'with :to("float64") or the module with :to("float32"))')
    end
    assert.has_error(function() nn.GRU(3, 4)(ltc.zeros(5, 2, 3), ltc.zeros({ 1, 2, 4 }, "float64")) end,
      "GRU: h0 dtype float64 does not match the weights' dtype float32 (convert the h0 with "
      .. ':to("float32") or the module with :to("float64"))')
    assert.has_error(function()
      nn.LSTM(3, 4)(ltc.zeros(5, 3), { ltc.zeros(1, 4), ltc.zeros({ 1, 4 }, "float64") })
    end, "LSTM: c0 dtype float64 does not match the weights' dtype float32 (convert the c0 with "
      .. ':to("float32") or the module with :to("float64"))')
    assert.has_error(function() nn.GRUCell(3, 4)(ltc.zeros(2, 3, "float64")) end,
      "GRUCell: input dtype float64 does not match the weights' dtype float32 (convert the input "
      .. 'with :to("float32") or the module with :to("float64"))')
    -- a matching pair still runs
    assert.are.same({ 5, 2, 4 }, nn.GRU(3, 4):double()(ltc.zeros(5, 2, 3, "float64")):size())
  end)
end)

describe("RNNCell, LSTMCell and GRUCell", function()
  for _, case in ipairs { { "rnncell", nn.RNNCell }, { "lstmcell", nn.LSTMCell }, { "grucell", nn.GRUCell } } do
    local name, cls = case[1], case[2]
    it("match PyTorch for the same weights: " .. name, function()
      local c = fx[name]
      local m = load(cls(3, 4), c.params)
      local x = T(c.x):requires_grad_()
      if cls == nn.LSTMCell then
        local h, cc = m(x, { T(c.h0), T(c.c0) })
        close(c.hn, h:totable(), 1e-9)
        close(c.cn, cc:totable(), 1e-9)
        ;(h:sum() + (cc * 2):sum()):backward()
      else
        local h = m(x, T(c.h0))
        close(c.hn, h:totable(), 1e-9)
        h:sum():backward()
      end
      close(c.grad_x, x.grad:totable(), 1e-9)
    end)
  end

  it("fuse the gate math of a step into one elementwise loop", function()
    ltc.manual_seed(0)
    local cell = nn.LSTMCell(8, 16)
    local x, h, c = ltc.randn(4, 8), ltc.randn(4, 16), ltc.randn(4, 16)
    ltc.sync()
    local h2, c2 = ltc.no_grad(function() return cell(x, { h, c }) end)
    local text = ltc.debug.backend_text(h2, c2)
    -- every sigmoid, tanh and the state update sit in one fused step of the plan
    local gate_steps = 0
    for line in text:gmatch("[^\n]+") do
      if line:find("sigmoid", 1, true) or line:find("tanh", 1, true) then
        gate_steps = gate_steps + 1
        assert.is_truthy(line:find("fused(sigmoid, sigmoid, mul, sigmoid, tanh, mul, add, tanh, mul", 1, true), line)
      end
    end
    assert.are.equal(1, gate_steps)
  end)
end)

-- the fixtures are large Lua tables: free them after this file, so later specs that
-- collect garbage often do not walk them on every collection
teardown(function() fx = nil end)
