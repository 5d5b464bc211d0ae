--- ltc.io: reading data files.
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local core = require "ltc.core"

local M = {}

--- ltc.io.read_csv(path [, opts]): rows of numbers from a CSV file (gzip-compressed or not,
-- read through zlib). Returns a table of rows, each a table of numbers. opts.skip: lines
-- to skip at the top (default 0). Raises on a field that is not a number, naming the
-- line and field.
function M.read_csv(path, opts)
  if type(path) ~= "string" then
    raise("read_csv: bad argument #1 (a path string expected, got " .. core.typename(path) .. ")")
  end
  local skip = opts and opts.skip or 0
  local ok, text = pcall(core.read_gz, path)
  if not ok then raise("read_csv: " .. tostring(text)) end
  local rows, lineno = {}, 0
  for line in text:gmatch("[^\r\n]+") do
    lineno = lineno + 1
    if lineno > skip then
      local row = {}
      for field in line:gmatch("[^,]+") do
        local v = tonumber(field)
        if v == nil then
          raise(string.format("read_csv: %s:%d: field %d ('%s') is not a number",
            path, lineno, #row + 1, field))
        end
        row[#row + 1] = v
      end
      rows[#rows + 1] = row
    end
  end
  return rows
end

--- ltc.io.read_idx(path [, opts]): an IDX file (the MNIST format, gzip-compressed or not)
-- as a tensor with the file's sizes, parsed in C. opts.dtype (default "float32"), opts.scale
-- and opts.offset (default 1 and 0): each value becomes value * scale + offset, e.g.
-- {scale = 1/255} for pixels in [0, 1] or {dtype = "int64", offset = 1} for 1-based labels.
function M.read_idx(path, opts)
  opts = opts or {}
  local ok, t = pcall(core.read_idx, path, opts.dtype, opts.scale, opts.offset)
  if not ok then raise(t) end -- at the caller's line, not this one
  return t
end

---------------------------------------------------------------------------------------------
-- state dicts as .npz files: NumPy's format for several named arrays, a zip archive of
-- "<name>.npy" members (stored, not compressed; CRC-32 checked on reading). np.load(path)
-- reads what ltc.io.save_npz writes; ltc.io.load_npz reads np.savez and
-- np.savez_compressed files (deflate, through zlib).

local crc32 = core.crc32 -- zlib's
local tree = require "ltc.io_tree"

-- The .npy bytes of tensor t, made in memory (core.npy_bytes).
local function npy_bytes(t) return core.npy_bytes(t) end

-- The tensor of a member's .npy bytes, read in memory; an error names the member.
local function npy_tensor(bytes, what)
  local ok, t = pcall(core.npy_load_bytes, bytes, what)
  if not ok then
    raise(string.format("member '%s': %s", what, (tostring(t):gsub("^[^\n]-:%d+: ", ""):gsub("^load: ", ""))))
  end
  return t
end

-- Writes the zip archive `path` of members {name, bytes}, in order; bytes is a string or a
-- function that makes it (called when the member is written, so memory holds one member at
-- a time). Every write and the close are checked (a full disk is an error, not a truncated
-- file).
local function write_zip(path, members)
  local f, err = io.open(path, "wb")
  if not f then raise("save: cannot write '" .. path .. "': " .. tostring(err)) end
  local function put(...)
    local ok, werr = f:write(...)
    if not ok then
      f:close()
      raise("save: cannot write '" .. path .. "': " .. tostring(werr))
    end
  end
  local central, offset = {}, 0
  for _, m in ipairs(members) do
    local fname, data = m[1], m[2]
    if type(data) == "function" then
      local ok, bytes = pcall(data)
      if not ok then f:close(); raise(bytes) end
      data = bytes
    end
    if #data >= 0xFFFFFFFF or offset >= 0xFFFFFFFF then
      f:close()
      raise("save: '" .. fname .. "' is too large for a .npz file without zip64")
    end
    local crc = crc32(data)
    -- local file header: version 2.0, no flags, stored, no time stamp
    local head = string.pack("<I4I2I2I2I2I2I4I4I4I2I2", 0x04034b50, 20, 0, 0, 0, 0x21,
      crc, #data, #data, #fname, 0)
    put(head, fname, data)
    central[#central + 1] = string.pack("<I4I2I2I2I2I2I2I4I4I4I2I2I2I2I2I4I4", 0x02014b50,
      20, 20, 0, 0, 0, 0x21, crc, #data, #data, #fname, 0, 0, 0, 0, 0, offset) .. fname
    offset = offset + #head + #fname + #data
  end
  local cd = table.concat(central)
  put(cd, string.pack("<I4I2I2I2I2I4I4I2", 0x06054b50, 0, 0, #members, #members, #cd, offset, 0))
  local ok, cerr = f:close()
  if not ok then raise("save: cannot write '" .. path .. "': " .. tostring(cerr)) end
end

--- ltc.io.save_npz(path, tensors): writes a table {name = tensor} (a state dict) to one
-- .npz file, a member "<name>.npy" per entry in sorted name order. Syncs the tensors.
-- Raises on a value that is not a tensor, or when the file cannot be written. Each member
-- is written as soon as it is made, so memory holds one member at a time.
function M.save_npz(path, tensors)
  local names = {}
  for k, v in pairs(tensors) do
    if type(k) ~= "string" then raise("save: state dict keys must be strings, not " .. type(k)) end
    if not core.is_tensor(v) then raise(string.format("save: '%s' is not a tensor", k)) end
    names[#names + 1] = k
  end
  table.sort(names)
  local members = {}
  for i, name in ipairs(names) do
    members[i] = { name .. ".npy", function() return npy_bytes(tensors[name]) end }
  end
  write_zip(path, members)
end

-- the member of a nested table's structure (lua/ltc/io_tree.lua); np.load gives its bytes
local TREE = "__ltc_tree__"

-- Whether t is a state dict as np.savez writes it: string keys, tensor values.
local function flat(t)
  for k, v in pairs(t) do
    if type(k) ~= "string" or not core.is_tensor(v) or k == TREE then return false end
  end
  return true
end

--- ltc.io.save_tree(path, t): a nested table of tensors, numbers, booleans and strings
-- (string or integer keys) to one .npz file: a member "<key path>.npy" per tensor and the
-- member __ltc_tree__ holding the rest (lua/ltc/io_tree.lua), so that load gives back an
-- equal table: numbers bit for bit with their subtype, a tensor that appears twice once.
-- Raises, naming the key path, on anything else (a function, userdata that is not a tensor,
-- a table with a metatable, a cycle).
function M.save_tree(path, t)
  local members, used = {}, {}
  local bytes = tree.encode(t, function(x, at)
    local base = tree.path_name(at)
    local name, n = base, 1
    while used[name] or name == TREE do n = n + 1; name = base .. "~" .. n end
    used[name] = true
    members[#members + 1] = { name .. ".npy", function() return npy_bytes(x) end }
    return name
  end)
  members[#members + 1] = { TREE, bytes }
  write_zip(path, members)
end

-- The position of the end-of-central-directory record of a zip archive in `data` (the
-- file's last bytes): the last "PK\5\6" (a comment of up to 64 KiB may follow it); nil if
-- there is none.
local function find_eocd(data)
  for i = #data - 21, math.max(1, #data - 21 - 65535), -1 do
    if data:sub(i, i + 3) == "PK\5\6" then return i end
  end
end

--- ltc.io.load_npz(path): the {name = tensor} table of a .npz file (the inverse of
-- save_npz; members named "<name>.npy"; np.savez's stored and np.savez_compressed's
-- deflated members). Raises, naming load and the archive, on a file that is not a zip
-- archive, a truncated or corrupt one, an encrypted member, or a CRC mismatch; a bad
-- member's error names the member. The file is read member by member (the central
-- directory at its end, then each member where it says), so memory holds one member's
-- bytes at a time besides the tensors. A file that save_tree wrote gives its nested table.
function M.load_npz(path)
  if type(path) ~= "string" then
    raise("load_npz: bad argument #1 (a path string expected, got " .. core.typename(path) .. ")")
  end
  local f, err = io.open(path, "rb")
  if not f then raise("load: cannot open '" .. path .. "': " .. tostring(err)) end
  local function bad(what)
    f:close()
    raise(string.format("load: '%s': %s", path, what))
  end
  local size = f:seek("end")
  if not size then bad("cannot read") end
  -- n bytes at 0-based offset pos, or an error naming the archive when they are outside it
  local function read_at(pos, n, what)
    if pos < 0 or n < 0 or pos + n > size then bad(what .. " lies outside the file (truncated or corrupt)") end
    if n == 0 then return "" end
    f:seek("set", pos)
    local s = f:read(n)
    if not s or #s ~= n then bad("cannot read " .. what) end
    return s
  end
  local tail_len = math.min(size, 65535 + 22)
  local tail = read_at(size - tail_len, tail_len, "the end of the file")
  local eocd = find_eocd(tail)
  if not eocd then
    f:close()
    raise(string.format("load: '%s' is not a .npz (zip) file", path))
  end
  local _, _, _, _, count, cd_size, cd_off = string.unpack("<I4I2I2I2I2I4I4", tail, eocd)
  local cd = read_at(cd_off, cd_size, "the central directory")
  local out, pos, tree_bytes = {}, 1, nil
  for i = 1, count do
    if pos + 45 > #cd then bad("central directory entry " .. i .. " lies outside the file (truncated or corrupt)") end
    local sig, _, _, flags, method, _, _, crc, csize, usize, nlen, xlen, clen, _, _, _, loff =
      string.unpack("<I4I2I2I2I2I2I2I4I4I4I2I2I2I2I2I4I4", cd, pos)
    if sig ~= 0x02014b50 then bad("bad zip central directory (entry " .. i .. ")") end
    if pos + 45 + nlen > #cd then bad("central directory entry " .. i .. "'s name lies outside the file") end
    local fname = cd:sub(pos + 46, pos + 45 + nlen)
    pos = pos + 46 + nlen + xlen + clen
    if (method ~= 0 and method ~= 8) or flags & 1 ~= 0 then
      bad(string.format("member '%s' is encrypted or compressed with method %d (np.savez's stored " ..
        "and np.savez_compressed's deflated members are read)", fname, method))
    end
    local lh = read_at(loff, 30, "member '" .. fname .. "''s local header")
    local lsig, lnlen, lxlen = string.unpack("<I4", lh), string.unpack("<I2I2", lh, 27)
    if lsig ~= 0x04034b50 then bad("member '" .. fname .. "': bad local header") end
    local start = loff + 30 + lnlen + lxlen
    if start + csize > size then bad(string.format("member '%s' is truncated or corrupt (past the end)", fname)) end
    local bytes = read_at(start, csize, "member '" .. fname .. "'")
    if method == 8 then
      local ok, raw = pcall(core.inflate, bytes, usize)
      if not ok then bad(string.format("member '%s': %s", fname, tostring(raw))) end
      bytes = raw
    end
    if crc32(bytes) ~= crc then
      bad(string.format("member '%s' is truncated or corrupt (CRC-32)", fname))
    end
    if fname == TREE then
      tree_bytes = bytes
    else
      local name = fname:gsub("%.npy$", "")
      local ok, t = pcall(npy_tensor, bytes, fname)
      if not ok then bad(tostring(t)) end
      out[name] = t
    end
    bytes = nil
  end
  f:close()
  if tree_bytes then
    -- a nested table (save_tree): its structure, the tensors from their members
    return tree.decode(tree_bytes, function(name) return out[name] end, "load: '" .. path .. "'")
  end
  return out
end

--- ltc.save(path, value): a tensor to a .npy file, a table {name = tensor} (a model's state
-- dict) to a .npz file (save_npz), and any other table (an optimizer's state_dict(), a
-- checkpoint nesting both with numbers) to a .npz file with its structure (save_tree).
function M.save(path, value)
  if type(path) ~= "string" then
    raise("save: bad argument #1 (a path string expected, got " .. type(path) .. ")")
  end
  if core.is_tensor(value) then return core.save(path, value) end
  if type(value) ~= "table" then
    local what = getmetatable(value) and getmetatable(value).__name == "ltc.Tensor"
      and "a closed tensor" or type(value)
    raise("save: a tensor or a table of tensors expected, got " .. what)
  end
  if flat(value) then return M.save_npz(path, value) end
  return M.save_tree(path, value)
end

--- ltc.load(path): the tensor of a .npy file, or the {name = tensor} table of a .npz
-- file (a zip archive: "PK" at the start and an end-of-central-directory record), or the
-- nested table that ltc.save wrote to it (save_tree). Tensors load on the CPU.
function M.load(path)
  if type(path) ~= "string" then
    raise("load: bad argument #1 (a path string expected, got " .. type(path) .. ")")
  end
  local f = io.open(path, "rb")
  local data = f and f:read(2)
  if f then f:close() end
  -- torch.save writes a zip holding data.pkl (or, before PyTorch 1.6, a bare pickle: \x80)
  local function torch_pickle()
    if data:sub(1, 1) == "\x80" then return true end
    local g = io.open(path, "rb")
    local all = g and g:read("a") or ""
    if g then g:close() end
    return all:find("data.pkl", 1, true) ~= nil
  end
  local function pickle_error()
    raise(string.format("load: '%s' is a PyTorch pickle (torch.save, .pt), which ltc does not "
      .. "read: save the tensors with numpy instead, np.save('x.npy', t.numpy()) or np.savez("
      .. "'sd.npz', **{k: v.numpy() for k, v in model.state_dict().items()}), and ltc.load "
      .. "that file", path))
  end
  if data and data:sub(1, 1) == "\x80" then pickle_error() end
  if data and data:sub(1, 2) == "PK" then
    local ok, res = pcall(M.load_npz, path)
    if ok then return res end
    if torch_pickle() then pickle_error() end
    if tostring(res):find("is not a .npz (zip) file", 1, true) then
      raise(string.format("load: '%s' is not a .npy file, and not a .npz (zip) file: a truncated "
        .. "zip archive (no end-of-central-directory record)", path))
    end
    raise(res)
  end
  return core.load(path)
end

return M
