--- bench/dist.lua - distributed training over Open MPI (issue 14), each figure from jobs
-- started here with mpirun (--oversubscribe: one machine):
--   * all_reduce (sum) of 1, 8 and 64 MB float32 over 2 ranks: dist.all_reduce (checks on and
--     off) and the op in a synced graph against MPI_Allreduce in place on the same buffer, in
--     the same job, taken in turn (bench/dist_allreduce.lua), best (and median) of many rounds;
--     target >= 0.95 of MPI's bandwidth. The C driver bench/dist_allreduce.c (its own job) is printed
--     beside it as a cross-check.
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

-- all_reduce bandwidth: in one job per size, raw MPI_Allreduce on the tensor's buffer and ltc's
-- ways taken in turn (bench/dist_allreduce.lua); the C driver (its own job) as a cross-check
-- rounds per size: many at 1 MB, where a few microseconds are a few percent and a loaded
-- machine's noise is largest (the best and the median round of each way are both reported)
local sizes = { { 1 << 20, "1 MB", 800 }, { 8 << 20, "8 MB", 80 }, { 64 << 20, "64 MB", 16 } }
for _, size in ipairs(sizes) do
  local bytes, name, reps = size[1], size[2], size[3]
  local c = lib.keyvals(string.format("%s-np 2 %s %d %d", MPIRUN, driver, bytes, reps))
  local l = lib.keyvals(string.format("%s-np 2 lua5.4 %s/dist_allreduce.lua %d %d", MPIRUN, lib.dir,
    bytes, reps))
  local key = "_allreduce_" .. bytes .. "_s"
  local tc, raw = c["c" .. key], l["raw" .. key]
  local function gbs(t) return t and bytes / t / 1e9 end
  print(string.format("all_reduce %s f32 over 2 ranks (best of %d): MPI_Allreduce on the same buffer "
    .. "%s (C driver %s); ltc in place %s, without checks %s, op in a synced graph %s", name, reps,
    lib.fmt(gbs(raw), "GB/s"), lib.fmt(gbs(tc), "GB/s"), lib.fmt(gbs(l["ltc" .. key]), "GB/s"),
    lib.fmt(gbs(l["nochk" .. key]), "GB/s"), lib.fmt(gbs(l["lazy" .. key]), "GB/s")))
  -- the ratio of the best rounds (the target's), and of the median rounds beside it
  local mkey = "_allreduce_" .. bytes .. "_median_s"
  local rawm = l["raw" .. mkey]
  for _, v in ipairs({ { "ltc", "dist.all_reduce, checks on", ">= 0.95" },
                       { "nochk", "dist.all_reduce, checks off", ">= 0.95" },
                       { "lazy", "ltc.all_reduce op + sync", "report" } }) do
    local t, tm = l[v[1] .. key], l[v[1] .. mkey]
    local ratio = raw and t and raw / t
    local met = nil
    if v[3] ~= "report" and ratio then met = ratio >= 0.95 end
    lib.row { bench = "dist", workload = "all_reduce " .. name .. " f32, 2 ranks (" .. v[2] .. ")",
      ltc = lib.fmt(gbs(t), "GB/s") .. (rawm and tm and string.format(" (median rounds: ratio %.2f)",
        rawm / tm) or ""),
      peers = "MPI_Allreduce " .. lib.fmt(gbs(raw), "GB/s"),
      ratio = ratio and string.format("%.2f", ratio) or "n/a", target = v[3],
      met = met }
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
