--- ltc.indexing: indexing ops written in Lua over the generated ones (gather, scatter,
-- index_select, index_add, masked_fill, cumsum, sort, ...), so that autograd, fusion and the
-- compile cache see ordinary ops. install(core) adds take_along_dim, index_fill, index_copy,
-- masked_scatter, Tensor.unfold, unique and nn.functional's unfold/fold (im2col, col2im) to
-- core and its methods. Indices are 1-based, as everywhere in ltc.
local M = {}

local type, mtype = type, math.type

function M.install(core)
  local methods = core.methods
  local is_tensor = function(v) return getmetatable(v) == core.metatable end
  -- Each op here is traced under an op scope (core._op_scope), so that an error of one of its
  -- internal ops when the graph runs (one_hot's, gather's index out of range) names it.
  -- hint, when given, goes after the name in such errors (what the internal index means).
  local op_scope, op_label = core._op_scope, core._op_label
  local function def(name, fn, method, hint)
    local label = op_label(name, hint)
    local op = function(...)
      local _ <close> = op_scope(label)
      return fn(...)
    end
    core[name] = op
    if method then methods[name] = op end
  end
  -- raised at the caller's line, however deep in this file (core._raise)
  local function fail(name, fmt, ...) core._raise(name .. ": " .. string.format(fmt, ...)) end
  local function check_tensor(name, what, v)
    if not is_tensor(v) then fail(name, "%s must be a tensor, got %s", what, core.typename(v)) end
  end
  local function wrap_dim(name, t, dim)
    local n = math.max(t:dim(), 1)
    if mtype(dim) ~= "integer" or dim == 0 or dim > n or dim < -n then
      fail(name, "dim %s out of range for a %d-d tensor", tostring(dim), t:dim())
    end
    return dim < 0 and n + dim + 1 or dim
  end
  local function check_index(name, index)
    check_tensor(name, "index", index)
    local dt = index:dtype()
    if dt ~= "int64" and dt ~= "int32" then fail(name, "index must be int64 or int32, got %s", dt) end
  end
  local function size_str(s) return "[" .. table.concat(s, ",") .. "]" end

  --- t:take_along_dim(indices, [dim]): gather along dim after broadcasting t and indices in
  -- every other dim; without dim, both are flattened. 1-based indices. PyTorch
  -- torch.take_along_dim.
  def("take_along_dim", function(t, indices, dim)
    check_tensor("take_along_dim", "self", t)
    check_index("take_along_dim", indices)
    if dim == nil then return t:reshape({ -1 }):gather(1, indices:reshape({ -1 })) end
    dim = wrap_dim("take_along_dim", t, dim)
    if t:dim() ~= indices:dim() then
      fail("take_along_dim", "self %s and indices %s must have the same number of dims",
        size_str(t:size()), size_str(indices:size()))
    end
    local ts, is, a, b = t:size(), indices:size(), {}, {}
    for d = 1, #ts do
      if d == dim then
        a[d], b[d] = ts[d], is[d]
      else
        local n = ts[d] == 1 and is[d] or ts[d]
        if is[d] ~= 1 and is[d] ~= n then
          fail("take_along_dim", "self %s and indices %s do not broadcast in dim %d",
            size_str(ts), size_str(is), d)
        end
        a[d], b[d] = n, n
      end
    end
    return t:expand(a):gather(dim, indices:expand(b))
  end, true)

  -- A bool mask of t's size, true at the positions of `index` (1-d) along dim.
  local function index_mask(name, t, dim, index)
    check_index(name, index)
    if index:dim() > 1 then fail(name, "index must be 1-d, got %s", size_str(index:size())) end
    local n = t:dim() == 0 and 1 or t:size(dim)
    local hit = index:reshape({ -1 }):long():one_hot(n):sum(1):gt(0)
    local shape = {}
    for d = 1, t:dim() do shape[d] = d == dim and n or 1 end
    return t:dim() == 0 and hit:reshape({}) or hit:reshape(shape)
  end

  --- t:index_fill(dim, index, value): a copy of t with value (a number or 0-d tensor) at the
  -- 1-based positions in index (1-d int64 or int32) along dim. PyTorch Tensor.index_fill; an
  -- index outside 1..size is an error when the graph runs. t:index_fill_ writes in place.
  def("index_fill", function(t, dim, index, value)
    check_tensor("index_fill", "self", t)
    dim = wrap_dim("index_fill", t, dim)
    return t:masked_fill(index_mask("index_fill", t, dim, index), value)
  end, true)

  --- t:index_copy(dim, index, source): a copy of t whose slices at the 1-based positions in
  -- index (1-d) along dim are the slices of source in order (source has t's size except
  -- #index along dim). With a repeated position, one of the slices wins (PyTorch leaves it
  -- undefined too). PyTorch Tensor.index_copy; t:index_copy_ writes in place.
  def("index_copy", function(t, dim, index, source)
    check_tensor("index_copy", "self", t)
    check_tensor("index_copy", "source", source)
    dim = wrap_dim("index_copy", t, dim)
    check_index("index_copy", index)
    if index:dim() > 1 then fail("index_copy", "index must be 1-d, got %s", size_str(index:size())) end
    if t:dim() == 0 then return core.where(index_mask("index_copy", t, 1, index), source:to(t:dtype()), t) end
    local ss, ts = source:size(), t:size()
    local ok = #ss == #ts and ss[dim] == index:numel()
    for d = 1, #ts do ok = ok and (d == dim or ss[d] == ts[d]) end
    if not ok then
      fail("index_copy", "source %s must be self's size %s with %d along dim %d", size_str(ss),
        size_str(ts), index:numel(), dim)
    end
    local shape = {}
    for d = 1, #ss do shape[d] = d == dim and ss[d] or 1 end
    return t:scatter(dim, index:reshape(shape):expand(ss), source:to(t:dtype()))
  end, true)

  --- t:masked_scatter(mask, source): a copy of t where the positions with mask true (mask
  -- broadcasts to t) take source's elements in row-major order (source has at least as many
  -- elements as mask has true values; too few is an error when the graph runs). No
  -- sync: the k-th true position reads source's element k (a running count of mask). PyTorch
  -- Tensor.masked_scatter; t:masked_scatter_ writes in place.
  def("masked_scatter", function(t, mask, source)
    check_tensor("masked_scatter", "self", t)
    check_tensor("masked_scatter", "mask", mask)
    check_tensor("masked_scatter", "source", source)
    if mask:dtype() ~= "bool" then fail("masked_scatter", "mask must be a bool tensor, got %s", mask:dtype()) end
    local m = mask:broadcast_to(t:size()):reshape({ -1 })
    if source:numel() == 0 then source = core.zeros({ 1 }, t:dtype()) end -- read by no true position
    -- the k-th true position reads element k; the others some element (at least 1); a count
    -- beyond source's elements is an index out of range when the gather runs
    local picked = source:reshape({ -1 }):to(t:dtype()):gather(1, m:cumsum(1):clamp(1))
    return core.where(m, picked, t:reshape({ -1 })):reshape(t:size())
  end, true, "mask has more true values than source has elements (the index is the count of a true value)")

  --- t:unfold(dim, size, step): every window of `size` elements along dim, `step` apart: dim
  -- becomes the number of windows, (n - size) // step + 1, and a last dim of `size` is added.
  -- A copy here (PyTorch's is a view), made by one index_select. PyTorch Tensor.unfold.
  def("unfold", function(t, dim, size, step)
    check_tensor("unfold", "self", t)
    dim = wrap_dim("unfold", t, dim)
    local n = t:dim() == 0 and 1 or t:size(dim)
    if mtype(size) ~= "integer" or size < 0 or size > n then
      fail("unfold", "size %s out of range for dim %d of size %d", tostring(size), dim, n)
    end
    if mtype(step) ~= "integer" or step < 1 then fail("unfold", "step must be a positive integer, got %s", tostring(step)) end
    local windows = (n - size) // step + 1
    local starts = core.arange(0, windows * step, step, "int64"):reshape({ windows, 1 })
    local idx = (starts + core.arange(1, size + 1, 1, "int64"):reshape({ 1, size })):reshape({ -1 })
    if t:dim() == 0 then return t:reshape({ 1 }):index_select(1, idx) end
    local y = t:index_select(dim, idx)
    local shape, perm = {}, {}
    for d = 1, t:dim() do
      if d == dim then shape[#shape + 1] = windows; shape[#shape + 1] = size
      else shape[#shape + 1] = t:size(d) end
    end
    y = y:reshape(shape) -- [..., windows, size, ...]
    for d = 1, t:dim() + 1 do if d ~= dim + 1 then perm[#perm + 1] = d end end
    perm[#perm + 1] = dim + 1
    return y:permute(perm)
  end, true)

  --- t:unique([sorted [, return_inverse [, return_counts [, dim]]]]): the distinct values of t
  -- (flattened), ascending (sorted or not: they are always sorted), then, when asked, the
  -- 1-based int64 inverse (t's size: the position of each element in the values) and the
  -- int64 count of each value. NaN values are each distinct (NaN ~= NaN), sorted last. Only
  -- dim = nil. The number of values depends on the data: this SYNCS once, as nonzero does.
  -- PyTorch torch.unique (1-based inverse).
  def("unique", function(t, sorted, return_inverse, return_counts, dim, ...)
    check_tensor("unique", "self", t)
    if select("#", ...) > 0 then fail("unique", "expected at most 5 arguments") end
    if dim ~= nil then fail("unique", "dim is not supported (only the flattened tensor)") end
    local flat = t:reshape({ -1 })
    local n = flat:numel()
    local vals, order = flat:sort()
    local new -- true where a sorted value differs from the one before it
    if n == 0 then
      new = core.zeros({ 0 }, "bool")
    else
      local prev = vals:narrow(1, 1, n - 1)
      new = core.cat({ core.ones({ 1 }, "bool"), vals:narrow(1, 2, n - 1):ne(prev) }, 1)
    end
    local run = new:cumsum(1) -- 1-based run id of each sorted element
    local count = n == 0 and 0 or run[n] -- syncs
    local first = core.zeros({ count + 1 }, "int64"):scatter(1, core.where(new, run, count + 1),
      core.arange(1, n + 1, 1, "int64")):narrow(1, 1, count)
    local out = { vals:gather(1, first:clamp(1)) }
    if n == 0 then out[1] = vals end
    if return_inverse then
      out[#out + 1] = core.zeros({ n }, "int64"):scatter(1, order, run):reshape(t:size())
    end
    if return_counts then
      out[#out + 1] = core.zeros({ count }, "int64"):scatter_add(1, run, core.ones({ n }, "int64"))
    end
    return table.unpack(out)
  end, true)

  -- A {height, width} pair from a number or a table of 1 or 2 positive (or >= 0) integers.
  local function pair(name, what, v, def, min)
    if v == nil then v = def end
    if type(v) == "number" then v = { v, v } elseif type(v) == "table" and #v == 1 then v = { v[1], v[1] } end
    if type(v) ~= "table" or #v ~= 2 or mtype(v[1]) ~= "integer" or mtype(v[2]) ~= "integer"
        or v[1] < min or v[2] < min then
      fail(name, "%s must be an integer >= %d or a pair of them", what, min)
    end
    return v
  end

  -- The geometry of im2col/col2im: padded sizes, output positions, and the 1-based row and
  -- column indices of every (output position, kernel offset) pair.
  local function geometry(name, h, w, k, d, p, s)
    local hp, wp = h + 2 * p[1], w + 2 * p[2]
    local oh = (hp - d[1] * (k[1] - 1) - 1) // s[1] + 1
    local ow = (wp - d[2] * (k[2] - 1) - 1) // s[2] + 1
    if oh < 1 or ow < 1 then
      fail(name, "a %dx%d kernel (dilation %dx%d) does not fit the padded %dx%d input", k[1], k[2],
        d[1], d[2], hp, wp)
    end
    local function idx(o, kk, dd, ss)
      return (core.arange(0, o, 1, "int64"):reshape({ o, 1 }) * ss
        + core.arange(0, kk, 1, "int64"):reshape({ 1, kk }) * dd + 1):reshape({ -1 })
    end
    return hp, wp, oh, ow, idx(oh, k[1], d[1], s[1]), idx(ow, k[2], d[2], s[2])
  end

  --- ltc.im2col(x, kernel_size [, dilation=1 [, padding=0 [, stride=1]]]): the sliding
  -- blocks of x [N, C, H, W] (or [C, H, W]) as columns [N, C * kh * kw, L], L the number of
  -- block positions (row-major), zeros for the padding. Pairs may be numbers. PyTorch
  -- nn.functional.unfold (ltc.nn.functional.unfold). Made of index_select, so differentiable.
  def("im2col", function(x, kernel_size, dilation, padding, stride)
    local name = "im2col"
    check_tensor(name, "input", x)
    if x:dim() ~= 3 and x:dim() ~= 4 then fail(name, "input must be [N, C, H, W] or [C, H, W], got %s", size_str(x:size())) end
    local k, d = pair(name, "kernel_size", kernel_size, nil, 1), pair(name, "dilation", dilation, 1, 1)
    local p, s = pair(name, "padding", padding, 0, 0), pair(name, "stride", stride, 1, 1)
    local batched = x:dim() == 4
    if not batched then x = x:unsqueeze(1) end
    local n, c, h, w = table.unpack(x:size())
    local hp, wp, oh, ow, ih, iw = geometry(name, h, w, k, d, p, s)
    if p[1] > 0 then x = core.zeros({ n, c, hp, w }, x:dtype()):narrow_scatter(x, 3, p[1] + 1) end
    if p[2] > 0 then x = core.zeros({ n, c, hp, wp }, x:dtype()):narrow_scatter(x, 4, p[2] + 1) end
    local y = x:index_select(3, ih):reshape({ n, c, oh, k[1], wp })
    y = y:index_select(5, iw):reshape({ n, c, oh, k[1], ow, k[2] })
    y = y:permute(1, 2, 4, 6, 3, 5):reshape({ n, c * k[1] * k[2], oh * ow })
    return batched and y or y:squeeze(1)
  end)

  --- ltc.col2im(cols, output_size, kernel_size [, dilation=1 [, padding=0 [, stride=1]]]):
  -- the adjoint of im2col: the columns [N, C * kh * kw, L] (or unbatched) summed back into
  -- an image [N, C, H, W] of output_size {H, W}, overlapping blocks adding up. PyTorch
  -- nn.functional.fold (ltc.nn.functional.fold). Made of index_add.
  def("col2im", function(cols, output_size, kernel_size, dilation, padding, stride)
    local name = "col2im"
    check_tensor(name, "input", cols)
    if cols:dim() ~= 2 and cols:dim() ~= 3 then fail(name, "input must be [N, C*kh*kw, L] or [C*kh*kw, L], got %s", size_str(cols:size())) end
    local o = pair(name, "output_size", output_size, nil, 1)
    local k, d = pair(name, "kernel_size", kernel_size, nil, 1), pair(name, "dilation", dilation, 1, 1)
    local p, s = pair(name, "padding", padding, 0, 0), pair(name, "stride", stride, 1, 1)
    local batched = cols:dim() == 3
    if not batched then cols = cols:unsqueeze(1) end
    local n, ckk, l = table.unpack(cols:size())
    local hp, wp, oh, ow, ih, iw = geometry(name, o[1], o[2], k, d, p, s)
    if ckk % (k[1] * k[2]) ~= 0 or l ~= oh * ow then
      fail(name, "input %s does not match a %dx%d kernel over %dx%d block positions",
        size_str(cols:size()), k[1], k[2], oh, ow)
    end
    local c = ckk // (k[1] * k[2])
    local y = cols:reshape({ n, c, k[1], k[2], oh, ow }):permute(1, 2, 5, 3, 6, 4)
      :reshape({ n, c, oh, k[1], ow * k[2] })
    y = core.zeros({ n, c, oh, k[1], wp }, cols:dtype()):index_add(5, iw, y):reshape({ n, c, oh * k[1], wp })
    y = core.zeros({ n, c, hp, wp }, cols:dtype()):index_add(3, ih, y)
    y = y:narrow(3, p[1] + 1, o[1]):narrow(4, p[2] + 1, o[2])
    return batched and y or y:squeeze(1)
  end)
end

return M
