--- ltc.ops: the ops written in Lua over the generated ones, and the Lua-friendly front ends of
-- generated ops whose C schema wants tables (conv2d, pooling). install(core) adds them to the
-- core table and its methods before lua/ltc/init.lua copies core into the module, so they
-- are ltc.<name> and t:<name>() like any generated op, and autograd sees the generated ops
-- they call.
local M = {}

local type, select, unpack = type, select, table.unpack

-- A {height, width} pair from a number (square) or a table of one or two numbers.
local function pair(v, what, fname)
  if type(v) == "number" then return { v, v } end
  if type(v) == "table" and #v == 1 then return { v[1], v[1] } end
  if type(v) == "table" and #v == 2 then return { v[1], v[2] } end
  error(string.format("%s: %s must be a number or a table of 2 numbers", fname, what), 3)
end

--- install(core): adds the ops below to core and core.methods.
function M.install(core)
  local methods = core.methods

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
  def("expand_as", function(t, other) return t:expand(other:size()) end, true)
  def("view_as", function(t, other) return t:view(other:size()) end, true)
  def("reshape_as", function(t, other) return t:reshape(other:size()) end, true)

  -- A dim argument of a Lua op: 1-based or negative against t's dims, as a 1-based number.
  local function wrap_dim(t, dim, fname)
    local n = t:dim()
    if n == 0 then n = 1 end
    if math.type(dim) ~= "integer" or dim == 0 or dim > n or dim < -n then
      error(string.format("%s: dim %s out of range for a %d-d tensor", fname, tostring(dim), t:dim()), 3)
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
        if math.type(s) ~= "integer" or s < 0 then error("split: sizes must be integers >= 0", 2) end
        total = total + s
      end
      if total ~= n then
        error(string.format("split: sizes add up to %d, but dim %d has size %d", total, dim, n), 2)
      end
      for i, s in ipairs(size) do out[i] = t:narrow(dim, at, s); at = at + s end
      return out
    end
    if math.type(size) ~= "integer" or size < 1 then
      if not (size == 0 and n == 0) then error("split: size must be a positive integer", 2) end
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
    if math.type(chunks) ~= "integer" or chunks < 1 then
      error("chunk: chunks must be a positive integer", 2)
    end
    dim = wrap_dim(t, dim or 1, "chunk")
    local n = t:size(dim)
    return t:split(math.max((n + chunks - 1) // chunks, n == 0 and 0 or 1), dim)
  end, true)

  ---------------------------------------------------------------------------------------
  -- convolution and pooling: PyTorch's argument order and defaults

  local conv2d = core.conv2d
  --- ltc.conv2d(x, weight [, bias [, stride [, padding [, dilation [, groups]]]]]): x
  -- [N, C, H, W] or [C, H, W], weight [K, C / groups, kh, kw], bias [K] or nil; stride
  -- (default 1), padding (0) and dilation (1) are numbers or {h, w}; groups defaults to 1.
  -- The schema of conv2d.nobias (x, weight, stride, padding, dilation, groups) works too.
  def("conv2d", function(x, weight, bias, stride, padding, dilation, groups, ...)
    if select("#", ...) > 0 then error("conv2d: expected at most 7 arguments", 2) end
    if type(bias) == "table" then -- no bias: the arguments of conv2d.nobias
      bias, stride, padding, dilation, groups = nil, bias, stride, padding, dilation
    end
    local s, p = pair(stride or 1, "stride", "conv2d"), pair(padding or 0, "padding", "conv2d")
    local d = pair(dilation or 1, "dilation", "conv2d")
    if bias == nil then return conv2d(x, weight, s, p, d, groups or 1) end
    return conv2d(x, weight, bias, s, p, d, groups or 1)
  end, true)

  local max_pool2d = core.max_pool2d
  --- ltc.max_pool2d(x, kernel_size [, stride [, padding [, dilation [, ceil_mode]]]]):
  -- stride defaults to kernel_size, padding to 0, dilation to 1; numbers or {h, w}.
  def("max_pool2d", function(x, kernel_size, stride, padding, dilation, ceil_mode, ...)
    if select("#", ...) > 0 then error("max_pool2d: expected at most 6 arguments", 2) end
    local k = pair(kernel_size, "kernel_size", "max_pool2d")
    return max_pool2d(x, k, stride and pair(stride, "stride", "max_pool2d") or k,
      pair(padding or 0, "padding", "max_pool2d"), pair(dilation or 1, "dilation", "max_pool2d"),
      ceil_mode or false)
  end, true)

  local avg_pool2d = core.avg_pool2d
  --- ltc.avg_pool2d(x, kernel_size [, stride [, padding [, ceil_mode [,
  -- count_include_pad]]]]): stride defaults to kernel_size, padding to 0,
  -- count_include_pad to true.
  def("avg_pool2d", function(x, kernel_size, stride, padding, ceil_mode, count_include_pad, ...)
    if select("#", ...) > 0 then error("avg_pool2d: expected at most 6 arguments", 2) end
    local k = pair(kernel_size, "kernel_size", "avg_pool2d")
    if count_include_pad == nil then count_include_pad = true end
    return avg_pool2d(x, k, stride and pair(stride, "stride", "avg_pool2d") or k,
      pair(padding or 0, "padding", "avg_pool2d"), ceil_mode or false, count_include_pad)
  end, true)
end

return M
