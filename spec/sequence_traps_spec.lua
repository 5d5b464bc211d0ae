-- What a PyTorch or Torch7 user types wrong first with the sequence APIs (issue 15's
-- new-user pass): PyTorch's positional constructor arguments of the recurrent modules, states
-- of the wrong shape or kind, batch_first one way and the data the other, attention masks of
-- the wrong shape or dtype, class targets of the wrong dtype, range or layout, checkpoints of
-- another shape, a scheduler stepped before its optimizer. Each is a Lua error naming the
-- module or op and the sizes (or, where PyTorch only warns, a warning), and the runtime stays
-- usable after it.
local ltc = require "ltc"
local nn, F = ltc.nn, ltc.nn.functional
local err = dofile("spec/support/err.lua")

describe("the recurrent modules' constructors", function()
  it("take PyTorch's positional arguments after hidden_size", function()
    -- torch: nn.LSTM(4, 8, 2) has 2 layers; nn.GRU(4, 8, 2, False, True, 0.5, True) no
    -- bias, batch_first, dropout 0.5, bidirectional: 8 weights (2 layers x 2 directions x ih, hh)
    -- (before: "LSTM: options must be a table, not number")
    local lstm = nn.LSTM(4, 8, 2)
    assert.are.equal(2, lstm.num_layers)
    assert.are.equal(8, #lstm:parameters()) -- weight_ih, weight_hh, bias_ih, bias_hh per layer
    local gru = nn.GRU(4, 8, 2, false, true, 0.5, true)
    assert.are.same({ 2, false, true, 0.5, true }, { gru.num_layers, gru.bias, gru.batch_first,
      gru.dropout, gru.bidirectional })
    assert.are.equal(8, #gru:parameters())
    -- torch: nn.RNN(4, 8, 3, 'relu'): nonlinearity is RNN's second
    local rnn = nn.RNN(4, 8, 3, "relu")
    assert.are.same({ 3, "relu" }, { rnn.num_layers, rnn.nonlinearity })
    -- with a trailing options table
    local l2 = nn.LSTM(4, 8, 2, { batch_first = true })
    assert.are.same({ 2, true }, { l2.num_layers, l2.batch_first })
    assert.are.same({ 3, 5, 8 }, l2(ltc.zeros(3, 5, 4)):size())
    -- the cells: nn.GRUCell(4, 8, False) has no bias; nn.RNNCell(4, 8, True, 'relu')
    assert.are.equal(2, #nn.GRUCell(4, 8, false):parameters())
    assert.are.equal("relu", nn.RNNCell(4, 8, true, "relu").nonlinearity)
  end)

  it("warn, as PyTorch, that dropout does nothing with one layer", function()
    -- torch: nn.LSTM(4, 8, 1, dropout=0.5) warns "dropout option adds dropout after all but
    -- last recurrent layer, so non-zero dropout expects num_layers greater than 1"
    local warned, prev = {}, nn._warn
    nn._warn = function(msg) warned[#warned + 1] = msg end
    local ok, e = pcall(function()
      nn.LSTM(4, 8, 1, true, false, 0.5)
      nn.GRU(4, 8, { num_layers = 2, dropout = 0.5 })
      nn.RNN(4, 8, { dropout = 0 })
    end)
    nn._warn = prev
    assert(ok, e)
    assert.are.equal(1, #warned)
    assert.matches("^LSTM: dropout=0.5 with num_layers=1 does nothing", warned[1])
  end)

  it("name a positional argument of the wrong kind, too many, or one given twice", function()
    assert.matches("LSTM: num_layers must be a number, got string", err(function() nn.LSTM(4, 8, "2") end))
    -- (PyTorch's 6th, proj_size, came after the others)
    assert.matches("LSTM: takes at most 6 positional arguments after hidden_size %(num_layers, bias, "
      .. "batch_first, dropout, bidirectional, proj_size%), got 7", err(function() nn.LSTM(4, 8, 2, true, false, 0, false, 5, 1) end))
    assert.matches("GRU: takes at most 5 positional arguments after hidden_size %(num_layers, bias, "
      .. "batch_first, dropout, bidirectional%), got 6", err(function() nn.GRU(4, 8, 2, true, false, 0, false, 5) end))
    assert.matches("LSTM: got multiple values for 'num_layers' %(positional and in the options table%)",
      err(function() nn.LSTM(4, 8, 2, { num_layers = 3 }) end))
    assert.matches("GRUCell: bias must be a boolean, got number", err(function() nn.GRUCell(4, 8, 3) end))
    assert.matches("GRU: unknown option 'layers'", err(function() nn.GRU(4, 8, { layers = 2 }) end))
  end)
end)

describe("the other modules' constructors", function()
  it("take PyTorch's positional arguments too (they raised 'options must be a table')", function()
    -- torch 1.13: MultiheadAttention(8, 2, 0.1, False): dropout 0.1, no in_proj_bias;
    -- TransformerEncoderLayer(8, 2, 16, 0.2, 'gelu', 1e-6, True, True): linear1 8 -> 16,
    -- norm_first; Embedding(10, 3, 0): padding_idx 0 (1 in ltc, 1-based);
    -- Conv1d(1, 16, 3, 2, 1) and ConvTranspose2d(1, 16, 3, 2, 1, 1) on [1, 1, 4, 4]: [1, 16, 8, 8]
    local mha = nn.MultiheadAttention(8, 2, 0.1, false)
    assert.are.same({ 0.1, true }, { mha.dropout, mha.in_proj_bias == nil })
    local enc = nn.TransformerEncoderLayer(8, 2, 16, 0.2, "gelu", 1e-6, true, true)
    assert.are.same({ 16, true }, { enc.linear1.out_features, enc.norm_first })
    assert.are.same({ 2, 5, 8 }, enc(ltc.randn(2, 5, 8)):size()) -- batch_first
    assert.are.equal(1, nn.Embedding(10, 3, 1).padding_idx)
    local c1 = nn.Conv1d(1, 16, 3, 2, 1)
    assert.are.same({ 2, 1 }, { c1.stride, c1.padding })
    assert.are.same({ 1, 16, 8, 8 }, nn.ConvTranspose2d(1, 16, 3, 2, 1, 1)(ltc.ones(1, 1, 4, 4)):size())
    local bn = nn.BatchNorm1d(8, 1e-3, 0.2)
    assert.are.same({ 1e-3, 0.2 }, { bn.eps, bn.momentum })
    assert.are.equal(1e-6, nn.LayerNorm(8, 1e-6).eps)
    assert.are.equal(1e-3, nn.GroupNorm(2, 8, 1e-3).eps)
    -- a trailing options table still works alone and after positional ones
    assert.is_true(nn.MultiheadAttention(8, 2, { batch_first = true }).batch_first)
    assert.is_true(nn.MultiheadAttention(8, 2, 0.0, true, { batch_first = true }).batch_first)
    assert.matches("Embedding: takes at most 1 positional argument after embedding_dim %(padding_idx%), got 2",
      err(function() nn.Embedding(8, 3, 1, 2) end))
    assert.matches("BatchNorm2d: affine must be a boolean, got string",
      err(function() nn.BatchNorm2d(8, 1e-3, 0.2, "yes") end))
    assert.matches("Conv1d: unknown option 'foo'", err(function() nn.Conv1d(1, 2, 3, { foo = 1 }) end))
  end)

  it("of the losses with a class weight take it first, as PyTorch's nn.CrossEntropyLoss(w)", function()
    -- torch: CrossEntropyLoss(w)(x, y) = 1.3481909; with ignore_index=2 (3 here) 0.9749569
    local w = ltc.tensor({ 1., 2, 0.5 })
    local x, y = ltc.tensor({ { 0.2, -1.0, 0.5 }, { 1.5, 0.3, -0.2 } }), ltc.tensor({ 1, 3 }, "int64")
    assert.is_true(math.abs(nn.CrossEntropyLoss(w)(x, y):item() - 1.3481909) < 1e-6)
    assert.is_true(math.abs(nn.CrossEntropyLoss(w, { ignore_index = 3 })(x, y):item() - 0.9749569) < 1e-6)
    assert.is_true(math.abs(nn.NLLLoss(w)(x:log_softmax(2), y):item() - 1.3481909) < 1e-6)
    -- the functionals too: torch F.cross_entropy(x, y, w) (weight is its third positional)
    assert.is_true(math.abs(F.cross_entropy(x, y, w):item() - 1.3481909) < 1e-6)
    assert.is_true(math.abs(F.cross_entropy(x, y, w, { ignore_index = 3 }):item() - 0.9749569) < 1e-6)
    assert.is_true(math.abs(F.cross_entropy(x, y, nil, { ignore_index = 3 }):item() - 0.9749569) < 1e-6)
    assert.is_true(math.abs(F.nll_loss(x:log_softmax(2), y, w):item() - 1.3481909) < 1e-6)
    -- torch: F.binary_cross_entropy(x.sigmoid(), x.sigmoid().round(), tensor([1., 2, 3])) = 0.9585722
    assert.is_true(math.abs(F.binary_cross_entropy(x:sigmoid(), x:sigmoid():round(), ltc.tensor({ 1., 2, 3 })):item()
      - 0.9585722) < 1e-6)
    assert.matches("cross_entropy: after the weight comes an options table, not number",
      err(function() return F.cross_entropy(x, y, w, 3) end))
    assert.matches("CrossEntropyLoss: got multiple values for 'weight'",
      err(function() nn.CrossEntropyLoss(w, { weight = w }) end))
    assert.matches("CrossEntropyLoss: takes one options table %(PyTorch's keyword arguments%), got 2 arguments",
      err(function() nn.CrossEntropyLoss({ label_smoothing = 0.1 }, 3) end))
  end)
end)

describe("the optimizers' constructors", function()
  it("take PyTorch's positional arguments after params, with or without an options table", function()
    -- torch: SGD([p], 0.1, 0.9) with p = [1, 2] and grad [1, 1] twice: buf 1 then 1.9,
    -- p = [0.9, 1.9] then [0.71, 1.71] (before: "SGD: bad argument #2 (a table of options
    -- expected, got number)")
    local p = ltc.tensor({ 1, 2 }, "float64"):requires_grad_()
    local opt = ltc.optim.SGD({ p }, 0.1, 0.9)
    for _ = 1, 2 do p.grad = ltc.ones(2, "float64"); opt:step() end
    local v = p:totable()
    assert.is_true(math.abs(v[1] - 0.71) < 1e-12 and math.abs(v[2] - 1.71) < 1e-12)
    -- Adam(params, lr, betas, eps, weight_decay, amsgrad), and a trailing options table
    local d = ltc.optim.Adam({ p }, 0.01, { 0.8, 0.9 }, 1e-6, 0.1, true).defaults
    assert.are.same({ 0.01, { 0.8, 0.9 }, 1e-6, 0.1, true }, { d.lr, d.betas, d.eps, d.weight_decay, d.amsgrad })
    d = ltc.optim.SGD({ p }, 0.1, { momentum = 0.8, nesterov = true }).defaults
    assert.are.same({ 0.1, 0.8, true }, { d.lr, d.momentum, d.nesterov })
    d = ltc.optim.RMSprop({ p }, 0.05, 0.9).defaults
    assert.are.same({ 0.05, 0.9 }, { d.lr, d.alpha })
  end)

  it("name a value given twice, too many positional arguments and a bad lr", function()
    local p = ltc.zeros(2):requires_grad_()
    assert.matches("SGD: got multiple values for 'lr' %(positional and in the options table%)",
      err(function() ltc.optim.SGD({ p }, 0.1, { lr = 0.2 }) end))
    assert.matches("Adam: takes at most 5 positional arguments after params %(lr, betas, eps, "
      .. "weight_decay, amsgrad%), got 6", err(function() ltc.optim.Adam({ p }, 0.1, { 0.9, 0.9 }, 1e-8, 0, false, 7) end))
    assert.matches('Adam: lr must be a number >= 0 %(got the string "x"%)',
      err(function() ltc.optim.Adam({ p }, "x") end))
  end)
end)

describe("recurrent states of the wrong shape or kind", function()
  local lstm = nn.LSTM(4, 8, 2)
  local gru = nn.GRU(4, 8, 2, { batch_first = true })
  local x = ltc.randn(5, 3, 4) -- [T, N, C]: seq-first

  it("say how the expected size follows from the module and the input (batch_first)", function()
    assert.are.equal("LSTM: h0 has size [2, 5, 8], expected [2, 3, 8] ([num_layers, batch, hidden_size]: "
      .. "num_layers 2, batch 3 (dim 2 of the input [seq, batch, input_size], batch_first = false), hidden_size 8)",
      err(function() lstm(x, { ltc.zeros(2, 5, 8), ltc.zeros(2, 5, 8) }) end):gsub("^[^:]*:%d+: ", ""))
    -- the same data to a batch_first GRU: batch is dim 1 (5)
    assert.matches("GRU: h0 has size %[2, 3, 8%], expected %[2, 5, 8%] %(.*batch 5 %(dim 1 of the input "
      .. "%[batch, seq, input_size%], batch_first = true%)", err(function() gru(x, ltc.zeros(2, 3, 8)) end))
    assert.matches("num_layers %* 2 %(bidirectional%)",
      err(function() nn.GRU(4, 8, 1, true, false, 0, true)(x, ltc.zeros(1, 3, 8)) end))
  end)

  it("name an LSTM state without c0, a tensor for an LSTM and a table for a GRU", function()
    -- torch: lstm(x, (h0,)) raises (hx must be a tuple of two)
    assert.matches("LSTM: the state must be a table {h0, c0} of both tensors %(or nil for zeros%), got no c0",
      err(function() lstm(x, { ltc.zeros(2, 3, 8) }) end))
    assert.matches("LSTM: the state must be a table {h0, c0}, got a tensor of size %[2, 3, 8%]",
      err(function() lstm(x, ltc.zeros(2, 3, 8)) end))
    assert.matches("GRU: h0 must be a tensor, got table %(the state of a GRU or RNN is one tensor h0",
      err(function() gru(x, { ltc.zeros(2, 5, 8), ltc.zeros(2, 5, 8) }) end))
  end)
end)

describe("attention masks of the wrong shape or dtype", function()
  local q = ltc.randn(2, 5, 8)
  it("name the module or op, the mask's size and the expected one", function()
    local mha = nn.MultiheadAttention(8, 2, { batch_first = true })
    assert.matches("MultiheadAttention: the 2%-d attn_mask is %[4, 5%], but should be %[5, 5%]",
      err(function() mha(q, q, q, { attn_mask = ltc.zeros(4, 5, "bool") }) end))
    assert.matches("MultiheadAttention: only bool and floating attn_mask are supported, got int64",
      err(function() mha(q, q, q, { attn_mask = ltc.zeros(5, 5, "int64") }) end))
    assert.matches("key_padding_mask must be %[N, S%] = %[2, 5%], got %[5, 2%]",
      err(function() mha(q, q, q, { key_padding_mask = ltc.zeros(5, 2, "bool") }) end))
    assert.matches("scaled_dot_product_attention: attn_mask %[4,4%] does not broadcast to the scores %[2,5,5%]",
      err(function() F.scaled_dot_product_attention(q, q, q, ltc.zeros(4, 4, "bool")) end))
    assert.matches("attn_mask must be bool or query's dtype float32, got int32",
      err(function() F.scaled_dot_product_attention(q, q, q, ltc.zeros(5, 5, "int32")) end))
  end)
end)

describe("class targets", function()
  local logits = ltc.randn(4, 3)
  it("of a float dtype, out of range, 0-based or of another layout name the op and values", function()
    assert.matches("cross_entropy: target must be int64 or int32 class indices, got float32",
      err(function() F.cross_entropy(logits, ltc.tensor({ 1., 2, 3, 1 })) end))
    assert.matches("cross_entropy: target 4 out of range for 3 classes %(labels are 1%-based%)",
      err(function() return F.cross_entropy(logits, ltc.tensor({ 1, 2, 3, 4 }, "int64")):item() end))
    assert.matches("cross_entropy: target 0 out of range for 3 classes %(labels are 1%-based%)",
      err(function() return nn.CrossEntropyLoss()(logits, ltc.tensor({ 0, 1, 2, 1 }, "int64")):item() end))
    -- -100, PyTorch's default ignore_index, is ignored by the fused op too (no options), on
    -- each backend, forward and backward: torch gives F.cross_entropy(zeros(4, 3), tensor([0,
    -- -100, 2, -100])) = log(3) (the mean over the two other rows) and a zero gradient row
    -- where the label is -100; labels 4 and 0 still raise
    local pad = ltc.tensor({ 1, -100, 3, -100 }, "int64")
    for _, dev in ipairs { "cpu", "ref" } do
      local x = ltc.zeros(4, 3):to(dev):requires_grad_()
      local l = F.cross_entropy(x, pad:to(dev))
      l:backward()
      assert.is_true(math.abs(l:item() - math.log(3)) < 1e-6, tostring(l:item()))
      local g = x.grad:totable()
      assert.are.same({ 0, 0, 0 }, g[2])
      assert.are.same({ 0, 0, 0 }, g[4])
      assert.is_true(math.abs(g[1][1] - (1 / 3 - 1) / 2) < 1e-6, tostring(g[1][1]))
      assert.are.equal(0, F.nll_loss(ltc.zeros(4, 3):to(dev), pad:to(dev)):item())
      for _, bad in ipairs { 4, 0 } do
        local t = ltc.tensor({ 1, -100, bad, -100 }, "int64"):to(dev)
        local msg = "target " .. bad .. " out of range for 3 classes %(labels are 1%-based%)"
        assert.matches("cross_entropy: " .. msg, err(function() return F.cross_entropy(x, t):item() end))
        assert.matches("nll_loss: " .. msg, err(function() return F.nll_loss(x, t):item() end))
        assert.matches("cross_entropy_backward: " .. msg, err(function()
          ltc.cross_entropy_backward(ltc.tensor(1):to(dev), x:detach(), t):totable() end))
      end
    end
    -- torch: F.cross_entropy(randn(2, 5, 3), ones(2, 5)) raises "Expected target size [2, 3],
    -- got [2, 5]" (before: "target has 10 labels for 6 rows of input")
    assert.matches("cross_entropy: input %[2, 5, 3%] is %[N, C, d1, ...%] with C = 5 classes in dim 2, so "
      .. "the target should be %[2, 3%], got %[2, 5%] %(logits %[N, T, C%] of a sequence: input:transpose%(2, 3%)",
      err(function() F.cross_entropy(ltc.randn(2, 5, 3), ltc.ones(2, 5, "int64")) end))
    assert.matches("nll_loss: input %[2, 5, 3%] is %[N, C, d1, ...%]",
      err(function() F.nll_loss(ltc.randn(2, 5, 3), ltc.ones(2, 5, "int64")) end))
    -- the right layout computes: [N, T, C] logits transposed
    local y = ltc.ones(2, 5, "int64")
    local l = F.cross_entropy(ltc.zeros(2, 5, 3):transpose(2, 3), y):item()
    assert.is_true(math.abs(l - math.log(3)) < 1e-6)
  end)
end)

describe("checkpoints of another shape", function()
  it("name the parameter and both sizes", function()
    local path = os.tmpname() .. ".npz"
    ltc.save(path, nn.LSTM(4, 8, 2):state_dict())
    assert.matches("load_state_dict: 'weight_ih_l0' has size 32x4, the module's 64x4",
      err(function() nn.LSTM(4, 16, 2):load_state_dict(ltc.load(path)) end))
    assert.matches("load_state_dict: unexpected parameters 'bias_hh_l1', 'bias_ih_l1', 'weight_hh_l1', "
      .. "'weight_ih_l1'$",
      err(function() nn.LSTM(4, 8, 1):load_state_dict(ltc.load(path)) end))
    -- a whole checkpoint tree passed for the state dict it holds
    ltc.save(path, { model = nn.LSTM(4, 8, 2):state_dict(), step = 3 })
    assert.matches("load_state_dict: missing parameters 'weight_ih_l0', .* %(the table holds it under 'model': "
      .. "a checkpoint%? pass its state dict, such as ltc.load%(path%).model%)",
      err(function() nn.LSTM(4, 8, 2):load_state_dict(ltc.load(path)) end))
    -- strict = false returns what did not match, as PyTorch's missing_keys, unexpected_keys
    local lstm1 = nn.LSTM(4, 8, 1)
    ltc.save(path, nn.LSTM(4, 8, 2):state_dict())
    local same, missing, unexpected = lstm1:load_state_dict(ltc.load(path), false)
    assert.are.equal(lstm1, same)
    assert.are.same({}, missing)
    assert.are.same({ "bias_hh_l1", "bias_ih_l1", "weight_hh_l1", "weight_ih_l1" }, unexpected)
    local _, missing2 = nn.LSTM(4, 8, 2):load_state_dict({ weight_ih_l0 = ltc.zeros(32, 4) }, false)
    assert.are.same({ "bias_hh_l0", "bias_hh_l1", "bias_ih_l0", "bias_ih_l1", "weight_hh_l0",
      "weight_hh_l1", "weight_ih_l1" }, missing2)
    local m = nn.Linear(4, 3)
    local opt = ltc.optim.Adam(m:parameters())
    m(ltc.randn(2, 4)):sum():backward()
    opt:step()
    ltc.save(path, { opt = opt:state_dict() })
    local opt2 = ltc.optim.Adam(nn.Linear(4, 6):parameters())
    assert.matches("Adam.load_state_dict: state 'exp_avg[%w_]*' of parameter 1 has 12 elements, the parameter 24",
      err(function() opt2:load_state_dict(ltc.load(path).opt) end))
    os.remove(path)
  end)
end)

describe("an elementwise loss whose target broadcasts against the input", function()
  it("warns once per calling line, as PyTorch, and computes PyTorch's broadcast value", function()
    -- torch: F.mse_loss(ones(4, 1), zeros(4)) warns "Using a target size (torch.Size([4])) that
    -- is different to the input size (torch.Size([4, 1]))" and gives 1.0 over a [4, 4] loss;
    -- smooth_l1_loss([[0.5], [2]], [0, 1]) = 0.5625, huber_loss(..., delta=0.7) = 0.465
    local warned, prev = {}, nn._warn
    nn._warn = function(msg) warned[#warned + 1] = msg end
    local ok, e = pcall(function()
      for _ = 1, 3 do assert.are.equal(1, F.mse_loss(ltc.ones(4, 1), ltc.zeros(4)):item()) end
      assert.are.equal(1, #warned)
      assert.matches("^spec/sequence_traps_spec%.lua:%d+: mse_loss: using a target size %(%[4%]%) that "
        .. "is different to the input size %(%[4, 1%]%)", warned[1])
      local x, t = ltc.tensor({ { 0.5 }, { 2 } }), ltc.tensor({ 0, 1 })
      assert.is_true(math.abs(F.smooth_l1_loss(x, t):item() - 0.5625) < 1e-6)
      assert.is_true(math.abs(nn.HuberLoss({ delta = 0.7 })(x, t):item() - 0.465) < 1e-6)
      assert.are.equal(3, #warned)
      F.l1_loss(ltc.ones(2), ltc.zeros(2)) -- the same size: no warning
      assert.are.equal(3, #warned)
    end)
    nn._warn = prev
    assert(ok, e)
  end)
end)

describe("after all of these", function()
  it("the runtime computes on", function()
    local lstm = nn.LSTM(4, 8, 2)
    local out, st = lstm(ltc.randn(5, 3, 4))
    assert.are.same({ 5, 3, 8 }, out:size())
    assert.are.same({ 2, 3, 8 }, st[2]:size())
    assert.are.equal(6, (ltc.ones(2) * 3):sum():item())
  end)
end)
