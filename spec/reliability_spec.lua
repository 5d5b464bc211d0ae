-- Reliability, round 2 (issue 17): lists read once, view records that do not grow, capture
-- ended by the next sync after an error, files and messages, deterministic GEMMs. Each case
-- comes from a repro of ../shared/repros/reliability/ and failed before its fix.
local ltc = require "ltc"

local TMP = (os.getenv("TMPDIR") or "/tmp") .. "/ltc_reliab_" .. tostring(os.time()) .. "_"

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert(not ok, "expected an error")
  return tostring(e)
end

describe("cat and stack (r12)", function()
  -- a list whose __index counts its reads
  local function counting(values, hook)
    local reads = 0
    return setmetatable({}, {
      __len = function() return #values end,
      __index = function(_, i)
        if type(i) ~= "number" or i > #values then return nil end
        reads = reads + 1
        if hook then return hook(reads, i) end
        return values[i]
      end,
    }), function() return reads end
  end

  it("never report an unrelated error for a list whose entries change between reads", function()
    pcall(ltc.ones, -1) -- the thread's last error: "ones: negative size"
    local seen = {}
    local list = counting({ 1, 2 }, function(_, i)
      if seen[i] then return "x" end -- a later read of an entry gets a string
      seen[i] = true
      return ltc.ones(2)
    end)
    local ok, res = pcall(ltc.cat, list)
    if ok then
      assert.are.same({ 1, 1, 1, 1 }, res:totable())
    else
      assert.truthy(tostring(res):find("cat", 1, true), res)
      assert.falsy(tostring(res):find("negative size", 1, true), res)
    end
  end)

  it("take no reference when the list raises, so nothing leaks", function()
    collectgarbage()
    local before = ltc.live_info().live_tensors
    for _ = 1, 200 do
      local list = counting({ 1, 2 }, function(n)
        if n == 2 then error("boom") end
        return ltc.ones(10)
      end)
      local e = err_of(ltc.cat, list)
      assert.truthy(e:find("boom", 1, true))
    end
    collectgarbage()
    collectgarbage()
    assert.is_true(ltc.live_info().live_tensors <= before + 2)
  end)
end)

describe("chained views (r07)", function()
  it("keep a record that does not grow: narrow by narrow, syncing each step", function()
    local rest = ltc.arange(0, 3001, 1, "float32")
    local total = 0
    for _ = 1, 3000 do
      total = total + rest[1]
      rest = rest:narrow(1, 2, rest:size(1) - 1)
    end
    assert.are.equal(4498500, total) -- 0 + 1 + ... + 2999
    assert.are.same({ 3000 }, rest:totable())
    assert.is_true(ltc.debug.view_steps(rest) <= 1, "steps: " .. ltc.debug.view_steps(rest))
  end)

  it("compose transposes and reshapes, and writes still reach the base", function()
    local base = ltc.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    local x = base
    for _ = 1, 101 do x = x:t() end -- odd: x is base:t()
    assert.is_true(ltc.debug.view_steps(x) <= 2, "steps: " .. ltc.debug.view_steps(x))
    assert.are.same({ { 1, 4 }, { 2, 5 }, { 3, 6 } }, x:totable())
    local y = base:view(3, 2):view(6):view(2, 3):narrow(2, 2, 2):narrow(2, 2, 1)
    assert.are.same({ { 3 }, { 6 } }, y:totable())
    y:fill_(0)
    x[1][2] = 40
    assert.are.same({ { 1, 2, 0 }, { 40, 5, 0 } }, base:totable())
  end)
end)

describe("a graph capture", function()
  it("ends at the next sync after a Lua error leaves it open (r18)", function()
    local w = ltc.tensor({ 1, 2, 3 })
    local function step()
      local g = ltc.Graph()
      g:capture_begin()
      local _ = w * 2
      for _ = 1, 3 do ltc.sync(); collectgarbage("step") end
      error("user error inside the captured region")
    end
    assert.truthy(err_of(step):find("user error", 1, true))
    assert.are.equal(6, w:sum():item())
    assert.is_true(pcall(ltc.sync))
  end)
end)

