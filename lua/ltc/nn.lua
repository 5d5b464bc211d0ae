--- ltc.nn: neural-network modules and losses on top of the ops (PyTorch's torch.nn).
--
--   local model = ltc.nn.Sequential(ltc.nn.Linear(784, 256), ltc.nn.ReLU(), ltc.nn.Linear(256, 10))
--   local loss = ltc.nn.CrossEntropyLoss()(model(x), labels)     -- labels are 1-based
--
-- A module is a table with a forward(self, ...) method; calling the module calls forward.
-- Parameters are leaf tensors that require grad; module:parameters() lists them (in
-- registration order, submodules depth first), module:state_dict() maps dotted names to
-- detached aliases of them (every name of a tied weight), module:load_state_dict(sd) copies
-- values into them in place (p:copy_(v), as PyTorch). Initialisation follows
-- PyTorch's defaults and draws from ltc's seeded generator (ltc.manual_seed).
-- ltc.nn.functional holds the stateless functions the modules use.
--
-- This file makes ltc.nn.functional (each function's arguments checked), the option checks
-- the other files share, and nn.utils; the rest is in nn_functional.lua (functionals),
-- nn_module.lua (nn.Module), nn_init.lua (nn.init), nn_basic.lua (the first layers),
-- nn_loss.lua, nn_rnn.lua, nn_layers.lua and nn_attention.lua, each a function(nn, F) called
-- below.
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local ltc = require "ltc"

local nn = {}

-- Every ltc.nn.functional function takes a tensor first (the losses an input and a target,
-- the regression losses' target may be a number; cosine_embedding_loss x1, x2 and y; some a
-- weight or a size second): another value raises "<name>: bad argument #k (... expected, got
-- ...)" at the caller's line (ltc._raise), not "attempt to index a nil value" inside ltc.nn.
-- F checks as each function is defined (its __newindex stores the checking function), so the
-- modules, which keep the functions they call, check too; ltc.help shows fn's doc comment.
local F
do
  local typename, select, mtype = ltc.typename, select, math.type
  local pack, unpack = table.pack, table.unpack
  -- argument kinds: t a tensor, n a tensor or a number, i an integer, s an integer or a table
  -- of sizes, i? nil or an integer
  local kind = { t = "ltc.Tensor", n = "ltc.Tensor or number", i = "an integer",
    s = "a size or a table of sizes", ["i?"] = "an integer or nil" }
  local two, three = { "t", "t" }, { "t", "t", "t" }
  local regression = { "t", "n" }
  local args = { nll_loss = two, cross_entropy = two, binary_cross_entropy = two,
    binary_cross_entropy_with_logits = two, kl_div = two, cosine_embedding_loss = three,
    mse_loss = regression, l1_loss = regression, smooth_l1_loss = regression,
    huber_loss = regression, embedding = two, cosine_similarity = two, linear = two, conv1d = two, conv2d = two,
    conv_transpose2d = two, scaled_dot_product_attention = three, group_norm = { "t", "i" },
    layer_norm = { "t", "s" }, adaptive_avg_pool2d = { "t", "s" }, flatten = { "t", "i?", "i?" } }
  -- the kinds as the letters of core._bad_arg, which tests them all in one C call
  local function codes_of(kinds)
    local c = {}
    for i, k in ipairs(kinds) do c[i] = k == "i?" and "?" or k end
    return table.concat(c)
  end
  local bad_arg = require("ltc.core")._bad_arg
  local function check(name, kinds, codes, ...)
    local i = bad_arg(codes, ...)
    if i then
      local v, k = select(i, ...), kind[kinds[i]]
      ltc._raise(string.format("%s: bad argument #%d (%s expected, got %s)", name, i, k,
        mtype(v) == "float" and "the non-integer number " .. tostring(v) or typename(v)))
    end
  end
  -- An error from inside F.name names F.name, the function the user called: "conv1d: conv2d:
  -- weight ..." for an error of the conv2d that conv1d is built on (kept after the name).
  local function own_error(name, msg)
    if type(msg) ~= "string" then return msg end
    local pos, rest = msg:match("^([^\n]-:%d+: )(.*)$")
    if not pos then pos, rest = "", msg end
    if rest:sub(1, #name + 1) ~= name .. ":" then rest = name .. ": " .. rest end
    return pos .. rest
  end
  -- PyTorch's parameter names of each functional, in positional order: a trailing options
  -- table (string keys only) gives them by name, F.conv2d(x, w, nil, {stride = 2}) or
  -- F.softmax(x, {dim = 2}); an unknown name or one also given positionally raises.
  -- inplace is accepted when false (ltc's functionals never write into their input).
  local names = {
    linear = { "input", "weight", "bias" }, relu = { "input", "inplace" },
    gelu = { "input", "approximate" }, tanh = { "input" }, sigmoid = { "input" }, silu = { "input", "inplace" },
    mish = { "input", "inplace" }, softmax = { "input", "dim", "dtype" },
    log_softmax = { "input", "dim", "dtype" }, dropout = { "input", "p", "training", "inplace" },
    unfold = { "input", "kernel_size", "dilation", "padding", "stride" },
    fold = { "input", "output_size", "kernel_size", "dilation", "padding", "stride" },
    flatten = { "input", "start_dim", "end_dim" }, one_hot = { "tensor", "num_classes" },
    layer_norm = { "input", "normalized_shape", "weight", "bias", "eps" },
    conv2d = { "input", "weight", "bias", "stride", "padding", "dilation", "groups" },
    conv1d = { "input", "weight", "bias", "stride", "padding", "dilation", "groups" },
    conv_transpose2d = { "input", "weight", "bias", "stride", "padding", "output_padding",
      "groups", "dilation" },
    max_pool2d = { "input", "kernel_size", "stride", "padding", "dilation", "ceil_mode" },
    avg_pool2d = { "input", "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad" },
    adaptive_avg_pool2d = { "input", "output_size" },
    leaky_relu = { "input", "negative_slope", "inplace" }, elu = { "input", "alpha", "inplace" },
    softplus = { "input", "beta", "threshold" },
    hardtanh = { "input", "min_val", "max_val", "inplace" },
    group_norm = { "input", "num_groups", "weight", "bias", "eps" },
    batch_norm = { "input", "running_mean", "running_var", "weight", "bias", "training",
      "momentum", "eps" },
    pad = { "input", "pad", "mode", "value" }, normalize = { "input", "p", "dim", "eps" },
    cosine_similarity = { "x1", "x2", "dim", "eps" },
  }
  local function is_options(v)
    if type(v) ~= "table" or next(v) == nil then return false end
    for k in pairs(v) do if type(k) ~= "string" then return false end end
    return true
  end
  -- the arguments of F.name with a trailing options table spread to their positions
  local function spread(name, list, ...)
    local a = pack(...)
    local opts = a[a.n]
    if not list or a.n < 2 or not is_options(opts) then return a end
    a[a.n], a.n = nil, a.n - 1
    for k, v in pairs(opts) do
      local pos
      for i, n in ipairs(list) do if n == k then pos = i end end
      if not pos then
        local known = { table.unpack(list, 2) }
        table.sort(known)
        raise(string.format("%s: unknown option '%s' (known: %s)", name, k, table.concat(known, ", ")))
      end
      if pos <= a.n and a[pos] ~= nil then
        raise(string.format("%s: got multiple values for argument '%s' (positional and in the "
          .. "options table)", name, k))
      end
      a[pos] = v
      if pos > a.n then a.n = pos end
    end
    for i, n in ipairs(list) do
      if n == "inplace" and i <= a.n then
        if a[i] then raise(name .. ": inplace=true is not supported (ltc functionals return a new tensor)") end
        a.n = math.min(a.n, i - 1) -- inplace is last: drop it
      end
    end
    return a
  end
  local wraps = require("ltc.help").wraps
  local core = require("ltc.core")
  local op_scope, op_label = core._op_scope, core._op_label
  F = setmetatable({}, {
    __newindex = function(t, name, fn)
      local value = fn
      if type(fn) == "function" then
        local kinds = args[name] or { "t" }
        local codes = codes_of(kinds)
        local list = names[name]
        local function finish(ok, ...)
          if not ok then raise(own_error(name, (...))) end
          return ...
        end
        local inplace_at -- the position of an `inplace` argument, which spread checks
        for i, a in ipairs(list or {}) do if a == "inplace" then inplace_at = i end end
        -- no table per call unless spread has work: an options table last, or an inplace
        -- argument (every step's path)
        -- traced under an op scope (core._op_scope): an internal op's error when the graph
        -- runs (cross_entropy's gather, embedding's index_select) names the functional;
        -- its label is made here, once
        local label = op_label(name)
        value = function(...)
          local _ <close> = op_scope(label)
          local n = select("#", ...)
          if list and n >= 2 and (is_options((select(n, ...))) or (inplace_at and n >= inplace_at)) then
            local a = spread(name, list, ...)
            check(name, kinds, codes, unpack(a, 1, a.n))
            return finish(pcall(fn, unpack(a, 1, a.n)))
          end
          check(name, kinds, codes, ...)
          return finish(pcall(fn, ...))
        end
        wraps[value] = fn
      end
      rawset(t, name, value)
    end,
  })
end
nn.functional = F

---------------------------------------------------------------------------------------------
-- option and size checks, initialisation: shared by the files below and the other nn_*.lua

--- nn.check_options(fname, opts, allowed [, level]): raises "<fname>: unknown option '<k>'"
-- for a key of opts not in the set `allowed` ({name = true, ...}) and "<fname>: options must
-- be a table" unless opts is nil or a table. Returns opts or {}.
local function check_options(fname, opts, allowed, level)
  level = (level or 2) + 1
  if type(allowed) ~= "table" then
    raise("check_options: bad argument #3 (a set of option names, {name = true, ...}, expected, got "
      .. type(allowed) .. ")")
  end
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    raise(string.format("%s: options must be a table, not %s", fname, type(opts)))
  end
  for k in pairs(opts) do
    if not allowed[k] then
      local names = {}
      for a in pairs(allowed) do names[#names + 1] = a end
      table.sort(names)
      raise(string.format("%s: unknown option '%s' (%s)", fname, tostring(k),
        #names == 0 and "it takes no options" or "known: " .. table.concat(names, ", ")))
    end
  end
  return opts
end
nn.check_options = check_options
--- nn.option_set(name, ...): the set {name = true, ...} of an nn function's option names.
local function set(...)
  local s = {}
  for _, k in ipairs { ... } do s[k] = true end
  return s
end
nn.option_set = set

-- Raises "<layer>: <what> must be a positive integer (got ...)" unless v is one, at the
-- caller's line (ltc._raise: also when a layer builds another, as TransformerEncoderLayer).
local function check_size(layer, what, v)
  if math.type(v) ~= "integer" or v < 1 then
    ltc._raise(string.format("%s: %s must be a positive integer (got %s)", layer, what,
      type(v) == "number" and tostring(v) or ltc.typename(v)))
  end
end
nn.check_size = check_size

-- The modules' initialisation: uniform samples of a size in [-bound, bound) from the seeded
-- generator (PyTorch's API, nn.init.uniform_(t, a, b), is in nn_init.lua).
local function uniform(size, bound)
  return ltc.no_grad(function() return ltc.rand(size) * (2 * bound) - bound end)
end
nn._private = { set = set, uniform = uniform } -- the files below add check_p, check_module

-- the parts of ltc.nn, each in its own file, in this order (each may use the ones before)
require("ltc.nn_functional")(nn, F) -- the first functionals: linear, relu, ..., normalize
require("ltc.nn_module")(nn, F)     -- nn.Module, nn.class, parameters, state_dict, to
require("ltc.nn_init")(nn)          -- nn.init: PyTorch's torch.nn.init (uniform_, kaiming_normal_, ...)
require("ltc.nn_basic")(nn, F)      -- Linear, Conv2d, MaxPool2d, activations, ..., Embedding

---------------------------------------------------------------------------------------------
-- nn.utils

nn.utils = {}

-- the parameters of a list, a module or one tensor that have a gradient
local function with_grads(params, fname)
  if nn.is_module(params) then params = params:parameters() end
  if ltc.is_tensor(params) then params = { params } end
  if type(params) ~= "table" then
    raise(fname .. ": expected a list of parameters, a module or a tensor, got " .. type(params))
  end
  local out = {}
  for _, p in ipairs(params) do if p.grad ~= nil then out[#out + 1] = p end end
  return out
end

--- nn.utils.clip_grad_norm_(params, max_norm [, norm_type=2 [, error_if_nonfinite=false]]):
-- scales every gradient by min(1, max_norm / (total + 1e-6)), total being the norm of all
-- gradients together (norm_type math.huge or "inf": the largest absolute value). Returns total as a
-- 0-d tensor: it is computed in the step's graph, so clipping never syncs (PyTorch's
-- foreach=False formula), except with error_if_nonfinite, which reads total (a sync) and
-- raises, as PyTorch, when it is NaN or infinite (the gradients are then left as they were).
-- The options table {norm_type, error_if_nonfinite} may stand after max_norm.
local clip_options = { norm_type = true, error_if_nonfinite = true, foreach = true }
function nn.utils.clip_grad_norm_(params, max_norm, norm_type, error_if_nonfinite)
  if type(norm_type) == "table" then
    for k in pairs(norm_type) do
      if not clip_options[k] then raise("clip_grad_norm_: unknown option '" .. tostring(k) .. "'") end
    end
    norm_type, error_if_nonfinite = norm_type.norm_type, norm_type.error_if_nonfinite
  end
  norm_type = norm_type or 2
  if type(norm_type) == "string" and norm_type:lower() == "inf" then norm_type = math.huge end
  if type(max_norm) ~= "number" or type(norm_type) ~= "number" then
    raise("clip_grad_norm_: max_norm and norm_type must be numbers (norm_type also \"inf\"), got "
      .. ltc.typename(max_norm) .. " and " .. ltc.typename(norm_type))
  end
  if error_if_nonfinite ~= nil and type(error_if_nonfinite) ~= "boolean" then
    raise("clip_grad_norm_: error_if_nonfinite must be a boolean, got " .. ltc.typename(error_if_nonfinite))
  end
  local ps = with_grads(params, "clip_grad_norm_")
  if #ps == 0 then return ltc.tensor(0) end
  return ltc.no_grad(function()
    local total
    if norm_type == math.huge then
      for _, p in ipairs(ps) do
        local m = p.grad:abs():max()
        total = total and ltc.maximum(total, m) or m
      end
    else
      for _, p in ipairs(ps) do
        local n = p.grad:norm(norm_type) ^ norm_type
        total = total and total + n or n
      end
      total = total ^ (1 / norm_type)
    end
    if error_if_nonfinite and not total:isfinite():item() then
      raise(string.format("clip_grad_norm_: the total norm of order %g of the gradients is "
        .. "non-finite, so it cannot be clipped (error_if_nonfinite = false scales the gradients "
        .. "by it anyway)", norm_type))
    end
    local coef = (max_norm / (total + 1e-6)):clamp(nil, 1)
    for _, p in ipairs(ps) do p.grad = p.grad * coef:to(p.grad:dtype()) end
    return total
  end)
end

--- nn.utils.clip_grad_value_(params, clip_value): every gradient clamped to [-clip_value,
-- clip_value], in the step's graph.
function nn.utils.clip_grad_value_(params, clip_value)
  if type(clip_value) ~= "number" then raise("clip_grad_value_: clip_value must be a number") end
  ltc.no_grad(function()
    for _, p in ipairs(with_grads(params, "clip_grad_value_")) do
      p.grad = p.grad:clamp(-clip_value, clip_value)
    end
  end)
end

require("ltc.nn_loss")(nn, F)
require("ltc.nn_rnn")(nn, F)
require("ltc.nn_layers")(nn, F)
require("ltc.nn_attention")(nn, F)
require("ltc.nn_transformer")(nn)  -- TransformerDecoderLayer, TransformerDecoder, Transformer

return nn
