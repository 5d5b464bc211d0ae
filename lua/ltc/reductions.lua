--- ltc.reductions: reductions over several dims at once (`x:sum({1, 3}, true)`), var/std with
-- a `correction`, and amax/amin, written in Lua over the generated reductions. install(core)
-- wraps core.sum, mean, var, std, logsumexp and norm (and their methods) so that a table of
-- dims is accepted wherever one dim is; everything else goes to the generated op unchanged.
-- A table of dims is lowered to one reduction over a single dim: the reduced dims are
-- permuted to the end and merged with a reshape (views, so autograd and fusion see the
-- ordinary ops). An empty table reduces every dim, as PyTorch's dim=[] does. A table with
-- keys holds PyTorch's keyword arguments: x:sum({dim = 1, keepdim = true}).
local core = require "ltc.core"
local raise = core._raise -- an error at the caller's line, outside lua/ltc/
local M = {}

local type, mtype = type, math.type

-- The reduced dims of t (1-based, sorted, each once) from a table of 1-based or negative dims.
local function dim_set(t, dims, fname)
  local n, seen, out = t:dim(), {}, {}
  for _, d in ipairs(dims) do
    local nd = n == 0 and 1 or n
    if mtype(d) ~= "integer" or d == 0 or d > nd or d < -nd then
      raise(string.format("%s: dim %s out of range for a %d-d tensor", fname, tostring(d), n))
    end
    if d < 0 then d = nd + d + 1 end
    if seen[d] then raise(string.format("%s: dim %d appears twice in the dims", fname, d)) end
    seen[d] = true
    out[#out + 1] = d
  end
  table.sort(out)
  return out, seen
end

-- Calls reduce(y, dim, keepdim) on t with `dims` (a table) merged into one dim; returns what
-- reduce returns, reshaped to keep the reduced dims as size 1 when keepdim.
local function over_dims(t, dims, keepdim, fname, reduce)
  if not core.is_tensor(t) then
    raise(string.format("%s: bad argument #1 (ltc.Tensor expected, got %s)", fname,
      core.typename(t)))
  end
  local n = t:dim()
  if #dims == 0 or n == 0 then -- every dim (a 0-d tensor: its only "dim")
    if n == 0 and #dims > 0 then dim_set(t, dims, fname) end
    local y = reduce(t:reshape({ -1 }), 1, false)
    if keepdim and n > 0 then
      local ones = {}
      for i = 1, n do ones[i] = 1 end
      return y:reshape(ones)
    end
    return n == 0 and y:reshape({}) or y
  end
  local list, set = dim_set(t, dims, fname)
  if #list == 1 then return reduce(t, list[1], keepdim) end
  local size, perm, kept, merged = t:size(), {}, {}, 1
  for d = 1, n do
    if not set[d] then perm[#perm + 1] = d; kept[#kept + 1] = size[d] end
  end
  for _, d in ipairs(list) do perm[#perm + 1] = d; merged = merged * size[d] end
  local shape = { table.unpack(kept) }
  shape[#shape + 1] = merged
  local y = reduce(t:permute(perm):reshape(shape), #kept + 1, false)
  if keepdim then
    local out = {}
    for d = 1, n do out[d] = set[d] and 1 or size[d] end
    return y:reshape(out)
  end
  return y
end
M.over_dims = over_dims

-- PyTorch's keyword arguments: a table with a key that is not an array index ({dim = 1,
-- keepdim = true}) is options, checked against `allowed` (a list of names), and returned; a
-- plain array of dims (or {}) gives nil. Options take the place of every later argument.
local function options(fname, tbl, allowed, nargs)
  local n, opts = #tbl, false
  for k in pairs(tbl) do
    if mtype(k) ~= "integer" or k < 1 or k > n then opts = true; break end
  end
  if not opts then return nil end
  for k in pairs(tbl) do
    local ok = false
    for _, a in ipairs(allowed) do ok = ok or k == a end
    if not ok then
      raise(string.format("%s: unknown option '%s' (known: %s)", fname, tostring(k),
        table.concat(allowed, ", ")))
    end
  end
  if nargs > 1 then
    raise(string.format("%s: options ({%s = ...}) take the place of the later arguments",
      fname, table.concat(allowed, ", ")))
  end
  -- keepdim is a boolean, as the generated ops' (a 1 was read as false: sum{keepdim = 1})
  if tbl.keepdim ~= nil and type(tbl.keepdim) ~= "boolean" then
    raise(string.format("%s: option keepdim must be a boolean, not %s", fname,
      core.typename(tbl.keepdim)))
  end
  local d = tbl.dim
  if d ~= nil and type(d) ~= "table" and mtype(d) ~= "integer" then
    raise(string.format("%s: option dim must be an integer or a table of them, not %s", fname,
      tostring(d)))
  end
  return tbl
end
M.options = options

--- install(core): wraps the reductions of core and core.methods (see the module comment).
function M.install(core)
  local methods = core.methods
  local function def(name, fn)
    core[name] = fn
    methods[name] = fn
  end

  --- t:sum(dims, keepdim), t:mean(...), t:logsumexp(...): dims a number, nil or a table.
  for _, name in ipairs({ "sum", "mean", "logsumexp" }) do
    local op = core[name]
    def(name, function(t, ...)
      local dim, keepdim = ...
      if type(dim) ~= "table" then return op(t, ...) end
      local o = options(name, dim, { "dim", "keepdim" }, select("#", ...))
      if o then
        dim, keepdim = o.dim, o.keepdim == true
        if type(dim) ~= "table" then
          if dim == nil and not keepdim then return op(t) end
          if dim == nil then dim = {} else return op(t, dim, keepdim) end
        end
        return over_dims(t, dim, keepdim, name, function(y, d, k) return op(y, d, k) end)
      end
      if select("#", ...) > 2 then raise(name .. ": expected at most 3 arguments") end
      return over_dims(t, dim, keepdim, name, function(y, d, k) return op(y, d, k) end)
    end)
  end

  --- t:norm(p, dims, keepdim): dims a number, nil or a table.
  local norm = core.norm
  def("norm", function(t, ...)
    local p, dim, keepdim = ...
    if type(dim) ~= "table" then return norm(t, ...) end
    local o = options("norm", dim, { "dim", "keepdim" }, select("#", ...) - 1)
    if o then
      dim, keepdim = o.dim, o.keepdim == true
      if type(dim) ~= "table" then
        if dim == nil and not keepdim then return norm(t, p) end
        if dim == nil then dim = {} else return norm(t, p or 2, dim, keepdim) end
      end
      return over_dims(t, dim, keepdim, "norm", function(y, d, k) return norm(y, p or 2, d, k) end)
    end
    if select("#", ...) > 3 then raise("norm: expected at most 4 arguments") end
    return over_dims(t, dim, keepdim, "norm", function(y, d, k) return norm(y, p or 2, d, k) end)
  end)

  --- t:var(dims, unbiased_or_correction, keepdim), t:std(...): dims a number, nil or a table;
  -- the second argument is PyTorch's `unbiased` (true: divide by n - 1, false: by n) or, as a
  -- number, its `correction` c (divide by n - c; n - c <= 0 gives inf, or NaN where the
  -- deviations are 0, as in PyTorch). A correction other than 0 or 1 is computed as the
  -- biased variance times n / (n - c).
  for _, name in ipairs({ "var", "std" }) do
    local var = core.var
    local function one(y, d, k, c)
      if c == 0 or c == 1 then
        local v = var(y, d, c == 1, k)
        return name == "std" and v:sqrt() or v
      end
      local n = d and y:size(d) or y:numel()
      local v = var(y, d, false, k) * (n / math.max(n - c, 0))
      return name == "std" and v:sqrt() or v
    end
    local op = core[name]
    local wrapped
    wrapped = function(t, ...)
      local dim, unbiased, keepdim = ...
      if type(dim) == "table" then
        local o = options(name, dim, { "dim", "keepdim", "unbiased", "correction" },
          select("#", ...))
        if o then
          if o.unbiased ~= nil and o.correction ~= nil then
            raise(name .. ": give unbiased or correction, not both")
          end
          local c = o.correction
          if c == nil then c = o.unbiased end
          if type(c) ~= "number" and type(c) ~= "boolean" and c ~= nil then
            raise(name .. ": correction must be a number >= 0 or a boolean, got " .. tostring(c))
          end
          if c == nil then c = 1 end
          return wrapped(t, o.dim == nil and {} or o.dim, c, o.keepdim == true)
        end
      end
      if type(dim) ~= "table" and (unbiased == nil or type(unbiased) == "boolean") then
        return op(t, ...)
      end
      if select("#", ...) > 3 then raise(name .. ": expected at most 4 arguments") end
      local c = unbiased
      if c == nil then c = 1 elseif type(c) == "boolean" then c = c and 1 or 0 end
      if type(c) ~= "number" or c ~= c or c < 0 then
        raise(name .. ": correction must be a number >= 0 or a boolean, got " .. tostring(unbiased))
      end
      if type(dim) ~= "table" then return one(t, dim, keepdim, c) end
      return over_dims(t, dim, keepdim, name, function(y, d, k) return one(y, d, k, c) end)
    end
    def(name, wrapped)
  end

  --- t:amax(dims, keepdim), t:amin(...): the largest (smallest) values over dims (a number, a
  -- table, or nil for every dim), without indices; NaN propagates. PyTorch torch.amax/amin
  -- (whose gradient is shared among equal extremes; here, from max.dim, it goes to the first).
  for _, name in ipairs({ "amax", "amin" }) do
    local all, bydim = core[name == "amax" and "max" or "min"], nil
    bydim = function(y, d, k) local v = all(y, d, k); return v end
    def(name, function(t, dim, keepdim, ...)
      if select("#", ...) > 0 then raise(name .. ": expected at most 3 arguments") end
      local o = type(dim) == "table"
        and options(name, dim, { "dim", "keepdim" }, keepdim == nil and 1 or 2)
      if o then dim, keepdim = o.dim, o.keepdim == true end
      if dim == nil then dim = {} end
      if type(dim) ~= "table" then dim = { dim } end
      if #dim == 0 and not keepdim then return all(t) end
      return over_dims(t, dim, keepdim, name, bydim)
    end)
  end
end

return M
