--- ltc.io: reading data files.
local core = require "ltc.core"

local M = {}

--- ltc.io.read_csv(path [, opts]): rows of numbers from a CSV file (gzip-compressed or not,
-- read through zlib). Returns a table of rows, each a table of numbers. opts.skip: lines
-- to skip at the top (default 0). Raises on a field that is not a number, naming the
-- line and field.
function M.read_csv(path, opts)
  local skip = opts and opts.skip or 0
  local text = core.read_gz(path)
  local rows, lineno = {}, 0
  for line in text:gmatch("[^\r\n]+") do
    lineno = lineno + 1
    if lineno > skip then
      local row = {}
      for field in line:gmatch("[^,]+") do
        local v = tonumber(field)
        if v == nil then
          error(string.format("read_csv: %s:%d: field %d ('%s') is not a number",
            path, lineno, #row + 1, field), 2)
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
  return core.read_idx(path, opts.dtype, opts.scale, opts.offset)
end

---------------------------------------------------------------------------------------------
-- state dicts as .npz files: NumPy's format for several named arrays, a zip archive of
-- "<name>.npy" members (stored, not compressed; CRC-32 checked on reading). np.load(path)
-- reads what ltc.io.save_npz writes; ltc.io.load_npz reads np.savez files (not
-- np.savez_compressed ones).

local CRC = {}
for i = 0, 255 do
  local c = i
  for _ = 1, 8 do c = (c & 1) ~= 0 and (0xEDB88320 ~ (c >> 1)) or (c >> 1) end
  CRC[i] = c
end

local function crc32(s)
  local c = 0xFFFFFFFF
  for i = 1, #s do c = CRC[(c ~ s:byte(i)) & 0xFF] ~ (c >> 8) end
  return c ~ 0xFFFFFFFF
end

local function read_all(path)
  local f = assert(io.open(path, "rb"))
  local data = f:read("a")
  f:close()
  return data
end

-- The .npy bytes of tensor t (written and read back through a temporary file).
local function npy_bytes(t)
  local tmp = os.tmpname()
  local ok, err = pcall(core.save, tmp, t)
  if not ok then os.remove(tmp); error(err, 0) end
  local data = read_all(tmp)
  os.remove(tmp)
  return data
end

local function npy_tensor(bytes, what)
  local tmp = os.tmpname()
  local f = assert(io.open(tmp, "wb"))
  f:write(bytes)
  f:close()
  local ok, t = pcall(core.load, tmp)
  os.remove(tmp)
  if not ok then error(string.format("load: member '%s': %s", what, tostring(t)), 0) end
  return t
end

--- ltc.io.save_npz(path, tensors): writes a table {name = tensor} (a state dict) to one
-- .npz file, a member "<name>.npy" per entry in sorted name order. Syncs the tensors.
-- Raises on a value that is not a tensor or a file that cannot be written.
function M.save_npz(path, tensors)
  local names = {}
  for k, v in pairs(tensors) do
    if type(k) ~= "string" then error("save: state dict keys must be strings, not " .. type(k), 2) end
    if not core.is_tensor(v) then error(string.format("save: '%s' is not a tensor", k), 2) end
    names[#names + 1] = k
  end
  table.sort(names)
  local parts, central, offset = {}, {}, 0
  for _, name in ipairs(names) do
    local fname, data = name .. ".npy", npy_bytes(tensors[name])
    if #data >= 0xFFFFFFFF or offset >= 0xFFFFFFFF then
      error("save: '" .. name .. "' is too large for a .npz file without zip64", 2)
    end
    local crc = crc32(data)
    -- local file header: version 2.0, no flags, stored, no time stamp
    local head = string.pack("<I4I2I2I2I2I2I4I4I4I2I2", 0x04034b50, 20, 0, 0, 0, 0x21,
      crc, #data, #data, #fname, 0)
    parts[#parts + 1] = head .. fname
    parts[#parts + 1] = data
    central[#central + 1] = string.pack("<I4I2I2I2I2I2I2I4I4I4I2I2I2I2I2I4I4", 0x02014b50,
      20, 20, 0, 0, 0, 0x21, crc, #data, #data, #fname, 0, 0, 0, 0, 0, offset) .. fname
    offset = offset + #head + #fname + #data
  end
  local cd = table.concat(central)
  local tail = string.pack("<I4I2I2I2I2I4I4I2", 0x06054b50, 0, 0, #names, #names, #cd, offset, 0)
  local f, err = io.open(path, "wb")
  if not f then error("save: cannot write '" .. path .. "': " .. tostring(err), 2) end
  f:write(table.concat(parts), cd, tail)
  f:close()
end

-- The position of the end-of-central-directory record of a zip archive: the last "PK\5\6"
-- (a comment of up to 64 KiB may follow it); nil if there is none.
local function find_eocd(data)
  for i = #data - 21, math.max(1, #data - 21 - 65535), -1 do
    if data:sub(i, i + 3) == "PK\5\6" then return i end
  end
end

--- ltc.io.load_npz(path): the {name = tensor} table of a .npz file (the inverse of
-- save_npz; members named "<name>.npy"). Raises on a file that is not a zip archive, a
-- compressed member, or a CRC mismatch.
function M.load_npz(path)
  local f, err = io.open(path, "rb")
  if not f then error("load: cannot open '" .. path .. "': " .. tostring(err), 2) end
  local data = f:read("a")
  f:close()
  local eocd = find_eocd(data)
  if not eocd then error("load: '" .. path .. "' is not a .npz (zip) file", 2) end
  local _, _, _, _, count, _, cd_off = string.unpack("<I4I2I2I2I2I4I4", data, eocd)
  local out, pos = {}, cd_off + 1
  for _ = 1, count do
    local sig, _, _, flags, method, _, _, crc, csize, _, nlen, xlen, clen, _, _, _, loff =
      string.unpack("<I4I2I2I2I2I2I2I4I4I4I2I2I2I2I2I4I4", data, pos)
    if sig ~= 0x02014b50 then error("load: '" .. path .. "': bad zip central directory", 2) end
    local fname = data:sub(pos + 46, pos + 45 + nlen)
    pos = pos + 46 + nlen + xlen + clen
    if method ~= 0 or flags & 1 ~= 0 then
      error(string.format("load: '%s': member '%s' is compressed or encrypted (only "
        .. "np.savez's stored members are read)", path, fname), 2)
    end
    local lnlen, lxlen = string.unpack("<I2I2", data, loff + 27)
    local start = loff + 31 + lnlen + lxlen
    local bytes = data:sub(start, start + csize - 1)
    if #bytes ~= csize or crc32(bytes) ~= crc then
      error(string.format("load: '%s': member '%s' is truncated or corrupt (CRC-32)", path, fname), 2)
    end
    local name = fname:gsub("%.npy$", "")
    out[name] = npy_tensor(bytes, fname)
  end
  return out
end

--- ltc.save(path, value): a tensor to a .npy file, or a table {name = tensor} (a state
-- dict) to a .npz file (save_npz).
function M.save(path, value)
  if core.is_tensor(value) then return core.save(path, value) end
  if type(value) ~= "table" then
    error("save: a tensor or a table of tensors expected, got " .. type(value), 2)
  end
  return M.save_npz(path, value)
end

--- ltc.load(path): the tensor of a .npy file, or the {name = tensor} table of a .npz
-- file (a zip archive: "PK" at the start and an end-of-central-directory record).
function M.load(path)
  local f = io.open(path, "rb")
  local data = f and f:read(2)
  if data == "PK" then data = data .. (f:read("a") or "") end
  if f then f:close() end
  if data == "PK" or (data and data:sub(1, 2) == "PK" and find_eocd(data)) then
    return M.load_npz(path)
  end
  return core.load(path)
end

return M
