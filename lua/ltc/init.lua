--- ltc: a lazy tensor runtime for Lua.
--
-- `local ltc = require "ltc"` returns this module. Every op records an IR node; values
-- are computed at a sync (ltc.sync(), t:item(), t:totable(), tostring(t), t[i] on a 1-d
-- tensor), where the pending graph is hashed, compiled once and cached.
-- Dims and indices are 1-based (negative from the end), as in Lua and Torch7.
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local core = require "ltc.core"
local autograd = require "ltc.autograd"
autograd.install(core) -- op functions record grad_fn nodes (lua/ltc/autograd.lua)
-- Lua's < and <= on a tensor: an error that says what to use (Lua's own, "attempt to compare
-- two ltc.Tensor values", named neither; a Lua comparison must give one boolean, so there is
-- no elementwise a < b as in PyTorch).
local function compare_error(a, b)
  local function what(v)
    return core.is_tensor(v) and ("a tensor of size [" .. table.concat(v:size(), ", ") .. "]")
      or type(v)
  end
  raise(string.format("attempt to compare %s with %s: a comparison of tensors is elementwise, "
    .. "t:lt(x), t:le(x), t:gt(x), t:ge(x) (bool tensors); t:item() reads a 0-d tensor's "
    .. "number (under ltc.jit, Lua-number arguments reach fn as 0-d tensors: pass such a "
    .. "number through an upvalue)", what(a), what(b)))
end
core.metatable.__lt, core.metatable.__le = compare_error, compare_error
do -- PyTorch's tensor fields beside autograd's: t.shape (the sizes, as t:size()), t.ndim
  -- (t:dim()) and t.T (the dims reversed: t:t() of a 2-d tensor, t itself of a 0-d or 1-d)
  local getters = core.metatable.__getters
  getters.shape = function(t) return t:size() end
  getters.ndim = function(t) return t:dim() end
  getters.T = function(t)
    local n = t:dim()
    if n < 2 then return t end
    local dims = {}
    for i = 1, n do dims[i] = n + 1 - i end
    return t:permute(dims)
  end
end
require("ltc.ops").install(core) -- ops written in Lua, conv2d/pooling front ends (lua/ltc/ops.lua)
require("ltc.reductions").install(core) -- several dims at once, var/std correction, amax/amin
require("ltc.einsum").install(core) -- ltc.einsum, lowered to permute/reshape/bmm
require("ltc.indexing").install(core) -- take_along_dim, index_fill/copy, masked_scatter, unfold, unique, im2col
require("ltc.torch7").install(core) -- Torch7 idioms: nElement, resize_, t[{...}] (lua/ltc/torch7.lua)
require("ltc.ops_more").install(core) -- unbind, new_zeros, roll, repeat_interleave, tile, isclose, t.mT, ...

local M = {}
for name, fn in pairs(core) do
  if type(fn) == "function" then M[name] = fn end
end
local methods, mt = core.methods, core.metatable
M.Tensor = mt
--- ltc.jit(fn [, opts]): warm up, capture and replay fn as a graph (lua/ltc/jit.lua).
M.jit = require("ltc.jit").jit

local floor, type = math.floor, type

--- ltc.arange([start,] end [, step] [, dtype]): start, start+step, ... excluding end.
-- arange(n) is arange(0, n). All-integer arguments give int64, others the default dtype
-- (float32 unless ltc.set_default_dtype changed it; PyTorch, NumPy), unless dtype is given.
function M.arange(a, b, c, d, ...)
  if select("#", ...) > 0 then raise("arange: too many arguments (at most start, end, step, dtype)") end
  local start, stop, step, dtype
  if type(b) ~= "number" then start, stop, step, dtype = 0, a, 1, b
  elseif type(c) ~= "number" then start, stop, step, dtype = a, b, 1, c
  else start, stop, step, dtype = a, b, c, d end
  if dtype == nil then
    local ints = math.type(start) == "integer" and math.type(stop) == "integer"
      and math.type(step) == "integer"
    dtype = ints and "int64" or core.get_default_dtype()
  end
  return core.arange(start, stop, step, dtype)
end

--- t:half() (float16), t:bfloat16(), t:float(), t:double(), t:int(), t:long(), t:bool(),
-- t:byte() (uint8), t:char() (int8), t:short() (int16): dtype shorthands (Torch7 and
-- PyTorch), t:to(dtype).
for short, dtype in pairs { float = "float32", double = "float64", int = "int32",
                            long = "int64", bool = "bool", half = "float16",
                            bfloat16 = "bfloat16", byte = "uint8", char = "int8",
                            short = "int16" } do
  methods[short] = function(t) return core.to(t, dtype) end
