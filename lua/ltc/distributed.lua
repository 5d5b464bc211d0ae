--- ltc.distributed: data-parallel training across processes, as torch.distributed, over Open
-- MPI (the C module build/ltc/distributed.so, src/distributed/).
--
--   local dist = require "ltc.distributed"
--   dist.init()                                  -- from Open MPI's environment (mpirun)
--   print(dist.rank(), dist.world_size())        -- ranks are 0 .. world_size - 1
--   dist.all_reduce(t, "sum")                    -- in place, as torch.distributed.all_reduce
--   local ddp = ltc.nn.parallel.DistributedDataParallel(model)
--   local loader = ltc.data.DataLoader({x, y}, {batch_size = 64, distributed = true})
--
-- Ranks are numbered from 0, as MPI numbers its processes: a rank is a process id, not a
-- Lua index (rank 0 is the first process; dims and indices stay 1-based).
--
-- Collectives are ops of the lazy graph (codegen/ops.yaml: all_reduce, broadcast, reduce,
-- all_gather, reduce_scatter): they run at the next sync, inside the compiled plan, so a
-- training step with its gradient all-reduce is one cached computation. dist.all_reduce and
-- dist.broadcast, in place as torch.distributed's, run at once (see them). Every rank must sync
-- graphs with the same collectives in the same order. Before the data of each collective
-- moves, the ranks exchange a small descriptor of it (kind, op, dtype, size, root, its place
-- in the step; once per computation, the first descriptor carrying a hash of all the step's):
-- ranks that disagree all get an error naming the mismatch, never a hang (init{check = false}
-- or LTC_DIST_CHECK=0 turns the exchange off for speed). A rank that
-- stops (its script ends or raises an error) tells the others, whose next collective fails
-- with an error naming it. A collective that waits longer than the timeout (init{timeout =
-- seconds}, LTC_DIST_TIMEOUT, default 300) ends the whole job with MPI_Abort.
--
-- Without the C module (Open MPI not installed when ltc was built), or before init(), every
-- collective is the identity and rank() is 0 of world_size() 1: single-process scripts run
-- unchanged. init() itself then raises an error saying what to install.
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local ltc = require "ltc"

local M = {}

-- the C half: ltc/distributed.so on package.cpath, under this module's name
local C
do
  local path = package.searchpath("ltc.distributed", package.cpath)
  if path then
    local open, err = package.loadlib(path, "luaopen_ltc_distributed")
    if not open then raise("ltc.distributed: cannot load " .. path .. ": " .. tostring(err)) end
    C = open()
  end
end

--- dist.is_available(): true when the Open MPI module was built (build/ltc/distributed.so).
function M.is_available() return C ~= nil end

local function env_number(name, default)
  local v = os.getenv(name)
  if v == nil or v == "" then return default end
  local n = tonumber(v)
  if not n then raise(string.format("ltc.distributed: %s=%q is not a number", name, v)) end
  return n
end

--- dist.init([opts]): starts MPI from the environment mpirun sets (a process started alone is
-- rank 0 of 1) and makes the collectives run across the ranks. opts.check (default true, or
-- LTC_DIST_CHECK): exchange a descriptor before each collective; opts.timeout (seconds,
-- default 300, or LTC_DIST_TIMEOUT): how long one collective may wait before MPI_Abort ends
-- the job. Returns rank, world_size. Calling it again only updates the options. Errors when
-- the Open MPI module was not built.
function M.init(opts)
  if opts ~= nil and type(opts) ~= "table" then
    raise("ltc.distributed.init: expected a table of options, got " .. type(opts))
  end
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "check" and k ~= "timeout" then
      raise(string.format("ltc.distributed.init: unknown option %q (check, timeout)", tostring(k)))
    end
  end
  if not C then
    raise("ltc.distributed.init: the Open MPI module was not built (no ltc/distributed.so on "
      .. "package.cpath); install libopenmpi-dev and openmpi-bin, then run make")
  end
  local check = opts.check
  if check == nil then check = env_number("LTC_DIST_CHECK", 1) ~= 0 end
  local timeout = opts.timeout or env_number("LTC_DIST_TIMEOUT", 300)
  if type(timeout) ~= "number" or not (timeout > 0) then
    raise("ltc.distributed.init: timeout must be a positive number of seconds, got " .. tostring(timeout))
  end
  return C.init(check and true or false, timeout)
end

--- dist.is_initialized(): true between init() and finalize().
function M.is_initialized() return C ~= nil and C.is_initialized() end

--- dist.rank() / dist.get_rank(): this process's rank, 0-based (0 before init).
function M.rank() return C and C.rank() or 0 end
M.get_rank = M.rank

--- dist.world_size() / dist.get_world_size(): the number of ranks (1 before init).
function M.world_size() return C and C.size() or 1 end
M.get_world_size = M.world_size

--- dist.barrier(): waits until every rank has called it (no-op before init).
function M.barrier()
  if M.is_initialized() then C.barrier() end
end

--- dist.finalize(): leaves (MPI_Finalize after every rank has left). Also done when the Lua
-- state closes, so scripts need not call it. No collective works after it.
function M.finalize()
  if C then C.finalize() end
end

--- dist.abort([code]): ends every rank of the job now (MPI_Abort), exit status code (1).
function M.abort(code)
  if C and C.is_initialized() then C.abort(code or 1) end
  os.exit(code or 1)
end

--- dist.stats(): {calls, bytes, seconds, wait_seconds, checks} spent in collectives since the
-- last dist.reset_stats(): descriptor exchanges count as calls and time, wait_seconds is the
-- part of seconds spent in them (waiting for the slowest rank), checks their number (one per
-- collective outside a computation, one per computation otherwise); zeros before init.
function M.stats()
  return C and C.stats() or { calls = 0, bytes = 0, seconds = 0, wait_seconds = 0, checks = 0 }
end
function M.reset_stats() if C then C.reset_stats() end end
-- dist._raw_all_reduce(t [, op]): MPI_Allreduce in place on t's buffer and nothing else (no
-- graph, no checks); the peer figure of bench/dist_allreduce.lua, on the same buffer.
M._raw_all_reduce = C and C._raw_all_reduce

