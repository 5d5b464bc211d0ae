-- scaled_dot_product_attention_packed and its backward (src/cpu/attention.c, src/ref/attention.c):
-- self-attention over the packed in-projection qkv [N, L, 3E], the path nn.MultiheadAttention
-- takes for batch_first self-attention. Against PyTorch 1.13's nn.MultiheadAttention
-- (spec/fixtures/attention_packed.lua from tools/gen_attention_packed_fixtures.py), against
-- the unpacked op on the permuted heads, and against the reference backend.
local ltc = require "ltc"
local close = dofile("spec/support/close.lua")
local err = dofile("spec/support/err.lua")
local fx = dofile("spec/fixtures/attention_packed.lua")

local function T(v, dtype) return ltc.tensor(v, dtype or "float64") end

-- output, logsumexp and the gradient of sum(output * gout) w.r.t. qkv, through the packed op
local function packed(qkv0, heads, causal, gout)
  local qkv = qkv0:clone():requires_grad_()
  local out, lse = ltc.scaled_dot_product_attention_packed(qkv, heads, causal, 0.3)
  ;(out * gout):sum():backward()
  return out:totable(), lse:totable(), qkv.grad:totable()
end

-- the same through the unpacked op on [N, heads, L, D] copies of the three
local function unpacked(qkv0, heads, causal, gout)
  local N, L, E = qkv0:size(1), qkv0:size(2), qkv0:size(3) // 3
  local D = E // heads
  local qkv = qkv0:clone():requires_grad_()
  local function head(i)
    return qkv:narrow(3, (i - 1) * E + 1, E):reshape({ N, L, heads, D }):permute({ 1, 3, 2, 4 })
  end
  local o, lse = ltc.scaled_dot_product_attention(head(1), head(2), head(3), causal, 0.3)
  local out = o:permute({ 1, 3, 2, 4 }):reshape({ N, L, E })
  ;(out * gout):sum():backward()
  return out:totable(), lse:totable(), qkv.grad:totable()
end