end
--- t:is_floating_point(): whether t's dtype is float16, bfloat16, float32 or float64 (PyTorch).
local float_dtype = { float16 = true, bfloat16 = true, float32 = true, float64 = true }
function methods.is_floating_point(t)
  if not core.is_tensor(t) then
    raise("is_floating_point: bad argument #1 (ltc.Tensor expected, got " .. core.typename(t) .. ")")
  end
  return float_dtype[t:dtype()] == true
end
M.is_floating_point = methods.is_floating_point
--- t:element_size(): bytes per element of t's dtype (PyTorch): 1 for bool, uint8 and int8,
-- 2 for int16, float16 and bfloat16, 4 for int32 and float32, 8 for int64 and float64.
local dtype_bytes = { bool = 1, uint8 = 1, int8 = 1, int16 = 2, float16 = 2, bfloat16 = 2,
                      int32 = 4, float32 = 4, int64 = 8, float64 = 8 }
function methods.element_size(t) return dtype_bytes[t:dtype()] end
--- t:type(dtype): as t:to(dtype); t:type() returns the dtype name.
function methods.type(t, dtype)
  if dtype == nil then return t:dtype() end
  return core.to(t, dtype)
end

---------------------------------------------------------------------------------------------
-- in-place variants (PyTorch's trailing underscore): t:add_(x) computes add(t, x) and writes
-- the result into t (and so into t's base and its other views, if t is a view). The result
-- keeps t's dtype; a float result cannot go into an integer tensor (an error, as in PyTorch).

-- Errors name the in-place op (add_: ..., not add: ... or assign_: ...) and the caller's line:
-- the op and the write run under pcall, whose C frame gives their messages no position, and
-- are raised again at level 2.
local inplace = core.inplace_ops -- ops.yaml entries with `inplace: true` (composites too)
local assign, pcall, error = core.assign_, pcall, error
local function inplace_error(err, op, uname)
  if type(err) == "string" and err:sub(1, #op + 1) == op .. ":" then
    err = uname .. err:sub(#op + 1)
  end
  raise(err)
end
for _, name in ipairs(inplace) do
  local op, uname = core[name], name .. "_"
  if op and methods[uname] == nil then
    methods[uname] = function(t, ...)
      local ok, r = pcall(op, t, ...)
      if ok then ok, r = pcall(assign, t, r, uname) end
      if not ok then inplace_error(r, name, uname) end
      return t
    end
  end
end

--- t:fill_(value): every element becomes value (a number, a boolean (1 or 0, as PyTorch) or
-- 0-d tensor). Returns t.
function methods.fill_(t, value)
  if type(value) == "boolean" then value = value and 1 or 0 end
  if type(value) ~= "number" and not core.is_tensor(value) then
    raise("fill_: bad argument #1 (a number, boolean or 0-d tensor expected, got "
      .. core.typename(value) .. ")")
  end
  return core.fill_(t, value, "fill_")
end
--- t:zero_(): every element becomes 0. Returns t.
function methods.zero_(t)
  return core.fill_(t, 0, "zero_")
end

---------------------------------------------------------------------------------------------
-- printing, in Torch7's layout: rows of right-aligned values, then a footer
-- "[ltc.float32 of size 2x3 on cpu:0]" (the tensor's device). Printing syncs.

local printing = require "ltc.print" -- the body's layout, summarised past a threshold
printing.install(core) -- t:size() is an ltc.Size
--- ltc.set_printoptions{threshold=, edgeitems=, precision=, sci_mode=, profile=} and
-- ltc.Size(list) (lua/ltc/print.lua).
M.set_printoptions, M.Size = printing.set_printoptions, printing.Size

mt.__tostring = function(t)
  if not core.is_tensor(t) then return "ltc.Tensor (closed)" end -- as io's "file (closed)"
  local size, dtype = t:size(), t:dtype()
  local dims = {}
  for i, s in ipairs(size) do dims[i] = tostring(s) end
  local footer = #size == 0 and string.format("[ltc.%s scalar on %s]", dtype, t:device())
    or string.format("[ltc.%s of size %s on %s]", dtype, table.concat(dims, "x"), t:device())
  if t:numel() == 0 then return footer end
  local lines = printing.body(t, core)
  lines[#lines + 1] = footer
  return table.concat(lines, "\n")
end

---------------------------------------------------------------------------------------------
-- dtypes

--- ltc.float32, ltc.float64, ltc.int32, ltc.int64, ltc.bool, ltc.uint8, ltc.int8, ltc.int16,
-- ltc.float16, ltc.bfloat16 (and PyTorch's aliases ltc.float, ltc.double, ltc.int, ltc.long,
-- ltc.half, ltc.short): the dtype names, which is what every dtype argument takes
-- (`ltc.ones(2, 3, ltc.int64)` is `ltc.ones(2, 3, "int64")`), as torch.float32 etc.
for _, d in ipairs { { "float32" }, { "float64" }, { "int32" }, { "int64" }, { "bool" },
  { "uint8" }, { "int8" }, { "int16" }, { "float16" }, { "bfloat16" },
  { "float", "float32" }, { "double", "float64" }, { "int", "int32" }, { "long", "int64" },
  { "half", "float16" }, { "short", "int16" } } do
  M[d[1]] = d[2] or d[1]
end

--- ltc.ellipsis: "...", PyTorch's Ellipsis in a table index: t[{ltc.ellipsis, 1}] (or
-- t[{"...", 1}]) selects index 1 of the last dim, whatever t's dim count; t["..."] is all of t.
M.ellipsis = "..."

---------------------------------------------------------------------------------------------
-- metrics and configuration

--- ltc.metrics: counter(name), counter_names(), report() (PyTorch LTC's format), reset().
M.metrics = {
  counter = core.counter,
  counter_names = core.counter_names,
  report = core.metrics_report,
  reset = core.metrics_reset,
}

--- ltc.config.LTC_COMPILE_CACHE_SIZE etc.: read and set the LTC_* options (the same names
-- as the environment variables; integers, booleans as 1/0, or strings). Unknown names and
-- out-of-range values are errors. ltc.config.list(): {{name=, value=, doc=[, min=, max=]}}
-- in table order; pairs(ltc.config) iterates names and values.
M.config = setmetatable({ list = core.config_list }, {
  __index = function(_, k)
    local ok, v = pcall(core.config_value, k)
    if not ok then raise(v) end -- at the caller's line
    return v
  end,
  __newindex = function(_, k, v)
    local ok, err = pcall(core.config_assign, k, v)
    if not ok then raise(err) end
  end,
  __pairs = function()
    local list, i = core.config_list(), 0
    return function()
      i = i + 1
      if list[i] then return list[i].name, list[i].value end
    end
  end,
})

--- ltc.use_deterministic_algorithms(mode): with true, results do not depend on the thread
-- count (PyTorch's name). Only float GEMMs (matmul, linear, addmm, bmm, conv2d's im2col
-- path) differed: OpenBLAS splits their sums by thread, so they run on one OpenBLAS thread
-- (the LTC_DETERMINISTIC option). Cost: large GEMMs lose OpenBLAS's threads (up to the
-- core count slower; other kernels keep their threads). ltc.are_deterministic_algorithms_enabled()
-- reads it back.
function M.use_deterministic_algorithms(mode)
  if type(mode) ~= "boolean" then
    raise("use_deterministic_algorithms: mode must be a boolean, got " .. type(mode))
  end
  core.config_assign("LTC_DETERMINISTIC", mode and 1 or 0)
end
function M.are_deterministic_algorithms_enabled()
  return core.config_value("LTC_DETERMINISTIC") == 1
end

--- ltc.debug: ir, dot, render, backend_text, explain_recompile, pending (lua/ltc/debug.lua).
M.debug = require "ltc.debug"

M.is_tensor = core.is_tensor
M.io = require "ltc.io"
--- ltc.save(path, tensor) writes .npy; ltc.save(path, state_dict) writes .npz (one file,
-- a member "<name>.npy" per tensor; np.load reads it). ltc.load(path) reads either back.
M.save, M.load = M.io.save, M.io.load

---------------------------------------------------------------------------------------------
-- devices (PyTorch's torch.device): "cpu:0", "ref:0", and those of backends that outside
-- modules register. ltc.devices() lists them, ltc.default_device() / set_default_device(d)
-- get and set where new tensors are made, t:device() names a tensor's.

--- t:device(): the tensor's device, "cpu:0".
methods.device = core.device
--- t:to(device) moves t to a device ("cpu", "ref:0"), returning t itself when it is there
-- already (PyTorch's Tensor.to); t:to(dtype) casts; t:to(device, dtype) and t:to(dtype,
-- device) do both. An op on tensors of two devices is an error naming both. Autograd records
-- the move (PyTorch's ToCopyBackward0): the copy of a tensor that requires grad requires grad
-- and is no leaf, and its gradient goes back to the original's device.
local to_dtype = methods.to or core.to
local function move(t, dev)
  local d = core.device(t) -- there already: t itself (the same Lua value, as PyTorch's `is`)
  if d == dev or d == dev .. ":0" then return t end
  return core._to_device(t, dev)
end
function methods.to(t, x, y, ...)
  if core._is_device(x) then
    if y == nil then return move(t, x) end
    return to_dtype(move(t, x), y, ...)
  end
  if type(x) == "string" and type(y) == "string" and core._is_device(y) then
    return move(to_dtype(t, x, ...), y)
  end
  if type(x) ~= "string" then return to_dtype(t, x, y, ...) end
  local ok, r = pcall(to_dtype, t, x, y, ...)
  if ok then return r end
  if type(r) == "string" and r:find("unknown dtype", 1, true) then -- t:to("cuda")
    local names = table.concat(core.backends(), ", ")
    r = r:gsub("%)$", "") .. "; nor a device: the devices are " .. names
      .. (names:find("opencl", 1, true) and ")" or "; `require \"ltc.opencl\"` adds opencl)")
  end
  raise(r)
end
M.to = methods.to
--- t:cpu(): t on the CPU device, t itself when it is there already (PyTorch's Tensor.cpu;
-- the same as t:to("cpu")).
function methods.cpu(t) return methods.to(t, "cpu") end

-- ltc.all_reduce(t, op) and ltc.reduce_scatter(t, op, world_size), the lazy collectives, take
-- the reduction by name as dist.all_reduce does ("sum", "avg", "max", "min", "prod"), or as
-- ops.yaml's number (0 sum, 1 avg, 2 max, 3 min, 4 prod).
local REDUCE_OPS = { sum = 0, avg = 1, mean = 1, max = 2, min = 3, prod = 4, product = 4 }
for _, name in ipairs { "all_reduce", "reduce_scatter" } do
  local f = M[name]
  if f then
    local function named(t, op, ...)
      if type(op) == "string" then
        local n = REDUCE_OPS[op]
        if not n then
          raise(string.format("%s: unknown op \"%s\" (expected \"sum\", \"avg\", \"max\", "
            .. "\"min\" or \"prod\")", name, op))
        end
        op = n
      end
      return f(t, op, ...)
    end
    M[name] = named
    if methods[name] then methods[name] = named end
  end
end

-- Creation functions take a trailing options table, PyTorch's keywords: {device = "ref:0",
-- dtype = "int64", requires_grad = true} (ltc.load: device only). The tensor is made under a
-- device guard for that device (this thread only, as PyTorch's DeviceGuard), which is then
-- restored; dtype goes on as the trailing dtype argument every creation function takes
-- (ltc.zeros(2, 3, "int64")); requires_grad = true makes the result a leaf that requires grad
-- (an integer dtype raises, as in PyTorch). A last argument (not the first: data or sizes)
-- that is a table without a list part and with a key is an options table: an unknown key is
-- an error naming the function.
local OPTION_KEYS = { device = true, dtype = true, requires_grad = true }
local function with_options(name, fn)
  return function(...)
    local n = select("#", ...)
    local last = n > 1 and select(n, ...) or nil -- the first argument is data or sizes
    if type(last) ~= "table" or core.is_tensor(last) or last[1] ~= nil or next(last) == nil then
      return fn(...)
    end
    for k in pairs(last) do
      if not OPTION_KEYS[k] or (name == "load" and k ~= "device") then
        raise(string.format("%s: unknown option '%s' (expected %s)", name, tostring(k),
          name == "load" and "device" or "device, dtype or requires_grad"))
      end
    end
    local args = table.pack(...)
    args.n = n - 1
    if last.dtype ~= nil then
      local prev = args[args.n]
      if type(prev) == "string" and not core._is_device(prev) then
        raise(string.format("%s: dtype given twice ('%s' and dtype = '%s')", name, prev,
          tostring(last.dtype)))
      end
      args.n = args.n + 1
      args[args.n] = last.dtype
    end
    local prev = last.device ~= nil and core._device_guard(last.device)
    local res = table.pack(pcall(fn, table.unpack(args, 1, args.n)))
    if last.device ~= nil then core._device_guard(prev) end
    if not res[1] then raise(res[2]) end
    if last.requires_grad then
      local ok, msg = pcall(res[2].requires_grad_, res[2], true)
      if not ok then raise(name .. ": " .. tostring(msg):gsub("^[^:]*:%d+: ", "")) end
    end
    return table.unpack(res, 2, res.n)
  end
end
-- randint's call forms, named in its errors: a size is needed, and two integers read as
-- (low, high) with a 0-d draw, so ltc.randint(10, 3) (PyTorch's torch.randint(10, (3,)) in
-- mind) says how to ask for 3 numbers below 10.
do
  local raw = M.randint
  M.randint = function(...)
    local n, a, b = select("#", ...), ...
    if n == 0 or (n == 1 and type(a) == "number") then
      raise("randint: no size given (ltc.randint(high, {sizes}), ltc.randint(low, high, {sizes}) "
        .. "or ltc.randint(low, high, n1, n2, ...); {} for a 0-d draw)")
    end
    if n == 2 and math.type(a) == "integer" and math.type(b) == "integer" and a >= b then
      raise(string.format("randint: low (%d) must be less than high (%d): ltc.randint(%d, %d) is "
        .. "randint(low, high), one draw; %d draws in [0, %d) are ltc.randint(%d, {%d})", a, b,
        a, b, b, a, a, b))
    end
    return raw(...)
  end
  require("ltc.help").wraps[M.randint] = raw
end
-- the functions that make tensors from nothing: they take a device option (and so are left
-- out of the input-device following below)
local creation = { "tensor", "zeros", "ones", "full", "empty", "rand", "randn", "arange", "eye",
  "linspace", "randint", "randperm", "load", "scalar_tensor" }
for _, name in ipairs(creation) do
  if M[name] then M[name] = with_options(name, M[name]) end
end
autograd.export(M)
-- ltc.nn and ltc.optim require "ltc" themselves: the module is registered first
package.loaded["ltc"] = M
M.nn = require "ltc.nn"
M.optim = require "ltc.optim"
M.data = require "ltc.data"
-- Doc comments of functions written in C (src/lua/ltc_values.c, ltc_runtime.c), for ltc.help:
--- ltc.sync(): runs every pending computation (the graph of all live tensors with pending
-- values) now, as PyTorch/XLA's mark_step; reading a value (t:item(), t:totable(), printing)
-- syncs too.
--- ltc.manual_seed(seed): seeds the generator of ltc.rand, randn, randint, randperm, dropout
-- and the modules' initialisation (an integer), as torch.manual_seed.
--- ltc.result_type(a, b, ...): the dtype name an op on these operands (tensors, Lua numbers,
-- booleans) computes in, as torch.result_type (a Lua number is a weak scalar:
-- ltc.result_type(ltc.tensor({1}, "int32"), 2.5) is "float32").
--- ltc.get_default_dtype(): the default dtype's name, "float32" unless set (PyTorch's
-- torch.get_default_dtype).
--- ltc.set_default_dtype(dtype): the dtype ("float32", "float64", "float16" or "bfloat16";
-- others are an error) of tensors made from Lua numbers (ltc.tensor({1.5})), of zeros, ones,
-- full, rand, randn, empty, eye, linspace and a float arange given no dtype, of a Lua float
-- number in an op with integer tensors (int32 tensor * 2.5), and of integer operands of ops
-- that compute in a float (sqrt, mean). One setting for the process, kept in the C core
-- (ltc_default_dtype); as torch.set_default_dtype.
--- ltc.help(x): prints the documentation of an op (its doc in codegen/ops.yaml, with schema,
-- arguments, shape and dtype rules and backends) or of a Lua function (the comment above its
-- definition); x is the function (ltc.softmax, ltc.nn.Linear) or its name ("t:softmax").
-- ltc.doc(x) returns that text (nil and why when there is none). See lua/ltc/help.lua.
function M.help(x) return require("ltc.help").help(x) end
function M.doc(x) return require("ltc.help").doc(x) end
-- The library's Lua functions run on their input's device: what they create from nothing
-- (zeros_like, dropout's mask, nonzero's index range, an RNN's zero state) is made there, as
-- in PyTorch (lua/ltc/follow.lua). Creation functions keep their own device option; moves
-- name their device.
do
  local follow_all = require("ltc.follow").follow_all
  local skip = { to = true, device = true, jit = true, help = true, doc = true }
  for _, name in ipairs(creation) do skip[name] = true end
  follow_all(M, skip)
  follow_all(methods, skip)
  follow_all(M.nn.functional)
  follow_all(M.nn.init)
  follow_all(M.nn.utils)
  follow_all(M.nn.utils.rnn)
end
-- PyTorch's keyword arguments (x:sum{dim = 1, keepdim = true}) for the ops that Lua functions
-- replaced; the generated bindings take them already (lua/ltc/keywords.lua)
do
  local skip = {}
  for _, name in ipairs(creation) do skip[name] = true end
  require("ltc.keywords").install(M, methods, core._keywords, skip, core._overloads)
end
return M
