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
