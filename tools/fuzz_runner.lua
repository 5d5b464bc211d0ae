--- fuzz_runner.lua - runs one fuzz program on a backend and compares two runs. Shared by
-- tools/fuzz.lua and, pasted in verbatim, by every standalone failure script it writes to
-- fuzz/failures/ (so those need nothing but ltc). Returns a table of functions.
--
-- A program is a list of statements, each a function(V, R, ltc) that reads and writes the
-- variable table V (V[n] = a tensor) and records read-back values in R. A statement whose
-- inputs (its `uses`) are missing is skipped; an error is caught and recorded.
local M = {}

-- An error's message without its "file:line: "; an error that is not a string (never right:
-- every misuse must be a Lua error with a message) is marked, without calling __tostring.
local function msg_of(e)
  if type(e) ~= "string" then return "NON-STRING ERROR OBJECT (" .. type(e) .. ")" end
  return (e:gsub("^[^\n:]*:%d+: ", ""))
end

-- Values of t for comparison: {dtype=, size=, v=nested table}, or {err=message}.
local function snapshot(t)
  if type(t) ~= "userdata" then return { v = t } end
  local ok, v = pcall(t.totable, t)
  if not ok then return { err = msg_of(v) } end
  return { dtype = t:dtype(), size = table.concat(t:size(), "x"), v = v }
end
M.snapshot = snapshot

