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
local ltc = require "ltc"

local nn = {}
local F = {}
nn.functional = F

local sqrt = math.sqrt

---------------------------------------------------------------------------------------------
-- functional

local reductions = { none = 0, mean = 1, sum = 2 }
local function reduction_of(opts, fname)
  local r = opts and opts.reduction or "mean"
  local code = reductions[r]
  if not code then
    error(string.format("%s: reduction must be 'none', 'mean' or 'sum', not '%s'", fname, tostring(r)), 3)
  end
  return code
end

--- F.linear(x, weight [, bias]): x . weight^T + bias (x [..., in], weight [out, in]).
function F.linear(x, weight, bias)
  if bias then return ltc.linear(x, weight, bias) end
  return ltc.linear(x, weight)
end

function F.relu(x) return x:relu() end
function F.gelu(x) return x:gelu() end
function F.tanh(x) return x:tanh() end
function F.sigmoid(x) return x:sigmoid() end
function F.softmax(x, dim) return x:softmax(dim or -1) end
function F.log_softmax(x, dim) return x:log_softmax(dim or -1) end

--- F.dropout(x, p, training): zeroes each element with probability p and scales the rest by
-- 1/(1-p) when training (fresh draws from the seeded generator every call; p is a graph
-- parameter, so changing it does not recompile); x itself otherwise.
function F.dropout(x, p, training)
  p = p or 0.5
  if training == false or p == 0 then return x end
  if p == 1 then return x * 0 end
  local keep = ltc.rand(x:size(), x:dtype()):lt(1 - p)
  return x * keep / (1 - p)
end

--- F.flatten(x, start_dim, end_dim): dims start_dim..end_dim (1-based, default 2..-1) merged.
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

--- F.cross_entropy(input, target [, {reduction = "mean"|"sum"|"none"}]): logits [N, C]
-- and 1-based int64 class labels [N]. One fused op forward and backward.
function F.cross_entropy(input, target, opts)
  return ltc.cross_entropy(input, target, reduction_of(opts, "cross_entropy"))
end

--- F.nll_loss(input, target [, opts]): log-probabilities [N, C], 1-based labels [N].
function F.nll_loss(input, target, opts)
  return ltc.nll_loss(input, target, reduction_of(opts, "nll_loss"))
end

--- F.mse_loss(input, target [, opts]): the mean (or sum, or none) of (input - target)^2.
function F.mse_loss(input, target, opts)
  local r = reduction_of(opts, "mse_loss")
  local d = input - target
  local sq = d * d
  if r == 0 then return sq elseif r == 1 then return sq:mean() else return sq:sum() end
end

--- F.one_hot(labels, num_classes): int64 one-hot rows of 1-based labels.
function F.one_hot(labels, num_classes) return ltc.one_hot(labels, num_classes) end

