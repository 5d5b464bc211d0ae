-- nn.MultiheadAttention with kdim and vdim other than embed_dim: PyTorch's separate
-- q_proj_weight, k_proj_weight and v_proj_weight, checked against PyTorch 1.13 with the same
-- weights (spec/fixtures/mha_kdim.lua, tools/gen_mha_kdim_fixtures.py).
local ltc = require "ltc"
local fx = dofile("spec/fixtures/mha_kdim.lua")

local function close(want, got, tol, what)
  if type(want) == "table" then
    assert.are.equal(#want, #got, what)
    for i = 1, #want do close(want[i], got[i], tol, what) end
    return
  end
  assert.is_true(math.abs(want - got) <= tol * (1 + math.abs(want)),
    string.format("%s: want %.17g, got %.17g", what, want, got))
end

local function raises(want, f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok)
  assert.is_truthy(tostring(e):find(want, 1, true), "got: " .. tostring(e))
end

describe("nn.MultiheadAttention with kdim and vdim", function()
  it("has PyTorch's parameter names and sizes", function()
    local m = ltc.nn.MultiheadAttention(4, 2, { kdim = 3, vdim = 5 })
    local names = {}
    for k, v in pairs(m:state_dict()) do names[k] = v:size() end
    assert.are.same({ q_proj_weight = { 4, 4 }, k_proj_weight = { 4, 3 }, v_proj_weight = { 4, 5 },
      in_proj_bias = { 12 }, ["out_proj.weight"] = { 4, 4 }, ["out_proj.bias"] = { 4 } }, names)
    assert.is_nil(m.in_proj_weight)
    -- kdim = vdim = embed_dim keeps the packed in_proj_weight
    local same = ltc.nn.MultiheadAttention(4, 2, { kdim = 4, vdim = 4 })
    assert.are.same({ 12, 4 }, same.in_proj_weight:size())
    assert.is_nil(same.q_proj_weight)
  end)

  for name, c in pairs(fx) do
    it("gives PyTorch's output, weights and gradients (" .. name .. ")", function()
      for _, dtype in ipairs { "float64", "float32" } do
        local m = ltc.nn.MultiheadAttention(c.E, c.heads, { kdim = c.kdim, vdim = c.vdim,
          batch_first = c.batch_first })
        if dtype == "float64" then m:double() end
        local T = function(t) return ltc.tensor(t, dtype) end
        m:load_state_dict({ q_proj_weight = T(c.q_proj_weight), k_proj_weight = T(c.k_proj_weight),
          v_proj_weight = T(c.v_proj_weight), in_proj_bias = T(c.in_proj_bias),
          ["out_proj.weight"] = T(c.out_proj_weight), ["out_proj.bias"] = T(c.out_proj_bias) })
        local q, k, v = T(c.q):requires_grad_(), T(c.k):requires_grad_(), T(c.v):requires_grad_()
        local opts = { average_attn_weights = c.average }
        if c.attn_mask then opts.attn_mask = ltc.tensor(c.attn_mask, "bool") end
        if c.key_padding_mask then opts.key_padding_mask = ltc.tensor(c.key_padding_mask, "bool") end
        local out, w = m(q, k, v, opts)
        ;(out * T(c.gout)):sum():backward()
        local tol = dtype == "float64" and 1e-10 or 1e-4
        local what = name .. " " .. dtype
        close(c.out, out:totable(), tol, what .. " out")
        close(c.weights, w:totable(), tol, what .. " weights")
        close(c.dq, q.grad:totable(), tol, what .. " dq")
        close(c.dk, k.grad:totable(), tol, what .. " dk")
        close(c.dv, v.grad:totable(), tol, what .. " dv")
        close(c.dwq, m.q_proj_weight.grad:totable(), tol, what .. " q_proj_weight")
        close(c.dwk, m.k_proj_weight.grad:totable(), tol, what .. " k_proj_weight")
        close(c.dwv, m.v_proj_weight.grad:totable(), tol, what .. " v_proj_weight")
        close(c.db, m.in_proj_bias.grad:totable(), tol, what .. " in_proj_bias")
      end
    end)
  end

  it("raises clear errors for bad kdim, vdim and key or value sizes", function()
    raises("MultiheadAttention: kdim must be a positive integer", ltc.nn.MultiheadAttention, 4, 2, { kdim = 0 })
    raises("MultiheadAttention: vdim must be a positive integer", ltc.nn.MultiheadAttention, 4, 2, { vdim = 1.5 })
    local m = ltc.nn.MultiheadAttention(4, 2, { kdim = 3, vdim = 5 })
    local q = ltc.randn(2, 1, 4)
    raises("MultiheadAttention: key [6, 1, 4] and value [6, 1, 5] must be [S, N, kdim] and [S, N, vdim] "
      .. "with query [2, 1, 4] (kdim 3, vdim 5)", m, q, ltc.randn(6, 1, 4), ltc.randn(6, 1, 5))
    raises("MultiheadAttention: key [6, 1, 3] and value [6, 1, 3] must be [S, N, kdim] and [S, N, vdim] "
      .. "with query [2, 1, 4] (kdim 3, vdim 5)", m, q, ltc.randn(6, 1, 3), ltc.randn(6, 1, 3))
    raises("MultiheadAttention: key [6, 1, 3] and value [5, 1, 5] must be", m, q, ltc.randn(6, 1, 3),
      ltc.randn(5, 1, 5))
    raises("MultiheadAttention: unbatched key [6, 4] and value [6, 5] must be [S, kdim] and [S, vdim] "
      .. "(kdim 3, vdim 5)", m, ltc.randn(2, 4), ltc.randn(6, 4), ltc.randn(6, 5))
    -- self-attention needs kdim = vdim = embed_dim: the query is no key of kdim 3
    raises("MultiheadAttention: key [2, 1, 4] and value [2, 1, 4] must be", m, q)
    raises("load_state_dict", function()
      m:load_state_dict({ in_proj_weight = ltc.zeros(12, 4), in_proj_bias = ltc.zeros(12),
        ["out_proj.weight"] = ltc.zeros(4, 4), ["out_proj.bias"] = ltc.zeros(4) })
    end)
  end)
end)
