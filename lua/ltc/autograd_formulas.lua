--- ltc.autograd_formulas: the derivative formulas of codegen/ops.yaml as Lua
-- (gen/derivatives.lua) and F, the helpers they call. The autograd engine runs the C
-- translations of these formulas (gen/derivatives.c, src/core/grad_formulas*.c); this file
-- is loaded only by the spec that compares the two (spec/derivatives_c_spec.lua) and for a
-- formula the generator could not translate. Each F.x has a C twin ltc_grad_x.
local M = {}

local ipairs, type = ipairs, type
local core, module

local F = {}
M.F = F

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

--- Gradients of linear: which = 0, 1, 2 for self, weight, bias. Outside grad mode, from one
-- linear_backward (the C twin computes them once per backward; this one, run per input,
-- three times); under it (create_graph), over matmul (and grad for the bias, summed by the
-- engine).
function F.linear_backward(grad, self, weight, which)
  if not core._ag.is_grad_enabled() then
    return (select(which + 1, core.linear_backward(grad, self, weight)))
  end
  if which == 0 then return grad:matmul(weight) end
  if which == 1 then return F.linear_weight_backward(grad, self) end
  return grad
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

--- Gradients of layer_norm: which = 0, 1, 2 for self, weight, bias. Outside grad mode, from
-- one layer_norm_backward (the C twin computes them once per backward; this one, run per
-- input, three times); under it (create_graph), over the elementwise ops: x^ = (x - mean) /
-- sqrt(var + eps) over the normalized dims, dx = (dx^ - mean(dx^) - x^ mean(dx^ x^)) /
-- sqrt(var + eps) with dx^ = grad * weight; grad * x^ and grad (summed by the engine) for
-- weight and bias.
function F.layer_norm_backward(grad, self, normalized_shape, weight, eps, which)
  if not core._ag.is_grad_enabled() and weight then
    return (select(which + 1, core.layer_norm_backward(grad, self, normalized_shape, weight, eps)))
  end
  if which == 2 then return grad end
  local s = self:size()
  local k, n, lead = #normalized_shape, 1, {}
  for i = 1, k do n = n * normalized_shape[i] end
  for i = 1, #s - k do lead[i] = s[i] end
  lead[#lead + 1] = n
  local xf = self:reshape(lead)
  local d = xf - xf:mean(-1, true)
  local rstd = ((d * d):mean(-1, true) + eps) ^ -0.5
  local xhat = d * rstd
  if which == 1 then return grad * xhat:reshape(s) end
  local dxhat = (weight and grad * weight or grad):reshape(lead)
  return (rstd * (dxhat - dxhat:mean(-1, true) - xhat * (dxhat * xhat):mean(-1, true))):reshape(s)
end

--- Gradient of scaled_dot_product_attention's float attn_mask: dS = P * (grad . value^T -
-- rowsum(grad * output)), P recomputed from logsumexp (tril'd when causal), [..., L, S].
function F.attention_mask_backward(grad, query, key, value, output, logsumexp, is_causal, scale,
                                   attn_mask)
  local p = (query:matmul(key:transpose(-2, -1)) * scale + attn_mask
    - logsumexp:unsqueeze(logsumexp:dim() + 1)):exp()
  if is_causal then p = p:tril() end
  return p * (grad:matmul(value:transpose(-2, -1)) - (grad * output):sum(-1, true))
end

--- Gradients of scaled_dot_product_attention: which = 0, 1, 2 for query, key, value, all
-- three from one scaled_dot_product_attention_backward (the C twin computes them once per
-- backward; this one, run per input, three times). attn_mask nil when there is none.
function F.attention_backward(grad, query, key, value, output, logsumexp, is_causal, scale,
                              attn_mask, which)
  local r = table.pack(core.scaled_dot_product_attention_backward(grad, query, key, value,
    output, logsumexp, is_causal, scale, attn_mask))
  return r[which + 1]
end

--- Gradients of scaled_dot_product_attention.dropout[_mask] (which = 0, 1, 2 for query, key,
-- value) from one scaled_dot_product_attention_backward.dropout[_mask], which regenerates the
-- forward's keep decisions from rng_state. attn_mask nil when there is none.
function F.attention_dropout_backward(grad, query, key, value, output, logsumexp, is_causal,
                                      scale, dropout_p, rng_state, attn_mask, which)
  local r = table.pack(core.scaled_dot_product_attention_backward(grad, query, key, value,
    output, logsumexp, is_causal, scale, dropout_p, rng_state, attn_mask))
  return r[which + 1]
end

--- Gradient of scaled_dot_product_attention.dropout_mask's float attn_mask: that of
-- F.attention_mask_backward when dropout_p is 0; an error otherwise (not supported).
function F.attention_dropout_mask_backward(grad, query, key, value, output, logsumexp, is_causal,
                                           scale, dropout_p, attn_mask)
  if dropout_p > 0 then
    error(string.format("scaled_dot_product_attention.dropout_mask: the gradient of a float "
      .. "attn_mask with dropout_p %g > 0 is not supported (ltc.nn.functional."
      .. "scaled_dot_product_attention takes the path over the ops when the mask requires grad)",
      dropout_p), 0)
  end
  return F.attention_mask_backward(grad, query, key, value, output, logsumexp, is_causal, scale,
    attn_mask)
end

--- Gradients of lstm_layer: which = 0, 1, 2, 3 for input_proj, h0, c0, weight_hh, all four
-- from one lstm_layer_backward (the C twin makes it once per backward; this one, run per
-- input, once each). grad_c_seq is the gradient of the c_seq output.
function F.lstm_layer_backward(grad, grad_c_seq, h0, c0, weight_hh, output, c_seq, gates,
                               reverse, which)
  local r = table.pack(core.lstm_layer_backward(grad, grad_c_seq, h0, c0, weight_hh, output,
    c_seq, gates, reverse))
  return r[which + 1]
end

--- Gradients of gru_layer: which = 0, 1, 2, 3 for input_proj, h0, weight_hh, bias_hh, all
-- four from one gru_layer_backward (as F.lstm_layer_backward).
function F.gru_layer_backward(grad, h0, weight_hh, output, gates, reverse, which)
  local r = table.pack(core.gru_layer_backward(grad, h0, weight_hh, output, gates, reverse))
  return r[which + 1]
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
  return chunk()(setmetatable({}, { __index = function(_, k) return (module or core)[k] end }), F)
end


--- load(core, module): D, the entries of gen/derivatives.lua by full op name.
function M.load(c, m)
  core, module = c, m
  local D = load_derivatives()
  return D
end

return M
