--- ltc.nn's first layers (PyTorch's names, options and defaults): Linear, Conv2d, MaxPool2d,
-- the activations ReLU, GELU, Tanh and Sigmoid, Softmax, LogSoftmax, Dropout, Flatten,
-- Sequential, LayerNorm and Embedding. Added by lua/ltc/nn.lua: require("ltc.nn_basic")(nn,
-- F), after nn_module.lua; nn_layers.lua holds more.
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local ltc = require "ltc"
local positional = require "ltc.nn_positional" -- PyTorch's positional constructor arguments

return function(nn, F)
  local check_options, set, check_size = nn.check_options, nn.option_set, nn.check_size
  local uniform = nn._private.uniform
  local check_module, check_p = nn._private.check_module, nn._private.check_p
  local sqrt = math.sqrt

  --- nn.Linear(in_features, out_features [, {bias=true}]) (or a boolean bias, PyTorch's
  -- positional form): y = x . W^T + b. W [out, in] and b [out] uniform in +-1/sqrt(in_features)
  -- (PyTorch's kaiming_uniform with a = sqrt(5)); bias=false registers no bias (m.bias is nil).
  nn.Linear = nn.class("Linear")
  function nn.Linear:__init(in_features, out_features, ...)
    check_size("Linear", "in_features", in_features)
    check_size("Linear", "out_features", out_features)
    -- nn.Linear(2, 3, true, {bias = false}) names bias twice: an error, as PyTorch's
    local opts = check_options("Linear", positional("Linear", "out_features", { "bias" }, ...), set("bias"), 3)
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
  -- (the positional ones may end in an options table: nn.Conv2d(1, 2, 3, 1, {padding = 1}))
  local conv2d_order = { "stride", "padding", "dilation", "groups", "bias" }
  function nn.Conv2d:__init(cin, cout, k, ...)
    if not ltc.conv2d then raise("Conv2d: this build has no conv2d op") end
    check_size("Conv2d", "in_channels", cin)
    check_size("Conv2d", "out_channels", cout)
    local opts = check_options("Conv2d", positional("Conv2d", "kernel_size", conv2d_order, ...),
      set(table.unpack(conv2d_order)), 3)
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
  local maxpool_order = { "stride", "padding", "dilation", "ceil_mode" }
  function nn.MaxPool2d:__init(k, ...)
    local opts = check_options("MaxPool2d", positional("MaxPool2d", "kernel_size", maxpool_order, ...),
      set(table.unpack(maxpool_order)), 3)
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
  --- nn.ReLU(), nn.GELU([approximate="none"|"tanh"]), nn.Tanh(), nn.Sigmoid(): the activations
  -- as modules (F.relu, F.gelu, F.tanh, F.sigmoid); options as PyTorch's (inplace=true raises).
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
  function nn.LayerNorm:__init(shape, ...)
    local opts = check_options("LayerNorm", positional("LayerNorm", "normalized_shape",
      { "eps", "elementwise_affine", "bias" }, ...), set("eps", "elementwise_affine", "bias"), 3)
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
  -- {weights, freeze} from nn.Embedding.from_pretrained for the __init it calls (PyTorch's
  -- private _weight and _freeze arguments)
  local pretrained
  function nn.Embedding:__init(num, dim, ...)
    local given = pretrained
    pretrained = nil
    check_size("Embedding", "num_embeddings", num)
    check_size("Embedding", "embedding_dim", dim)
    local opts = check_options("Embedding", positional("Embedding", "embedding_dim", { "padding_idx" }, ...),
      set("padding_idx"), 3)
    local pad = opts.padding_idx
    if pad ~= nil then
      if math.type(pad) ~= "integer" or pad == 0 or pad > num or pad < -num then
        raise(string.format("Embedding: padding_idx must be in 1..%d or -%d..-1 (got %s)", num, num,
          tostring(pad)))
      end
      if pad < 0 then pad = num + pad + 1 end
    end
    self.num_embeddings, self.embedding_dim, self.padding_idx = num, dim, pad
    local w
    if given then
      w = given[1]:detach() -- the same storage, a new leaf (PyTorch's Parameter(_weight))
    else
      w = ltc.no_grad(function()
        local r = ltc.randn(num, dim)
        if pad then r[pad] = 0 end
        return r
      end)
    end
    self:register_parameter("weight", w)
    if given and given[2] then self.weight:requires_grad_(false) end
  end

  --- nn.Embedding.from_pretrained(embeddings [, freeze=true [, padding_idx]]), or
  -- from_pretrained(embeddings, {freeze, padding_idx}): an Embedding whose weight is the 2-d
  -- float tensor embeddings [num_embeddings, embedding_dim] (PyTorch's classmethod: the same
  -- storage, so writes to one show in the other; the padding row is kept as given). With
  -- freeze the weight does not require grad (it stays listed by parameters() and the state
  -- dict, as PyTorch's); padding_idx (1-based, negative from the end) gets no gradient.
  function nn.Embedding.from_pretrained(embeddings, ...)
    local fname = "Embedding.from_pretrained"
    local o = check_options(fname, positional(fname, "embeddings", { "freeze", "padding_idx" }, ...),
      set("freeze", "padding_idx"), 2)
    if not ltc.is_tensor(embeddings) or embeddings:dim() ~= 2 then
      raise(string.format("%s: embeddings must be a 2-d tensor [num_embeddings, embedding_dim], got %s",
        fname, ltc.is_tensor(embeddings) and "[" .. table.concat(embeddings:size(), ", ") .. "]"
        or ltc.typename(embeddings)))
    end
    if not embeddings:is_floating_point() then
      raise(fname .. ": embeddings must be of a floating dtype, got " .. embeddings:dtype())
    end
    if o.freeze ~= nil and type(o.freeze) ~= "boolean" then
      raise(fname .. ": freeze must be a boolean, got " .. ltc.typename(o.freeze))
    end
    pretrained = { embeddings, o.freeze ~= false }
    return nn.Embedding(embeddings:size(1), embeddings:size(2), { padding_idx = o.padding_idx })
  end
  function nn.Embedding:forward(idx)
    return F.embedding(idx, self.weight, { padding_idx = self.padding_idx })
  end
  function nn.Embedding:extra_repr()
    local s = string.format("%d, %d", self.num_embeddings, self.embedding_dim)
    if self.padding_idx then s = s .. ", padding_idx=" .. self.padding_idx end
    return s
  end
end
