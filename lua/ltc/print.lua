--- ltc.print: the body of tostring(t) in Torch7's layout, summarised past a threshold as
-- PyTorch and Torch7 do, the print options, and ltc.Size (what t:size() returns).
--
-- A tensor of more than `threshold` elements prints only its first and last `edgeitems`
-- indices along every dim longer than 2 * edgeitems, with "..." where the rest would be;
-- only those elements are computed and read (narrow + cat, then one sync), so printing a
-- 1000x1000 tensor reads 36 numbers. Floats print with `precision` digits after the point,
-- in scientific notation when sci_mode is true, or (sci_mode nil, the default) by PyTorch's
-- rule: the finite non-zero magnitudes shown span a ratio over 1000, or exceed 1e8, or (not
-- all integral) one is below 1e-4. Integers, and floats that are all integral (otherwise),
-- print as integers, as Torch7 does.
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local M = {}

local floor, concat, rep, format = math.floor, table.concat, string.rep, string.format

local DEFAULTS = { threshold = 1000, edgeitems = 3, precision = 4, sci_mode = nil }
local PROFILES = {
  default = { threshold = 1000, edgeitems = 3, precision = 4 },
  short = { threshold = 1000, edgeitems = 2, precision = 2 },
  full = { threshold = math.huge, edgeitems = 3, precision = 4 },
}

--- The current options (read-only use; change them with set_printoptions).
M.options = {}
for k, v in pairs(DEFAULTS) do M.options[k] = v end

--- ltc.set_printoptions{threshold=, edgeitems=, precision=, sci_mode=, profile=}: PyTorch's
-- torch.set_printoptions. threshold: the element count past which tensors are summarised
-- (default 1000; math.huge never summarises); edgeitems: indices shown at each end of a
-- summarised dim (3); precision: digits after the point for floats (4); sci_mode: true,
-- false or nil (automatic); profile: "default", "short" or "full" sets the three numbers
-- first (sci_mode back to nil). Unknown names and bad values are errors naming them.
function M.set_printoptions(opts)
  if type(opts) ~= "table" then
    raise("set_printoptions: expected a table of options, got " .. type(opts))
  end
  local new = {}
  for k, v in pairs(M.options) do new[k] = v end
  if opts.profile ~= nil then
    local p = PROFILES[opts.profile]
    if not p then
      raise("set_printoptions: unknown profile '" .. tostring(opts.profile)
        .. "' (default, short or full)")
    end
    for k, v in pairs(p) do new[k] = v end
    new.sci_mode = nil
  end
  for k, v in pairs(opts) do
    if k == "threshold" or k == "edgeitems" or k == "precision" then
      local ok = type(v) == "number" and v >= 0 and (v == math.huge and k == "threshold"
        or math.type(v) == "integer" or v == floor(v))
      if not ok then
        raise(string.format("set_printoptions: %s must be a whole number >= 0 (got %s)", k,
          tostring(v)))
      end
      if k == "precision" and v > 17 then
        raise("set_printoptions: precision must be at most 17 (got " .. tostring(v) .. ")")
      end
      new[k] = v
    elseif k == "sci_mode" then
      if v ~= nil and type(v) ~= "boolean" then
        raise("set_printoptions: sci_mode must be true, false or nil (got " .. tostring(v) .. ")")
      end
      new[k] = v
    elseif k ~= "profile" then
      raise("set_printoptions: unknown option '" .. tostring(k)
        .. "' (threshold, edgeitems, precision, sci_mode, profile)")
    end
  end
  if opts.sci_mode == nil and opts.profile == nil then new.sci_mode = M.options.sci_mode end
  M.options = new
end

-- The strings of the values (a flat list) and their common width.
local function fmt_values(flat, is_float, o)
  local all_int, minabs, maxabs = true, math.huge, 0
  for _, v in ipairs(flat) do
    if type(v) == "number" then
      if v ~= v or v == math.huge or v == -math.huge then all_int = false
      elseif v ~= 0 then
        if v ~= floor(v) then all_int = false end
        local a = math.abs(v)
        if a > maxabs then maxabs = a end
        if a < minabs then minabs = a end
      end
    end
  end
  -- torch/_tensor_str.py's rule over the finite non-zero values shown: scientific when
  -- they span a ratio over 1000 or exceed 1e8, or (not all integral) one is below 1e-4
  local sci = o.sci_mode
  if sci == nil then
    sci = maxabs > 0 and (maxabs / minabs > 1000 or maxabs > 1e8 or (not all_int and minabs < 1e-4))
  end
  local fmt
  if not is_float or (all_int and not sci) then fmt = "%d"
  elseif sci then fmt = "%." .. o.precision .. "e"
  else fmt = "%." .. o.precision .. "f" end
  local out, width = {}, 0
  for i, v in ipairs(flat) do
    local s
    if type(v) == "boolean" then s = tostring(v)
    elseif v ~= v then s = "nan"
    elseif v == math.huge then s = "inf"
    elseif v == -math.huge then s = "-inf"
    elseif fmt == "%d" then s = (v == 0 and 1 / v < 0) and "-0" or format("%d", floor(v)) -- -0.0 as PyTorch's -0.
    else s = format(fmt, v) end
    out[i] = s
    if #s > width then width = #s end
  end
  return out, width
