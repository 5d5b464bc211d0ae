--- ltc.keywords: PyTorch's keyword arguments for the ops of codegen/ops.yaml.
--
-- x:sum{dim = 1, keepdim = true}, ltc.cat{{a, b}, dim = 2}, x:clamp(0, {max = 1}): a last
-- argument that is a table with a string key holds keywords, named as the op's schema in
-- ops.yaml names its arguments (its array part continues the positional arguments). The
-- generated binding of every op does this in C (src/lua/ltc_kwargs.c) from the argument
-- names the generator emits (core._keywords, name -> one list per overload). The ops that
-- lua/ltc/*.lua replaced by Lua functions (cat, clamp, stack, ...) get the same code here
-- (core._kwbind): the keywords go to their places before the Lua function runs; a key that
-- fits no overload is an error naming the op and the key, at the caller's line.
local help = require "ltc.help"
local kwbind = require("ltc.core")._kwbind

local K = {}

-- fn (the function named name) taking keyword tables by the schemas of the op base (a C
-- closure: src/lua/ltc_kwargs.c matches the keys and raises at the caller's line, as the
-- generated bindings do; ltc.help follows it to fn)
local function wrap(name, fn, base)
  local wrapper = kwbind(base, fn, name)
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
  for name in pairs(keywords) do
    if not skip[name] then
      for _, tbl in ipairs { M, methods } do
        if lua_fn(tbl[name]) then tbl[name] = wrap(name, tbl[name], name) end
      end
      local uname = name .. "_"
      if lua_fn(methods[uname]) then methods[uname] = wrap(uname, methods[uname], name) end
    end
  end
end

return K
