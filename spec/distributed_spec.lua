-- ltc.distributed: the Lua API on one process (identity collectives, bad input), and the
-- scripts of spec/dist/ under mpirun with 2 and 3 ranks (collectives by hand values, DDP
-- against single-process training, DDP under ltc.jit against the untraced step, mismatched
-- ranks, a rank that fails mid-step). The
-- mpirun part is skipped, with one line saying why, where Open MPI or the module is absent
-- or under the sanitizers (make test-asan: lua5.4 runs with the ASan runtime preloaded).
local ltc = require "ltc"
local dist = require "ltc.distributed"

local ROOT = (debug.getinfo(1, "S").source:match("^@(.*)/spec/[^/]*$")) or "."

describe("ltc.distributed on one process", function()
  it("is rank 0 of 1 before init, and the collectives are the identity", function()
    assert.are.equal(0, dist.rank())
    assert.are.equal(1, dist.world_size())
    assert.is_false(dist.is_initialized())
    local t = ltc.tensor({ 1.5, -2 })
    assert.are.equal(t, dist.all_reduce(t, "sum"))
    assert.are.same({ 1.5, -2 }, t:totable())
    dist.broadcast(t, 0)
    assert.are.same({ 1.5, -2 }, t:totable())
    local parts = dist.all_gather(ltc.tensor({ { 1, 2 } }))
    assert.are.equal(1, #parts)
    assert.are.same({ { 1, 2 } }, parts[1]:totable())
    assert.are.same({ 3, 4 }, dist.reduce_scatter(ltc.tensor({ 3, 4 }), "max"):totable())
    dist.barrier()
  end)

  it("reduces a bucket in place: the concatenation is written where the collective works", function()
    local a, b = ltc.tensor({ 1, 2 }) * 2, ltc.tensor({ 3 }) * 3
    -- the collective's result is an output: the concatenation lives in that output's buffer
    local r = ltc.all_reduce(ltc.cat({ a, b }, 1), 1)
    local text = ltc.debug.backend_text(r)
    assert.truthy(text:find("cat%(b%d+, b%d+%) %-> b%d+ f32%[3%] temp in b(%d+)"), text)
    assert.are.same({ 2, 4, 9 }, r:totable())
    -- a temporary result (only narrowed afterwards): it takes over the concatenation's range
    local c, d = ltc.tensor({ 1, 2 }) * 2, ltc.tensor({ 3 }) * 3
    local g = ltc.all_reduce(ltc.cat({ c, d }, 1), 0):narrow(1, 2, 2) * 1
    text = ltc.debug.backend_text(g)
    local at = text:match("cat%([^)]*%) %-> b%d+ f32%[3%] temp@(%d+)")
    assert.truthy(at, text)
    assert.truthy(text:find("all_reduce%(b%d+%) %-> b%d+ f32%[3%] temp@" .. at .. "\n"), text)
    assert.are.same({ 4, 9 }, g:totable())
  end)

  it("rejects bad input with errors naming the function and the value", function()
    local function fails(pat, f, ...)
      local ok, err = pcall(f, ...)
      assert.is_false(ok)
      assert.truthy(tostring(err):find(pat, 1, true), tostring(err))
    end
    fails("all_reduce: expected a tensor, got string", dist.all_reduce, "x")
    fails("unknown op \"median\"", dist.all_reduce, ltc.ones(2), "median")
    fails("unknown op 3", dist.reduce_scatter, ltc.ones(2), 3)
    fails("src 1 is out of range for 1 rank (ranks are 0..0)", dist.broadcast, ltc.ones(2), 1)
    fails("dst -1 is out of range", dist.reduce, ltc.ones(2), -1)
    fails("src 0.5 is out of range", dist.broadcast, ltc.ones(2), 0.5)
    fails("all_gather: expected a tensor, got nil", dist.all_gather)
    fails("op avg needs a floating-point tensor, got int64", dist.all_reduce, ltc.ones(2, "int64"), "avg")
    fails("reduce_scatter: dim 1 of self [3] must be divisible by world_size 2", ltc.reduce_scatter,
      ltc.ones(3), 0, 2)
    fails("init: unknown option \"chek\"", dist.init, { chek = false })
    fails("init: expected a table of options, got number", dist.init, 5)
    fails("timeout must be a positive number", dist.init, { timeout = -1 })
    fails("DistributedDataParallel: expected an ltc.nn module, got string", ltc.nn.parallel.DistributedDataParallel, "m")
    fails("bucket_cap_mb must be a positive number", ltc.nn.parallel.DistributedDataParallel,
      ltc.nn.Linear(2, 2), { bucket_cap_mb = 0 })
    -- and the runtime keeps working
    assert.are.same({ 2, 2 }, (ltc.ones(2) * 2):totable())
  end)

  it("deals a distributed DataLoader's epoch round-robin over the ranks", function()
    local x = ltc.arange(1, 11):long() -- rows 1..10
    local got = {}
    for r = 0, 2 do
      local loader = ltc.data.DataLoader(x, { batch_size = 2, distributed = true, rank = r, world_size = 3 })
      local rows = {}
      for _, b in loader:batches() do for _, v in ipairs(b:totable()) do rows[#rows + 1] = v end end
      got[r + 1] = rows
      assert.are.equal(2, #loader)
    end
    -- 10 rows padded to 12 with rows 1 and 2: rank r takes positions r+1, r+4, r+7, r+10
    assert.are.same({ { 1, 4, 7, 10 }, { 2, 5, 8, 1 }, { 3, 6, 9, 2 } }, got)
    local cut = ltc.data.DataLoader(x, { batch_size = 2, distributed = true, rank = 2, world_size = 3,
      drop_last = true })
    local rows = {}
    for _, b in cut:batches() do for _, v in ipairs(b:totable()) do rows[#rows + 1] = v end end
    assert.are.same({ 3, 6 }, rows) -- 9 rows, 3 a rank, one full batch of 2
    assert.has_error(function()
      ltc.data.DataLoader(x, { distributed = true, rank = 3, world_size = 3 }):batches()
    end, "DataLoader: rank 3 is out of range for world_size 3 (ranks are 0-based)")
  end)
end)

-- ---- under mpirun -----------------------------------------------------------------------

local function sh_ok(cmd) return os.execute(cmd .. " >/dev/null 2>&1") == true end

local skip
if not dist.is_available() then
  skip = "the Open MPI module was not built (install libopenmpi-dev openmpi-bin, then make)"
elseif not sh_ok("command -v mpirun") then
  skip = "mpirun not found (install openmpi-bin)"
elseif (os.getenv("LD_PRELOAD") or ""):find("asan", 1, true) then
  skip = "not under the sanitizers (Open MPI is not instrumented)"
end

local function run(np, script, env)
  local build = package.searchpath("ltc.core", package.cpath):match("^(.*)/ltc/core%.so$")
  local cmd = string.format("cd %q && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
    .. "LUA_PATH=%q LUA_CPATH=%q %s timeout 300 mpirun --allow-run-as-root --oversubscribe -np %d "
    .. "lua5.4 spec/dist/%s.lua 2>&1; echo \"exit=$?\"", ROOT, ROOT .. "/lua/?.lua;" .. ROOT
    .. "/lua/?/init.lua;;", build .. "/?.so;;", env or "", np, script)
  local t0 = os.time()
  local p = io.popen(cmd)
  local out = p:read("a")
  p:close()
  return out, tonumber(out:match("exit=(%d+)%s*$")), os.time() - t0
end

local function all_done(out, np)
  assert.is_nil(out:find("FAIL", 1, true), out)
  for r = 0, np - 1 do
    assert.truthy(out:find("done rank " .. r .. " failures 0", 1, true), out)
  end
end

describe("ltc.distributed under mpirun", function()
  if skip then
    io.stderr:write("distributed_spec: mpirun specs skipped: " .. skip .. "\n")
    it("is skipped: " .. skip, function() pending(skip) end)
    return
  end
  for _, np in ipairs({ 2, 3 }) do
    it(np .. " ranks: every collective and dtype against hand values, 0-size, views, gradients", function()
      local out, code = run(np, "collectives")
      all_done(out, np)
      assert.are.equal(0, code, out)
    end)

    it(np .. " ranks: DDP steps equal single-process training on the global batch, no recompiles", function()
      local out, code = run(np, "ddp")
      all_done(out, np)
      assert.are.equal(0, code, out)
    end)

    it(np .. " ranks: a DDP step under ltc.jit equals the untraced step, replays communicate, no recompiles", function()
      local out, code = run(np, "ddp_jit")
      all_done(out, np)
      -- DDP's bookkeeping is not Lua state the jitted step changes
      assert.is_nil(out:find("fn changes Lua values", 1, true), out)
      assert.are.equal(0, code, out)
    end)

    it(np .. " ranks: ranks that disagree get an error naming the mismatch on every rank", function()
      local out, code = run(np, "mismatch")
      all_done(out, np)
      assert.are.equal(0, code, out)
    end)

    if package.searchpath("ltc.opencl", package.cpath) then
      it(np .. " ranks: collectives on OpenCL tensors run through the host (eager fallback)", function()
        local out, code = run(np, "opencl")
        all_done(out, np)
        assert.are.equal(0, code, out)
      end)
    end

    it(np .. " ranks: a rank that raises an error mid-step stops the others with an error naming it", function()
      local out, code, secs = run(np, "abort", "ABORT_TIMEOUT=30")
      assert.truthy(out:find("rank " .. (np - 1) .. " fails in step 3 on purpose", 1, true), out)
      for r = 0, np - 2 do
        assert.truthy(out:find("rank " .. r .. " step 3 error: [^\n]*all_reduce: ranks disagree "
          .. "%(different collectives%)[^\n]*rank " .. (np - 1) .. " runs finalize %(its script ended "
          .. "or raised an error%)"), out)
      end
      assert.are_not.equal(0, code)
      assert.is_true(secs < 25, "took " .. secs .. " s")
    end)

    it(np .. " ranks: with the checks off, the watchdog ends the job with MPI_Abort after the timeout", function()
      local out, code, secs = run(np, "abort", "LTC_DIST_CHECK=0 ABORT_TIMEOUT=2")
      assert.truthy(out:find("has waited more than 2 s for the other ranks", 1, true), out)
      assert.truthy(out:find("aborting the job with MPI_Abort", 1, true), out)
      assert.are_not.equal(0, code)
      assert.is_true(secs < 25, "took " .. secs .. " s")
    end)
  end
end)