end

local function flatten(tbl, out)
  if type(tbl) ~= "table" then out[#out + 1] = tbl; return out end
  for _, v in ipairs(tbl) do flatten(v, out) end
  return out
end

--- M.body(t, core): the lines of tostring(t) above its footer (t has elements; syncs).
function M.body(t, core)
  local o = M.options
  local size = t:size()
  local nd = #size
  local e = o.edgeitems
  -- cut[d]: dim d is summarised (its first e and last e indices shown)
  local cut, shown, small = {}, {}, t
  local summarise = t:numel() > o.threshold
  for d = 1, nd do
    shown[d] = size[d]
    if summarise and size[d] > 2 * e then
      cut[d] = true
      shown[d] = 2 * e
      if e == 0 then
        small = small:narrow(d, 1, 0)
      else
        small = core.cat({ small:narrow(d, 1, e), small:narrow(d, size[d] - e + 1, e) }, d)
      end
    end
  end
  local lines = {}
  local strs, width = {}, 0
  if small:numel() > 0 then
    strs, width = fmt_values(flatten(small:totable(), {}), t:dtype():find("float", 1, true) ~= nil, o)
  end
  local pos = 1
  local function cell()
    local s = strs[pos]
    pos = pos + 1
    return rep(" ", width - #s + 1) .. s
  end
  -- the index along dim d of shown position p
  local function orig(d, p) return (cut[d] and p > e) and size[d] - 2 * e + p or p end
  local function matrix(rows, cols, rdim, cdim)
    for r = 1, rows do
      if rdim and cut[rdim] and r == e + 1 then lines[#lines + 1] = " ..." end
      local row = {}
      for c = 1, cols do
        if cdim and cut[cdim] and c == e + 1 then row[#row + 1] = " ..." end
        row[#row + 1] = cell()
      end
      lines[#lines + 1] = concat(row, " ")
    end
    if rdim and cut[rdim] and e == 0 then lines[#lines + 1] = " ..." end
  end
  if nd == 0 then lines[1] = cell()
  elseif nd == 1 then matrix(shown[1], 1, 1, nil)
  elseif nd == 2 then matrix(shown[1], shown[2], 1, 2)
  else
    local rows, cols = shown[nd - 1], shown[nd]
    local nslices = 1
    for d = 1, nd - 2 do nslices = nslices * shown[d] end
    local idx = {}
    for d = 1, nd - 2 do idx[d] = 1 end
    for _ = 1, nslices do
      local o_idx = {}
      for d = 1, nd - 2 do o_idx[d] = orig(d, idx[d]) end
      lines[#lines + 1] = "(" .. concat(o_idx, ",") .. ",.,.) = "
      matrix(rows, cols, nd - 1, nd)
      lines[#lines + 1] = ""
      for d = nd - 2, 1, -1 do
        idx[d] = idx[d] + 1
        if idx[d] <= shown[d] then
          if cut[d] and idx[d] == e + 1 then lines[#lines + 1] = "..."; lines[#lines + 1] = "" end
          break
        end
        idx[d] = 1
      end
    end
  end
  return lines
end

---------------------------------------------------------------------------------------------
-- ltc.Size

--- ltc.Size: what t:size() returns: a plain list of the sizes (s[1], #s, ipairs,
-- table.unpack work as on any table) that prints as `ltc.Size{2, 3}`, compares with ==
-- (against another size or a plain table of numbers: `x:size() == {2, 3}`), and has
-- s:numel(). ltc.Size{2, 3} makes one (PyTorch's torch.Size).
local Size = { __name = "ltc.Size" }
local size_methods = {}
Size.__index = size_methods
Size.__tostring = function(s) return "ltc.Size{" .. concat(s, ", ") .. "}" end
Size.__eq = function(a, b)
  if type(a) ~= "table" or type(b) ~= "table" or #a ~= #b then return false end
  for i = 1, #a do
    if a[i] ~= b[i] then return false end
  end
  return true
end

--- s:numel(): the product of the sizes (1 for a 0-d size).
function size_methods.numel(s)
  local n = 1
  for i = 1, #s do n = n * s[i] end
  return n
end

M.Size_mt = Size

--- ltc.Size(list): a size from a list of numbers (copied). Errors unless whole numbers >= 0.
function M.Size(list)
  if type(list) ~= "table" then raise("Size: expected a table of sizes, got " .. type(list)) end
  local s = {}
  for i, v in ipairs(list) do
    if math.type(v) ~= "integer" or v < 0 then
      raise(string.format("Size: size %d is %s, not a whole number >= 0", i, tostring(v)))
    end
    s[i] = v
  end
  return setmetatable(s, Size)
end

--- install(core): t:size() returns an ltc.Size (t:size(d) a number, as before).
function M.install(core)
  local methods = core.methods
  local raw_size = methods.size
  local setmt = setmetatable
  methods.size = function(t, ...)
    local s = raw_size(t, ...)
    if type(s) == "table" then setmt(s, Size) end
    return s
  end
end

return M
