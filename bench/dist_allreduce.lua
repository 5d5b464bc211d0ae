--- bench/dist_allreduce.lua - run by bench/dist.lua under mpirun: all_reduce (sum) of BYTES of
-- float32 over the ranks, in one job, on one buffer, four ways taken in turn each round, in an
-- order that rotates from round to round (so a loaded machine slows each alike):
--   raw    MPI_Allreduce in place on the tensor's buffer and nothing else (dist._raw_all_reduce)
--   ltc    dist.all_reduce(x, "sum") with the descriptor checks on (the default): complete on
--          return, as torch.distributed.all_reduce (it syncs what is pending, then runs at once
--          on x's buffer), so no ltc.sync() follows
--   nochk  the same with the checks off (init{check = false}, LTC_DIST_CHECK=0)
--   lazy   y = ltc.all_reduce(x); ltc.sync(): the op in a synced graph (plan, copy into y's
--          new buffer, the collective; checks on)
-- Each round starts with a barrier; a round's time is the slowest rank's. Rank 0 prints, per
-- way, "<way>_allreduce_<bytes>_s <best seconds>" and "..._median_s <median seconds>".
--   mpirun -np 2 lua5.4 bench/dist_allreduce.lua BYTES [REPS]
local ltc = require "ltc"
local dist = require "ltc.distributed"
local bytes, reps = tonumber(arg[1] or "1048576"), tonumber(arg[2] or "20")
local rank = dist.init()
local x = ltc.ones(bytes // 4)
ltc.sync()
local ways = {
  { "raw", function() dist._raw_all_reduce(x) end },
  { "ltc", function() dist.all_reduce(x, "sum") end },
  { "nochk", function() dist.all_reduce(x, "sum") end, false },
  { "lazy", function() local y = ltc.all_reduce(x, 0); ltc.sync(); y = nil end }, -- luacheck: ignore
}
local times, tt = {}, ltc.zeros({ 1 }, "float64")
for _, w in ipairs(ways) do times[w[1]] = {} end
for r = 0, reps do
  for k = 1, #ways do
    local w = ways[(r + k - 1) % #ways + 1] -- each way takes each place in the round in turn
    dist.init({ check = w[3] ~= false })
    dist.barrier()
    local t0 = ltc.clock()
    w[2]()
    local t = ltc.clock() - t0
    tt[1] = t
    dist.all_reduce(tt, "max")
    if r > 0 then table.insert(times[w[1]], tt[1]) end
  end
  collectgarbage("step")
end
if rank == 0 then
  for _, w in ipairs(ways) do
    local ts = times[w[1]]
    table.sort(ts)
    print(string.format("%s_allreduce_%d_s %.9f", w[1], bytes, ts[1]))
    print(string.format("%s_allreduce_%d_median_s %.9f", w[1], bytes, ts[(#ts + 1) // 2]))
  end
end
