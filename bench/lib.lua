--- bench/lib.lua - helpers shared by the benchmark suites (bench/*.lua, run by bench/run.lua).
--
-- A suite is a Lua script that prints what it measures and reports each line of the table
-- with lib.row{...}, which prints one machine-readable "@row" line (tab-separated) that
-- bench/run.lua collects into the summary table and bench/README.md. Times come from
-- ltc.clock() (monotonic wall time) and are the best of several runs: the machine is shared
-- and noisy, so only ratios measured in one run mean anything.
local ltc = require "ltc"

local lib = { ltc = ltc }

local function getenv_num(name, default)
  local v = tonumber(os.getenv(name) or "")
  return v or default
end

local function ncores()
  local f = io.popen("nproc 2>/dev/null")
  local n = f and tonumber(f:read("l") or "") or 1
  if f then f:close() end
  return n
end

lib.threads = getenv_num("LTC_NUM_THREADS", ncores())
lib.reps = getenv_num("BENCH_REPS", 10)
-- every timing loop also runs for at least this many seconds (BENCH_MIN_TIME, default 0.5;
-- the peers use the same rule): the machine's speed changes from second to second (a
-- neighbour's load), and a loop of 10 runs of 10 ms saw only one of those seconds
lib.min_time = getenv_num("BENCH_MIN_TIME", 0.5)

--- lib.more(r, t0 [, reps]): whether a timing loop that has made r runs since ltc.clock()
-- was t0 makes another: until reps (default lib.reps) runs and lib.min_time seconds, at most
-- 50 x reps runs.
function lib.more(r, t0, reps)
  reps = reps or lib.reps
  if r < reps then return true end
  return r < 50 * reps and ltc.clock() - t0 < lib.min_time
end
lib.python = os.getenv("PYTHON") or "/usr/bin/python3"
lib.dir = (debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$")) or "bench"
lib.peers_bin = os.getenv("BENCH_PEERS") or "build/bench_peers"

--- lib.best(fn [, reps]): the best wall time of fn() in seconds, after one warm-up call, over
-- reps runs (default lib.reps) and at least lib.min_time seconds (lib.more).
function lib.best(fn, reps)
  fn()
  local best, r, start = math.huge, 0, ltc.clock()
  while lib.more(r, start, reps) do
    local t0 = ltc.clock()
    fn()
    local t = ltc.clock() - t0
    if t < best then best = t end
    r = r + 1
  end
  return best
end

--- lib.best_ltc(fn [, reps]): lib.best of fn at each thread count of ltc from 1 to
-- lib.threads (ltc.config.LTC_NUM_THREADS, restored after); returns the best time and the
-- thread count that gave it. ltc, like its peers (lib.best_threads), is reported at its best
-- (issue 18); lib.at_threads({t_threads = n}, "t") names the count in a table.
function lib.best_ltc(fn, reps)
  local saved = ltc.config.LTC_NUM_THREADS
  local best, at = math.huge, 1
  for n = 1, math.max(1, lib.threads) do
    ltc.config.LTC_NUM_THREADS = n
    local t = lib.best(fn, reps)
    if t < best then best, at = t, n end
  end
  ltc.config.LTC_NUM_THREADS = saved
  return best, at
end

-- Runs a command and parses its "key value" lines into a table (numbers where they parse).
local function keyvals(cmd)
  local out = {}
  local f = io.popen(cmd .. " 2>&1")
  if not f then return out end
  for line in f:lines() do
    local k, v = line:match("^(%S+)%s+(.*)$")
    if k then out[k] = tonumber(v) or v end
  end
  f:close()
  return out
end

--- lib.keyvals(cmd): runs a shell command and parses its "key value" lines into a table
-- (numbers where they parse).
lib.keyvals = keyvals

local function quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- Whether value a of a peer's key beats b: rates (GFLOP/s, GB/s) higher, times lower.
local function beats(key, a, b)
  if key:match("_gflops$") or key:match("_gbs$") then return a > b end
  return a < b
end

--- lib.best_threads(cmd): runs a peer's shell command once at each thread count from 1 to
-- lib.threads (LTC_NUM_THREADS, OPENBLAS_NUM_THREADS and OMP_NUM_THREADS set for it) and
-- returns its key/value table with, for every timing key (`_ms`, `_us`, `_s`, `_gflops`,
-- `_gbs`), the best value over the thread counts and, as `<key>_threads`, the count that gave
-- it; other keys come from the first run that printed them. A claim against a peer holds
-- only against that peer at its best: on a shared 2-core machine PyTorch at 2 threads can be
-- 30x slower than at 1 (issue 18).
function lib.best_threads(cmd)
  local best = {}
  for n = 1, math.max(1, lib.threads) do
    -- (exported: cmd may be a list, `cd dir && prog`, where a prefix reaches only cd)
    local r = keyvals(string.format("export LTC_NUM_THREADS=%d OPENBLAS_NUM_THREADS=%d OMP_NUM_THREADS=%d; %s",
      n, n, n, cmd))
    for k, v in pairs(r) do
      local timing = type(v) == "number" and (k:match("_m?s$") or k:match("_us$")
        or k:match("_gflops$") or k:match("_gbs$"))
      if timing and k:match("_threads$") then timing = nil end
      if timing then
        if best[k] == nil or beats(k, v, best[k]) then best[k], best[k .. "_threads"] = v, n end
      elseif best[k] == nil then
        best[k] = v
      end
    end
  end
  return best
end

--- lib.py(cmd, ...): runs bench/peers.py with these arguments at each thread count from 1 to
-- lib.threads (lib.best_threads); returns its key/value table, each timing at its best.
function lib.py(...)
  local args = { lib.python, quote(lib.dir .. "/peers.py") }
  for _, a in ipairs { ... } do args[#args + 1] = quote(a) end
  return lib.best_threads(table.concat(args, " "))
end

--- lib.peer(r, key, unit [, digits]): lib.fmt of peer r's key, followed by the thread count
-- that gave it when lib.best_threads measured several ("288.1 us/step (1 thread)").
function lib.peer(r, key, unit, digits)
  return lib.fmt(r[key], unit, digits) .. (type(r[key]) == "number" and lib.at_threads(r, key) or "")
end

--- lib.at_threads(r, key): " (n threads)" for the thread count at which peer r's key was
-- best, "" when unknown; for the tables' peer columns.
function lib.at_threads(r, key)
  local n = r[key .. "_threads"]
  return n and string.format(" (%d thread%s)", n, n == 1 and "" or "s") or ""
end

--- lib.c(...): runs the C peers driver (bench/peers.c); returns its key/value table.
function lib.c(...)
  local args = { quote(lib.peers_bin) }
  for _, a in ipairs { ... } do args[#args + 1] = quote(a) end
  return keyvals(table.concat(args, " "))
end

--- lib.row{bench=, workload=, ltc=, peers=, ratio=, target=, met=}: one line of the
-- summary table (strings; met is true, false or nil for "no target").
function lib.row(r)
  -- met: true, false or nil (not measured; `ok and x` of a peer that did not run is false
  -- too, so a row whose ltc or peer figure is "n/a" also shows "-")
  local met = (r.met == nil or r.ltc == "n/a") and "-" or (r.met and "yes" or "NO")
  print(string.format("@row\t%s\t%s\t%s\t%s\t%s\t%s\t%s", r.bench, r.workload or "",
    r.ltc or "", r.peers or "", r.ratio or "", r.target or "", met))
end

--- lib.fmt(x, unit): "12.3 ms"-style text; "n/a" when x is nil.
function lib.fmt(x, unit, digits)
  if type(x) ~= "number" then return "n/a" end
  return string.format("%." .. (digits or 2) .. "f %s", x, unit)
end

--- lib.rss(): {rss=, hwm=} of this process in bytes (from /proc/self/status).
function lib.rss()
  local r = {}
  local f = io.open("/proc/self/status")
  if not f then return r end
  for line in f:lines() do
    local k, v = line:match("^(Vm%a+):%s+(%d+) kB")
    if k == "VmRSS" then r.rss = tonumber(v) * 1024 end
    if k == "VmHWM" then r.hwm = tonumber(v) * 1024 end
  end
  f:close()
  return r
end

--- lib.find(names): the first function found among dotted names in ltc ("nn.functional.x").
function lib.find(...)
  for _, name in ipairs { ... } do
    local v = ltc
    for part in name:gmatch("[^.]+") do
      v = type(v) == "table" and v[part] or nil
    end
    if type(v) == "function" then return v end
  end
  return nil
end

--- lib.text_model{name, steps, args, workload, also}: runs examples/<name>.lua (with `args`
-- after its common options) and its PyTorch twin bench/<name>.py on the same initial
-- weights and windows of Debian's fortunes, `steps` steps each, and prints and records
-- time per step and the validation losses side by side (issue 15: >= 2x faster per
-- step than eager at its best thread count, validation loss within 0.05). `also` = {args,
-- label}: the example run once more with those arguments (tiny_gpt's `--jit 0`), a row with
-- no target. Skips with one line without fortunes.
function lib.text_model(o)
  if not io.open("/usr/share/games/fortunes/fortunes", "r") then
    print(o.name .. ": no /usr/share/games/fortunes (apt-get install fortunes); skipped")
    return
  end
  local dir = os.tmpname()
  os.remove(dir)
  local cmd = string.format("cd '%s/..' && LTC_BUILD=%s bin/ltc examples/%s.lua --steps %d "
    .. "--chars 200000 --sample 0 --keyvals 1 --init-dir '%s' %s", lib.dir,
    os.getenv("BUILD") or "build", o.name, o.steps, dir, (o.args or ""):gsub("DIR", dir))
  -- ltc, as PyTorch, at its best thread count (each run a process of its own)
  local l = lib.best_threads(cmd)
  local a = o.also and lib.best_threads(cmd .. " " .. o.also.args)
  -- PyTorch at its best thread count (1 to lib.threads: OMP_NUM_THREADS sets its threads)
  local t = lib.best_threads(string.format("%s '%s/%s.py' '%s' %d", lib.python, lib.dir, o.name,
    dir, o.steps))
  os.execute("rm -rf '" .. dir .. "'")

  print(string.format("ltc:          %s ms/step%s, training loss %s, validation loss %s, %s compile(s) after warm-up",
    tostring(l.ltc_step_ms), lib.at_threads(l, "ltc_step_ms"), tostring(l.ltc_train_loss), tostring(l.ltc_val_loss),
    tostring(l.ltc_compiles_after_warmup)))
  print(string.format("torch eager:  %s ms/step, training loss %s, validation loss %s",
    tostring(t.torch_step_ms), tostring(t.torch_train_loss), tostring(t.torch_val_loss)))

  local ok = type(l.ltc_step_ms) == "number" and type(t.torch_step_ms) == "number"
  lib.row { bench = o.name, workload = o.workload,
    ltc = ok and lib.peer(l, "ltc_step_ms", "ms", 1) or "n/a",
    peers = ok and "eager " .. lib.peer(t, "torch_step_ms", "ms", 1) or "n/a",
    ratio = ok and string.format("%.2f x faster", t.torch_step_ms / l.ltc_step_ms) or "n/a",
    target = ">= 2x faster", met = ok and t.torch_step_ms / l.ltc_step_ms >= 2 }
  if a then
    local aok = ok and type(a.ltc_step_ms) == "number"
    print(string.format("ltc, %s: %s ms/step%s, validation loss %s", o.also.label,
      tostring(a.ltc_step_ms), lib.at_threads(a, "ltc_step_ms"), tostring(a.ltc_val_loss)))
    lib.row { bench = o.name, workload = o.also.label,
      ltc = aok and lib.peer(a, "ltc_step_ms", "ms", 1) or "n/a",
      peers = ok and "eager " .. lib.peer(t, "torch_step_ms", "ms", 1) or "n/a",
      ratio = aok and string.format("%.2f x faster", t.torch_step_ms / a.ltc_step_ms) or "n/a",
      target = "(no target)" }
  end
  local both = type(l.ltc_val_loss) == "number" and type(t.torch_val_loss) == "number"
  lib.row { bench = o.name, workload = "validation loss after the same steps",
    ltc = both and string.format("%.4f", l.ltc_val_loss) or "n/a",
    peers = both and string.format("eager %.4f", t.torch_val_loss) or "n/a",
    ratio = both and string.format("%+.4f", l.ltc_val_loss - t.torch_val_loss) or "n/a",
    target = "within 0.05", met = both and math.abs(l.ltc_val_loss - t.torch_val_loss) <= 0.05 }
end

return lib
