--- ltc.repl: what bin/ltc's REPL adds to lua5.4's: tab completion of global names, of fields
-- (`ltc.so<Tab>` -> ltc.softmax, ltc.softplus, ...; `ltc.nn.Li<Tab>`) and of methods
-- (`x:sof<Tab>` on a tensor -> x:softmax, x:softplus). The completion runs through GNU readline,
-- which Debian's lua5.4 uses for its prompt, by the small C module ltc.repl_readline
-- (src/repl/); without it (no libreadline-dev when built) the REPL works without completion.
local core = require "ltc.core"

local M = {}

local function is_name(k) return type(k) == "string" and k:match("^[%a_][%w_]*$") ~= nil end

-- Adds the string keys of t and of its __index tables (not functions) to keys.
local function add_keys(keys, t, methods_only, depth)
  if type(t) ~= "table" or (depth or 0) > 4 then return end
  for k, v in next, t do
    if is_name(k) and (not methods_only or type(v) == "function") then keys[k] = true end
  end
  local mt = getmetatable(t)
  if type(mt) == "table" and type(rawget(mt, "__index")) == "table" then
    add_keys(keys, rawget(mt, "__index"), methods_only, (depth or 0) + 1)
  end
end

-- The value a dotted chain ("ltc.nn") names in env, or nil. Only plain field reads (a
-- table's __index may run; no calls).
local function resolve(chain, env)
  local v = env
  for part in chain:gmatch("[^.]+") do
    if not is_name(part) then return nil end
    local ok, r = pcall(function() return v[part] end)
    if not ok or r == nil then return nil end
    v = r
  end
  return v
end

--- M.complete(word [, env]): the completions of word (global names, `a.b.` fields, `x:`
-- methods of a tensor or a table), sorted; env defaults to _G.
function M.complete(word, env)
  env = env or _G
  local base, sep, partial = word:match("^([%a_][%w_.]*)([.:])([%w_]*)$")
  local keys = {}
  if not base then
    if not word:match("^[%a_]?[%w_]*$") then return {} end
    partial, base, sep = word, "", ""
    add_keys(keys, env)
    for _, kw in ipairs({ "and", "break", "do", "else", "elseif", "end", "false", "for",
      "function", "goto", "if", "in", "local", "nil", "not", "or", "repeat", "return", "then",
      "true", "until", "while" }) do keys[kw] = true end
  else
    local v = resolve(base, env)
    if v == nil then return {} end
    if core.is_tensor(v) then
      add_keys(keys, core.methods, sep == ":")
      if sep == "." then keys.grad = true end
    elseif type(v) == "table" then
      add_keys(keys, v, sep == ":")
    elseif type(v) == "string" and sep == ":" then
      add_keys(keys, string, true)
    else
      return {}
    end
  end
  local out = {}
  for k in pairs(keys) do
    if k:sub(1, #partial) == partial then out[#out + 1] = base .. sep .. k end
  end
  table.sort(out)
  return out
end

--- M.install(): sets readline's completion to M.complete when the C module is there.
-- Returns true when completion is on, false and the reason when not.
function M.install()
  local ok, rl = pcall(require, "ltc.repl_readline")
  if not ok then return false, "ltc.repl_readline is not built (libreadline-dev)" end
  rl.install(function(word) return M.complete(word) end)
  return true
end

return M
