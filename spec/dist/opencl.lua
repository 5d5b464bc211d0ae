-- Collectives on OpenCL tensors (when the ltc.opencl module and a device exist): the OpenCL
-- backend lowers no collective, so each runs through the eager fallback on the host (data
-- moved to the CPU and back by the core, counted as EagerFallback::<op>).
package.path = (arg[0]:match("^(.*)/[^/]*$") or ".") .. "/?.lua;" .. package.path
local S = require "support"
local ltc, dist, rank, ws = S.init()
local ok, ocl = pcall(require, "ltc.opencl")
if not (ok and ocl.available()) then
  print("skipped: no OpenCL device")
  S.done()
  return
end
ocl.use()
local t = ltc.tensor({ rank + 1, 2 })
dist.all_reduce(t, "sum")
S.equal("all_reduce on opencl", t, { ws * (ws + 1) / 2, 2 * ws })
local b = ltc.tensor({ rank * 10 })
dist.broadcast(b, ws - 1)
S.equal("broadcast on opencl", b, { (ws - 1) * 10 })
local g = dist.all_gather_into_tensor(ltc.tensor({ rank }, "float32"))
local want = {}
for r = 0, ws - 1 do want[r + 1] = r end
S.equal("all_gather on opencl", g, want)
S.check("through the host (eager fallback)", ltc.metrics.counter("EagerFallback::all_reduce") >= 1,
  ltc.metrics.counter("EagerFallback::all_reduce"))
S.done()
