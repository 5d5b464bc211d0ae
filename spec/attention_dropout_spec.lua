-- scaled_dot_product_attention with dropout inside the fused op (the .dropout overloads,
-- src/cpu/attention.c, src/ref/attention.c): probability P[b, h, i, j] is kept with
-- probability 1 - p (then scaled by 1 / (1 - p)), the decision drawn from the generator state
-- operand at the counter of its flat index in [..., L, S], as ltc.rand([..., L, S]) draws from
-- that state; the backward draws the same decisions again. Expected values come from the
-- attention written over the ops with the mask recovered from ltc.rand, from float64 finite
-- differences at a fixed state, and from counts.
local ltc = require "ltc"
local F = ltc.nn.functional
local core = require "ltc.core"
local close = dofile("spec/support/close.lua")
local err = dofile("spec/support/err.lua")

local function randn(...) return ltc.randn({ ... }, "float64") end
local function state(seed, offset) return ltc.tensor({ seed, offset }, "int64") end

-- softmax(q k^T scale [masked]) * keep / (1 - p) . v over the ops: keep a bool [..., L, S],
-- mask a bool one (true takes part) or a float one added to the scores
local function over_ops(q, k, v, causal, scale, p, keep, mask)
  local s = q:matmul(k:transpose(-2, -1)) * scale
  local L, S = q:size(-2), k:size(-2)
  if causal then s = s:masked_fill(ltc.ones({ L, S }, "bool"):tril():logical_not(), -math.huge) end
  if mask and mask:dtype() == "bool" then s = s:masked_fill(mask:logical_not(), -math.huge)
  elseif mask then s = s + mask end
  return (s:softmax(-1) * keep:to(q:dtype()) / (1 - p)):matmul(v)
end

-- out and the gradients of sum(out * g) w.r.t. q, k, v, each a tensor
local function fwd_bwd(attn, q, k, v, g)
  q, k, v = q:detach():requires_grad_(), k:detach():requires_grad_(), v:detach():requires_grad_()
  local out = attn(q, k, v)
  local gq, gk, gv = ltc.autograd.grad({ (out * g):sum() }, { q, k, v })
  return out, gq, gk, gv
end

local function maxdiff(a, b) return (a:double() - b:double()):abs():max():item() end

