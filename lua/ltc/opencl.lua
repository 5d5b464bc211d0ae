--- ltc.opencl: the OpenCL device backend (`require "ltc.opencl"`).
--
-- Loading it registers the backend `opencl` (its C half is ltc/opencl.so, built by `make`
-- where `pkg-config OpenCL` succeeds and CLBlast is installed). Nothing touches a device
-- until `ltc.opencl.use()` (or a sync on the backend) opens one: the device named by
-- `opts.device` or LTC_OPENCL_DEVICE ("P:D", platform and device index, or "N", the N-th
-- device of `devices()`, 0-based as OpenCL counts), else the first GPU, else the first device.
--
--   local ocl = require "ltc.opencl"
--   for _, d in ipairs(ocl.devices()) do print(d.index, d.name, d.vendor, d.memory) end
--   ocl.use()                 -- syncs compile for and run on the device; new data lives there
--   ltc.set_backend("cpu")    -- back to the CPU (data made on the device stays usable)
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local ltc = require "ltc"

local path = package.searchpath("ltc.opencl", package.cpath)
if not path then
  raise("ltc.opencl: ltc/opencl.so is not built (make builds it where `pkg-config OpenCL` " ..
    "succeeds and CLBlast is installed: ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd " ..
    "libclblast-dev)")
end
local open, why = package.loadlib(path, "luaopen_ltc_opencl")
if not open then raise("ltc.opencl: cannot load " .. path .. ": " .. tostring(why)) end
local C = open()

local M = {}

--- devices() -> list of {index, platform, device, platform_name, name, vendor, version,
-- memory (bytes), max_alloc (bytes), compute_units, fp64}; or nil and a message when no
-- OpenCL platform exists on this machine.
M.devices = C.devices

--- available() -> true, or false and the reason (no platform, no device).
function M.available()
  local d, msg = C.devices()
  if not d then return false, msg end
  if #d == 0 then return false, "ltc.opencl: the OpenCL platforms have no device" end
  return true
end

--- open([device]) -> the info table of the device the backend runs on (see devices()).
-- Raises a clear error when there is no OpenCL device. The first open fixes the device.
M.open = C.open

--- use([opts]) -> device info: opens the device (opts.device as in open) and makes
-- `opencl` the backend syncs run on (ltc.set_backend("opencl")).
function M.use(opts)
  if opts ~= nil and type(opts) ~= "table" then
    raise("opencl.use: bad argument #1 (a table of options {device =} expected, got "
      .. ltc.typename(opts) .. ")")
  end
  local ok, info = pcall(C.open, opts and opts.device)
  if not ok then raise((tostring(info):gsub("^bad argument #1 to '[%w%.]+'", "opencl.use: bad option device"))) end
  ltc.set_backend("opencl")
  return info
end

--- lowered_ops() -> {name = true, ...}: the ops run on the device (float32 operands); the
-- others (and integer pow, 1-d matmul, ...) run through the eager fallback, counted.
M.lowered_ops = C.lowered_ops
--- finish(): waits until the device has run everything enqueued. A sync enqueues its
-- kernels and returns without waiting for them (the queue is in order: reading a value,
-- t:item() or t:totable(), waits for what it needs), so timing device work needs finish().
M.finish = C.finish
M.set_memory_limit = C.set_memory_limit   -- (bytes) cap on device memory, 0 = the device's
M.trim = C.trim                           -- () frees cached device buffers
M.last_build_log = C.last_build_log       -- () source and log of the last failed build
M._try_build = C._try_build               -- (src) builds OpenCL C as given (tests)
M._fail_run_after = C._fail_run_after     -- (n) the n-th next run fails as a lost device (tests)
M._bench_copy = C._bench_copy             -- (n_floats, reps) -> GB/s of a copy kernel
M._bench_gemm = C._bench_gemm             -- (m, n, k, reps) -> ms of a raw CLBlast SGEMM

return M
