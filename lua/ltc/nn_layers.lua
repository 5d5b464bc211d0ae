--- More ltc.nn modules (PyTorch's names, options and defaults), added to ltc.nn by
-- lua/ltc/nn.lua: require("ltc.nn_layers")(nn, F). Activations (Identity, LeakyReLU, ELU,
-- SiLU, Mish, Softplus, Hardtanh), containers (ModuleList, ModuleDict), shapes (Unflatten,
-- Upsample), normalisation (BatchNorm1d, BatchNorm2d, GroupNorm), pooling (AvgPool2d,
-- AdaptiveAvgPool2d) and convolutions (Conv1d, ConvTranspose2d); spec/nn_layers_spec.lua
-- compares them with PyTorch.
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local ltc = require "ltc"
local positional = require "ltc.nn_positional" -- PyTorch's positional constructor arguments

return function(nn, F)
  local check_options, set, check_size = nn.check_options, nn.option_set, nn.check_size
  local uniform = nn._private.uniform
  local check_module = nn._private.check_module

  ---------------------------------------------------------------------------------------------
  -- activations

  --- F.leaky_relu(x [, negative_slope=0.01]), F.elu(x [, alpha=1]), F.silu(x), F.mish(x),
  -- F.softplus(x [, beta=1 [, threshold=20]]) (x where beta x > threshold), F.hardtanh(x [,
  -- min_val=-1 [, max_val=1]]): PyTorch's formulas.
  function F.leaky_relu(x, slope) return x:leaky_relu(slope or 0.01) end
  function F.elu(x, alpha)
    alpha = alpha or 1.0
    return ltc.where(x:gt(0), x, x:expm1() * alpha)
  end
  function F.silu(x) return x:silu() end
  function F.softplus(x, beta, threshold)
    beta, threshold = beta or 1.0, threshold or 20.0
    local bx = x * beta
    local soft = bx:exp():log1p() / beta
    return ltc.where(bx:gt(threshold), x, soft)
  end
  function F.mish(x) return x * F.softplus(x):tanh() end
  function F.hardtanh(x, min_val, max_val) return x:clamp(min_val or -1, max_val or 1) end

  local function act(name, fields, fn, repr)
    local cls = nn.class(name)
    function cls:__init(...)
      local a = { ... }
      if type(a[1]) == "table" then
        local o = check_options(name, a[1], set(table.unpack(fields)), 3)
        a = {}
        for i, f in ipairs(fields) do a[i] = o[f] end
      end
      for i, f in ipairs(fields) do self[f] = a[i] end
    end
    function cls:forward(x)
      local args = {}
      for i, f in ipairs(fields) do args[i] = self[f] end
      return fn(x, table.unpack(args, 1, #fields))
    end
    if repr then cls.extra_repr = repr end
    return cls
  end

  --- nn.Identity(), nn.LeakyReLU([negative_slope]), nn.ELU([alpha]), nn.SiLU(), nn.Mish(),
  -- nn.Softplus([beta [, threshold]]), nn.Hardtanh([min_val [, max_val]]); the arguments may
  -- also be given as an options table ({negative_slope = 0.2}).
  nn.Identity = nn.class("Identity")
  function nn.Identity:forward(x) return x end
  nn.LeakyReLU = act("LeakyReLU", { "negative_slope" }, F.leaky_relu,
    function(self) return "negative_slope=" .. (self.negative_slope or 0.01) end)
  nn.ELU = act("ELU", { "alpha" }, F.elu, function(self) return "alpha=" .. (self.alpha or 1.0) end)
  nn.SiLU = act("SiLU", {}, F.silu)
  nn.Mish = act("Mish", {}, F.mish)
  nn.Softplus = act("Softplus", { "beta", "threshold" }, F.softplus, function(self)
    return string.format("beta=%s, threshold=%s", self.beta or 1, self.threshold or 20)
  end)
  nn.Hardtanh = act("Hardtanh", { "min_val", "max_val" }, F.hardtanh, function(self)
    return string.format("min_val=%s, max_val=%s", self.min_val or -1, self.max_val or 1)
  end)

  ---------------------------------------------------------------------------------------------
  -- containers

  --- nn.ModuleList([{m1, m2, ...}]): holds modules as children "1", "2", ... (registered:
  -- their parameters are the owner's); l[i], #l, l:append(m), l:extend(list), ipairs(l:children()).
  -- It has no forward (PyTorch).
  nn.ModuleList = nn.class("ModuleList")
  function nn.ModuleList:__init(list)
    if list ~= nil and type(list) ~= "table" then raise("ModuleList: a list of modules expected") end
    for i, m in ipairs(list or {}) do check_module(self, tostring(i), m, 3) end
    for _, m in ipairs(list or {}) do self:append(m) end
  end
  function nn.ModuleList:append(m)
    check_module(self, tostring(#self + 1), m, 2)
    self:add_module(tostring(#self + 1), m)
    return self
  end
  function nn.ModuleList:extend(list)
    for _, m in ipairs(list) do self:append(m) end
    return self
  end
  function nn.ModuleList:forward() raise("ModuleList: has no forward; call its modules") end

  --- nn.ModuleDict([modules]): children by name; modules is a list of {name, module} pairs
  -- (kept in order) or a table name -> module (sorted by name). d.name, d[name], #d,
  -- d:keys(), d:items() (pairs in order).
  nn.ModuleDict = nn.class("ModuleDict")
  function nn.ModuleDict:__init(mods)
    if mods == nil then return end
    if type(mods) ~= "table" then raise("ModuleDict: a table of modules expected") end
    local pairs_ = {}
    if #mods > 0 then pairs_ = mods
    else
      local keys = {}
      for k in pairs(mods) do keys[#keys + 1] = k end
      table.sort(keys)
      for _, k in ipairs(keys) do pairs_[#pairs_ + 1] = { k, mods[k] } end
    end
    for _, kv in ipairs(pairs_) do
      check_module(self, tostring(kv[1]), kv[2], 3)
      self:add_module(kv[1], kv[2])
    end
  end
  function nn.ModuleDict:keys()
    local ks = {}
    for i, nc in ipairs(self:named_children()) do ks[i] = nc[1] end
    return ks
  end
  function nn.ModuleDict:items() return self:named_children() end
  function nn.ModuleDict:forward() raise("ModuleDict: has no forward; call its modules") end

  ---------------------------------------------------------------------------------------------
  -- shapes

  --- nn.Unflatten(dim, sizes): dim (1-based, negative from the end) becomes dims `sizes`.
  nn.Unflatten = nn.class("Unflatten")
  function nn.Unflatten:__init(dim, sizes)
    if math.type(dim) ~= "integer" or type(sizes) ~= "table" then
      raise("Unflatten: expected a dim and a table of sizes")
    end
    self.dim, self.sizes = dim, sizes
  end
  function nn.Unflatten:forward(x)
    local s = x:size()
    local d = self.dim < 0 and #s + self.dim + 1 or self.dim
    local out = {}
    for i = 1, d - 1 do out[#out + 1] = s[i] end
    for _, v in ipairs(self.sizes) do out[#out + 1] = v end
    for i = d + 1, #s do out[#out + 1] = s[i] end
    return x:reshape(out)
  end
  function nn.Unflatten:extra_repr()
    return string.format("dim=%d, unflattened_size={%s}", self.dim, table.concat(self.sizes, ", "))
  end

  -- indices (int64, 1-based) and weights for resizing a dim of n to m
  local function resize_plan(n, m, scale, mode, align)
    local i0, i1, w = {}, {}, {}
    for j = 0, m - 1 do
      if mode == "nearest" then
        local src = math.floor(j * (scale and 1 / scale or n / m))
        i0[j + 1] = math.min(src, n - 1) + 1
      else
        local src
        if align then src = m > 1 and j * (n - 1) / (m - 1) or 0
        else
          src = (j + 0.5) * (scale and 1 / scale or n / m) - 0.5
          if src < 0 then src = 0 end
        end
        local a = math.floor(src)
        if a > n - 1 then a = n - 1 end
        local b = math.min(a + 1, n - 1)
        i0[j + 1], i1[j + 1], w[j + 1] = a + 1, b + 1, src - a
      end
    end
    return ltc.tensor(i0, "int64"), mode ~= "nearest" and ltc.tensor(i1, "int64") or nil,
      mode ~= "nearest" and w or nil
  end

  --- F.interpolate(x, {size | scale_factor, mode="nearest"|"bilinear", align_corners=false}):
  -- resizes the last two dims of x [N, C, H, W] (nearest: PyTorch's legacy "nearest" index
  -- floor(j * in / out); bilinear: half-pixel centres, or corners aligned).
  function F.interpolate(x, opts)
    opts = check_options("interpolate", opts, set("size", "scale_factor", "mode", "align_corners"), 2)
    local mode = opts.mode or "nearest"
    if mode ~= "nearest" and mode ~= "bilinear" then
      raise("interpolate: mode must be 'nearest' or 'bilinear', not '" .. tostring(mode) .. "'")
    end
    if x:dim() ~= 4 then
      raise(string.format("interpolate: input must be 4-d [N, C, H, W], got %d-d", x:dim()))
    end
    local H, W = x:size(3), x:size(4)
    local size, sf = opts.size, opts.scale_factor
    if (size == nil) == (sf == nil) then raise("interpolate: give exactly one of size and scale_factor") end
    local oh, ow, sh, sw
    if size then
      if type(size) == "number" then size = { size, size } end
      oh, ow = size[1], size[2]
    else
      if type(sf) == "number" then sf = { sf, sf } end
      sh, sw = sf[1], sf[2]
      oh, ow = math.floor(H * sh), math.floor(W * sw)
    end
    local function along(t, dim, n, m, scale)
      local a, b, w = resize_plan(n, m, scale, mode, opts.align_corners)
      local ta = t:index_select(dim, a)
      if not b then return ta end
      local shape = { 1, 1, 1, 1 }
      shape[dim] = m
      local wt = ltc.tensor(w, t:dtype()):reshape(shape)
      return ta + (t:index_select(dim, b) - ta) * wt
    end
    return along(along(x, 3, H, oh, sh), 4, W, ow, sw)
  end

  --- nn.Upsample({size | scale_factor, mode="nearest", align_corners}): F.interpolate.
  nn.Upsample = nn.class("Upsample")
  function nn.Upsample:__init(opts)
    self.opts = check_options("Upsample", opts, set("size", "scale_factor", "mode", "align_corners"), 3)
    self.mode = self.opts.mode or "nearest"
  end
  function nn.Upsample:forward(x) return F.interpolate(x, self.opts) end
  function nn.Upsample:extra_repr()
    local sf = self.opts.scale_factor
    return string.format("scale_factor=%s, mode='%s'", type(sf) == "table" and table.concat(sf, "x")
      or tostring(sf), self.mode)
  end

  ---------------------------------------------------------------------------------------------
  -- normalisation

  local function batch_norm_class(name, dims)
    local cls = nn.class(name)
    function cls:__init(num_features, ...)
      check_size(name, "num_features", num_features)
      local order = { "eps", "momentum", "affine", "track_running_stats" }
      local opts = check_options(name, positional(name, "num_features", order, ...), set(table.unpack(order)), 3)
      self.num_features, self.eps, self.momentum = num_features, opts.eps or 1e-5, opts.momentum or 0.1
      self.affine = opts.affine ~= false
      self.track_running_stats = opts.track_running_stats ~= false
      if self.affine then
        self:register_parameter("weight", ltc.ones(num_features))
        self:register_parameter("bias", ltc.zeros(num_features))
      end
      if self.track_running_stats then
        self:register_buffer("running_mean", ltc.zeros(num_features))
        self:register_buffer("running_var", ltc.ones(num_features))
        self:register_buffer("num_batches_tracked", ltc.tensor(0, "int64"))
      end
    end
    function cls:forward(x)
      if not ltc.is_tensor(x) then
        raise(string.format("%s: input must be a tensor, got %s", name, ltc.typename(x)))
      end
      local ok = false
      for _, d in ipairs(dims) do ok = ok or x:dim() == d end
      if not ok or x:size(2) ~= self.num_features then
        raise(string.format("%s: input of size [%s] must be %s-d with %d channels in dim 2", name,
          table.concat(x:size(), ", "), table.concat(dims, "-d or "), self.num_features))
      end
      local training = self.training or not self.track_running_stats
      local rm, rv = self.running_mean, self.running_var
      if not self.track_running_stats then
        rm, rv = ltc.zeros(self.num_features, x:dtype()), ltc.ones(self.num_features, x:dtype())
      elseif self.training then
        self.num_batches_tracked:add_(1)
      end
      return ltc.batch_norm(x, rm, rv, self.weight, self.bias, training, self.momentum, self.eps)
    end
    function cls:extra_repr()
      return string.format("%d, eps=%g, momentum=%g, affine=%s, track_running_stats=%s",
        self.num_features, self.eps, self.momentum, tostring(self.affine), tostring(self.track_running_stats))
    end
    return cls
  end

  --- nn.BatchNorm1d(num_features [, {eps=1e-5, momentum=0.1, affine=true,
  -- track_running_stats=true}]) over [N, C] or [N, C, L]; nn.BatchNorm2d over [N, C, H, W].
  -- Training normalises by the batch statistics and updates the running ones in place
  -- (buffers running_mean, running_var, num_batches_tracked: in state_dict); eval() uses the
  -- running statistics.
  nn.BatchNorm1d = batch_norm_class("BatchNorm1d", { 2, 3 })
  nn.BatchNorm2d = batch_norm_class("BatchNorm2d", { 4 })

  --- F.group_norm(x, num_groups [, weight [, bias [, eps=1e-5]]]): x [N, C, ...] normalised
  -- over each group of C / num_groups channels and the other dims (biased variance).
  function F.group_norm(x, G, weight, bias, eps)
    local s = x:size()
    local N, C = s[1], s[2]
    if math.type(G) ~= "integer" or G < 1 then
      raise("group_norm: num_groups must be a positive integer (got " .. tostring(G) .. ")")
    end
    if C % G ~= 0 then
      raise(string.format("group_norm: %d channels do not split into %d groups", C, G))
    end
    local g = x:reshape({ N, G, -1 })
    local mu = g:mean(3, true)
    local d = g - mu
    local var = (d * d):mean(3, true)
    local y = (d * (var + (eps or 1e-5)) ^ -0.5):reshape(s)
    local shape = { 1, C }
    for _ = 3, #s do shape[#shape + 1] = 1 end
    if weight then y = y * weight:reshape(shape) end
    if bias then y = y + bias:reshape(shape) end
    return y
  end

  --- nn.GroupNorm(num_groups, num_channels [, {eps=1e-5, affine=true}]).
  nn.GroupNorm = nn.class("GroupNorm")
  function nn.GroupNorm:__init(G, C, ...)
    check_size("GroupNorm", "num_groups", G)
    check_size("GroupNorm", "num_channels", C)
    if C % G ~= 0 then raise(string.format("GroupNorm: num_channels %d must be divisible by num_groups %d", C, G)) end
    local opts = check_options("GroupNorm", positional("GroupNorm", "num_channels", { "eps", "affine" }, ...),
      set("eps", "affine"), 3)
    self.num_groups, self.num_channels, self.eps = G, C, opts.eps or 1e-5
    self.affine = opts.affine ~= false
    if self.affine then
      self:register_parameter("weight", ltc.ones(C))
      self:register_parameter("bias", ltc.zeros(C))
    end
  end
  function nn.GroupNorm:forward(x) return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps) end
  function nn.GroupNorm:extra_repr()
    return string.format("%d, %d, eps=%g, affine=%s", self.num_groups, self.num_channels, self.eps, tostring(self.affine))
  end

  ---------------------------------------------------------------------------------------------
  -- pooling

  --- nn.AvgPool2d(kernel_size [, {stride=kernel_size, padding=0, ceil_mode=false,
  -- count_include_pad=true}]) (or PyTorch's positional stride, padding).
  nn.AvgPool2d = nn.class("AvgPool2d")
  local avgpool_order = { "stride", "padding", "ceil_mode", "count_include_pad" }
  function nn.AvgPool2d:__init(k, ...)
    local o = check_options("AvgPool2d", positional("AvgPool2d", "kernel_size", avgpool_order, ...),
      set(table.unpack(avgpool_order)), 3)
    self.kernel_size, self.stride, self.padding = k, o.stride or k, o.padding or 0
    self.ceil_mode, self.count_include_pad = o.ceil_mode or false, o.count_include_pad ~= false
  end
  function nn.AvgPool2d:forward(x)
    return ltc.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)
  end
  function nn.AvgPool2d:extra_repr()
    return string.format("kernel_size=%s, stride=%s, padding=%s", nn.size_repr(self.kernel_size),
      nn.size_repr(self.stride), nn.size_repr(self.padding))
  end

  -- [m, n] averaging matrix of adaptive pooling from n to m cells (PyTorch's windows
  -- floor(i n / m) .. ceil((i + 1) n / m))
  local function adaptive_matrix(n, m, dtype)
    local rows = {}
    for i = 0, m - 1 do
      local a, b = (i * n) // m, -((-(i + 1) * n) // m)
      local r = {}
      for j = 0, n - 1 do r[j + 1] = (j >= a and j < b) and 1 / (b - a) or 0 end
      rows[i + 1] = r
    end
    return ltc.tensor(rows, dtype)
  end

  --- F.adaptive_avg_pool2d(x, output_size): x [N, C, H, W] (or [C, H, W]) averaged over
  -- PyTorch's adaptive windows to output_size (a number or {h, w}; nil keeps that dim).
  function F.adaptive_avg_pool2d(x, output_size)
    if type(output_size) == "number" then output_size = { output_size, output_size } end
    local H, W = x:size(-2), x:size(-1)
    local oh, ow = output_size[1] or H, output_size[2] or W
    local ph, pw = adaptive_matrix(H, oh, x:dtype()), adaptive_matrix(W, ow, x:dtype())
    return ph:matmul(x):matmul(pw:t())
  end

  --- nn.AdaptiveAvgPool2d(output_size).
  nn.AdaptiveAvgPool2d = nn.class("AdaptiveAvgPool2d")
  function nn.AdaptiveAvgPool2d:__init(size)
    if type(size) == "table" and #size == 0 and next(size) ~= nil then -- an options table
      size = check_options("AdaptiveAvgPool2d", size, set("output_size"), 3).output_size
    end
    self.output_size = size
  end
  function nn.AdaptiveAvgPool2d:forward(x) return F.adaptive_avg_pool2d(x, self.output_size) end
  function nn.AdaptiveAvgPool2d:extra_repr()
    local s = self.output_size
    return "output_size=" .. (type(s) == "table" and "{" .. table.concat(s, ", ") .. "}" or tostring(s))
  end

  ---------------------------------------------------------------------------------------------
  -- convolutions

  local conv_opts = set("stride", "padding", "dilation", "groups", "bias")

  --- F.conv1d(x [N, C, L], weight [O, C / groups, K] [, bias [, stride [, padding [, dilation
  -- [, groups]]]]]): conv2d over a height of 1.
  function F.conv1d(x, weight, bias, stride, padding, dilation, groups)
    local xs, ws = x:size(), weight:size()
    local function dims(t) return "[" .. table.concat(t, ", ") .. "]" end
    if #xs ~= 3 or #ws ~= 3 then
      raise(string.format("conv1d: input [N, C, L] and weight [out, C / groups, k] must be 3-d, "
        .. "got %s and %s", dims(xs), dims(ws)))
    end
    for what, v in pairs({ stride = stride or 1, dilation = dilation or 1, groups = groups or 1 }) do
      if math.type(v) ~= "integer" or v < 1 then
        raise(string.format("conv1d: %s must be a positive integer, got %s", what, tostring(v)))
      end
    end
    if math.type(padding or 0) ~= "integer" or (padding or 0) < 0 then
      raise("conv1d: padding must be an integer >= 0, got " .. tostring(padding))
    end
    local g = groups or 1
    if ws[2] * g ~= xs[2] or ws[1] % g ~= 0 then
      raise(string.format("conv1d: weight %s does not fit input %s with groups %d (needs [out, "
        .. "%d / groups, k], out divisible by groups)", dims(ws), dims(xs), g, xs[2]))
    end
    local span = (dilation or 1) * (ws[3] - 1) + 1
    if xs[3] + 2 * (padding or 0) < span then
      raise(string.format("conv1d: the padded input length (%d) is smaller than the dilated "
        .. "kernel (%d)", xs[3] + 2 * (padding or 0), span))
    end
    local w = weight:unsqueeze(3)
    local y = F.conv2d(x:unsqueeze(3), w, bias, { 1, stride or 1 }, { 0, padding or 0 },
      { 1, dilation or 1 }, groups or 1)
    return y:squeeze(3)
  end

  --- nn.Conv1d(in_channels, out_channels, kernel_size [, {stride, padding, dilation, groups,
  -- bias}]): weight [out, in / groups, kernel_size] and bias uniform in +-1/sqrt(fan_in).
  nn.Conv1d = nn.class("Conv1d")
  function nn.Conv1d:__init(cin, cout, k, ...)
    check_size("Conv1d", "in_channels", cin)
    check_size("Conv1d", "out_channels", cout)
    check_size("Conv1d", "kernel_size", k)
    local opts = check_options("Conv1d", positional("Conv1d", "kernel_size",
      { "stride", "padding", "dilation", "groups", "bias" }, ...), conv_opts, 3)
    self.cin, self.cout, self.k = cin, cout, k
    self.stride, self.padding = opts.stride or 1, opts.padding or 0
    self.dilation, self.groups = opts.dilation or 1, opts.groups or 1
    local bound = 1 / math.sqrt(cin / self.groups * k)
    self:register_parameter("weight", uniform({ cout, cin // self.groups, k }, bound))
    if opts.bias ~= false then self:register_parameter("bias", uniform({ cout }, bound)) end
  end
  function nn.Conv1d:forward(x)
    return F.conv1d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
  end
  function nn.Conv1d:extra_repr()
    return string.format("%d, %d, kernel_size=%d, stride=%d, padding=%d", self.cin, self.cout,
      self.k, self.stride, self.padding)
  end

  local function pair(v) if type(v) == "table" then return v end return { v, v } end

  --- F.conv_transpose2d(x [N, C, H, W], weight [C, O / groups, kh, kw] [, bias [, stride
  -- [, padding [, output_padding [, groups [, dilation]]]]]]): the gradient of conv2d with
  -- respect to its input; output size (H - 1) stride - 2 padding + dilation (k - 1) +
  -- output_padding + 1 (PyTorch).
  function F.conv_transpose2d(x, weight, bias, stride, padding, output_padding, groups, dilation)
    stride, padding, output_padding = pair(stride or 1), pair(padding or 0), pair(output_padding or 0)
    dilation, groups = pair(dilation or 1), groups or 1
    local s = x:size()
    local ws = weight:size()
    if #s ~= 4 or #ws ~= 4 then
      ltc._raise(string.format("conv_transpose2d: input [N, C, H, W] and weight [C, O / groups, kh, "
        .. "kw] must be 4-d, got %d-d and %d-d", #s, #ws))
    end
    if ws[1] ~= s[2] or ws[1] % groups ~= 0 then
      raise(string.format("conv_transpose2d: weight [%s] does not fit input [%s] with groups %d "
        .. "(needs [%d, out / groups, kh, kw])", table.concat(ws, ", "), table.concat(s, ", "),
        groups, s[2]))
    end
    local out = { s[1], ws[2] * groups }
    for i = 1, 2 do
      out[i + 2] = (s[i + 2] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (ws[i + 2] - 1)
        + output_padding[i] + 1
    end
    local y = ltc.conv2d_backward_input(x, weight, out, stride, padding, dilation, groups)
    if bias then y = y + bias:reshape({ 1, -1, 1, 1 }) end
    return y
  end

  --- nn.ConvTranspose2d(in_channels, out_channels, kernel_size [, {stride, padding,
  -- output_padding, groups, bias, dilation}]): weight [in, out / groups, kh, kw] and bias
  -- uniform in +-1/sqrt(out / groups * kh * kw) (PyTorch's fan_in of the transposed weight).
  nn.ConvTranspose2d = nn.class("ConvTranspose2d")
  function nn.ConvTranspose2d:__init(cin, cout, k, ...)
    check_size("ConvTranspose2d", "in_channels", cin)
    check_size("ConvTranspose2d", "out_channels", cout)
    local order = { "stride", "padding", "output_padding", "groups", "bias", "dilation" }
    local opts = check_options("ConvTranspose2d", positional("ConvTranspose2d", "kernel_size", order, ...),
      set(table.unpack(order)), 3)
    local kk = pair(k)
    nn.check_size("ConvTranspose2d", "kernel_size", kk[1])
    nn.check_size("ConvTranspose2d", "kernel_size", kk[2])
    self.cin, self.cout, self.kernel_size = cin, cout, kk
    self.stride, self.padding, self.output_padding = opts.stride or 1, opts.padding or 0, opts.output_padding or 0
    self.groups, self.dilation = opts.groups or 1, opts.dilation or 1
    local bound = 1 / math.sqrt(cout / self.groups * kk[1] * kk[2])
    self:register_parameter("weight", uniform({ cin, cout // self.groups, kk[1], kk[2] }, bound))
    if opts.bias ~= false then self:register_parameter("bias", uniform({ cout }, bound)) end
  end
  function nn.ConvTranspose2d:forward(x)
    return F.conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding,
      self.output_padding, self.groups, self.dilation)
  end
  function nn.ConvTranspose2d:extra_repr()
    return string.format("%d, %d, kernel_size=(%d, %d), stride=%s", self.cin, self.cout,
      self.kernel_size[1], self.kernel_size[2], nn.size_repr(self.stride, true))
  end
end