describe("scaled_dot_product_attention with dropout", function()
  after_each(function() ltc.set_backend("cpu") end)

  -- 2 x 3 heads, 70 queries (two blocks of 64), 150 keys (two blocks of 128)
  local B, H, L, S, E = 2, 3, 70, 150, 8

  it("draws probability (b, h, i, j)'s decision at its flat index, as ltc.rand does (values and gradients)", function()
    ltc.manual_seed(5)
    local q, k, v, g = randn(B, H, L, E), randn(B, H, S, E), randn(B, H, S, E), randn(B, H, L, E)
    local mask = ltc.rand({ L, S }):gt(0.2)
    local fmask = randn(B, 1, L, S) -- a float mask, broadcast over the heads
    for _, case in ipairs { { false }, { true }, { false, mask }, { false, fmask } } do
      local causal, m = case[1], case[2]
      for _, dt in ipairs { "float64", "float32" } do
        local qq, kk, vv, gg = q:to(dt), k:to(dt), v:to(dt), g:to(dt)
        if m and m:dtype() ~= "bool" then m = m:to(dt) end
        ltc.manual_seed(77)
        local got = { fwd_bwd(function(a, b, c)
          return F.scaled_dot_product_attention(a, b, c, { is_causal = causal, attn_mask = m,
            dropout_p = 0.3, scale = 0.4 })
        end, qq, kk, vv, gg) }
        ltc.manual_seed(77) -- the same state: ltc.rand's counters are the flat indices
        local keep = ltc.rand({ B, H, L, S }, dt):lt(0.7)
        local want = { fwd_bwd(function(a, b, c)
          return over_ops(a, b, c, causal, 0.4, 0.3, keep, m)
        end, qq, kk, vv, gg) }
        local tol = dt == "float64" and 1e-12 or 1e-5
        for i = 1, 4 do
          assert.is_true(maxdiff(want[i], got[i]) < tol, dt .. " result " .. i .. ": " .. maxdiff(want[i], got[i]))
        end
      end
    end
  end)

  it("with dropout_p = 0 equals the op without dropout (values and gradients, bit for bit)", function()
    ltc.manual_seed(6)
    local q, k, v, g = randn(B, H, L, E), randn(B, H, S, E), randn(B, H, S, E), randn(B, H, L, E)
    local mask = ltc.rand({ L, S }):gt(0.2)
    for _, m in ipairs { false, mask } do
      local plain = { fwd_bwd(function(a, b, c)
        if m then return (ltc.scaled_dot_product_attention(a, b, c, false, 0.3, m)) end
        return (ltc.scaled_dot_product_attention(a, b, c, true, 0.3))
      end, q, k, v, g) }
      local zero = { fwd_bwd(function(a, b, c)
        return (ltc.scaled_dot_product_attention(a, b, c, not m, 0.3, 0, state(1, 2), m or nil))
      end, q, k, v, g) }
      for i = 1, 4 do assert.are.equal(0, maxdiff(plain[i], zero[i])) end
    end
  end)

  it("drops the same elements on the CPU and reference backends", function()
    ltc.manual_seed(7)
    local q, k, v, g = randn(B, H, L, E), randn(B, H, S, E), randn(B, H, S, E), randn(B, H, L, E)
    local mask = ltc.rand({ L, S }):gt(0.2):totable()
    for _, dt in ipairs { "float64", "float32" } do
      local r = {}
      for _, backend in ipairs { "ref", "cpu" } do
        ltc.set_backend(backend)
        local function cp(t) return ltc.tensor(t:totable(), dt) end
        for ci, m in ipairs { false, ltc.tensor(mask, "bool") } do
          local res = { fwd_bwd(function(a, b, c)
            return (ltc.scaled_dot_product_attention(a, b, c, ci == 1, 0.3, 0.4, state(9, 1000), m or nil))
          end, cp(q), cp(k), cp(v), cp(g)) }
          for i = 1, 4 do res[i] = res[i]:totable() end
          r[backend .. ci] = res
        end
      end
      ltc.set_backend("cpu")
      -- a different decision would differ by a whole probability (2.5 times it), not rounding
      local tol = dt == "float64" and 1e-12 or 2e-5
      for ci = 1, 2 do
        for i = 1, 4 do close(r["ref" .. ci][i], r["cpu" .. ci][i], tol, dt .. " case " .. ci .. " result " .. i) end
      end
    end
  end)

  it("drops a fraction p of a large matrix and scales the kept ones by 1 / (1 - p)", function()
    -- with value the identity [S, S], the output is the dropped probabilities themselves
    local b, h, l, s, p = 2, 4, 256, 256, 0.3
    ltc.manual_seed(8)
    local q, k = randn(b, h, l, 16), randn(b, h, s, 16)
    local v = ltc.eye(s, "float64"):reshape({ 1, 1, s, s }):expand({ b, h, s, s }):contiguous()
    local out = F.scaled_dot_product_attention(q, k, v, { dropout_p = p })
    local n = b * h * l * s
    local dropped = out:eq(0):sum():item() / n
    local sigma = math.sqrt(p * (1 - p) / n)
    assert.is_true(math.abs(dropped - p) < 5 * sigma, "dropped " .. dropped .. ", sigma " .. sigma)
    -- every row keeps its own share (no row all kept or all dropped)
    local per_row = out:eq(0):double():mean(-1)
    assert.is_true(per_row:min():item() > 0.1 and per_row:max():item() < 0.5)
    local want = (q:matmul(k:transpose(-2, -1)) * 0.25):softmax(-1) / (1 - p)
    local kept = out:ne(0)
    assert.is_true(((out - want) * kept:double()):abs():max():item() < 1e-12)
  end)

  it("matches float64 finite differences at a fixed generator state", function()
    ltc.manual_seed(9)
    local q, k, v, g = randn(1, 2, 5, 3), randn(1, 2, 7, 3), randn(1, 2, 7, 4), randn(1, 2, 5, 4)
    local st = state(4242, 17)
    for _, causal in ipairs { false, true } do
      local function f(a, b, c)
        return (ltc.scaled_dot_product_attention(a, b, c, causal, 0.6, 0.4, st))
      end
      local _, gq, gk, gv = fwd_bwd(f, q, k, v, g)
      local grads = { gq:totable(), gk:totable(), gv:totable() }
      local ins = { q:totable(), k:totable(), v:totable() }
      local sizes = { q:size(), k:size(), v:size() }
      local eps = 1e-6
      for w = 1, 3 do
        local t = ins[w]
        for i = 1, sizes[w][3] do
          for j = 1, sizes[w][4] do
            for hh = 1, 2 do
              local function loss(delta)
                local x = t[1][hh][i][j]
                t[1][hh][i][j] = x + delta
                local args = { q, k, v }
                args[w] = ltc.tensor(t, "float64")
                t[1][hh][i][j] = x
                return (f(args[1], args[2], args[3]) * g):sum():item()
              end
              local fd = (loss(eps) - loss(-eps)) / (2 * eps)
              local an = grads[w][1][hh][i][j]
              assert.is_true(math.abs(fd - an) < 1e-6 * (1 + math.abs(an)),
                string.format("input %d [%d][%d][%d]: finite differences %.10g, gradient %.10g", w, hh, i, j, fd, an))
            end
          end
        end
      end
    end
  end)

  it("repeats its mask after the same manual_seed and draws a new one on the next call", function()
    ltc.manual_seed(10)
    local q, k, v = randn(2, 2, 9, 4), randn(2, 2, 11, 4), randn(2, 2, 11, 4)
    ltc.manual_seed(3)
    local a = F.scaled_dot_product_attention(q, k, v, { dropout_p = 0.5 })
    local b = F.scaled_dot_product_attention(q, k, v, { dropout_p = 0.5 })
    ltc.manual_seed(3)
    local c = F.scaled_dot_product_attention(q, k, v, { dropout_p = 0.5 })
    assert.are.equal(0, maxdiff(a, c))
    assert.is_true(maxdiff(a, b) > 1e-3)
    -- the first call took the counters of [2, 2, 9, 11]: the second starts past them
    ltc.manual_seed(3)
    local st0 = core._rng_state(0):totable()
    F.scaled_dot_product_attention(q, k, v, { dropout_p = 0.5 })
    assert.are.same({ 3, 2 * 2 * 9 * 11 }, core._rng_state(0):totable())
    assert.are.same({ 3, 0 }, st0)
  end)

  it("under ltc.jit draws a new mask each replay, forward and backward alike, without recompiling", function()
    ltc.manual_seed(11)
    local q, k, v, g = randn(2, 3, 9, 4), randn(2, 3, 9, 4), randn(2, 3, 9, 4), randn(2, 3, 9, 4)
    local function attn(a, b, c)
      return F.scaled_dot_product_attention(a, b, c, { is_causal = true, dropout_p = 0.5 })
    end
    local step = ltc.jit(function(a, b, c) return { fwd_bwd(attn, a, b, c, g) } end)
    step(q, k, v)
    step(q, k, v) -- the capture
    local compiles, replays = ltc.metrics.counter("UncachedCompile"), ltc.metrics.counter("GraphReplay")
    local outs = {}
    for n = 1, 3 do
      local st = core._rng_state(0) -- the state the replay draws from
      local got = step(q, k, v)
      local want = { fwd_bwd(function(a, b, c)
        return (ltc.scaled_dot_product_attention(a, b, c, true, 0.5, 0.5, st))
      end, q, k, v, g) }
      for i = 1, 4 do assert.is_true(maxdiff(want[i], got[i]) < 1e-12, "replay " .. n .. " result " .. i) end
      outs[n] = got[1]
    end
    assert.is_true(maxdiff(outs[1], outs[2]) > 1e-3 and maxdiff(outs[2], outs[3]) > 1e-3)
    assert.are.equal(replays + 3, ltc.metrics.counter("GraphReplay"))
    -- the checks' own graphs compiled once (the first replay's), the replays never
    local c1 = ltc.metrics.counter("UncachedCompile")
    assert.is_true(c1 - compiles <= 2, "compiles " .. (c1 - compiles))
    step(q, k, v)
    assert.are.equal(c1, ltc.metrics.counter("UncachedCompile"))
  end)

  it("takes the default generator's state when rng_state is nil, advanced by the op's own count", function()
    -- ops.yaml's `random: ltc_rng_numel_attention`: numel of [..., L, S], counted by the C
    -- entry (not by the Lua caller), so ltc.scaled_dot_product_attention called directly
    -- draws as F.scaled_dot_product_attention does, with or without a mask
    local q, k, v = randn(2, 3, 5, 4), randn(2, 3, 7, 4), randn(2, 3, 7, 2)
    local mask = ltc.ones({ 5, 7 }, "bool")
    ltc.manual_seed(21)
    local st = core._rng_state(0)
    local a = ltc.scaled_dot_product_attention(q, k, v, false, 0.5, 0.4)
    assert.are.same({ 21, 2 * 3 * 5 * 7 }, core._rng_state(0):totable())
    local b = ltc.scaled_dot_product_attention(q, k, v, false, 0.5, 0.4, nil, mask)
    assert.are.same({ 21, 2 * 2 * 3 * 5 * 7 }, core._rng_state(0):totable())
    assert.are.equal(0, maxdiff(a, (ltc.scaled_dot_product_attention(q, k, v, false, 0.5, 0.4, st))))
    assert.is_true(maxdiff(a, b) > 1e-3)
    -- a call that fails its shape check draws nothing
    local v6 = randn(2, 3, 6, 2)
    local drawn = core._rng_state(0):totable()
    local e = err(function() ltc.scaled_dot_product_attention(q, k, v6, false, 0.5, 0.4) end)
    assert.truthy(e:find("do not fit", 1, true), e)
    assert.are.same(drawn, core._rng_state(0):totable())
  end)

  it("raises errors naming the op for a bad dropout_p or generator state", function()
    local q, k, v = ltc.zeros(2, 5, 4), ltc.zeros(2, 7, 4), ltc.zeros(2, 7, 3)
    for _, p in ipairs { -0.1, 1.5, 0 / 0 } do
      local e = err(function() F.scaled_dot_product_attention(q, k, v, { dropout_p = p }) end)
      assert.truthy(e:find("scaled_dot_product_attention: dropout_p must be a number between 0 and 1, got "
        .. string.format("%g", p), 1, true), e)
    end
    local e = err(function() F.scaled_dot_product_attention(q, k, v, { dropout_p = "0.1" }) end)
    assert.truthy(e:find("scaled_dot_product_attention: dropout_p must be a number between 0 and 1, got string", 1, true), e)
    e = err(function() F.scaled_dot_product_attention(q, k, v, nil, "0.1") end)
    assert.truthy(e:find("scaled_dot_product_attention: argument #5 (dropout_p) must be a number", 1, true), e)
    e = err(function() ltc.scaled_dot_product_attention(q, k, v, false, 1, 1.5, state(1, 0)) end)
    assert.truthy(e:find("scaled_dot_product_attention: dropout_p must be between 0 and 1, got 1.5", 1, true), e)
    e = err(function() ltc.scaled_dot_product_attention(q, k, v, false, 1, 0.1, ltc.zeros(3, "int64")) end)
    assert.truthy(e:find("scaled_dot_product_attention: rng_state must be the generator state {seed, offset}, int64 [2], got int64 [3]", 1, true), e)
    e = err(function() ltc.scaled_dot_product_attention(q, k, v, false, 1, 0.1, ltc.zeros(2)) end)
    assert.truthy(e:find("got float32 [2]", 1, true), e)
    e = err(function() F.scaled_dot_product_attention(q, k, ltc.zeros(2, 6, 3), { dropout_p = 0.1 }) end)
    assert.truthy(e:find("query [2,5,4], key [2,7,4] and value [2,6,3] do not fit", 1, true), e)
    -- nothing pending was harmed, and p = 1 drops everything
    assert.are.equal(0, F.scaled_dot_product_attention(q + 1, k, v + 1, { dropout_p = 1 }):abs():sum():item())
  end)

  it("gives a float mask that requires grad its gradient through the path over the ops", function()
    ltc.manual_seed(12)
    local q, k, v = randn(1, 2, 4, 3), randn(1, 2, 6, 3), randn(1, 2, 6, 3)
    local m = randn(4, 6):requires_grad_()
    ltc.manual_seed(13)
    local out = F.scaled_dot_product_attention(q, k, v, { attn_mask = m, dropout_p = 0.5 })
    out:sum():backward()
    -- the same over the ops, F.dropout drawing the same counters of [1, 2, 4, 6]
    local m2 = m:detach():requires_grad_()
    ltc.manual_seed(13)
    local keep = ltc.rand({ 1, 2, 4, 6 }, "float64"):lt(0.5)
    local w = ((q:matmul(k:transpose(-2, -1)) / math.sqrt(3) + m2):softmax(-1) * keep:double() * 2)
    w:matmul(v):sum():backward()
    close(m2.grad:totable(), m.grad:totable(), 1e-12)
    assert.is_true(m.grad:abs():sum():item() > 0)
    -- the fused op itself refuses that gradient with dropout, naming the op
    local m3 = randn(4, 6):requires_grad_()
    local o = ltc.scaled_dot_product_attention(q, k, v, false, 0.5, 0.5, state(1, 0), m3)
    local e = err(function() o:sum():backward() end)
    assert.truthy(e:find("scaled_dot_product_attention.dropout_mask: the gradient of a float attn_mask", 1, true), e)
  end)
