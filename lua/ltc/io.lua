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

return M
