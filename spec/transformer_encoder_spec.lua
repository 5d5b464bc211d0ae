-- nn.TransformerEncoder (PyTorch's torch.nn.TransformerEncoder): copies of one layer applied
-- in order, then a norm; and m:clone(), the deep copy it is made with.
local ltc = require "ltc"
local nn = ltc.nn

local function maxdiff(a, b) return (a - b):abs():max():item() end

-- the state dict's names, sorted
local function keys(m)
  local out = {}
  for k in pairs(m:state_dict()) do out[#out + 1] = k end
  table.sort(out)
  return out
end

describe("nn.TransformerEncoder", function()
  local function make(norm_first)
    ltc.manual_seed(4)
    local layer = nn.TransformerEncoderLayer(8, 2, 16, 0, { norm_first = norm_first })
    return layer, nn.TransformerEncoder(layer, 3, nn.LayerNorm(8))
  end

  it("starts every layer as a copy of the given one", function()
    local layer, enc = make()
    assert.are.equal(3, #enc.layers)
    assert.are.equal(3, enc.num_layers)
    local want = layer:state_dict({ keep_vars = true })
    for i = 1, 3 do
      local l = enc.layers[i]
      assert.are.equal(getmetatable(layer), getmetatable(l))
      assert.is_false(rawequal(l, layer))
      for name, t in pairs(l:state_dict({ keep_vars = true })) do
        assert.is_false(rawequal(t, want[name]), name)
        assert.are.same(want[name]:totable(), t:totable(), name)
        assert.is_true(t.is_leaf and t.requires_grad, name)
      end
    end
  end)

  it("has num_layers times the layer's parameters, under PyTorch's names (children from 1)", function()
    local layer, enc = make()
    assert.are.equal(3 * #layer:parameters() + 2, #enc:parameters())
    assert.are.equal(3 * #layer:parameters(), #nn.TransformerEncoder(layer, 3):parameters())
    local want = {}
    for i = 1, 3 do
      for _, k in ipairs(keys(layer)) do want[#want + 1] = "layers." .. i .. "." .. k end
    end
    want[#want + 1] = "norm.bias"
    want[#want + 1] = "norm.weight"
    table.sort(want)
    assert.are.same(want, keys(enc))
    assert.is_not_nil(enc:state_dict()["layers.2.self_attn.in_proj_weight"])
  end)

  it("equals its layers applied by hand, then the norm, with masks too", function()
    for _, norm_first in ipairs({ false, true }) do
      local _, enc = make(norm_first)
      -- make the copies differ, so that the order matters
      ltc.no_grad(function()
        for i = 1, 3 do enc.layers[i].linear2.weight:mul_(i) end
      end)
      local x = ltc.randn(5, 2, 8)
      local function by_hand(opts)
        local y = x
        for i = 1, 3 do y = enc.layers[i](y, opts) end
        return enc.norm(y)
      end
      assert.are.equal(0, maxdiff(by_hand(), enc(x)))
      local causal = ltc.ones(5, 5, "bool"):triu(1)
      local pad = ltc.tensor({ { false, false, false, true, true }, { false, false, false, false, false } })
      local want = by_hand({ src_mask = causal, src_key_padding_mask = pad })
      assert.are.equal(0, maxdiff(want, enc(x, causal, pad)))
      assert.are.equal(0, maxdiff(want, enc(x, { mask = causal, src_key_padding_mask = pad })))
      want = by_hand({ src_mask = causal, is_causal = true })
      assert.are.equal(0, maxdiff(want, enc(x, causal, nil, true)))
      -- no norm
      local plain = nn.TransformerEncoder(enc.layers[1], 2)
      assert.is_nil(plain.norm)
      local y = plain.layers[2](plain.layers[1](x))
      assert.are.equal(0, maxdiff(y, plain(x)))
    end
  end)

  it("trains copies that are independent of each other and of the given layer", function()
    local layer, enc = make()
    local before = layer.linear1.weight:clone()
    ltc.no_grad(function() enc.layers[1].linear1.weight:add_(1) end)
    assert.are.equal(0, maxdiff(before, layer.linear1.weight))
    assert.are.equal(0, maxdiff(before, enc.layers[2].linear1.weight))
    assert.are.equal(1, maxdiff(before, enc.layers[1].linear1.weight))
    enc(ltc.randn(4, 2, 8)):sum():backward()
    assert.is_nil(layer.linear1.weight.grad)
    for i = 1, 3 do assert.is_not_nil(enc.layers[i].linear1.weight.grad, i) end
    assert.is_not_nil(enc.norm.weight.grad)
  end)

  it("takes its options positionally or by name, and checks them", function()
    local layer = nn.TransformerEncoderLayer(8, 2, 16)
    local n = nn.LayerNorm(8)
    assert.is_true(rawequal(n, nn.TransformerEncoder(layer, 2, { norm = n }).norm))
    assert.is_true(rawequal(n, nn.TransformerEncoder(layer, 2, n, { enable_nested_tensor = false }).norm))
    assert.is_true(rawequal(n, nn.TransformerEncoder(layer, 2, n, false, false).norm))
    local function raises(f, want)
      local ok, msg = pcall(f)
      assert.is_false(ok)
      assert(tostring(msg):find(want, 1, true), msg)
      assert(tostring(msg):find("transformer_encoder_spec%.lua:%d+: TransformerEncoder"), msg)
    end
    raises(function() nn.TransformerEncoder(layer, 0) end, "num_layers must be a positive integer (got 0)")
    raises(function() nn.TransformerEncoder(layer, 1.5) end, "num_layers must be a positive integer (got 1.5)")
    raises(function() nn.TransformerEncoder("layer", 2) end, "encoder_layer: an ltc.nn module expected, got string")
    raises(function() nn.TransformerEncoder(layer, 2, { norm = 3 }) end, "norm must be an ltc.nn module or nil, got number")
    raises(function() nn.TransformerEncoder(layer, 2, { depth = 3 }) end, "unknown option 'depth'")
    raises(function() nn.TransformerEncoder(layer, 2, n, { norm = n }) end, "multiple values for 'norm'")
    local enc = nn.TransformerEncoder(layer, 1)
    raises(function() enc(ltc.randn(3, 1, 8), { src_mask = 1 }) end, "unknown option 'src_mask'")
  end)
end)

describe("m:clone()", function()
  it("copies parameters, buffers, fields and training mode; shared weights stay shared", function()
    local Tied = nn.class("Tied")
    function Tied:__init()
      self.a = nn.Linear(3, 3)
      self.b = nn.Linear(3, 3)
      self.b.weight = self.a.weight
      self.bn = nn.BatchNorm1d(3)
      self.sizes = { 1, 2 }
    end
    function Tied:forward(x) return self.bn(self.b(self.a(x))) end
    local m = Tied()
    m:eval()
    ltc.no_grad(function() m.bn.running_mean:fill_(0.5) end)
    local c = m:clone()
    assert.are.equal(getmetatable(m), getmetatable(c))
    assert.is_false(c.training)
    assert.is_false(c.bn.training)
    assert.is_true(rawequal(c.a.weight, c.b.weight))
    assert.is_false(rawequal(c.a.weight, m.a.weight))
    assert.are.equal(#m:parameters(), #c:parameters())
    assert.are.same(m.bn.running_mean:totable(), c.bn.running_mean:totable())
    assert.are.same({ 1, 2 }, c.sizes)
    assert.is_false(rawequal(c.sizes, m.sizes))
    local x = ltc.randn(4, 3)
    assert.are.equal(0, maxdiff(m(x), c(x)))
    -- writes and gradients stay apart
    ltc.no_grad(function() c.a.weight:zero_() end)
    assert.are.equal(0, c.b.weight:abs():max():item())
    assert.is_true(m.a.weight:abs():max():item() > 0)
    c(x):sum():backward()
    assert.is_nil(m.a.weight.grad)
    assert.is_not_nil(c.a.weight.grad)
    assert.is_nil(c:clone().a.weight.grad) -- grads are not copied (PyTorch's Parameter deepcopy)
  end)
end)
