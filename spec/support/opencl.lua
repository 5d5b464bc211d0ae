--- spec/support/opencl.lua - what the OpenCL specs share (dofile'd): whether the backend is
-- here, and `same(fn, tol, allow_fallback)`, which runs fn on the CPU backend and then on
-- the OpenCL one and compares every result (values within tol, dtypes, sizes), failing
-- when the device run took an eager-fallback step unless allowed.
local ltc = require "ltc"
local close = dofile("spec/support/close.lua")

-- busted's assert lives in the spec's environment: the spec hands it over (O.assert = assert)
local M = {}
local ok_mod, ocl = pcall(require, "ltc.opencl")
if ok_mod then M.avail, M.why = ocl.available() else M.avail, M.why = false, ocl end
M.ocl = ok_mod and ocl or nil

--- skipped(assert, pending) -> true when there is no OpenCL device (the describe block then
-- returns): hands over busted's assert and marks the block pending with the first line of why.
function M.skipped(assert, pending)
  M.assert = assert
  if M.avail then return false end
  pending("skipped: " .. tostring(M.why):gsub("\n.*", ""))
  return true
end

--- fallbacks() -> the sum of every EagerFallback::<op> counter.
function M.fallbacks()
  local n = 0
  for _, name in ipairs(ltc.metrics.counter_names and ltc.metrics.counter_names() or {}) do
    if name:match("^EagerFallback::") then n = n + ltc.metrics.counter(name) end
  end
  return n
end

local function totables(...)
  local out = {}
  for i = 1, select("#", ...) do
    local t = select(i, ...)
    out[i] = { t:totable(), t:dtype(), t:size() }
  end
  return out
end

--- both(fn) -> the CPU's results, the device's, and the device run's fallback steps.
function M.both(fn)
  ltc.set_backend("cpu")
  local c = totables(fn())
  ltc.set_backend("opencl")
  local f0 = M.fallbacks()
  local o = totables(fn())
  local fb = M.fallbacks() - f0
  ltc.set_backend("cpu")
  return c, o, fb
end

function M.same(fn, tol, allow_fallback)
  local assert = M.assert
  local c, o, fb = M.both(fn)
  assert.are.equal(#c, #o, "number of results")
  for i = 1, #c do
    assert.are.equal(c[i][2], o[i][2], "dtype of result " .. i)
    assert.are.same(c[i][3], o[i][3], "size of result " .. i)
    close(c[i][1], o[i][1], tol or 1e-5)
  end
  if not allow_fallback then assert.are.equal(0, fb, "ran through the eager fallback") end
  return c, o, fb
end

return M
