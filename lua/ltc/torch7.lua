--- ltc.torch7: the Torch7 idioms that Torch7 code brings with it, over ltc's PyTorch-style
-- ops: t:nElement(), t:uniform_(), t:normal_(), t:resize_(), t:resizeAs_(), ltc.range, the
-- table index t[{ {1, 3}, 2 }] and the tensor index t[mask], t[index] for reading and
-- writing. Where Torch7 and PyTorch differ, ltc follows PyTorch (README, "Torch7 and
-- PyTorch"), except that a tensor index's positions are 1-based and never negative (it is
-- index_select's index).
local M = {}

local type, mtype, select = type, math.type, select

-- Raises msg at the first caller outside ltc's Lua files and C (the user's line).
local function raise(msg)
  local level = 2
  while true do
    local info = debug.getinfo(level, "S")
    if not info then level = 1; break end
    if info.what ~= "C" and not info.source:find("[/\\]ltc[/\\][%w_]+%.lua$") then break end
    level = level + 1
  end
  error(msg, level)
end

--- install(core): adds the methods and functions below to core and core.methods, and the
-- table index to the tensor metatable (its __slice and __slice_assign, which the C
-- __index and __newindex call for a table key).
function M.install(core)
  local methods, mt = core.methods, core.metatable
  local is_tensor = core.is_tensor

  --- t:nElement(): the element count (Torch7's name of numel).
  methods.nElement = function(t) return t:numel() end

  -- Raises "<name>: ... floating tensors only" unless t is a floating tensor (PyTorch has no
  -- uniform_ or normal_ of integers either).
  local function floating(name, t)
    if not core.is_tensor(t) then
      raise(string.format("%s: bad argument #1 (ltc.Tensor expected, got %s)", name, core.typename(t)))
    end
    local dt = t:dtype()
    if not (dt:find("^float") or dt == "bfloat16") then
      raise(string.format("%s: floating tensors only, got %s (as in PyTorch)", name, dt))
    end
  end

  --- t:uniform_([a=0, b=1]): every element drawn uniformly from [a, b) by the default
  -- generator, in place (Torch7's uniform, PyTorch's uniform_). Floating tensors only.
  -- Returns t.
  methods.uniform_ = function(t, a, b)
    a, b = a or 0, b or 1
    if type(a) ~= "number" or type(b) ~= "number" or a > b then
      raise(string.format("uniform_: expected numbers a <= b (got %s, %s)", tostring(a),
        tostring(b)))
    end
    floating("uniform_", t)
    return core.assign_(t, core.rand(t:size(), t:dtype()) * (b - a) + a, "uniform_")
  end

  --- t:normal_([mean=0, std=1]): every element drawn from N(mean, std^2), in place
  -- (Torch7's normal, PyTorch's normal_). std must be >= 0. Returns t.
  methods.normal_ = function(t, mean, std)
    mean, std = mean or 0, std or 1
    if type(mean) ~= "number" or type(std) ~= "number" or std < 0 then
      raise(string.format("normal_: expected a number mean and std >= 0 (got %s, %s)",
        tostring(mean), tostring(std)))
    end
    floating("normal_", t)
    return core.assign_(t, core.randn(t:size(), t:dtype()) * std + mean, "normal_")
  end

  -- The sizes of a resize_: numbers or one table of them.
  local function sizes_of(name, ...)
    local s = ...
    if type(s) ~= "table" then s = { ... } end
    local out = {}
    for i = 1, #s do
      if mtype(s[i]) ~= "integer" or s[i] < 0 then
        raise(string.format("%s: size %d is %s, not a whole number >= 0", name, i,
          tostring(s[i])))
      end
      out[i] = s[i]
    end
    return out
  end

  -- t takes the sizes, keeping its first elements in row-major order (new ones are 0).
  local function resize(t, sizes, name)
    local n = 1
    for _, v in ipairs(sizes) do n = n * v end
    local m = t:numel()
    local flat = t:reshape({ m })
    if n < m then flat = flat:narrow(1, 1, n)
    elseif n > m then flat = core.cat({ flat, core.zeros({ n - m }, t:dtype()) }, 1) end
    local ok, e = pcall(core._set_, t, flat:reshape(sizes))
    if not ok then raise((tostring(e):gsub("^resize_", name))) end
    return t
  end

  --- t:resize_(s1, s2, ...) or t:resize_({s1, ...}): t takes these sizes in place, keeping
  -- its first elements in row-major order; new elements are 0 (PyTorch and Torch7 leave them
  -- uninitialised). t must not be a view; views of t raise once it is resized. Returns t.
  methods.resize_ = function(t, ...) return resize(t, sizes_of("resize_", ...), "resize_") end
  --- t:resizeAs_(other): t:resize_(other:size()).
  methods.resizeAs_ = function(t, other)
    if not is_tensor(other) then raise("resizeAs_: expected a tensor, got " .. type(other)) end
    return resize(t, other:size(), "resizeAs_")
  end

  --- t:stride([dim]): PyTorch's strides of t (a table, or the one of dim): those its view ops
  -- give on a contiguous base (a base tensor has row-major strides; t() swaps them, narrow
  -- keeps them, expand gives 0). Raises for a `view` of a non-contiguous tensor, which ltc
  -- allows and PyTorch refuses (no strides express it).
  methods.stride = function(t, dim)
    local st = core._strides(t)
    if not st then
      raise("stride: this tensor is a view that no strides express (a view() of a "
        .. "non-contiguous tensor: PyTorch refuses it; use reshape or contiguous())")
    end
    if dim == nil then return st end
    local nd = #st
    if mtype(dim) ~= "integer" or dim == 0 or dim > nd or dim < -nd then
      raise(string.format("stride: dim %s out of range for a %d-d tensor", tostring(dim), nd))
    end
    return st[dim < 0 and nd + dim + 1 or dim]
  end

  --- t:isContiguous() / t:is_contiguous(): whether t's strides (above) are row-major, as
  -- PyTorch's is_contiguous (dims of size 1 do not count; the offset does not matter).
  local function is_contiguous(t)
    local st = core._strides(t)
    if not st then return false end
    local size, acc = t:size(), 1
    for d = #size, 1, -1 do
      if size[d] ~= 1 and st[d] ~= acc then return false end
      acc = acc * size[d]
    end
    return true
  end
  methods.isContiguous, methods.is_contiguous = is_contiguous, is_contiguous

  --- t:reshape(...) and t:flatten(...) copy, as PyTorch's do, where no view can express the
  -- result (a transposed tensor flattened): a write through the result then leaves t alone.
  -- Otherwise they are views, as before.
  for _, name in ipairs { "reshape", "flatten" } do
    local raw = methods[name]
    local function copying(t, ...)
      local r = raw(t, ...)
      if is_tensor(t) and not core._strides(r) then return raw(t:clone(), ...) end
      return r
    end
    methods[name] = copying
    if core[name] == raw then core[name] = copying end
  end

  --- ltc.range(a, b [, step=1] [, dtype="float32"]): a, a + step, ... up to and including b
  -- (Torch7's torch.range, PyTorch's deprecated torch.range): float32 unless dtype says.
  core.range = function(a, b, step, dtype, ...)
    if type(step) == "string" then step, dtype = nil, step end
    step = step or 1
    if select("#", ...) > 0 then raise("range: too many arguments (a, b, step, dtype)") end
    if type(a) ~= "number" or type(b) ~= "number" or type(step) ~= "number" or step == 0
        or (b - a) * step < 0 then
      raise(string.format("range: expected numbers a, b and a nonzero step towards b (got %s, "
        .. "%s, %s)", tostring(a), tostring(b), tostring(step)))
    end
    local n = math.floor((b - a) / step + 1e-9) + 1
    return core.arange(0, n, 1, dtype or "float32") * step + a
  end

  -- t[{...}]: one entry per dim from dim 1: a number selects (the dim goes), {} keeps the
  -- dim, {a, b} narrows it to a..b inclusive, {a} to a..a (negative indices count from the
  -- end). Missing entries keep their dims. "..." (ltc.ellipsis, PyTorch's Ellipsis) stands for
  -- as many {} as the dims the other entries leave: t[{"...", 1}] selects along the last dim.
  -- Returns the view, or a number when every dim is selected (as Torch7).
  local function expand_ellipsis(key, nd, name)
    local at
    for i = 1, #key do
      if key[i] == "..." then
        if at then raise(string.format("%s: more than one \"...\" (entries %d and %d)", name, at, i)) end
        at = i
      end
    end
    if not at then return key end
    local out = {}
    for i = 1, at - 1 do out[#out + 1] = key[i] end
    for _ = 1, nd - (#key - 1) do out[#out + 1] = {} end
    for i = at + 1, #key do out[#out + 1] = key[i] end
    return out
  end
  local function slice(t, key, name)
    local v, dim, nsel = t, 1, 0
    local nd = t:dim()
    key = expand_ellipsis(key, nd, name)
    if #key > nd then
      raise(string.format("%s: %d indices for a %d-d tensor", name, #key, nd))
    end
    for i = 1, #key do
      local k = key[i]
      local size = v:size(dim)
      local function wrap(x)
        if mtype(x) ~= "integer" then
          raise(string.format("%s: index %s of entry %d is not an integer", name, tostring(x), i))
        end
        local y = x < 0 and size + x + 1 or x
        if y < 1 or y > size then
          raise(string.format("%s: index %d out of range for dim %d of size %d", name, x, i,
            size))
        end
        return y
      end
      if type(k) == "number" then
        v = v:select(dim, wrap(k))
        nsel = nsel + 1
      elseif type(k) == "table" then
        if #k > 2 then
          raise(string.format("%s: entry %d is a range of %d numbers (use {a, b} or {})", name, i,
            #k))
        end
        local a = k[1] and wrap(k[1]) or 1
        local b = k[2] and wrap(k[2]) or (k[1] and a or size)
        if b < a then
          raise(string.format("%s: empty range {%d, %d} in dim %d", name, k[1], k[2], i))
        end
        v = v:narrow(dim, a, b - a + 1)
        dim = dim + 1
      else
        raise(string.format("%s: entry %d is a %s (a number, {a, b}, {} or \"...\")", name, i,
          type(k) == "string" and "string '" .. k .. "'" or type(k)))
      end
    end
    return v, nsel == nd and nd > 0
  end

  -- One element, {i, j, ...} with every dim's index: read from the data with no graph
  -- (core._read_elem), so that reading many elements compiles nothing.
  local function element(t, key)
    local nd = t:dim()
    if #key ~= nd or nd == 0 then return nil end
    local flat = 0
    for d = 1, nd do
      local k, size = key[d], t:size(d)
      if mtype(k) ~= "integer" then return nil end
      local y = k < 0 and size + k + 1 or k
      if y < 1 or y > size then return nil end -- slice() raises
      flat = flat * size + (y - 1)
    end
    return core._read_elem(t, flat + 1)
  end

  mt.__slice = function(t, key)
    local e = element(t, key)
    if e ~= nil then return e end
    local v, scalar = slice(t, key, "index")
    if scalar then return v:item() end
    return v
  end
  mt.__slice_assign = function(t, key, value)
    local v = slice(t, key, "newindex")
    if type(value) == "boolean" then value = value and 1 or 0 end
    if type(value) == "number" then core.fill_(v, value, "newindex") else v:copy_(value) end
  end

  --- t["..."]: a view of all of t (PyTorch's x[...]); t["..."] = v writes v (a number,
  -- boolean or tensor broadcast to t's size) into every element, in place, as x[...] = v.
  mt.__getters["..."] = function(t) return (slice(t, { "..." }, "index")) end
  mt.__setters["..."] = function(t, value) mt.__slice_assign(t, { "..." }, value) end

  -- A tensor key (Torch7's t[mask] and t[LongTensor], PyTorch's boolean and integer-array
  -- indexing along dim 1): "mask" for a bool tensor, "index" for a 1-d int64/int32 one,
  -- else an error naming what is supported.
  local function key_kind(t, key, fname)
    local dt = key:dtype()
    if dt == "bool" then return "mask" end
    if (dt == "int64" or dt == "int32") and key:dim() == 1 then return "index" end
    local shape = table.concat(key:size(), "x")
    raise(string.format("%s: an index tensor of dtype %s and size [%s] into a tensor of size [%s]; "
      .. "supported: a bool mask (masked_select / masked_fill_) or a 1-d int64 index along dim 1 "
      .. "(index_select / index_copy_), 1-based", fname, dt, shape, table.concat(t:size(), "x")))
  end
  --- t[mask]: the elements where mask (bool, t's shape or broadcast to it) is true, as a 1-d
  -- tensor (masked_select; it syncs to count them). t[index]: the slices along dim 1 at the
  -- 1-based positions of a 1-d int64 or int32 index (index_select). Torch7 and PyTorch.
  mt.__tensor_index = function(t, key)
    if key_kind(t, key, "index") == "mask" then return t:masked_select(key) end
    return t:index_select(1, key)
  end
  --- t[mask] = v: v (a number, boolean or 0-d tensor) where mask is true (masked_fill_), or the
  -- elements of a tensor v in order (masked_scatter_). t[index] = v: the slices along dim 1 at
  -- index set to v (a number: index_fill_; a tensor of the selected slices' shape, or one
  -- broadcast to it: index_copy_). In place, as PyTorch's index_put_ without accumulate.
  mt.__tensor_assign = function(t, key, value)
    if type(value) == "boolean" then value = value and 1 or 0 end
    local scalar = type(value) == "number" or (is_tensor(value) and value:dim() == 0)
    if key_kind(t, key, "newindex") == "mask" then
      if scalar then t:masked_fill_(key, value) else t:masked_scatter_(key, value) end
    elseif scalar then
      t:index_fill_(1, key, value)
    else
      local sizes = t:size()
      sizes[1] = key:numel()
      t:index_copy_(1, key, value:expand(table.unpack(sizes)))
    end
  end
end

return M
