--- ltc.jit: warm up, capture, then replay a Lua function (like tinygrad's TinyJit, on
-- ltc.Graph). `local f = ltc.jit(fn [, {mode = "thread_local"}])`:
--
--  * call 1 runs fn (warm-up) and syncs; call 2 runs fn inside a graph capture; later
--    calls replay the captured graph: no tracing, hashing or cache look-up. An argument
--    still pending (a lazy DataLoader batch) is synced by the replay: that graph (the
--    batch's gather) is traced and hashed as usual, and compiled at the capture.
--  * Tensor arguments are copied into static input tensors the graph reads (copy_ shares
--    the data when dtype and shape match, so no copy is made). Their shapes and dtypes are
--    checked on every call: a change recaptures (counter "JitRecapture").
--  * Lua-number arguments reach fn as weak 0-d tensors (a number in an op stays a weak
--    scalar for type promotion: `x * lr` keeps x's dtype), so a replay uses each call's
--    value. Use them in tensor ops; a number fn needs as a Lua number (a size, a loop
--    count, an `if`) must come from an upvalue instead: the capture bakes it in.
--    An integer argument switching to a float (or back) recaptures.
--  * Other arguments (strings, booleans, tables) are constants of the capture; a change
--    of their tostring() recaptures.
--  * Results: each tensor fn returns is handed back as a new tensor sharing the result's
--    data, so a later call never overwrites it (`local a = f(x1); local b = f(x2)` leaves a
--    holding f(x1)). Non-tensor results are the capture's values.
--  * Tensors fn reaches through upvalues (parameters) are static inputs; in-place updates
--    (`w:sub_(lr * g)`) are replayed, so a training step trains. In-place writes to the
--    arguments land in the static copies, not in the caller's tensors. State must be
--    updated in place too (ltc.optim does): state that fn replaces (`st.buf = st.buf * m
--    + g`) leaves the graph reading the old tensor, frozen at its capture-time value, on
--    every replay. The capture counts such tensors (counter "GraphFrozenInput": read by
--    the graph, held by nothing else) and ltc.jit warns about them on stderr.
--  * An error inside fn during the capture ends and drops the capture, then is re-raised.
--
-- f:reset() drops the captured graph (the next call captures again); f.graph is the
-- ltc.Graph (nil before the capture); f.calls counts calls.
local core = require "ltc.core"

local is_tensor, pack, unpack, select = core.is_tensor, table.pack, table.unpack, select
local concat, tostring, type, mtype = table.concat, tostring, type, math.type

local M = {}

-- A string naming what must not change between replays: tensor dtypes and shapes, number
-- kinds, the other arguments' tostring().
local function signature(args)
  local parts = {}
  for i = 1, args.n do
    local v = args[i]
    if is_tensor(v) then
      parts[i] = "T" .. v:dtype() .. "[" .. concat(v:size(), ",") .. "]"
    elseif type(v) == "number" then
      parts[i] = "N" .. mtype(v)
    else
      parts[i] = type(v) .. ":" .. tostring(v)
    end
  end
  return concat(parts, ";")
end

-- The static inputs for a call's arguments (made once per capture).
local function make_statics(args)
  local statics = {}
  for i = 1, args.n do
    local v = args[i]
    if is_tensor(v) then
      statics[i] = core.zeros(v:size(), v:dtype())
      statics[i]:copy_(v)
    elseif type(v) == "number" then
      statics[i] = core._weak_scalar(v)
    end
  end
  return statics
end

-- The arguments fn sees: the static tensors, other values as given.
local function fill_statics(statics, args)
  local call = { n = args.n }
  for i = 1, args.n do
    local s = statics[i]
    if s then
      s:copy_(args[i])
      call[i] = s
    else
      call[i] = args[i]
    end
  end
  return call
end

local function share_results(results)
  local out = { n = results.n }
  for i = 1, results.n do
    local v = results[i]
    out[i] = is_tensor(v) and core._share(v) or v
  end
  return unpack(out, 1, out.n)
end

--- ltc.jit(fn [, opts]): a callable that warms up, captures and replays fn (see above).
-- opts.mode: the capture mode ("default", "global", "thread_local", "relaxed").
-- opts.pool: a pool handle (ltc.graph_pool_handle()) for the capture.
function M.jit(fn, opts)
  if type(fn) ~= "function" and not (getmetatable(fn) or {}).__call then
    error("jit: bad argument #1 (function expected, got " .. type(fn) .. ")", 2)
  end
  opts = opts or {}
  local self = { calls = 0 }
  local sig, statics, results

  function self.reset()
    if self.graph then self.graph:reset() end
    self.graph, sig, statics, results = nil, nil, nil, nil
  end

  local function capture(args)
    statics = make_statics(args)
    local call = fill_statics(statics, args)
    local g = core.Graph { keep_graph = false }
    local frozen = core.counter("GraphFrozenInput")
    g:capture_begin { mode = opts.mode, pool = opts.pool }
    local ok, res = pcall(function() return pack(fn(unpack(call, 1, call.n))) end)
    if ok then ok, res = pcall(function() g:capture_end(); return res end) end
    if not ok then
      g:reset() -- ends the capture if it is still running: nothing half-captured stays
      statics = nil
      error(res, 0)
    end
    self.graph, results = g, res
    core._counter_add("JitCapture", 1)
    frozen = core.counter("GraphFrozenInput") - frozen
    if frozen > 0 then
      io.stderr:write(string.format("ltc.jit: the captured graph reads %d tensor(s) that "
        .. "nothing else holds any more: every replay reads their capture-time values (state "
        .. "replaced in fn instead of updated in place? use x:copy_(new) or mul_/add_)\n",
        frozen))
    end
    return share_results(results)
  end

  return setmetatable(self, { __call = function(_, ...)
    local args = pack(...)
    self.calls = self.calls + 1
    local s = signature(args)
    if self.calls == 1 then -- warm-up: fn as is, numbers as weak scalars like later calls
      sig = s
      local call = fill_statics(make_statics(args), args)
      local res = pack(fn(unpack(call, 1, call.n)))
      -- synced here, not by the capture's begin: fused with the next call's input copies,
      -- the warm-up's graph would leave those copies' own graph to compile at the first replay
      core.sync()
      return unpack(res, 1, res.n)
    end
    if self.graph and s ~= sig then
      self.reset()
      core._counter_add("JitRecapture", 1)
    end
    sig = s
    if not self.graph then return capture(args) end
    fill_statics(statics, args)
    self.graph:replay()
    core._counter_add("JitReplay", 1)
    return share_results(results)
  end })
end

return M