---------------------------------------------------------------------------------------------
-- collectives on tensors (lazy: they run at the next sync)

local OPS = { sum = 0, avg = 1, mean = 1, max = 2, min = 3, prod = 4, product = 4 }
M.ReduceOp = { SUM = "sum", AVG = "avg", MAX = "max", MIN = "min", PRODUCT = "prod" }

local function check_tensor(fname, t)
  if not ltc.is_tensor(t) then
    raise(string.format("ltc.distributed.%s: expected a tensor, got %s", fname, type(t)))
  end
end

local function op_number(fname, op)
  if op == nil then return 0 end
  local n = type(op) == "string" and OPS[op:lower()]
  if not n then
    raise(string.format("ltc.distributed.%s: unknown op %s (expected \"sum\", \"avg\", \"max\", "
      .. "\"min\" or \"prod\")", fname, type(op) == "string" and string.format("%q", op) or tostring(op)))
  end
  return n
end

local function root_number(fname, what, root)
  if root == nil then return 0 end
  local ws = M.world_size()
  if math.type(root) ~= "integer" or root < 0 or root >= ws then
    raise(string.format("ltc.distributed.%s: %s %s is out of range for %d rank%s (ranks are 0..%d)",
      fname, what, tostring(root), ws, ws == 1 and "" or "s", ws - 1))
  end
  return root
end

local function write(t, v)
  ltc.no_grad(function() t:copy_(v) end)
  return t
end

