--- ltc.ops: the ops written in Lua over the generated ones. install(core) adds them to the
-- core table and its methods before lua/ltc/init.lua copies core into the module, so they
-- are ltc.<name> and t:<name>() like any generated op, and autograd sees the generated ops
-- they call.
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local M = {}

local type, select, unpack = type, select, table.unpack

--- install(core): adds the ops below to core and core.methods.
function M.install(core)
  local methods = core.methods

  -- Raises "<fname>: bad argument #<n> (ltc.Tensor expected, got ...)" at the level of the
  -- caller of the op that calls this (of the op's caller's caller with depth 1), unless v is
  -- a tensor (a closed one is named as such).
  local function check_tensor(v, n, fname, depth)
    if not core.is_tensor(v) then
      raise(string.format("%s: bad argument #%d (ltc.Tensor expected, got %s)", fname, n,
        core.typename(v)))
    end
  end
  -- fn(...)'s one result; its error is raised again at the level of the caller of the op
  -- that calls this (call it as `local r = call1(...)`, not in a tail call), not at a line of
  -- this file.
  local function call1(fn, ...)
    local ok, r = pcall(fn, ...)
    if not ok then raise(r) end
    return r
  end

  -- Registers fn as ltc.<name> and, when `method`, as t:<name>().
  local function def(name, fn, method)
    core[name] = fn
    if method then methods[name] = fn end
  end

  ---------------------------------------------------------------------------------------
  -- shape ops written over the generated ones

  --- t:repeatTensor(r1, r2, ...) or t:repeatTensor({r1, r2, ...}): the op `repeat` (a Lua
  -- keyword; Torch7's name): self tiled r_d times along each dim d.
  local rep = core["repeat"]
  def("repeatTensor", function(t, ...)
    local r = ...
    if type(r) ~= "table" then r = { ... } end
    return rep(t, r)
  end, true)

  --- t:expand_as(other): t:expand(other:size()). t:view_as(other), t:reshape_as(other) alike.
  -- (each name written out, so that spec/composite_ops_spec.lua finds it in ops.yaml)
  local function as_other(name, fname)
    return function(t, other)
      check_tensor(t, 1, fname)
      check_tensor(other, 2, fname)
      local ok, r = pcall(methods[name], t, other:size())
      if not ok then
        if type(r) == "string" and r:sub(1, #name + 1) == name .. ":" then
          r = fname .. r:sub(#name + 1)
        end
        raise(r)
      end
      return r
    end
  end
  def("expand_as", as_other("expand", "expand_as"), true)
  def("view_as", as_other("view", "view_as"), true)
  def("reshape_as", as_other("reshape", "reshape_as"), true)

  -- A dim argument of a Lua op: 1-based or negative against t's dims, as a 1-based number.
  local function wrap_dim(t, dim, fname)
    check_tensor(t, 1, fname, 1)
    local n = t:dim()
    if n == 0 then n = 1 end
    if math.type(dim) ~= "integer" or dim == 0 or dim > n or dim < -n then
      raise(string.format("%s: dim %s out of range for a %d-d tensor", fname, tostring(dim), t:dim()))
    end
    return dim < 0 and n + dim + 1 or dim
  end

  --- t:split(size, [dim]) or t:split({s1, s2, ...}, [dim]): a table of views of t along dim
  -- (default 1): pieces of `size` (the last may be smaller), or of the given sizes (which
  -- must add up to t:size(dim)). PyTorch torch.split returns a tuple; here, as in Torch7, a
  -- table (table.unpack it for several results; ltc.cat takes it back).
  def("split", function(t, size, dim)
    dim = wrap_dim(t, dim or 1, "split")
    local n, out, at = t:size(dim), {}, 1
    if type(size) == "table" then
      local total = 0
      for _, s in ipairs(size) do
        if math.type(s) ~= "integer" or s < 0 then raise("split: sizes must be integers >= 0") end
        total = total + s
      end
      if total ~= n then
        raise(string.format("split: sizes add up to %d, but dim %d has size %d", total, dim, n))
      end
      for i, s in ipairs(size) do out[i] = t:narrow(dim, at, s); at = at + s end
      return out
    end
    if math.type(size) ~= "integer" or size < 1 then
      if not (size == 0 and n == 0) then raise("split: size must be a positive integer") end
    end
    if n == 0 then return { t:narrow(dim, 1, 0) } end
    while at <= n do
      local s = math.min(size, n - at + 1)
      out[#out + 1] = t:narrow(dim, at, s)
      at = at + s
    end
    return out
  end, true)

  --- t:chunk(chunks, [dim]): t split along dim (default 1) into at most `chunks` views of
  -- ceil(size / chunks) elements (the last may be smaller; fewer chunks when they run out),
  -- as a table. PyTorch torch.chunk.
  def("chunk", function(t, chunks, dim)
    check_tensor(t, 1, "chunk")
    if math.type(chunks) ~= "integer" or chunks < 1 then
      raise("chunk: chunks must be a positive integer")
    end
    dim = wrap_dim(t, dim or 1, "chunk")
    local n = t:size(dim)
    if n == 0 then -- PyTorch: `chunks` empty pieces
      local out = {}
      for i = 1, chunks do out[i] = t:narrow(dim, 1, 0) end
      return out
    end
    return t:split(math.max((n + chunks - 1) // chunks, 1), dim)
  end, true)

  --- ltc.cat(tensors [, dim]): the generated cat, skipping empty 1-d tensors among others
  -- (PyTorch's legacy rule: torch.cat([tensor([]), ones(2, 3)], -2) is ones(2, 3)).
  local raw_cat = core.cat
  def("cat", function(tensors, ...)
    if type(tensors) == "table" and #tensors > 1 then
      local keep, skipped = {}, false
      for _, t in ipairs(tensors) do
        if core.is_tensor(t) and t:dim() == 1 and t:size(1) == 0 then skipped = true
        else keep[#keep + 1] = t end
      end
      if skipped and #keep > 0 then tensors = keep end
    end
    local r = call1(raw_cat, tensors, ...)
    return r
  end)

  -- A graph node takes at most 64 operands (ltc_trace): cat and stack of more tensors are a
  -- cat of the cats (stacks) of runs of 64, which autograd records like any ops, so an RNN
  -- over hundreds of steps can stack its outputs.
  local LIST_MAX = 64
  local function runs_of(list_op, tensors, dim)
    local pieces = {}
    for at = 1, #tensors, LIST_MAX do
      pieces[#pieces + 1] = list_op(table.move(tensors, at, math.min(at + LIST_MAX - 1, #tensors),
        1, {}), dim)
    end
    return core.cat(pieces, dim)
  end
  -- PyTorch's cat and stack compute in the result_type of their operands (uint8 with int8
  -- gives int16, float32 with float64 float64): the operands of another dtype are converted
  -- first (a copy of the list; anything not a tensor is left for the op to report).
  local function promoted(tensors)
    if type(tensors) ~= "table" then return tensors end
    local reps, seen = {}, {}
    for _, t in ipairs(tensors) do
      if not core.is_tensor(t) then return tensors end
      local dt = t:dtype()
      if not seen[dt] then seen[dt] = true; reps[#reps + 1] = t end
    end
    if #reps < 2 or #reps > 16 then return tensors end
    local dt = core.result_type(table.unpack(reps))
    local out = {}
    for i, t in ipairs(tensors) do out[i] = t:dtype() == dt and t or t:to(dt) end
    return out
  end

  local checked_cat = core.cat
  def("cat", function(tensors, dim, ...)
    tensors = promoted(tensors)
    if type(tensors) == "table" and #tensors > LIST_MAX and select("#", ...) == 0 then
      return runs_of(checked_cat, tensors, dim or 1)
    end
    return checked_cat(tensors, dim, ...)
  end)
  local raw_stack = core.stack
  --- ltc.stack(tensors [, dim]): the generated stack, for any number of tensors, of their
  -- result_type (as cat).
  def("stack", function(tensors, dim, ...)
    tensors = promoted(tensors)
    if type(tensors) == "table" and #tensors > LIST_MAX and select("#", ...) == 0 then
      return runs_of(raw_stack, tensors, dim or 1)
    end
    return raw_stack(tensors, dim, ...)
  end)

  ---------------------------------------------------------------------------------------
  -- masking: masked_fill keeps self's dtype; masked_select and nonzero have data-dependent
  -- sizes, so they sync (once, to count) and build the rest lazily from scatter

  local is_tensor, masked_fill = core.is_tensor, core.masked_fill
  local FLOAT = { float32 = true, float64 = true }
  --- t:masked_fill(mask, value): the op masked_fill with value (a number or 0-d tensor)
  -- first converted to t's dtype, as PyTorch does (an int tensor filled with 2.5 gets 2).
  def("masked_fill", function(t, mask, value, ...)
    if select("#", ...) > 0 then raise("masked_fill: expected 3 arguments") end
    if is_tensor(t) then
      local dt = t:dtype()
      if is_tensor(value) then
        if value:dtype() ~= dt then value = value:to(dt) end
      elseif type(value) == "number" and not FLOAT[dt] then
        core._check_value(value, dt, "masked_fill")
        value = core.full({}, value, dt)
      end
    end
    return masked_fill(t, mask, value)
  end, true)

  -- The broadcast size of two size tables (PyTorch's rule); an error naming fname otherwise.
  local function broadcast_size(a, b, fname)
    local n, out = math.max(#a, #b), {}
    for i = 1, n do
      local x, y = a[i - n + #a] or 1, b[i - n + #b] or 1
      if x ~= y and x ~= 1 and y ~= 1 then
        raise(string.format("%s: sizes {%s} and {%s} are not broadcastable", fname,
          table.concat(a, ","), table.concat(b, ",")))
      end
      out[i] = x == 1 and y or x
    end
    return out
  end

  -- The flat 1-based positions where flat bool tensor m is true, as an int64 tensor [n]: one
  -- sync for n = m:sum(), then out[rank] = position by scatter (the false positions go to a
  -- spare slot n + 1 that is cut off).
  local where = core.where
  local function true_positions(m, values)
    local n = m:sum():item()
    local rank = where(m, m:cumsum(1), n + 1)
    return core.zeros({ n + 1 }, values:dtype()):scatter(1, rank, values):narrow(1, 1, n)
  end

  --- t:masked_select(mask): a 1-d tensor of t's elements where mask (a bool tensor that
  -- broadcasts with t) is true, in row-major order. The result's size depends on the data:
  -- this SYNCS (it computes mask's count of true elements) and is not one graph with its
  -- inputs. PyTorch torch.masked_select.
  def("masked_select", function(t, mask, ...)
    if select("#", ...) > 0 then raise("masked_select: expected 2 arguments") end
    if not is_tensor(t) or not is_tensor(mask) then
      raise("masked_select: expected two tensors (self, mask)")
    end
    if mask:dtype() ~= "bool" then
      raise("masked_select: mask must be a bool tensor, got " .. mask:dtype())
    end
    local size = broadcast_size(t:size(), mask:size(), "masked_select")
    local m = mask:broadcast_to(size):reshape({ -1 })
    return true_positions(m, t:broadcast_to(size):reshape({ -1 }))
  end, true)

  --- t:nonzero(): the 1-based int64 coordinates [n, t:dim()] of t's nonzero elements (true,
  -- for bool), in row-major order. The result's size depends on the data: this SYNCS (it
  -- computes the count of nonzero elements). PyTorch torch.nonzero, plus 1.
  def("nonzero", function(t, ...)
    if select("#", ...) > 0 then raise("nonzero: expected 1 argument") end
    if not is_tensor(t) then raise("nonzero: expected a tensor") end
    local size, numel = t:size(), t:numel()
    local m = t:ne(0):reshape({ -1 })
    local pos = true_positions(m, core.arange(1, numel + 1, 1, "int64"))
    if #size == 0 then return core.zeros({ pos:size(1), 0 }, "int64") end
    local cols, stride = {}, numel
    for d = 1, #size do
      stride = size[d] == 0 and 1 or stride // size[d]
      cols[d] = (pos - 1) // stride % math.max(size[d], 1) + 1
    end
    return core.stack(cols, 2)
  end, true)

  ---------------------------------------------------------------------------------------
  -- rounding and reciprocal over the generated ops

  local floating = { float16 = true, bfloat16 = true, float32 = true, float64 = true }
  --- t:reciprocal(): 1 / t (an integer or bool tensor gives float32, 1 / 0 is inf, as
  -- PyTorch's torch.reciprocal).
  def("reciprocal", function(t)
    check_tensor(t, 1, "reciprocal")
    local r = call1(function() return 1 / t end)
    return r
  end, true)
  --- t:trunc(): t rounded toward zero (floor of a positive, ceil of a negative value; -0.5
  -- gives -0); an integer or bool tensor is returned as a copy (PyTorch's torch.trunc).
  local function trunc(t)
    check_tensor(t, 1, "trunc")
    if not floating[t:dtype()] then return t:clone() end
    return core.where(t:lt(0), t:ceil(), t:floor())
  end
  def("trunc", trunc, true)
  --- t:frac(): t - t:trunc(), the fractional part with t's sign (nan for +-inf); floating
  -- dtypes only, as PyTorch's torch.frac.
  def("frac", function(t)
    check_tensor(t, 1, "frac")
    if not floating[t:dtype()] then
      raise("frac: needs a floating tensor, got " .. t:dtype() .. " (PyTorch: frac is not implemented for integers)")
    end
    return t - trunc(t)
  end, true)

  -- Composite overloads (ops.yaml's `overload_of:` on a composite entry): the generated
  -- dispatcher of the name picks one by the table of its keywords after the positional
  -- arguments and calls core._overloads[<full name>] with the keywords' values in their places.

  --- div.Tensor_mode(t, other, rounding_mode), from t:div(other, {rounding_mode = ...}):
  -- "trunc" rounds the quotient toward zero (integers exactly, in integers; floats as div then
  -- trunc, cast back to the operands' result_type), "floor" down (floor_divide), nil not at
  -- all (div). An integer division by zero raises at the sync, naming div and the
  -- rounding_mode (its nodes are traced under div's op scope); bool operands raise at once
  -- (PyTorch has no bool kernel for either rounding). PyTorch's torch.div(input, other,
  -- rounding_mode=...).
  local div, floor_divide, div_trunc = core.div, core.floor_divide, core.div_trunc
  local result_type = core.result_type
  local div_labels = { floor = core._op_label("div", 'rounding_mode "floor"'),
    trunc = core._op_label("div", 'rounding_mode "trunc"') }
  core._overloads["div.Tensor_mode"] = function(t, other, rounding_mode)
    if rounding_mode == nil then return div(t, other) end
    if rounding_mode ~= "trunc" and rounding_mode ~= "floor" then
      raise("div: rounding_mode must be \"trunc\", \"floor\" or nil, got " .. tostring(rounding_mode))
    end
    local dt = result_type(t, other)
    if dt == "bool" then -- PyTorch: "div_trunc_cpu" not implemented for 'Bool'
      raise("div: rounding_mode \"" .. rounding_mode .. "\" is not implemented for bool operands "
        .. "(as in PyTorch; convert them with :long() or :float() first)")
    end
    local _ <close> = core._op_scope(div_labels[rounding_mode])
    if rounding_mode == "floor" then return floor_divide(t, other) end
    -- exactly, in integers, in one op (div_trunc; through float32 a quotient above 2^24
    -- lost its last bits)
    if dt == "int32" or dt == "int64" then return div_trunc(t, other) end
    local q = trunc(div(t, other))
    return q:dtype() == dt and q or q:to(dt)
  end

  ---------------------------------------------------------------------------------------
  -- normalisation: PyTorch's argument order and defaults over the ops

  local layer_norm, batch_norm = core.layer_norm, core.batch_norm
  --- ltc.layer_norm(x, normalized_shape [, weight [, bias [, eps]]]): normalized_shape a
  -- number or a table of the last dims of x; a nil weight is ones, a nil bias zeros; eps
  -- defaults to 1e-5. PyTorch nn.functional.layer_norm.
  def("layer_norm", function(x, normalized_shape, weight, bias, eps, ...)
    if select("#", ...) > 0 then raise("layer_norm: expected at most 5 arguments") end
    if type(normalized_shape) == "number" then normalized_shape = { normalized_shape } end
    if is_tensor(x) and type(normalized_shape) == "table" then
      if weight == nil then weight = core.ones(normalized_shape, x:dtype()) end
      if bias == nil then bias = core.zeros(normalized_shape, x:dtype()) end
    end
    if eps == nil then return layer_norm(x, normalized_shape, weight, bias) end
    return layer_norm(x, normalized_shape, weight, bias, eps)
  end, true)

  --- ltc.batch_norm(x, running_mean, running_var [, weight [, bias [, training [, momentum
  -- [, eps]]]]]): x [N, C, ...]; running statistics [C]; a nil weight is ones, a nil bias
  -- zeros; training false, momentum 0.1, eps 1e-5 by default. When training, x is normalised
  -- with the batch's statistics and running_mean and running_var are updated in place:
  -- (1 - momentum) * running + momentum * batch (the batch variance unbiased). PyTorch
  -- nn.functional.batch_norm.
  def("batch_norm", function(x, running_mean, running_var, weight, bias, training, momentum, eps, ...)
    if select("#", ...) > 0 then raise("batch_norm: expected at most 8 arguments") end
    training = training or false
    if momentum ~= nil and type(momentum) ~= "number" then
      raise("batch_norm: momentum must be a number, got " .. type(momentum))
    end
    if is_tensor(x) and x:dim() >= 2 then
      local c = x:size(2)
      if weight == nil then weight = core.ones({ c }, x:dtype()) end
      if bias == nil then bias = core.zeros({ c }, x:dtype()) end
    end
    local y = batch_norm(x, running_mean, running_var, weight, bias, training, eps or 1e-5)
    if training then
      momentum = momentum or 0.1
      local c = x:size(2)
      local xc = x:transpose(1, 2):reshape({ c, -1 })
      require("ltc.autograd").no_grad(function()
        running_mean:copy_(running_mean * (1 - momentum) + xc:mean(2) * momentum)
        running_var:copy_(running_var * (1 - momentum) + xc:var(2, true) * momentum)
      end)
    end
    return y
  end, true)

  ---------------------------------------------------------------------------------------
  -- creation from another tensor's size (and dtype, unless given)

  local function like(name, make)
    def(name, function(t, ...)
      if not is_tensor(t) then raise(name .. ": expected a tensor") end
      return make(t, ...)
    end)
  end
  --- ltc.zeros_like(t [, dtype]), ltc.ones_like(t [, dtype]), ltc.empty_like(t [, dtype]),
  -- ltc.rand_like(t [, dtype]), ltc.randn_like(t [, dtype]): the creation op with t's size
  -- and dtype (or dtype). ltc.full_like(t, value [, dtype]).
  --- t:clamp(min, max) of an integer or bool tensor with a bound that is a Lua float (2.5,
  -- 1e30, 2.0) is float32, as PyTorch's type promotion of a tensor with a float scalar
  -- (torch.tensor([5]).clamp(2.5) is tensor([5.])); integer bounds keep the dtype.
  -- An integer bound that self's integer dtype cannot hold raises (clamp: value -200 cannot
  -- be converted to int8 ...), as PyTorch; uint8 takes -255..-1 as 1..255.
  local raw_clamp = core.clamp
  local INTS = { int8 = true, int16 = true, int32 = true, int64 = true, uint8 = true }
  local FLOATING = { float16 = true, bfloat16 = true, float32 = true, float64 = true }
  if raw_clamp then
    local function clamp(t, min, max, ...)
      local dt = is_tensor(t) and t:dtype()
      if dt and not FLOATING[dt] and (math.type(min) == "float" or math.type(max) == "float") then
        t = core.to(t, "float32")
      elseif INTS[dt] then -- PyTorch converts integer bounds to self's dtype, checked
        if math.type(min) == "integer" then
          core._check_value(min, dt, "clamp")
          if dt == "uint8" and min < 0 then min = min + 256 end -- c10 wraps -1 to 255
        end
        if math.type(max) == "integer" then
          core._check_value(max, dt, "clamp")
          if dt == "uint8" and max < 0 then max = max + 256 end
        end
      end
      return raw_clamp(t, min, max, ...)
    end
    def("clamp", clamp, methods.clamp ~= nil)
    require("ltc.help").wraps[clamp] = raw_clamp
  end
  -- ltc.full: a fill value the dtype cannot hold raises at the call, as in PyTorch (the value
  -- is a graph parameter, checked again when the graph runs).
  local raw_full = core.full
  if raw_full then
    core.full = function(size, value, dtype, ...)
      core._check_value(value, dtype, "full")
      return raw_full(size, value, dtype, ...)
    end
    require("ltc.help").wraps[core.full] = raw_full
  end
  like("zeros_like", function(t, dtype) return core.zeros(t:size(), dtype or t:dtype()) end)
  like("ones_like", function(t, dtype) return core.ones(t:size(), dtype or t:dtype()) end)
  like("empty_like", function(t, dtype) return core.empty(t:size(), dtype or t:dtype()) end)
  like("rand_like", function(t, dtype) return core.rand(t:size(), dtype or t:dtype()) end)
  like("randn_like", function(t, dtype) return core.randn(t:size(), dtype or t:dtype()) end)
  like("full_like", function(t, value, dtype)
    return core.full(t:size(), value, dtype or t:dtype())
  end)

  --- int_tensor ^ n, t:pow(n), ltc.pow(t, n) with a negative Lua integer n and an integer
  -- or bool tensor t raise, as PyTorch's "Integers to negative integer powers are not
  -- allowed" (a tensor exponent computes, as PyTorch: 2 ^ -1 is 0 there).
  local function pow_checked(raw)
    return function(a, b, ...)
      if math.type(b) == "integer" and b < 0 and is_tensor(a) then
        local dt = a:dtype()
        if not (dt == "float32" or dt == "float64" or dt == "float16" or dt == "bfloat16") then
          raise(string.format("pow: integers to negative integer powers are not allowed (%s "
            .. "tensor ^ %d, as in PyTorch; use a float tensor)", dt, b))
        end
      end
      return raw(a, b, ...)
    end
  end
  --- a - b, t:sub(b), ltc.sub(a, b) with a bool tensor on either side raise, as PyTorch's
  -- "Subtraction, the `-` operator, with a bool tensor is not supported" (a Lua number is
  -- promoted first, so the generated shape rule alone sees only bool - bool).
  local any_bool = core._any_bool
  local function sub_checked(raw)
    return function(a, b, ...)
      if any_bool(a, b) then
        raise("sub: subtraction with a bool tensor is not supported, as in PyTorch (use "
          .. "logical_xor for two masks, logical_not to invert one)")
      end
      return raw(a, b, ...)
    end
  end
  -- Replaces op `name` (function, method and the metamethods that ops.yaml's `operator:` key
  -- binds to it, found as the tensor metatable's entries holding its binding) by check(raw).
  local mt = core.metatable
  local function guard(name, check)
    local raw = core[name]
    local fn = check(raw)
    core[name] = fn
    if methods[name] == raw then methods[name] = fn
    elseif methods[name] then methods[name] = check(methods[name]) end
    for k, v in pairs(mt) do
      if v == raw and type(k) == "string" and k:sub(1, 2) == "__" then mt[k] = fn end
    end
  end
  guard("pow", pow_checked)
  guard("sub", sub_checked)
end

return M
