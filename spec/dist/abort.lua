-- A rank that raises an error mid-step: the others' next collective fails with an error
-- naming it (checks on), or the watchdog ends the job with MPI_Abort after the timeout
-- (checks off: LTC_DIST_CHECK=0). spec/distributed_spec.lua times the job.
package.path = (arg[0]:match("^(.*)/[^/]*$") or ".") .. "/?.lua;" .. package.path
local S = require "support"
local ltc, dist, rank, ws = S.init({ timeout = tonumber(os.getenv("ABORT_TIMEOUT") or "3") })
local w = ltc.ones(4)
for step = 1, 5 do
  if step == 3 and rank == ws - 1 then error("rank " .. rank .. " fails in step 3 on purpose") end
  local ok, err = pcall(function()
    dist.all_reduce(w, "avg")
    ltc.sync()
  end)
  if not ok then
    print(string.format("rank %d step %d error: %s", rank, step, err))
    io.stdout:flush()
    os.exit(5)
  end
end
print("rank " .. rank .. " finished all steps")
