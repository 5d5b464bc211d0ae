--- bench/dist.lua - distributed training over Open MPI (issue 14), each figure from jobs
-- started here with mpirun (--oversubscribe: one machine):
--   * all_reduce (sum) of 1 MB and 64 MB float32 over 2 ranks: ltc (one synced graph per
--     call: plan, descriptor check, copy, MPI) against a C driver calling MPI_Allreduce in
--     place (bench/dist_allreduce.c), best of several calls; target >= 0.95 of its bandwidth.
--     Also ltc with the descriptor checks off (LTC_DIST_CHECK=0).
--   * the Fashion-MNIST epoch (MLP, global batch 128, examples/fashion_mnist.lua) with 2 ranks
--     of 1 thread (--distributed) against 1 rank of 2 threads, and against PyTorch DDP (gloo,
--     2 processes of 1 thread, bench/dist_torch.py); the accuracies, and the communication
--     share of rank 0's training time (dist.stats()).
-- Needs openmpi-bin and libopenmpi-dev (mpicc); python3-torch for the PyTorch row.
local lib = require "bench.lib"
local ltc = lib.ltc

local function sh(cmd) return os.execute(cmd .. " >/dev/null 2>&1") == true end
local build = os.getenv("BUILD") or "build"
if not sh("command -v mpirun") or not sh("command -v mpicc") then
  print("dist: Open MPI is not installed (apt-get install openmpi-bin libopenmpi-dev); skipped")
  return
end
if not package.searchpath("ltc.distributed", package.cpath) then
  print("dist: the ltc.distributed module is not built (make); skipped")
  return
end
local driver = build .. "/bench_dist_allreduce"
assert(sh(string.format("mpicc -O2 -o %s %s/dist_allreduce.c", driver, lib.dir)), "dist: mpicc failed")

local MPIRUN = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe "
  .. (sh("test $(id -u) = 0") and "--allow-run-as-root " or "")

-- all_reduce bandwidth
for _, size in ipairs({ { 1 << 20, "1 MB", 200 }, { 64 << 20, "64 MB", 10 } }) do
  local bytes, name, reps = size[1], size[2], size[3]
  local c = lib.keyvals(string.format("%s-np 2 %s %d %d", MPIRUN, driver, bytes, reps))
  local l = lib.keyvals(string.format("%s-np 2 lua5.4 %s/dist_allreduce.lua %d %d", MPIRUN, lib.dir,
    bytes, reps))
  local loff = lib.keyvals(string.format("LTC_DIST_CHECK=0 %s-np 2 lua5.4 %s/dist_allreduce.lua %d %d",
    MPIRUN, lib.dir, bytes, reps))
  local key = "allreduce_" .. bytes .. "_s"
  local tc, tl, toff = c["c_" .. key], l["ltc_" .. key], loff["ltc_" .. key]
  local function gbs(t) return t and bytes / t / 1e9 end
  print(string.format("all_reduce %s over 2 ranks: MPI_Allreduce %s, ltc %s, ltc without checks %s",
    name, lib.fmt(gbs(tc), "GB/s"), lib.fmt(gbs(tl), "GB/s"), lib.fmt(gbs(toff), "GB/s")))
  for _, v in ipairs({ { "checks on", tl }, { "checks off", toff } }) do
    local ratio = tc and v[2] and tc / v[2]
    lib.row { bench = "dist", workload = "all_reduce " .. name .. " f32, 2 ranks (" .. v[1] .. ")",
      ltc = lib.fmt(gbs(v[2]), "GB/s"), peers = "MPI_Allreduce " .. lib.fmt(gbs(tc), "GB/s"),
      ratio = ratio and string.format("%.2f", ratio) or "n/a", target = ">= 0.95",
      met = ratio and ratio >= 0.95 }
  end
end

-- the Fashion-MNIST epoch
local dir = os.getenv("FASHION_MNIST_DIR") or ltc.data.FASHION_MNIST_DIR
if not ltc.data.mnist_files(dir) then
  print("dist: no Fashion-MNIST in " .. dir .. "; the epoch rows are skipped")
  return
end
local function epoch(cmd)
  local f = io.popen(cmd .. " 2>&1")
  local out = f:read("a")
  f:close()
  return {
    s = tonumber(out:match("training: %d+ epoch%(s%), %d+ steps, ([%d.]+) s")),
    acc = tonumber(out:match("test accuracy ([%d.]+)")),
    comm = tonumber(out:match("communication %(rank 0%): ([%d.]+) s")),
    wait = tonumber(out:match("of which ([%d.]+) s waiting")),
    out = out,
  }
end
local ex = "examples/fashion_mnist.lua --data " .. dir .. " --plot /dev/null"
local two = epoch(string.format("%s-np 2 -x LTC_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 bin/ltc %s "
  .. "--distributed", MPIRUN, ex))
local one = epoch("LTC_NUM_THREADS=2 bin/ltc " .. ex)
local pt = lib.keyvals(string.format("%s %s/dist_torch.py %s 2", lib.python, lib.dir, dir))
if not two.s then print(two.out) end
print(string.format("Fashion-MNIST epoch, global batch 128: 2 ranks x 1 thread %s (accuracy %s), "
  .. "1 rank x 2 threads %s (accuracy %s), PyTorch DDP gloo 2 x 1 %s (accuracy %s)",
  lib.fmt(two.s, "s"), tostring(two.acc), lib.fmt(one.s, "s"), tostring(one.acc),
  lib.fmt(pt.torch_ddp_epoch_s, "s"), tostring(pt.torch_ddp_accuracy)))
if two.comm and two.s then
  print(string.format("communication share of rank 0's training: %.1f%% (%.2f s, of which %.2f s "
    .. "waiting for the other rank in the descriptor checks)", 100 * two.comm / two.s, two.comm,
    two.wait or 0))
end
lib.row { bench = "dist", workload = "FMNIST epoch: 2 ranks x 1 thread vs 1 rank x 2 threads",
  ltc = lib.fmt(two.s, "s"), peers = "1 rank " .. lib.fmt(one.s, "s"),
  ratio = two.s and one.s and string.format("%.2f", one.s / two.s) or "n/a", target = "report" }
lib.row { bench = "dist", workload = "FMNIST epoch: ltc 2 ranks vs PyTorch DDP gloo 2 ranks",
  ltc = lib.fmt(two.s, "s"), peers = "PyTorch " .. lib.fmt(pt.torch_ddp_epoch_s, "s"),
  ratio = two.s and pt.torch_ddp_epoch_s and string.format("%.2f", pt.torch_ddp_epoch_s / two.s) or "n/a",
  target = "report" }
lib.row { bench = "dist", workload = "FMNIST accuracy: 2 ranks vs 1 rank (same global batch)",
  ltc = tostring(two.acc), peers = tostring(one.acc),
  ratio = two.acc and one.acc and string.format("%.4f", math.abs(two.acc - one.acc)) or "n/a",
  target = "<= 0.01", met = two.acc and one.acc and math.abs(two.acc - one.acc) <= 0.01 }
lib.row { bench = "dist", workload = "FMNIST: communication share of the step (rank 0)",
  ltc = two.comm and two.s and string.format("%.1f%%", 100 * two.comm / two.s) or "n/a",
  target = "report" }
