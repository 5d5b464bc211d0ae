-- scaled_dot_product_attention, the fused op (src/cpu/attention.c, src/ref/attention.c) and its
-- front end ltc.nn.functional.scaled_dot_product_attention, against PyTorch 1.13 fixtures
-- (spec/fixtures/attention.lua from tools/gen_attention_fixtures.py: the op's definition
-- written out, since torch 1.13 has no F.scaled_dot_product_attention): output and the
-- gradients of sum(out * gout) with respect to query, key and value (and a float mask).
local ltc = require "ltc"
local F = ltc.nn.functional
local close = dofile("spec/support/close.lua")
local fx = dofile("spec/fixtures/attention.lua")

local function T(v, dtype) return ltc.tensor(v, dtype or "float64") end

-- runs the case on the current backend in dtype; returns out, dq, dk, dv as tables
local function run(c, dtype)
  dtype = dtype or "float64"
  local q, k, v = T(c.q, dtype):requires_grad_(), T(c.k, dtype):requires_grad_(), T(c.v, dtype):requires_grad_()
  local mask = c.mask and T(c.mask, c.mask_bool and "bool" or dtype)
  if c.dmask then mask:requires_grad_() end
  local out = F.scaled_dot_product_attention(q, k, v, { attn_mask = mask, is_causal = c.causal, scale = c.scale })
  ;(out * T(c.gout, dtype)):sum():backward()
  return out:totable(), q.grad:totable(), k.grad:totable(), v.grad:totable(),
    c.dmask and mask.grad:totable()
end

local function check(c, dtype, tol)
  local out, dq, dk, dv, dmask = run(c, dtype)
  if c.dmask then close(c.dmask, dmask, tol, "dmask") end
  close(c.out, out, tol, "out")
  close(c.dq, dq, tol, "dq")
  close(c.dk, dk, tol, "dk")
  close(c.dv, dv, tol, "dv")
end

