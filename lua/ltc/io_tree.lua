--- ltc.io_tree: the structure of a nested table (an optimizer's state_dict(), a checkpoint of
-- {model = ..., opt = ..., step = ...}) as bytes, for ltc.save/ltc.load (lua/ltc/io.lua), as
-- torch.save pickles a state dict. Tensors are not in the bytes: each is replaced by the name
-- of the .npz member that holds it (one member per tensor object, so a tensor that appears
-- twice is saved once and loads as one tensor). Numbers keep their Lua subtype (integers as
-- int64, floats as the 8 bytes of their double, so every value, NaN and -0.0 included, comes
-- back bit for bit), booleans and strings (any bytes) as they are.
--
-- The bytes: "LTCTREE1", then one value. A value is a tag byte and its data: "T" a table (a
-- u32 count, then count key-value pairs, a key being an "i" or "s" value), "i" an int64, "f"
-- a double, "b" a byte 0 or 1, "s" a string (u32 length, bytes), "X" a tensor (its member
-- name as a string). Little-endian throughout.
local core = require "ltc.core"

local M = {}
local MAGIC = "LTCTREE1"

-- a key as a step of a key path: .name for an identifier, [1] or ["a b"] otherwise
local function step(k)
  if type(k) == "string" and k:match("^[%a_][%w_]*$") then return "." .. k end
  return "[" .. (type(k) == "string" and string.format("%q", k) or tostring(k)) .. "]"
end

local function where(path) return path == "" and "the top" or path:gsub("^%.", "") end

--- M.encode(root, member): the bytes of table root; member(t, path) is called once per
-- distinct tensor and returns the name of its member. Raises, naming the key path, on a
-- function, a coroutine, userdata other than tensors (a closed tensor included), a key that
-- is neither a string nor an integer, or a table inside itself (a cycle).
function M.encode(root, member)
  local out, open, names = { MAGIC }, {}, {}
  local function bad(path, what)
    core._raise(string.format("save: %s at %s: tables of tensors, numbers, booleans and strings "
      .. "are saved", what, where(path)))
  end
  local function value(v, path)
    local ty = type(v)
    if ty == "number" then
      if math.type(v) == "integer" then out[#out + 1] = string.pack("<c1i8", "i", v)
      else out[#out + 1] = string.pack("<c1d", "f", v) end
    elseif ty == "boolean" then out[#out + 1] = string.pack("<c1B", "b", v and 1 or 0)
    elseif ty == "string" then out[#out + 1] = string.pack("<c1s4", "s", v)
    elseif core.is_tensor(v) then
      local name = names[v]
      if not name then
        name = member(v, path)
        names[v] = name
      end
      out[#out + 1] = string.pack("<c1s4", "X", name)
    elseif ty == "table" and getmetatable(v) ~= nil then
      bad(path, "a table with a metatable (an object: save its state_dict() instead)")
    elseif ty == "table" then
      if open[v] then
        bad(path, "a cycle (the table is also at " .. where(open[v]) .. ")")
      end
      open[v] = path
      local keys = {}
      for k in pairs(v) do
        if math.type(k) ~= "integer" and type(k) ~= "string" then
          bad(path .. "[" .. tostring(k) .. "]", "a " .. (math.type(k) or type(k)) .. " key")
        end
        keys[#keys + 1] = k
      end
      -- integers first, in order, then strings in order: the same table, the same bytes
      table.sort(keys, function(a, b)
        local ia, ib = math.type(a) == "integer", math.type(b) == "integer"
        if ia ~= ib then return ia end
        return a < b
      end)
      out[#out + 1] = string.pack("<c1I4", "T", #keys)
      for _, k in ipairs(keys) do
        if math.type(k) == "integer" then out[#out + 1] = string.pack("<c1i8", "i", k)
        else out[#out + 1] = string.pack("<c1s4", "s", k) end
        value(v[k], path .. step(k))
      end
      open[v] = nil
    else
      local mt = getmetatable(v)
      bad(path, (mt and type(mt) == "table" and mt.__name == "ltc.Tensor") and "a closed tensor"
        or "a " .. ty)
    end
  end
  value(root, "")
  return table.concat(out)
end

--- M.decode(bytes, tensor, what): the table of bytes made by encode; tensor(name) gives the
-- tensor of a member (nil when there is none). Raises "<what>: ..." on bytes that are not
-- such a tree (truncated, an unknown tag, a missing member).
function M.decode(bytes, tensor, what)
  local function corrupt(pos, why)
    core._raise(string.format("%s: the structure of the saved table is corrupt at byte %d (%s)",
      what, pos, why))
  end
  if bytes:sub(1, #MAGIC) ~= MAGIC then corrupt(1, "no " .. MAGIC .. " header") end
  local pos = #MAGIC + 1
  local function unpack(fmt)
    local ok, a, b = pcall(string.unpack, fmt, bytes, pos)
    if not ok then corrupt(pos, "truncated") end
    pos = b or a
    return a
  end
  local value
  local function key()
    local tag = unpack("<c1")
    if tag == "i" then return unpack("<i8") end
    if tag == "s" then return unpack("<s4") end
    corrupt(pos - 1, "a key tagged '" .. tag .. "'")
  end
  function value(depth)
    if depth > 200 then corrupt(pos, "nested more than 200 deep") end
    local at = pos
    local tag = unpack("<c1")
    if tag == "i" then return unpack("<i8") end
    if tag == "f" then return unpack("<d") end
    if tag == "b" then return unpack("<B") ~= 0 end
    if tag == "s" then return unpack("<s4") end
    if tag == "X" then
      local name = unpack("<s4")
      local t = tensor(name)
      if t == nil then corrupt(at, "no member '" .. name .. "'") end
      return t
    end
    if tag == "T" then
      local t = {}
      for _ = 1, unpack("<I4") do
        local k = key()
        t[k] = value(depth + 1)
      end
      return t
    end
    corrupt(at, "a value tagged '" .. tag .. "'")
  end
  local root = value(0)
  if pos ~= #bytes + 1 then corrupt(pos, "bytes after the end") end
  return root
end

--- M.path_name(path): a member name for a tensor at key path (the path without brackets and
-- quotes: "state.1.exp_avg"), as np.load shows it.
function M.path_name(path)
  local s = path:gsub("^%.", ""):gsub("%[\"(.-)\"%]", ".%1"):gsub("%[(%-?%d+)%]", ".%1"):gsub("^%.", "")
  return s == "" and "tensor" or s
end

return M
