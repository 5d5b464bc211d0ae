--- ltc.nn attention (PyTorch's nn.functional.scaled_dot_product_attention,
-- nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.TransformerEncoder), added to ltc.nn
-- by lua/ltc/nn.lua: require("ltc.nn_attention")(nn, F). Parameter names, initialisation and
-- mask conventions are PyTorch's, so state dicts carry over (spec/nn_layers_spec.lua
-- compares outputs).
--
-- scaled_dot_product_attention is one op (codegen/ops.yaml) whose CPU kernel works block by
-- block (src/cpu/attention.c: the [L, S] scores are never materialised, forward or
-- backward), dropout included (the .dropout overloads draw each keep decision from the
-- generator state passed as an operand, and the backward draws the same again). Written here
-- over the ops instead, materialising the scores of each head: MultiheadAttention when it
-- returns the attention weights (need_weights, its default), and dropout with a float mask
-- that requires grad.
local core = require "ltc.core"
local raise = core._raise -- an error at the caller's line, outside lua/ltc/
local ltc = require "ltc"
local ctor_args = require "ltc.nn_positional" -- PyTorch's positional constructor arguments

return function(nn, F)
  local check_options, set, check_size = nn.check_options, nn.option_set, nn.check_size
  local uniform = nn._private.uniform

  -- softmax(q k^T * scale + mask) [with dropout] v over the ops, and the weights: the path
  -- for MultiheadAttention's need_weights and for dropout with a float mask requiring grad.
  local function composite(q, k, v, mask, is_causal, scale, p)
    local scores = q:matmul(k:transpose(-2, -1)) * scale
    if is_causal then mask = ltc.ones({ q:size(-2), k:size(-2) }, "bool"):tril() end
    if mask then
      if mask:dtype() == "bool" then scores = scores:masked_fill(mask:logical_not(), -math.huge)
      else scores = scores + mask end
    end
    local w = scores:softmax(-1)
    if p > 0 then w = F.dropout(w, p, true) end
    return w:matmul(v), w
  end

  -- PyTorch's positional arguments after q, k, v, as an options table.
  local sdpa_options = set("attn_mask", "dropout_p", "is_causal", "scale")
  local function positional(a4, ...)
    local n = select("#", ...)
    local dropout_p, is_causal, scale = ...
    if n > 3 then
      raise(string.format("scaled_dot_product_attention: at most 7 arguments (q, k, v, attn_mask, "
        .. "dropout_p, is_causal, scale), got %d", n + 4))
    end
    if a4 ~= nil and not ltc.is_tensor(a4) then
      raise("scaled_dot_product_attention: argument #4 (attn_mask) must be a tensor or nil, not "
        .. ltc.typename(a4))
    end
    if dropout_p ~= nil and type(dropout_p) ~= "number" then
      raise("scaled_dot_product_attention: argument #5 (dropout_p) must be a number, not "
        .. ltc.typename(dropout_p))
    end
    if is_causal ~= nil and type(is_causal) ~= "boolean" then
      raise("scaled_dot_product_attention: argument #6 (is_causal) must be a boolean, not "
        .. ltc.typename(is_causal))
    end
    if scale ~= nil and type(scale) ~= "number" then
      raise("scaled_dot_product_attention: argument #7 (scale) must be a number or nil, not "
        .. ltc.typename(scale))
    end
    return { attn_mask = a4, dropout_p = dropout_p, is_causal = is_causal, scale = scale }
  end

  --- F.scaled_dot_product_attention(q [..., L, E], k [..., S, E], v [..., S, Ev] [,
  -- {attn_mask, dropout_p=0, is_causal=false, scale=1/sqrt(E)}]) -> [..., L, Ev]:
  -- softmax(q k^T * scale + mask) v, q, k and v of one floating dtype with the same leading
  -- dims. attn_mask (broadcast to [..., L, S]) is a bool tensor whose true entries take part
  -- (PyTorch's convention) or a float tensor of q's dtype added to the scores; is_causal lets
  -- position i see positions <= i (the top-left causal mask). A row that no key may see gives
  -- NaN, as PyTorch; its gradient reaches v (NaN) but not q or k when the mask is bool (the
  -- masked scores are constants), and all three (NaN) when the mask is float. A float mask
  -- that requires grad gets one (materialising [..., L, S]). dropout_p in [0, 1]: when > 0
  -- each attention weight is dropped with probability dropout_p and the rest scaled by 1 / (1
  -- - dropout_p) (always, as PyTorch's function does), inside the fused op
  -- (ltc.scaled_dot_product_attention's .dropout overloads, given no rng_state: the op takes
  -- the default generator's state and advances it by the numel of [..., L, S], so each call
  -- draws a fresh mask and a loop does not recompile); with a float mask that requires grad, over the ops.
  -- Also PyTorch's positional form F.scaled_dot_product_attention(q, k, v, attn_mask (a tensor
  -- or nil), dropout_p, is_causal, scale), told apart from the options table by its 4th
  -- argument (a tensor or nil followed by more) or by a 5th.
  function F.scaled_dot_product_attention(q, k, v, opts, ...)
    if select("#", ...) > 0 or ltc.is_tensor(opts) then
      opts = positional(opts, ...)
    else
      opts = check_options("scaled_dot_product_attention", opts, sdpa_options, 2)
    end
    if opts.is_causal and opts.attn_mask then
      raise("scaled_dot_product_attention: give attn_mask or is_causal, not both")
    end
    local scale = opts.scale or 1 / math.sqrt(q:size(-1))
    local p = opts.dropout_p or 0
    if type(p) ~= "number" or not (p >= 0 and p <= 1) then
      raise(string.format("scaled_dot_product_attention: dropout_p must be a number between 0 and "
        .. "1, got %s", type(p) == "number" and string.format("%g", p) or ltc.typename(p)))
    end
    local mask = opts.attn_mask
    if p > 0 and mask and mask.requires_grad and mask:dtype() ~= "bool" then
      local E, L, S = q:size(-1), q:size(-2), k:size(-2)
      if k:size(-1) ~= E or v:size(-2) ~= S then
        raise(string.format("scaled_dot_product_attention: q [..., %d, %d], k [..., %d, %d] and v "
          .. "[..., %d, %d] do not fit", L, E, S, k:size(-1), v:size(-2), v:size(-1)))
      end
      return (composite(q, k, v, mask, opts.is_causal, scale, p))
    end
    local out
    if p > 0 then
      -- rng_state nil: the op takes the default generator's state and advances it by what
      -- it draws (ops.yaml's random: key)
      out = ltc.scaled_dot_product_attention(q, k, v, opts.is_causal == true, scale, p, nil, mask)
    elseif opts.attn_mask then
      out = ltc.scaled_dot_product_attention(q, k, v, false, scale, opts.attn_mask)
    else
      out = ltc.scaled_dot_product_attention(q, k, v, opts.is_causal == true, scale)
    end
    return out
  end

  local function xavier_uniform(rows, cols)
    return uniform({ rows, cols }, math.sqrt(6 / (rows + cols)))
  end

  --- nn.MultiheadAttention(embed_dim, num_heads [, {dropout=0, bias=true, batch_first=false,
  -- kdim=embed_dim, vdim=embed_dim}]): parameters in_proj_weight [3E, E] (xavier uniform),
  -- in_proj_bias [3E] (zeros), out_proj (Linear(E, E), bias zeros); when kdim or vdim is not
  -- E, PyTorch's separate q_proj_weight [E, E], k_proj_weight [E, kdim] and v_proj_weight [E,
  -- vdim] (each xavier uniform) instead of in_proj_weight. mha(query, key, value [,
  -- {key_padding_mask, need_weights=true,
  -- attn_mask, average_attn_weights=true, is_causal}]) with query [L, N, E] (batch_first: [N,
  -- L, E]; unbatched: [L, E], key [S, kdim] and value [S, vdim]), key [S, N, kdim] and value
  -- [S, N, vdim], returns the output of query's size and the
  -- attention weights [N, L, S] (averaged over heads; [N, heads, L, S] otherwise; unbatched
  -- without the N; nil unless need_weights). Masks follow
  -- nn.MultiheadAttention: key_padding_mask [N, S] and a bool attn_mask [L, S] mark with true
  -- what must NOT be attended; a float attn_mask is added to the scores.
  nn.MultiheadAttention = nn.class("MultiheadAttention")
  function nn.MultiheadAttention:__init(E, heads, ...)
    check_size("MultiheadAttention", "embed_dim", E)
    check_size("MultiheadAttention", "num_heads", heads)
    if E % heads ~= 0 then
      raise(string.format("MultiheadAttention: embed_dim %d must be divisible by num_heads %d", E, heads))
    end
    local opts = check_options("MultiheadAttention", ctor_args("MultiheadAttention", "num_heads",
      { "dropout", "bias" }, ...), set("dropout", "bias", "batch_first", "kdim", "vdim"), 3)
    local kdim, vdim = opts.kdim or E, opts.vdim or E
    check_size("MultiheadAttention", "kdim", kdim)
    check_size("MultiheadAttention", "vdim", vdim)
    self.embed_dim, self.num_heads, self.head_dim = E, heads, E // heads
    self.kdim, self.vdim = kdim, vdim
    self.dropout, self.batch_first = opts.dropout or 0, opts.batch_first == true
    if kdim == E and vdim == E then
      self:register_parameter("in_proj_weight", xavier_uniform(3 * E, E))
    else
      self:register_parameter("q_proj_weight", xavier_uniform(E, E))
      self:register_parameter("k_proj_weight", xavier_uniform(E, kdim))
      self:register_parameter("v_proj_weight", xavier_uniform(E, vdim))
    end
    if opts.bias ~= false then self:register_parameter("in_proj_bias", ltc.zeros(3 * E)) end
    self.out_proj = nn.Linear(E, E, { bias = opts.bias ~= false })
    if self.out_proj.bias then ltc.no_grad(function() self.out_proj.bias:zero_() end) end
  end

  -- the weight [E, E], [E, kdim] or [E, vdim] that projects query (i = 1), key (2) or value (3)
  local function proj_weight(self, i)
    local w = self.in_proj_weight
    if w then return w:narrow(1, (i - 1) * self.embed_dim + 1, self.embed_dim) end
    return self[({ "q_proj_weight", "k_proj_weight", "v_proj_weight" })[i]]
  end

  local function sz(x) return "[" .. table.concat(x:size(), ", ") .. "]" end
  local function is_float(x) return x:is_floating_point() end
  -- PyTorch's checks of a batched call (query [L, N, E], or [N, L, E] with batch_first), each
  -- error naming MultiheadAttention and the sizes or dtypes, not an internal reshape or add
  local function check_inputs(self, query, key, value, opts, L, N, S)
    local E, bf, H = self.embed_dim, self.batch_first, self.num_heads
    if key:dim() ~= 3 or value:dim() ~= 3 then
      raise(string.format("MultiheadAttention: a batched (3-d) query %s needs 3-d key and value, "
        .. "got key %s and value %s", sz(query), sz(key), sz(value)))
    end
    local kd, vd = self.kdim, self.vdim
    if key:size(3) ~= kd or value:size(3) ~= vd or key:size(bf and 1 or 2) ~= N
      or value:size(bf and 1 or 2) ~= N or value:size(bf and 2 or 1) ~= key:size(bf and 2 or 1) then
      raise(string.format("MultiheadAttention: key %s and value %s must be %s and %s with query %s "
        .. "(kdim %d, vdim %d%s)", sz(key), sz(value), bf and "[N, S, kdim]" or "[S, N, kdim]",
        bf and "[N, S, vdim]" or "[S, N, vdim]", sz(query), kd, vd, bf and ", batch_first" or ""))
    end
    local wd = proj_weight(self, 1):dtype()
    for _, t in ipairs { { "query", query }, { "key", key }, { "value", value } } do
      if t[2]:dtype() ~= wd then
        raise(string.format("MultiheadAttention: %s dtype %s does not match the weights' dtype %s "
          .. "(convert the %s with :to(\"%s\") or the module with :to(\"%s\"))", t[1],
          t[2]:dtype(), wd, t[1], wd, t[2]:dtype()))
      end
    end
    local kp, am = opts.key_padding_mask, opts.attn_mask
    if kp ~= nil then
      if not ltc.is_tensor(kp) then
        raise("MultiheadAttention: key_padding_mask must be a tensor, got " .. ltc.typename(kp))
      end
      if kp:dtype() ~= "bool" and not is_float(kp) then
        raise("MultiheadAttention: only bool and floating key_padding_mask are supported, got "
          .. kp:dtype())
      end
      if kp:dim() ~= 2 or kp:size(1) ~= N or kp:size(2) ~= S then
        raise(string.format("MultiheadAttention: key_padding_mask must be [N, S] = [%d, %d], got %s",
          N, S, sz(kp)))
      end
    end
    if am ~= nil then
      if not ltc.is_tensor(am) then
        raise("MultiheadAttention: attn_mask must be a tensor, got " .. ltc.typename(am))
      end
      if am:dtype() ~= "bool" and not is_float(am) then
        raise("MultiheadAttention: only bool and floating attn_mask are supported, got " .. am:dtype())
      end
      if am:dim() == 2 then
        if am:size(1) ~= L or am:size(2) ~= S then
          raise(string.format("MultiheadAttention: the 2-d attn_mask is %s, but should be [%d, %d] "
            .. "([L, S])", sz(am), L, S))
        end
      elseif am:dim() == 3 then
        if am:size(1) ~= N * H or am:size(2) ~= L or am:size(3) ~= S then
          raise(string.format("MultiheadAttention: the 3-d attn_mask is %s, but should be [%d, %d, %d] "
            .. "([N * num_heads, L, S])", sz(am), N * H, L, S))
        end
      else
        raise(string.format("MultiheadAttention: attn_mask must be 2-d [L, S] or 3-d [N * num_heads, "
          .. "L, S], got %s", sz(am)))
      end
    end
  end

  function nn.MultiheadAttention:forward(query, key, value, opts)
    opts = check_options("MultiheadAttention", opts, set("key_padding_mask", "need_weights",
      "attn_mask", "average_attn_weights", "is_causal"), 2)
    local E, Hh, D = self.embed_dim, self.num_heads, self.head_dim
    for i, v in ipairs({ query, key or query, value or key or query }) do
      if not ltc.is_tensor(v) then
        raise(string.format("MultiheadAttention: %s must be a tensor, got %s",
          ({ "query", "key", "value" })[i], ltc.typename(v)))
      end
    end
    key, value = key or query, value or key or query
    if query:dim() == 2 then return self:_unbatched(query, key, value, opts) end
    if query:dim() ~= 3 or query:size(3) ~= E then
      raise(string.format("MultiheadAttention: query of size [%s] must be 2-d (unbatched) or 3-d "
        .. "with embed_dim %d last", table.concat(query:size(), ", "), E))
    end
    -- batch_first: [N, len, E] is projected as it is (no transposed copies of the inputs
    -- and output); otherwise [len, N, E]
    local bf = self.batch_first
    local L, N, S = query:size(bf and 2 or 1), query:size(bf and 1 or 2), key:size(bf and 2 or 1)
    local w, b = self.in_proj_weight, self.in_proj_bias
    check_inputs(self, query, key, value, opts, L, N, S)
    local function proj(x, i)
      local bi = b and b:narrow(1, (i - 1) * E + 1, E)
      return F.linear(x, proj_weight(self, i), bi) -- [len, N, E] (batch_first: [N, len, E])
    end
    -- [len, N, E] (or [N, len, E]) -> [N, H, len, D]
    local function heads(x, len)
      if bf then return x:reshape({ N, len, Hh, D }):permute({ 1, 3, 2, 4 }) end
      return x:reshape({ len, N, Hh, D }):permute({ 2, 3, 1, 4 })
    end
    local p = self.training and self.dropout or 0
    local need = opts.need_weights ~= false
    local am, kp = opts.attn_mask, opts.key_padding_mask
    if w and bf and rawequal(query, key) and rawequal(key, value) and not kp and not need and p == 0
      and (opts.is_causal or am == nil) then
      -- self-attention: one in-projection GEMM [N, L, 3E] and the packed kernel, which reads
      -- the heads where the projection put them and writes the output where out_proj reads it
      -- (no permuted copies of q, k, v and the output, forward or backward)
      local qkv = F.linear(query, w, b)
      local out = ltc.scaled_dot_product_attention_packed(qkv, Hh, opts.is_causal == true, 1 / math.sqrt(D))
      return self.out_proj(out), nil
    end
    local q, k, v = heads(proj(query, 1), L), heads(proj(key, 2), S), heads(proj(value, 3), S)
    local out, weights
    if opts.is_causal and not kp and not need then
      -- is_causal is PyTorch's hint that attn_mask (if given) is the causal mask
      out = F.scaled_dot_product_attention(q, k, v, { is_causal = true, dropout_p = p })
    else
      -- the masks as one float mask added to the scores (-inf where not attended)
      local mask
      if opts.is_causal and am == nil then am = ltc.ones({ L, S }, "bool"):triu(1) end
      if am then
        if am:dim() == 3 then am = am:reshape({ N, Hh, L, S }) end
        if am:dtype() == "bool" then mask = ltc.zeros(am:size(), query:dtype()):masked_fill(am, -math.huge)
        else mask = am end
      end
      if kp then
        local m = kp:dtype() == "bool" and ltc.zeros(kp:size(), query:dtype()):masked_fill(kp, -math.huge) or kp
        m = m:reshape({ N, 1, 1, S })
        mask = mask and mask + m or m
      end
      if need then
        out, weights = composite(q, k, v, mask, false, 1 / math.sqrt(D), p)
      else
        out = F.scaled_dot_product_attention(q, k, v, { attn_mask = mask, dropout_p = p })
      end
    end
    if bf then out = out:permute({ 1, 3, 2, 4 }):reshape({ N, L, E }) -- [N, L, E]
    else out = out:permute({ 3, 1, 2, 4 }):reshape({ L, N, E }) end -- [L, N, E]
    out = self.out_proj(out)
    if not need then return out, nil end
    if opts.average_attn_weights ~= false then weights = weights:mean(2) end
    return out, weights
  end
  -- PyTorch's unbatched call: query [L, E], key and value [S, E], key_padding_mask [S],
  -- attn_mask [L, S] or [heads, L, S]; a batch of one (whatever batch_first says), the output
  -- [L, E] and the weights [L, S] ([heads, L, S] unaveraged). Self-attention stays so (key
  -- and value the same tensor as query), for the packed path.
  function nn.MultiheadAttention:_unbatched(query, key, value, opts)
    if key:dim() ~= 2 or value:dim() ~= 2 then
      raise(string.format("MultiheadAttention: an unbatched (2-d) query [%s] needs 2-d key and "
        .. "value, got key [%s] and value [%s]", table.concat(query:size(), ", "),
        table.concat(key:size(), ", "), table.concat(value:size(), ", ")))
    end
    if query:size(2) ~= self.embed_dim then
      raise(string.format("MultiheadAttention: unbatched query %s must be [L, E] with embed_dim %d",
        sz(query), self.embed_dim))
    end
    if key:size(1) ~= value:size(1) or key:size(2) ~= self.kdim or value:size(2) ~= self.vdim then
      raise(string.format("MultiheadAttention: unbatched key %s and value %s must be [S, kdim] and "
        .. "[S, vdim] (kdim %d, vdim %d)", sz(key), sz(value), self.kdim, self.vdim))
    end
    local kp = opts.key_padding_mask
    if kp ~= nil and (not ltc.is_tensor(kp) or kp:dim() ~= 1) then
      raise(string.format("MultiheadAttention: with an unbatched query, key_padding_mask must be "
        .. "1-d [S], got %s", ltc.is_tensor(kp) and "[" .. table.concat(kp:size(), ", ") .. "]"
        or ltc.typename(kp)))
    end
    if kp ~= nil and kp:size(1) ~= key:size(1) then
      raise(string.format("MultiheadAttention: key_padding_mask must be [S] = [%d] with key [%s], "
        .. "got [%d]", key:size(1), table.concat(key:size(), ", "), kp:size(1)))
    end
    local am = opts.attn_mask
    if ltc.is_tensor(am) and am:dim() == 2 and (am:size(1) ~= query:size(1) or am:size(2) ~= key:size(1)) then
      raise(string.format("MultiheadAttention: the 2-d attn_mask is %s, but should be [%d, %d] ([L, S])",
        sz(am), query:size(1), key:size(1)))
    end
    local bd = self.batch_first and 1 or 2
    local q = query:unsqueeze(bd)
    local k = rawequal(key, query) and q or key:unsqueeze(bd)
    local v = rawequal(value, key) and k or rawequal(value, query) and q or value:unsqueeze(bd)
    local o = {}
    for name, x in pairs(opts) do o[name] = x end
    o.key_padding_mask = kp and kp:unsqueeze(1)
    local out, weights = self:forward(q, k, v, o)
    return out:squeeze(bd), weights and weights:squeeze(1)
  end

  function nn.MultiheadAttention:extra_repr()
    if self.in_proj_weight then
      return string.format("embed_dim=%d, num_heads=%d", self.embed_dim, self.num_heads)
    end
    return string.format("embed_dim=%d, num_heads=%d, kdim=%d, vdim=%d", self.embed_dim,
      self.num_heads, self.kdim, self.vdim)
  end

  --- nn.TransformerEncoderLayer(d_model, nhead [, {dim_feedforward=2048, dropout=0.1,
  -- activation="relu"|"gelu", layer_norm_eps=1e-5, batch_first=false, norm_first=false,
  -- bias=true}]): self-attention and a feed-forward block, each with a residual; post-norm
  -- (x = norm(x + block(x))) or, with norm_first, pre-norm (x = x + block(norm(x))). PyTorch's
  -- submodule names (self_attn, linear1, linear2, norm1, norm2). layer(src [, {src_mask,
  -- src_key_padding_mask, is_causal}]), or PyTorch's positional layer(src, src_mask
  -- [, src_key_padding_mask [, is_causal]]).
  --- nn._private.transformer_layer(self, name, d, nhead, n_blocks, ...): the submodules of a
  -- Transformer encoder (n_blocks 2) or decoder (3: with multihead_attn, the cross-attention)
  -- layer from the constructor's arguments after nhead (a table of the options below, or
  -- PyTorch's positional ones), made in PyTorch's order: self_attn [, multihead_attn],
  -- linear1, dropout, linear2, norm1..n, dropout1..n; sets norm_first and activation.
  local function transformer_layer(self, name, d, nhead, n_blocks, ...)
    local order = { "dim_feedforward", "dropout", "activation", "layer_norm_eps", "batch_first",
      "norm_first", "bias" }
    local opts = check_options(name, ctor_args(name, "nhead", order, ...), set(table.unpack(order)), 3)
    local ff, p = opts.dim_feedforward or 2048, opts.dropout or 0.1
    local act = opts.activation or "relu"
    if act ~= "relu" and act ~= "gelu" then
      raise(name .. ": activation must be 'relu' or 'gelu', not '" .. tostring(act) .. "'")
    end
    check_size(name, "dim_feedforward", ff)
    local bias, eps = opts.bias ~= false, opts.layer_norm_eps or 1e-5
    local mha = { dropout = p, bias = bias, batch_first = opts.batch_first }
    self.self_attn = nn.MultiheadAttention(d, nhead, mha)
    if n_blocks == 3 then self.multihead_attn = nn.MultiheadAttention(d, nhead, mha) end
    self.linear1 = nn.Linear(d, ff, { bias = bias })
    self.dropout = nn.Dropout(p)
    self.linear2 = nn.Linear(ff, d, { bias = bias })
    self.norm_first = opts.norm_first == true
    for i = 1, n_blocks do self["norm" .. i] = nn.LayerNorm(d, { eps = eps, bias = bias }) end
    for i = 1, n_blocks do self["dropout" .. i] = nn.Dropout(p) end
    self.activation = act
  end
  nn._private.transformer_layer = transformer_layer

  nn.TransformerEncoderLayer = nn.class("TransformerEncoderLayer")
  function nn.TransformerEncoderLayer:__init(d, nhead, ...)
    transformer_layer(self, "TransformerEncoderLayer", d, nhead, 2, ...)
  end
  function nn.TransformerEncoderLayer:forward(src, opts, key_padding_mask, is_causal)
    if ltc.is_tensor(opts) or (opts == nil and (key_padding_mask ~= nil or is_causal ~= nil)) then
      opts = { src_mask = opts, src_key_padding_mask = key_padding_mask, is_causal = is_causal }
    end
    opts = check_options("TransformerEncoderLayer", opts, set("src_mask", "src_key_padding_mask", "is_causal"), 2)
    local function sa(x)
      local out = self.self_attn(x, x, x, { attn_mask = opts.src_mask, key_padding_mask =
        opts.src_key_padding_mask, need_weights = false, is_causal = opts.is_causal })
      return self.dropout1(out)
    end
    local function ff(x)
      local h = self.linear1(x)
      h = self.activation == "gelu" and h:gelu() or h:relu()
      return self.dropout2(self.linear2(self.dropout(h)))
    end
    local x = src
    if self.norm_first then
      x = x + sa(self.norm1(x))
      x = x + ff(self.norm2(x))
    else
      x = self.norm1(x + sa(x))
      x = self.norm2(x + ff(x))
    end
    return x
  end

  --- nn.TransformerEncoder(encoder_layer, num_layers [, norm]): num_layers copies of
  -- encoder_layer (encoder_layer:clone(), PyTorch's deepcopy: each starts with its weights
  -- and is trained apart; encoder_layer itself is not one of them) as the ModuleList
  -- `layers`, then the optional module `norm` (a LayerNorm), as PyTorch's submodule names
  -- (state dict "layers.1.self_attn.in_proj_weight", ...: ltc numbers ModuleList children
  -- from 1). Also an options table {norm, enable_nested_tensor, mask_check}, the last two
  -- accepted and ignored (PyTorch's fast-path switches). enc(src [, mask [,
  -- src_key_padding_mask [, is_causal]]]) or enc(src, {mask, src_key_padding_mask,
  -- is_causal}): each layer in order with src_mask = mask and the rest as they are, then norm.
  nn.TransformerEncoder = nn.class("TransformerEncoder")
  function nn.TransformerEncoder:__init(layer, num_layers, ...)
    if not nn.is_module(layer) then
      raise("TransformerEncoder: bad argument #1 (encoder_layer: an ltc.nn module expected, got "
        .. ltc.typename(layer) .. ")")
    end
    check_size("TransformerEncoder", "num_layers", num_layers)
    local allowed = set("norm", "enable_nested_tensor", "mask_check")
    local opts
    if nn.is_module((...)) then -- a norm module given positionally: not the options table
      opts = check_options("TransformerEncoder", ctor_args("TransformerEncoder", "norm",
        { "enable_nested_tensor", "mask_check" }, select(2, ...)), allowed, 3)
      if opts.norm ~= nil then
        raise("TransformerEncoder: got multiple values for 'norm' (positional and in the options table)")
      end
      opts.norm = (...)
    else
      opts = check_options("TransformerEncoder", ctor_args("TransformerEncoder", "num_layers",
        { "norm", "enable_nested_tensor", "mask_check" }, ...), allowed, 3)
    end
    if opts.norm ~= nil and not nn.is_module(opts.norm) then
      raise("TransformerEncoder: norm must be an ltc.nn module or nil, got " .. ltc.typename(opts.norm))
    end
    local layers = {}
    for i = 1, num_layers do layers[i] = layer:clone() end
    self.layers = nn.ModuleList(layers)
    self.num_layers = num_layers
    if opts.norm then self.norm = opts.norm end
  end
  function nn.TransformerEncoder:forward(src, mask, key_padding_mask, is_causal)
    local opts
    if ltc.is_tensor(mask) or (mask == nil and (key_padding_mask ~= nil or is_causal ~= nil)) then
      opts = { mask = mask, src_key_padding_mask = key_padding_mask, is_causal = is_causal }
    else
      opts = check_options("TransformerEncoder", mask, set("mask", "src_key_padding_mask", "is_causal"), 2)
    end
    local layer_opts = { src_mask = opts.mask, src_key_padding_mask = opts.src_key_padding_mask,
      is_causal = opts.is_causal }
    local x = src
    for _, m in ipairs(self.layers:children()) do x = m(x, layer_opts) end
    if self.norm then x = self.norm(x) end
    return x
  end
end