local names = {}
for name in pairs(fx) do names[#names + 1] = name end
table.sort(names)

describe("scaled_dot_product_attention", function()
  after_each(function() ltc.set_backend("cpu") end)

  for _, name in ipairs(names) do
    it("matches PyTorch's values and gradients: " .. name, function()
      check(fx[name], "float64", 1e-9)
    end)
  end

  it("matches PyTorch in float32 across the kernel's blocks", function()
    check(fx.odd_blocks, "float32", 2e-4)
    check(fx.odd_causal, "float32", 2e-4)
  end)

  it("gives the reference backend's values (which materialises the scores)", function()
    for _, name in ipairs { "odd_blocks", "float_mask", "causal_l_gt_s", "masked_row" } do
      ltc.set_backend("ref")
      local r = { run(fx[name]) }
      ltc.set_backend("cpu")
      local c = { run(fx[name]) }
      for i = 1, 4 do close(r[i], c[i], 1e-12, name .. " output " .. i) end
    end
  end)

  it("gives NaN for a row no key may see, and its gradient reaches value only (bool mask)", function()
    local c = fx.masked_row
    local out, dq, dk, dv = run(c)
    -- written out: row 2 masked everywhere (PyTorch: softmax of a row of -inf is NaN)
    assert.is_true(out[1][1][2][1] ~= out[1][1][2][1])
    assert.are.same({ 0, 0 }, dq[1][1][2])
    assert.is_true(dk[1][1][1][1] == dk[1][1][1][1])
    assert.is_true(dv[1][1][1][1] ~= dv[1][1][1][1])
    -- a float mask of -inf: the scores are not constants, NaN reaches query and key as well
    local fm = T(c.mask, "bool"):logical_not():double():masked_fill(T(c.mask, "bool"):logical_not(), -math.huge)
    local q = T(c.q):requires_grad_()
    local o = F.scaled_dot_product_attention(q, T(c.k), T(c.v), { attn_mask = fm })
    ;(o * T(c.gout)):sum():backward()
    local g = q.grad:totable()
    assert.is_true(g[1][1][2][1] ~= g[1][1][2][1])
  end)

  it("gives a masked key exactly no weight (bool mask, causal), forward and backward", function()
    -- by hand: q1 = (1, 0) sees keys (1, 0) and (0, 1) with scores 1/sqrt(2) and 0, q2 = (0,
    -- 1) the same two swapped; key 3 is masked for both and holds a huge value, which any
    -- weight above 0 (such as exp(-87) = 1.6e-38) would carry into the output
    local p = 1 / (1 + math.exp(-1 / math.sqrt(2)))
    local want = { { { p + 3 * (1 - p), 2 * p + 4 * (1 - p) }, { (1 - p) + 3 * p, 2 * (1 - p) + 4 * p } } }
    for _, be in ipairs { "cpu", "ref" } do
      ltc.set_backend(be)
      for _, dt in ipairs { "float32", "float64" } do
        local big = dt == "float32" and 1e38 or 1e300
        local q = T({ { { 1, 0 }, { 0, 1 } } }, dt):requires_grad_()
        local k = T({ { { 1, 0 }, { 0, 1 }, { 1, 1 } } }, dt):requires_grad_()
        local v = T({ { { 1, 2 }, { 3, 4 }, { big, big } } }, dt):requires_grad_()
        local m = T({ { true, true, false }, { true, true, false } }, "bool")
        local o = F.scaled_dot_product_attention(q, k, v, { attn_mask = m })
        close(want, o:totable(), dt == "float32" and 1e-6 or 1e-12, be .. " " .. dt)
        o:sum():backward()
        assert.are.same({ 0, 0 }, v.grad:totable()[1][3], be .. " " .. dt)
        assert.are.same({ 0, 0 }, k.grad:totable()[1][3], be .. " " .. dt)
        -- causal: query 1 sees key 1 only, so its output is value 1 exactly
        local vc = T({ { { 1, 2 }, { big, big } } }, dt):requires_grad_()
        local oc = F.scaled_dot_product_attention(q, k:narrow(2, 1, 2), vc, { is_causal = true })
        assert.are.same({ 1, 2 }, oc:totable()[1][1], be .. " " .. dt)
        oc[1][1]:sum():backward()
        assert.are.same({ 0, 0 }, vc.grad:totable()[1][2], be .. " " .. dt)
      end
    end
  end)

  it("gives NaN (output and logsumexp) for a row with a +inf score, on both backends", function()
    -- by hand: key 1 holds +inf, so query 1 = (1, 0) scores it +inf (softmax: inf - inf, NaN,
    -- as PyTorch's) and query 2 = (-1, 1) scores it -inf (weight 0): softmax over keys 2 and
    -- 3, scores 1/sqrt(2) and 0; the CPU kernel gave logsumexp -inf for row 1 (the reference
    -- NaN), which fuzz seed 189783 found through a bfloat16 key
    local p = 1 / (1 + math.exp(-1 / math.sqrt(2)))
    local want = { p * 3 + (1 - p) * 5, p * 4 + (1 - p) * 6 }
    local lse2 = math.log(math.exp(1 / math.sqrt(2)) + 1)
    for _, be in ipairs { "cpu", "ref" } do
      ltc.set_backend(be)
      for _, dt in ipairs { "float32", "float64", "bfloat16", "float16" } do
        local tol = (dt == "bfloat16" and 2e-2) or (dt == "float16" and 2e-3) or 1e-6
        local q = T({ { 1, 0 }, { -1, 1 } }, dt)
        local k = T({ { math.huge, 0 }, { 0, 1 }, { 1, 1 } }, dt)
        local v = T({ { 1, 2 }, { 3, 4 }, { 5, 6 } }, dt)
        local o, lse = ltc.scaled_dot_product_attention(q, k, v, false, 1 / math.sqrt(2))
        assert.are.equal(dt, o:dtype())
        local ot, lt = o:totable(), lse:totable()
        assert.is_true(ot[1][1] ~= ot[1][1] and ot[1][2] ~= ot[1][2], be .. " " .. dt)
        assert.is_true(lt[1] ~= lt[1], be .. " " .. dt .. " logsumexp " .. tostring(lt[1]))
        close(want, ot[2], tol, be .. " " .. dt)
        close(lse2, lt[2], tol, be .. " " .. dt)
      end
    end
  end)

  it("gives NaN for a float32 score that overflows (finite inputs), on both backends", function()
    -- 1e30 . 1e30 overflows float32's product to +inf: a NaN row (the reference computed in
    -- double and gave logsumexp 1e59 -> inf and a finite output: fuzz seed 33 program 657);
    -- row 2 sees scores 1e30 * 0.1 (finite) and 0: all weight on key 1
    for _, be in ipairs { "cpu", "ref" } do
      ltc.set_backend(be)
      local q = T({ { 1e30, 0 }, { 1, 0 } }, "float32")
      local k = T({ { 1e30, 0 }, { 0, 1 } }, "float32")
      local v = T({ { 1, 2 }, { 3, 4 } }, "float32")
      local o, lse = ltc.scaled_dot_product_attention(q, k, v, false, 0.1)
      local ot, lt = o:totable(), lse:totable()
      assert.is_true(ot[1][1] ~= ot[1][1] and lt[1] ~= lt[1], be .. " " .. tostring(lt[1]))
      assert.are.same({ 1, 2 }, ot[2], be)
    end
  end)

  it("with scale 0 still carries a non-finite query into the output, on both backends", function()
    -- PyTorch's (q k^T) * 0: NaN for a NaN or infinite product (the CPU kernel's gemm with
    -- alpha 0 read neither operand and gave uniform weights); finite rows: uniform weights,
    -- the mean of the values (by hand)
    for _, be in ipairs { "cpu", "ref" } do
      ltc.set_backend(be)
      local q = T({ { 0 / 0, 1 }, { 2, -3 }, { math.huge, 1 } }):requires_grad_()
      local k = T({ { 1, 0 }, { 0, 1 } }):requires_grad_()
      local v = T({ { 1, 2 }, { 3, 5 } }):requires_grad_()
      local o = ltc.scaled_dot_product_attention(q, k, v, false, 0)
      local ot = o:totable()
      assert.is_true(ot[1][1] ~= ot[1][1] and ot[3][2] ~= ot[3][2], be)
      assert.are.same({ 2, 3.5 }, ot[2], be)
      -- the gradients of the finite row alone: dq 0 (scale 0), dv the weights 1/2
      local q2 = T({ { 2, -3 } }):requires_grad_()
      local o2 = ltc.scaled_dot_product_attention(q2, k, v, false, 0)
      o2:sum():backward()
      assert.are.same({ { 0, 0 } }, q2.grad:totable(), be)
      assert.are.same({ { 0.5, 0.5 }, { 0.5, 0.5 } }, v.grad:totable(), be)
    end
  end)

  it("takes float16 and bfloat16 (computed in float32), forward and backward", function()
    -- by hand, as the masked case above: the probabilities p and 1 - p over keys 1 and 2
    local p = 1 / (1 + math.exp(-1 / math.sqrt(2)))
    local want = { { p + 3 * (1 - p), 2 * p + 4 * (1 - p) }, { (1 - p) + 3 * p, 2 * (1 - p) + 4 * p } }
    local c = fx.odd_blocks
    local function grads(dt)
      local q, k, v = T(c.q, dt):requires_grad_(), T(c.k, dt):requires_grad_(), T(c.v, dt):requires_grad_()
      local out = F.scaled_dot_product_attention(q, k, v, { is_causal = true })
      ;(out * T(c.gout, dt)):sum():backward()
      return out, q.grad, k.grad, v.grad
    end
    local ref = { grads("float64") } -- the float64 path matches PyTorch (fixtures above)
    for _, dt in ipairs { "float16", "bfloat16" } do
      local tol = dt == "bfloat16" and 6e-2 or 8e-3
      local o = F.scaled_dot_product_attention(T({ { 1, 0 }, { 0, 1 } }, dt), T({ { 1, 0 }, { 0, 1 } }, dt),
        T({ { 1, 2 }, { 3, 4 } }, dt))
      assert.are.equal(dt, o:dtype())
      close(want, o:totable(), tol, dt)
      local got = { grads(dt) }
      for i = 1, 4 do
        assert.are.equal(dt, got[i]:dtype())
        close(ref[i]:totable(), got[i]:double():totable(), tol, dt .. " output/gradient " .. i)
      end
    end
  end)

  it("computes the three gradients in one backward node", function()
    local c = fx.plain
    local q, k, v = T(c.q):requires_grad_(), T(c.k):requires_grad_(), T(c.v):requires_grad_()
    F.scaled_dot_product_attention(q, k, v):sum():backward()
    local ir = ltc.debug.ir(q.grad:sum() + k.grad:sum() + v.grad:sum())
    local _, n = ir:gsub("scaled_dot_product_attention_backward%(", "")
    assert.are.equal(1, n)
    -- and the forward is one node too: no [L, S] scores, no softmax
    local o = F.scaled_dot_product_attention(T(c.q), T(c.k), T(c.v))
    local fwd = ltc.debug.ir(o)
    assert.is_nil(fwd:find("softmax", 1, true))
    assert.is_nil(fwd:find("matmul", 1, true))
  end)

  it("takes the scale, and dropout_p (1 drops every weight, 0.5 changes the output)", function()
    local c = fx.plain
    local q, k, v = T(c.q), T(c.k), T(c.v)
    local a = F.scaled_dot_product_attention(q, k, v, { scale = 0.3 })
    local b = F.scaled_dot_product_attention(q * 0.3 * math.sqrt(4), k, v)
    close(b:totable(), a:totable(), 1e-12)
    -- dropout_p = 1 drops every weight: zeros
    close(ltc.zeros(2, 3, 5, 3, "float64"):totable(),
      F.scaled_dot_product_attention(q, k, v, { dropout_p = 1 }):totable(), 0)
    -- dropout_p = 0.5: each weight kept (times 2) or dropped, so the output differs
    ltc.manual_seed(1)
    local d = F.scaled_dot_product_attention(q, k, v, { dropout_p = 0.5 })
    assert.is_true((d - F.scaled_dot_product_attention(q, k, v)):abs():max():item() > 1e-3)
  end)

  it("raises errors that name the op and the sizes", function()
    local q, k, v = ltc.zeros(2, 5, 4), ltc.zeros(2, 7, 4), ltc.zeros(2, 7, 3)
    local function msg(f)
      local ok, e = pcall(f)
      assert.is_false(ok)
      return tostring(e)
    end
    local e = msg(function() F.scaled_dot_product_attention(q, ltc.zeros(2, 7, 5), v) end)
    assert.truthy(e:find("scaled_dot_product_attention", 1, true), e)
    assert.truthy(e:find("query [2,5,4], key [2,7,5] and value [2,7,3] do not fit", 1, true), e)
    e = msg(function() F.scaled_dot_product_attention(q, k, ltc.zeros(2, 6, 3)) end)
    assert.truthy(e:find("do not fit", 1, true), e)
    e = msg(function() F.scaled_dot_product_attention(q, ltc.zeros(3, 7, 4), v) end)
    assert.truthy(e:find("do not fit", 1, true), e)
    e = msg(function() F.scaled_dot_product_attention(q, k, v, { attn_mask = ltc.zeros({ 5, 6 }, "bool") }) end)
    assert.truthy(e:find("attn_mask [5,6] does not broadcast to the scores [2,5,7]", 1, true), e)
    e = msg(function() F.scaled_dot_product_attention(q, k, v, { attn_mask = ltc.zeros({ 5, 7 }, "int64") }) end)
    assert.truthy(e:find("attn_mask must be bool or query's dtype float32, got int64", 1, true), e)
    e = msg(function() F.scaled_dot_product_attention(q:long(), k:long(), v:long()) end)
    assert.truthy(e:find("query must be of a floating dtype, got int64", 1, true), e)
    e = msg(function() F.scaled_dot_product_attention(q, k:double(), v) end)
    assert.truthy(e:find("one dtype", 1, true), e)
    e = msg(function() F.scaled_dot_product_attention(ltc.zeros(4), ltc.zeros(4), ltc.zeros(4)) end)
    assert.truthy(e:find("do not fit", 1, true), e)
    e = msg(function() F.scaled_dot_product_attention(q, k, v, { is_causal = true, attn_mask = ltc.zeros({ 5, 7 }, "bool") }) end)
    assert.truthy(e:find("not both", 1, true), e)
    -- nothing pending was harmed
    assert.are.equal(0, F.scaled_dot_product_attention(q, k, v):sum():item())
  end)

  it("does not recompile from step to step", function()
    local q, k, v = ltc.randn(2, 3, 9, 4):requires_grad_(), ltc.randn(2, 3, 9, 4):requires_grad_(), ltc.randn(2, 3, 9, 4):requires_grad_()
    local function step()
      F.scaled_dot_product_attention(q, k, v, { is_causal = true }):sum():backward()
      ltc.sync()
    end
    for _ = 1, 3 do step() end -- the first gradient, then accumulating ones (as any op)
    local n = ltc.metrics.counter("UncachedCompile")
    step()
    assert.are.equal(n, ltc.metrics.counter("UncachedCompile"))
  end)
end)