--- F.embedding(indices, weight): rows of weight [num, dim] at the 1-based indices (any
-- shape); the result has indices' size plus dim.
function F.embedding(indices, weight)
  local s = indices:size()
  local rows = weight:index_select(1, indices:reshape({ -1 }))
  s[#s + 1] = weight:size(2)
  return rows:reshape(s)
end

--- F.layer_norm(x, normalized_shape, weight, bias, eps): normalises over the last
-- #normalized_shape dims (biased variance, as PyTorch), then weight * y + bias.
function F.layer_norm(x, normalized_shape, weight, bias, eps)
  if type(normalized_shape) == "number" then normalized_shape = { normalized_shape } end
  eps = eps or 1e-5
  local s = x:size()
  local k, n = #normalized_shape, 1
  for i = 1, k do n = n * normalized_shape[i] end
  local lead = {}
  for i = 1, #s - k do lead[i] = s[i] end
  lead[#lead + 1] = n
  local xf = x:reshape(lead)
  local mu = xf:mean(-1, true)
  local d = xf - mu
  local var = (d * d):mean(-1, true)
  local y = (d * (var + eps) ^ -0.5):reshape(s)
  if weight then y = y * weight end
  if bias then y = y + bias end
  return y
end

--- F.conv2d / F.max_pool2d: the ops of the same names, when the op library has them.
function F.conv2d(x, weight, bias, stride, padding, dilation, groups)
  if not ltc.conv2d then error("conv2d: this build has no conv2d op", 2) end
  return ltc.conv2d(x, weight, bias, stride or 1, padding or 0, dilation or 1, groups or 1)
end

function F.max_pool2d(x, kernel_size, stride, padding)
  if not ltc.max_pool2d then error("max_pool2d: this build has no max_pool2d op", 2) end
  return ltc.max_pool2d(x, kernel_size, stride or kernel_size, padding or 0)
end

---------------------------------------------------------------------------------------------
-- modules

local Module = {}
Module.__index = Module
nn.Module = Module

--- nn.class(name [, parent]): a module class; calling it makes an instance and runs __init.
function nn.class(name, parent)
  local cls = {}
  -- fields, then methods; m[i] is the child named tostring(i) (Sequential's m[1])
  cls.__index = function(self, k)
    local v = cls[k]
    if v == nil and math.type(k) == "integer" then return rawget(self, tostring(k)) end
    return v
  end
  cls.__name = "ltc.nn." .. name
  cls.__call = function(self, ...) return self:forward(...) end
  cls.__tostring = function(self) return self:describe() end
  return setmetatable(cls, {
    __index = parent or Module,
    __call = function(c, ...)
      local o = setmetatable({ _params = {}, _modules = {}, training = true }, c)
      o:__init(...)
      return o
    end,
  })
end

function Module:__init() end

--- m:register_parameter(name, t): t becomes a parameter (requires grad) stored as m[name].
function Module:register_parameter(name, t)
  if t ~= nil then t:requires_grad_() end
  if not self:_has_param(name) then self._params[#self._params + 1] = name end
  self[name] = t
  return t
end

function Module:_has_param(name)
  for _, n in ipairs(self._params) do if n == name then return true end end
  return false
end

--- m:add_module(name, child): child is stored as m[name] and its parameters are m's.
-- Raises "<owner>: module <name> is a <type>, not an ltc.nn module" unless child is a module;
-- `level` as error()'s, counted from the caller of check_module.
local function check_module(owner, name, child, level)
  if type(child) ~= "table" or type(child.forward) ~= "function" then
    error(string.format("%s: module %s is a %s, not an ltc.nn module",
      (getmetatable(owner).__name:gsub("^ltc%.nn%.", "")), name, type(child)), level + 1)
  end
end

function Module:add_module(name, child)
  check_module(self, name, child, 2)
  self._modules[#self._modules + 1] = name
  self[name] = child
  return child
end

--- m:named_parameters(): list of {name, tensor} with dotted names ("1.weight").
function Module:named_parameters(prefix, out, seen)
  out, seen, prefix = out or {}, seen or {}, prefix or ""
  for _, n in ipairs(self._params) do
    local t = self[n]
    if t ~= nil and not seen[t] then
      seen[t] = true
      out[#out + 1] = { prefix .. n, t }
    end
  end
  for _, n in ipairs(self._modules) do
    self[n]:named_parameters(prefix .. n .. ".", out, seen)
  end
  return out
end

--- m:parameters(): the parameter tensors, in the order of named_parameters.
function Module:parameters()
  local ps = {}
  for i, np in ipairs(self:named_parameters()) do ps[i] = np[2] end
  return ps
end

--- m:children(): the direct submodules in order.
function Module:children()
  local cs = {}
  for i, n in ipairs(self._modules) do cs[i] = self[n] end
  return cs
end

--- m:train([mode]) / m:eval(): training mode on (default) or off, for m and its children.
function Module:train(mode)
  if mode == nil then mode = true end
  self.training = mode
  for _, n in ipairs(self._modules) do self[n]:train(mode) end
  return self
end

function Module:eval() return self:train(false) end

--- m:zero_grad(): every parameter's grad becomes nil.
function Module:zero_grad()
  for _, p in ipairs(self:parameters()) do p.grad = nil end
end

--- m:state_dict(): {name = tensor} for every parameter (the tensors themselves, not copies).
function Module:state_dict()
  local sd = {}
  for _, np in ipairs(self:named_parameters()) do sd[np[1]] = np[2] end
  return sd
end

--- m:load_state_dict(sd [, strict=true]): copies sd's tensors into the parameters in place
-- (cast to each parameter's dtype; sizes must match). With strict, missing or unexpected
-- names are errors.
function Module:load_state_dict(sd, strict)
  if strict == nil then strict = true end
  local known = {}
  for _, np in ipairs(self:named_parameters()) do
    local name, p = np[1], np[2]
    known[name] = true
    local v = sd[name]
    if v == nil then
      if strict then error("load_state_dict: missing parameter '" .. name .. "'", 2) end
    else
      local ps, vs = p:size(), v:size()
      local same = #ps == #vs
      for i = 1, #ps do same = same and ps[i] == vs[i] end
      if not same then
        error(string.format("load_state_dict: '%s' has size %s, the module's %s", name,
          table.concat(vs, "x"), table.concat(ps, "x")), 2)
      end
      ltc.no_grad(function() p.data = v:to(p:dtype()) end)
    end
  end
  if strict then
    for name in pairs(sd) do
      if not known[name] then error("load_state_dict: unexpected parameter '" .. name .. "'", 2) end
    end
  end
  return self
end

function Module:extra_repr() return "" end

function Module:describe(indent)
  indent = indent or ""
  local name = (getmetatable(self).__name or "Module"):gsub("^ltc%.nn%.", "")
  if #self._modules == 0 then return name .. "(" .. self:extra_repr() .. ")" end
  local lines = { name .. "(" }
  for _, n in ipairs(self._modules) do
    lines[#lines + 1] = indent .. "  (" .. n .. "): " .. self[n]:describe(indent .. "  ")
  end
  lines[#lines + 1] = indent .. ")"
  return table.concat(lines, "\n")
end

-- Raises "<layer>: <what> must be a positive integer (got ...)" unless v is one.
local function check_size(layer, what, v)
  if math.type(v) ~= "integer" or v < 1 then
    error(string.format("%s: %s must be a positive integer (got %s)", layer, what,
      type(v) == "number" and tostring(v) or type(v)), 4)
  end
end

-- Uniform samples in [-bound, bound) from the seeded generator.
local function uniform(size, bound)
  return ltc.no_grad(function() return ltc.rand(size) * (2 * bound) - bound end)
end
nn.init = { uniform = uniform }

--- nn.Linear(in_features, out_features [, bias=true]): y = x . W^T + b. W [out, in] and b
-- [out] uniform in +-1/sqrt(in_features) (PyTorch's kaiming_uniform with a = sqrt(5)).
nn.Linear = nn.class("Linear")
function nn.Linear:__init(in_features, out_features, bias)
  check_size("Linear", "in_features", in_features)
  check_size("Linear", "out_features", out_features)
  self.in_features, self.out_features = in_features, out_features
  local bound = 1 / sqrt(in_features)
  self:register_parameter("weight", uniform({ out_features, in_features }, bound))
  if bias ~= false then self:register_parameter("bias", uniform({ out_features }, bound)) end
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
  if not ltc.conv2d then error("Conv2d: this build has no conv2d op", 3) end
  check_size("Conv2d", "in_channels", cin)
  check_size("Conv2d", "out_channels", cout)
  if opts ~= nil and type(opts) ~= "table" then
    local padding, dilation, groups, bias = ...
    opts = { stride = opts, padding = padding, dilation = dilation, groups = groups, bias = bias }
  end
  opts = opts or {}
  self.stride, self.padding = opts.stride or 1, opts.padding or 0
  self.dilation, self.groups = opts.dilation or 1, opts.groups or 1
  local kh, kw = k, k
  if type(k) == "table" then kh, kw = k[1], k[2] end
  self.cin, self.cout, self.kh, self.kw = cin, cout, kh, kw
  local bound = 1 / sqrt(cin / self.groups * kh * kw)
  self:register_parameter("weight", uniform({ cout, cin // self.groups, kh, kw }, bound))
  if opts.bias ~= false then self:register_parameter("bias", uniform({ cout }, bound)) end
end
function nn.Conv2d:forward(x)
  return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
end
function nn.Conv2d:extra_repr()
  return string.format("%d, %d, kernel_size=(%d, %d), stride=%s, padding=%s", self.cin,
    self.cout, self.kh, self.kw, tostring(self.stride), tostring(self.padding))
end

--- nn.MaxPool2d(kernel_size [, stride [, padding]]): needs the max_pool2d op.
nn.MaxPool2d = nn.class("MaxPool2d")
function nn.MaxPool2d:__init(k, stride, padding)
  self.kernel_size, self.stride, self.padding = k, stride or k, padding or 0
end
function nn.MaxPool2d:forward(x) return F.max_pool2d(x, self.kernel_size, self.stride, self.padding) end
function nn.MaxPool2d:extra_repr()
  return string.format("kernel_size=%s, stride=%s", tostring(self.kernel_size), tostring(self.stride))
end

local function activation(name, fn)
  local cls = nn.class(name)
  cls.forward = function(_, x) return fn(x) end
  return cls
end
nn.ReLU = activation("ReLU", F.relu)
nn.GELU = activation("GELU", F.gelu)
nn.Tanh = activation("Tanh", F.tanh)
nn.Sigmoid = activation("Sigmoid", F.sigmoid)

--- nn.Softmax(dim) / nn.LogSoftmax(dim).
nn.Softmax = nn.class("Softmax")
function nn.Softmax:__init(dim) self.dim = dim or -1 end
function nn.Softmax:forward(x) return x:softmax(self.dim) end
nn.LogSoftmax = nn.class("LogSoftmax")
function nn.LogSoftmax:__init(dim) self.dim = dim or -1 end
function nn.LogSoftmax:forward(x) return x:log_softmax(self.dim) end

--- nn.Dropout([p=0.5]): F.dropout while training, identity in eval mode.
nn.Dropout = nn.class("Dropout")
function nn.Dropout:__init(p) self.p = p or 0.5 end
function nn.Dropout:forward(x) return F.dropout(x, self.p, self.training) end
function nn.Dropout:extra_repr() return "p=" .. self.p end

--- nn.Flatten([start_dim=2 [, end_dim=-1]]).
nn.Flatten = nn.class("Flatten")
function nn.Flatten:__init(s, e) self.start_dim, self.end_dim = s or 2, e or -1 end
function nn.Flatten:forward(x) return F.flatten(x, self.start_dim, self.end_dim) end

--- nn.Sequential(m1, m2, ...): applies the modules in order; children named "1", "2", ...
nn.Sequential = nn.class("Sequential")
function nn.Sequential:__init(...)
  for i = 1, select("#", ...) do check_module(self, tostring(i), (select(i, ...)), 3) end
  for i, m in ipairs({ ... }) do self:add_module(tostring(i), m) end
end
function nn.Sequential:forward(x)
  for _, n in ipairs(self._modules) do x = self[n](x) end
  return x
end
function nn.Sequential:add(m) return self:add_module(tostring(#self._modules + 1), m) end

--- nn.LayerNorm(normalized_shape [, {eps=1e-5, elementwise_affine=true}]): weight 1, bias 0.
nn.LayerNorm = nn.class("LayerNorm")
function nn.LayerNorm:__init(shape, opts)
  opts = opts or {}
  if type(shape) == "number" then shape = { shape } end
  self.normalized_shape, self.eps = shape, opts.eps or 1e-5
  if opts.elementwise_affine ~= false then
    self:register_parameter("weight", ltc.ones(shape))
    self:register_parameter("bias", ltc.zeros(shape))
  end
end
function nn.LayerNorm:forward(x)
  return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
end

--- nn.Embedding(num_embeddings, embedding_dim): weight standard normal (PyTorch); indices
-- are 1-based.
nn.Embedding = nn.class("Embedding")
function nn.Embedding:__init(num, dim)
  self.num_embeddings, self.embedding_dim = num, dim
  self:register_parameter("weight", ltc.no_grad(function() return ltc.randn(num, dim) end))
end
function nn.Embedding:forward(idx) return F.embedding(idx, self.weight) end

---------------------------------------------------------------------------------------------
-- losses

local function loss_class(name, fn)
  local cls = nn.class(name)
  function cls:__init(opts) self.reduction = opts and opts.reduction or "mean" end
  function cls:forward(input, target) return fn(input, target, { reduction = self.reduction }) end
  return cls
end

--- nn.CrossEntropyLoss([{reduction}]), nn.NLLLoss, nn.MSELoss: loss(input, target).
nn.CrossEntropyLoss = loss_class("CrossEntropyLoss", F.cross_entropy)
nn.NLLLoss = loss_class("NLLLoss", F.nll_loss)
nn.MSELoss = loss_class("MSELoss", F.mse_loss)

return nn
