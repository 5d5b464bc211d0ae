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

return M
