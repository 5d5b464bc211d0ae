--- ltc.autograd: reverse-mode automatic differentiation on the lazy graph.
--
-- The engine is in the C core (src/core/autograd*.c, ltc_autograd.h): when grad mode is on
-- and an op is traced with an operand that requires grad, the op's entry records a grad_fn
-- node; t:backward() walks those nodes in C and calls each op's backward, generated as C
-- from the `derivatives:` formulas of codegen/ops.yaml (gen/derivatives.c). Backward builds
-- lazy IR like everything else, and nothing runs until a sync: a training step (forward,
-- backward, update) is one graph, compiled once and then taken from the compile cache.
-- A formula the generator could not translate to C would run as Lua (gen/derivatives.lua
-- with lua/ltc/autograd_formulas.lua's helpers), called back from the engine; today every
-- one is translated, and the Lua formulas serve the spec that compares the two.
--
-- Tensor fields (computed, through the metatable's __getters/__setters):
--   t.requires_grad (settable on leaves), t.grad (settable: nil clears it), t.grad_fn,
--   t.is_leaf, t.data (a detached alias; setting it replaces t's value in place).
-- Methods: t:requires_grad_([flag]), t:backward([grad] [, {retain_graph = bool,
--   create_graph = bool}]), t:detach(), t:zero_grad() (t.grad = nil).
--   t:retain_grad(), t:register_hook(fn) (returns a handle with remove()).
-- Functions: ltc.no_grad(fn, ...), ltc.enable_grad(fn, ...), ltc.is_grad_enabled(),
--   ltc.set_grad_enabled(flag), ltc.autograd.grad(outputs, inputs [, grad_outputs] [, opts]),
--   ltc.autograd.grad_fn_name(t).
--
-- In-place writes (t:add_(x), t:copy_(x), t:fill_(v), t[i] = v) give the written tensor the
-- history of its new value. A write through a view gives the view's base a CopySlices node
-- (PyTorch's): the base's old history outside the view, the written value's inside; the base's
-- other views take their history from the base's again when next used (PyTorch's version
-- counter). Writing into a leaf that requires grad, or a view of one, is an error naming the
-- op (use ltc.no_grad or t.data). t[i] of a tensor with 2 or more dims is select(1, i),
-- recorded as such. detach() shares storage but not history. A move between devices
-- (t:to("ref")) is recorded as PyTorch's ToCopyBackward0 (grad_fn_name "to_copy"): the
-- gradient goes back to the original's device.
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local A = {}

local type, select, error = type, select, error
local pcall, unpack, pack = pcall, table.unpack, table.pack
local math_type = math.type

local core          -- the ltc.core table
local module        -- the user-facing ltc module (set by export)
local AG            -- core._ag: the engine's functions (src/lua/ltc_autograd.c)
local D             -- gen/derivatives.lua's entries by full op name (loaded when first needed)

-- The Lua formulas (lua/ltc/autograd_formulas.lua), loaded when first needed: by the specs
-- that compare them with the C ones, or for an op whose formula has no C translation.
local function formulas()
  if not D then D = require("ltc.autograd_formulas").load(core, module) end
  return D
end

---------------------------------------------------------------------------------------------
-- the engine's Lua face

--- t:backward([grad] [, opts]): accumulates d(t)/d(leaf) into leaf.grad for every leaf that
-- requires grad. grad (default 1 for a one-element t) must have t's size. opts.retain_graph
-- keeps the saved tensors for another backward; opts.create_graph records the backward
-- ops too (gradients of gradients). Nothing is computed until a sync.
function A.backward(t, grad, opts)
  if type(grad) == "table" and not core.is_tensor(grad) then grad, opts = nil, grad end
  if opts ~= nil and type(opts) ~= "table" then
    raise("backward: bad argument #3 (a table of options expected, got " .. core.typename(opts)
      .. ")")
  end
  if grad ~= nil and type(grad) ~= "number" and not core.is_tensor(grad) then
    raise("backward: bad argument #2 (a gradient tensor, a number or a table of options "
      .. "expected, got " .. core.typename(grad) .. ")")
  end
  local retain, create = nil, nil -- no options table per call (every step's path)
  if opts then retain, create = opts.retain_graph, opts.create_graph end
  if type(grad) == "number" then grad = core.full(t:size(), grad, t:dtype()) end
  local ok, err = pcall(AG.backward, t, grad, retain or create, create)
  if not ok then
    local jit = package.loaded["ltc.jit"]
    if jit and jit.results[t] then
      err = err .. " (it was returned by an ltc.jit function, whose replays record no "
        .. "autograd graph: call backward inside the jitted function)"
    end
    raise(err)
  end
  for _, h in ipairs(A.post_backward_hooks) do h(t) end
end

--- ltc.autograd.grad(outputs, inputs [, grad_outputs] [, opts]): the gradients of outputs
-- (a tensor or a list) with respect to inputs (a tensor or a list), as multiple results in
-- inputs' order, without touching any tensor's grad (PyTorch's torch.autograd.grad).
-- grad_outputs: one gradient per output (default ones for one-element outputs). opts:
-- retain_graph, create_graph (the results have history: gradients of gradients),
-- allow_unused (nil for an input the outputs do not depend on, else an error). PyTorch's
-- positional form works too: grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
-- only_inputs, allow_unused), booleans or nil.
function A.grad(outputs, inputs, grad_outputs, opts, ...)
  if type(grad_outputs) == "table" and not core.is_tensor(grad_outputs) and grad_outputs[1] == nil
      and next(grad_outputs) ~= nil then
    grad_outputs, opts = nil, grad_outputs
  end
  local n_more = select("#", ...)
  if type(opts) == "boolean" or (opts == nil and n_more > 0) then
    local create, _, unused = ...
    for i, v in ipairs { opts, create, (select(2, ...)), unused } do
      if v ~= nil and type(v) ~= "boolean" then
        raise(string.format("grad: bad argument #%d (%s: a boolean expected, got %s)", i + 3,
          ({ "retain_graph", "create_graph", "only_inputs", "allow_unused" })[i], core.typename(v)))
      end
    end
    opts = { retain_graph = opts, create_graph = create, allow_unused = unused }
  elseif opts ~= nil and type(opts) ~= "table" then
    raise("grad: bad argument #4 (an options table {retain_graph, create_graph, allow_unused} or "
      .. "PyTorch's positional retain_graph, create_graph booleans expected, got "
      .. core.typename(opts) .. ")")
  end
  opts = opts or {}
  if core.is_tensor(outputs) then outputs = { outputs } end
  if core.is_tensor(inputs) then inputs = { inputs } end
  if core.is_tensor(grad_outputs) then grad_outputs = { grad_outputs } end
  if type(outputs) ~= "table" or type(inputs) ~= "table" then
    raise("grad: outputs and inputs must be tensors or lists of tensors")
  end
  local ok, r = pcall(AG.grad_of, outputs, inputs, grad_outputs,
    opts.retain_graph or opts.create_graph, opts.create_graph, opts.allow_unused)
  if not ok then raise(r) end
  return unpack(r, 1, #inputs)
end

--- The functions backward calls after it has accumulated every gradient, in order, each
-- with the tensor backward was called on (PyTorch's Engine::queue_callback, which DDP's
-- Reducer uses). ltc.distributed's DistributedDataParallel averages gradients here. Add with
-- table.insert, remove with table.remove; a hook's error propagates from backward.
A.post_backward_hooks = {}

---------------------------------------------------------------------------------------------
-- grad mode

-- Raises "<fname>: bad argument #1 (a function expected, ...)" at the caller of fname's
-- caller unless fn can be called.
local function check_callable(fn, fname)
  if type(fn) ~= "function" and not (type(getmetatable(fn)) == "table" and getmetatable(fn).__call) then
    raise(string.format("%s: bad argument #1 (a function expected, got %s)", fname,
      core.typename(fn)))
  end
end

local function with_mode(mode, fn, ...)
  local prev = AG.set_grad_enabled(mode)
  local r = pack(pcall(fn, ...))
  AG.set_grad_enabled(prev)
  if not r[1] then error(r[2], 0) end
  return unpack(r, 2, r.n)
end

-- Inference mode (PyTorch's torch.inference_mode): grad recording off, and a flag that
-- ltc.is_inference_mode_enabled() reads. Lua's to-be-closed variables play the part of
-- Python's `with`: a guard sets the modes when made and restores them when closed.
local inference = false
local guard_mt = {
  __close = function(g)
    if g.done then return end
    g.done = true
    AG.set_grad_enabled(g.grad)
    inference = g.inference
  end,
  __name = "ltc.grad_mode_guard",
}
local function guard(grad, infer)
  local g = setmetatable({ grad = AG.set_grad_enabled(grad), inference = inference }, guard_mt)
  if infer ~= nil then inference = infer end
  return g
end
local function with_guard(g, ...) -- closes g after fn, also when fn raised
  local r = pack(...)
  getmetatable(g).__close(g)
  if not r[1] then error(r[2], 0) end
  return unpack(r, 2, r.n)
end

--- ltc.no_grad(fn, ...): calls fn(...) with gradient recording off; returns its results.
-- ltc.no_grad() with no argument returns a guard for a to-be-closed variable:
-- `local _ <close> = ltc.no_grad()` turns recording off until the end of the block.
function A.no_grad(...)
  if select("#", ...) == 0 then return guard(false) end
  local fn = ...
  check_callable(fn, "no_grad")
  return with_mode(false, ...)
end
--- ltc.enable_grad(fn, ...): calls fn(...) with gradient recording on (with no argument, a
-- guard for a to-be-closed variable, as ltc.no_grad()).
function A.enable_grad(...)
  if select("#", ...) == 0 then return guard(true) end
  local fn = ...
  check_callable(fn, "enable_grad")
  return with_mode(true, ...)
end
--- ltc.inference_mode([mode,] fn, ...): calls fn(...) in inference mode (PyTorch's
-- torch.inference_mode): no gradient recording, and ltc.is_inference_mode_enabled() is true;
-- returns fn's results. mode false (ltc.inference_mode(false, fn)) runs fn outside inference
-- mode, with recording on. ltc.inference_mode([mode]) returns a guard for a to-be-closed
-- variable: `local _ <close> = ltc.inference_mode()` holds until the end of the block.
-- The modes are restored after fn, also when it raises.
function A.inference_mode(...)
  local mode, at = true, 1 -- the place of fn
  if type((...)) == "boolean" then mode, at = (...), 2 end
  if select("#", ...) < at then return guard(not mode, mode) end
  check_callable((select(at, ...)), "inference_mode")
  return with_guard(guard(not mode, mode), pcall(select(at, ...)))
end
--- ltc.is_inference_mode_enabled(): whether inside ltc.inference_mode.
function A.is_inference_mode_enabled() return inference end
--- ltc.is_grad_enabled(): whether ops record gradients (off under ltc.no_grad and
-- ltc.inference_mode).
function A.is_grad_enabled() return AG.is_grad_enabled() end
--- ltc.set_grad_enabled(flag): switches recording on or off; returns the previous mode.
function A.set_grad_enabled(flag) return AG.set_grad_enabled(flag and true or false) end

--- ltc.autograd.requires_grad(t): whether t requires grad (t.requires_grad).
function A.requires_grad(t) return AG.requires_grad(t) end
--- The generated derivative entries by full op name (gen/derivatives.lua: the Lua formulas).
function A.derivatives() return formulas() end
--- ltc.autograd.grad_fn_name(t): the name of the op that made t ("mul"), nil for a leaf.
function A.grad_fn_name(t) return (AG.grad_fn(t)) end
--- The number of view steps autograd keeps for t (0 when t is no view or a detached alias).
function A.view_steps(t) return core.debug_view_steps(t) end

---------------------------------------------------------------------------------------------
-- installation

-- The engine's callback for a formula that has no C translation: its Lua backward.
local function foreign(name, a, grads, needs)
  local entry = formulas()[name]
  if not entry or not entry.backward then
    error(string.format("backward: op '%s' has no derivative formula (add `derivatives:` "
      .. "to its entry in codegen/ops.yaml)", name), 0)
  end
  return entry.backward(a, grads, needs)
end

--- install(core): the autograd fields and methods of tensors, over the C engine.
function A.install(c)
  core = c
  AG = c._ag
  AG.set_foreign(foreign)
  local methods, mt = c.methods, c.metatable

  -- dropout of a tensor that requires grad keeps its mask, as PyTorch saves it: self times
  -- dropout(ones) (1 / (1 - p) or 0, the same draws), recorded as a mul, so an element of
  -- self that is 0 still passes its gradient (reading the mask from the result would not)
  local raw_dropout = c.dropout
  if raw_dropout then
    local requires = AG.requires_grad
    local function dropout(t, p, train, ...)
      local q = p == nil and 0.5 or p
      if select("#", ...) == 0 and train ~= false and math_type(q) == "float" and q > 0 and q < 1
          and core.is_tensor(t) and AG.is_grad_enabled() and requires(t) then
        local prev = AG.set_grad_enabled(false)
        local ok, m = pcall(raw_dropout, core.ones(t:size(), t:dtype()), q, true)
        AG.set_grad_enabled(prev)
        if not ok then raise(m) end
        return t * m
      end
      return raw_dropout(t, p, train, ...)
    end
    if methods.dropout == raw_dropout then methods.dropout = dropout end
    c.dropout = dropout
  end

  -- t[i] on a tensor of 2 or more dims is the view select(1, i), recorded like select
  mt.__select = function(t, i) return core.select(t, 1, i) end -- t[i], dim > 1 (ltc_values.c)

  local getters = mt.__getters or {}
  local setters = mt.__setters or {}
  mt.__getters, mt.__setters = getters, setters
  getters.requires_grad = AG.requires_grad
  getters.grad = AG.grad
  -- t.grad_fn: {name = the op's name, output = which of its results t is}, printed as
  -- PyTorch prints one (<MulBackward>), or nil for a leaf and a tensor outside autograd
  local grad_fn_mt = { __tostring = function(g)
    local camel = g.name:gsub("%..*$", ""):gsub("^%l", string.upper):gsub("_(%w)", string.upper)
    return "<" .. camel .. "Backward" .. (g.output and g.output > 1 and (" output " .. g.output) or "") .. ">"
  end }
  getters.grad_fn = function(t)
    local name, nr = AG.grad_fn(t)
    return name and setmetatable({ name = name, output = nr }, grad_fn_mt) or nil
  end
  getters.is_leaf = AG.is_leaf
  getters.data = function(t) return AG.detach(t) end
  setters.requires_grad = function(t, flag)
    local ok, err = pcall(AG.set_requires_grad, t, flag)
    if not ok then raise(err) end
  end
  setters.grad = function(t, g)
    if g ~= nil and not core.is_tensor(g) then raise("grad: a tensor or nil expected") end
    AG.set_grad(t, g)
  end
  setters.data = function(t, v)
    if core.is_tensor(v) and (v:dtype() ~= t:dtype() or core.device(v) ~= core.device(t)) then
      -- PyTorch's t.data = v across dtypes or devices: t takes v's dtype, device and values
      -- in place (before: v was cast and copied into t, so t stayed where it was)
      local ok, err = pcall(c._set_data, t, AG.detach(v))
      if not ok then raise(err) end
      return
    end
    local prev = AG.set_grad_enabled(false)
    local ok, err = pcall(c.assign_, t, v, "data")
    AG.set_grad_enabled(prev)
    if not ok then raise(err) end
  end

  --- t:requires_grad_([flag]): marks a leaf as requiring grad (default true); returns t.
  function methods.requires_grad_(t, flag)
    if flag == nil then flag = true end
    local ok, err = pcall(AG.set_requires_grad, t, flag)
    if not ok then raise(err) end
    return t
  end
  --- t:detach(): a tensor with t's value and no history (a view of t: same storage).
  function methods.detach(t)
    local ok, r = pcall(AG.detach, t)
    if not ok then raise(r) end
    return r
  end
  methods.backward = A.backward
  --- t:retain_grad(): a tensor with history keeps its gradient in t.grad at backward
  -- (PyTorch's retain_grad); t.retains_grad says whether it does. The gradient kept is the
  -- one after all of t's hooks ran, in whichever order retain_grad and register_hook came
  -- (PyTorch 2.x; in 1.13 a hook registered after retain_grad does not change t.grad).
  function methods.retain_grad(t)
    local ok, err = pcall(AG.retain_grad, t)
    if not ok then raise(err) end
  end
  getters.retains_grad = AG.retains_grad
  --- t:register_hook(fn): fn(grad) runs whenever the gradient with respect to t is computed,
  -- before it is accumulated or passed on; a tensor it returns replaces the gradient (same
  -- size). Returns a handle whose remove() takes the hook off (PyTorch's register_hook).
  -- A leaf's hooks also run on the gradient ltc.autograd.grad returns for it (PyTorch 1.13
  -- returns that gradient without running them); retain_grad: see above.
  function methods.register_hook(t, fn)
    if type(fn) ~= "function" then raise("register_hook: a function expected, got " .. type(fn)) end
    local ok, id = pcall(AG.register_hook, t, fn)
    if not ok then raise(id) end
    return { remove = function() AG.remove_hook(t, id) end }
  end
  --- t:zero_grad(): t.grad = nil.
  function methods.zero_grad(t)
    if not core.is_tensor(t) then
      raise("zero_grad: bad argument #1 (ltc.Tensor expected, got " .. core.typename(t)
        .. "; t:zero_grad(), not t.zero_grad())")
    end
    AG.set_grad(t, nil)
  end
end

--- export(M): adds the grad-mode functions to the user-facing module.
function A.export(M)
  module = M
  M.no_grad, M.enable_grad = A.no_grad, A.enable_grad
  M.is_grad_enabled, M.set_grad_enabled = A.is_grad_enabled, A.set_grad_enabled
  M.inference_mode, M.is_inference_mode_enabled = A.inference_mode, A.is_inference_mode_enabled
  M.autograd = A
end

return A