describe("files", function()
  local function npy(path, shape)
    local h = "{'descr': '<f4', 'fortran_order': False, 'shape': " .. shape .. ", }"
    local total = (10 + #h + 1 + 63) // 64 * 64
    h = h .. string.rep(" ", total - 10 - #h - 1) .. "\n"
    local f = assert(io.open(path, "wb"))
    f:write("\x93NUMPY\1\0", string.pack("<I2", #h), h)
    f:close()
  end

  it("name the file and the sizes of a .npy header too large to exist (r04)", function()
    local p = TMP .. "huge.npy"
    npy(p, "(4611686018427387904, 4)")
    local e = err_of(ltc.load, p)
    os.remove(p)
    assert.truthy(e:find("load: " .. p .. ": a float32 tensor of sizes [4611686018427387904,4] "
      .. "has too many bytes", 1, true), e)
  end)

  it("name read_idx and the file for an IDX header too large to exist (r04)", function()
    local p = TMP .. "huge.idx"
    local f = assert(io.open(p, "wb"))
    f:write("\0\0\8\2", string.pack(">I4I4", 0xffffffff, 0xffffffff))
    f:close()
    local e = err_of(ltc.io.read_idx, p)
    os.remove(p)
    assert.truthy(e:find("read_idx: '" .. p .. "'", 1, true), e)
  end)

  it("report a .npz write that fails (r05)", function()
    local e = err_of(ltc.save, "/dev/full", { w = ltc.ones(1000) })
    assert.truthy(e:find("save: cannot write '/dev/full'", 1, true), e)
  end)

  it("name load and the archive for malformed .npz files (r06)", function()
    local good = TMP .. "g.npz"
    ltc.save(good, { a = ltc.tensor({ 1, 2, 3 }) })
    local f = assert(io.open(good, "rb"))
    local data = f:read("a")
    f:close()
    os.remove(good)
    local function patch(s, pos, fmt, v)
      return s:sub(1, pos - 1) .. string.pack(fmt, v) .. s:sub(pos + string.packsize(fmt))
    end
    local eocd = data:find("PK\5\6", 1, true)
    local cd = data:find("PK\1\2", 1, true)
    for name, bytes in pairs({
      bad_cd_offset = patch(data, eocd + 16, "<I4", 0xfffffff0),
      bad_count = patch(data, eocd + 10, "<I2", 0xffff),
      bad_local_offset = patch(data, cd + 42, "<I4", 0xfffffff0),
      empty_member = patch(patch(data, cd + 20, "<I4", 0), cd + 16, "<I4", 0),
      truncated = data:sub(1, 50),
      bad_name_len = patch(data, cd + 28, "<I2", 0xffff),
    }) do
      local p = TMP .. name .. ".npz"
      local out = assert(io.open(p, "wb"))
      out:write(bytes)
      out:close()
      local e = err_of(ltc.load, p)
      os.remove(p)
      assert.truthy(e:find("load: '" .. p .. "'", 1, true), name .. ": " .. e)
      assert.falsy(e:find("bad argument", 1, true), name .. ": " .. e)
      assert.falsy(e:find("/tmp/lua_", 1, true), name .. ": " .. e)
    end
  end)

  it("name save and load and the bad argument (r19)", function()
    assert.truthy(err_of(ltc.load, nil):find("load: bad argument #1 (a path string expected, got nil)", 1, true))
    assert.truthy(err_of(ltc.save, 5, ltc.ones(1)):find("save: bad argument #1", 1, true))
    local closed = ltc.ones(2)
    getmetatable(closed).__close(closed)
    assert.truthy(err_of(ltc.save, TMP .. "c.npy", closed):find("got a closed tensor", 1, true))
  end)

  it("round-trip a state dict through .npz with values intact", function()
    local p = TMP .. "rt.npz"
    ltc.save(p, { w = ltc.tensor({ { 1.5, -2 } }), n = ltc.tensor({ 7, 8 }, "int64") })
    local back = ltc.load(p)
    os.remove(p)
    assert.are.same({ { 1.5, -2 } }, back.w:totable())
    assert.are.same({ 7, 8 }, back.n:totable())
    assert.are.equal("int64", back.n:dtype())
  end)
end)

describe("random ops", function()
  it("reject an integer or bool dtype at the call (r13)", function()
    assert.truthy(err_of(ltc.rand, { 3 }, "int64"):find("rand: dtype int64 is not a floating dtype", 1, true))
    assert.truthy(err_of(ltc.randn, { 2 }, "bool"):find("randn: dtype bool is not a floating dtype", 1, true))
    assert.are.equal("float64", ltc.rand({ 2 }, "float64"):dtype())
    assert.are.equal(12, (ltc.tensor({ 1, 2, 3 }) * 2):sum():item())
  end)
end)

describe("the environment", function()
  it("warns once, naming the variable, about an invalid LTC_* value", function()
    -- the child finds the module where this process did
    local cmd = string.format("LUA_PATH='%s' LUA_CPATH='%s' ", package.path, package.cpath)
      .. "LTC_NUM_THREADS=lots LTC_SAVE_GRAPHS_FMT=png lua5.4 -e 'local ltc = require \"ltc\"; "
      .. "ltc.sync(); ltc.sync(); print(ltc.config.LTC_NUM_THREADS)' 2>&1"
    local p = io.popen(cmd)
    local out = p:read("a")
    p:close()
    assert.truthy(out:find("LTC_NUM_THREADS=lots is invalid", 1, true), out)
    assert.truthy(out:find("LTC_SAVE_GRAPHS_FMT=png is invalid", 1, true), out)
    local _, n = out:gsub("LTC_NUM_THREADS=lots", "")
    assert.are.equal(1, n)
  end)
end)

describe("LTC_SAVE_GRAPHS", function()
  it("reports a write failure once on stderr and counts each one", function()
    local cmd = string.format("LUA_PATH='%s' LUA_CPATH='%s' ", package.path, package.cpath)
      .. "LTC_SAVE_GRAPHS=/dev/full lua5.4 -e 'local ltc = require \"ltc\"; "
      .. "print((ltc.tensor({1, 2}) * 3):sum():item()); print((ltc.tensor({1, 2}) * 4):max():item()); "
      .. "print(\"failed\", ltc.metrics.counter(\"SaveGraphsFailed\"))' 2>&1"
    local p = io.popen(cmd)
    local out = p:read("a")
    p:close()
    local _, n = out:gsub("LTC_SAVE_GRAPHS: cannot write /dev/full", "")
    assert.are.equal(1, n, out)
    assert.truthy(out:find("failed\t2", 1, true), out)
  end)
end)

describe("ltc.use_deterministic_algorithms (r08)", function()
  after_each(function()
    ltc.use_deterministic_algorithms(false)
    ltc.config.LTC_NUM_THREADS = 0
  end)

  it("makes float32 matmul bits independent of the thread count", function()
    ltc.use_deterministic_algorithms(true)
    assert.is_true(ltc.are_deterministic_algorithms_enabled())
    ltc.manual_seed(42)
    local m, w = ltc.randn(512, 1024), ltc.randn(1024, 256)
    ltc.sync()
    local function bits(threads)
      ltc.config.LTC_NUM_THREADS = threads
      local t = m:matmul(w):totable()
      local parts = {}
      for i = 1, #t do parts[i] = string.pack(string.rep("<f", #t[i]), table.unpack(t[i])) end
      return table.concat(parts)
    end
    local one, two, four = bits(1), bits(2), bits(4)
    assert.is_true(one == two and one == four)
    assert.truthy(err_of(ltc.use_deterministic_algorithms, 1):find("must be a boolean", 1, true))
  end)
end)
