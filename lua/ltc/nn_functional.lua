--- ltc.nn's first functionals (ltc.nn.functional, PyTorch's torch.nn.functional): linear,
-- relu, gelu, tanh, sigmoid, softmax, log_softmax, dropout, flatten, one_hot, embedding,
-- layer_norm, conv2d, max_pool2d, pad, normalize, cosine_similarity. Added by lua/ltc/nn.lua:
-- require("ltc.nn_functional")(nn, F), F checking each function's arguments as it is stored.
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local ltc = require "ltc"

return function(nn, F)
  local sqrt = math.sqrt

  ---------------------------------------------------------------------------------------------
  -- functional

  --- F.linear(x, weight [, bias]): x . weight^T + bias (x [..., in], weight [out, in]).
  function F.linear(x, weight, bias)
    if bias then return ltc.linear(x, weight, bias) end
    return ltc.linear(x, weight)
  end

  function F.relu(x) return x:relu() end
  --- F.gelu(x [, approximate="none"]): x Phi(x); approximate="tanh" is PyTorch's tanh form
  -- 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (composed of ops: autograd differentiates it).
  function F.gelu(x, approximate)
    if approximate == nil or approximate == "none" then return x:gelu() end
    if approximate ~= "tanh" then
      raise(string.format("gelu: approximate must be 'none' or 'tanh', got %s",
        type(approximate) == "string" and "'" .. approximate .. "'" or ltc.typename(approximate)))
    end
    local inner = (x + x * x * x * 0.044715) * sqrt(2 / math.pi)
    return x * 0.5 * (inner:tanh() + 1)
  end
  function F.tanh(x) return x:tanh() end
  function F.sigmoid(x) return x:sigmoid() end
  --- F.softmax(x [, dim=-1 [, dtype]]), F.log_softmax(x [, dim=-1 [, dtype]]): x cast to dtype
  -- first when given (PyTorch's dtype=). Every F.* functional also takes PyTorch's keyword
  -- arguments as a trailing options table: F.softmax(x, {dim = 2}), F.conv2d(x, w, nil,
  -- {stride = 2}), F.dropout(x, {p = 0.2, training = false}); an unknown name raises.
  function F.softmax(x, dim, dtype)
    if dtype then x = x:to(dtype) end
    return x:softmax(dim or -1)
  end
  function F.log_softmax(x, dim, dtype)
    if dtype then x = x:to(dtype) end
    return x:log_softmax(dim or -1)
  end

  -- Raises "<fname>: p must be between 0 and 1, got <p>" unless p is a number in [0, 1].
  local function check_p(fname, p, level)
    if type(p) ~= "number" or not (p >= 0 and p <= 1) then
      raise(string.format("%s: p must be between 0 and 1, got %s", fname, tostring(p)))
    end
  end

  --- F.dropout(x [, p=0.5 [, training=true]]): zeroes each element with probability p and
  -- scales the rest by 1/(1-p) when training (fresh draws from the seeded generator every call;
  -- p is a graph parameter, so changing it does not recompile); x itself otherwise. p outside
  -- [0, 1] (or NaN) is an error, as in ltc.dropout.
  function F.dropout(x, p, training)
    if p == nil then p = 0.5 end
    check_p("dropout", p, 3)
    if training == false or p == 0 then return x end
    if p == 1 then return x * 0 end
    local keep = ltc.rand(x:size(), x:dtype()):lt(1 - p)
    return x * keep / (1 - p)
  end

  --- F.flatten(x, start_dim, end_dim): dims start_dim..end_dim (1-based, default 2..-1) merged.
  -- F.unfold and F.fold: PyTorch's names of im2col and col2im (composites in
  -- lua/ltc/indexing.lua, ops.yaml entries), and F.avg_pool2d and F.batch_norm the ops (the
  -- batch_norm front end of lua/ltc/ops.lua): their defaults are PyTorch's already. Below,
  -- `function F.<name>(` defines a functional of its own: a generated op's name or a
  -- `composite:` entry of ops.yaml (spec/composite_ops_spec.lua).
  F.unfold = ltc.im2col
  F.fold = ltc.col2im
  F.avg_pool2d = ltc.avg_pool2d
  F.batch_norm = ltc.batch_norm

  function F.flatten(x, start_dim, end_dim)
    local s = x:size()
    local nd = #s
    start_dim = start_dim or 2
    end_dim = end_dim or -1
    if start_dim < 0 then start_dim = start_dim + nd + 1 end
    if end_dim < 0 then end_dim = end_dim + nd + 1 end
    local out, merged = {}, 1
    for i = 1, nd do
      if i < start_dim or i > end_dim then out[#out + 1] = s[i]
      else
        merged = merged * s[i]
        if i == end_dim then out[#out + 1] = merged end
      end
    end
    return x:reshape(out)
  end

  --- F.one_hot(labels, num_classes): int64 one-hot rows of 1-based labels.
  function F.one_hot(labels, num_classes) return ltc.one_hot(labels, num_classes) end

  --- F.embedding(indices, weight [, {padding_idx}]): rows of weight [num, dim] at the 1-based
  -- indices (any shape); the result has indices' size plus dim. Rows picked at padding_idx
  -- (1-based) pass no gradient to weight (PyTorch).
  function F.embedding(indices, weight, opts)
    opts = nn.check_options("embedding", opts, { padding_idx = true }, 2)
    if weight:dim() ~= 2 then
      raise(string.format("embedding: weight must be 2-d [num_embeddings, embedding_dim], got [%s]",
        table.concat(weight:size(), ", ")))
    end
    local s = indices:size()
    local flat = indices:reshape({ -1 })
    local rows = weight:index_select(1, flat)
    if opts.padding_idx then
      local keep = flat:ne(opts.padding_idx):unsqueeze(2):to(weight:dtype())
      rows = rows * keep + rows:detach() * (1 - keep)
    end
    s[#s + 1] = weight:size(2)
    return rows:reshape(s)
  end

  --- F.layer_norm(x, normalized_shape, weight, bias, eps): normalises over the last
  -- #normalized_shape dims (biased variance, as PyTorch), then weight * y + bias: the op
  -- ltc.layer_norm (one kernel forward, one layer_norm_backward node backward), weight and
  -- bias of size normalized_shape and x's dtype, or nil.
  function F.layer_norm(x, normalized_shape, weight, bias, eps)
    if type(normalized_shape) == "number" then normalized_shape = { normalized_shape } end
    eps = eps or 1e-5
    local s = x:size()
    local k = #normalized_shape
    local fits = k >= 1 and k <= #s
    for i = 1, k do fits = fits and normalized_shape[i] == s[#s - k + i] end
    if not fits then
      raise(string.format("layer_norm: normalized_shape [%s] must be the last dims of the input "
        .. "[%s]", table.concat(normalized_shape, ", "), table.concat(s, ", ")))
    end
    return ltc.layer_norm(x, normalized_shape, weight, bias, eps)
  end

  --- F.conv2d / F.max_pool2d: the ops of the same names, when the op library has them.
  function F.conv2d(x, weight, bias, stride, padding, dilation, groups)
    if not ltc.conv2d then raise("conv2d: this build has no conv2d op") end
    return ltc.conv2d(x, weight, bias, stride or 1, padding or 0, dilation or 1, groups or 1)
  end

  function F.max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode)
    if not ltc.max_pool2d then raise("max_pool2d: this build has no max_pool2d op") end
    return ltc.max_pool2d(x, kernel_size, stride or kernel_size, padding or 0, dilation or 1,
      ceil_mode or false)
  end

  --- F.pad(x, pad [, mode="constant" [, value=0]]): pad = {left, right [, top, bottom [, ...]]}
  -- in PyTorch's order, the last dim first; negative amounts crop. Only mode "constant". A
  -- composite (ops.yaml), as F.normalize and F.cosine_similarity below.
  function F.pad(x, pad, mode, value)
    if type(pad) ~= "table" or #pad % 2 ~= 0 or #pad // 2 > x:dim() then
      raise(string.format("pad: pad must be a table of an even number of sizes, at most 2 per dim "
        .. "of the %d-d input, got %s", x:dim(), type(pad) == "table" and "{" .. table.concat(pad, ", ") .. "}" or ltc.typename(pad)))
    end
    mode = mode or "constant"
    if mode ~= "constant" then
      raise(string.format("pad: mode '%s' is not supported (only 'constant')", tostring(mode)))
    end
    value = value or 0
    for i = 1, #pad // 2 do
      local d = x:dim() - i + 1
      local lo, hi = pad[2 * i - 1], pad[2 * i]
      if math.type(lo) ~= "integer" or math.type(hi) ~= "integer" then
        raise("pad: pad sizes must be integers, got {" .. table.concat(pad, ", ") .. "}")
      end
      local n = x:size(d)
      if n + lo + hi < 0 or (lo < 0 and -lo > n) or (hi < 0 and -hi > n) then
        raise(string.format("pad: padding (%d, %d) of dim %d of size %d gives a negative size", lo, hi, d, n))
      end
      if lo < 0 then x = x:narrow(d, 1 - lo, n + lo); n = n + lo; lo = 0 end
      if hi < 0 then x = x:narrow(d, 1, n + hi); hi = 0 end
      local parts = {}
      local function block(k)
        local s = x:size()
        s[d] = k
        return ltc.full(s, value, x:dtype())
      end
      if lo > 0 then parts[#parts + 1] = block(lo) end
      parts[#parts + 1] = x
      if hi > 0 then parts[#parts + 1] = block(hi) end
      if #parts > 1 then x = ltc.cat(parts, d) end
    end
    return x
  end

  --- F.normalize(x [, p=2 [, dim=2 [, eps=1e-12]]]): x / max(||x||_p over dim, eps) (dim 2 is
  -- PyTorch's default dim=1, 1-based).
  function F.normalize(x, p, dim, eps)
    local n = x:norm(p or 2, dim or 2, true)
    return x / n:clamp(eps or 1e-12)
  end

  --- F.cosine_similarity(x1, x2 [, dim=2 [, eps=1e-8]]): sum(x1 x2) / max(||x1|| ||x2||, eps)
  -- over dim (broadcasting x1 and x2; dim 2 is PyTorch's default dim=1, 1-based).
  function F.cosine_similarity(x1, x2, dim, eps)
    dim = dim or 2
    local w12 = (x1 * x2):sum(dim)
    local n = ((x1 * x1):sum(dim) * (x2 * x2):sum(dim)):sqrt()
    return w12 / n:clamp(eps or 1e-8)
  end

  nn._private.check_p = check_p -- nn.Dropout checks p as F.dropout does
end
