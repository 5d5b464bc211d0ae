--- bench/run.lua - the driver of `make bench`: runs each suite (bench/<name>.lua) in its own
-- process, passes its output through, collects the "@row" lines that lib.row prints and ends
-- with the summary table, also written to bench/README.md.
--
--   lua5.4 bench/run.lua [suite ...]
--
-- With no arguments every bench/*.lua except lib.lua and run.lua runs: first the suites of
-- `order`, then the others in name order. A suite that prints no "@row" line still runs and
-- shows its output; one that fails is reported and the others go on.
local dir = (debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$")) or "bench"
local order = { "chain", "gemm", "trace", "memory", "nn" }
local skip = { lib = true, run = true }

local function suites()
  local list, seen = {}, {}
  for _, s in ipairs(order) do
    local f = io.open(dir .. "/" .. s .. ".lua")
    if f then f:close(); list[#list + 1] = s; seen[s] = true end
  end
  local rest = {}
  local p = io.popen("ls " .. dir .. "/*.lua 2>/dev/null")
  for path in p:lines() do
    local name = path:match("([^/]+)%.lua$")
    if name and not skip[name] and not seen[name] then rest[#rest + 1] = name end
  end
  p:close()
  table.sort(rest)
  for _, s in ipairs(rest) do list[#list + 1] = s end
  return list
end

local chosen = #arg > 0 and { table.unpack(arg) } or suites()
local rows, failed = {}, {}
for _, s in ipairs(chosen) do
  print(string.format("==== %s", s))
  local p = io.popen(string.format("lua5.4 %s/%s.lua 2>&1; echo \"@exit $?\"", dir, s))
  for line in p:lines() do
    if line:sub(1, 5) == "@row\t" then
      local f = {}
      for field in (line:sub(6) .. "\t"):gmatch("([^\t]*)\t") do f[#f + 1] = field end
      rows[#rows + 1] = f
    elseif line:match("^@exit ") then
      if line ~= "@exit 0" then failed[#failed + 1] = s end
    else
      print("  " .. line)
    end
  end
  p:close()
end

local head = { "bench", "workload", "ltc", "peers (same run)", "ratio", "target", "met" }
local function md_row(f) return "| " .. table.concat(f, " | ") .. " |" end
local lines = { md_row(head), md_row { "---", "---", "---", "---", "---", "---", "---" } }
for _, r in ipairs(rows) do lines[#lines + 1] = md_row(r) end
local table_md = table.concat(lines, "\n")

print("\n==== summary")
print(table_md)
if #failed > 0 then print("\nsuites that failed: " .. table.concat(failed, ", ")) end

-- bench/README.md: what precedes its "## Latest table" (or the fixed text), then the latest
-- table (only for a run of every suite).
if #arg == 0 then
  local function sh(cmd)
    local p = io.popen(cmd .. " 2>/dev/null")
    local s = p and p:read("a") or ""
    if p then p:close() end
    return (s:gsub("%s+$", ""))
  end
  local cpu = sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"):gsub("^%s+", "")
  -- what the file holds before its "## Latest table" (notes of earlier runs) stays; a new
  -- file starts with the fixed text
  local rf = io.open(dir .. "/README.md", "r")
  local old = rf and rf:read("a") or ""
  if rf then rf:close() end
  local at = old:find("\n## Latest table\n", 1, true)
  local head = at and old:sub(1, at) or [[
# Benchmarks

`make bench` builds ltc (in `$(BUILD)`) and the C peers (`bench/peers.c`), then runs
`bench/run.lua`: every suite `bench/<name>.lua` in its own process, each measuring ltc and
its peers in the same run (NumPy and PyTorch from Debian's `python3-numpy` and
`python3-torch` via `bench/peers.py`; raw `cblas_sgemm`, a copy loop and a one-pass C loop
via `bench/peers.c`). Times are the best wall time (`ltc.clock()`) of `BENCH_REPS` runs
(default 10) that also go on for at least `BENCH_MIN_TIME` seconds (default 0.5), ltc and
every peer alike: the speed of this shared machine changes from second to second, and ten
runs of 10 ms saw only one of those seconds. The machine is shared and noisy: compare the
ratios, not the absolute figures. `LTC_NUM_THREADS` (default: the number of cores) sets
ltc's threads and the peers'; each side is reported at its best thread count.

`make bench BENCH="chain gemm"` runs some suites only (the table below is rewritten only by
a full run). A new suite is a file `bench/<name>.lua` that prints what it measures and
reports table lines with `require("bench.lib").row{...}` (see `bench/lib.lua`).

Bandwidth floor: 16 bytes per element (three float32 inputs read, one output written) at
the bandwidth of a multi-threaded copy loop, counted as bytes read plus bytes written.

]]
  local f = assert(io.open(dir .. "/README.md", "w"))
  f:write(head, "## Latest table\n\n")
  f:write(string.format("%s, %s cores, %s threads, %s.\n\n", cpu, sh("nproc"),
    os.getenv("LTC_NUM_THREADS") or sh("nproc"), os.date("!%Y-%m-%d %H:%M UTC")))
  f:write(table_md, "\n")
  if #failed > 0 then f:write("\nSuites that failed: ", table.concat(failed, ", "), "\n") end
  f:close()
end
os.exit(#failed == 0)