-- t takes the result of the C module's in-place collective fn(t, arg) (all_reduce_ or
-- broadcast_), which records with grad mode off: an in-place write under no_grad, which the
-- core's autograd counts in t's version (a value saved for backward keeps its own node, so
-- the collective then does not run on t's buffer). No closure or table is made per call.
-- Without the C module, t:copy_ of the op.
local function write_inplace(fn, op, t, arg)
  if not C then return write(t, op(t, arg)) end
  local ok, r = pcall(fn, t, arg)
  if ok then return r end
  -- at the caller's line (it was this file's: luaL_error's position, a line of lua/ltc/)
  raise(type(r) == "string" and r:gsub("^[^\n]-[/\\]ltc[/\\][%w_]+%.lua:%d+: ", "") or r)
end

--- dist.all_reduce(t [, op="sum"]): t becomes the elementwise reduction of every rank's t
-- ("sum", "avg", "max", "min", "prod"); returns t. In place and at once, as
-- torch.distributed.all_reduce: pending work is synced first (as reading a value syncs), then
-- the collective runs, on t's own buffer when t is no view and shares it with nothing (no
-- copy), else as the recorded op synced at once. So every rank runs it at the same point of
-- its program, whatever is pending on each. While ltc.jit (a graph) captures, it is recorded
-- only, and replays repeat it. On one rank it is the identity and syncs nothing. To keep a
-- reduction inside the step's graph (lazy, one computation), use ltc.all_reduce(t, op).
function M.all_reduce(t, op)
  check_tensor("all_reduce", t)
  return write_inplace(C and C.all_reduce_, ltc.all_reduce, t, OPS[op] or op_number("all_reduce", op))
end

--- dist.broadcast(t [, src=0]): t becomes rank src's t on every rank; returns t. At once, as
-- dist.all_reduce says.
function M.broadcast(t, src)
  check_tensor("broadcast", t)
  return write_inplace(C and C.broadcast_, ltc.broadcast, t, root_number("broadcast", "src", src))
end

--- dist.reduce(t [, dst=0]): on rank dst, t becomes the sum of every rank's t (the others'
-- t is unchanged, as in torch.distributed.reduce); returns t.
function M.reduce(t, dst)
  check_tensor("reduce", t)
  dst = root_number("reduce", "dst", dst)
  local r = ltc.reduce(t, dst)
  if M.rank() == dst then write(t, r) else write(t, t + r) end -- r is zeros off dst
  return t
end

--- dist.all_gather_into_tensor(t): a new tensor, every rank's t concatenated along dim 1 in
-- rank order (t has at least one dim).
function M.all_gather_into_tensor(t)
  check_tensor("all_gather_into_tensor", t)
  return ltc.all_gather(t, M.world_size())
end

--- dist.all_gather(t): a list of world_size tensors, entry r + 1 holding rank r's t.
function M.all_gather(t)
  check_tensor("all_gather", t)
  local ws = M.world_size()
  local flat = ltc.all_gather(t:dim() == 0 and t:reshape({ 1 }) or t, ws)
  local n, out = t:dim() == 0 and 1 or t:size(1), {}
  for r = 1, ws do
    local part = flat:narrow(1, (r - 1) * n + 1, n)
    out[r] = t:dim() == 0 and part:reshape({}) or part
  end
  return out
end

