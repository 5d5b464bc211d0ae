--- ltc.nn.init (PyTorch's torch.nn.init), added to ltc.nn by lua/ltc/nn.lua:
-- require("ltc.nn_init")(nn, F).
--
--   nn.init.kaiming_uniform_(model.fc.weight, { nonlinearity = "relu" })
--   nn.init.zeros_(model.fc.bias)
--
-- Each fill writes into the tensor in place under ltc.no_grad, as PyTorch's under
-- torch.no_grad: a parameter stays a leaf that requires grad and gets no grad_fn (a view of
-- one writes into its base). The random ones draw from ltc's seeded generator
-- (ltc.manual_seed) and take floating tensors only. Each returns the tensor. The arguments
-- after the tensor are PyTorch's, positional or by name in a trailing options table
-- (nn.init.normal_(w, {std = 0.02})); PyTorch's `generator` argument is not taken. A tensor
-- with no elements is returned as it is (PyTorch's kaiming_ warns). orthogonal_ orthogonalises
-- on the host, in Lua (ltc has no QR op); sparse_ is missing. spec/nn_init_spec.lua,
-- spec/nn_more_spec.lua.
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local ltc = require "ltc"
local positional = require "ltc.nn_positional" -- PyTorch's positional arguments or a table

return function(nn)
  local init = {}
  local set, check_options = nn.option_set, nn.check_options

  -- The options of fname from the arguments after the tensor (names in PyTorch's order),
  -- after checking that t is a tensor (floating too, when `random`).
  local function args(fname, t, names, random, ...)
    if not ltc.is_tensor(t) then
      raise(string.format("%s: bad argument #1 (ltc.Tensor expected, got %s)", fname, ltc.typename(t)))
    end
    if random and not t:is_floating_point() then
      raise(string.format("%s: floating tensors only, got %s (as in PyTorch)", fname, t:dtype()))
    end
    if #names == 0 and select("#", ...) > 0 then
      raise(string.format("%s: takes only the tensor, got %d more argument%s", fname,
        select("#", ...), select("#", ...) == 1 and "" or "s"))
    end
    return check_options(fname, positional(fname, "tensor", names, ...), set(table.unpack(names)), 3)
  end

  -- v, or the default when v is nil; raises unless it is a number (and >= min, when given)
  local function number(fname, what, v, default, min)
    if v == nil then v = default end
    if type(v) ~= "number" or v ~= v then
      raise(string.format("%s: %s must be a number, got %s", fname, what,
        type(v) == "number" and "nan" or ltc.typename(v)))
    end
    if min and v < min then raise(string.format("%s: %s must be >= %g, got %g", fname, what, min, v)) end
    return v
  end

  -- t takes the values of x (a new tensor of t's size) in place, recording nothing
  local function fill(t, x)
    ltc.no_grad(function() t:copy_(x) end)
    return t
  end

  -- uniform in [a, b) and normal samples of t's size and dtype (the seeded generator)
  local function uniform(t, a, b) return fill(t, ltc.rand(t:size(), t:dtype()) * (b - a) + a) end
  local function normal(t, mean, std) return fill(t, ltc.randn(t:size(), t:dtype()) * std + mean) end

  local linear_fns = { linear = true, conv1d = true, conv2d = true, conv3d = true,
    conv_transpose1d = true, conv_transpose2d = true, conv_transpose3d = true, sigmoid = true }

  --- nn.init.calculate_gain(nonlinearity [, param]): PyTorch's recommended gain: 1 for
  -- "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d/2d/3d" and "sigmoid", 5/3 for
  -- "tanh", sqrt(2) for "relu", sqrt(2 / (1 + param^2)) for "leaky_relu" (param the negative
  -- slope, default 0.01), 3/4 for "selu". Another name raises, as does a param of
  -- leaky_relu that is no number.
  function init.calculate_gain(nonlinearity, param)
    local fname = "nn.init.calculate_gain"
    if linear_fns[nonlinearity] then return 1 end
    if nonlinearity == "tanh" then return 5 / 3 end
    if nonlinearity == "relu" then return math.sqrt(2) end
    if nonlinearity == "selu" then return 3 / 4 end
    if nonlinearity == "leaky_relu" then
      if param ~= nil and type(param) ~= "number" then
        raise(string.format("%s: negative_slope %s is not a valid number", fname, ltc.typename(param)))
      end
      local slope = param or 0.01
      return math.sqrt(2 / (1 + slope ^ 2))
    end
    raise(string.format("%s: unsupported nonlinearity %s (known: linear, conv1d, conv2d, conv3d, "
      .. "conv_transpose1d, conv_transpose2d, conv_transpose3d, sigmoid, tanh, relu, leaky_relu, "
      .. "selu)", fname, type(nonlinearity) == "string" and "'" .. nonlinearity .. "'"
        or ltc.typename(nonlinearity)))
  end

  -- fan_in, fan_out of t (nn.init._calculate_fan_in_and_fan_out), errors naming fname
  local function fans(t, fname)
    if not ltc.is_tensor(t) then
      raise(string.format("%s: bad argument #1 (ltc.Tensor expected, got %s)", fname, ltc.typename(t)))
    end
    if t:dim() < 2 then
      raise(string.format("%s: fan in and fan out can not be computed for a tensor with fewer than "
        .. "2 dimensions (got %d-d, size [%s])", fname, t:dim(), table.concat(t:size(), ", ")))
    end
    local field = 1
    for d = 3, t:dim() do field = field * t:size(d) end
    return t:size(2) * field, t:size(1) * field
  end
  --- nn.init._calculate_fan_in_and_fan_out(t): fan_in, fan_out of a weight with at least 2
  -- dims (PyTorch's helper of the same name): size(2) and size(1), each times the receptive
  -- field, the product of the dims after the second (Linear [out, in]: in, out; Conv2d [out,
  -- in / groups, kh, kw]: in / groups * kh * kw, out * kh * kw). Fewer than 2 dims raise.
  function init._calculate_fan_in_and_fan_out(t)
    return fans(t, "nn.init._calculate_fan_in_and_fan_out")
  end

  -- fan_in or fan_out of t, as mode says (PyTorch's _calculate_correct_fan: any case)
  local function correct_fan(t, mode, fname)
    local m = type(mode) == "string" and mode:lower()
    if m ~= "fan_in" and m ~= "fan_out" then
      raise(string.format("%s: mode %s not supported, please use one of fan_in, fan_out", fname,
        type(mode) == "string" and "'" .. mode .. "'" or ltc.typename(mode)))
    end
    local fan_in, fan_out = fans(t, fname)
    return m == "fan_in" and fan_in or fan_out
  end

  --- nn.init.uniform_(t [, a=0 [, b=1]]): t filled from the uniform distribution on [a, b)
  -- (a <= b).
  function init.uniform_(t, ...)
    local fname = "nn.init.uniform_"
    local o = args(fname, t, { "a", "b" }, true, ...)
    local a, b = number(fname, "a", o.a, 0), number(fname, "b", o.b, 1)
    if a > b then raise(string.format("%s: expects a <= b, got a = %g > b = %g", fname, a, b)) end
    return uniform(t, a, b)
  end

  --- nn.init.normal_(t [, mean=0 [, std=1]]): t filled from N(mean, std^2) (std >= 0).
  function init.normal_(t, ...)
    local fname = "nn.init.normal_"
    local o = args(fname, t, { "mean", "std" }, true, ...)
    return normal(t, number(fname, "mean", o.mean, 0), number(fname, "std", o.std, 1, 0))
  end

  --- nn.init.trunc_normal_(t [, mean=0 [, std=1 [, a=-2 [, b=2]]]]): t filled from N(mean,
  -- std^2) truncated to [a, b] (a and b are values, not counts of std), by PyTorch's method:
  -- the inverse normal CDF (erfinv) of uniform samples between the CDF at a and at b, then
  -- clamped to [a, b]. ltc computes the samples in float64 and then casts to t's dtype
  -- (PyTorch works in t's dtype); std must be > 0 and a < b (PyTorch does not check a < b).
  function init.trunc_normal_(t, ...)
    local fname = "nn.init.trunc_normal_"
    local o = args(fname, t, { "mean", "std", "a", "b" }, true, ...)
    local mean, std = number(fname, "mean", o.mean, 0), number(fname, "std", o.std, 1)
    local a, b = number(fname, "a", o.a, -2), number(fname, "b", o.b, 2)
    if std <= 0 then raise(string.format("%s: std must be > 0, got %g", fname, std)) end
    if not (a < b) then raise(string.format("%s: expects a < b, got a = %g, b = %g", fname, a, b)) end
    if t:numel() == 0 then return t end
    local s2 = math.sqrt(2)
    -- 2 * cdf - 1 at a and b: erf((x - mean) / (std sqrt(2)))
    local ends = ltc.tensor({ (a - mean) / (std * s2), (b - mean) / (std * s2) }, "float64"):erf()
    local lo, hi = ends[1], ends[2]
    local u = ltc.rand(t:size(), "float64") * (hi - lo) + lo
    local x = (u:erfinv() * (std * s2) + mean):to(t:dtype())
    return fill(t, x:clamp(a, b))
  end

  --- nn.init.constant_(t, val): every element of t becomes val (a number). Any dtype.
  function init.constant_(t, ...)
    local fname = "nn.init.constant_"
    local o = args(fname, t, { "val" }, false, ...)
    local val = number(fname, "val", o.val)
    ltc.no_grad(function() t:fill_(val) end)
    return t
  end

  --- nn.init.ones_(t): t filled with 1. Any dtype.
  function init.ones_(t, ...)
    args("nn.init.ones_", t, {}, false, ...)
    ltc.no_grad(function() t:fill_(1) end)
    return t
  end
  --- nn.init.zeros_(t): t filled with 0. Any dtype.
  function init.zeros_(t, ...)
    args("nn.init.zeros_", t, {}, false, ...)
    ltc.no_grad(function() t:fill_(0) end)
    return t
  end

  --- nn.init.eye_(t): t (2-d) filled with the identity matrix: 1 on the diagonal, 0 elsewhere
  -- (rectangular too). Any dtype.
  function init.eye_(t, ...)
    args("nn.init.eye_", t, {}, false, ...)
    if t:dim() ~= 2 then
      raise(string.format("nn.init.eye_: only tensors with 2 dimensions are supported, got %d-d",
        t:dim()))
    end
    return fill(t, ltc.eye(t:size(1), t:size(2), t:dtype()))
  end

  --- nn.init.dirac_(t [, groups=1]): t (3, 4 or 5-d, a Conv1d/2d/3d weight [out, in, k...])
  -- filled with the Dirac delta, so the convolution keeps its input: in each of the groups
  -- of out / groups output channels, channel d gets 1 at input channel d and the kernel's
  -- centre (index k // 2 of each kernel dim, 0-based), for d below min(out / groups, in); 0
  -- elsewhere. size(1) must be divisible by groups.
  function init.dirac_(t, ...)
    local fname = "nn.init.dirac_"
    local o = args(fname, t, { "groups" }, false, ...)
    local groups = o.groups or 1
    if math.type(groups) ~= "integer" or groups < 1 then
      raise(string.format("%s: groups must be a positive integer, got %s", fname, tostring(groups)))
    end
    local nd = t:dim()
    if nd < 3 or nd > 5 then
      raise(string.format("%s: only tensors with 3, 4, or 5 dimensions are supported, got %d-d", fname, nd))
    end
    local size = t:size()
    if size[1] % groups ~= 0 then
      raise(string.format("%s: dim 1 (%d) must be divisible by groups (%d)", fname, size[1], groups))
    end
    -- [out, in] of identity blocks, one per group, at the flat position of the kernel's centre
    local per, cin = size[1] // groups, size[2]
    local blocks = {}
    for g = 1, groups do blocks[g] = ltc.eye(per, cin, t:dtype()) end
    local k, centre = 1, 0
    for d = 3, nd do centre, k = centre * size[d] + size[d] // 2, k * size[d] end
    local m = ltc.cat(blocks, 1):unsqueeze(3)
    return fill(t, nn.functional.pad(m, { centre, k - 1 - centre }):reshape(size))
  end

  -- t filled with mean 0 and standard deviation std, uniformly (on [-sqrt(3) std, sqrt(3) std])
  -- or normally; t unchanged for std nil (an empty tensor)
  local function uniform_std(t, std)
    if not std then return t end
    return uniform(t, -math.sqrt(3) * std, math.sqrt(3) * std)
  end
  local function normal_std(t, std)
    if not std then return t end
    return normal(t, 0, std)
  end

  -- Glorot's std, gain * sqrt(2 / (fan_in + fan_out)), after checking the arguments (nil for
  -- an empty tensor)
  local function xavier_std(fname, t, ...)
    local o = args(fname, t, { "gain" }, true, ...)
    local gain = number(fname, "gain", o.gain, 1)
    local fan_in, fan_out = fans(t, fname)
    if t:numel() == 0 then return nil end
    return gain * math.sqrt(2 / (fan_in + fan_out))
  end

  --- nn.init.xavier_uniform_(t [, gain=1]): Glorot's uniform on [-bound, bound], bound =
  -- gain * sqrt(6 / (fan_in + fan_out)) (nn.init._calculate_fan_in_and_fan_out: 2 dims or more).
  function init.xavier_uniform_(t, ...)
    return uniform_std(t, xavier_std("nn.init.xavier_uniform_", t, ...))
  end

  --- nn.init.xavier_normal_(t [, gain=1]): Glorot's normal, N(0, std^2) with std = gain *
  -- sqrt(2 / (fan_in + fan_out)).
  function init.xavier_normal_(t, ...)
    return normal_std(t, xavier_std("nn.init.xavier_normal_", t, ...))
  end

  -- kaiming's std, gain(nonlinearity, a) / sqrt(fan), after checking the arguments
  local function kaiming_std(fname, t, ...)
    local o = args(fname, t, { "a", "mode", "nonlinearity" }, true, ...)
    local a = number(fname, "a", o.a, 0)
    local mode, nonlinearity = o.mode or "fan_in", o.nonlinearity or "leaky_relu"
    local ok, gain = pcall(init.calculate_gain, nonlinearity, a)
    if not ok then raise((tostring(gain):gsub("^.-nn%.init%.calculate_gain", fname))) end
    local fan = correct_fan(t, mode, fname)
    if t:numel() == 0 then return nil end
    return gain / math.sqrt(fan)
  end

  --- nn.init.kaiming_uniform_(t [, a=0 [, mode="fan_in" [, nonlinearity="leaky_relu"]]]):
  -- He's uniform on [-bound, bound], bound = sqrt(3) * gain / sqrt(fan), gain =
  -- nn.init.calculate_gain(nonlinearity, a) (a: leaky_relu's negative slope), fan the fan_in
  -- or fan_out of t as mode says. nn.init.kaiming_uniform_(w, {nonlinearity = "relu"}).
  function init.kaiming_uniform_(t, ...)
    return uniform_std(t, kaiming_std("nn.init.kaiming_uniform_", t, ...))
  end

  --- nn.init.kaiming_normal_(t [, a=0 [, mode="fan_in" [, nonlinearity="leaky_relu"]]]):
  -- He's normal, N(0, std^2) with std = gain / sqrt(fan), as kaiming_uniform_.
  function init.kaiming_normal_(t, ...)
    return normal_std(t, kaiming_std("nn.init.kaiming_normal_", t, ...))
  end

  -- The columns q_1..q_n (tables of m numbers) of the orthonormal Q of A = QR with R's
  -- diagonal positive, from A's columns (m >= n, full rank): Gram-Schmidt run twice over each
  -- column ("twice is enough": orthogonal to rounding, as Householder's QR), in float64.
  local function orthonormal_columns(cols, m)
    local q = {}
    for j, a in ipairs(cols) do
      local v = {}
      for r = 1, m do v[r] = a[r] end
      for _ = 1, 2 do
        for i = 1, j - 1 do
          local qi, d = q[i], 0
          for r = 1, m do d = d + qi[r] * v[r] end
          for r = 1, m do v[r] = v[r] - d * qi[r] end
        end
      end
      local norm = 0
      for r = 1, m do norm = norm + v[r] * v[r] end
      norm = math.sqrt(norm)
      for r = 1, m do v[r] = v[r] / norm end
      q[j] = v
    end
    return q
  end

  --- nn.init.orthogonal_(t [, gain=1]): t (2 dims or more, seen as [size(1), numel / size(1)])
  -- filled with a (semi-)orthogonal matrix times gain, as PyTorch's (Saxe et al. 2013): the Q
  -- of the QR decomposition of a standard normal draw (the seeded generator), with R's
  -- diagonal made positive, so the rows are orthonormal when rows <= cols (W W^T = I) and the
  -- columns otherwise (W^T W = I). Computed on the host in Lua, O(rows * cols * min(rows,
  -- cols)): a few seconds for a [512, 512] weight.
  function init.orthogonal_(t, ...)
    local fname = "nn.init.orthogonal_"
    local o = args(fname, t, { "gain" }, true, ...)
    local gain = number(fname, "gain", o.gain, 1)
    if t:dim() < 2 then
      raise(string.format("%s: only tensors with 2 or more dimensions are supported, got %d-d",
        fname, t:dim()))
    end
    if t:numel() == 0 then return t end
    local rows = t:size(1)
    local cols = t:numel() // rows
    local x = ltc.randn({ rows, cols }, "float64"):totable()
    local out = {}
    if rows < cols then -- orthonormal rows: the columns of x^T
      out = orthonormal_columns(x, cols)
    else
      local a = {}
      for c = 1, cols do
        local col = {}
        for r = 1, rows do col[r] = x[r][c] end
        a[c] = col
      end
      local q = orthonormal_columns(a, rows)
      for r = 1, rows do
        local row = {}
        for c = 1, cols do row[c] = q[c][r] end
        out[r] = row
      end
    end
    return fill(t, (ltc.tensor(out, "float64") * gain):to(t:dtype()):reshape(t:size()))
  end

  nn.init = init
end
