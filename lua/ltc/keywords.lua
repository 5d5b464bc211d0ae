--- ltc.keywords: PyTorch's keyword arguments for the ops of codegen/ops.yaml.
--
-- x:sum{dim = 1, keepdim = true}, ltc.cat{{a, b}, dim = 2}, x:clamp(0, {max = 1}): a last
-- argument that is a table with a string key holds keywords, named as the op's schema in
-- ops.yaml names its arguments (its array part continues the positional arguments). The
-- generated binding of every op does this in C (src/lua/ltc_kwargs.c) from the argument
-- names the generator emits (core._keywords, name -> one list per overload). The ops that
-- lua/ltc/*.lua replaced by Lua functions (cat, clamp, softmax, ...) get the same here: the
-- keywords go to their places before the Lua function runs; a key that fits no overload is
-- an error naming the op and the key.
local help = require "ltc.help"
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local type, select, next, rawlen, unpack = type, select, next, rawlen, table.unpack

local K = {}

-- whether v is a keyword table: a table with a string key (looked for after its array part;
-- raw, as the C side does: a list with __len or __index is read by the op, not here)
local function has_keys(v)
  if type(v) ~= "table" then return false end
  local n = rawlen(v)
  local k = next(v, n > 0 and n or nil)
  while k ~= nil do
    if type(k) == "string" then return true end
    k = next(v, k)
  end
  return false
end
K.has_keys = has_keys

local function index_of(names, key)
  for j = 1, #names do
    if names[j] == key then return j end
  end
end

--- K.map(ovs, ...): the arguments with the keyword table (the last) put in their places for
-- the first overload of ovs (core._keywords[name]) that takes every key and gets its
-- required arguments (else the first that takes every key). Returns the argument list and
-- its length, or nil and a message when no overload takes every key.
function K.map(ovs, ...)
  local n = select("#", ...)
  local tbl = select(n, ...)
  local args = { ... }
  args[n] = nil
  local p = n - 1
  for i = 1, #tbl do
    p = p + 1
    args[p] = tbl[i]
  end
  local fit
  for _, names in ipairs(ovs) do
    local fits = true
    for k in pairs(tbl) do
      if type(k) ~= "number" then
        local j = type(k) == "string" and index_of(names, k)
        if not j or j <= p then fits = false; break end
      end
    end
    if fits then
      local full = true
      for j = p + 1, names.n_required do
        if tbl[names[j]] == nil then full = false; break end
      end
      if full then fit = names; break end
      fit = fit or names
    end
  end
  if not fit then -- the message of the binding's (src/lua/ltc_kwargs.c)
    local bad, dup
    for k in pairs(tbl) do
      if type(k) ~= "number" then
        local known
        for _, names in ipairs(ovs) do
          local j = index_of(names, k)
          if j and j <= p then dup = dup or k end
          known = known or j ~= nil
        end
        if not known then bad = bad or tostring(k) end
      end
    end
    if dup and not bad then
      return nil, string.format("argument '%s' given by position and by keyword", dup)
    end
    local expected, seen = {}, {}
    for _, names in ipairs(ovs) do
      for j = p + 1, #names do
        if not seen[names[j]] then expected[#expected + 1], seen[names[j]] = names[j], true end
      end
    end
    return nil, string.format("unknown keyword argument '%s' (expected %s)", bad,
      #expected > 0 and table.concat(expected, ", ")
        or "none after " .. table.concat(ovs[1], ", "))
  end
  local last = p
  for j = p + 1, #fit do
    local v = tbl[fit[j]]
    if v ~= nil then args[j], last = v, j end
  end
  return args, last
end

-- fn (the function named name) taking keyword tables by the schemas of ovs
local function wrap(name, fn, ovs)
  local map = K.map
  local function wrapper(...)
    local n = select("#", ...)
    if n > 0 and has_keys((select(n, ...))) then
      local args, m = map(ovs, ...)
      if not args then raise(name .. ": " .. m) end
      return fn(unpack(args, 1, m))
    end
    return fn(...)
  end
  help.wraps[wrapper] = fn
  return wrapper
end

--- K.install(M, methods, keywords, skip, overloads): the Lua functions of M and methods (and the
-- in-place methods <name>_) under the names of keywords (core._keywords) take keyword
-- tables; C functions (the generated bindings) do already. Left alone: names in skip (the
-- creation functions: their trailing table is {device =, dtype =, requires_grad =}) and the
-- functions of lua/ltc/reductions.lua, which read their own options (var's correction), and
-- names with a composite overload (overloads: core._overloads), whose generated dispatcher
-- picks it by its keyword table (t:div_(2, {rounding_mode = "floor"})).
function K.install(M, methods, keywords, skip, overloads)
  skip = setmetatable({}, { __index = skip })
  for full in pairs(overloads) do -- names with a composite overload: their dispatcher's table
    skip[full:match("^[^.]+")] = true
  end
  local function lua_fn(f)
    if type(f) ~= "function" or debug.getinfo(f, "S").what == "C" then return false end
    repeat -- through the wrappers (ltc.follow's, argument checks) to what they wrap
      if debug.getinfo(f, "S").source:find("reductions%.lua$") then return false end
      f = help.wraps[f]
    until not f
    return true
  end
  for name, ovs in pairs(keywords) do
    if not skip[name] then
      for _, tbl in ipairs { M, methods } do
        if lua_fn(tbl[name]) then tbl[name] = wrap(name, tbl[name], ovs) end
      end
      local uname = name .. "_"
      if lua_fn(methods[uname]) then methods[uname] = wrap(uname, methods[uname], ovs) end
    end
  end
end

return K