describe("scaled_dot_product_attention on OpenCL", function()
  local O = dofile("spec/support/opencl.lua")
  if O.skipped(assert, pending) then return end
  it("runs through the core's eager fallback (the CPU kernels), forward and backward", function()
    O.ocl.open()
    local c = fx.odd_blocks
    local _, _, fb = O.same(function()
      local q, k, v = T(c.q, "float32"):requires_grad_(), T(c.k, "float32"):requires_grad_(), T(c.v, "float32"):requires_grad_()
      local out = F.scaled_dot_product_attention(q, k, v, { attn_mask = T(c.mask, "bool") })
      ;(out * T(c.gout, "float32")):sum():backward()
      return out, q.grad, k.grad, v.grad
    end, 1e-5, true)
    assert.is_true(fb >= 2) -- the forward op and the backward op
  end)
end)

describe("MultiheadAttention", function()
  it("gives the same output with and without the attention weights (fused op and ops)", function()
    ltc.manual_seed(3)
    local m = ltc.nn.MultiheadAttention(8, 2)
    local x = ltc.randn(5, 3, 8)
    local kp = ltc.tensor({ { false, false, false, false, true }, { false, false, false, false, false },
      { true, false, false, false, false } }, "bool")
    local am = ltc.ones({ 5, 5 }, "bool"):triu(1)
    for _, o in ipairs { {}, { key_padding_mask = kp }, { attn_mask = am }, { is_causal = true },
      { attn_mask = am, key_padding_mask = kp } } do
      local with = m(x, x, x, o)
      o.need_weights = false
      local without = m(x, x, x, o)
      close(with:totable(), without:totable(), 1e-5)
    end
  end)

  it("with batch_first gives the transposed output and weights of the [L, N, E] layout", function()
    ltc.manual_seed(4)
    local seq = ltc.nn.MultiheadAttention(8, 2)
    local bf = ltc.nn.MultiheadAttention(8, 2, { batch_first = true })
    bf:load_state_dict(seq:state_dict())
    local q, kv = ltc.randn(5, 3, 8), ltc.randn(4, 3, 8) -- [len, N, E]
    local kp = ltc.tensor({ { false, false, false, true }, { false, false, false, false },
      { true, false, false, false } }, "bool")
    for _, o in ipairs { {}, { key_padding_mask = kp }, { need_weights = false } } do
      local o2 = {}
      for k, v in pairs(o) do o2[k] = v end
      local want, ww = seq(q, kv, kv, o)
      local got, gw = bf(q:transpose(1, 2), kv:transpose(1, 2), kv:transpose(1, 2), o2)
      assert.same({ 3, 5, 8 }, got:size())
      close(want:transpose(1, 2):totable(), got:totable(), 1e-5)
      if ww then close(ww:totable(), gw:totable(), 1e-5) end
    end
    local x = ltc.randn(3, 6, 8) -- self-attention, causal
    local want = seq(x:transpose(1, 2), nil, nil, { is_causal = true, need_weights = false })
    local got = bf(x, nil, nil, { is_causal = true, need_weights = false })
    close(want:transpose(1, 2):totable(), got:totable(), 1e-5)
  end)
end)

