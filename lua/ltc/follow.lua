--- ltc.follow: library functions run on their input's device. PyTorch makes what an op
-- creates from nothing (zeros, ones, a mask, an index range, a random draw) on its input's
-- device; here the Lua library's functions call the creation functions (ltc.zeros,
-- ltc.arange, ltc.rand, ...), which make tensors on the default device unless a device guard
-- is set. follow(fn) wraps fn so that it runs under a guard for its input's device (the
-- first tensor among its arguments, or the first element of a list of tensors as the first
-- or second argument; core._follow_args finds it in one C call) when that is not where new
-- tensors go already; the guard is then restored (also after an error, which is raised
-- again as it was). The autograd engine does the same per
-- node in C (ltc_device_follow in src/core/device.c).
local core = require "ltc.core"
local help = require "ltc.help"
local follow_args, guard, raise = core._follow_args, core._device_guard, core._raise
local type, pcall = type, pcall

local M = {}
local wrapper_of = setmetatable({}, { __mode = "k" }) -- fn -> its follow wrapper
local wrapped = setmetatable({}, { __mode = "k" }) -- wrapper -> true

-- returns its arguments: `return pass(fn(...))` calls fn as a normal call, not a tail call,
-- so fn's frame sits above the wrapper's (the LTC_IR_DEBUG module scopes in
-- src/lua/ltc_debug.c take a tail-call frame for a module's forward)
local function pass(...) return ... end

local function finish(prev, ok, ...)
  guard(prev)
  if not ok then raise((...)) end
  return ...
end

--- follow(fn): fn run on its input's device (see above); ltc.help reads fn's doc comment.
function M.follow(fn)
  if wrapped[fn] then return fn end
  if wrapper_of[fn] then return wrapper_of[fn] end
  local function wrapper(...)
    local moved, prev = follow_args(...)
    if not moved then return pass(fn(...)) end
    return finish(prev, pcall(fn, ...))
  end
  help.wraps[wrapper] = fn
  wrapper_of[fn], wrapped[wrapper] = wrapper, true
  return wrapper
end

-- whether fn is one of the library's own Lua functions (lua/ltc/*.lua)
local function library_lua(fn)
  if type(fn) ~= "function" then return false end
  local info = debug.getinfo(fn, "S")
  return info.what == "Lua" and info.source:find("[/\\]ltc[/\\][%w_]+%.lua$") ~= nil
end

--- follow_all(tbl, skip): every library Lua function in tbl wrapped by follow, but those
-- whose names are keys of skip; a function under several names gets one wrapper.
function M.follow_all(tbl, skip)
  local names = {}
  for name, fn in pairs(tbl) do
    if not (skip and skip[name]) and not wrapped[fn] and library_lua(fn) then
      names[#names + 1] = name
    end
  end
  for _, name in ipairs(names) do tbl[name] = M.follow(tbl[name]) end
end

return M
