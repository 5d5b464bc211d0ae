-- nn.TransformerDecoderLayer, nn.TransformerDecoder and nn.Transformer against PyTorch 1.13
-- (spec/fixtures/transformer_decoder.lua from tools/gen_transformer_fixtures.py): outputs and
-- the gradients of sum(out * gw) in float64 for the same weights, loaded by PyTorch's state
-- dict names; masks, options and errors.
local ltc = require "ltc"
local nn = ltc.nn
local close = dofile("spec/support/close.lua")
local fx = dofile("spec/fixtures/transformer_decoder.lua")

local function T(v, dtype) return ltc.tensor(v, dtype or "float64") end

-- m in float64 with the fixture's parameters; PyTorch numbers ModuleList children from 0,
-- ltc from 1
local function load(m, c)
  m:double()
  local sd = {}
  for k, v in pairs(c.params) do
    sd[k:gsub("layers%.(%d+)%.", function(d) return "layers." .. (tonumber(d) + 1) .. "." end)] = T(v)
  end
  m:load_state_dict(sd)
  return m
end

local function mask(v, dtype)
  if type(v[1][1]) == "boolean" then return ltc.tensor(v, "bool") end
  return T(v, dtype)
end

-- the fixture's masks as an options table (float masks in dtype, default float64)
local function masks(c, dtype)
  local o = {}
  for k, v in pairs(c.masks or {}) do o[k] = mask(v, dtype) end
  return o
end

-- out = fn(x1, x2) against the fixture, and the gradients of sum(out * gw)
local function check(c, fn, tol)
  local x1, x2 = T(c.x1):requires_grad_(), T(c.x2):requires_grad_()
  local y = fn(x1, x2)
  close(c.out, y:totable(), tol or 1e-9, "out")
  ;(y * T(c.gw)):sum():backward()
  close(c.grad1, x1.grad:totable(), tol or 1e-9, "grad1")
  close(c.grad2, x2.grad:totable(), tol or 1e-9, "grad2")
end

local function layer(c)
  local o = { dim_feedforward = 8, dropout = 0 }
  for k, v in pairs(c.opts) do o[k] = v end
  return load(nn.TransformerDecoderLayer(4, 2, o), c)
end

local function raises(f, want)
  local ok, msg = pcall(f)
  assert.is_false(ok)
  assert(tostring(msg):find(want, 1, true), msg)
  assert(tostring(msg):find("transformer_decoder_spec%.lua:%d+:"), msg)
end

