--- ltc.ops_more: small composites of PyTorch's everyday API, written over the generated ops
-- (so autograd records them): unbind, new_zeros/new_ones/new_full/new_empty/new_tensor,
-- clamp_min/clamp_max, roll, repeat_interleave, tile, isclose/allclose/equal, as_tensor,
-- nan_to_num, tolist, t:where(cond, other) and the fields t.mT, t.mH, t.H. install(core)
-- adds them to core and core.methods before lua/ltc/init.lua copies core into the module.
-- Semantics from PyTorch; dims are 1-based (negative from the end). Each op def'd here has
-- its entry in the composite section of codegen/ops.yaml (spec/composite_ops_spec.lua checks).
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local M = {}

local type, select, unpack, floor = type, select, table.unpack, math.floor

--- install(core): adds the functions below to core and core.methods.
function M.install(core)
  local methods = core.methods
  local function def(name, fn, method)
    core[name] = fn
    if method ~= false then methods[name] = fn end
  end
  local function check_tensor(v, n, fname)
    if not core.is_tensor(v) then
      raise(string.format("%s: bad argument #%d (ltc.Tensor expected, got %s)", fname, n,
        core.typename(v)))
    end
  end
  -- dim (1-based, negative from the end) of t as a positive number
  local function wrap_dim(t, dim, fname)
    local n = t:dim()
    if math.type(dim) ~= "integer" or dim == 0 or dim > n or dim < -n then
      raise(string.format("%s: dim %s out of range for a %d-d tensor (dims are 1-based)", fname,
        tostring(dim), n))
    end
    return dim < 0 and n + dim + 1 or dim
  end
  -- sizes given as integers or one table, then an optional dtype (a string) or options
  local function sizes_and_rest(fname, ...)
    local first = ...
    if type(first) == "table" and not core.is_tensor(first) then
      local s = {}
      for i, v in ipairs(first) do s[i] = v end
      return s, select(2, ...)
    end
    local s, n = {}, select("#", ...)
    local i = 1
    while i <= n and type((select(i, ...))) == "number" do
      s[i] = select(i, ...)
      i = i + 1
    end
    return s, select(i, ...)
  end
  -- a trailing dtype name or {dtype =, ...} options; t's dtype when neither
  local function dtype_of(t, opt)
    if type(opt) == "string" then return opt end
    if type(opt) == "table" and opt.dtype then return opt.dtype end
    return t:dtype()
  end

  --- t:unbind([dim]): the slices of t along dim (default 1), a list of views of one dim less
  -- (PyTorch's torch.unbind; a table here, as t:split's).
  def("unbind", function(t, dim)
    check_tensor(t, 1, "unbind")
    dim = wrap_dim(t, dim or 1, "unbind")
    local out = {}
    for i = 1, t:size(dim) do out[i] = t:select(dim, i) end
    return out
  end)

  --- t:new_zeros(size...[, dtype]), t:new_ones(...), t:new_empty(...), t:new_full(size,
  -- value[, dtype]): a new tensor of that size with t's dtype (or the dtype given, also as
  -- {dtype = d}) on t's device (PyTorch's Tensor.new_*). t:new_tensor(data[, dtype]): data
  -- (nested tables of numbers, or a tensor, copied) with t's dtype and device.
  -- (each name written out, so that spec/composite_ops_spec.lua finds it in ops.yaml)
  local function new_like(name)
    local fname = "new_" .. name
    return function(t, ...)
      check_tensor(t, 1, fname)
      local size, opt = sizes_and_rest(fname, ...)
      return core[name](size, dtype_of(t, opt))
    end
  end
  def("new_zeros", new_like("zeros"))
  def("new_ones", new_like("ones"))
  def("new_empty", new_like("empty"))
  def("new_full", function(t, size, value, opt)
    check_tensor(t, 1, "new_full")
    if type(size) ~= "table" then
      raise("new_full: bad argument #2 (a table of sizes expected, got " .. core.typename(size) .. ")")
    end
    return core.full(size, value, dtype_of(t, opt))
  end)
  def("new_tensor", function(t, data, opt)
    check_tensor(t, 1, "new_tensor")
    if core.is_tensor(data) then return data:detach():clone():to(dtype_of(t, opt)) end
    return core.tensor(data, dtype_of(t, opt))
  end)

  --- t:clamp_min(min), t:clamp_max(max): t:clamp(min) and t:clamp(nil, max) (PyTorch); the
  -- in-place t:clamp_min_(min), t:clamp_max_(max) return t (made by lua/ltc/init.lua from
  -- their ops.yaml entries' `inplace: true`).
  def("clamp_min", function(t, min) return core.clamp(t, min, nil) end)
  def("clamp_max", function(t, max) return core.clamp(t, nil, max) end)

  --- t:roll(shifts[, dims]): elements shifted by `shifts` places along dims, those pushed past
  -- the end coming back at the start (PyTorch's torch.roll). shifts and dims are numbers or
  -- tables of equal length; without dims t is rolled as if flattened, then reshaped.
  def("roll", function(t, shifts, dims)
    check_tensor(t, 1, "roll")
    if dims == nil then
      if type(shifts) ~= "number" then raise("roll: without dims, shifts must be one number") end
      return core.roll(t:reshape(-1), shifts, 1):reshape(t:size())
    end
    if type(shifts) == "number" then shifts = { shifts } end
    if type(dims) == "number" then dims = { dims } end
    if #shifts ~= #dims then
      raise(string.format("roll: shifts (%d) and dims (%d) must have the same length", #shifts, #dims))
    end
    local out = t
    for i, d in ipairs(dims) do
      d = wrap_dim(t, d, "roll")
      local n = t:size(d)
      if math.type(shifts[i]) ~= "integer" then raise("roll: shifts must be integers") end
      local s = n > 0 and shifts[i] % n or 0
      if s ~= 0 then out = core.cat({ out:narrow(d, n - s + 1, s), out:narrow(d, 1, n - s) }, d) end
    end
    return out == t and t:clone() or out
  end)

  --- t:repeat_interleave(repeats[, dim]): each element repeated along dim (without dim: of
  -- t flattened) `repeats` times, an integer, or repeats[i] times for slice i, a 1-d integer
  -- tensor or table with one count per slice (PyTorch's torch.repeat_interleave). Counts in
  -- a tensor are read at the call (a sync, as PyTorch's).
  def("repeat_interleave", function(t, repeats, dim)
    check_tensor(t, 1, "repeat_interleave")
    if dim == nil then t, dim = t:reshape(-1), 1 end
    dim = wrap_dim(t, dim, "repeat_interleave")
    local n = t:size(dim)
    if math.type(repeats) == "integer" then
      if repeats < 0 then raise("repeat_interleave: repeats must be >= 0, got " .. repeats) end
      local size = t:size()
      local exp = {}
      for i = 1, #size do exp[#exp + 1] = size[i]; if i == dim then exp[#exp + 1] = repeats end end
      local res = {}
      for i = 1, #size do res[i] = size[i] end
      res[dim] = n * repeats
      return t:unsqueeze(dim + 1):expand(exp):reshape(res)
    end
    local counts = repeats
    if core.is_tensor(repeats) then
      if repeats:dim() > 1 then raise("repeat_interleave: repeats must be 0-d or 1-d") end
      if repeats:dim() == 0 or repeats:numel() == 1 and n ~= 1 then
        return core.repeat_interleave(t, floor(repeats:reshape(-1)[1]), dim)
      end
      counts = repeats:totable()
    elseif type(repeats) ~= "table" then
      raise("repeat_interleave: bad argument #2 (an integer, a table or a tensor of counts "
        .. "expected, got " .. core.typename(repeats) .. ")")
    end
    if #counts ~= n then
      raise(string.format("repeat_interleave: repeats has %d counts, but dim %d has size %d",
        #counts, dim, n))
    end
    local idx = {}
    for i, c in ipairs(counts) do
      if math.type(c) ~= "integer" and c ~= floor(c) or c < 0 then
        raise("repeat_interleave: counts must be integers >= 0")
      end
      for _ = 1, c do idx[#idx + 1] = i end
    end
    if #idx == 0 then return t:narrow(dim, 1, 0) end
    return t:index_select(dim, core.tensor(idx, "int64"))
  end)

  --- t:tile(reps): t repeated reps[d] times along each dim d (a table or integers); fewer reps
  -- than dims are padded with 1s in front, more make t's size 1 in front (PyTorch's tile).
  def("tile", function(t, ...)
    check_tensor(t, 1, "tile")
    local reps = type((...)) == "table" and { unpack((...)) } or { ... }
    local n = t:dim()
    while #reps < n do table.insert(reps, 1, 1) end
    if #reps > n then
      local size = t:size()
      local s = {}
      for i = 1, #reps - n do s[i] = 1 end
      for i = 1, n do s[#s + 1] = size[i] end
      t = t:reshape(s)
    end
    return t["repeat"](t, reps)
  end)

  --- ltc.isclose(a, b[, rtol=1e-05[, atol=1e-08[, equal_nan=false]]]) (also as a table
  -- {rtol =, atol =, equal_nan =}): a bool tensor, |a - b| <= atol + rtol * |b| elementwise
  -- (broadcast; equal infinities are close, NaN is close to NaN only with equal_nan), as
  -- torch.isclose. ltc.allclose(...) is whether all are close (a boolean; syncs).
  -- ltc.equal(a, b): whether a and b have the same size and elements (a boolean; syncs).
  local function isclose(a, b, rtol, atol, equal_nan)
    if type(rtol) == "table" then
      local o = rtol
      rtol, atol, equal_nan = o.rtol, o.atol, o.equal_nan
    end
    rtol, atol = rtol or 1e-05, atol or 1e-08
    if not core.is_tensor(a) then check_tensor(a, 1, "isclose") end
    local close = a:eq(b)
    if a:is_floating_point() or core.is_tensor(b) and b:is_floating_point() then
      local diff = (a - b):abs()
      local tol = (core.is_tensor(b) and b or core.full_like(a, b)):abs() * rtol + atol
      close = close:logical_or(diff:le(tol):logical_and(diff:isfinite()))
      if equal_nan then
        local bn = core.is_tensor(b) and b:isnan() or core.full_like(a, b):isnan()
        close = close:logical_or(a:isnan():logical_and(bn))
      end
    end
    return close
  end
  def("isclose", isclose)
  def("allclose", function(a, b, ...)
    return isclose(a, b, ...):all():item() == true
  end)
  def("equal", function(a, b)
    check_tensor(a, 1, "equal")
    check_tensor(b, 2, "equal")
    local sa, sb = a:size(), b:size()
    if #sa ~= #sb then return false end
    for i = 1, #sa do if sa[i] ~= sb[i] then return false end end
    return a:eq(b):all():item() == true
  end)

  --- ltc.as_tensor(data[, dtype]): data itself when it is a tensor of that dtype (or no dtype
  -- is given), else converted (PyTorch's torch.as_tensor); a table or number makes a new
  -- tensor, as ltc.tensor.
  def("as_tensor", function(data, dtype, ...)
    if core.is_tensor(data) then
      if dtype == nil or dtype == data:dtype() then return data end
      return data:to(dtype)
    end
    return core.tensor(data, dtype, ...)
  end, false)

  --- t:nan_to_num([nan=0[, posinf[, neginf]]]) (also {nan =, posinf =, neginf =}): NaN
  -- replaced by nan, +inf by posinf (default the dtype's largest finite value), -inf by
  -- neginf (the lowest), as torch.nan_to_num; integer and bool tensors come back unchanged
  -- (a copy). t:nan_to_num_(...) writes into t (made by lua/ltc/init.lua, as clamp_min_).
  local finite_max = { float32 = 3.4028234663852886e38, float64 = 1.7976931348623157e308,
                       float16 = 65504.0, bfloat16 = 3.3895313892515355e38 }
  local function nan_to_num(t, nan, posinf, neginf)
    check_tensor(t, 1, "nan_to_num")
    if type(nan) == "table" then nan, posinf, neginf = nan.nan, nan.posinf, nan.neginf end
    local big = finite_max[t:dtype()]
    if not big then return t:clone() end
    local out = core.where(t:isnan(), nan or 0, t)
    out = core.where(t:eq(math.huge), posinf or big, out)
    return core.where(t:eq(-math.huge), neginf or -big, out)
  end
  def("nan_to_num", nan_to_num)

  --- t:tolist(): t's values as nested Lua tables (a number for a 0-d tensor), as
  -- Tensor.tolist; syncs.
  methods.tolist = function(t)
    check_tensor(t, 1, "tolist")
    if t:dim() == 0 then return t:item() end
    return t:totable()
  end

  --- t:where(condition, other): t where condition holds, other elsewhere (Tensor.where, the
  -- same as ltc.where(condition, t, other)).
  methods.where = function(t, condition, other)
    check_tensor(t, 1, "where")
    return core.where(condition, t, other)
  end

  --- t.mT: t with its last two dims swapped (a batch of matrices transposed; at least 2-d);
  -- t.mH the same (the conjugate transpose: ltc has no complex dtypes); t.H: t.mT of a 2-d
  -- tensor (t of a 0-d one), an error for other dims (PyTorch's fields).
  local getters = core.metatable.__getters
  local function mT(t, name)
    if t:dim() < 2 then
      raise(string.format("%s: needs a tensor of at least 2 dims, got %d-d", name, t:dim()))
    end
    return t:transpose(-2, -1)
  end
  getters.mT = function(t) return mT(t, "t.mT") end
  getters.mH = function(t) return mT(t, "t.mH") end
  getters.H = function(t)
    if t:dim() == 0 then return t end
    if t:dim() ~= 2 then
      raise(string.format("t.H: needs a 0-d or 2-d tensor (t.mH for batches), got %d-d", t:dim()))
    end
    return t:transpose(1, 2)
  end
end

return M