describe("MultiheadAttention bad input (fresh-eyes tester)", function()
  local function raises(want, f, ...)
    local ok, e = pcall(f, ...)
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find(want, 1, true), "got: " .. tostring(e))
  end
  ltc.manual_seed(0)
  local mha = ltc.nn.MultiheadAttention(8, 2)
  local q, k = ltc.randn(5, 8), ltc.randn(7, 8)
  local qb, kb = ltc.randn(5, 2, 8), ltc.randn(7, 2, 8)

  it("names the module and the sizes, not an internal reshape or add", function()
    raises("MultiheadAttention: a batched (3-d) query [5, 2, 8] needs 3-d key and value, got key "
      .. "[7, 8] and value [7, 8]", mha, qb, k, k)
    raises("MultiheadAttention: unbatched key [7, 8] and value [6, 8] must be [S, kdim] and [S, vdim] "
      .. "(kdim 8, vdim 8)", mha, q, k, ltc.randn(6, 8))
    raises("MultiheadAttention: key [7, 2, 8] and value [6, 2, 8] must be [S, N, kdim] and [S, N, vdim] "
      .. "with query [5, 2, 8] (kdim 8, vdim 8)", mha, qb, kb, ltc.randn(6, 2, 8))
    raises("MultiheadAttention: key [7, 3, 8] and value [7, 3, 8] must be [S, N, kdim] and [S, N, vdim] "
      .. "with query [5, 2, 8] (kdim 8, vdim 8)", mha, qb, ltc.randn(7, 3, 8), ltc.randn(7, 3, 8))
    raises("MultiheadAttention: key_padding_mask must be [S] = [7] with key [7, 8], got [6]", mha, q, k,
      k, { key_padding_mask = ltc.zeros(6, "bool") })
    raises("MultiheadAttention: key_padding_mask must be [N, S] = [2, 7], got [2, 6]", mha, qb, kb, kb,
      { key_padding_mask = ltc.zeros({ 2, 6 }, "bool") })
    raises("MultiheadAttention: the 2-d attn_mask is [5, 6], but should be [5, 7] ([L, S])", mha, q, k,
      k, { attn_mask = ltc.zeros({ 5, 6 }, "bool") })
    raises("MultiheadAttention: the 2-d attn_mask is [5, 6], but should be [5, 7] ([L, S])", mha, qb, kb,
      kb, { attn_mask = ltc.zeros({ 5, 6 }, "bool") })
    raises("MultiheadAttention: the 3-d attn_mask is [2, 5, 7], but should be [4, 5, 7] ([N * num_heads, "
      .. "L, S])", mha, qb, kb, kb, { attn_mask = ltc.zeros({ 2, 5, 7 }, "bool") })
    raises("MultiheadAttention: unbatched query [5, 6] must be [L, E] with embed_dim 8", mha,
      ltc.randn(5, 6), ltc.randn(7, 6), ltc.randn(7, 6))
  end)

  it("rejects an integer key_padding_mask (PyTorch) and names both dtypes of a float64 input", function()
    raises("MultiheadAttention: only bool and floating key_padding_mask are supported, got int64", mha,
      q, q, q, { key_padding_mask = ltc.tensor({ 0, 0, 0, 1, 0 }, "int64") })
    raises("MultiheadAttention: only bool and floating attn_mask are supported, got int64", mha,
      q, q, q, { attn_mask = ltc.zeros({ 5, 5 }, "int64") })
    raises("MultiheadAttention: query dtype float64 does not match the weights' dtype float32", mha,
      q:double(), q:double(), q:double())
    raises("MultiheadAttention: key dtype float64 does not match the weights' dtype float32", mha,
      qb, kb:double(), kb:double())
  end)

  it("takes a 3-d attn_mask [N * num_heads, L, S] (PyTorch's layout)", function()
    local m2 = ltc.rand(5, 7):gt(0.5)
    m2[{ {}, 1 }] = false -- every row attends somewhere
    local m3 = m2:unsqueeze(1):expand({ 4, 5, 7 }):contiguous()
    local want = mha(qb, kb, kb, { attn_mask = m2 })
    local got = mha(qb, kb, kb, { attn_mask = m3 })
    close(want:totable(), got:totable(), 1e-6)
  end)
end)

teardown(function() fx = nil end)