--- dist.reduce_scatter(t [, op="sum"]): a new tensor: t reduced across ranks, then rank r's
-- block r + 1 of world_size equal blocks along dim 1 (torch's reduce_scatter_tensor).
function M.reduce_scatter(t, op)
  check_tensor("reduce_scatter", t)
  return ltc.reduce_scatter(t, op_number("reduce_scatter", op), M.world_size())
end

---------------------------------------------------------------------------------------------
-- DistributedDataParallel

local DDP = {}
-- the gradients DDP has averaged (weak keys): kept here, not in the wrapper, so that ltc.jit's
-- guards (which walk the tables a jitted step reaches, not ltc's own upvalues) do not take
-- this bookkeeping for Lua state the step changes
local REDUCED = setmetatable({}, { __mode = "k" })

local function nbytes(t)
  local dt = t:dtype()
  local size = { float64 = 8, int64 = 8, float16 = 2, bfloat16 = 2, int16 = 2, bool = 1, uint8 = 1,
                 int8 = 1 }
  return t:numel() * (size[dt] or 4)
end

--- ltc.nn.parallel.DistributedDataParallel(model [, opts]): model, wrapped for data-parallel
-- training. At wrap time every parameter takes rank 0's value (a broadcast, synced). After
-- each backward, the gradients of the parameters are averaged across ranks in buckets of
-- about opts.bucket_cap_mb (default 25) MB: each bucket is one all_reduce of the
-- concatenated gradients, inside the step's graph, so the step stays one cached computation.
-- Buckets follow the parameters in reverse order (as PyTorch's, the order backward produces
-- them). Calling the wrapper calls the model; ddp.module is the model; parameters(),
-- named_parameters(), train(), eval(), zero_grad(), state_dict() and load_state_dict()
-- forward to it. ddp:no_sync(fn, ...) runs fn with averaging off (gradient accumulation).
-- Each rank should feed its own shard of the global batch (DataLoader{distributed = true}):
-- with equal shards and a mean loss, the averaged gradient is the global batch's.
function M.DistributedDataParallel(model, opts)
  if type(model) ~= "table" or type(model.parameters) ~= "function" then
    raise("DistributedDataParallel: expected an ltc.nn module, got " .. type(model))
  end
  opts = opts or {}
  local cap = opts.bucket_cap_mb or 25
  if type(cap) ~= "number" or not (cap > 0) then
    raise("DistributedDataParallel: bucket_cap_mb must be a positive number, got " .. tostring(cap))
  end
  local self = setmetatable({ module = model, bucket_bytes = math.floor(cap * 1024 * 1024),
                              syncing = true }, DDP)
  -- every rank starts from rank 0's parameters
  local params = model:parameters()
  if M.world_size() > 1 then
    for _, p in ipairs(params) do write(p, ltc.broadcast(p, 0)) end
    ltc.sync()
  end
  -- average the gradients after each backward
  self.hook = function() if self.syncing then self:reduce_gradients() end end
  table.insert(ltc.autograd.post_backward_hooks, self.hook)
  return self
end

DDP.__index = function(self, k)
  local v = DDP[k]
  if v ~= nil then return v end
  local m = rawget(self, "module")[k]
  if type(m) == "function" then
    return function(s, ...) if s == self then s = self.module end return m(s, ...) end
  end
  return m
end
DDP.__call = function(self, ...) return self.module(...) end

--- ddp:reduce_gradients(): averages the parameters' gradients across ranks now (lazily: it
-- records the all_reduce ops); backward calls it. Parameters without a gradient are skipped
-- (they must be the same on every rank). A gradient already averaged is left alone.
function DDP:reduce_gradients()
  local ps = self.module:parameters()
  local ws = M.world_size()
  if ws == 1 then return end
  local bucket, size, dtype = {}, 0, nil
  local function flush()
    if #bucket == 0 then return end
    local flats = {}
    for i, p in ipairs(bucket) do flats[i] = p.grad:reshape({ -1 }) end
    local red = ltc.all_reduce(#flats == 1 and flats[1] or ltc.cat(flats, 1), 1)
    local off = 1
    for _, p in ipairs(bucket) do
      local n = p:numel()
      local g = red:narrow(1, off, n):view(p:size())
      p.grad = g
      REDUCED[g] = true
      off = off + n
    end
    bucket, size = {}, 0
  end
  for i = #ps, 1, -1 do
    local p = ps[i]
    local g = p.grad
    if g ~= nil and not REDUCED[g] then
      if dtype and g:dtype() ~= dtype then flush() end
      dtype = g:dtype()
      bucket[#bucket + 1] = p
      size = size + nbytes(g)
      if size >= self.bucket_bytes then flush() end
    end
  end
  flush()
end

--- ddp:no_sync(fn, ...): calls fn(...) with gradient averaging off; returns its results.
function DDP:no_sync(fn, ...)
  self.syncing = false
  local r = table.pack(pcall(fn, ...))
  self.syncing = true
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

--- ddp:remove(): stops averaging (removes the backward hook).
function DDP:remove()
  local hooks = ltc.autograd.post_backward_hooks
  for i = #hooks, 1, -1 do if hooks[i] == self.hook then table.remove(hooks, i) end end
end

ltc.nn.parallel = ltc.nn.parallel or {}
ltc.nn.parallel.DistributedDataParallel = M.DistributedDataParallel

return M
