--- ltc.nn: neural-network modules and losses on top of the ops (PyTorch's torch.nn).
--
--   local model = ltc.nn.Sequential(ltc.nn.Linear(784, 256), ltc.nn.ReLU(), ltc.nn.Linear(256, 10))
--   local loss = ltc.nn.CrossEntropyLoss()(model(x), labels)     -- labels are 1-based
--
-- A module is a table with a forward(self, ...) method; calling the module calls forward.
-- Parameters are leaf tensors that require grad; module:parameters() lists them (in
-- registration order, submodules depth first), module:state_dict() maps dotted names to
-- them, module:load_state_dict(sd) copies values into them in place. Initialisation follows
-- PyTorch's defaults and draws from ltc's seeded generator (ltc.manual_seed).
-- ltc.nn.functional holds the stateless functions the modules use.
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
        value = function(...)
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

local sqrt = math.sqrt

---------------------------------------------------------------------------------------------
-- functional

--- F.linear(x, weight [, bias]): x . weight^T + bias (x [..., in], weight [out, in]).
function F.linear(x, weight, bias)
  if bias then return ltc.linear(x, weight, bias) end
  return ltc.linear(x, weight)
end

function F.relu(x) return x:relu() end
--- F.gelu(x [, approximate="none"]): x Phi(x); approximate="tanh" is PyTorch's tanh form
-- 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (composed of ops: autograd differentiates it).
function F.gelu(x, approximate)
  if approximate == nil or approximate == "none" then return x:gelu() end
  if approximate ~= "tanh" then
    raise(string.format("gelu: approximate must be 'none' or 'tanh', got %s",
      type(approximate) == "string" and "'" .. approximate .. "'" or ltc.typename(approximate)))
  end
  local inner = (x + x * x * x * 0.044715) * sqrt(2 / math.pi)
  return x * 0.5 * (inner:tanh() + 1)
end
function F.tanh(x) return x:tanh() end
function F.sigmoid(x) return x:sigmoid() end
--- F.softmax(x [, dim=-1 [, dtype]]), F.log_softmax(x [, dim=-1 [, dtype]]): x cast to dtype
-- first when given (PyTorch's dtype=). Every F.* functional also takes PyTorch's keyword
-- arguments as a trailing options table: F.softmax(x, {dim = 2}), F.conv2d(x, w, nil,
-- {stride = 2}), F.dropout(x, {p = 0.2, training = false}); an unknown name raises.
function F.softmax(x, dim, dtype)
  if dtype then x = x:to(dtype) end
  return x:softmax(dim or -1)
end
function F.log_softmax(x, dim, dtype)
  if dtype then x = x:to(dtype) end
  return x:log_softmax(dim or -1)
end

-- Raises "<fname>: p must be between 0 and 1, got <p>" unless p is a number in [0, 1].
local function check_p(fname, p, level)
  if type(p) ~= "number" or not (p >= 0 and p <= 1) then
    raise(string.format("%s: p must be between 0 and 1, got %s", fname, tostring(p)))
  end
end

--- F.dropout(x [, p=0.5 [, training=true]]): zeroes each element with probability p and
-- scales the rest by 1/(1-p) when training (fresh draws from the seeded generator every call;
-- p is a graph parameter, so changing it does not recompile); x itself otherwise. p outside
-- [0, 1] (or NaN) is an error, as in ltc.dropout.
function F.dropout(x, p, training)
  if p == nil then p = 0.5 end
  check_p("dropout", p, 3)
  if training == false or p == 0 then return x end
  if p == 1 then return x * 0 end
  local keep = ltc.rand(x:size(), x:dtype()):lt(1 - p)
  return x * keep / (1 - p)
end

--- F.flatten(x, start_dim, end_dim): dims start_dim..end_dim (1-based, default 2..-1) merged.
-- F.unfold and F.fold: PyTorch's names of im2col and col2im (composites in
-- lua/ltc/indexing.lua, ops.yaml entries), and F.avg_pool2d and F.batch_norm the ops (the
-- batch_norm front end of lua/ltc/ops.lua): their defaults are PyTorch's already. Below,
-- `function F.<name>(` defines a functional of its own: a generated op's name or a
-- `composite:` entry of ops.yaml (spec/composite_ops_spec.lua).
F.unfold = ltc.im2col
F.fold = ltc.col2im
F.avg_pool2d = ltc.avg_pool2d
F.batch_norm = ltc.batch_norm

function F.flatten(x, start_dim, end_dim)
  local s = x:size()
  local nd = #s
  start_dim = start_dim or 2
  end_dim = end_dim or -1
  if start_dim < 0 then start_dim = start_dim + nd + 1 end
  if end_dim < 0 then end_dim = end_dim + nd + 1 end
  local out, merged = {}, 1
  for i = 1, nd do
    if i < start_dim or i > end_dim then out[#out + 1] = s[i]
    else
      merged = merged * s[i]
      if i == end_dim then out[#out + 1] = merged end
    end
  end
  return x:reshape(out)
end

--- F.one_hot(labels, num_classes): int64 one-hot rows of 1-based labels.
function F.one_hot(labels, num_classes) return ltc.one_hot(labels, num_classes) end

--- F.embedding(indices, weight [, {padding_idx}]): rows of weight [num, dim] at the 1-based
-- indices (any shape); the result has indices' size plus dim. Rows picked at padding_idx
-- (1-based) pass no gradient to weight (PyTorch).
function F.embedding(indices, weight, opts)
  opts = nn.check_options("embedding", opts, { padding_idx = true }, 2)
  if weight:dim() ~= 2 then
    raise(string.format("embedding: weight must be 2-d [num_embeddings, embedding_dim], got [%s]",
      table.concat(weight:size(), ", ")))
  end
  local s = indices:size()
  local flat = indices:reshape({ -1 })
  local rows = weight:index_select(1, flat)
  if opts.padding_idx then
    local keep = flat:ne(opts.padding_idx):unsqueeze(2):to(weight:dtype())
    rows = rows * keep + rows:detach() * (1 - keep)
  end
  s[#s + 1] = weight:size(2)
  return rows:reshape(s)
end

--- F.layer_norm(x, normalized_shape, weight, bias, eps): normalises over the last
-- #normalized_shape dims (biased variance, as PyTorch), then weight * y + bias: the op
-- ltc.layer_norm (one kernel forward, one layer_norm_backward node backward), weight and
-- bias of size normalized_shape and x's dtype, or nil.
function F.layer_norm(x, normalized_shape, weight, bias, eps)
  if type(normalized_shape) == "number" then normalized_shape = { normalized_shape } end
  eps = eps or 1e-5
  local s = x:size()
  local k = #normalized_shape
  local fits = k >= 1 and k <= #s
  for i = 1, k do fits = fits and normalized_shape[i] == s[#s - k + i] end
  if not fits then
    raise(string.format("layer_norm: normalized_shape [%s] must be the last dims of the input "
      .. "[%s]", table.concat(normalized_shape, ", "), table.concat(s, ", ")))
  end
  return ltc.layer_norm(x, normalized_shape, weight, bias, eps)
end

--- F.conv2d / F.max_pool2d: the ops of the same names, when the op library has them.
function F.conv2d(x, weight, bias, stride, padding, dilation, groups)
  if not ltc.conv2d then raise("conv2d: this build has no conv2d op") end
  return ltc.conv2d(x, weight, bias, stride or 1, padding or 0, dilation or 1, groups or 1)
end

function F.max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode)
  if not ltc.max_pool2d then raise("max_pool2d: this build has no max_pool2d op") end
  return ltc.max_pool2d(x, kernel_size, stride or kernel_size, padding or 0, dilation or 1,
    ceil_mode or false)
end

--- F.pad(x, pad [, mode="constant" [, value=0]]): pad = {left, right [, top, bottom [, ...]]}
-- in PyTorch's order, the last dim first; negative amounts crop. Only mode "constant". A
-- composite (ops.yaml), as F.normalize and F.cosine_similarity below.
function F.pad(x, pad, mode, value)
  if type(pad) ~= "table" or #pad % 2 ~= 0 or #pad // 2 > x:dim() then
    raise(string.format("pad: pad must be a table of an even number of sizes, at most 2 per dim "
      .. "of the %d-d input, got %s", x:dim(), type(pad) == "table" and "{" .. table.concat(pad, ", ") .. "}" or ltc.typename(pad)))
  end
  mode = mode or "constant"
  if mode ~= "constant" then
    raise(string.format("pad: mode '%s' is not supported (only 'constant')", tostring(mode)))
  end
  value = value or 0
  for i = 1, #pad // 2 do
    local d = x:dim() - i + 1
    local lo, hi = pad[2 * i - 1], pad[2 * i]
    if math.type(lo) ~= "integer" or math.type(hi) ~= "integer" then
      raise("pad: pad sizes must be integers, got {" .. table.concat(pad, ", ") .. "}")
    end
    local n = x:size(d)
    if n + lo + hi < 0 or (lo < 0 and -lo > n) or (hi < 0 and -hi > n) then
      raise(string.format("pad: padding (%d, %d) of dim %d of size %d gives a negative size", lo, hi, d, n))
    end
    if lo < 0 then x = x:narrow(d, 1 - lo, n + lo); n = n + lo; lo = 0 end
    if hi < 0 then x = x:narrow(d, 1, n + hi); hi = 0 end
    local parts = {}
    local function block(k)
      local s = x:size()
      s[d] = k
      return ltc.full(s, value, x:dtype())
    end
    if lo > 0 then parts[#parts + 1] = block(lo) end
    parts[#parts + 1] = x
    if hi > 0 then parts[#parts + 1] = block(hi) end
    if #parts > 1 then x = ltc.cat(parts, d) end
  end
  return x
end

--- F.normalize(x [, p=2 [, dim=2 [, eps=1e-12]]]): x / max(||x||_p over dim, eps) (dim 2 is
-- PyTorch's default dim=1, 1-based).
function F.normalize(x, p, dim, eps)
  local n = x:norm(p or 2, dim or 2, true)
  return x / n:clamp(eps or 1e-12)
end

--- F.cosine_similarity(x1, x2 [, dim=2 [, eps=1e-8]]): sum(x1 x2) / max(||x1|| ||x2||, eps)
-- over dim (broadcasting x1 and x2; dim 2 is PyTorch's default dim=1, 1-based).
function F.cosine_similarity(x1, x2, dim, eps)
  dim = dim or 2
  local w12 = (x1 * x2):sum(dim)
  local n = ((x1 * x1):sum(dim) * (x2 * x2):sum(dim)):sqrt()
  return w12 / n:clamp(eps or 1e-8)
end

---------------------------------------------------------------------------------------------
-- modules

local Module = {}
Module.__index = Module
nn.Module = Module

-- A module instance keeps its registered parameters, buffers and submodules out of its own
-- fields, in m._slots (name -> value), with their names in registration order in m._params,
-- m._buffers and m._modules; m.name finds them through the class's __index. So every
-- assignment to a registered name goes through __newindex, as PyTorch's __setattr__ does.

--- nn.is_module(v): true when v is an ltc.nn module instance.
local function is_module(v)
  return type(v) == "table" and type(rawget(v, "_slots")) == "table"
    and type(v.forward) == "function"
end
nn.is_module = is_module

-- A parameter to register on assignment: a leaf tensor that requires grad (PyTorch's
-- nn.Parameter). nn.Parameter(t) marks t so (t:requires_grad_()) and returns it.
local function is_param(v)
  return ltc.is_tensor(v) and v.requires_grad and v.is_leaf
end
function nn.Parameter(t, requires_grad)
  if not ltc.is_tensor(t) then raise("Parameter: a tensor expected, got " .. type(t)) end
  if requires_grad == false then return t end
  if not t.is_leaf then t = t:detach() end
  return t:requires_grad_()
end

local function remove_name(list, name)
  for i, n in ipairs(list) do
    if n == name then table.remove(list, i); return true end
  end
  return false
end

-- Which list of m holds name ("_params", "_buffers", "_modules"), or nil.
local function kind_of(m, name)
  for _, kind in ipairs { "_params", "_buffers", "_modules" } do
    for _, n in ipairs(rawget(m, kind)) do if n == name then return kind end end
  end
  return nil
end

local function class_name(m)
  return ((getmetatable(m).__name or "Module"):gsub("^ltc%.nn%.", ""))
end

-- m.name = v: a module registers as a submodule, a leaf tensor that requires grad as a
-- parameter; assigning to a registered name replaces the value (nil keeps the name, as
-- PyTorch's `self.bias = None`); a value of another kind unregisters it. Anything else is a
-- plain field.
local function module_newindex(self, k, v)
  if math.type(k) == "integer" and kind_of(self, tostring(k)) then k = tostring(k) end
  local slots = rawget(self, "_slots")
  local kind = type(k) == "string" and kind_of(self, k)
  if kind == "_modules" and (v == nil or is_module(v)) then slots[k] = v; return end
  if kind == "_params" and (v == nil or ltc.is_tensor(v)) then
    if v ~= nil and not v.requires_grad then v = nn.Parameter(v) end
    if v ~= nil then ltc.debug.tag(v, class_name(self) .. "." .. k) end
    slots[k] = v
    return
  end
  if kind == "_buffers" and (v == nil or ltc.is_tensor(v)) then slots[k] = v; return end
  if kind then remove_name(rawget(self, kind), k); slots[k] = nil end
  if type(k) == "string" and is_module(v) then
    self:add_module(k, v)
  elseif type(k) == "string" and is_param(v) then
    self:register_parameter(k, v)
  else
    rawset(self, k, v)
  end
end

local core_ = require "ltc.core"
local scope_enter = core_.debug_scope_enter

-- m(...): forward, with the hooks of register_forward_pre_hook / register_forward_hook. With
-- LTC_IR_DEBUG=1 the core notes the module that runs, so a node's source line names it
-- ("train.lua:12 in 1.fc (Linear)"; src/lua/ltc_debug.c).
local function module_call(self, ...)
  scope_enter(self)
  local pre, post = rawget(self, "_forward_pre_hooks"), rawget(self, "_forward_hooks")
  if not pre and not post then return self:forward(...) end
  local args = table.pack(...)
  for _, h in ipairs(pre or {}) do
    local r = h.fn(self, args)
    if r ~= nil then args = type(r) == "table" and not ltc.is_tensor(r) and r or { r, n = 1 } end
  end
  local out = table.pack(self:forward(table.unpack(args, 1, args.n or #args)))
  for _, h in ipairs(post or {}) do
    local r = h.fn(self, args, out[1])
    if r ~= nil then out[1] = r end
  end
  return table.unpack(out, 1, out.n)
end

-- A module runs on its input's device: ltc.follow's rule, inlined here so that a module call
-- is one Lua frame when the input is where new tensors go already (every step's path).
local follow_args, device_guard = core_._follow_args, core_._device_guard
local function finish(prev, ok, ...)
  device_guard(prev)
  if not ok then raise((...)) end
  return ...
end
local function call_module(self, ...)
  local moved, prev = follow_args(self, ...)
  if moved then return finish(prev, pcall(module_call, self, ...)) end
  if rawget(self, "_forward_pre_hooks") or rawget(self, "_forward_hooks") then
    return module_call(self, ...)
  end
  scope_enter(self)
  return self:forward(...)
end

-- a hook handle: handle:remove() takes the hook out of its list
local function add_hook(self, field, fn, what)
  if type(fn) ~= "function" then raise(what .. ": a function expected, got " .. type(fn)) end
  local list = rawget(self, field)
  if not list then list = {}; rawset(self, field, list) end
  local h = { fn = fn }
  list[#list + 1] = h
  return { remove = function()
    for i, x in ipairs(list) do if x == h then table.remove(list, i); break end end
    if #list == 0 then rawset(self, field, nil) end
  end }
end

--- nn.class(name [, parent]): a module class; calling it makes an instance and runs __init.
-- In __init, `self.fc = nn.Linear(...)` registers a submodule and `self.w =
-- nn.Parameter(t)` a parameter (see "Writing a module" in the README).
function nn.class(name, parent)
  if type(name) ~= "string" then
    raise("nn.class: bad argument #1 (the class name, a string, expected, got " .. type(name) .. ")")
  end
  if parent ~= nil and not (type(parent) == "table" and rawget(parent, "__index")) then
    raise("nn.class: bad argument #2 (a module class to derive from expected, got "
      .. ltc.typename(parent) .. ")")
  end
  local cls = {}
  -- class members first, then registered parameters, buffers and submodules; m[i] is the
  -- child named tostring(i) (Sequential's m[1])
  cls.__index = function(self, k)
    local v = cls[k]
    if v ~= nil then return v end
    local slots = rawget(self, "_slots")
    v = slots[k]
    if v == nil and math.type(k) == "integer" then return slots[tostring(k)] end
    return v
  end
  cls.__newindex = module_newindex
  cls.__len = function(self) return #rawget(self, "_modules") end
  cls.__name = "ltc.nn." .. name
  cls.__call = call_module -- on its input's device (ltc.follow's rule)
  cls.__tostring = function(self) return self:describe() end
  return setmetatable(cls, {
    __index = parent or Module,
    __call = function(c, ...)
      local o = setmetatable({ _params = {}, _buffers = {}, _modules = {}, _slots = {},
        training = true }, c)
      o:__init(...)
      return o
    end,
  })
end

function Module:__init() end

--- m:register_forward_hook(fn): after every call m(...), fn(m, inputs, output) runs (inputs:
-- the arguments as a table with n); a non-nil result replaces the output (the first
-- result). m:register_forward_pre_hook(fn): before every call, fn(m, inputs); a non-nil
-- result replaces the arguments (a table of them, or one tensor). Both return a handle whose
-- remove() takes the hook off (PyTorch's RemovableHandle).
function Module:register_forward_hook(fn)
  return add_hook(self, "_forward_hooks", fn, "register_forward_hook")
end
function Module:register_forward_pre_hook(fn)
  return add_hook(self, "_forward_pre_hooks", fn, "register_forward_pre_hook")
end

--- m:register_parameter(name, t): t (a float tensor, or nil for an absent one such as a
-- bias=false Linear's bias) becomes a parameter: a leaf that requires grad, found as m[name],
-- listed by parameters() and state_dict(). It is tagged "Class.name" ("Linear.weight") for
-- ltc.debug's drawings (render's `names = model` gives the full path, "1.weight").
function Module:register_parameter(name, t)
  if t ~= nil then t = ltc.debug.tag(nn.Parameter(t), class_name(self) .. "." .. name) end
  local kind = kind_of(self, name)
  if kind ~= "_params" then
    if kind then remove_name(self[kind], name) end
    self._params[#self._params + 1] = name
  end
  self._slots[name] = t
  return t
end

--- m:register_buffer(name, t): t (a tensor that is not trained, such as BatchNorm's running
-- statistics) is stored as m[name], listed by buffers() and saved by state_dict().
function Module:register_buffer(name, t)
  if t ~= nil and not ltc.is_tensor(t) then
    raise(string.format("%s: buffer %s must be a tensor or nil, not %s", class_name(self), name,
      type(t)))
  end
  local kind = kind_of(self, name)
  if kind ~= "_buffers" then
    if kind then remove_name(self[kind], name) end
    self._buffers[#self._buffers + 1] = name
  end
  self._slots[name] = t
  return t
end

--- m:add_module(name, child): child is stored as m[name] and its parameters are m's.
-- Raises "<owner>: module <name> is a <type>, not an ltc.nn module" unless child is a module;
-- `level` as error()'s, counted from the caller of check_module.
local function check_module(owner, name, child, level)
  if not is_module(child) then
    raise(string.format("%s: module %s is a %s, not an ltc.nn module", class_name(owner), name,
      type(child)))
  end
end

function Module:add_module(name, child)
  check_module(self, name, child, 2)
  local kind = kind_of(self, name)
  if kind ~= "_modules" then
    if kind then remove_name(self[kind], name) end
    self._modules[#self._modules + 1] = name
  end
  self._slots[name] = child
  return child
end

--- m:named_children(): list of {name, module} of the direct submodules, in order.
function Module:named_children()
  local out = {}
  for _, n in ipairs(self._modules) do
    local c = self._slots[n]
    if c ~= nil then out[#out + 1] = { n, c } end
  end
  return out
end

--- m:children(): the direct submodules in order.
function Module:children()
  local cs = {}
  for i, nc in ipairs(self:named_children()) do cs[i] = nc[2] end
  return cs
end

--- m:named_modules(): list of {name, module}: m itself (name "") and every submodule, depth
-- first, each once (PyTorch's order).
function Module:named_modules(prefix, out, seen)
  out, seen, prefix = out or {}, seen or {}, prefix or ""
  if seen[self] then return out end
  seen[self] = true
  out[#out + 1] = { prefix, self }
  for _, nc in ipairs(self:named_children()) do
    nc[2]:named_modules(prefix == "" and nc[1] or prefix .. "." .. nc[1], out, seen)
  end
  return out
end

--- m:modules(): m and all its submodules (depth first), as named_modules without names.
function Module:modules()
  local ms = {}
  for i, nm in ipairs(self:named_modules()) do ms[i] = nm[2] end
  return ms
end

-- {name, tensor} pairs of the `kind` list ("_params" or "_buffers") of m and its submodules.
local function named_tensors(m, kind, prefix, out, seen)
  for _, n in ipairs(m[kind]) do
    local t = m._slots[n]
    if t ~= nil and not seen[t] then
      seen[t] = true
      out[#out + 1] = { prefix .. n, t }
    end
  end
  for _, nc in ipairs(m:named_children()) do
    named_tensors(nc[2], kind, prefix .. nc[1] .. ".", out, seen)
  end
  return out
end

--- m:named_parameters(): list of {name, tensor} with dotted names ("1.weight"), in
-- registration order, submodules depth first; a tensor shared by two modules once.
function Module:named_parameters(prefix)
  return named_tensors(self, "_params", prefix or "", {}, {})
end

--- m:parameters(): the parameter tensors, in the order of named_parameters.
function Module:parameters()
  local ps = {}
  for i, np in ipairs(self:named_parameters()) do ps[i] = np[2] end
  return ps
end

--- m:named_buffers() / m:buffers(): as named_parameters / parameters, for the buffers.
function Module:named_buffers(prefix)
  return named_tensors(self, "_buffers", prefix or "", {}, {})
end
function Module:buffers()
  local bs = {}
  for i, nb in ipairs(self:named_buffers()) do bs[i] = nb[2] end
  return bs
end

--- m:apply(fn): calls fn(module) for every submodule (children first) and then m (PyTorch's
-- order, as used for custom initialisation); returns m.
function Module:apply(fn)
  for _, c in ipairs(self:children()) do c:apply(fn) end
  fn(self)
  return self
end

--- m:train([mode]) / m:eval(): training mode on (default) or off, for m and its children.
function Module:train(mode)
  if mode == nil then mode = true end
  self.training = mode
  for _, c in ipairs(self:children()) do c:train(mode) end
  return self
end

function Module:eval() return self:train(false) end

--- m:zero_grad(): every parameter's grad becomes nil.
function Module:zero_grad()
  for _, p in ipairs(self:parameters()) do p.grad = nil end
end

local float_dtypes = { float32 = true, float64 = true, float16 = true, bfloat16 = true }

--- m:to(dtype_or_device): every parameter and floating-point buffer converted by t:to(arg)
-- (a dtype name such as "float64"; a device, where the tensor's `to` takes one). Parameters
-- are replaced by new leaves that require grad (an optimizer made before the conversion
-- still holds the old ones: make it after, as PyTorch advises); grads are dropped. Integer
-- buffers keep their dtype. Returns m. m:double() and m:float() are m:to("float64") and
-- m:to("float32").
local int_dtypes = { uint8 = true, int8 = true, int16 = true, int32 = true, int64 = true, bool = true }
function Module:to(arg)
  if int_dtypes[arg] then
    raise(string.format("Module.to: only floating dtypes (float32, float64, float16, bfloat16) "
      .. "convert a module, got %s (parameters must stay floating to require grad)", arg))
  end
  for _, m in ipairs(self:modules()) do
    for _, n in ipairs(m._params) do
      local p = m._slots[n]
      if p ~= nil then
        local q = ltc.no_grad(function() return p:to(arg) end)
        if q ~= p then m._slots[n] = nn.Parameter(q:detach()) end
      end
    end
    for _, n in ipairs(m._buffers) do
      local b = m._slots[n]
      if b ~= nil and (float_dtypes[b:dtype()] or not float_dtypes[arg]) then
        m._slots[n] = b:to(arg)
      end
    end
  end
  return self
end
function Module:double() return self:to("float64") end
function Module:float() return self:to("float32") end
--- m:half(), m:bfloat16(): m:to("float16"), m:to("bfloat16") (as t:half(), t:bfloat16()).
function Module:half() return self:to("float16") end
function Module:bfloat16() return self:to("bfloat16") end

--- m:state_dict(): {name = tensor} for every parameter and buffer (the tensors themselves,
-- not copies), with dotted names.
function Module:state_dict()
  local sd = {}
  for _, np in ipairs(self:named_parameters()) do sd[np[1]] = np[2] end
  for _, nb in ipairs(self:named_buffers()) do sd[nb[1]] = nb[2] end
  return sd
end

--- m:load_state_dict(sd [, strict=true]): copies sd's tensors into the parameters and
-- buffers in place (cast to each one's dtype; sizes must match). With strict, missing or
-- unexpected names are errors.
function Module:load_state_dict(sd, strict)
  if type(sd) ~= "table" then
    raise("load_state_dict: bad argument #1 (a state dict, a table of tensors, expected, got "
      .. ltc.typename(sd) .. ")")
  end
  if strict == nil then strict = true end
  local known = {}
  local entries = self:named_parameters()
  for _, nb in ipairs(self:named_buffers()) do entries[#entries + 1] = nb end
  for _, np in ipairs(entries) do
    local name, p = np[1], np[2]
    known[name] = true
    local v = sd[name]
    if v == nil then
      if strict then
        -- a PyTorch state dict numbers Sequential's and ModuleList's children from 0
        local zero = name:gsub("%f[%w](%d+)%f[%W]", function(d) return tostring(tonumber(d) - 1) end)
        local hint = zero ~= name and sd[zero] ~= nil and string.format(" (the state dict has '%s': "
          .. "ltc numbers the children of Sequential and ModuleList from 1, as Torch7, PyTorch "
          .. "from 0; add 1 to each number in its names)", zero) or ""
        raise("load_state_dict: missing parameter '" .. name .. "'" .. hint)
      end
    else
      if not ltc.is_tensor(v) then
        raise(string.format("load_state_dict: '%s' is %s, not a tensor", name, ltc.typename(v)))
      end
      local ps, vs = p:size(), v:size()
      local same = #ps == #vs
      for i = 1, #ps do same = same and ps[i] == vs[i] end
      if not same then
        raise(string.format("load_state_dict: '%s' has size %s, the module's %s", name,
          table.concat(vs, "x"), table.concat(ps, "x")))
      end
      ltc.no_grad(function() p.data = v:to(p:dtype()) end)
    end
  end
  if strict then
    for name in pairs(sd) do
      if not known[name] then raise("load_state_dict: unexpected parameter '" .. name .. "'") end
    end
  end
  return self
end

function Module:extra_repr() return "" end

function Module:describe(indent)
  indent = indent or ""
  local name = class_name(self)
  local children = self:named_children()
  if #children == 0 then return name .. "(" .. self:extra_repr() .. ")" end
  local lines = { name .. "(" }
  local extra = self:extra_repr()
  if extra ~= "" then lines[#lines + 1] = indent .. "  " .. extra end
  for _, nc in ipairs(children) do
    lines[#lines + 1] = indent .. "  (" .. nc[1] .. "): " .. nc[2]:describe(indent .. "  ")
  end
  lines[#lines + 1] = indent .. ")"
  return table.concat(lines, "\n")
end

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

-- Uniform samples in [-bound, bound) from the seeded generator.
local function uniform(size, bound)
  return ltc.no_grad(function() return ltc.rand(size) * (2 * bound) - bound end)
end
nn.init = { uniform = uniform }

-- The options table of a constructor whose last PyTorch positional argument is `bias`:
-- nn.Linear(3, 2, false) and nn.Linear(3, 2, {bias = false}) mean the same.
local function bias_opts(fname, v, allowed)
  if type(v) == "boolean" then return { bias = v } end
  return check_options(fname, v, allowed, 3)
end

--- nn.Linear(in_features, out_features [, {bias=true}]) (or a boolean bias, PyTorch's
-- positional form): y = x . W^T + b. W [out, in] and b [out] uniform in +-1/sqrt(in_features)
-- (PyTorch's kaiming_uniform with a = sqrt(5)); bias=false registers no bias (m.bias is nil).
nn.Linear = nn.class("Linear")
function nn.Linear:__init(in_features, out_features, opts)
  check_size("Linear", "in_features", in_features)
  check_size("Linear", "out_features", out_features)
  opts = bias_opts("Linear", opts, set("bias"))
  self.in_features, self.out_features = in_features, out_features
  local bound = 1 / sqrt(in_features)
  self:register_parameter("weight", uniform({ out_features, in_features }, bound))
  if opts.bias ~= false then self:register_parameter("bias", uniform({ out_features }, bound))
  else self:register_parameter("bias", nil) end
end
function nn.Linear:forward(x) return F.linear(x, self.weight, self.bias) end
function nn.Linear:extra_repr()
  return string.format("in_features=%d, out_features=%d, bias=%s", self.in_features,
    self.out_features, tostring(self.bias ~= nil))
end

--- nn.Conv2d(in_channels, out_channels, kernel_size [, {stride, padding, dilation, groups,
-- bias}]), or PyTorch's positional order nn.Conv2d(in, out, kernel_size [, stride [, padding
-- [, dilation [, groups [, bias]]]]]): needs the conv2d op. Weight and bias uniform in
-- +-1/sqrt(fan_in) (PyTorch).
nn.Conv2d = nn.class("Conv2d")
function nn.Conv2d:__init(cin, cout, k, opts, ...)
  if not ltc.conv2d then raise("Conv2d: this build has no conv2d op") end
  check_size("Conv2d", "in_channels", cin)
  check_size("Conv2d", "out_channels", cout)
  if opts ~= nil and type(opts) ~= "table" then
    local padding, dilation, groups, bias = ...
    opts = { stride = opts, padding = padding, dilation = dilation, groups = groups, bias = bias }
  end
  opts = check_options("Conv2d", opts, set("stride", "padding", "dilation", "groups", "bias"), 3)
  self.stride, self.padding = opts.stride or 1, opts.padding or 0
  self.dilation, self.groups = opts.dilation or 1, opts.groups or 1
  local kh, kw = k, k
  if type(k) == "table" then kh, kw = k[1], k[2] end
  check_size("Conv2d", "kernel_size", kh)
  check_size("Conv2d", "kernel_size", kw)
  self.cin, self.cout, self.kh, self.kw = cin, cout, kh, kw
  local bound = 1 / sqrt(cin / self.groups * kh * kw)
  self:register_parameter("weight", uniform({ cout, cin // self.groups, kh, kw }, bound))
  if opts.bias ~= false then self:register_parameter("bias", uniform({ cout }, bound))
  else self:register_parameter("bias", nil) end
end
function nn.Conv2d:forward(x)
  return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
end
-- A size or pair as PyTorch prints it: 2, or (2, 1) for a table; as_pair makes 2 into (2, 2).
local function size_repr(v, as_pair)
  if type(v) == "table" then
    local parts = {}
    for i, x in ipairs(v) do parts[i] = tostring(x) end
    return "(" .. table.concat(parts, ", ") .. ")"
  end
  if as_pair then return string.format("(%s, %s)", tostring(v), tostring(v)) end
  return tostring(v)
end
nn.size_repr = size_repr
-- whether v (a number or a pair) is n in every dim
local function all_equal(v, n)
  if type(v) ~= "table" then return v == n end
  for _, x in ipairs(v) do if x ~= n then return false end end
  return true
end
nn.all_equal = all_equal

function nn.Conv2d:extra_repr()
  -- PyTorch's repr: padding, dilation and groups only when not their defaults
  local s = string.format("%d, %d, kernel_size=(%d, %d), stride=%s", self.cin, self.cout,
    self.kh, self.kw, size_repr(self.stride, true))
  if not all_equal(self.padding, 0) then s = s .. ", padding=" .. size_repr(self.padding, true) end
  if not all_equal(self.dilation, 1) then s = s .. ", dilation=" .. size_repr(self.dilation, true) end
  if self.groups ~= 1 then s = s .. ", groups=" .. self.groups end
  return s .. (self.bias == nil and ", bias=false" or "")
end

--- nn.MaxPool2d(kernel_size [, stride [, padding [, dilation [, ceil_mode]]]]) or
-- nn.MaxPool2d(kernel_size, {stride, padding, dilation, ceil_mode}): needs the max_pool2d op.
-- ceil_mode rounds the output size up (PyTorch).
nn.MaxPool2d = nn.class("MaxPool2d")
function nn.MaxPool2d:__init(k, stride, padding, dilation, ceil_mode)
  local opts = { stride = stride, padding = padding, dilation = dilation, ceil_mode = ceil_mode }
  if type(stride) == "table" and not (#stride == 2 and type(stride[1]) == "number") then
    opts = check_options("MaxPool2d", stride, set("stride", "padding", "dilation", "ceil_mode"), 3)
  end
  self.kernel_size, self.stride = k, opts.stride or k
  self.padding, self.dilation, self.ceil_mode = opts.padding or 0, opts.dilation or 1, opts.ceil_mode or false
end
function nn.MaxPool2d:forward(x)
  return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)
end
function nn.MaxPool2d:extra_repr()
  return string.format("kernel_size=%s, stride=%s, padding=%s, dilation=%s, ceil_mode=%s",
    size_repr(self.kernel_size), size_repr(self.stride), size_repr(self.padding),
    size_repr(self.dilation), tostring(self.ceil_mode))
end

-- An activation module taking PyTorch's arguments `fields` positionally or as an options
-- table (an unknown option raises, as for every module); forward is fn(x, fields...).
local function activation(name, fn, fields, repr)
  local cls = nn.class(name)
  local allowed = set(table.unpack(fields))
  function cls:__init(...)
    local n, a = select("#", ...), { ... }
    if n == 1 and type(a[1]) == "table" then
      local o = check_options(name, a[1], allowed, 3)
      a = {}
      for i, f in ipairs(fields) do a[i] = o[f] end
    elseif n > #fields then
      raise(string.format("%s: takes at most %d argument%s (%s), got %d", name, #fields,
        #fields == 1 and "" or "s", #fields == 0 and "none" or table.concat(fields, ", "), n))
    end
    for i, f in ipairs(fields) do self[f] = a[i] end
    local ap = self.approximate
    if name == "GELU" and ap ~= nil and ap ~= "none" and ap ~= "tanh" then
      raise(string.format("GELU: approximate must be 'none' or 'tanh', got %s",
        type(ap) == "string" and "'" .. ap .. "'" or ltc.typename(ap)))
    end
    if self.inplace then raise(name .. ": inplace=true is not supported (ltc modules return a new tensor)") end
  end
  cls.forward = function(self, x)
    if #fields == 0 or self[fields[1]] == nil then return fn(x) end
    return fn(x, self[fields[1]])
  end
  if repr then cls.extra_repr = repr end
  return cls
end
nn.ReLU = activation("ReLU", F.relu, { "inplace" })
nn.GELU = activation("GELU", F.gelu, { "approximate" }, function(self)
  return self.approximate and self.approximate ~= "none" and "approximate='" .. self.approximate .. "'" or ""
end)
nn.Tanh = activation("Tanh", F.tanh, {})
nn.Sigmoid = activation("Sigmoid", F.sigmoid, {})

--- nn.Softmax(dim) / nn.LogSoftmax(dim), or nn.Softmax{dim = d}.
local function dim_arg(name, dim)
  if type(dim) == "table" then dim = check_options(name, dim, set("dim"), 4).dim end
  return dim or -1
end
nn.Softmax = nn.class("Softmax")
function nn.Softmax:__init(dim) self.dim = dim_arg("Softmax", dim) end
function nn.Softmax:forward(x) return F.softmax(x, self.dim) end
function nn.Softmax:extra_repr() return "dim=" .. self.dim end
nn.LogSoftmax = nn.class("LogSoftmax")
function nn.LogSoftmax:__init(dim) self.dim = dim_arg("LogSoftmax", dim) end
function nn.LogSoftmax:forward(x) return F.log_softmax(x, self.dim) end
function nn.LogSoftmax:extra_repr() return "dim=" .. self.dim end

--- nn.Dropout([p=0.5]) or nn.Dropout{p = 0.5}: F.dropout while training, identity in eval
-- mode. p outside [0, 1] is an error here, as in F.dropout and ltc.dropout.
nn.Dropout = nn.class("Dropout")
function nn.Dropout:__init(p)
  if type(p) == "table" then p = check_options("Dropout", p, set("p"), 3).p end
  if p == nil then p = 0.5 end
  check_p("Dropout", p, 4)
  self.p = p
end
function nn.Dropout:forward(x) return F.dropout(x, self.p, self.training) end
function nn.Dropout:extra_repr() return "p=" .. self.p end

--- nn.Flatten([start_dim=2 [, end_dim=-1]]).
nn.Flatten = nn.class("Flatten")
function nn.Flatten:__init(s, e)
  if type(s) == "table" then
    local o = check_options("Flatten", s, set("start_dim", "end_dim"), 3)
    s, e = o.start_dim, o.end_dim
  end
  self.start_dim, self.end_dim = s or 2, e or -1
end
function nn.Flatten:forward(x) return F.flatten(x, self.start_dim, self.end_dim) end
function nn.Flatten:extra_repr() return string.format("start_dim=%d, end_dim=%d", self.start_dim, self.end_dim) end

--- nn.Sequential(m1, m2, ...): applies the modules in order; children named "1", "2", ...;
-- #seq is the number of children, seq[i] the i-th.
nn.Sequential = nn.class("Sequential")
function nn.Sequential:__init(...)
  for i = 1, select("#", ...) do check_module(self, tostring(i), (select(i, ...)), 3) end
  for i, m in ipairs({ ... }) do self:add_module(tostring(i), m) end
end
function nn.Sequential:forward(x)
  -- the children in order, read in place (no table per call: this is every step's path)
  local slots, names = rawget(self, "_slots"), rawget(self, "_modules")
  for i = 1, #names do
    local m = slots[names[i]]
    if m ~= nil then x = m(x) end
  end
  return x
end
function nn.Sequential:add(m) return self:add_module(tostring(#self._modules + 1), m) end

--- nn.LayerNorm(normalized_shape [, {eps=1e-5, elementwise_affine=true, bias=true}]): weight
-- 1, bias 0.
nn.LayerNorm = nn.class("LayerNorm")
function nn.LayerNorm:__init(shape, opts)
  opts = check_options("LayerNorm", opts, set("eps", "elementwise_affine", "bias"), 3)
  if math.type(shape) == "integer" then shape = { shape } end
  local ok = type(shape) == "table" and #shape > 0
  for i = 1, ok and #shape or 0 do ok = ok and math.type(shape[i]) == "integer" and shape[i] >= 0 end
  if not ok then
    raise("LayerNorm: bad argument #1 (normalized_shape: an integer size or a table of them "
      .. "expected, got " .. (type(shape) == "table" and "a table with other entries"
        or ltc.typename(shape)) .. ")")
  end
  self.normalized_shape, self.eps = shape, opts.eps or 1e-5
  self.elementwise_affine = opts.elementwise_affine ~= false
  if self.elementwise_affine then
    self:register_parameter("weight", ltc.ones(shape))
    if opts.bias ~= false then self:register_parameter("bias", ltc.zeros(shape)) end
  end
end
function nn.LayerNorm:forward(x)
  return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
end
function nn.LayerNorm:extra_repr()
  return string.format("{%s}, eps=%g, elementwise_affine=%s", table.concat(self.normalized_shape, ", "),
    self.eps, tostring(self.elementwise_affine))
end

--- nn.Embedding(num_embeddings, embedding_dim [, {padding_idx}]): weight standard normal
-- (PyTorch); indices are 1-based. With padding_idx (1-based, negative from the end), that
-- row starts at zero and gets no gradient (PyTorch).
nn.Embedding = nn.class("Embedding")
function nn.Embedding:__init(num, dim, opts)
  check_size("Embedding", "num_embeddings", num)
  check_size("Embedding", "embedding_dim", dim)
  opts = check_options("Embedding", opts, set("padding_idx"), 3)
  local pad = opts.padding_idx
  if pad ~= nil then
    if math.type(pad) ~= "integer" or pad == 0 or pad > num or pad < -num then
      raise(string.format("Embedding: padding_idx must be in 1..%d or -%d..-1 (got %s)", num, num,
        tostring(pad)))
    end
    if pad < 0 then pad = num + pad + 1 end
  end
  self.num_embeddings, self.embedding_dim, self.padding_idx = num, dim, pad
  local w = ltc.no_grad(function()
    local r = ltc.randn(num, dim)
    if pad then r[pad] = 0 end
    return r
  end)
  self:register_parameter("weight", w)
end
function nn.Embedding:forward(idx)
  return F.embedding(idx, self.weight, { padding_idx = self.padding_idx })
end
function nn.Embedding:extra_repr()
  local s = string.format("%d, %d", self.num_embeddings, self.embedding_dim)
  if self.padding_idx then s = s .. ", padding_idx=" .. self.padding_idx end
  return s
end

---------------------------------------------------------------------------------------------
-- nn.utils

nn.utils = {}

-- the parameters of a list, a module or one tensor that have a gradient
local function with_grads(params, fname)
  if is_module(params) then params = params:parameters() end
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
-- gradients together (norm_type math.huge: the largest absolute value). Returns total as a
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
  if type(max_norm) ~= "number" or type(norm_type) ~= "number" then
    raise("clip_grad_norm_: max_norm and norm_type must be numbers")
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

nn._private = { check_module = check_module, set = set, uniform = uniform }
require("ltc.nn_loss")(nn, F)
require("ltc.nn_rnn")(nn, F)
require("ltc.nn_layers")(nn, F)
require("ltc.nn_attention")(nn, F)


return nn
