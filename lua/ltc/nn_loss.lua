--- ltc.nn losses (PyTorch's torch.nn losses and their nn.functional forms), added to ltc.nn by
-- lua/ltc/nn.lua: require("ltc.nn_loss")(nn, F).
--
-- Every loss takes an options table whose unknown keys are errors naming them; `reduction`
-- is "mean" (default), "sum" or "none", as in PyTorch. Class labels are 1-based (Torch7).
-- The formulas follow PyTorch's ATen (aten/src/ATen/native/Loss.cpp, LossNLL.cpp); the
-- specs compare with values torch computed (spec/fixtures/losses.lua).
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local core = require("ltc.core")
local op_scope = core._op_scope -- names binary_cross_entropy in its run-time error
local bce_label = core._op_label("binary_cross_entropy", "all elements of input should be between 0 and 1")
local ltc = require "ltc"

local reductions = { none = 0, mean = 1, sum = 2 }

return function(nn, F)
  local check_options, set = nn.check_options, nn.option_set

  -- opts checked against the option names ... (plus "reduction"), and the reduction's code.
  -- Without options no table is made (every step's path): the empty options are shared.
  local no_options = setmetatable({}, {
    __newindex = function() raise("loss options are read-only") end })
  local function options(fname, opts, extra, ...)
    if opts == nil then return no_options, 1 end
    opts = check_options(fname, opts, set("reduction", ...), 3)
    local r = opts.reduction or "mean"
    local code = reductions[r]
    if not code and not (extra == "batchmean" and r == "batchmean") then
      raise(string.format("%s: reduction must be 'none', 'mean' or 'sum', not '%s'", fname,
        tostring(r)))
    end
    return opts, code
  end

  -- PyTorch's positional weight (F.cross_entropy(x, y, w), also followed by an options table:
  -- F.cross_entropy(x, y, w, {ignore_index = 1})) as the options table the loss reads.
  local function weight_first(fname, w, more)
    if not ltc.is_tensor(w) and not (w == nil and more ~= nil) then
      if more ~= nil then
        raise(string.format("%s: takes the class weight (a tensor or nil), then an options table; "
          .. "got %s and %s", fname, ltc.typename(w), ltc.typename(more)))
      end
      return w
    end
    if more ~= nil and type(more) ~= "table" then
      raise(string.format("%s: after the weight comes an options table, not %s", fname, ltc.typename(more)))
    end
    local o = { weight = w }
    for k, v in pairs(more or {}) do
      if k == "weight" and w ~= nil then
        raise(fname .. ": got multiple values for 'weight' (positional and in the options table)")
      end
      o[k] = v
    end
    return o
  end

  local function reduce(loss, code)
    if code == 0 then return loss elseif code == 1 then return loss:mean() else return loss:sum() end
  end

  local function same_size(fname, a, b)
    local sa, sb = a:size(), b:size()
    local ok = #sa == #sb
    for i = 1, #sa do ok = ok and sa[i] == sb[i] end
    if not ok then
      raise(string.format("%s: input [%s] and target [%s] must have the same size", fname,
        table.concat(sa, ", "), table.concat(sb, ", ")))
    end
  end

  local int_dtypes = { int64 = true, int32 = true }

  -- logits or log-probabilities [N, C, d1, ...] (or [C]) as rows [M, C] and labels [M].
  local function rows_of(fname, input, target)
    local nd = input:dim()
    if nd < 1 then raise(fname .. ": input must have at least 1 dim (got a 0-d tensor)") end
    local C = nd == 1 and input:size(1) or input:size(2)
    if nd > 2 and ltc.is_tensor(target) and int_dtypes[target:dtype()] then
      -- class indices of an [N, C, d1, ...] input are [N, d1, ...] (PyTorch's "expected
      -- target size"): a sequence model's [N, T, C] logits need transpose(2, 3) first
      local s, ts, want = input:size(), target:size(), {}
      for d = 1, nd do if d ~= 2 then want[#want + 1] = s[d] end end
      local ok = #ts == #want
      for d = 1, #want do ok = ok and ts[d] == want[d] end
      if not ok then
        raise(string.format("%s: input [%s] is [N, C, d1, ...] with C = %d classes in dim 2, so the "
          .. "target should be [%s], got [%s] (logits [N, T, C] of a sequence: "
          .. "input:transpose(2, 3), or reshape both to [N * T, C] and [N * T])", fname,
          table.concat(s, ", "), C, table.concat(want, ", "), table.concat(ts, ", ")))
      end
    end
    local x = input
    if nd == 1 then x = input:reshape({ 1, C })
    elseif nd > 2 then
      local perm = { 1 }
      for d = 3, nd do perm[#perm + 1] = d end
      perm[#perm + 1] = 2
      x = input:permute(perm):reshape({ -1, C })
    end
    return x, C
  end

  -- The class weight of nll_loss / cross_entropy: a 1-D tensor of C elements, one per class
  -- (PyTorch raises too, "weight tensor should be defined either for all C classes or no
  -- classes"; a reshape or an index_select would otherwise fail obscurely or broadcast).
  local function check_class_weight(fname, weight, C)
    if weight == nil then return end
    if not ltc.is_tensor(weight) then
      raise(string.format("%s: weight must be a tensor of %d elements, one per class, got %s",
        fname, C, ltc.typename(weight)))
    end
    if weight:dim() ~= 1 or weight:size(1) ~= C then
      raise(string.format("%s: weight has size [%s], the input has %d classes (weight must be "
        .. "[%d], one per class)", fname, table.concat(weight:size(), ", "), C, C))
    end
  end

  -- class-index path: per-row losses [M] of log-probabilities logp [M, C], the per-row
  -- weights [M] (0 where ignored), for nll with `weight` and `ignore_index`.
  local function picked(fname, logp, target, weight, ignore_index)
    if not int_dtypes[target:dtype()] then
      raise(string.format("%s: class-index target must be int64 or int32, not %s", fname,
        target:dtype()))
    end
    local t = target:reshape({ -1 }):to("int64")
    if t:size(1) ~= logp:size(1) then
      raise(string.format("%s: target has %d labels for %d rows of input", fname, t:size(1),
        logp:size(1)))
    end
    local keep = t:ne(ignore_index)
    local safe = ltc.where(keep, t, ltc.ones(t:size(), "int64"))
    local w = keep:to(logp:dtype())
    if weight then w = w * weight:index_select(1, safe) end
    local lp = logp:gather(2, safe:unsqueeze(2)):reshape({ -1 })
    return -lp * w, w, keep
  end

  local function out_shape(input)
    local s = input:size()
    if #s == 1 then return {} end
    table.remove(s, 2)
    return s
  end

  --- F.nll_loss(input, target [, {weight, ignore_index, reduction}]): log-probabilities
  -- [N, C] or [N, C, d1, ...] (or [C]) and 1-based int64 labels [N] / [N, d1, ...]. With
  -- weight [C] (another size is an error naming both) each term is scaled by the weight of its
  -- label and "mean" divides by the sum of
  -- those weights; labels equal to ignore_index (default -100) add nothing, "mean" divides by
  -- the rows not ignored (NaN when all are) and their gradient is 0 (PyTorch). With no options
  -- on [N, C] it is one fused op, which ignores -100 the same way. Another label outside 1..C
  -- raises at the sync.
  function F.nll_loss(input, target, opts, more)
    opts = weight_first("nll_loss", opts, more)
    local o, code = options("nll_loss", opts, nil, "weight", "ignore_index")
    if not o.weight and not o.ignore_index and input:dim() == 2 then
      return ltc.nll_loss(input, target, code)
    end
    local lp, C = rows_of("nll_loss", input, target)
    check_class_weight("nll_loss", o.weight, C)
    local l, w = picked("nll_loss", lp, target, o.weight, o.ignore_index or -100)
    if code == 0 then return l:reshape(out_shape(input)) end
    if code == 2 then return l:sum() end
    return l:sum() / w:sum()
  end

  --- F.cross_entropy(input, target [, {weight, ignore_index=-100, label_smoothing=0,
  -- reduction}]): logits [N, C] or [N, C, d1, ...] (or [C]); target either 1-based int64
  -- labels [N, d1, ...] or class probabilities of input's size (a float tensor). weight [C]
  -- rescales classes (another size is an error naming both); labels equal to ignore_index add nothing (as for nll_loss);
  -- label_smoothing in [0, 1] mixes the target with the uniform distribution. Without options
  -- on [N, C] it is one fused op forward and backward, which ignores -100 too. The
  -- weight may come third, as PyTorch's positional argument: F.cross_entropy(x, y, w [, opts])
  -- (also for nll_loss, binary_cross_entropy and binary_cross_entropy_with_logits).
  function F.cross_entropy(input, target, opts, more)
    opts = weight_first("cross_entropy", opts, more)
    local o, code = options("cross_entropy", opts, nil, "weight", "ignore_index", "label_smoothing")
    local eps = o.label_smoothing or 0
    if type(eps) ~= "number" or eps < 0 or eps > 1 then
      raise("cross_entropy: label_smoothing must be in [0, 1], got " .. tostring(eps))
    end
    local probs = not int_dtypes[target:dtype()]
    if not probs and not o.weight and not o.ignore_index and eps == 0 and input:dim() == 2 then
      return ltc.cross_entropy(input, target, code)
    end
    local x, C = rows_of("cross_entropy", input, target)
    check_class_weight("cross_entropy", o.weight, C)
    local logp = x:log_softmax(2)
    local wrow = o.weight and o.weight:reshape({ 1, C })
    if probs then
      if target:dim() ~= input:dim() then -- not probabilities: labels of the wrong dtype
        raise(string.format("cross_entropy: target must be int64 or int32 class indices, got %s "
          .. "(or class probabilities of the input's size [%s], got [%s])", target:dtype(),
          table.concat(input:size(), ", "), table.concat(target:size(), ", ")))
      end
      same_size("cross_entropy", input, target)
      local t = rows_of("cross_entropy", target)
      if eps > 0 then t = t * (1 - eps) + eps / C end
      local term = logp * t
      if wrow then term = term * wrow end
      local l = -term:sum(2)
      if code == 0 then return l:reshape(out_shape(input)) end
      if code == 2 then return l:sum() end
      return l:sum() / x:size(1)
    end
    local l, w, keep = picked("cross_entropy", logp, target, o.weight, o.ignore_index or -100)
    local nll
    if code == 0 then nll = l elseif code == 2 then nll = l:sum() else nll = l:sum() / w:sum() end
    if eps == 0 then
      return code == 0 and nll:reshape(out_shape(input)) or nll
    end
    local smooth = wrow and -(logp * wrow):sum(2) or -logp:sum(2)
    smooth = smooth * keep:to(smooth:dtype())
    local s
    if code == 0 then s = smooth elseif code == 2 then s = smooth:sum()
    elseif o.weight then s = smooth:sum() / w:sum()
    else s = smooth:sum() / keep:to(smooth:dtype()):sum() end
    local r = nll * (1 - eps) + s * (eps / C)
    return code == 0 and r:reshape(out_shape(input)) or r
  end

  --- nn._warn(msg): where ltc.nn's warnings go (stderr; a spec may replace it).
  nn._warn = nn._warn or function(msg) io.stderr:write(msg, "\n") end

  -- The user's line that called into ltc ("train.lua:12"): the first Lua frame outside
  -- ltc's own files (this file's folder).
  local ltc_dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "\0"
  local function user_line()
    for level = 3, 64 do
      local info = debug.getinfo(level, "Sl")
      if not info then break end
      if info.what ~= "C" and info.source:sub(1, #ltc_dir + 1) ~= "@" .. ltc_dir then
        return info.short_src .. ":" .. tostring(info.currentline)
      end
    end
    return "?"
  end

  -- PyTorch's warning when an elementwise loss broadcasts target against input ([N, 1]
  -- predictions and [N] targets give an [N, N] loss): once per line that calls the loss, as
  -- Python's warnings show each location once.
  local warned = {}
  local function warn_broadcast(fname, input, target)
    if not (ltc.is_tensor(input) and ltc.is_tensor(target)) then return end
    local si, st = input:size(), target:size()
    local same, fits = #si == #st, true
    for i = 1, #si do same = same and si[i] == st[i] end
    for i = 1, math.min(#si, #st) do -- from the last dim: equal or 1 (else the op raises)
      local a, b = si[#si + 1 - i], st[#st + 1 - i]
      fits = fits and (a == b or a == 1 or b == 1)
    end
    if same or not fits then return end
    local at = user_line()
    if warned[fname .. " " .. at] then return end
    warned[fname .. " " .. at] = true
    nn._warn(string.format("%s: %s: using a target size ([%s]) that is different to the input "
      .. "size ([%s]): broadcasting them will likely give wrong results; make them the same size "
      .. "(as PyTorch warns)", at, fname, table.concat(st, ", "), table.concat(si, ", ")))
  end

  --- F.mse_loss(input, target [, {reduction}]): (input - target)^2.
  function F.mse_loss(input, target, opts)
    local _, code = options("mse_loss", opts, nil)
    warn_broadcast("mse_loss", input, target)
    local d = input - target
    return reduce(d * d, code)
  end

  --- F.l1_loss(input, target [, {reduction}]): |input - target|.
  function F.l1_loss(input, target, opts)
    local _, code = options("l1_loss", opts, nil)
    warn_broadcast("l1_loss", input, target)
    return reduce((input - target):abs(), code)
  end

  --- F.smooth_l1_loss(input, target [, {beta=1, reduction}]): 0.5 d^2 / beta where |d| <
  -- beta, |d| - 0.5 beta elsewhere (beta = 0 is the L1 loss).
  function F.smooth_l1_loss(input, target, opts)
    local o, code = options("smooth_l1_loss", opts, nil, "beta")
    warn_broadcast("smooth_l1_loss", input, target)
    local beta = o.beta or 1.0
    if type(beta) ~= "number" or beta < 0 then
      raise("smooth_l1_loss: beta must be a number >= 0, got " .. tostring(beta))
    end
    local a = (input - target):abs()
    if beta == 0 then return reduce(a, code) end
    return reduce(ltc.where(a:lt(beta), a * a * (0.5 / beta), a - 0.5 * beta), code)
  end

  --- F.huber_loss(input, target [, {delta=1, reduction}]): 0.5 d^2 where |d| <= delta,
  -- delta (|d| - 0.5 delta) elsewhere.
  function F.huber_loss(input, target, opts)
    local o, code = options("huber_loss", opts, nil, "delta")
    warn_broadcast("huber_loss", input, target)
    local delta = o.delta or 1.0
    if type(delta) ~= "number" or delta <= 0 then
      raise("huber_loss: delta must be a number > 0, got " .. tostring(delta))
    end
    local a = (input - target):abs()
    return reduce(ltc.where(a:le(delta), a * a * 0.5, (a - 0.5 * delta) * delta), code)
  end

  --- F.binary_cross_entropy(input, target [, {weight, reduction}]): probabilities in [0, 1]
  -- and targets of the same size: -w (t log x + (1 - t) log(1 - x)), each log clamped at
  -- -100 as PyTorch does. An input outside [0, 1] (or NaN) is an error at the sync that
  -- computes the loss, as PyTorch raises: assert_in_range checks it when the graph runs,
  -- under an op scope that names binary_cross_entropy (its values are only known then).
  function F.binary_cross_entropy(input, target, opts, more)
    opts = weight_first("binary_cross_entropy", opts, more)
    local o, code = options("binary_cross_entropy", opts, nil, "weight")
    same_size("binary_cross_entropy", input, target)
    local _ <close> = op_scope(bce_label)
    input = input:assert_in_range(0, 1)
    local l = -(target * input:log():clamp(-100) + (1 - target) * (1 - input):log():clamp(-100))
    if o.weight then l = l * o.weight end
    return reduce(l, code)
  end

  --- F.binary_cross_entropy_with_logits(input, target [, {weight, pos_weight, reduction}]):
  -- the sigmoid and the binary cross entropy in one stable formula: -w (pw t log s(x) + (1 -
  -- t) log s(-x)), pos_weight (broadcast over the last dim, one per class) weighting the
  -- positive term.
  function F.binary_cross_entropy_with_logits(input, target, opts, more)
    opts = weight_first("binary_cross_entropy_with_logits", opts, more)
    local o, code = options("binary_cross_entropy_with_logits", opts, nil, "weight", "pos_weight")
    same_size("binary_cross_entropy_with_logits", input, target)
    -- log s(x) = -(max(-x, 0) + log1p(exp(-|x|))); log s(-x) = log s(x) - x
    local logsig = -((-input):relu() + (-input:abs()):exp():log1p())
    local pos = target * logsig
    if o.pos_weight then pos = pos * o.pos_weight end
    local l = -(pos + (1 - target) * (logsig - input))
    if o.weight then l = l * o.weight end
    return reduce(l, code)
  end

  --- F.kl_div(input, target [, {reduction="mean", log_target=false}]): input holds
  -- log-probabilities; the pointwise t (log t - input) (0 where t = 0), or exp(t) (t - input)
  -- with log_target. reduction "batchmean" divides the sum by input:size(1) (the KL
  -- divergence PyTorch recommends); "mean" divides by the number of elements.
  function F.kl_div(input, target, opts)
    local o, code = options("kl_div", opts, "batchmean", "log_target")
    local l
    if o.log_target then
      l = target:exp() * (target - input)
    else
      local pos = target:gt(0)
      local safe = ltc.where(pos, target, ltc.ones(target:size(), target:dtype()))
      l = ltc.where(pos, target * (safe:log() - input), input * 0)
    end
    if (o.reduction or "mean") == "batchmean" then
      return l:sum() / (input:dim() > 0 and input:size(1) or 1)
    end
    return reduce(l, code)
  end

  --- F.cosine_embedding_loss(x1, x2, y [, {margin=0, reduction}]): rows x1, x2 [N, D] (or
  -- [D]) and labels y [N] of 1 or -1: 1 - cos where y = 1, max(0, cos - margin) where y = -1
  -- (cos with PyTorch's 1e-12 in each squared norm).
  function F.cosine_embedding_loss(x1, x2, y, opts)
    local o, code = options("cosine_embedding_loss", opts, nil, "margin")
    same_size("cosine_embedding_loss", x1, x2)
    local d = x1:dim()
    local dot = (x1 * x2):sum(d)
    local n1 = (x1 * x1):sum(d) + 1e-12
    local n2 = (x2 * x2):sum(d) + 1e-12
    local cos = dot / (n1 * n2):sqrt()
    local yf = y:to(cos:dtype())
    local l = ltc.where(yf:eq(1), 1 - cos, (cos - (o.margin or 0)):relu())
    l = ltc.where(yf:eq(-1) + yf:eq(1), l, l * 0)
    return reduce(l, code)
  end

  -- A loss module: __init(opts) checks the options of `fname` and forward passes them on.
  -- A tensor first is the class weight, PyTorch's first positional argument
  -- (nn.CrossEntropyLoss(w), nn.CrossEntropyLoss(w, {ignore_index = 1})).
  local function loss_class(name, fn, allowed)
    local cls = nn.class(name)
    function cls:__init(opts, more, ...)
      if ltc.is_tensor(opts) and allowed[1] == "weight" then
        if select("#", ...) > 0 or (more ~= nil and type(more) ~= "table") then
          raise(string.format("%s: takes the weight and then an options table, got %d arguments",
            name, select("#", ...) + 2))
        end
        local o = { weight = opts }
        for k, v in pairs(more or {}) do
          if k == "weight" then
            raise(name .. ": got multiple values for 'weight' (positional and in the options table)")
          end
          o[k] = v
        end
        opts = o
      elseif more ~= nil then
        raise(string.format("%s: takes one options table (PyTorch's keyword arguments), got %d arguments",
          name, select("#", ...) + 2))
      end
      self.options = check_options(name, opts, set("reduction", table.unpack(allowed)), 4)
      self.reduction = self.options.reduction or "mean"
    end
    function cls:forward(...)
      -- no options and the default reduction: the call as is (no table per step)
      if self.reduction == "mean" and next(self.options) == nil then return fn(...) end
      local o = {}
      for k, v in pairs(self.options) do o[k] = v end
      o.reduction = self.reduction
      local args = table.pack(...)
      args[args.n + 1] = o
      return fn(table.unpack(args, 1, args.n + 1))
    end
    function cls:extra_repr() return "reduction=" .. self.reduction end
    return cls
  end

  --- nn.CrossEntropyLoss, nn.NLLLoss, nn.MSELoss, nn.L1Loss, nn.SmoothL1Loss, nn.HuberLoss,
  -- nn.BCELoss, nn.BCEWithLogitsLoss, nn.KLDivLoss, nn.CosineEmbeddingLoss: module forms
  -- of the functions above, nn.X(opts) then loss(input, target); the options are the
  -- function's (PyTorch's constructor keywords).
  nn.CrossEntropyLoss = loss_class("CrossEntropyLoss", F.cross_entropy,
    { "weight", "ignore_index", "label_smoothing" })
  nn.NLLLoss = loss_class("NLLLoss", F.nll_loss, { "weight", "ignore_index" })
  nn.MSELoss = loss_class("MSELoss", F.mse_loss, {})
  nn.L1Loss = loss_class("L1Loss", F.l1_loss, {})
  nn.SmoothL1Loss = loss_class("SmoothL1Loss", F.smooth_l1_loss, { "beta" })
  nn.HuberLoss = loss_class("HuberLoss", F.huber_loss, { "delta" })
  nn.BCELoss = loss_class("BCELoss", F.binary_cross_entropy, { "weight" })
  nn.BCEWithLogitsLoss = loss_class("BCEWithLogitsLoss", F.binary_cross_entropy_with_logits,
    { "weight", "pos_weight" })
  nn.KLDivLoss = loss_class("KLDivLoss", F.kl_div, { "log_target" })
  nn.CosineEmbeddingLoss = loss_class("CosineEmbeddingLoss", F.cosine_embedding_loss, { "margin" })
end
