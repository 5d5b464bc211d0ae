--- ltc.nn's module machinery (PyTorch's nn.Module): nn.Module and nn.class, registration of
-- parameters, buffers and submodules on assignment, calls with forward hooks, traversal
-- (parameters, named_modules, ...), train/eval, zero_grad, dtype conversion (to, double,
-- float), state_dict/load_state_dict and describe (tostring). Added by lua/ltc/nn.lua:
-- require("ltc.nn_module")(nn, F).
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local ltc = require "ltc"

return function(nn, F)
  ---------------------------------------------------------------------------------------------
  -- modules

  --- nn.Module, the base class of every module (PyTorch's nn.Module): a module is a table
  -- with a forward(self, ...) method, and calling it calls forward (with its hooks);
  -- assigning a tensor that requires grad registers a parameter, a module a child. Make one
  -- with nn.class(name [, parent]) and an __init; see README, "Writing a module".
  local Module = {}
  Module.__index = Module
  nn.Module = Module

  -- A module instance keeps its registered parameters, buffers and submodules out of its own
  -- fields, in m._slots (name -> value), with their names in registration order in m._params,
  -- m._buffers and m._modules; m.name finds them through the class's __index. So every
  -- assignment to a registered name goes through __newindex, as PyTorch's __setattr__ does.

  --- nn.is_module(v): true when v is an ltc.nn module instance.
  local function is_module(v)
    return type(v) == "table" and type(rawget(v, "_slots")) == "table"
      and type(v.forward) == "function"
  end
  nn.is_module = is_module

  -- A parameter to register on assignment: a leaf tensor that requires grad (PyTorch's
  -- nn.Parameter). nn.Parameter(t) marks t so (t:requires_grad_()) and returns it.
  local function is_param(v)
    return ltc.is_tensor(v) and v.requires_grad and v.is_leaf
  end
  function nn.Parameter(t, requires_grad)
    if not ltc.is_tensor(t) then raise("Parameter: a tensor expected, got " .. type(t)) end
    if requires_grad == false then return t end
    if not t.is_leaf then t = t:detach() end
    return t:requires_grad_()
  end

  local function remove_name(list, name)
    for i, n in ipairs(list) do
      if n == name then table.remove(list, i); return true end
    end
    return false
  end

  -- Which list of m holds name ("_params", "_buffers", "_modules"), or nil.
  local function kind_of(m, name)
    for _, kind in ipairs { "_params", "_buffers", "_modules" } do
      for _, n in ipairs(rawget(m, kind)) do if n == name then return kind end end
    end
    return nil
  end

  local function class_name(m)
    return ((getmetatable(m).__name or "Module"):gsub("^ltc%.nn%.", ""))
  end

  -- m.name = v: a module registers as a submodule, a leaf tensor that requires grad as a
  -- parameter; assigning to a registered name replaces the value (nil keeps the name, as
  -- PyTorch's `self.bias = None`); a value of another kind unregisters it. Anything else is a
  -- plain field.
  local function module_newindex(self, k, v)
    if math.type(k) == "integer" and kind_of(self, tostring(k)) then k = tostring(k) end
    local slots = rawget(self, "_slots")
    local kind = type(k) == "string" and kind_of(self, k)
    if kind == "_modules" and (v == nil or is_module(v)) then slots[k] = v; return end
    if kind == "_params" and (v == nil or ltc.is_tensor(v)) then
      if v ~= nil and not v.requires_grad then v = nn.Parameter(v) end
      if v ~= nil then ltc.debug.tag(v, class_name(self) .. "." .. k) end
      slots[k] = v
      return
    end
    if kind == "_buffers" and (v == nil or ltc.is_tensor(v)) then slots[k] = v; return end
    if kind then remove_name(rawget(self, kind), k); slots[k] = nil end
    if type(k) == "string" and is_module(v) then
      self:add_module(k, v)
    elseif type(k) == "string" and is_param(v) then
      self:register_parameter(k, v)
    else
      rawset(self, k, v)
    end
  end

  local core_ = require "ltc.core"
  local scope_enter = core_.debug_scope_enter

  -- m(...): forward, with the hooks of register_forward_pre_hook / register_forward_hook. With
  -- LTC_IR_DEBUG=1 the core notes the module that runs, so a node's source line names it
  -- ("train.lua:12 in 1.fc (Linear)"; src/lua/ltc_debug.c).
  local function module_call(self, ...)
    scope_enter(self)
    local pre, post = rawget(self, "_forward_pre_hooks"), rawget(self, "_forward_hooks")
    if not pre and not post then return self:forward(...) end
    local args = table.pack(...)
    for _, h in ipairs(pre or {}) do
      local r = h.fn(self, args)
      if r ~= nil then args = type(r) == "table" and not ltc.is_tensor(r) and r or { r, n = 1 } end
    end
    local out = table.pack(self:forward(table.unpack(args, 1, args.n or #args)))
    for _, h in ipairs(post or {}) do
      if out.n > 1 then -- several results (an LSTM's y, {h, c}): PyTorch's output tuple
        local r = h.fn(self, args, out)
        if r ~= nil then
          if type(r) ~= "table" or ltc.is_tensor(r) then
            raise(string.format("a forward hook of a module with %d results must return nil or a "
              .. "table of them (as PyTorch's output tuple), got %s", out.n,
              ltc.is_tensor(r) and "a tensor" or type(r)))
          end
          out = r.n and r or table.pack(table.unpack(r))
        end
      else
        local r = h.fn(self, args, out[1])
        if r ~= nil then out[1] = r end
      end
    end
    return table.unpack(out, 1, out.n)
  end

  -- A module runs on its input's device: ltc.follow's rule, inlined here so that a module call
  -- is one Lua frame when the input is where new tensors go already (every step's path).
  local follow_args, device_guard = core_._follow_args, core_._device_guard
  local function finish(prev, ok, ...)
    device_guard(prev)
    if not ok then raise((...)) end
    return ...
  end
  local function call_module(self, ...)
    local moved, prev = follow_args(self, ...)
    if moved then return finish(prev, pcall(module_call, self, ...)) end
    if rawget(self, "_forward_pre_hooks") or rawget(self, "_forward_hooks") then
      return module_call(self, ...)
    end
    scope_enter(self)
    return self:forward(...)
  end

  -- a hook handle: handle:remove() takes the hook out of its list
  local function add_hook(self, field, fn, what)
    if type(fn) ~= "function" then raise(what .. ": a function expected, got " .. type(fn)) end
    local list = rawget(self, field)
    if not list then list = {}; rawset(self, field, list) end
    local h = { fn = fn }
    list[#list + 1] = h
    return { remove = function()
      for i, x in ipairs(list) do if x == h then table.remove(list, i); break end end
      if #list == 0 then rawset(self, field, nil) end
    end }
  end

  --- nn.class(name [, parent]): a module class; calling it makes an instance and runs __init.
  -- In __init, `self.fc = nn.Linear(...)` registers a submodule and `self.w =
  -- nn.Parameter(t)` a parameter (see "Writing a module" in the README).
  function nn.class(name, parent)
    if type(name) ~= "string" then
      raise("nn.class: bad argument #1 (the class name, a string, expected, got " .. type(name) .. ")")
    end
    if parent ~= nil and not (type(parent) == "table" and rawget(parent, "__index")) then
      raise("nn.class: bad argument #2 (a module class to derive from expected, got "
        .. ltc.typename(parent) .. ")")
    end
    local cls = {}
    -- class members first, then registered parameters, buffers and submodules; m[i] is the
    -- child named tostring(i) (Sequential's m[1])
    cls.__index = function(self, k)
      local v = cls[k]
      if v ~= nil then return v end
      local slots = rawget(self, "_slots")
      v = slots[k]
      if v == nil and math.type(k) == "integer" then return slots[tostring(k)] end
      return v
    end
    cls.__newindex = module_newindex
    cls.__len = function(self) return #rawget(self, "_modules") end
    cls.__name = "ltc.nn." .. name
    cls.__call = call_module -- on its input's device (ltc.follow's rule)
    cls.__tostring = function(self) return self:describe() end
    return setmetatable(cls, {
      __index = parent or Module,
      __call = function(c, ...)
        local o = setmetatable({ _params = {}, _buffers = {}, _modules = {}, _slots = {},
          training = true }, c)
        o:__init(...)
        return o
      end,
    })
  end

  function Module:__init() end

  --- m:register_forward_hook(fn): after every call m(...), fn(m, inputs, output) runs (inputs:
  -- the arguments as a table with n); a non-nil result replaces the output. A module with
  -- several results (nn.LSTM's y, {h, c}; MultiheadAttention's output and weights) passes
  -- them as one table with n, PyTorch's output tuple, and a hook's table replaces them all. m:register_forward_pre_hook(fn): before every call, fn(m, inputs); a non-nil
  -- result replaces the arguments (a table of them, or one tensor). Both return a handle whose
  -- remove() takes the hook off (PyTorch's RemovableHandle).
  function Module:register_forward_hook(fn)
    return add_hook(self, "_forward_hooks", fn, "register_forward_hook")
  end
  function Module:register_forward_pre_hook(fn)
    return add_hook(self, "_forward_pre_hooks", fn, "register_forward_pre_hook")
  end

  --- m:register_parameter(name, t): t (a float tensor, or nil for an absent one such as a
  -- bias=false Linear's bias) becomes a parameter: a leaf that requires grad, found as m[name],
  -- listed by parameters() and state_dict(). It is tagged "Class.name" ("Linear.weight") for
  -- ltc.debug's drawings (render's `names = model` gives the full path, "1.weight").
  function Module:register_parameter(name, t)
    if t ~= nil then t = ltc.debug.tag(nn.Parameter(t), class_name(self) .. "." .. name) end
    local kind = kind_of(self, name)
    if kind ~= "_params" then
      if kind then remove_name(self[kind], name) end
      self._params[#self._params + 1] = name
    end
    self._slots[name] = t
    return t
  end

  --- m:register_buffer(name, t): t (a tensor that is not trained, such as BatchNorm's running
  -- statistics) is stored as m[name], listed by buffers() and saved by state_dict().
  function Module:register_buffer(name, t)
    if t ~= nil and not ltc.is_tensor(t) then
      raise(string.format("%s: buffer %s must be a tensor or nil, not %s", class_name(self), name,
        type(t)))
    end
    local kind = kind_of(self, name)
    if kind ~= "_buffers" then
      if kind then remove_name(self[kind], name) end
      self._buffers[#self._buffers + 1] = name
    end
    self._slots[name] = t
    return t
  end

  --- m:add_module(name, child): child is stored as m[name] and its parameters are m's.
  -- Raises "<owner>: module <name> is a <type>, not an ltc.nn module" unless child is a module;
  -- `level` as error()'s, counted from the caller of check_module.
  local function check_module(owner, name, child, level)
    if not is_module(child) then
      raise(string.format("%s: module %s is a %s, not an ltc.nn module", class_name(owner), name,
        type(child)))
    end
  end

  function Module:add_module(name, child)
    check_module(self, name, child, 2)
    local kind = kind_of(self, name)
    if kind ~= "_modules" then
      if kind then remove_name(self[kind], name) end
      self._modules[#self._modules + 1] = name
    end
    self._slots[name] = child
    return child
  end

  --- m:named_children(): list of {name, module} of the direct submodules, in order.
  function Module:named_children()
    local out = {}
    for _, n in ipairs(self._modules) do
      local c = self._slots[n]
      if c ~= nil then out[#out + 1] = { n, c } end
    end
    return out
  end

  --- m:children(): the direct submodules in order.
  function Module:children()
    local cs = {}
    for i, nc in ipairs(self:named_children()) do cs[i] = nc[2] end
    return cs
  end

  --- m:named_modules(): list of {name, module}: m itself (name "") and every submodule, depth
  -- first, each once (PyTorch's order).
  function Module:named_modules(prefix, out, seen)
    out, seen, prefix = out or {}, seen or {}, prefix or ""
    if seen[self] then return out end
    seen[self] = true
    out[#out + 1] = { prefix, self }
    for _, nc in ipairs(self:named_children()) do
      nc[2]:named_modules(prefix == "" and nc[1] or prefix .. "." .. nc[1], out, seen)
    end
    return out
  end

  --- m:modules(): m and all its submodules (depth first), as named_modules without names.
  function Module:modules()
    local ms = {}
    for i, nm in ipairs(self:named_modules()) do ms[i] = nm[2] end
    return ms
  end

  -- {name, tensor} pairs of the `kind` list ("_params" or "_buffers") of m and its submodules.
  local function named_tensors(m, kind, prefix, out, seen)
    for _, n in ipairs(m[kind]) do
      local t = m._slots[n]
      if t ~= nil and not seen[t] then
        seen[t] = true
        out[#out + 1] = { prefix .. n, t }
      end
    end
    for _, nc in ipairs(m:named_children()) do
      named_tensors(nc[2], kind, prefix .. nc[1] .. ".", out, seen)
    end
    return out
  end

  --- m:named_parameters(): list of {name, tensor} with dotted names ("1.weight"), in
  -- registration order, submodules depth first; a tensor shared by two modules once.
  function Module:named_parameters(prefix)
    return named_tensors(self, "_params", prefix or "", {}, {})
  end

  --- m:parameters(): the parameter tensors, in the order of named_parameters.
  function Module:parameters()
    local ps = {}
    for i, np in ipairs(self:named_parameters()) do ps[i] = np[2] end
    return ps
  end

  --- m:named_buffers() / m:buffers(): as named_parameters / parameters, for the buffers.
  function Module:named_buffers(prefix)
    return named_tensors(self, "_buffers", prefix or "", {}, {})
  end
  function Module:buffers()
    local bs = {}
    for i, nb in ipairs(self:named_buffers()) do bs[i] = nb[2] end
    return bs
  end

  --- m:apply(fn): calls fn(module) for every submodule (children first) and then m (PyTorch's
  -- order, as used for custom initialisation); returns m.
  function Module:apply(fn)
    for _, c in ipairs(self:children()) do c:apply(fn) end
    fn(self)
    return self
  end

  --- m:clone(): a deep copy of m (PyTorch's copy.deepcopy(m); Torch7's m:clone() without
  -- its arguments that share parameters): the same class, submodules, plain fields,
  -- training mode and hooks, each parameter and buffer copied into a new tensor with the
  -- same values (a parameter a new leaf that requires grad, without a .grad, as PyTorch's
  -- Parameter.__deepcopy__). Writes to the copy never reach m, nor the other way round. A
  -- tensor or table reached twice (weights shared by two submodules) is copied once, so
  -- the copy shares it the same way. Modules, tensors and tables without a metatable are
  -- copied; functions, userdata and other objects are shared.
  function Module:clone()
    local memo, tags = {}, ltc.debug.tags
    local function copy(v)
      if memo[v] ~= nil then return memo[v] end
      if ltc.is_tensor(v) then
        local c = ltc.no_grad(function() return v:detach():clone() end)
        if v.requires_grad and v.is_leaf then c:requires_grad_() end
        if tags[v] then ltc.debug.tag(c, tags[v]) end
        memo[v] = c
        return c
      end
      if type(v) ~= "table" or not (getmetatable(v) == nil or is_module(v)) then return v end
      local c = {}
      memo[v] = c
      for k, x in pairs(v) do rawset(c, copy(k), copy(x)) end
      return setmetatable(c, getmetatable(v))
    end
    return copy(self)
  end

  --- m:train([mode]) / m:eval(): training mode on (default) or off, for m and its children.
  function Module:train(mode)
    if mode == nil then mode = true end
    self.training = mode
    for _, c in ipairs(self:children()) do c:train(mode) end
    return self
  end

  function Module:eval() return self:train(false) end

  --- m:zero_grad(): every parameter's grad becomes nil.
  function Module:zero_grad()
    for _, p in ipairs(self:parameters()) do p.grad = nil end
  end

  local float_dtypes = { float32 = true, float64 = true, float16 = true, bfloat16 = true }

  --- m:to(dtype_or_device): every parameter and floating-point buffer converted by t:to(arg)
  -- (a dtype name such as "float64"; a device, where the tensor's `to` takes one).
  -- Parameters are converted in place, as PyTorch's `param.data = param.to(...)`: they keep
  -- their identity and requires_grad, so an optimizer made before the conversion updates
  -- them (its state made before stays where it was: a step then names the two devices);
  -- their grads are converted too. Buffers are replaced. Integer buffers keep their dtype. Returns m. m:double() and m:float() are m:to("float64") and
  -- m:to("float32").
  local int_dtypes = { uint8 = true, int8 = true, int16 = true, int32 = true, int64 = true, bool = true }
  function Module:to(arg)
    if int_dtypes[arg] then
      raise(string.format("Module.to: only floating dtypes (float32, float64, float16, bfloat16) "
        .. "convert a module, got %s (parameters must stay floating to require grad)", arg))
    end
    for _, m in ipairs(self:modules()) do
      for _, n in ipairs(m._params) do
        local p = m._slots[n]
        if p ~= nil then
          -- in place, as PyTorch's param.data = fn(param): the Parameter keeps its identity,
          -- so an optimizer made before m:to() updates the moved parameter (and its grad)
          local q = ltc.no_grad(function() return p:to(arg) end)
          if q ~= p then
            require("ltc.core")._set_data(p, q:detach())
            local g = p.grad
            if g ~= nil then p.grad = ltc.no_grad(function() return g:to(arg) end) end
          end
        end
      end
      for _, n in ipairs(m._buffers) do
        local b = m._slots[n]
        if b ~= nil and (float_dtypes[b:dtype()] or not float_dtypes[arg]) then
          m._slots[n] = b:to(arg)
        end
      end
    end
    return self
  end
  function Module:double() return self:to("float64") end
  function Module:float() return self:to("float32") end
  --- m:half(), m:bfloat16(): m:to("float16"), m:to("bfloat16") (as t:half(), t:bfloat16()).
  function Module:half() return self:to("float16") end
  function Module:bfloat16() return self:to("bfloat16") end

  -- {name, tensor} for every parameter and buffer of m and its submodules (parameters first,
  -- then buffers, each in named_parameters' order), every name of a tensor that two modules
  -- share (tied weights) included: state_dict's names.
  local function state_entries(m, prefix)
    local out = {}
    for _, kind in ipairs { "_params", "_buffers" } do
      for _, nm in ipairs(m:named_modules()) do
        local sub, pre = nm[2], nm[1] == "" and prefix or prefix .. nm[1] .. "."
        for _, n in ipairs(sub[kind]) do
          local t = sub._slots[n]
          if t ~= nil then out[#out + 1] = { pre .. n, t } end
        end
      end
    end
    return out
  end

  local state_dict_options = { destination = true, prefix = true, keep_vars = true }

  --- m:state_dict([{prefix = "", keep_vars = false, destination = nil}]): {name = tensor} for
  -- every parameter and buffer, with dotted names (prefix before each). As PyTorch's: a
  -- tensor shared by two modules (tied weights) is listed under each of its names; the
  -- values are detached (t:detach(): they share the parameter's storage, so they see later
  -- updates, and do not require grad) unless keep_vars, which gives the tensors themselves;
  -- destination, a table, is filled and returned instead of a new one.
  function Module:state_dict(opts)
    if opts ~= nil and type(opts) ~= "table" then
      raise("state_dict: bad argument #1 (an options table {prefix, keep_vars, destination} "
        .. "expected, got " .. ltc.typename(opts) .. ")")
    end
    opts = opts or {}
    for k in pairs(opts) do
      if not state_dict_options[k] then
        raise(string.format("state_dict: unknown option '%s' (known: destination, keep_vars, "
          .. "prefix)", tostring(k)))
      end
    end
    local prefix, sd = opts.prefix or "", opts.destination or {}
    if type(prefix) ~= "string" then
      raise("state_dict: prefix must be a string, got " .. ltc.typename(prefix))
    end
    if type(sd) ~= "table" then
      raise("state_dict: destination must be a table, got " .. ltc.typename(sd))
    end
    for _, e in ipairs(state_entries(self, prefix)) do
      sd[e[1]] = opts.keep_vars and e[2] or e[2]:detach()
    end
    return sd
  end

  --- m:load_state_dict(sd [, strict=true]): copies sd's tensors into the parameters and
  -- buffers in place (p:copy_(v) under no_grad, as PyTorch: each keeps its identity, dtype
  -- and device, so an optimizer made before sees the loaded values; v is cast to p's dtype
  -- and moved to p's device; sizes must match). With strict, missing or unexpected names are
  -- errors. A tensor shared by two modules (tied weights) has several names: any one of them
  -- loads it, and the others are then not missing (PyTorch would call them missing; they name
  -- the same tensor, so a checkpoint that saved one name loads). Every problem is named in one
  -- error (as PyTorch's "Error(s) in loading state_dict"), and then nothing is copied (PyTorch
  -- copies the rest first). Returns m, then the missing and the unexpected names (sorted
  -- lists: PyTorch's missing_keys, unexpected_keys).
  function Module:load_state_dict(sd, strict)
    if type(sd) ~= "table" then
      raise("load_state_dict: bad argument #1 (a state dict, a table of tensors, expected, got "
        .. ltc.typename(sd) .. ")")
    end
    if strict == nil then strict = true end
    local known, missing, unexpected, errors, copies = {}, {}, {}, {}, {}
    local entries, given = state_entries(self, ""), {}
    for _, e in ipairs(entries) do
      if sd[e[1]] ~= nil then given[e[2]] = true end
    end
    for _, np in ipairs(entries) do
      local name, p = np[1], np[2]
      known[name] = true
      local v = sd[name]
      if v == nil then
        if not given[p] then missing[#missing + 1] = name end
      elseif not ltc.is_tensor(v) then
        errors[#errors + 1] = string.format("'%s' is %s, not a tensor", name, ltc.typename(v))
      else
        local ps, vs = p:size(), v:size()
        local same = #ps == #vs
        for i = 1, #ps do same = same and ps[i] == vs[i] end
        if same then
          copies[#copies + 1] = { p, v }
        else
          errors[#errors + 1] = string.format("'%s' has size %s, the module's %s", name,
            table.concat(vs, "x"), table.concat(ps, "x"))
        end
      end
    end
    for name in pairs(sd) do
      if not known[name] then unexpected[#unexpected + 1] = tostring(name) end
    end
    table.sort(unexpected)
    local function quoted(names)
      local q = {}
      for i, n in ipairs(names) do q[i] = "'" .. n .. "'" end
      return (#names > 1 and "s " or " ") .. table.concat(q, ", ")
    end
    if strict and missing[1] then
      local name = missing[1]
      -- a PyTorch state dict numbers Sequential's and ModuleList's children from 0
      local zero = name:gsub("%f[%w](%d+)%f[%W]", function(d) return tostring(tonumber(d) - 1) end)
      local hint = zero ~= name and sd[zero] ~= nil and string.format(" (the state dict has '%s': "
        .. "ltc numbers the children of Sequential and ModuleList from 1, as Torch7, PyTorch "
        .. "from 0; add 1 to each number in its names)", zero) or ""
      -- a whole checkpoint (ltc.save(path, {model = m:state_dict(), opt = ...})) passed
      -- for the state dict it holds
      if hint == "" then
        local keys = {}
        for k, t in pairs(sd) do
          if type(t) == "table" and not ltc.is_tensor(t) and ltc.is_tensor(t[name]) then keys[#keys + 1] = k end
        end
        table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
        if keys[1] ~= nil then
          hint = string.format(" (the table holds it under '%s': a checkpoint? pass its state dict, "
            .. "such as ltc.load(path).%s)", tostring(keys[1]), tostring(keys[1]))
        end
      end
      errors[#errors + 1] = "missing parameter" .. quoted(missing) .. hint
    end
    if strict and unexpected[1] then errors[#errors + 1] = "unexpected parameter" .. quoted(unexpected) end
    if errors[1] then raise("load_state_dict: " .. table.concat(errors, "; ")) end
    ltc.no_grad(function()
      for _, c in ipairs(copies) do c[1]:copy_(c[2]) end
    end)
    table.sort(missing)
    return self, missing, unexpected
  end

  function Module:extra_repr() return "" end

  function Module:describe(indent)
    indent = indent or ""
    local name = class_name(self)
    local children = self:named_children()
    if #children == 0 then return name .. "(" .. self:extra_repr() .. ")" end
    local lines = { name .. "(" }
    local extra = self:extra_repr()
    if extra ~= "" then lines[#lines + 1] = indent .. "  " .. extra end
    for _, nc in ipairs(children) do
      lines[#lines + 1] = indent .. "  (" .. nc[1] .. "): " .. nc[2]:describe(indent .. "  ")
    end
    lines[#lines + 1] = indent .. ")"
    return table.concat(lines, "\n")
  end

  nn._private.check_module = check_module
end
