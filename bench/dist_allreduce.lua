--- bench/dist_allreduce.lua - run by bench/dist.lua under mpirun: ltc.all_reduce (sum) of
-- BYTES of float32 over the ranks, as one synced graph each time (the plan, the descriptor
-- check unless LTC_DIST_CHECK=0, the copy into the output and MPI_Allreduce), best of REPS
-- after a warm-up; rank 0 prints "ltc_allreduce_<bytes>_s <seconds>".
--   mpirun -np 2 lua5.4 bench/dist_allreduce.lua BYTES [REPS]
local ltc = require "ltc"
local dist = require "ltc.distributed"
local bytes, reps = tonumber(arg[1] or "1048576"), tonumber(arg[2] or "20")
local rank = dist.init()
local x = ltc.ones(bytes // 4)
ltc.sync()
local best = math.huge
for r = 0, reps do
  dist.barrier()
  local t0 = ltc.clock()
  local y = ltc.all_reduce(x, 0)
  ltc.sync()
  local t = ltc.clock() - t0
  local tt = ltc.tensor({ t }, "float64")
  dist.all_reduce(tt, "max")
  t = tt:item()
  if r > 0 and t < best then best = t end
  y = nil -- luacheck: ignore
end
if rank == 0 then print(string.format("ltc_allreduce_%d_s %.9f", bytes, best)) end
