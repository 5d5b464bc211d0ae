-- More ltc.nn modules against PyTorch (spec/fixtures/nn_layers.lua from
-- tools/gen_nn_fixtures.py): outputs and input gradients (of sum(out * gw)) in float64 for the
-- same parameters; buffers (running statistics) after a training step.
local ltc = require "ltc"
local nn = ltc.nn
local F = nn.functional
local close = dofile("spec/support/close.lua")
local fx = dofile("spec/fixtures/nn_layers.lua")

local function T(v, dtype) return ltc.tensor(v, dtype or "float64") end

local function load(m, c)
  m:double()
  local sd = m:state_dict()
  for k in pairs(sd) do
    if c.params[k] then sd[k] = T(c.params[k])
    elseif c.buffers and c.buffers[k] and k ~= "num_batches_tracked" then sd[k] = sd[k] end
  end
  m:load_state_dict(sd)
  return m
end

-- runs fn on the fixture's x, compares out and the gradient of sum(out * gw)
local function check(c, fn, tol)
  local x = T(c.x):requires_grad_()
  local y = fn(x)
  close(c.out, y:totable(), tol or 1e-9)
  ;(y * T(c.gw)):sum():backward()
  close(c.grad, x.grad:totable(), tol or 1e-9)
  return y
end

describe("activations", function()
  it("match PyTorch, as functions and modules", function()
    check(fx.leaky_relu, function(x) return nn.LeakyReLU(0.2)(x) end)
    check(fx.leaky_relu, function(x) return nn.LeakyReLU { negative_slope = 0.2 }(x) end)
    check(fx.elu, function(x) return nn.ELU(0.5)(x) end)
    check(fx.silu, function(x) return nn.SiLU()(x) end)
    check(fx.mish, function(x) return nn.Mish()(x) end)
    check(fx.softplus, function(x) return nn.Softplus(2, 1)(x) end)
    check(fx.hardtanh, function(x) return F.hardtanh(x, -0.5, 0.7) end)
    check(fx.hardtanh, function(x) return nn.Hardtanh(-0.5, 0.7)(x) end)
    local x = ltc.tensor({ 1, 2 })
    assert.are.equal(x, nn.Identity()(x))
    assert.has_error(function() nn.LeakyReLU { slope = 1 } end,
      "LeakyReLU: unknown option 'slope' (known: negative_slope)")
  end)
end)

describe("normalisation", function()
  it("BatchNorm2d normalises by the batch, updates its running statistics, then uses them", function()
    local c = fx.batchnorm2d
    local m = load(nn.BatchNorm2d(3, { momentum = 0.2 }), c)
    check(c, function(x) return m(x) end)
    close(c.buffers.running_mean, m.running_mean:totable(), 1e-9)
    close(c.buffers.running_var, m.running_var:totable(), 1e-9)
    assert.are.equal(1, m.num_batches_tracked:item())
    m:eval()
    close(c.eval_out, m(T(c.x)):totable(), 1e-9)
    assert.is_not_nil(m:state_dict().running_var)
    assert.are.equal("BatchNorm2d(3, eps=1e-05, momentum=0.2, affine=true, track_running_stats=true)", tostring(m))
  end)
  it("BatchNorm1d and GroupNorm match PyTorch", function()
    local c = fx.batchnorm1d
    local m = load(nn.BatchNorm1d(3), c)
    check(c, function(x) return m(x) end)
    close(c.buffers.running_var, m.running_var:totable(), 1e-9)
    c = fx.groupnorm
    m = load(nn.GroupNorm(2, 4), c)
    check(c, function(x) return m(x) end)
    assert.has_error(function() nn.GroupNorm(3, 4) end, "GroupNorm: num_channels 4 must be divisible by num_groups 3")
    assert.has_error(function() nn.BatchNorm2d(3)(ltc.zeros(2, 3)) end,
      "BatchNorm2d: input of size [2, 3] must be 4-d with 3 channels in dim 2")
  end)
end)

describe("pooling, convolutions and resizing", function()
  it("AvgPool2d (ceil_mode, count_include_pad=false) and AdaptiveAvgPool2d match PyTorch", function()
    check(fx.avgpool, function(x)
      return nn.AvgPool2d(3, { stride = 2, padding = 1, ceil_mode = true, count_include_pad = false })(x)
    end)
    check(fx.adaptive, function(x) return nn.AdaptiveAvgPool2d({ 3, 2 })(x) end)
  end)
  it("Conv1d and ConvTranspose2d match PyTorch, weight gradient included", function()
    local c = fx.conv1d
    local m = load(nn.Conv1d(3, 4, 3, { stride = 2, padding = 1 }), c)
    check(c, function(x) return m(x) end)
    c = fx.convtranspose2d
    m = load(nn.ConvTranspose2d(3, 2, 3, { stride = 2, padding = 1, output_padding = 1 }), c)
    check(c, function(x) return m(x) end)
    close(c.grad_w, m.weight.grad:totable(), 1e-9)
  end)
  it("Upsample nearest and bilinear (both corner conventions) match PyTorch", function()
    check(fx.up_nearest, function(x) return nn.Upsample { scale_factor = 2, mode = "nearest" }(x) end)
    check(fx.up_bilinear, function(x) return nn.Upsample { size = { 5, 7 }, mode = "bilinear" }(x) end)
    check(fx.up_bilinear_ac, function(x)
      return nn.Upsample { size = { 5, 7 }, mode = "bilinear", align_corners = true }(x)
    end)
    assert.has_error(function() nn.Upsample { scale = 2 } end,
      "Upsample: unknown option 'scale' (known: align_corners, mode, scale_factor, size)")
  end)
end)

