-- The finite-difference cases of spec/autograd_spec.lua for the ops of issue 15 (special
-- functions, sort and friends, ...), kept here so that the two lists merge easily.
-- Returns function(gradcheck, ltc) -> {op name = function() ... end}.
return function(gradcheck, ltc)
  local A = { { 0.5, -1.2, 2.0 }, { 1.5, 0.3, -0.7 } }          -- 2x3
  local B = { { 0.8, -0.4, 1.1 }, { -1.3, 0.9, 0.6 } }           -- 2x3
  local P = { { 0.5, 1.2, 2.0 }, { 1.5, 0.3, 0.7 } }             -- positive 2x3
  local U = { { 0.5, -0.2, 0.9 }, { -0.7, 0.3, 0.1 } }           -- inside (-1, 1)
  local G = { { 1.5, 1.2, 2.0 }, { 3.5, 1.3, 4.7 } }             -- above 1
  local R = { 0.7, -1.1, 1.9 }                                   -- 3
  local unary = function(name, input)
    return function() gradcheck(function(a) return a[name](a) end, { input }) end
  end
  return {
    tan = unary("tan", U),
    atan = unary("atan", A),
    asin = unary("asin", U),
    acos = unary("acos", U),
    sinh = unary("sinh", A),
    cosh = unary("cosh", A),
    asinh = unary("asinh", A),
    acosh = unary("acosh", G),
    atanh = unary("atanh", U),
    erf = unary("erf", A),
    erfc = unary("erfc", A),
    erfinv = unary("erfinv", U),
    log2 = unary("log2", P),
    log10 = unary("log10", P),
    exp2 = unary("exp2", A),
    lgamma = unary("lgamma", { { 0.5, 1.2, 2.0 }, { 3.5, -0.3, -1.7 } }),
    digamma = unary("digamma", { { 0.5, 1.2, 2.0 }, { 3.5, -0.3, -1.7 } }),
    polygamma = function()
      gradcheck(function(a) return a:polygamma(0) end, { P })
    end,
    atan2 = function()
      gradcheck(function(a, b) return a:atan2(b) end, { A, B })
      gradcheck(function(a, r) return ltc.atan2(a, r) end, { A, R })
    end,
    hypot = function()
      gradcheck(function(a, b) return a:hypot(b) end, { A, B })
      gradcheck(function(a, r) return ltc.hypot(r, a) end, { A, R })
    end,
    logaddexp = function()
      gradcheck(function(a, b) return a:logaddexp(b) end, { A, B })
      gradcheck(function(a, r) return ltc.logaddexp(a, r) end, { A, R })
    end,
    tril = function()
      gradcheck(function(a) return a:tril() end, { A })
      gradcheck(function(a) return a:reshape({ 1, 3, 2 }):tril(-1) end, { A })
    end,
    triu = function()
      gradcheck(function(a) return a:triu(1) end, { A })
      gradcheck(function(a) return a:reshape({ 3, 2 }):triu(-1) end, { A })
    end,
    sort = function()
      gradcheck(function(a) local v = a:sort(); return v end, { A })
      gradcheck(function(a) local v = a:sort(1, true); return v end, { A })
    end,
    topk = function()
      gradcheck(function(a) local v = a:topk(2); return v end, { A })
      gradcheck(function(a) local v = a:topk(1, 1, false); return v end, { A })
    end,
    kthvalue = function()
      gradcheck(function(a) local v = a:kthvalue(2); return v end, { A })
      gradcheck(function(a) local v = a:kthvalue(1, 1, true); return v end, { A })
    end,
    median = function() gradcheck(function(a) return a:median() end, { A }) end,
    ["median.dim"] = function()
      gradcheck(function(a) local v = a:median(2); return v end, { A })
    end,
    mode = function()
      gradcheck(function(a) local v = a:mode(2); return v end, { A })
    end,
    cumprod = function()
      gradcheck(function(a) return a:cumprod(2) end, { A })
      gradcheck(function(a) return a:cumprod(1) end, { A })
    end,
    cummax = function()
      gradcheck(function(a) local v = a:cummax(2); return v end, { A })
      gradcheck(function(a) local v = a:cummax(1); return v end, { B })
    end,
    cummin = function()
      gradcheck(function(a) local v = a:cummin(2); return v end, { A })
    end,
    -- query [2, 3, 2], key [2, 4, 2], value [2, 4, 3]: the blocked kernel and its fused
    -- backward (one node for the three gradients)
    scaled_dot_product_attention = function()
      local q = { { { 0.5, -1.2 }, { 2.0, 1.5 }, { 0.3, -0.7 } }, { { 0.8, -0.4 }, { 1.1, -1.3 }, { 0.9, 0.6 } } }
      local k = { { { 0.2, 0.7 }, { -1.1, 0.4 }, { 1.3, -0.2 }, { 0.6, 0.9 } },
                  { { -0.5, 0.3 }, { 0.8, 1.2 }, { -0.9, -0.6 }, { 0.1, -1.4 } } }
      local v = { { { 1.0, -0.3, 0.4 }, { 0.2, 0.9, -1.1 }, { -0.7, 0.5, 0.8 }, { 1.4, -0.6, 0.3 } },
                  { { -0.2, 1.1, 0.6 }, { 0.7, -0.8, -0.4 }, { 0.5, 0.3, 1.2 }, { -1.0, 0.2, -0.5 } } }
      gradcheck(function(a, b, c) return (ltc.scaled_dot_product_attention(a, b, c, false, 0.6)) end, { q, k, v })
      gradcheck(function(a, b, c) return (ltc.scaled_dot_product_attention(a, b, c, true, 0.8)) end, { q, k, v })
    end,
    scaled_dot_product_attention_packed = function()
      -- qkv [2, 3, 12]: N 2, L 3, E 4 (two heads of 2), query, key and value side by side
      local qkv = {}
      for n = 1, 2 do
        qkv[n] = {}
        for l = 1, 3 do
          qkv[n][l] = {}
          for e = 1, 12 do qkv[n][l][e] = math.sin(n * 7 + l * 3 + e * 1.3) end
        end
      end
      gradcheck(function(a) return (ltc.scaled_dot_product_attention_packed(a, 2, false, 0.6)) end, { qkv })
      gradcheck(function(a) return (ltc.scaled_dot_product_attention_packed(a, 2, true, 0.8)) end, { qkv })
    end,
    ["scaled_dot_product_attention.mask"] = function()
      local q = { { 0.5, -1.2 }, { 2.0, 1.5 }, { 0.3, -0.7 } }
      local k = { { 0.2, 0.7 }, { -1.1, 0.4 }, { 1.3, -0.2 }, { 0.6, 0.9 } }
      local v = { { 1.0, -0.3 }, { 0.2, 0.9 }, { -0.7, 0.5 }, { 1.4, -0.6 } }
      local bm = ltc.tensor({ { true, false, true, true }, { false, true, true, false }, { true, true, false, true } }, "bool")
      local fm = ltc.tensor({ { 0.1, -0.5, 0.3, 0 }, { 0.7, 0.2, -1.0, 0.4 }, { -0.3, 0.6, 0.2, -0.8 } }, "float64")
      gradcheck(function(a, b, c) return (ltc.scaled_dot_product_attention(a, b, c, false, 0.7, bm)) end, { q, k, v })
      gradcheck(function(a, b, c) return (ltc.scaled_dot_product_attention(a, b, c, true, 0.7, fm)) end, { q, k, v })
      -- a float mask's own gradient, broadcast over a batch of 2
      local q2 = { q, { { 0.8, -0.4 }, { 1.1, -1.3 }, { 0.9, 0.6 } } }
      gradcheck(function(a, m) return (ltc.scaled_dot_product_attention(a, a, a, false, 0.7, m)) end,
        { q2, { { 0.1, -0.5, 0.3 }, { 0.7, 0.2, -1.0 }, { -0.3, 0.6, 0.2 } } })
      gradcheck(function(a, m) return (ltc.scaled_dot_product_attention(a, a, a, true, 0.9, m)) end,
        { q2, { { 0.1, -0.5, 0.3 } } })
    end,
    -- dropout at a fixed generator state {seed, offset}: the same keep decisions on every
    -- evaluation, forward and backward
    ["scaled_dot_product_attention.dropout"] = function()
      local q = { { { 0.5, -1.2 }, { 2.0, 1.5 }, { 0.3, -0.7 } }, { { 0.8, -0.4 }, { 1.1, -1.3 }, { 0.9, 0.6 } } }
      local k = { { { 0.2, 0.7 }, { -1.1, 0.4 }, { 1.3, -0.2 }, { 0.6, 0.9 } },
                  { { -0.5, 0.3 }, { 0.8, 1.2 }, { -0.9, -0.6 }, { 0.1, -1.4 } } }
      local v = { { { 1.0, -0.3, 0.4 }, { 0.2, 0.9, -1.1 }, { -0.7, 0.5, 0.8 }, { 1.4, -0.6, 0.3 } },
                  { { -0.2, 1.1, 0.6 }, { 0.7, -0.8, -0.4 }, { 0.5, 0.3, 1.2 }, { -1.0, 0.2, -0.5 } } }
      local st = ltc.tensor({ 31, 5 }, "int64")
      gradcheck(function(a, b, c) return (ltc.scaled_dot_product_attention(a, b, c, false, 0.6, 0.4, st)) end, { q, k, v })
      gradcheck(function(a, b, c) return (ltc.scaled_dot_product_attention(a, b, c, true, 0.8, 0.3, st)) end, { q, k, v })
    end,
    ["scaled_dot_product_attention.dropout_mask"] = function()
      local q = { { 0.5, -1.2 }, { 2.0, 1.5 }, { 0.3, -0.7 } }
      local k = { { 0.2, 0.7 }, { -1.1, 0.4 }, { 1.3, -0.2 }, { 0.6, 0.9 } }
      local v = { { 1.0, -0.3 }, { 0.2, 0.9 }, { -0.7, 0.5 }, { 1.4, -0.6 } }
      local bm = ltc.tensor({ { true, false, true, true }, { false, true, true, false }, { true, true, false, true } }, "bool")
      local fm = ltc.tensor({ { 0.1, -0.5, 0.3, 0 }, { 0.7, 0.2, -1.0, 0.4 }, { -0.3, 0.6, 0.2, -0.8 } }, "float64")
      local st = ltc.tensor({ 8, 40 }, "int64")
      gradcheck(function(a, b, c) return (ltc.scaled_dot_product_attention(a, b, c, false, 0.7, 0.5, st, bm)) end, { q, k, v })
      gradcheck(function(a, b, c) return (ltc.scaled_dot_product_attention(a, b, c, true, 0.7, 0.2, st, fm)) end, { q, k, v })
      -- a float mask's own gradient exists at dropout_p = 0 only (the op raises otherwise)
      gradcheck(function(a, m) return (ltc.scaled_dot_product_attention(a, a, a, false, 0.7, 0, st, m)) end,
        { q, { { 0.1, -0.5, 0.3 }, { 0.7, 0.2, -1.0 }, { -0.3, 0.6, 0.2 } } })
    end,
    lstm_layer = function()
      -- T 3, B 2, H 2: input_proj [3, 2, 8], h0 and c0 [2, 2], weight_hh [8, 2]; both outputs
      -- that carry gradients (output and c_seq) side by side, forward and reverse
      local p = {}
      for t = 1, 3 do
        p[t] = {}
        for b = 1, 2 do
          p[t][b] = {}
          for j = 1, 8 do p[t][b][j] = math.sin(t * 1.3 + b * 0.7 + j * 0.9) end
        end
      end
      local h0, c0 = { { 0.3, -0.5 }, { 0.8, 0.1 } }, { { -0.6, 0.4 }, { 0.2, -0.9 } }
      local w = {}
      for k = 1, 8 do w[k] = { math.cos(k * 0.8) * 0.7, math.sin(k * 1.7) * 0.6 } end
      for _, rev in ipairs { false, true } do
        gradcheck(function(a, h, c, ww)
          local out, c_seq = ltc.lstm_layer(a, h, c, ww, rev)
          return ltc.cat({ out, c_seq }, 3)
        end, { p, h0, c0, w })
      end
    end,
    gru_layer = function()
      -- T 3, B 2, H 2: input_proj [3, 2, 6], h0 [2, 2], weight_hh [6, 2], bias_hh [6]
      local p = {}
      for t = 1, 3 do
        p[t] = {}
        for b = 1, 2 do
          p[t][b] = {}
          for j = 1, 6 do p[t][b][j] = math.sin(t * 1.1 + b * 0.6 + j * 0.8) end
        end
      end
      local h0 = { { 0.3, -0.5 }, { 0.8, 0.1 } }
      local w, bias = {}, {}
      for k = 1, 6 do
        w[k] = { math.cos(k * 0.9) * 0.7, math.sin(k * 1.3) * 0.6 }
        bias[k] = math.cos(k * 2.1) * 0.5
      end
      for _, rev in ipairs { false, true } do
        gradcheck(function(a, h, ww, bb) return (ltc.gru_layer(a, h, ww, bb, rev)) end,
          { p, h0, w, bias })
      end
    end,
  }
end
