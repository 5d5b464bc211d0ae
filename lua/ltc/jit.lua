--- ltc.jit: warm up, capture, then replay a Lua function (like tinygrad's TinyJit, on
-- ltc.Graph). `local f = ltc.jit(fn [, {mode = "thread_local"}])`:
--
--  * call 1 runs fn (warm-up) and syncs; call 2 runs fn inside a graph capture; later
--    calls replay the captured graph: no tracing, hashing or cache look-up. An argument
--    still pending (a lazy DataLoader batch) is synced by the replay: that graph (the
--    batch's gather) is traced and hashed as usual, and compiled at the capture.
--  * A call with a tensor argument off the default device (t:to("ref")) runs fn as is,
--    untraced (counter "JitUntraced"): a capture runs on the default device, and replaying
--    its kernels on another device's data crashed.
--  * A call with a tensor argument that requires grad runs fn as is, untraced ("JitUntraced"):
--    a replay reads a static copy and records no autograd graph, so a backward in fn would
--    never reach the caller's x.grad. Calls under ltc.no_grad and with grad on capture
--    apart (the grad mode is part of the signature). Tensors fn returns carry no autograd
--    history (backward on one says so): call backward inside fn.
--  * Tensor arguments are copied into static input tensors the graph reads (copy_ shares
--    the data when dtype and shape match, so no copy is made). Their shapes and dtypes are
--    checked on every call: a change recaptures (counter "JitRecapture").
--  * Lua-number arguments reach fn as weak 0-d tensors (a number in an op stays a weak
--    scalar for type promotion: `x * lr` keeps x's dtype), so a replay uses each call's
--    value. Use them in tensor ops; a number fn needs as a Lua number (a size, a loop
--    count, an `if`) must come from an upvalue instead: the capture bakes it in.
--    An integer argument switching to a float (or back) recaptures.
--  * Plain tables (no metatable) are taken apart: a batch {x = t1, y = t2, list = {...}}
--    passes its tensors as static inputs too, and a new table of the same shape (keys,
--    tensor dtypes and sizes, other values) replays; a number in a table is a constant of
--    the capture (a change recaptures). Past 256 entries or 4 levels it is one value.
--  * Other arguments (strings, booleans, tables with a metatable such as a module) are
--    constants of the capture; a change of their tostring() recaptures.
--  * Guards: the Lua values the capture may have read are checked before every replay. They
--    are everything reachable from fn's upvalues and from table arguments: table fields
--    (read rawly), the upvalues of the Lua functions found there, globals (fn's _ENV) except
--    loaded modules; Lua functions of ltc and of installed libraries are not entered, tensors
--    and other userdata are compared by identity, a tensor's requires_grad flag too. A
--    changed value (`opt.lr = 0`, `model:eval()` flipping `training` flags, `cfg.scale = 3`,
--    a new tensor in a table, `p:requires_grad_(false)`, a local upvalue reassigned; also
--    any tensor converted or moved in place since, by m:to() or resize_) recaptures before the call, counted as "JitRecapture" and
--    "JitGuardRecapture"; f.recaptures lists the reasons (ltc.debug.explain_jit(f) prints
--    them). Values read through ltc.jit.live(tbl, key) (ltc.optim's lr) are parameters of
--    the graph instead: each replay reads their current value, only a change of their Lua
--    number kind (integer/float) recaptures. Past 100000 values the walk stops (a warning
--    says so): keep large Lua data out of fn's reach or pass it as tensors.
--  * Lua code does not run on a replay: what fn changes on the Lua side (a counter it
--    increments, a table it appends to) changes at the warm-up and the capture only. The
--    capture compares the guarded values before and after fn and warns on stderr (once per
--    jit) naming the first one fn changed; counter "JitLuaSideEffect".
--  * Results: each tensor fn returns, also inside (nested) plain tables it returns, is
--    handed back as a new tensor sharing the result's data, in new tables, so a later call
--    never overwrites it (`local a = f(x1); local b = f(x2)` leaves a holding f(x1)); the
--    warm-up call too (never fn's own tensors, such as an upvalue it updates in place).
--    Tables with a metatable are handed back as they are. Other results are the capture's.
--  * Tensors fn reaches through upvalues (parameters) are static inputs; in-place updates
--    (`w:sub_(lr * g)`) are replayed, so a training step trains. In-place writes to the
--    arguments land in the static copies, not in the caller's tensors. State must be
--    updated in place too (ltc.optim does): state that fn replaces (`st.buf = st.buf * m
--    + g`) leaves the graph reading the old tensor, frozen at its capture-time value, on
--    every replay. The capture counts such tensors (counter "GraphFrozenInput": read by
--    the graph, held by nothing else) and ltc.jit warns about them on stderr.
--  * A capture during which fn made or replaced state (a tensor or table stored where fn
--    can reach it: an optimizer's first momentum buffer; a tensor the graph reads that
--    nothing holds after it, as a leaf's grad that backward accumulated into a new tensor
--    when no zero_grad came before) is not replayed: the next call
--    captures again, when the state exists. After 3 such captures in a row fn runs untraced
--    on every call (counter "JitUntraced"; a warning says why).
--  * An error inside fn during the capture ends and drops the capture, then is re-raised.
--
-- f:reset() drops the captured graph (the next call captures again); f.graph is the
-- ltc.Graph (nil before the capture); f.calls counts calls; f.recaptures holds the reasons
-- of the last 8 recaptures; f.guarded counts the Lua values checked before each replay.
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local core = require "ltc.core"

local is_tensor, pack, unpack, select = core.is_tensor, table.pack, table.unpack, select
local concat, tostring, type, mtype = table.concat, tostring, type, math.type

local M = {}

-- Guards: the Lua-side values a capture may depend on (see the header).
local library_fn = setmetatable({}, { __mode = "k" }) -- function -> true when it is ltc's own

local function is_library_fn(f)
  local r = library_fn[f]
  if r == nil then
    local info = debug.getinfo(f, "S")
    local src = info.source
    r = info.what == "C" or src:find("[/\\]ltc[/\\][%w_]+%.lua$") ~= nil
      or src:find("[/\\]share[/\\]lua[/\\]") ~= nil or src:find("[/\\]lib[/\\]lua[/\\]") ~= nil
    library_fn[f] = r
  end
  return r
end

-- Tables never guarded: loaded modules (ltc, the standard library, busted's) and package.loaded.
local function skipped_tables()
  local skip = { [package.loaded] = true, [package] = true }
  for _, m in pairs(package.loaded) do
    if type(m) == "table" then skip[m] = true end
  end
  skip[_G] = nil -- globals are guarded (the modules in them are not)
  return skip
end

local MAX_GUARDS = 100000

-- The path of a value from the keys on the walk's stack ("upvalue opt.param_groups[1].lr").
local function path_of(keys, kinds, depth)
  local out = {}
  for d = 1, depth do
    local k, kind = keys[d], kinds[d]
    if kind == "root" then
      if k ~= "fn" then out[#out + 1] = k end
    elseif kind == "upvalue" then
      out[#out + 1] = (#out > 0 and " upvalue " or "upvalue ") .. k
    elseif type(k) == "string" then
      out[#out + 1] = (k:match("^[%a_][%w_]*$") or k:match("^%d+$")) and "." .. k
        or string.format("[%q]", k)
    elseif type(k) == "number" then
      out[#out + 1] = "[" .. k .. "]"
    else
      out[#out + 1] = "[" .. (is_tensor(k) and "tensor" or type(k)) .. "]"
    end
  end
  return table.concat(out)
end

-- A walker over the values reachable from roots (a list of {name, value}) in a fixed order:
-- table fields (rawly: no metamethods), the upvalues of Lua functions that are not ltc's own
-- or an installed library's; tensors and other userdata are compared by identity, never
-- entered (a tensor's requires_grad follows it as a field), and so are the tables in skip. A value that live[container][key] marks is read
-- live: only its number kind counts. walker(vals, cmp): without cmp the values are stored
-- in vals; with it they are compared with vals and the walk stops at the first difference.
-- Returns the count of values seen, the index and value of the first difference (or nil),
-- and whether the walk stopped at MAX_GUARDS. Hot (every replay): the walk is C
-- (core._jit_walk, src/lua/ltc_jitwalk.c: 25 us in Lua for a small step's 65 values).
local function make_walker(roots, live, skip)
  local walk = core._jit_walk
  return function(values, compare) -- library_fn: is_library_fn's cache, read by the C walk too
    return walk(roots, values, compare, live, skip, library_fn, is_library_fn, MAX_GUARDS)
  end
end

-- The path of the i-th value of a walk ("upvalue opt.param_groups[1].lr"): walks again
-- (slowly, keeping the keys) to that value.
local function path_to(roots, live, skip, target)
  local seen, n, keys, kinds = {}, 0, {}, {}
  local go
  local function visit(container, key, kind, v, depth)
    n = n + 1
    keys[depth], kinds[depth] = key, kind
    if n == target then return path_of(keys, kinds, depth) end
    local lv = live[container]
    if lv and lv[key] then return nil end
    if is_tensor(v) then -- its requires_grad follows it (src/lua/ltc_jitwalk.c)
      return visit(v, "requires_grad", "field", v.requires_grad, depth + 1)
    end
    local tv = type(v)
    if (tv == "table" or tv == "function") and not seen[v] and not skip[v] then
      seen[v] = true
      return go(v, tv, depth)
    end
  end
  function go(v, tv, depth)
    if tv == "table" then
      for k, x in next, v do
        local p = visit(v, k, "field", x, depth + 1)
        if p then return p end
      end
    elseif not is_library_fn(v) then
      for i = 1, 255 do
        local name, x = debug.getupvalue(v, i)
        if name == nil then break end
        local p = visit(v, name, "upvalue", x, depth + 1)
        if p then return p end
      end
    end
  end
  for _, r in ipairs(roots) do
    local p = visit(roots, r[1], "root", r[2], 1)
    if p then return p end
  end
  return "a value reachable from fn"
end

local function show(v)
  if type(v) == "string" then return string.format("%q", v) end
  if type(v) == "number" or type(v) == "boolean" or v == nil then return tostring(v) end
  return "a " .. (is_tensor(v) and "tensor" or type(v))
end

-- The capture running now (for ltc.jit.live), or nil.
local current

--- ltc.jit.live(tbl, key): tbl[key], read live by ltc.jit's replays. Outside a jit call it
-- is tbl[key] as is. Inside one (warm-up, capture), a Lua number becomes a 0-d weak tensor
-- (a Lua number's promotion) that every later call refreshes from tbl[key] before running,
-- so a hyper-parameter (ltc.optim's lr) changed between calls is honoured without a
-- recapture. Other values are returned as is (and guarded as any reachable value).
function M.live(tbl, key)
  local v = tbl[key]
  local cap = current
  if cap == nil or type(v) ~= "number" then return v end
  local lk = cap.live[tbl]
  if not lk then lk = {}; cap.live[tbl] = lk end
  local e = lk[key]
  if not e then -- made now: a capture running now reads it as a constant, the next one won't
    e = { core._weak_scalar(v), math.type(v) }
    lk[key] = e
    cap.new = true
  end
  return e[1]
end

-- Refreshes the live tensors from their tables; one whose number kind changed is dropped
-- (the guard on its kind recaptures, and the capture makes a new one).
local function refresh_live(live)
  for tbl, keys in next, live do
    for key, e in next, keys do
      local v = tbl[key]
      if math.type(v) == e[2] then e[1]:copy_(v) else keys[key] = nil end
    end
  end
end

-- Plain tables (no metatable) among the arguments, such as a batch {x = ..., y = ...}, are
-- taken apart: their tensors become static inputs too, and their shape (keys, tensor dtypes
-- and sizes, other values) is part of the signature, so a new batch table of the same shape
-- replays (it recaptured on every call: a new table is a new value). Past TREE_MAX entries
-- or TREE_DEPTH levels (or a cycle) a table is one value, as other arguments.
local TREE_MAX, TREE_DEPTH = 256, 4

local function is_plain(v) return type(v) == "table" and getmetatable(v) == nil end

-- The keys of a plain table in a fixed order (numbers first, then by tostring).
local function sorted_keys(t)
  local keys = {}
  for k in next, t do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    local ta, tb = type(a), type(b)
    if ta ~= tb then return ta < tb end
    if ta == "number" or ta == "string" then return a < b end
    return tostring(a) < tostring(b)
  end)
  return keys
end

-- The signature of one value (a plain table's by its contents), or nil when a plain table is
-- too large or too deep to take apart. budget: {n = entries left}.
local function value_sig(v, depth, budget)
  if is_tensor(v) then return "T" .. v:dtype() .. "[" .. concat(v:size(), ",") .. "]" end
  if type(v) == "number" then return "N" .. mtype(v) end
  if not is_plain(v) or depth > TREE_DEPTH then return type(v) .. ":" .. tostring(v) end
  local parts = {}
  for _, k in ipairs(sorted_keys(v)) do
    budget.n = budget.n - 1
    if budget.n < 0 then return nil end
    local x = v[k]
    local sx
    if type(x) == "number" then -- a number in a table is a constant of the capture
      sx = "n" .. mtype(x) .. ":" .. tostring(x)
    elseif is_plain(x) then
      if depth == TREE_DEPTH then return nil end
      sx = value_sig(x, depth + 1, budget)
      if not sx then return nil end
    else
      sx = value_sig(x, depth + 1, budget)
    end
    parts[#parts + 1] = type(k) .. ":" .. tostring(k) .. "=" .. sx
  end
  return "{" .. concat(parts, ",") .. "}"
end

-- A string naming what must not change between replays: the grad mode, tensor dtypes and
-- shapes, number kinds, plain tables' contents, the other arguments' tostring().
-- Also returns, per argument, whether it is a plain table taken apart.
local function signature(args)
  local parts, tree = { core._ag.is_grad_enabled() and "grad" or "no_grad" }, {}
  for i = 1, args.n do
    local v = args[i]
    local sv = is_plain(v) and value_sig(v, 1, { n = TREE_MAX }) or nil
    if sv then
      tree[i] = true
    elseif is_tensor(v) or type(v) == "number" then
      sv = value_sig(v, 1)
    else
      sv = type(v) .. ":" .. tostring(v)
    end
    parts[i + 1] = sv
  end
  return concat(parts, ";"), tree
end

-- Whether pred(t) holds for a tensor among the arguments (also inside plain tables).
local function any_tensor(args, pred)
  local function visit(v, depth)
    if is_tensor(v) then return pred(v) end
    if depth <= TREE_DEPTH and is_plain(v) then
      for _, x in next, v do
        if visit(x, depth + 1) then return true end
      end
    end
    return false
  end
  for i = 1, args.n do
    if visit(args[i], 1) then return true end
  end
  return false
end

-- Whether fn must run as is, untraced: a tensor argument lives off the default device (a
-- capture there would replay the default device's kernels on another device's data) or
-- requires grad (fn's backward must reach the caller's tensor, which a replay, reading a
-- static copy and recording no autograd graph, cannot do).
local function untraceable(args)
  local here = core.default_device()
  return any_tensor(args, function(t) return t.requires_grad or core.device(t) ~= here end)
end

local function static_of(v)
  local s = core.zeros(v:size(), v:dtype())
  s:copy_(v)
  return s
end

-- A plain table's mirror: the same keys, a static tensor for each tensor, nested plain
-- tables mirrored, other values as they are.
local function mirror(t)
  local m = {}
  for k, x in next, t do
    if is_tensor(x) then m[k] = static_of(x)
    elseif is_plain(x) then m[k] = mirror(x)
    else m[k] = x end
  end
  return m
end

-- Copies the tensors of t (of the mirror's shape: the signature says so) into the mirror's.
local function fill_mirror(m, t)
  for k, x in next, m do
    if is_tensor(x) then x:copy_(t[k])
    elseif is_plain(x) then fill_mirror(x, t[k]) end
  end
end

-- The static inputs for a call's arguments (made once per capture); tree: signature's.
local function make_statics(args, tree)
  local statics = {}
  for i = 1, args.n do
    local v = args[i]
    if is_tensor(v) then
      statics[i] = static_of(v)
    elseif type(v) == "number" then
      statics[i] = core._weak_scalar(v)
    elseif tree[i] then
      statics[i] = mirror(v)
    end
  end
  return statics
end

-- The arguments fn sees: the static tensors (and mirrors), other values as given.
local function fill_statics(statics, args)
  local call = { n = args.n }
  for i = 1, args.n do
    local s = statics[i]
    if s == nil then
      call[i] = args[i]
    elseif is_tensor(s) then
      s:copy_(args[i])
      call[i] = s
    else
      fill_mirror(s, args[i])
      call[i] = s
    end
  end
  return call
end

-- v with each tensor replaced by a new tensor sharing its data, plain tables copied.
M.results = setmetatable({}, { __mode = "k" }) -- results whose tensor in fn had a grad_fn

local function share(v, memo)
  if is_tensor(v) then
    local s = core._share(v)
    if v.requires_grad then M.results[s] = true end
    return s
  end
  if type(v) ~= "table" or getmetatable(v) ~= nil then return v end
  if memo[v] then return memo[v] end
  local out = {}
  memo[v] = out
  for k, x in next, v do out[k] = share(x, memo) end
  return out
end

local function share_results(results)
  local out, memo = { n = results.n }, {}
  for i = 1, results.n do out[i] = share(results[i], memo) end
  return unpack(out, 1, out.n)
end

-- The roots of the guard walk: fn and the table arguments.
local function guard_roots(fn, args)
  local roots = { { "fn", fn } }
  for i = 1, args.n do
    if type(args[i]) == "table" then roots[#roots + 1] = { "argument " .. i, args[i] } end
  end
  return roots
end

-- The guarded values now, in walk order: {vals = (weak), total = count, skip = skipped
-- tables, walk = the walker}. Weak: a tensor only the snapshot holds is dead to fn too (and
-- to GraphFrozenInput's count). Warns once when the walk is cut.
local function snapshot(roots, live, self)
  local S = { vals = setmetatable({}, { __mode = "v" }), skip = skipped_tables(), roots = roots }
  S.walk = make_walker(roots, live, S.skip)
  local n, _, _, full = S.walk(S.vals, false)
  if full and not self.warned_full then
    self.warned_full = true
    io.stderr:write(string.format("ltc.jit: more than %d Lua values are reachable from fn; "
      .. "only the first ones are guarded (pass large data as tensors)\n", MAX_GUARDS))
  end
  S.total, S.full, S.live = n, full, live
  return S
end

-- The first guarded value (reachable from the roots S was taken from) that differs from
-- the snapshot S, as text, or nil; then "value" (a number, string or boolean changed),
-- "object" (a table, function or tensor replaced), "new" or "removed".
local function changed(S)
  local n, at, now = S.walk(S.vals, true)
  if at then
    local path = path_to(S.roots, S.live, S.skip, at)
    if at > S.total then return path .. " is new", "new" end
    local old = S.vals[at]
    local kind = "value"
    local t1, t2 = type(old), type(now)
    if t1 == "table" or t1 == "userdata" or t1 == "function" or t1 == "nil" or t2 == "table"
        or t2 == "userdata" or t2 == "function" then
      kind = "object" -- nil: a tensor only the snapshot held, collected since
    end
    return string.format("%s changed (%s -> %s)", path, show(old), show(now)), kind
  end
  if not S.full and n ~= S.total then return "a value reachable from fn was removed", "removed" end
  return nil
end

--- ltc.jit(fn [, opts]): a callable that warms up, captures and replays fn (the rules are
-- in the header of lua/ltc/jit.lua: arguments, guards, results, side effects). Lua-number
-- arguments reach fn as weak 0-d tensors on every call, the warm-up included, so that a
-- replay uses each call's value: a number fn needs as a Lua number (a size, a loop count,
-- an `if`) must come from an upvalue.
-- opts.mode: the capture mode ("default", "global", "thread_local", "relaxed").
-- opts.pool: a pool handle (ltc.graph_pool_handle()) for the capture.
-- opts.guards = false: no check of Lua values before a replay (only argument shapes and
-- dtypes): faster calls when fn reaches many Lua values, at the price of the traps above.
function M.jit(fn, opts)
  if type(fn) ~= "function" and not (getmetatable(fn) or {}).__call then
    raise("jit: bad argument #1 (function expected, got " .. type(fn) .. ")")
  end
  opts = opts or {}
  local self = { calls = 0, recaptures = {} }
  local sig, statics, results, roots, guards
  local rebinds -- core._rebinds() at the capture: m:to() / resize_ since then recaptures
  local live = setmetatable({}, { __mode = "k" }) -- ltc.jit.live's tensors, kept by resets

  function self.reset()
    if self.graph then self.graph:reset() end
    self.graph, sig, statics, results, roots, guards = nil, nil, nil, nil, nil, nil
  end

  local function recaptured(why)
    local r = self.recaptures
    r[#r + 1] = string.format("call %d: %s", self.calls, why)
    if #r > 8 then table.remove(r, 1) end
    self.reset()
    core._counter_add("JitRecapture", 1)
  end

  local function capture(args, tree)
    statics = make_statics(args, tree)
    local call = fill_statics(statics, args)
    -- the graph implementation of the backend syncs run on (cpu captures ref too)
    local dev = core.get_backend()
    if not core.has_graph_impl(dev) then dev = "cpu" end
    local g = core.Graph { keep_graph = false, device = dev }
    local frozen = core.counter("GraphFrozenInput")
    local cap = { live = live }
    local groots = guard_roots(fn, call) -- the mirrors of plain-table arguments
    local before = snapshot(groots, {}, self)
    g:capture_begin { mode = opts.mode, pool = opts.pool }
    current = cap
    local ok, res = pcall(function() return pack(fn(unpack(call, 1, call.n))) end)
    current = nil
    if ok then ok, res = pcall(function() g:capture_end(); return res end) end
    if not ok then
      g:reset() -- ends the capture if it is still running: nothing half-captured stays
      statics = nil
      if type(res) == "string" and res:find("cannot read a tensor's value while", 1, true) then
        res = res .. "; ltc.jit captures fn at its call 2: return the tensor and read it "
          .. "after the call (print, :item(), :totable(), t[i] of a 1-d tensor in fn), or ltc.jit(fn, {mode = "
          .. "\"relaxed\"}) to keep the value read at the capture"
      end
      error(res, 0)
    end
    self.graph, results, roots = g, res, groots
    rebinds = core._rebinds()
    guards = snapshot(roots, live, self)
    self.guarded = guards.total
    core._counter_add("JitCapture", 1)
    frozen = core.counter("GraphFrozenInput") - frozen
    local side, kind = changed(before)
    local drop -- why this graph cannot be replayed: the next call captures again
    if cap.new then drop = "a value read through ltc.jit.live for the first time" end
    if frozen > 0 and not drop then -- replaced state the walk cannot see (a leaf's grad)
      drop = string.format("the graph reads %d tensor(s) fn replaced", frozen)
    end
    if side then
      core._counter_add("JitLuaSideEffect", 1)
      if kind ~= "value" then -- new state (a tensor, a table) made or replaced by fn
        drop = "during the capture, " .. side
      elseif not self.warned_side and frozen == 0 then -- else the warning below says more
        self.warned_side = true
        io.stderr:write("ltc.jit: fn changes Lua values (" .. side .. "); replays run no Lua "
          .. "code, so they will not (keep such state in tensors updated in place)\n")
      end
    end
    if frozen > 0 then
      io.stderr:write(string.format("ltc.jit: the captured graph reads %d tensor(s) that "
        .. "nothing else holds any more (state replaced in fn instead of updated in place? "
        .. "use x:copy_(new) or mul_/add_): not replayed, the next call captures again\n",
        frozen))
    end
    if drop then
      self.dropped = (self.dropped or 0) + 1
      local r = self.recaptures
      r[#r + 1] = string.format("call %d: not replayed: %s", self.calls, drop)
      if #r > 8 then table.remove(r, 1) end
      self.graph = nil
      g:reset()
      if self.dropped >= 3 and not cap.new then
        self.untraced = drop
        io.stderr:write("ltc.jit: " .. drop .. ", 3 captures in a row: fn runs untraced from now "
          .. "on (keep state in tensors updated in place, made before the first call)\n")
      end
    else
      self.dropped = 0
    end
    return share_results(results)
  end

  return setmetatable(self, { __call = function(_, ...)
    local args = pack(...)
    self.calls = self.calls + 1
    if untraceable(args) then -- fn runs as is: see the header
      core._counter_add("JitUntraced", 1)
      return fn(...)
    end
    local s, tree = signature(args)
    if self.calls == 1 or self.untraced then -- warm-up: fn as is, numbers as weak scalars
      if self.untraced then core._counter_add("JitUntraced", 1) end
      sig = s
      local call = fill_statics(make_statics(args, tree), args)
      current = { live = live }
      local ok, res = pcall(function() return pack(fn(unpack(call, 1, call.n))) end)
      current = nil
      if not ok then error(res, 0) end
      -- synced here, not by the capture's begin: fused with the next call's input copies,
      -- the warm-up's graph would leave those copies' own graph to compile at the first replay
      core.sync()
      return share_results(res)
    end
    if self.graph then
      if s ~= sig then
        recaptured("arguments " .. sig .. " now " .. s)
      elseif core._rebinds() ~= rebinds then
        recaptured("a tensor was converted or moved in place (Module:to, resize_)")
      elseif opts.guards ~= false then
        local why = changed(guards)
        if why then
          recaptured(why)
          core._counter_add("JitGuardRecapture", 1)
        end
      end
    end
    sig = s
    refresh_live(live)
    if not self.graph then return capture(args, tree) end
    fill_statics(statics, args)
    self.graph:replay()
    core._counter_add("JitReplay", 1)
    return share_results(results)
  end })
end

return M
