--- ltc.nn transformer decoder (PyTorch's nn.TransformerDecoderLayer, nn.TransformerDecoder
-- and nn.Transformer), added to ltc.nn by lua/ltc/nn.lua: require("ltc.nn_transformer")(nn, F),
-- after ltc.nn_attention (MultiheadAttention, TransformerEncoderLayer, TransformerEncoder).
-- Submodule names, mask conventions and initialisation are PyTorch's, so state dicts carry
-- over (ModuleList children numbered from 1: "layers.1.self_attn.in_proj_weight");
-- spec/transformer_decoder_spec.lua compares outputs and gradients with PyTorch's.
local core = require "ltc.core"
local raise = core._raise -- an error at the caller's line, outside lua/ltc/
local ltc = require "ltc"
local ctor_args = require "ltc.nn_positional" -- PyTorch's positional constructor arguments

return function(nn)
  local check_options, set, check_size = nn.check_options, nn.option_set, nn.check_size

  -- the call's options: an options table, or PyTorch's positional masks after the inputs
  -- (names in PyTorch's order), told apart by a tensor (or nil followed by more) in first place
  local function call_opts(name, names, first, ...)
    if ltc.is_tensor(first) or (first == nil and select("#", ...) > 0) then
      if select("#", ...) >= #names then
        raise(string.format("%s: at most %d masks and flags after the inputs (%s), got %d", name,
          #names, table.concat(names, ", "), select("#", ...) + 1))
      end
      local o = {}
      for i, k in ipairs(names) do
        if i == 1 then o[k] = first else o[k] = (select(i - 1, ...)) end
      end
      return o
    end
    return check_options(name, first, set(table.unpack(names)), 3)
  end

  local function need_tensor(name, what, v)
    if not ltc.is_tensor(v) then
      raise(string.format("%s: %s must be a tensor, got %s", name, what, ltc.typename(v)))
    end
  end

  local function copies(name, layer, num_layers)
    if not nn.is_module(layer) then
      raise(string.format("%s: bad argument #1 (decoder_layer: an ltc.nn module expected, got %s)",
        name, ltc.typename(layer)))
    end
    check_size(name, "num_layers", num_layers)
    local layers = {}
    for i = 1, num_layers do layers[i] = layer:clone() end
    return nn.ModuleList(layers)
  end

  --- nn.TransformerDecoderLayer(d_model, nhead [, {dim_feedforward=2048, dropout=0.1,
  -- activation="relu"|"gelu", layer_norm_eps=1e-5, batch_first=false, norm_first=false,
  -- bias=true}]): self-attention over tgt, attention over memory (cross-attention) and a
  -- feed-forward block, each with a residual; post-norm (x = norm(x + block(x))) or, with
  -- norm_first, pre-norm (x = x + block(norm(x))). PyTorch's submodule names (self_attn,
  -- multihead_attn, linear1, linear2, norm1, norm2, norm3). layer(tgt, memory [, {tgt_mask,
  -- memory_mask, tgt_key_padding_mask, memory_key_padding_mask, tgt_is_causal,
  -- memory_is_causal}]), or PyTorch's positional layer(tgt, memory, tgt_mask [, memory_mask [,
  -- tgt_key_padding_mask [, memory_key_padding_mask [, tgt_is_causal [, memory_is_causal]]]]]).
  -- tgt [T, N, E] and memory [S, N, E] ([N, T, E] and [N, S, E] with batch_first; [T, E] and
  -- [S, E] unbatched); masks as nn.MultiheadAttention's (bool: true is not attended; float:
  -- added to the scores): tgt_mask [T, T], memory_mask [T, S], key padding masks [N, T] and
  -- [N, S]. tgt_is_causal with no tgt_mask masks the future (PyTorch 2's flag; 1.13 has none).
  nn.TransformerDecoderLayer = nn.class("TransformerDecoderLayer")
  function nn.TransformerDecoderLayer:__init(d, nhead, ...)
    nn._private.transformer_layer(self, "TransformerDecoderLayer", d, nhead, 3, ...)
  end

  local layer_names = { "tgt_mask", "memory_mask", "tgt_key_padding_mask",
    "memory_key_padding_mask", "tgt_is_causal", "memory_is_causal" }

  function nn.TransformerDecoderLayer:forward(tgt, memory, ...)
    local o = call_opts("TransformerDecoderLayer", layer_names, ...)
    need_tensor("TransformerDecoderLayer", "tgt", tgt)
    need_tensor("TransformerDecoderLayer", "memory", memory)
    local function sa(x)
      return self.dropout1(self.self_attn(x, x, x, { attn_mask = o.tgt_mask, key_padding_mask =
        o.tgt_key_padding_mask, need_weights = false, is_causal = o.tgt_is_causal }))
    end
    local function mha(x)
      return self.dropout2(self.multihead_attn(x, memory, memory, { attn_mask = o.memory_mask,
        key_padding_mask = o.memory_key_padding_mask, need_weights = false,
        is_causal = o.memory_is_causal }))
    end
    local function ff(x)
      local h = self.linear1(x)
      h = self.activation == "gelu" and h:gelu() or h:relu()
      return self.dropout3(self.linear2(self.dropout(h)))
    end
    local x = tgt
    if self.norm_first then
      x = x + sa(self.norm1(x))
      x = x + mha(self.norm2(x))
      x = x + ff(self.norm3(x))
    else
      x = self.norm1(x + sa(x))
      x = self.norm2(x + mha(x))
      x = self.norm3(x + ff(x))
    end
    return x
  end

  --- nn.TransformerDecoder(decoder_layer, num_layers [, norm]): num_layers copies of
  -- decoder_layer (decoder_layer:clone(), PyTorch's deepcopy: each starts with its weights
  -- and trains apart) as the ModuleList `layers`, then the optional module `norm`; also
  -- nn.TransformerDecoder(layer, n, {norm = m}). dec(tgt, memory [, {tgt_mask, memory_mask,
  -- tgt_key_padding_mask, memory_key_padding_mask, tgt_is_causal, memory_is_causal}]) or
  -- PyTorch's positional dec(tgt, memory, tgt_mask, memory_mask, ...): each layer in order
  -- with the same masks (see nn.TransformerDecoderLayer), then norm.
  nn.TransformerDecoder = nn.class("TransformerDecoder")
  function nn.TransformerDecoder:__init(layer, num_layers, norm, ...)
    if select("#", ...) > 0 then
      raise("TransformerDecoder: at most 3 arguments (decoder_layer, num_layers, norm)")
    end
    if type(norm) == "table" and not nn.is_module(norm) then
      norm = check_options("TransformerDecoder", norm, set("norm"), 3).norm
    end
    if norm ~= nil and not nn.is_module(norm) then
      raise("TransformerDecoder: norm must be an ltc.nn module or nil, got " .. ltc.typename(norm))
    end
    self.layers = copies("TransformerDecoder", layer, num_layers)
    self.num_layers = num_layers
    if norm then self.norm = norm end
  end
  function nn.TransformerDecoder:forward(tgt, memory, ...)
    local o = call_opts("TransformerDecoder", layer_names, ...)
    local x = tgt
    for _, m in ipairs(self.layers:children()) do x = m(x, memory, o) end
    if self.norm then x = self.norm(x) end
    return x
  end

  --- nn.Transformer([{d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
  -- dim_feedforward=2048, dropout=0.1, activation="relu", custom_encoder, custom_decoder,
  -- layer_norm_eps=1e-5, batch_first=false, norm_first=false, bias=true}]), or the same
  -- positionally (PyTorch's order): `encoder`, a TransformerEncoder of num_encoder_layers
  -- layers with a final LayerNorm, and `decoder`, a TransformerDecoder likewise (or the custom
  -- modules given); every parameter with 2 dims or more then drawn by
  -- nn.init.xavier_uniform_ (PyTorch's _reset_parameters). m(src, tgt [, {src_mask,
  -- tgt_mask, memory_mask, src_key_padding_mask, tgt_key_padding_mask,
  -- memory_key_padding_mask, src_is_causal, tgt_is_causal, memory_is_causal}]) or PyTorch's
  -- positional m(src, tgt, src_mask, tgt_mask, memory_mask, ...): memory = encoder(src,
  -- src_mask, src_key_padding_mask), then decoder(tgt, memory, ...). src [S, N, E], tgt [T,
  -- N, E] ([N, S, E], [N, T, E] with batch_first; [S, E], [T, E] unbatched); returns [T, N,
  -- E] (as tgt). The causal tgt_mask: nn.Transformer.generate_square_subsequent_mask(T).
  nn.Transformer = nn.class("Transformer")
  local t_order = { "d_model", "nhead", "num_encoder_layers", "num_decoder_layers",
    "dim_feedforward", "dropout", "activation", "custom_encoder", "custom_decoder",
    "layer_norm_eps", "batch_first", "norm_first", "bias" }
  function nn.Transformer:__init(...)
    local args = table.pack(...)
    -- a module last (custom_encoder or custom_decoder given positionally) is no options table
    if nn.is_module(args[args.n]) then args.n, args[args.n + 1] = args.n + 1, {} end
    local o = check_options("Transformer", ctor_args("Transformer", "()", t_order,
      table.unpack(args, 1, args.n)), set(table.unpack(t_order)), 2)
    local d, nhead = o.d_model or 512, o.nhead or 8
    for _, k in ipairs({ "d_model", "nhead", "num_encoder_layers", "num_decoder_layers" }) do
      if o[k] ~= nil then check_size("Transformer", k, o[k]) end
    end
    for _, k in ipairs({ "custom_encoder", "custom_decoder" }) do
      if o[k] ~= nil and not nn.is_module(o[k]) then
        raise(string.format("Transformer: %s must be an ltc.nn module or nil, got %s", k,
          ltc.typename(o[k])))
      end
    end
    local lo = { dim_feedforward = o.dim_feedforward, dropout = o.dropout,
      activation = o.activation, layer_norm_eps = o.layer_norm_eps, batch_first = o.batch_first,
      norm_first = o.norm_first, bias = o.bias }
    local eps, bias = o.layer_norm_eps or 1e-5, o.bias ~= false
    self.encoder = o.custom_encoder or nn.TransformerEncoder(nn.TransformerEncoderLayer(d, nhead, lo),
      o.num_encoder_layers or 6, nn.LayerNorm(d, { eps = eps, bias = bias }))
    self.decoder = o.custom_decoder or nn.TransformerDecoder(nn.TransformerDecoderLayer(d, nhead, lo),
      o.num_decoder_layers or 6, nn.LayerNorm(d, { eps = eps, bias = bias }))
    self.d_model, self.nhead, self.batch_first = d, nhead, o.batch_first == true
    ltc.no_grad(function()
      for _, p in ipairs(self:parameters()) do
        if p:dim() > 1 then nn.init.xavier_uniform_(p) end
      end
    end)
  end

  local t_names = { "src_mask", "tgt_mask", "memory_mask", "src_key_padding_mask",
    "tgt_key_padding_mask", "memory_key_padding_mask", "src_is_causal", "tgt_is_causal",
    "memory_is_causal" }
  local function sz(x) return "[" .. table.concat(x:size(), ", ") .. "]" end

  function nn.Transformer:forward(src, tgt, ...)
    local o = call_opts("Transformer", t_names, ...)
    need_tensor("Transformer", "src", src)
    need_tensor("Transformer", "tgt", tgt)
    local bd = self.batch_first and 1 or 2
    if src:dim() == 3 and tgt:dim() == 3 and src:size(bd) ~= tgt:size(bd) then
      raise(string.format("Transformer: the batch number of src %s and tgt %s must be equal (dim %d%s)",
        sz(src), sz(tgt), bd, self.batch_first and ", batch_first" or ""))
    end
    if src:size(-1) ~= self.d_model or tgt:size(-1) ~= self.d_model then
      raise(string.format("Transformer: the feature number of src %s and tgt %s must be equal to "
        .. "d_model %d", sz(src), sz(tgt), self.d_model))
    end
    local memory = self.encoder(src, { mask = o.src_mask, src_key_padding_mask =
      o.src_key_padding_mask, is_causal = o.src_is_causal })
    return self.decoder(tgt, memory, { tgt_mask = o.tgt_mask, memory_mask = o.memory_mask,
      tgt_key_padding_mask = o.tgt_key_padding_mask, memory_key_padding_mask =
      o.memory_key_padding_mask, tgt_is_causal = o.tgt_is_causal, memory_is_causal =
      o.memory_is_causal })
  end

  --- nn.Transformer.generate_square_subsequent_mask(sz [, dtype="float32"]), also
  -- m:generate_square_subsequent_mask(sz): the causal float mask [sz, sz] (PyTorch's static
  -- method), -inf above the diagonal (the future) and 0 elsewhere.
  function nn.Transformer.generate_square_subsequent_mask(a, b, c)
    if type(a) == "table" then a, b = b, c end -- m:generate_square_subsequent_mask(sz)
    check_size("generate_square_subsequent_mask", "sz", a)
    return ltc.full({ a, a }, -math.huge, b or "float32"):triu(1)
  end
end