--- run(ltc, prog, backend, seed [, eager]): prog = { {fn=, uses={ids}}, ... }. Returns a result table:
-- status[k] ("ok", "skip" or "err: ..."), R (reads by statement), final (snapshot of every
-- variable left), sync ("ok" or the final sync's error), live (live tensors afterwards
-- beyond those before, after a full GC). eager: sync after every statement (an error of
-- that sync is recorded as the statement's, in `eager_err`).
function M.run(ltc, prog, backend, seed, eager)
  ltc.set_backend(backend)
  ltc.manual_seed(seed)
  collectgarbage()
  local live0 = ltc.debug.pending().live_tensors
  local V, R, status, eager_err = {}, {}, {}, nil
  for k, s in ipairs(prog) do
    local ready = true
    for _, u in ipairs(s.uses) do
      if V[u] == nil then ready = false; break end
    end
    if not ready then status[k] = "skip"
    else
      local ok, e = pcall(s.fn, V, R, ltc)
      status[k] = ok and "ok" or ("err: " .. msg_of(e))
    end
    if eager then
      local ok, e = pcall(ltc.sync)
      if not ok then eager_err = eager_err or ("statement " .. k .. ": " .. msg_of(e)) end
    end
  end
  local res = { status = status, R = R, final = {}, eager_err = eager_err }
  local ok, e = pcall(ltc.sync)
  res.sync = ok and "ok" or ("err: " .. msg_of(e))
  local ids = {}
  for id in pairs(V) do ids[#ids + 1] = id end
  table.sort(ids)
  for _, id in ipairs(ids) do res.final[id] = snapshot(V[id]) end
  V, R = nil, nil
  collectgarbage()
  collectgarbage()
  pcall(ltc.sync)
  res.live = ltc.debug.pending().live_tensors - live0
  return res
end

local function close(a, b, dtype)
  if type(a) ~= type(b) then return false end
  if type(a) ~= "number" then return a == b end
  if a ~= a or b ~= b then return a ~= a and b ~= b end
  if a == b then return true end
  -- float64 results are often computed from float32 ones (promotion), so they get float32's
  -- tolerance too
  if dtype == "float32" or dtype == "float64" then
    return math.abs(a - b) <= 1e-5 + 1e-4 * math.max(math.abs(a), math.abs(b))
  end
  -- float16 and bfloat16 round a float32 result: two backends may land an ulp apart
  local ulp = dtype == "float16" and 2 ^ -10 or dtype == "bfloat16" and 2 ^ -7
  if ulp then return math.abs(a - b) <= 1e-5 + 2 * ulp * math.max(math.abs(a), math.abs(b)) end
  return false
end

local function same_values(a, b, dtype, path)
  if type(a) == "table" and type(b) == "table" then
    if #a ~= #b then return false, path .. ": lengths " .. #a .. " and " .. #b end
    for i = 1, #a do
      local ok, where = same_values(a[i], b[i], dtype, path .. "[" .. i .. "]")
      if not ok then return false, where end
    end
    return true
  end
  if close(a, b, dtype) then return true end
  return false, string.format("%s: %s vs %s", path, tostring(a), tostring(b))
end

local function same_snap(a, b, what)
  if (a.err == nil) ~= (b.err == nil) then
    return false, string.format("%s: %s vs %s", what, a.err or "ok", b.err or "ok")
  end
  if a.err then return true end
  if a.dtype ~= b.dtype or a.size ~= b.size then
    return false, string.format("%s: %s %s vs %s %s", what, tostring(a.dtype), tostring(a.size),
      tostring(b.dtype), tostring(b.size))
  end
  return same_values(a.v, b.v, a.dtype, what)
end

local function kind_of(s) return s:sub(1, 3) end

--- compare(a, b): nil when the two runs agree, else (kind, description). Kinds: "errors"
-- (one run failed where the other did not), "values", "leak".
function M.compare(a, b, names, values_only)
  names = names or { "cpu", "ref" }
  for k, st in pairs(a.status) do
    if st:find("NON-STRING ERROR", 1, true) then
      return "errors", string.format("statement %d: %s raised %s", k, names[1], st)
    end
  end
  for k = 1, values_only and 0 or math.max(#a.status, #b.status) do
    local sa, sb = a.status[k] or "?", b.status[k] or "?"
    if kind_of(sa) ~= kind_of(sb) then
      return "errors", string.format("statement %d: %s: %s; %s: %s", k, names[1], sa, names[2], sb)
    end
  end
  if not values_only and kind_of(a.sync) ~= kind_of(b.sync) then
    return "errors", string.format("final sync: %s: %s; %s: %s", names[1], a.sync, names[2], b.sync)
  end
  for k, ra in pairs(a.R) do
    local rb = b.R[k]
    local ok, d = same_snap({ v = ra, dtype = "float32" },
      rb == nil and { err = "missing" } or { v = rb, dtype = "float32" }, "read at statement " .. k)
    if not ok then return "values", d end
  end
  for id, fa in pairs(a.final) do
    local ok, d = same_snap(fa, b.final[id] or { err = "missing" }, "V[" .. id .. "]")
    if not ok then return "values", d end
  end
  for _, r in ipairs({ a, b }) do
    if r.live ~= 0 then
      return "leak", string.format("%d live tensors left after the program (%s)", r.live,
        r == a and names[1] or names[2])
    end
  end
  return nil
end

--- check(ltc, prog, seed): runs prog on cpu and on ref and compares: nil or (kind, text),
-- then the number of statements that failed (on cpu).
M.backend = "cpu" -- the backend under test (tools/fuzz.lua --backend)

function M.check(ltc, prog, seed)
  local be = M.backend
  local a = M.run(ltc, prog, be, seed)
  local b = M.run(ltc, prog, "ref", seed)
  ltc.set_backend("cpu")
  local kind, desc = M.compare(a, b, { be, "ref" })
  if not kind then
    -- the same program again (its graphs now come from the compile cache) ...
    local c = M.run(ltc, prog, be, seed)
    ltc.set_backend("cpu")
    kind, desc = M.compare(a, c, { be, be .. " (cached)" })
  end
  if not kind then
    -- ... and synced after every statement: where the graph is cut must not matter
    local e = M.run(ltc, prog, be, seed, true)
    ltc.set_backend("cpu")
    if not e.eager_err then
      kind, desc = M.compare(a, e, { be, be .. " (eager)" }, true)
      if kind then kind = "eager" end
    end
  end
  local nerr = 0
  for _, st in ipairs(a.status) do if st:sub(1, 3) == "err" then nerr = nerr + 1 end end
  return kind, desc, nerr
end

return M