describe("containers and shapes", function()
  it("ModuleList and ModuleDict register their modules", function()
    local l = nn.ModuleList { nn.Linear(2, 2), nn.Linear(2, 3) }
    l:append(nn.Linear(3, 1))
    assert.are.equal(3, #l)
    assert.are.equal(6, #l:parameters())
    assert.are.equal("2.weight", l:named_parameters()[3][1])
    local Owner = nn.class("Owner")
    function Owner:__init() self.blocks = nn.ModuleList { nn.Linear(1, 1) } end
    assert.are.equal(2, #Owner():parameters())
    local d = nn.ModuleDict { { "enc", nn.Linear(2, 2) }, { "act", nn.ReLU() } }
    assert.are.same({ "enc", "act" }, d:keys())
    assert.are.equal(d.enc, d:items()[1][2])
    assert.has_error(function() l:forward(ltc.zeros(1)) end, "ModuleList: has no forward; call its modules")
  end)
  it("Unflatten splits a dim", function()
    assert.are.same({ 2, 3, 4, 5 }, nn.Unflatten(2, { 3, 4 })(ltc.zeros(2, 12, 5)):size())
    assert.are.same({ 2, 12, 1, 5 }, nn.Unflatten(-1, { 1, 5 })(ltc.zeros(2, 12, 5)):size())
  end)
end)

describe("attention", function()
  it("scaled_dot_product_attention matches PyTorch with a bool mask, a float mask, causal", function()
    local c = fx.sdpa_bool
    check(c, function(q) return F.scaled_dot_product_attention(q, T(c.k), T(c.v), { attn_mask = T(c.mask, "bool") }) end)
    c = fx.sdpa_float
    check(c, function(q) return F.scaled_dot_product_attention(q, T(c.k), T(c.v), { attn_mask = T(c.mask) }) end)
    c = fx.sdpa_causal
    check(c, function(q) return F.scaled_dot_product_attention(q, T(c.k), T(c.v), { is_causal = true }) end)
  end)
  it("MultiheadAttention matches PyTorch with key padding and attention masks", function()
    local c = fx.mha
    local m = load(nn.MultiheadAttention(8, 2), c)
    local weights
    check(c, function(x)
      local o, w = m(x, T(c.k), T(c.v), { key_padding_mask = T(c.kpm, "bool"), attn_mask = T(c.am, "bool") })
      weights = w
      return o
    end)
    close(c.weights, weights:totable(), 1e-9)
  end)
  it("MultiheadAttention takes PyTorch's unbatched [L, E] input (a batch of one)", function()
    -- PyTorch's unbatched call gives its batched result's entry: the fixture's batch entry 2
    -- (the one with key padding), with key_padding_mask [S]
    local c = fx.mha
    local function entry(t) return T(t):select(2, 2) end -- [len, N, E] -> [len, E]
    for _, bf in ipairs { false, true } do
      local m = load(nn.MultiheadAttention(8, 2, { batch_first = bf }), c)
      local kpm = T(c.kpm, "bool")[2]
      local x = entry(c.x):requires_grad_()
      local o, w = m(x, entry(c.k), entry(c.v), { key_padding_mask = kpm, attn_mask = T(c.am, "bool") })
      assert.are.same({ 4, 8 }, o:size())
      assert.are.same({ 4, 5 }, w:size())
      close(T(c.out):select(2, 2):totable(), o:totable(), 1e-9)
      close(c.weights[2], w:totable(), 1e-9)
      ;(o * entry(c.gw)):sum():backward()
      close(T(c.grad):select(2, 2):totable(), x.grad:totable(), 1e-9)
      -- unaveraged weights [heads, L, S]; self-attention without weights (the packed path
      -- when batch_first) gives the batched call's entry
      local _, wh = m(x, entry(c.k), entry(c.v), { average_attn_weights = false })
      assert.are.same({ 2, 4, 5 }, wh:size())
      local y = T(c.x):select(2, 1)
      local self_o = m(y, y, y, { need_weights = false, is_causal = true })
      local yb = bf and y:unsqueeze(1) or y:unsqueeze(2)
      local want = m(yb, yb, yb, { need_weights = false, is_causal = true })
      close((bf and want[1] or want:select(2, 1)):totable(), self_o:totable(), 1e-12)
    end
    local m = nn.MultiheadAttention(8, 2)
    local ok, e = pcall(m, ltc.zeros(4, 8), ltc.zeros(5, 1, 8), ltc.zeros(5, 1, 8))
    assert.is_false(ok)
    assert.truthy(tostring(e):find("unbatched (2-d) query [4, 8] needs 2-d key and value, got key [5, 1, 8]", 1, true), e)
    ok, e = pcall(m, ltc.zeros(4, 8), ltc.zeros(5, 8), ltc.zeros(5, 8), { key_padding_mask = ltc.zeros({ 1, 5 }, "bool") })
    assert.is_false(ok)
    assert.truthy(tostring(e):find("key_padding_mask must be 1-d [S], got [1, 5]", 1, true), e)
  end)
  it("TransformerEncoderLayer matches PyTorch, post-norm and pre-norm with GELU", function()
    for _, name in ipairs { "enc_post", "enc_pre_gelu" } do
      local c = fx[name]
      local o = { dim_feedforward = 16, dropout = 0 }
      for k, v in pairs(c.opts) do o[k] = v end
      local m = load(nn.TransformerEncoderLayer(8, 2, o), c)
      local mask = ltc.ones({ 5, 5 }, "bool"):triu(1)
      check(c, function(x) return m(x, { src_mask = mask }) end)
      check(c, function(x) return m(x, mask) end) -- PyTorch's positional src_mask
    end
  end)
end)

-- the fixtures are large Lua tables: free them after this file, so later specs that
-- collect garbage often do not walk them on every collection
teardown(function() fx = nil end)