describe("scaled_dot_product_attention_packed", function()
  after_each(function() ltc.set_backend("cpu") end)

  it("is the unpacked op over each head, causal or not, across the kernel's blocks", function()
    ltc.manual_seed(1)
    for _, c in ipairs { { 2, 70, 12, 3 }, { 3, 5, 8, 2 }, { 2, 9, 6, 1 } } do
      local N, L, E, heads = c[1], c[2], c[3], c[4]
      local qkv, gout = ltc.randn({ N, L, 3 * E }, "float64"), ltc.randn({ N, L, E }, "float64")
      for _, causal in ipairs { true, false } do
        local a = { packed(qkv, heads, causal, gout) }
        local b = { unpacked(qkv, heads, causal, gout) }
        local what = string.format("N %d L %d E %d heads %d causal %s", N, L, E, heads, tostring(causal))
        close(b[1], a[1], 1e-12, what .. " output")
        close(b[2], a[2], 1e-12, what .. " logsumexp")
        close(b[3], a[3], 1e-12, what .. " grad")
      end
    end
  end)

  it("gives the reference backend's values", function()
    ltc.manual_seed(2)
    local qkv, gout = ltc.randn({ 2, 6, 12 }, "float64"), ltc.randn({ 2, 6, 4 }, "float64")
    local qt, gt = qkv:totable(), gout:totable()
    local cpu = { packed(qkv, 2, true, gout) }
    ltc.set_backend("ref")
    local ref = { packed(T(qt), 2, true, T(gt)) }
    for i = 1, 3 do close(ref[i], cpu[i], 1e-12, "result " .. i) end
  end)

  it("gives the reference backend's values on the small-head kernel's odd sizes", function()
    -- heads up to 64 wide take attention_impl.h's mmk: widths that are not whole vectors
    -- (9, 20, 37), whole ones (64), and L across the blocks of queries (64) and keys (128)
    ltc.manual_seed(3)
    for _, c in ipairs { { 2, 70, 20, 2 }, { 1, 130, 37, 2 }, { 1, 67, 20, 3 }, { 1, 65, 64, 2 },
      { 2, 5, 9, 2 }, { 1, 131, 37, 2 } } do
      local N, L, D, heads = c[1], c[2], c[3], c[4] -- D: the width of a head
      local E = D * heads
      for _, dtype in ipairs { "float64", "float32" } do
        local qkv = ltc.randn({ N, L, 3 * E }, dtype)
        local gout = ltc.randn({ N, L, E }, dtype)
        local qt, gt = qkv:totable(), gout:totable()
        for _, causal in ipairs { true, false } do
          ltc.set_backend("cpu")
          local cpu = { packed(qkv, heads, causal, gout) }
          ltc.set_backend("ref")
          local ref = { packed(T(qt, dtype), heads, causal, T(gt, dtype)) }
          local what = string.format("N %d L %d E %d heads %d causal %s %s", N, L, E, heads,
            tostring(causal), dtype)
          local tol = dtype == "float64" and 1e-12 or 2e-5
          for i = 1, 3 do close(ref[i], cpu[i], tol, what .. " result " .. i) end
        end
      end
    end
  end)

  it("gives PyTorch's nn.MultiheadAttention (batch_first self-attention) and its gradients", function()
    for name, c in pairs(fx) do
      for _, dtype in ipairs { "float64", "float32" } do
        local m = ltc.nn.MultiheadAttention(c.E, c.heads, { batch_first = true })
        if dtype == "float64" then m:double() end
        m:load_state_dict({ in_proj_weight = T(c.in_proj_weight, dtype), in_proj_bias = T(c.in_proj_bias, dtype),
          ["out_proj.weight"] = T(c.out_proj_weight, dtype), ["out_proj.bias"] = T(c.out_proj_bias, dtype) })
        local x = T(c.x, dtype):requires_grad_()
        local mask = c.causal and ltc.ones({ c.L, c.L }, "bool"):triu(1) or nil
        local out = m(x, x, x, { attn_mask = mask, is_causal = c.causal or nil, need_weights = false })
        assert.truthy(ltc.debug.ir(out):find("scaled_dot_product_attention_packed", 1, true), name)
        ;(out * T(c.gout, dtype)):sum():backward()
        local tol = dtype == "float64" and 1e-10 or 1e-4
        close(c.out, out:totable(), tol, name .. " out " .. dtype)
        close(c.dx, x.grad:totable(), tol, name .. " dx " .. dtype)
        close(c.dw, m.in_proj_weight.grad:totable(), tol, name .. " in_proj_weight " .. dtype)
        close(c.db, m.in_proj_bias.grad:totable(), tol, name .. " in_proj_bias " .. dtype)
      end
    end
  end)

  it("raises clear errors for bad sizes, heads and dtypes", function()
    local msg = err(function() ltc.scaled_dot_product_attention_packed(ltc.randn(4, 9), 1, false, 1) end)
    assert.truthy(msg:find("scaled_dot_product_attention_packed", 1, true), msg)
    assert.truthy(msg:find("qkv [4,9] must be [N, L, 3E] with E a multiple of heads 1", 1, true), msg)
    msg = err(function() ltc.scaled_dot_product_attention_packed(ltc.randn(2, 3, 12), 3, false, 1) end)
    assert.truthy(msg:find("qkv [2,3,12] must be [N, L, 3E] with E a multiple of heads 3", 1, true), msg)
    msg = err(function() ltc.scaled_dot_product_attention_packed(ltc.randn(2, 3, 12), 0, false, 1) end)
    assert.truthy(msg:find("heads must be >= 1, got 0", 1, true), msg)
    msg = err(function() ltc.scaled_dot_product_attention_packed(ltc.ones({ 2, 3, 12 }, "int64"), 2, false, 1) end)
    assert.truthy(msg:find("qkv must be of a floating dtype, got int64", 1, true), msg)
    msg = err(function() ltc.scaled_dot_product_attention_packed(ltc.randn(2, 3, 12), 2, false, 0 / 0) end)
    assert.truthy(msg:find("scale must be finite", 1, true), msg)
    local qkv = ltc.randn(2, 3, 12)
    local out, lse = ltc.scaled_dot_product_attention_packed(qkv, 2, true, 1)
    msg = err(function() ltc.scaled_dot_product_attention_packed_backward(ltc.randn(2, 3, 5), qkv, out, lse, 2, true, 1) end)
    assert.truthy(msg:find("grad_output [2,3,5] and output [2,3,4] must be [2,3,4]", 1, true), msg)
    msg = err(function() ltc.scaled_dot_product_attention_packed_backward(out, qkv, out, lse:narrow(3, 1, 2), 2, true, 1) end)
    assert.truthy(msg:find("logsumexp [2,2,2] must be [2,2,3]", 1, true), msg)
  end)
end)