describe("nn.TransformerDecoderLayer", function()
  it("matches PyTorch post-norm with a causal tgt_mask and a bool memory_mask", function()
    local c = fx.post_relu
    local m, o = layer(c), masks(c)
    check(c, function(t, mem) return m(t, mem, o) end)
    check(c, function(t, mem) return m(t, mem, o.tgt_mask, o.memory_mask) end) -- positional
  end)

  it("matches PyTorch pre-norm with GELU, batch_first and key padding masks", function()
    local c = fx.pre_gelu_bf
    local m, o = layer(c), masks(c)
    check(c, function(t, mem) return m(t, mem, o) end)
    check(c, function(t, mem)
      return m(t, mem, o.tgt_mask, nil, o.tgt_key_padding_mask, o.memory_key_padding_mask)
    end)
  end)

  it("matches PyTorch in float32 too", function()
    local c = fx.pre_gelu_bf
    local m, o = layer(c):float(), masks(c, "float32")
    local y = m(T(c.x1, "float32"), T(c.x2, "float32"), o)
    assert.are.equal("float32", y:dtype())
    close(c.out, y:totable(), 1e-5)
  end)

  it("matches PyTorch with layer_norm_eps and every memory mask", function()
    local c = fx.post_padding
    local m = layer(c)
    check(c, function(t, mem) return m(t, mem, masks(c)) end)
  end)

  it("masks the future with tgt_is_causal as with the causal tgt_mask", function()
    local c = fx.post_relu
    local m = layer(c)
    local t, mem = T(c.x1), T(c.x2)
    local want = m(t, mem, { tgt_mask = ltc.ones(3, 3, "bool"):triu(1) })
    close(want:totable(), m(t, mem, { tgt_is_causal = true }):totable(), 1e-12)
    close(want:totable(), m(t, mem, nil, nil, nil, nil, true):totable(), 1e-12)
    close(c.out, m(t, mem, { tgt_is_causal = true, memory_mask = mask(c.masks.memory_mask) }):totable(), 1e-9)
    -- memory_is_causal: query i sees memory positions <= i (the top-left causal [T, S] mask)
    want = m(t, mem, { memory_mask = ltc.ones(3, 5, "bool"):triu(1) })
    close(want:totable(), m(t, mem, { memory_is_causal = true }):totable(), 1e-12)
    local pad = ltc.tensor({ { false, false, true }, { false, false, false } })
    want = m(t, mem, { tgt_mask = ltc.ones(3, 3, "bool"):triu(1), tgt_key_padding_mask = pad })
    close(want:totable(), m(t, mem, { tgt_is_causal = true, tgt_key_padding_mask = pad }):totable(), 1e-12)
  end)

  it("has PyTorch's parameter names and runs unbatched", function()
    local m = nn.TransformerDecoderLayer(4, 2, 8, 0)
    local want = {}
    for k in pairs(fx.post_relu.params) do want[#want + 1] = k end
    local got = {}
    for k in pairs(m:state_dict()) do got[#got + 1] = k end
    table.sort(want); table.sort(got)
    assert.are.same(want, got)
    local t, mem = ltc.randn(3, 4), ltc.randn(5, 4)
    local y = m(t, mem)
    assert.are.same({ 3, 4 }, y:size())
    local yb = m(t:unsqueeze(2), mem:unsqueeze(2)):squeeze(2)
    close(yb:totable(), y:totable(), 1e-5)
  end)

  it("uses dropout while training only", function()
    ltc.manual_seed(1)
    local m = nn.TransformerDecoderLayer(4, 2, 8, 0.5)
    local t, mem = ltc.randn(3, 2, 4), ltc.randn(5, 2, 4)
    assert.is_true((m(t, mem) - m(t, mem)):abs():max():item() > 0)
    m:eval()
    assert.are.equal(0, (m(t, mem) - m(t, mem)):abs():max():item())
  end)

  it("checks its options and inputs", function()
    raises(function() nn.TransformerDecoderLayer(4, 2, { activation = "tanh" }) end,
      "TransformerDecoderLayer: activation must be 'relu' or 'gelu', not 'tanh'")
    raises(function() nn.TransformerDecoderLayer(4, 2, { depth = 1 }) end, "unknown option 'depth'")
    local m = nn.TransformerDecoderLayer(4, 2, 8)
    raises(function() m(ltc.randn(3, 1, 4), nil) end, "TransformerDecoderLayer: memory must be a tensor, got nil")
    raises(function() m(ltc.randn(3, 1, 4), ltc.randn(5, 1, 4), { src_mask = 1 }) end,
      "unknown option 'src_mask'")
  end)
end)

describe("nn.TransformerDecoder", function()
  it("matches PyTorch: two copies of the layer and a final norm, with masks", function()
    local c = fx.decoder
    local m = load(nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2, 8, 0), 2, nn.LayerNorm(4)), c)
    local o = masks(c)
    check(c, function(t, mem) return m(t, mem, o) end)
    check(c, function(t, mem) return m(t, mem, o.tgt_mask, nil, nil, o.memory_key_padding_mask) end)
  end)

  it("starts every layer as a copy of the given one, and takes norm by name", function()
    local l = nn.TransformerDecoderLayer(4, 2, 8, 0)
    local n = nn.LayerNorm(4)
    local d = nn.TransformerDecoder(l, 3, { norm = n })
    assert.are.equal(3, #d.layers)
    assert.is_true(rawequal(n, d.norm))
    assert.is_false(rawequal(l, d.layers[1]))
    assert.are.same(l.linear1.weight:totable(), d.layers[3].linear1.weight:totable())
    assert.is_nil(nn.TransformerDecoder(l, 1).norm)
    assert.is_not_nil(d:state_dict()["layers.3.multihead_attn.in_proj_weight"])
    raises(function() nn.TransformerDecoder(l, 0) end, "num_layers must be a positive integer (got 0)")
    raises(function() nn.TransformerDecoder("x", 2) end, "decoder_layer: an ltc.nn module expected, got string")
    raises(function() nn.TransformerDecoder(l, 2, 3) end, "norm must be an ltc.nn module or nil, got number")
  end)
end)

describe("nn.Transformer", function()
  it("matches PyTorch: pre-norm GELU, batch_first, 2 encoder and 1 decoder layers, masks", function()
    local c = fx.transformer
    local m = load(nn.Transformer { d_model = 4, nhead = 2, num_encoder_layers = 2,
      num_decoder_layers = 1, dim_feedforward = 8, dropout = 0, batch_first = true,
      norm_first = true, activation = "gelu" }, c)
    local o = masks(c)
    check(c, function(s, t) return m(s, t, o) end)
    check(c, function(s, t)
      return m(s, t, nil, o.tgt_mask, nil, o.src_key_padding_mask, nil, o.memory_key_padding_mask)
    end)
  end)

  it("generates PyTorch's square subsequent mask", function()
    close(fx.square_mask, nn.Transformer.generate_square_subsequent_mask(4):totable(), 0)
    local m = nn.Transformer(4, 2, 1, 1, 8)
    close(fx.square_mask, m:generate_square_subsequent_mask(4, "float64"):totable(), 0)
    assert.are.equal("float64", m:generate_square_subsequent_mask(4, "float64"):dtype())
  end)

  it("has PyTorch's structure, names and xavier-uniform weights", function()
    ltc.manual_seed(3)
    local m = nn.Transformer(8, 2, 2, 3, 16)
    assert.are.equal(2, #m.encoder.layers)
    assert.are.equal(3, #m.decoder.layers)
    assert.is_not_nil(m.encoder.norm)
    assert.is_not_nil(m.decoder.norm)
    local want = {}
    for k in pairs(fx.transformer.params) do
      want[k:gsub("layers%.(%d+)%.", function(d) return "layers." .. (tonumber(d) + 1) .. "." end)] = true
    end
    local sd = m:state_dict()
    for k in pairs(want) do assert.is_not_nil(sd[k], k) end
    -- xavier uniform: bound sqrt(6 / (fan_in + fan_out)); no two layers alike
    local w = m.decoder.layers[1].linear1.weight
    assert.is_true(w:abs():max():item() <= math.sqrt(6 / (8 + 16)))
    assert.is_true((m.encoder.layers[1].linear1.weight - m.encoder.layers[2].linear1.weight):abs():max():item() > 0)
    assert.are.same({ 3, 2, 8 }, m(ltc.randn(5, 2, 8), ltc.randn(3, 2, 8)):size())
  end)

  it("takes custom encoder and decoder modules", function()
    local enc = nn.Identity()
    local m = nn.Transformer { d_model = 4, nhead = 2, custom_encoder = enc, num_decoder_layers = 1,
      dim_feedforward = 8 }
    assert.is_true(rawequal(enc, m.encoder))
    local dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2, 8), 1)
    local m2 = nn.Transformer(4, 2, 1, 1, 8, 0.1, "relu", nil, dec) -- positionally, last
    assert.is_true(rawequal(dec, m2.decoder))
    m:eval()
    local s, t = ltc.randn(5, 2, 4), ltc.randn(3, 2, 4)
    close(m.decoder(t, s):totable(), m(s, t):totable(), 0)
  end)

  it("runs unbatched as a batch of one", function()
    local m = nn.Transformer(4, 2, 1, 2, 8, 0)
    local s, t = ltc.randn(5, 4), ltc.randn(3, 4)
    local mask = nn.Transformer.generate_square_subsequent_mask(3)
    local pad = ltc.tensor({ false, false, false, false, true })
    local y = m(s, t, { tgt_mask = mask, src_key_padding_mask = pad, memory_key_padding_mask = pad })
    local yb = m(s:unsqueeze(2), t:unsqueeze(2), { tgt_mask = mask, src_key_padding_mask =
      pad:unsqueeze(1), memory_key_padding_mask = pad:unsqueeze(1) })
    assert.are.same({ 3, 4 }, y:size())
    close(yb:squeeze(2):totable(), y:totable(), 1e-5)
  end)

  it("trains with no compile after the second step", function()
    local m = nn.Transformer(4, 2, 1, 1, 8, 0.1)
    local s, t = ltc.randn(5, 2, 4), ltc.randn(3, 2, 4)
    local mask = nn.Transformer.generate_square_subsequent_mask(3)
    local opt = ltc.optim.SGD(m:parameters(), 0.01)
    local before
    for i = 1, 4 do
      opt:zero_grad()
      m(s, t, { tgt_mask = mask }):pow(2):sum():backward()
      opt:step()
      ltc.sync()
      if i == 2 then before = ltc.metrics.counter("UncachedCompile") end
    end
    assert.are.equal(before, ltc.metrics.counter("UncachedCompile"))
    for _, p in ipairs(m:parameters()) do assert.is_not_nil(p.grad) end
  end)

  it("checks its inputs", function()
    local m = nn.Transformer(4, 2, 1, 1, 8)
    raises(function() m(ltc.randn(5, 2, 4), ltc.randn(3, 3, 4)) end,
      "Transformer: the batch number of src [5, 2, 4] and tgt [3, 3, 4] must be equal")
    raises(function() m(ltc.randn(5, 2, 4), ltc.randn(3, 2, 6)) end,
      "Transformer: the feature number of src [5, 2, 4] and tgt [3, 2, 6] must be equal to d_model 4")
    raises(function() nn.Transformer { d_model = 4, nhead = 2, custom_decoder = 1 } end,
      "Transformer: custom_decoder must be an ltc.nn module or nil, got number")
    raises(function() nn.Transformer { d_model = 0 } end, "d_model must be a positive integer")
  end)
end)

teardown(function() fx = nil end)
