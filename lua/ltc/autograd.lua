--- ltc.autograd: reverse-mode automatic differentiation on the lazy graph.
--
-- The derivative formulas live in codegen/ops.yaml beside each op (`derivatives:`, as in
-- PyTorch's derivatives.yaml); the code generator turns them into gen/derivatives.lua, one
-- backward function per op. install() wraps every generated op function so that, when grad
-- mode is on and an input requires grad, the result gets a grad_fn node that remembers the
-- op and its arguments. t:backward() walks those nodes from t in reverse topological order
-- and calls the backward functions, which are ordinary ltc ops: backward builds lazy IR
-- like everything else, and nothing runs until a sync. A training step (forward, backward,
-- update) is therefore one graph, compiled once and then taken from the compile cache.
--
-- Tensor fields (computed, through the metatable's __getters/__setters):
--   t.requires_grad (settable on leaves), t.grad (settable: nil clears it), t.grad_fn,
--   t.is_leaf, t.data (a detached alias; setting it replaces t's value in place).
-- Methods: t:requires_grad_([flag]), t:backward([grad] [, {retain_graph = bool}]),
--   t:detach(), t:zero_grad() (t.grad = nil).
-- Functions: ltc.no_grad(fn, ...), ltc.enable_grad(fn, ...), ltc.is_grad_enabled(),
--   ltc.set_grad_enabled(flag), ltc.autograd.grad_fn_name(t).
--
-- In-place writes (t:add_(x), t:copy_(x), t:fill_(v), t[i] = v) give the written tensor the
-- history of its new value. A write through a view gives the view's base a CopySlices node
-- (PyTorch's): the base's old history outside the view, the written value's inside; the base's
-- other views take their history from the base's again when next used (PyTorch's version
-- counter). Writing into a leaf that requires grad, or a view of one, is an error naming the
-- op (use ltc.no_grad or t.data). t[i] of a tensor with 2 or more dims is select(1, i),
-- recorded as such. detach() shares storage but not history.
local A = {}

local type, select, pairs, ipairs, error = type, select, pairs, ipairs, error
local setmetatable, pcall, unpack, pack = setmetatable, pcall, table.unpack, table.pack
local math_type = math.type

local core          -- the ltc.core table (wrapped by install)
local module        -- the user-facing ltc module (set by export)
local D, O          -- gen/derivatives.lua: entries by full op name, overloads by Lua name
local grad_enabled = true
local FLOAT = { float32 = true, float64 = true }

-- Per-tensor autograd state, keyed weakly by the tensor userdata.
local REQ = setmetatable({}, { __mode = "k" })   -- t -> true: requires grad
local GRAD = setmetatable({}, { __mode = "k" })  -- t -> accumulated gradient
local FN = setmetatable({}, { __mode = "k" })    -- t -> edge {node, output index}
-- Views and in-place writes (PyTorch's version counters and CopySlices): a view's lineage,
-- {base = root tensor, chain = {{entry, args}, ...}, version = the base's version when the
-- view's history was last set} (detach() aliases: {base =, detached = true}); and each root's
-- count of in-place writes. A view whose base was written since gets its history again, as
-- the view ops of its chain applied to the base's new history.
local VIEW = setmetatable({}, { __mode = "k" })
local VERSION = setmetatable({}, { __mode = "k" })
-- root tensor -> the set of nodes whose saved arguments or results are it or its views: an
-- in-place write to the root first replaces them there by copies of their values (so
-- y:mul_(s) differentiates with y's old value, where PyTorch saves original_self).
local SAVERS = setmetatable({}, { __mode = "k" })

local function root_of(x)
  local w = VIEW[x]
  return w and w.base or x
end

local WEAK_KEYS = { __mode = "k" }

local function save_in(node, x)
  local w = VIEW[x]
  local r = w and w.base or x
  local set = SAVERS[r]
  if not set then set = setmetatable({}, WEAK_KEYS); SAVERS[r] = set end
  set[node] = true
end

---------------------------------------------------------------------------------------------
-- helpers for the formulas (F in ops.yaml)

local F = {}
A.F = F

local function ltc_() return module or core end

--- F.zeros_like(t): zeros of t's size and dtype.
function F.zeros_like(t) return core.zeros(t:size(), t:dtype()) end

--- F.unsqueeze(t, dim): t with a dim of size 1 inserted at (positive, 1-based) dim.
function F.unsqueeze(t, dim)
  if core.unsqueeze then return core.unsqueeze(t, dim) end
  local s = t:size()
  table.insert(s, dim, 1)
  return t:reshape(s)
end

--- F.expand_as(g, t): g broadcast to t's size.
function F.expand_as(g, t)
  if core.broadcast_to then return g:broadcast_to(t:size()) end
  return g + core.zeros(t:size(), g:dtype())
end

--- F.sum_to(g, size): g summed over the dims it was broadcast along, down to size.
local function sum_to(g, size)
  local gs = g:size()
  local nd, ni = #gs, #size
  local same = nd == ni
  if same then
    for i = 1, nd do if gs[i] ~= size[i] then same = false; break end end
  end
  if same then return g end
  for _ = 1, nd - ni do g = g:sum(1) end
  for i = 1, ni do
    if size[i] == 1 and g:size(i) ~= 1 then g = g:sum(i, true) end
  end
  return g
end
F.sum_to = sum_to

--- Gradient of sum(self, dim, keepdim) / mean: grad spread back over self's size.
function F.sum_backward(grad, self, dim, keepdim)
  if dim ~= nil and not keepdim and self:dim() > 0 then grad = F.unsqueeze(grad, dim) end
  return F.expand_as(grad, self)
end

function F.mean_backward(grad, self, dim, keepdim)
  local n = dim ~= nil and self:dim() > 0 and self:size(dim) or self:numel()
  return F.sum_backward(grad, self, dim, keepdim) / n
end

--- Gradient of max(self) (all elements): shared evenly among the maxima, as PyTorch
-- (evenly_distribute_backward); when the result is NaN, among the NaN elements. Masks select
-- (where), they never multiply, so an infinite or NaN gradient stays where it belongs.
function F.max_backward(grad, self, result)
  local mask = self:eq(result):logical_or(self:ne(self):logical_and(result:ne(result)))
  return core.where(mask, grad / mask:sum(), 0)
end

--- A 1-based int64 index along dim of t's shape (size 1 elsewhere), for index masks.
function F.positions(t, dim)
  local n = t:size(dim)
  local shape = {}
  for i = 1, t:dim() do shape[i] = i == dim and n or 1 end
  return core.arange(1, n + 1, 1, "int64"):reshape(shape)
end

--- Gradient of max.dim: grad at each returned index along dim, 0 elsewhere.
function F.index_dim_backward(grad, self, dim, keepdim, indices)
  if self:dim() == 0 then return grad end
  if not keepdim then
    grad = F.unsqueeze(grad, dim)
    indices = F.unsqueeze(indices, dim)
  end
  return core.where(F.positions(self, dim):eq(indices), grad, 0)
end

--- Gradients of matmul (PyTorch's rules: 1-d operands promoted, batch dims broadcast;
-- the engine sums batch dims back to each operand's shape).
function F.matmul_backward(grad, self, other, which)
  local sd, od = self:dim(), other:dim()
  if sd == 1 and od == 1 then return which == 1 and grad * other or grad * self end
  local s = sd == 1 and self:reshape({ 1, self:size(1) }) or self
  local o = od == 1 and other:reshape({ other:size(1), 1 }) or other
  local g = grad                                 -- [..., m, n] with m or n dropped
  if sd == 1 then g = F.unsqueeze(g, g:dim()) end  -- [..., n] -> [..., 1, n]
  if od == 1 then g = F.unsqueeze(g, g:dim() + 1) end -- [..., m] -> [..., m, 1]
  if which == 1 then
    local r = g:matmul(o:transpose(-1, -2))      -- [..., m, k]
    if sd == 1 then
      local sz = r:size(); table.remove(sz, #sz - 1); r = r:reshape(sz)
    end
    return r
  end
  local r = s:transpose(-1, -2):matmul(g)        -- [..., k, n]
  if od == 1 then
    local sz = r:size(); table.remove(sz); r = r:reshape(sz)
  end
  return r
end

--- Gradient of softmax / log_softmax along dim from the result.
function F.softmax_backward(grad, result, dim)
  return result * (grad - (grad * result):sum(dim, true))
end

function F.log_softmax_backward(grad, result, dim)
  return grad - result:exp() * grad:sum(dim, true)
end

--- Gradient of linear's weight: grad^T . self, with leading dims flattened.
function F.linear_weight_backward(grad, self)
  local out, inp = grad:size(-1), self:size(-1)
  local rows = 1
  for i = 1, grad:dim() - 1 do rows = rows * grad:size(i) end
  return grad:reshape({ rows, out }):t():matmul(self:reshape({ rows, inp }))
end

--- F.trunc(t): t rounded toward zero (for fmod's gradient).
function F.trunc(t) return core.where(t:ge(0), t:floor(), t:ceil()) end

--- Gradient of silu: grad * s * (1 + self * (1 - s)), s = sigmoid(self).
function F.silu_backward(grad, self)
  local s = self:sigmoid()
  return grad * s * (self * (1 - s) + 1)
end

--- Gradient of clamp: grad where min <= self <= max (bounds nil when absent), else 0.
function F.clamp_backward(grad, self, min, max)
  local keep
  if min ~= nil then keep = self:ge(min) end
  if max ~= nil then
    local le = self:le(max)
    keep = keep and keep:logical_and(le) or le
  end
  if keep == nil then return grad end
  return core.where(keep, grad, 0)
end

--- Gradient of minimum (is_min) or maximum with respect to self: 0 where other wins, half
-- of grad on ties, grad elsewhere, NaN operands included (PyTorch 1.13's masked_fill rule).
function F.minmax_backward(grad, self, other, is_min)
  local lose = is_min and self:gt(other) or self:lt(other)
  return core.where(lose, 0, core.where(self:eq(other), grad * 0.5, grad))
end

--- Gradients of pow(self, exponent) (either may be a Lua number), PyTorch's
-- pow_backward_self / pow_backward_exponent: 0 where exponent == 0 for self, and 0 where
-- self == 0 and exponent >= 0 for the exponent (not NaN from 0 * log 0).
function F.pow_backward_self(grad, self, exponent)
  if type(exponent) == "number" then
    if exponent == 0 then return grad * 0 end
    return grad * (exponent * self ^ (exponent - 1))
  end
  return core.where(exponent:eq(0), 0, grad * exponent * self ^ (exponent - 1))
end

function F.pow_backward_exponent(grad, self, exponent, result)
  if type(self) == "number" then
    if self == 0 then return core.where(exponent:ge(0), 0, grad * result * (-math.huge)) end
    return grad * result * math.log(self)
  end
  return core.where(self:eq(0):logical_and(exponent:ge(0)), 0, grad * result * self:log())
end

-- t with a size-1 dim inserted at dim when a reduction along dim dropped it (keepdim false).
local function keep(t, self, dim, keepdim)
  if dim ~= nil and not keepdim and self:dim() > 0 then return F.unsqueeze(t, dim) end
  return t
end

--- Gradient of prod: the product of the other elements, exact when self holds zeros (one
-- zero: only it gets a gradient; several: none).
function F.prod_backward(grad, self, dim, keepdim, result)
  grad, result = keep(grad, self, dim, keepdim), keep(result, self, dim, keepdim)
  if self:numel() == 0 then return F.zeros_like(self) end
  local zero = self:eq(0)
  local nz_self = core.where(zero, 1, self)
  local nz_prod, zeros
  if dim ~= nil and self:dim() > 0 then
    nz_prod, zeros = nz_self:prod(dim, true), zero:sum(dim, true)
  else
    nz_prod, zeros = nz_self:prod(), zero:sum()
  end
  local others = core.where(zeros:eq(0), nz_prod / nz_self,
    core.where(zeros:eq(1):logical_and(zero), nz_prod, 0))
  return grad * others
end

--- Gradient of var: grad * 2 (self - mean) / (n - 1 when unbiased, else n).
function F.var_backward(grad, self, dim, unbiased, keepdim)
  grad = keep(grad, self, dim, keepdim)
  local all = dim == nil or self:dim() == 0
  local n = all and self:numel() or self:size(dim)
  local mean = all and self:mean() or self:mean(dim, true)
  return grad * (self - mean) * (2 / (n - (unbiased and 1 or 0)))
end

--- Gradient of std: var's with grad / (2 std), 0 where std is 0 (PyTorch's std_backward).
function F.std_backward(grad, self, dim, unbiased, keepdim, result)
  return F.var_backward(core.where(result:eq(0), 0, grad / (2 * result)), self, dim, unbiased,
    keepdim)
end

--- Gradient of logsumexp: grad * exp(self - result).
function F.logsumexp_backward(grad, self, dim, keepdim, result)
  grad, result = keep(grad, self, dim, keepdim), keep(result, self, dim, keepdim)
  return grad * (self - result):exp()
end

--- Gradient of the p-norm (PyTorch's norm_backward): p = 2 self / norm, p = 1 sign(self),
-- p = +-inf the sign at the elements that reach the norm (shared evenly), p = 0 none,
-- otherwise self |self|^(p-2) / norm^(p-1); 0 where the norm is 0.
function F.norm_backward(grad, self, p, dim, keepdim, result)
  grad, result = keep(grad, self, dim, keepdim), keep(result, self, dim, keepdim)
  if p == 0 then return F.zeros_like(self) end
  if p == 1 then return grad * self:sign() end
  if p == math.huge or p == -math.huge then
    local hit = self:abs():eq(result)
    local count = (dim ~= nil and self:dim() > 0) and hit:sum(dim, true) or hit:sum()
    return core.where(hit, grad * self:sign() / count, 0)
  end
  local g
  if p == 2 then g = self / result
  else g = self * self:abs() ^ (p - 2) / result ^ (p - 1) end
  return core.where(result:eq(0), 0, grad * g)
end

--- Gradient of cumsum along dim: the reversed running sums of grad.
function F.cumsum_backward(grad, dim)
  if grad:dim() == 0 then return grad end
  return grad:sum(dim, true) - grad:cumsum(dim) + grad
end

--- Gradient of conv2d's bias: grad summed over all dims but the channel dim.
function F.conv2d_bias_backward(grad)
  local g, nd = grad, grad:dim()
  for d = nd, 1, -1 do
    if d ~= nd - 2 then g = g:sum(d) end
  end
  return g
end

--- The permutation that undoes permute(dims) of an n-d tensor (dims 1-based or negative).
function F.inverse_permutation(dims, n)
  local inv = {}
  for i, d in ipairs(dims) do
    if d < 0 then d = d + n + 1 end
    inv[d] = i
  end
  return inv
end

--- Gradients of cat(tensors, dim): the slices of grad along dim, in order (1-d empty tensors,
-- which cat skips, get empty gradients).
function F.cat_backward(grad, tensors, dim)
  local out, at = {}, 1
  for j, t in ipairs(tensors) do
    if t:dim() == 1 and t:size(1) == 0 and grad:dim() ~= 1 then
      out[j] = F.zeros_like(t)
    else
      local n = t:size(dim)
      out[j] = grad:narrow(dim, at, n)
      at = at + n
    end
  end
  return out
end

--- Gradients of stack(tensors, dim): grad selected at each position of the new dim.
function F.stack_backward(grad, tensors, dim)
  if dim < 0 then dim = dim + grad:dim() + 1 end
  local out = {}
  for j = 1, #tensors do out[j] = grad:select(dim, j) end
  return out
end

--- Gradient of repeat(self, repeats): grad [r1 s1, r2 s2, ...] viewed as [r1, s1, r2, s2,
-- ...] and summed over the repeat dims (leading repeats beyond self's dims summed away).
function F.repeat_backward(grad, self, repeats)
  local n, sd = #repeats, self:dim()
  local shape = {}
  for i = 1, n do
    local s = i > n - sd and self:size(i - (n - sd)) or 1
    shape[#shape + 1] = repeats[i]
    shape[#shape + 1] = s
  end
  -- one repeat dim at a time, the dims around it merged: at most 3 dims whatever n is (a
  -- view of all 2n dims at once would pass the 8-dim limit)
  local sizes = {}
  for i = 1, n do sizes[i] = shape[2 * i - 1] * shape[2 * i] end
  local g = grad
  for i = n, 1, -1 do
    local before, after = 1, 1
    for j = 1, i - 1 do before = before * sizes[j] end
    for j = i + 1, n do after = after * sizes[j] end
    g = g:reshape({ before, repeats[i], shape[2 * i] * after }):sum(2)
    sizes[i] = shape[2 * i]
  end
  return g:reshape(self:size())
end

--- Gradient of dropout: grad / (1 - p) at the kept elements, 0 elsewhere; the kept ones are
-- read from the result. Only reached for p 0 or 1 or not train: install() records dropout of
-- a tensor that requires grad as self * dropout(ones), which keeps the mask.
function F.dropout_backward(grad, self, result, p, train)
  if not train or p == 0 then return grad end
  if p >= 1 then return grad * 0 end
  return core.where(result:ne(0), grad / (1 - p), 0)
end

--- Gradients of layer_norm (which = "self" or "weight"; the bias's is grad, summed by the
-- engine): x^ = (x - mean) / sqrt(var + eps) over the normalized dims, and
-- dx = (dx^ - mean(dx^) - x^ mean(dx^ x^)) / sqrt(var + eps) with dx^ = grad * weight.
function F.layer_norm_backward(grad, self, normalized_shape, weight, eps, which)
  local s = self:size()
  local k, n, lead = #normalized_shape, 1, {}
  for i = 1, k do n = n * normalized_shape[i] end
  for i = 1, #s - k do lead[i] = s[i] end
  lead[#lead + 1] = n
  local xf = self:reshape(lead)
  local d = xf - xf:mean(-1, true)
  local rstd = ((d * d):mean(-1, true) + eps) ^ -0.5
  local xhat = d * rstd
  if which == "weight" then return grad * xhat:reshape(s) end
  local dxhat = (grad * weight):reshape(lead)
  return (rstd * (dxhat - dxhat:mean(-1, true) - xhat * (dxhat * xhat):mean(-1, true))):reshape(s)
end

--- Gradients of batch_norm (which = "self", "weight" or "bias") for self [N, C, ...]: with
-- the batch's statistics when training (as layer_norm's, over every dim but C), else with the
-- running ones (a per-channel affine map).
function F.batch_norm_backward(grad, self, running_mean, running_var, weight, training, eps, which)
  local nd, c = self:dim(), self:size(2)
  local shape = {}
  for i = 1, nd do shape[i] = i == 2 and c or 1 end
  local function red(t)   -- summed over every dim but 2, kept
    for d = nd, 1, -1 do if d ~= 2 then t = t:sum(d, true) end end
    return t
  end
  if which == "bias" then return red(grad):reshape({ c }) end
  local n = self:numel() // c
  local mean, var
  if training then
    mean = red(self) / n
    local d = self - mean
    var = red(d * d) / n
  else
    mean, var = running_mean:reshape(shape), running_var:reshape(shape)
  end
  local rstd = (var + eps) ^ -0.5
  local xhat = (self - mean) * rstd
  if which == "weight" then return red(grad * xhat):reshape({ c }) end
  local dxhat = grad * weight:reshape(shape)
  if not training then return dxhat * rstd end
  return rstd * (dxhat - red(dxhat) / n - xhat * red(dxhat * xhat) / n)
end

---------------------------------------------------------------------------------------------
-- recording
---------------------------------------------------------------------------------------------
-- recording

-- The entry of the overload that the generated dispatcher would call with these args.
local function pick(ov, ...)
  local n = select("#", ...)
  for i = 1, #ov - 1 do
    local r = ov[i][2]
    if r == 0 or (n >= r and select(r, ...) ~= nil) then return D[ov[i][1]] end
  end
  return D[ov[#ov][1]]
end

-- entry -> true when its arguments need no packing (no int... run) and no dim wrapping
local SIMPLE = setmetatable({}, { __mode = "k" })

local function simple_args(entry)
  local s = SIMPLE[entry]
  if s == nil then
    s = true
    for _, spec in ipairs(entry.args) do
      if spec[2] == "ints_varargs" or spec[2] == "dim" then s = false end
    end
    SIMPLE[entry] = s
  end
  return s
end

-- The arguments in schema order: runs of integers packed, defaults filled in, dims made
-- positive (1-based) against the first tensor's rank.
local function normalize(entry, ...)
  if simple_args(entry) then
    local a, args = { ... }, entry.args
    local n = #args
    for i = 1, n do if a[i] == nil then a[i] = args[i][3] end end
    for i = n + 1, select("#", ...) do a[i] = nil end
    return a
  end
  local a, pos, nd = {}, 1, nil
  for i, spec in ipairs(entry.args) do
    local kind, v = spec[2], (select(pos, ...))
    if kind == "ints_varargs" and type(v) == "number" then
      local t = {}
      while type(v) == "number" do
        t[#t + 1] = v
        pos = pos + 1
        v = (select(pos, ...))
      end
      a[i] = t
    else
      if v == nil then v = spec[3] end
      if kind == "dim" and type(v) == "number" and v < 0 then
        local r = nd or 0
        v = v + (r > 0 and r or 1) + 1
      end
      a[i] = v
      pos = pos + 1
    end
    if nd == nil then
      if kind == "tensor" and core.is_tensor(v) then nd = v:dim()
      elseif kind == "list" and type(v) == "table" and core.is_tensor(v[1]) then nd = v[1]:dim() end
    end
  end
  return a
end

-- True when t is a view whose base was written in place since t's history was set.
local function stale(t)
  local w = VIEW[t]
  return w ~= nil and not w.detached and w.version ~= (VERSION[w.base] or 0)
end

-- The Lua function of a generated op entry (the wrapped one: it records).
local function op_function(entry) return core[entry.name:match("^[^.]+")] end

-- x with the view ops of chain (from position i) applied, recorded when grad mode is on.
local function apply_chain(x, chain, i)
  for k = i or 1, #chain do
    local step = chain[k]
    local a = step.a
    x = op_function(step.entry)(x, unpack(a, 2, #step.entry.args))
  end
  return x
end

-- Gives a stale view the history of its chain applied to its base's current history.
local function refresh(t)
  if not grad_enabled then return end
  local w = VIEW[t]
  w.version = VERSION[w.base] or 0
  if REQ[w.base] or stale(w.base) then
    local x = apply_chain(w.base, w.chain)
    REQ[t], FN[t] = REQ[x], FN[x]
  else
    REQ[t], FN[t] = nil, nil
  end
end

local function edge_of(t)
  if stale(t) then refresh(t) end
  if not REQ[t] then return false end
  return FN[t] or { leaf = t }
end

-- The arguments' edges into a node: edges and needs per Tensor/Tensor[] argument; false when
-- no argument needs grad.
local function edges_of(entry, a)
  local needs, edges, any = {}, {}, false
  local k = 0
  for i, spec in ipairs(entry.args) do
    local kind = spec[2]
    if kind == "tensor" then
      k = k + 1
      local e = edge_of(a[i])
      edges[k], needs[k] = e, e and true or false
      any = any or e and true
    elseif kind == "list" then
      k = k + 1
      local v = a[i]
      if type(v) == "table" then
        local es, need = {}, false
        for j, t in ipairs(v) do es[j] = edge_of(t); need = need or es[j] and true end
        edges[k], needs[k] = es, need
        any = any or need
      else
        edges[k], needs[k] = false, false
      end
    end
  end
  return any and needs, edges
end

-- record() of an op with one output o (most ops): no table of outputs; a node's outs are
-- only needed to make a zero gradient for an output that got none, which a single output
-- never lacks.
local function record1(entry, o, ...)
  local a = normalize(entry, ...)
  local needs, edges = edges_of(entry, a)
  if not needs then return o end
  local node = { entry = entry, a = a, needs = needs, edges = edges }
  if core.is_tensor(o) and FLOAT[o:dtype()] then
    REQ[o] = true
    FN[o] = { node = node, nr = 1 }
  end
  if entry.save_result then a.result = { o } end
  for _, v in pairs(a) do
    if core.is_tensor(v) then save_in(node, v)
    elseif type(v) == "table" then
      for _, x in ipairs(v) do if core.is_tensor(x) then save_in(node, x) end end
    end
  end
  return o
end

-- Builds the node of one call and marks the differentiable outputs.
local function record(raw, ov, ...)
  local entry = pick(ov, ...)
  if not entry or entry.not_differentiable then return raw(...) end
  if entry.n_outputs == 1 then return record1(entry, raw(...), ...) end
  local outs = pack(raw(...))
  local a = normalize(entry, ...)
  local needs, edges, any = {}, {}, false
  local k = 0
  for i, spec in ipairs(entry.args) do
    local kind = spec[2]
    if kind == "tensor" or kind == "list" then
      k = k + 1
      local v = a[i]
      if kind == "tensor" then
        edges[k] = edge_of(v)
        needs[k] = edges[k] and true or false
      elseif type(v) == "table" then
        local es, need = {}, false
        for j, t in ipairs(v) do es[j] = edge_of(t); need = need or es[j] and true end
        edges[k], needs[k] = es, need
      else
        edges[k], needs[k] = false, false
      end
      any = any or needs[k]
    end
  end
  if not any then return unpack(outs, 1, outs.n) end
  local node = { entry = entry, a = a, needs = needs, edges = edges, outs = {} }
  for r = 1, outs.n do
    local o = outs[r]
    if core.is_tensor(o) then
      local dt = o:dtype()
      node.outs[r] = { o:size(), dt }
      if FLOAT[dt] then
        REQ[o] = true
        FN[o] = { node = node, nr = r }
      end
    end
  end
  if entry.save_result then a.result = { unpack(outs, 1, outs.n) } end
  for _, v in pairs(a) do
    if core.is_tensor(v) then save_in(node, v)
    elseif type(v) == "table" then
      for _, x in ipairs(v) do if core.is_tensor(x) then save_in(node, x) end end
    end
  end
  return unpack(outs, 1, outs.n)
end

-- The "file:line: " that luaL_error puts before errors raised in an op called from here.
local HERE = "^" .. debug.getinfo(1, "S").short_src:gsub("%p", "%%%0") .. ":%d+: "

-- Passes results through; re-raises an error at the op's caller (error level 2 from here,
-- which the wrapper tail-calls), so messages point at the user's line, not this file.
local function finish(ok, ...)
  if ok then return ... end
  local msg = ...
  if type(msg) == "string" then msg = msg:gsub(HERE, "", 1) end
  error(msg, 2)
end

-- Remembers that out is a view of src made by the op of ov with these arguments.
-- View ops that only change the sizes (their inverse is a reshape back).
local RESHAPE_LIKE = { view = true, reshape = true, flatten = true, squeeze = true,
  ["squeeze.dim"] = true, unsqueeze = true }

local function same_size(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

-- The last step of chain (a copy of a parent's chain, owned by the caller) and the new step
-- fused where they compose into one view op or none: reshapes into one reshape (none when it
-- gives back the sizes before them), narrows of one dim into one narrow, t of t and
-- transpose of the same transpose into nothing. So a view's record does not grow with the
-- views taken before it in these patterns (consuming a buffer with narrow, x = x:t() in a
-- loop, reshape chains).
local function append_step(chain, step, in_size, out_size)
  local n = #chain
  local last, name = chain[n], step.entry.name
  if RESHAPE_LIKE[name] then
    if last and last.in_size then
      chain[n] = nil
      if not same_size(last.in_size, out_size) then
        chain[n] = { entry = D.reshape, a = { false, out_size }, in_size = last.in_size }
      end
      return
    end
    step.in_size = in_size
  elseif last then
    local lname, la, a = last.entry.name, last.a, step.a
    if name == "narrow" and lname == "narrow" and la[2] == a[2] and math_type(la[3]) == "integer"
        and math_type(a[3]) == "integer" and la[3] > 0 and a[3] > 0 then
      chain[n] = { entry = last.entry, a = { false, a[2], la[3] + a[3] - 1, a[4] } }
      return
    end
    if (name == "t" and lname == "t") or (name == "transpose" and lname == "transpose"
        and ((la[2] == a[2] and la[3] == a[3]) or (la[2] == a[3] and la[3] == a[2]))) then
      chain[n] = nil
      return
    end
  end
  chain[n + 1] = step
end

-- Remembers that out is a view of src made by the op of ov with these arguments. The steps
-- keep the op's arguments but not src (a[1]), so no intermediate view is kept alive.
local function track_view(out, ov, src, ...)
  if not (core.is_tensor(out) and core.is_tensor(src)) then return end
  local entry = pick(ov, src, ...)
  local parent = VIEW[src]
  local base, chain = src, {}
  if parent and not parent.detached then
    base = parent.base
    for k, step in ipairs(parent.chain) do chain[k] = step end
  end
  local a = normalize(entry, src, ...)
  a[1] = false
  local step = { entry = entry, a = a }
  if RESHAPE_LIKE[entry.name] then append_step(chain, step, src:size(), out:size())
  else append_step(chain, step) end
  VIEW[out] = { base = base, chain = chain, version = VERSION[base] or 0 }
end

--- The number of view steps autograd keeps for t (0 when t is no view): for tests.
function A.view_steps(t)
  local w = VIEW[t]
  return w and w.chain and #w.chain or 0
end

-- Calls the op, recording it when grad mode is on and an argument requires grad (or is a
-- view whose history must be brought up to date).
local function call(raw, ov, ...)
  if grad_enabled then
    for i = 1, select("#", ...) do
      local v = (select(i, ...))
      if REQ[v] or stale(v) then return record(raw, ov, ...) end
      if type(v) == "table" then
        for _, t in ipairs(v) do
          if REQ[t] or stale(t) then return record(raw, ov, ...) end
        end
      end
    end
  end
  return raw(...)
end

-- A copy of function f without line information, sharing f's upvalues. luaL_error puts its
-- caller's "file:line: " before a message: for an op called through a stripped wrapper there
-- is none, rather than a line of this file (the wrapper calls the op without a pcall).
local function without_lines(f)
  local g = load(string.dump(f, true), "=ltc", "b")
  for i = 1, math.huge do
    if not debug.getupvalue(f, i) then break end
    debug.upvaluejoin(g, i, f, i)
  end
  return g
end

-- A wrapper of one generated op function: cheap when no argument requires grad.
local function wrap(raw, ov)
  local is_view = false
  for _, o in ipairs(ov) do is_view = is_view or (D[o[1]] and D[o[1]].view) or false end
  if is_view then
    return function(...)
      local ok, out = pcall(call, raw, ov, ...)
      if ok then track_view(out, ov, ...); return out end
      return finish(false, out)
    end
  end
  -- the path of calls with an argument that requires grad, is a view (stale needs a VIEW
  -- entry) or is a table; core._wrap_op calls raw directly for the others
  local slow = without_lines(function(...)
    if grad_enabled then
      for i = 1, select("#", ...) do
        local v = (select(i, ...))
        if REQ[v] or stale(v) then return finish(pcall(record, raw, ov, ...)) end
        if type(v) == "table" then
          for _, t in ipairs(v) do
            if REQ[t] or stale(t) then return finish(pcall(record, raw, ov, ...)) end
          end
        end
      end
    end
    return raw(...)
  end)
  return core._wrap_op(raw, slow, REQ, VIEW)
end

---------------------------------------------------------------------------------------------
-- in-place writes

-- The inverse of one view step: src written into whole (the step's input), as a new tensor.
local SCATTER = {
  narrow = function(whole, src, a) return whole:narrow_scatter(src, a[2], a[3]) end,
  select = function(whole, src, a) return whole:select_scatter(src, a[2], a[3]) end,
  transpose = function(_, src, a) return src:transpose(a[2], a[3]) end,
  t = function(_, src) return src:t() end,
  permute = function(whole, src, a) return src:permute(F.inverse_permutation(a[2], whole:dim())) end,
}
for _, name in ipairs { "view", "reshape", "flatten", "squeeze", "squeeze.dim", "unsqueeze" } do
  SCATTER[name] = function(whole, src) return src:reshape(whole:size()) end
end
A.SCATTER = SCATTER

-- whole with src written through the view chain (from position i).
local function scatter_chain(whole, chain, i, src)
  if i > #chain then return src end
  local step = chain[i]
  local inner = apply_chain(whole, { step })
  return SCATTER[step.entry.name](whole, scatter_chain(inner, chain, i + 1, src), step.a)
end

-- The backward of a write through a view (PyTorch's CopySlices): the base's new value is its
-- old value with the view's elements replaced by src.
local function copy_slices_entry(chain, view_size, view_dtype)
  return {
    name = "copy_slices",
    args = { { "self", "tensor" }, { "src", "tensor" } },
    n_outputs = 1,
    formulas = { true, true },
    backward = function(_, grads, needs)
      local g, out = grads[1], {}
      if needs[1] then out[1] = scatter_chain(g, chain, 1, core.zeros(view_size, view_dtype)) end
      if needs[2] then out[2] = apply_chain(g, chain) end
      return out
    end,
  }
end

-- The backward of an in-place write of a value that needs no grad: zeros for the old value.
local OVERWRITE = {
  name = "overwrite",
  args = { { "self", "tensor" } },
  n_outputs = 1,
  formulas = { true },
  backward = function(a) return { F.zeros_like(a[1]) } end,
}

-- Size and dtype of a tensor as it is now (a tensor written in place keeps neither value).
local function shape_of(t)
  local size, dtype = t:size(), t:dtype()
  return { size = function() return size end, dtype = function() return dtype end }
end

-- Before an in-place write to root: the tensors that live nodes saved and that the write
-- changes (root and its views) are replaced in those nodes by copies of their values.
local function preserve(root)
  local set = SAVERS[root]
  if not set then return end
  SAVERS[root] = nil
  local prev = grad_enabled
  grad_enabled = false
  -- a copy keeps x's history (PyTorch's SavedVariable keeps its grad_fn), so a backward with
  -- create_graph differentiates through the saved value too
  local function copy(x)
    if core.is_tensor(x) and root_of(x) == root then
      grad_enabled = prev
      local e = prev and edge_of(x)
      grad_enabled = false
      local c = core.to(x, x:dtype())
      if e then REQ[c], FN[c] = true, e end
      return c, true
    end
    return x, false
  end
  local ok, err = pcall(function()
    for node in pairs(set) do
      local a = node.a
      if a then
        for i, x in pairs(a) do
          if core.is_tensor(x) then a[i] = copy(x)
          elseif type(x) == "table" then
            local list, changed = {}, false
            for j, y in pairs(x) do
              local c, did = copy(y)
              list[j], changed = c, changed or did
            end
            if changed then a[i] = list end
          end
        end
      end
    end
  end)
  grad_enabled = prev
  if not ok then error(err, 0) end
end

local LEAF_MSG = "%s: a %s that requires grad is used in an in-place operation (use ltc.no_grad, "
  .. "or t.data)"

-- An in-place write of v (a tensor or number, already of t's size unless broadcast) into t
-- by raw(t, v); name is the op for messages. Gives t, or t's base if t is a view, the new
-- history; views of the base written since are given theirs when next used.
local function inplace(name, raw, t, v)
  local w = VIEW[t]
  local base = (w and w.base) or t
  if not grad_enabled then
    preserve(base)
    raw(t, v)
    VERSION[base] = (VERSION[base] or 0) + 1
    return t
  end
  if stale(t) then refresh(t) end
  -- integer and bool tensors never require grad, whatever is written into them
  local vreq = FLOAT[t:dtype()] and core.is_tensor(v) and (REQ[v] or stale(v)) and edge_of(v)
    and true
  -- a detached alias (PyTorch's non-differentiable view) takes its own history, as a tensor
  -- that is no view; its base's version still counts the write
  if w and w.detached then w = nil end
  if not w then
    if REQ[t] and not FN[t] then error(string.format(LEAF_MSG, name, "leaf tensor"), 3) end
    local nv = v
    if vreq then  -- the written value with t's size and dtype, recorded
      local ts, vs = t:size(), v:size()
      local same = #ts == #vs
      for i = 1, #ts do same = same and ts[i] == vs[i] end
      if not same then nv = nv:broadcast_to(ts) end
      if nv:dtype() ~= t:dtype() then nv = nv:to(t:dtype()) end
    end
    if vreq and not FN[nv] then nv = nv:to(t:dtype()) end -- a leaf v: t = a copy of it
    local old_edge = not vreq and REQ[t] and FN[t]
    local before = old_edge and shape_of(t)
    preserve(base)
    raw(t, v)
    VERSION[base] = (VERSION[base] or 0) + 1
    if vreq then
      REQ[t], FN[t] = true, FN[nv]
    elseif old_edge then
      -- overwritten by a value that needs no grad (zero_, fill_, copy_ of a constant): t
      -- still requires grad (PyTorch: sticky), and its old history gets zeros
      local node = { entry = OVERWRITE, a = { before }, needs = { true }, edges = { old_edge },
        outs = { { before.size(), before.dtype() } } }
      FN[t] = { node = node, nr = 1 }
    else
      REQ[t], FN[t] = nil, nil
    end
    return t
  end
  if not (vreq or REQ[base] or stale(base)) then
    preserve(base)
    raw(t, v)
    VERSION[base] = (VERSION[base] or 0) + 1
    return t
  end
  if REQ[base] and not FN[base] then
    error(string.format(LEAF_MSG, name, "view of a leaf tensor"), 3)
  end
  for _, step in ipairs(w.chain) do
    if not SCATTER[step.entry.name] then
      error(string.format("%s: writing through a view made by '%s' is not differentiable",
        name, step.entry.name), 3)
    end
  end
  local old_edge = edge_of(base)
  local src_edge = vreq and edge_of(v) or false
  local before = shape_of(base)
  preserve(base)
  raw(t, v)
  local node = {
    entry = copy_slices_entry(w.chain, t:size(), t:dtype()),
    a = { before, vreq and v or shape_of(t) },
    needs = { old_edge and true or false, src_edge and true or false },
    edges = { old_edge, src_edge },
    outs = { { before.size(), before.dtype() } },
  }
  REQ[base], FN[base] = true, { node = node, nr = 1 }
  VERSION[base] = (VERSION[base] or 0) + 1
  return t
end
A.inplace = inplace

---------------------------------------------------------------------------------------------
-- the engine

local function describe(entry, k)
  local j = 0
  for _, spec in ipairs(entry.args) do
    if spec[2] == "tensor" or spec[2] == "list" then
      j = j + 1
      if j == k then return spec[1] end
    end
  end
  return "?"
end

local OWNED = setmetatable({}, { __mode = "k" }) -- gradients accumulate_leaf made itself
local function accumulate_leaf(t, g)
  local prev = GRAD[t]
  if not prev then GRAD[t] = g; return end
  if prev.requires_grad or g.requires_grad then GRAD[t] = prev + g; return end
  -- in place, into a gradient of its own (prev may be shared with another leaf): a sync
  -- that fails then puts it back to its value before this backward (issue 17)
  if not OWNED[prev] then
    prev = prev:clone()
    OWNED[prev] = true
    GRAD[t] = prev
  end
  prev:add_(g)
end

-- Brings g to the input's shape (summing broadcast dims) and dtype.
local function fit(g, t)
  -- a gradient is its input's broadcast: same rank and element count means same size
  if not (core.is_tensor(t) and g:dim() == t:dim() and g:numel() == t:numel()) then
    g = sum_to(g, t:size())
  end
  local dt = t:dtype()
  if g:dtype() ~= dt then g = g:to(dt) end
  return g
end

local function route(edge, g, input)
  if not edge then return end
  g = fit(g, input)
  if edge.leaf then
    accumulate_leaf(edge.leaf, g)
  else
    local buf = edge.node.gbuf
    if not buf then buf = {}; edge.node.gbuf = buf end
    local prev = buf[edge.nr]
    buf[edge.nr] = prev and prev + g or g
  end
end

-- The nodes reachable from `root`, consumers before producers (a depth-first post order,
-- reversed; the stack is two arrays, not a table per entry).
local function topo(root)
  local order, seen = {}, { [root] = true }
  local sn, si, sp = { root }, { 0 }, 1
  while sp > 0 do
    local node = sn[sp]
    local kids = node.kids
    if not kids then
      kids = {}
      for _, e in pairs(node.edges) do
        if e then
          if e.node then kids[#kids + 1] = e.node
          elseif not e.leaf then
            for _, ee in pairs(e) do if ee and ee.node then kids[#kids + 1] = ee.node end end
          end
        end
      end
      node.kids = kids
    end
    local i = si[sp] + 1
    si[sp] = i
    local kid = kids[i]
    if kid == nil then
      sn[sp] = nil
      sp = sp - 1
      order[#order + 1] = node
    elseif not seen[kid] then
      seen[kid] = true
      sp = sp + 1
      sn[sp], si[sp] = kid, 0
    end
  end
  local n = #order
  for i = 1, n // 2 do order[i], order[n + 1 - i] = order[n + 1 - i], order[i] end
  return order
end

local function run_backward(root, grad, retain)
  local e = FN[root]
  if not e then accumulate_leaf(root, fit(grad, root)); return end
  e.node.gbuf = { [e.nr] = grad }
  for _, node in ipairs(topo(e.node)) do
    local buf = node.gbuf
    if buf then
      node.gbuf = nil
      local entry = node.entry
      if node.freed then
        error(string.format("backward: trying to backward through %s a second time (its saved "
          .. "tensors were freed; pass {retain_graph = true} to the first backward)", entry.name), 0)
      end
      if not entry.formulas then
        error(string.format("backward: op '%s' has no derivative formula (add `derivatives:` "
          .. "to its entry in codegen/ops.yaml)", entry.name), 0)
      end
      for k, need in ipairs(node.needs) do
        if need and not entry.formulas[k] then
          error(string.format("backward: the derivative of op '%s' with respect to '%s' is not "
            .. "implemented (codegen/ops.yaml)", entry.name, describe(entry, k)), 0)
        end
      end
      local grads = {}
      for r = 1, entry.n_outputs do grads[r] = buf[r] end
      if grads[1] == nil and node.outs and node.outs[1] then
        grads[1] = core.zeros(node.outs[1][1], node.outs[1][2])
      end
      local res = entry.backward(node.a, grads, node.needs)
      local k = 0
      for i, spec in ipairs(entry.args) do
        local kind = spec[2]
        if kind == "tensor" or kind == "list" then
          k = k + 1
          if node.needs[k] then
            local g = res[k]
            if kind == "tensor" then route(node.edges[k], g, node.a[i])
            else
              for j, t in ipairs(node.a[i]) do
                if node.edges[k][j] and g[j] ~= nil then route(node.edges[k][j], g[j], t) end
              end
            end
          end
        end
      end
      if not retain then node.a, node.freed = nil, true end
    end
  end
end

--- t:backward([grad] [, opts]): accumulates d(t)/d(leaf) into leaf.grad for every leaf that
-- requires grad. grad (default 1 for a one-element t) must have t's size. opts.retain_graph
-- keeps the saved tensors for another backward; opts.create_graph records the backward
-- ops too (gradients of gradients). Nothing is computed until a sync.
function A.backward(t, grad, opts)
  if type(grad) == "table" and not core.is_tensor(grad) then grad, opts = nil, grad end
  opts = opts or {}
  if stale(t) then refresh(t) end
  if not REQ[t] then
    error("backward: the tensor does not require grad and has no grad_fn", 2)
  end
  if grad == nil then
    if t:numel() ~= 1 then
      error(string.format("backward: grad can be implicitly created only for a tensor with one "
        .. "element, not size %s; pass grad", table.concat(t:size(), "x")), 2)
    end
    grad = core.ones(t:size(), t:dtype())
  elseif type(grad) == "number" then
    grad = core.full(t:size(), grad, t:dtype())
  else
    local gs, ts = grad:size(), t:size()
    local ok = #gs == #ts
    for i = 1, #ts do ok = ok and gs[i] == ts[i] end
    if not ok then
      error(string.format("backward: grad has size %s, the tensor %s", table.concat(gs, "x"),
        table.concat(ts, "x")), 2)
    end
  end
  local prev = grad_enabled
  grad_enabled = opts.create_graph and true or false
  local ok, err = pcall(run_backward, t, grad, opts.retain_graph or opts.create_graph)
  grad_enabled = prev
  if not ok then error(err, 2) end
  for _, h in ipairs(A.post_backward_hooks) do h(t) end
end

--- The functions backward calls after it has accumulated every gradient, in order, each
-- with the tensor backward was called on (PyTorch's Engine::queue_callback, which DDP's
-- Reducer uses). ltc.distributed's DistributedDataParallel averages gradients here. Add with
-- table.insert, remove with table.remove; a hook's error propagates from backward.
A.post_backward_hooks = {}

---------------------------------------------------------------------------------------------
-- grad mode

local function with_mode(mode, fn, ...)
  local prev = grad_enabled
  grad_enabled = mode
  local r = pack(pcall(fn, ...))
  grad_enabled = prev
  if not r[1] then error(r[2], 0) end
  return unpack(r, 2, r.n)
end

--- ltc.no_grad(fn, ...): calls fn(...) with gradient recording off; returns its results.
function A.no_grad(fn, ...) return with_mode(false, fn, ...) end
--- ltc.enable_grad(fn, ...): calls fn(...) with gradient recording on.
function A.enable_grad(fn, ...) return with_mode(true, fn, ...) end
function A.is_grad_enabled() return grad_enabled end
--- ltc.set_grad_enabled(flag): switches recording on or off; returns the previous mode.
function A.set_grad_enabled(flag)
  local prev = grad_enabled
  grad_enabled = flag and true or false
  return prev
end

function A.requires_grad(t) return REQ[t] == true end
--- The generated derivative entries by full op name (gen/derivatives.lua).
function A.derivatives() return D end
function A.grad_fn_name(t) local e = FN[t]; return e and e.node.entry.name or nil end

---------------------------------------------------------------------------------------------
-- installation

-- Finds gen/derivatives.lua: installed beside this file as ltc/derivatives.lua, or in the
-- source tree's gen/ folder.
local function load_derivatives()
  local path = package.searchpath("ltc.derivatives", package.path)
  if not path then
    local src = debug.getinfo(1, "S").source:match("^@(.*)$") or ""
    local dir = src:match("^(.*)/lua/ltc/[^/]*$") or "."
    path = dir .. "/gen/derivatives.lua"
  end
  local chunk, err = loadfile(path)
  if not chunk then error("ltc.autograd: cannot load the generated derivatives: " .. err) end
  return chunk()(setmetatable({}, { __index = function(_, k) return ltc_()[k] end }), F)
end

local function is_float_dtype(t)
  local dt = t:dtype()
  return dt == "float32" or dt == "float64"
end

--- install(core): wraps every generated op function of core (functions, methods and the
-- operator metamethods) with recording, and adds the autograd fields and methods.
function A.install(c)
  core = c
  D, O = load_derivatives()
  local methods, mt = c.methods, c.metatable
  local wrapped = {}
  for name, ov in pairs(O) do
    local raw = c[name]
    if type(raw) == "function" and not wrapped[raw] then
      local w = wrap(raw, ov)
      wrapped[raw] = w
      c[name] = w
      if methods[name] == raw then methods[name] = w end
    end
  end
  for k, v in pairs(mt) do
    if wrapped[v] then mt[k] = wrapped[v] end
  end

  -- dropout of a tensor that requires grad keeps its mask, as PyTorch saves it: self times
  -- dropout(ones) (1 / (1 - p) or 0, the same draws), recorded as a mul, so an element of
  -- self that is 0 still passes its gradient (reading the mask from the result would not)
  local rec_dropout = c.dropout
  if rec_dropout then
    local function dropout(t, p, train, ...)
      local q = p == nil and 0.5 or p
      if grad_enabled and select("#", ...) == 0 and train ~= false and math_type(q) == "float" and q > 0 and q < 1
          and core.is_tensor(t) and FLOAT[t:dtype()] and (REQ[t] or stale(t)) then
        grad_enabled = false
        local ok, m = pcall(rec_dropout, core.ones(t:size(), t:dtype()), q, true)
        grad_enabled = true
        if not ok then error(m, 2) end
        return t * m
      end
      return rec_dropout(t, p, train, ...)
    end
    if methods.dropout == rec_dropout then methods.dropout = dropout end
    c.dropout = dropout
  end

  -- in-place writes (assign_ is the base of add_, mul_, ...; copy_ of fill_ and zero_; t[i] =
  -- v): the tensor, or the base it is a view of, takes the new history (inplace above)
  local raw_assign = c.assign_
  if raw_assign then
    c.assign_ = function(t, v, name)
      return inplace(name or "assign_", raw_assign, t, v)
    end
  end
  local raw_copy = methods.copy_ or c.copy_
  if raw_copy then
    local function copy_(t, v) return inplace("copy_", raw_copy, t, v) end
    methods.copy_ = copy_
    if c.copy_ then c.copy_ = copy_ end
  end
  -- t[i] on a tensor of 2 or more dims is the view select(1, i), recorded like select; t[i] = v
  -- writes through it. The C fast paths serve 1-d tensors and tensors with no grad involved.
  local raw_newindex = mt.__newindex
  local function grad_involved(t)
    if not grad_enabled then return false end
    if REQ[t] or stale(t) then return true end
    local w = VIEW[t]
    return w ~= nil and not w.detached and (REQ[w.base] or stale(w.base)) and true or false
  end
  mt.__select = function(t, i) return core.select(t, 1, i) end -- t[i], dim > 1 (ltc_lua.c)
  mt.__newindex = function(t, k, v)
    if math_type(k) == "integer" and (grad_involved(t) or (core.is_tensor(v) and REQ[v])
        or SAVERS[root_of(t)]) then
      local slot = core.select(t, 1, k)
      inplace("newindex", raw_copy, slot, v)
      return
    end
    return raw_newindex(t, k, v)
  end

  local getters = mt.__getters or {}
  local setters = mt.__setters or {}
  mt.__getters, mt.__setters = getters, setters
  getters.requires_grad = function(t)
    if stale(t) then refresh(t) end
    return REQ[t] == true
  end
  getters.grad = function(t) return GRAD[t] end
  getters.grad_fn = function(t)
    if stale(t) then refresh(t) end
    local e = FN[t]
    return e and { name = e.node.entry.name, output = e.nr } or nil
  end
  getters.is_leaf = function(t)
    if stale(t) then refresh(t) end
    return FN[t] == nil
  end
  getters.data = function(t) return methods.detach(t) end
  setters.requires_grad = function(t, flag)
    if FN[t] then error("requires_grad: only leaf tensors can be changed (use detach())", 2) end
    if flag and not is_float_dtype(t) then
      error("requires_grad: only floating-point tensors can require grad, not " .. t:dtype(), 2)
    end
    REQ[t] = flag and true or nil
  end
  setters.grad = function(t, g)
    if g ~= nil and not core.is_tensor(g) then error("grad: a tensor or nil expected", 2) end
    GRAD[t] = g
  end
  setters.data = function(t, v)
    local prev = grad_enabled
    grad_enabled = false
    local ok, err = pcall(c.assign_, t, v, "data")
    grad_enabled = prev
    if not ok then error(err, 2) end
  end

  --- t:requires_grad_([flag]): marks a leaf as requiring grad (default true); returns t.
  function methods.requires_grad_(t, flag)
    if flag == nil then flag = true end
    setters.requires_grad(t, flag)
    return t
  end
  --- t:detach(): a tensor with t's value and no history (a view of t: same storage).
  function methods.detach(t)
    local prev = grad_enabled
    grad_enabled = false
    local ok, r = pcall(t.view, t, t:size())
    grad_enabled = prev
    if not ok then error(r, 2) end
    -- shares t's storage (writes reach t) but not its history
    local w = VIEW[t]
    VIEW[r] = { base = w and w.base or t, detached = true }
    return r
  end
  methods.backward = A.backward
  --- t:zero_grad(): t.grad = nil.
  function methods.zero_grad(t) GRAD[t] = nil end
end

--- export(M): adds the grad-mode functions to the user-facing module.
function A.export(M)
  module = M
  M.no_grad, M.enable_grad = A.no_grad, A.enable_grad
  M.is_grad_enabled, M.set_grad_enabled = A.is_grad_enabled, A.set_grad_enabled
  M.autograd = A
end

return A
