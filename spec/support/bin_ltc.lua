--- spec/support/bin_ltc.lua - runs the launcher bin/ltc against the build folder the suite
-- tests (dofile'd by specs that need a fresh Lua state: the REPL, heap growth).
local M = {}

-- The build folder this suite runs against (bin/ltc reads LTC_BUILD, relative to the checkout).
local function build_dir()
  local so = assert(package.searchpath("ltc.core", package.cpath), "ltc.core not on cpath")
  local dir = so:gsub("/ltc/core%.so$", "")
  local root = (os.getenv("PWD") or ".") .. "/"
  if dir:sub(1, #root) == root then dir = dir:sub(#root + 1) end
  return dir
end

--- M.shell_quote(s): s quoted for sh.
local function shell_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
M.shell_quote = shell_quote

--- M.run(args, input): runs `bin/ltc args` with `input` on its stdin; returns stdout+stderr
-- and the exit status.
function M.run(args, input)
  local tmp = os.tmpname()
  local f = assert(io.open(tmp, "w"))
  f:write(input or "")
  f:close()
  local cmd = string.format("LTC_BUILD=%s bin/ltc %s < %s 2>&1", shell_quote(build_dir()),
    args, shell_quote(tmp))
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  local _, _, status = p:close()
  os.remove(tmp)
  return out, status
end

--- M.run_tty(script): runs `bin/ltc` (the REPL) on a terminal (util-linux's `script`), typing
-- the lines of `script` with a pause before each (a tab in a line is a key press); returns
-- what the terminal showed, or nil when `script` is not installed.
function M.run_tty(lines)
  if not os.execute("command -v script >/dev/null 2>&1") then return nil end
  local feed = { "sleep 0.5" }
  for _, l in ipairs(lines) do
    feed[#feed + 1] = "printf '%s' " .. shell_quote(l)
    feed[#feed + 1] = "sleep 0.3"
  end
  local cmd = string.format("(%s) | LTC_BUILD=%s timeout 20 script -q -c bin/ltc /dev/null 2>&1",
    table.concat(feed, "; "), shell_quote(build_dir()))
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  return out
end

return M