end)

describe("MultiheadAttention and TransformerEncoderLayer with dropout", function()
  local function ops_of(t) return ltc.debug.ir(t) end

  it("take the fused op when training without the attention weights", function()
    ltc.manual_seed(14)
    local mha = ltc.nn.MultiheadAttention(8, 2, { dropout = 0.2 })
    local x = ltc.randn(5, 3, 8)
    local out = mha(x, x, x, { need_weights = false })
    local ir = ops_of(out)
    assert.truthy(ir:find("scaled_dot_product_attention.dropout", 1, true), ir)
    assert.is_nil(ir:find("softmax", 1, true))
    out = mha(x, x, x, { need_weights = false, is_causal = true })
    assert.truthy(ops_of(out):find("scaled_dot_product_attention.dropout", 1, true))
    -- with the weights: the explicit path, with F.dropout
    local _, w = mha(x, x, x)
    assert.truthy(ops_of(w):find("softmax", 1, true))
    -- evaluation: no dropout at all
    mha:eval()
    local ev = ops_of(mha(x, x, x, { need_weights = false }))
    assert.is_nil(ev:find("dropout", 1, true))
    local layer = ltc.nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16, dropout = 0.1 })
    ir = ops_of(layer(x, { is_causal = true }))
    assert.truthy(ir:find("scaled_dot_product_attention.dropout", 1, true))
    assert.is_nil(ir:find("softmax", 1, true))
  end)

  it("gives the output of the same attention over the ops with the mask recovered", function()
    ltc.manual_seed(15)
    local mha = ltc.nn.MultiheadAttention(8, 2, { dropout = 0.3, batch_first = true })
    local x = ltc.randn(3, 5, 8, "float64")
    mha:double()
    ltc.manual_seed(16)
    local got = mha(x, x, x, { need_weights = false })
    -- the fused op drew the counters of [N, H, L, S] = [3, 2, 5, 5] from {16, 0}
    ltc.manual_seed(16)
    local keep = ltc.rand({ 3, 2, 5, 5 }, "float64"):lt(0.7)
    local w, b = mha.in_proj_weight, mha.in_proj_bias
    local qkv = F.linear(x, w, b) -- [3, 5, 24]
    local function heads(i) return qkv:narrow(3, (i - 1) * 8 + 1, 8):reshape({ 3, 5, 2, 4 }):permute({ 1, 3, 2, 4 }) end
    local o = over_ops(heads(1), heads(2), heads(3), false, 0.5, 0.3, keep)
    local want = mha.out_proj(o:permute({ 1, 3, 2, 4 }):reshape({ 3, 5, 8 }))
    close(want:totable(), got:totable(), 1e-12)
  end)
end)

describe("scaled_dot_product_attention with dropout on OpenCL", function()
  local O = dofile("spec/support/opencl.lua")
  if O.skipped(assert, pending) then return end
  it("runs through the core's eager fallback (the CPU kernels) with the CPU's mask", function()
    O.ocl.open()
    local r = {}
    for i = 1, 4 do r[i] = ltc.randn(1, 2, 70, 4):totable() end
    local _, _, fb = O.same(function()
      local q, k, v = ltc.tensor(r[1]):requires_grad_(), ltc.tensor(r[2]):requires_grad_(), ltc.tensor(r[3]):requires_grad_()
      ltc.manual_seed(17)
      local out = F.scaled_dot_product_attention(q, k, v, { is_causal = true, dropout_p = 0.25 })
      ;(out * ltc.tensor(r[4])):sum():backward()
      return out, q.grad, k.grad, v.grad
    end, 1e-5, true)
    assert.is_true(fb >= 2) -- the forward op and the backward op
  end)
end)
