-- The toy backend (spec/plugin/toy.c), an outside module built against the installed
-- headers: registration from `require`, its own memory, lowering some ops and falling back
-- to the CPU for the rest, its devices, its graph implementation, refused registrations (of
-- backends and of communicators).
-- Run by spec/plugin/run.sh (make test-plugin), not by the main busted run.
local ltc = require "ltc"
local toy = require "toy"

local function delta(f)
  local before = toy.calls()
  f()
  local after, d = toy.calls(), {}
  for k, v in pairs(after) do d[k] = v - before[k] end
  return d
end

describe("a backend registered from outside", function()
  after_each(function() ltc.set_default_device("cpu") end)

  it("is listed with its devices after require", function()
    assert.are.same({"cpu", "ref", "toy"}, ltc.backends())
    local devs = table.concat(ltc.devices(), " ")
    assert.are.equal("cpu:0 ref:0 toy:0 toy:1", devs)
    assert.is_true(ltc.has_graph_impl("toy"))
  end)

  it("keeps values in memory of its own, copied in and out", function()
    local d = delta(function()
      local t = ltc.tensor({1, 2, 3}, {device = "toy"})
      assert.are.equal("toy:0", t:device())
      assert.are.same({1, 2, 3}, t:totable())
      assert.are.equal(2, t[2])
    end)
    assert.are.equal(1, d.data_from_host)
    assert.are.equal(2, d.data_to_host) -- totable, then t[2] (no data_read slot)
  end)

  it("prints its device", function()
    assert.are.equal(" 1\n 2\n[ltc.float32 of size 2 on toy:0]",
                     tostring(ltc.tensor({1, 2}, {device = "toy"})))
    assert.are.equal("[ltc.float32 of size 0 on toy:1]", tostring(ltc.zeros(0, {device = "toy:1"})))
  end)

  it("lowers the ops it knows: one compile, one execute, its own placeholder outputs", function()
    local x = ltc.tensor({{1, -2}, {3, -4}}, {device = "toy"})
    local y
    local d = delta(function() y = ((x * 2 + 1):relu() - x):totable() end)
    assert.are.same({{2, 2}, {4, 4}}, y)
    assert.are.equal(1, d.compile)
    assert.are.equal(1, d.execute)
    assert.are.equal(1, d.data_placeholder)
    assert.is_true(d.data_of_node >= 2) -- x and the scalars, gathered by the executor
    local d2 = delta(function() y = ((x * 2 + 1):relu() - x):totable() end)
    assert.are.equal(0, d2.compile) -- cached
    assert.are.equal(1, d2.execute)
  end)

  it("falls back to the CPU for the rest, moving operands there and results back", function()
    local x = ltc.tensor({{1, 2}, {3, 4}}, {device = "toy"})
    ltc.metrics.reset()
    local r, got
    local d = delta(function() r = (x + 1):exp():sum(1) * 2; got = r:totable() end)
    assert.are.equal("toy:0", r:device())
    assert.is_true(math.abs(got[1] - 2 * (math.exp(2) + math.exp(4))) < 1e-3)
    assert.is_true(math.abs(got[2] - 2 * (math.exp(3) + math.exp(5))) < 1e-2)
    assert.are.equal(1, ltc.metrics.counter("EagerFallback::exp"))
    assert.are.equal(1, ltc.metrics.counter("EagerFallback::sum"))
    assert.is_true(d.eager_fallback_device_type >= 1)
    assert.are.equal(2, d.execute) -- x + 1 and the final * 2 on the toy
  end)

  it("refuses an op on a toy and a cpu tensor, naming both devices", function()
    local t, c = ltc.tensor({1}, {device = "toy"}), ltc.tensor({1})
    assert.has_error(function() return t + c end,
      "add: expected all tensors on one device, found toy:0 and cpu:0 (move one with t:to(device))")
    assert.are.same({2}, (t:to("cpu") + c):totable())
    assert.are.same({2}, (t + c:to("toy")):totable())
  end)

  it("moves tensors with to() and makes them by default once set", function()
    ltc.set_default_device("toy:1")
    local t = ltc.ones(3)
    assert.are.equal("toy:1", t:device())
    assert.are.equal("toy:0", t:to("toy:0"):device())
    assert.are.same({3, 3, 3}, (t * 3):to("cpu"):totable())
  end)

  it("adds its metric report to ltc.metrics.report()", function()
    local d = delta(function()
      assert.matches("ToyLiveBytes", ltc.metrics.report())
    end)
    assert.are.equal(1, d.metric_report)
  end)

  it("gets the seed", function()
    local d = delta(function() ltc.manual_seed(3) end)
    assert.are.equal(1, d.set_rng_seed)
  end)

  it("shows its program text", function()
    local x = ltc.tensor({1, 2}, {device = "toy"})
    assert.matches("toy program: 1 steps", ltc.debug.backend_text(x + x))
  end)

  it("captures and replays with its graph implementation", function()
    local x = ltc.tensor({1, 2}, {device = "toy"})
    local g = ltc.Graph{device = "toy"}
    g:capture_begin()
    local y = x * 3 + 1
    g:capture_end()
    assert.are.same({4, 7}, y:totable())
    x:copy_(ltc.tensor({10, 20}, {device = "toy"}))
    local d = delta(function() g:replay() end)
    assert.are.equal(1, d.graph_replay)
    assert.are.same({31, 61}, y:totable())
  end)

  it("refuses bad registrations with a clear error, and keeps working", function()
    assert.matches("backend 'toybad' has interface version 4%d, this runtime implements version %d",
                   toy.register_bad("version"))
    assert.are.equal("backend_register: backend 'toybad' leaves the required slot 'execute' NULL",
                     toy.register_bad("execute"))
    assert.are.equal("backend_register: backend 'toybad' leaves the required slot 'data_to_host' NULL",
                     toy.register_bad("data_to_host"))
    assert.are.equal("backend_register: the backend has no name (device type)", toy.register_bad("name"))
    assert.matches("bad device type 'toy:9'", toy.register_bad("colon"))
    assert.are.equal("backend_register: 'cpu' is already registered", toy.register_bad("taken"))
    assert.are.equal("backend_register: backend 'toybad' has no interface", toy.register_bad("iface"))
    assert.are.same({"cpu", "ref", "toy"}, ltc.backends())
    assert.are.same({2}, (ltc.tensor({1}, {device = "toy"}) * 2):totable())
  end)

  it("frees its memory when tensors die", function()
    collectgarbage(); collectgarbage()
    local before = toy.live_bytes()
    do
      local t = ltc.ones(1000, {device = "toy"}) * 2
      t:totable()
      assert.is_true(toy.live_bytes() >= before + 4000)
    end
    collectgarbage(); collectgarbage()
    ltc.sync()
    collectgarbage(); collectgarbage()
    assert.is_true(toy.live_bytes() < before + 4000)
  end)
end)

describe("the eager fallback chain", function()
  it("runs an op neither the toy nor the CPU lowers on the CPU's fallback", function()
    local x = ltc.tensor({{1, 2}, {3, 4}}, {device = "toy"})
    ltc.metrics.reset()
    assert.are.same({{2, 4}, {8, 12}}, ((x * 2):cumsum(1)):totable())
    -- counted at each fallback it goes through: toy -> cpu, then cpu -> ref
    assert.are.equal(2, ltc.metrics.counter("EagerFallback::cumsum"))
  end)
end)

describe("the communicator registry, from outside", function()
  it("refuses bad communicators with a clear error and keeps the current one", function()
    local function refused(kind, want, plain)
      local err, cur = toy.register_comm(kind)
      if plain then assert.are.equal(want, err) else assert.matches(want, err) end
      return cur
    end
    assert.are.equal("identity", refused("version", "communicator 'toybadcomm' has interface "
      .. "version 4%d, this runtime implements version %d %(rebuild it against these headers%)"))
    assert.are.equal("identity", refused("all_reduce", "comm_register: communicator 'toybadcomm' "
      .. "leaves the required slot 'all_reduce' NULL", true))
    assert.are.equal("identity", refused("barrier", "comm_register: communicator 'toybadcomm' "
      .. "leaves the required slot 'barrier' NULL", true))
    assert.are.equal("identity", refused("name", "comm_register: the communicator has no name", true))
    assert.are.equal("identity", refused("iface", "comm_register: communicator 'toybadcomm' has no "
      .. "interface", true))
  end)

  it("holds one communicator until it is unregistered", function()
    assert.are.same({ nil, "toycomm" }, { toy.register_comm("good") })
    assert.are.same({ nil, "toycomm" }, { toy.register_comm("good") }) -- again: a no-op
    local err, cur = toy.register_comm("other")
    assert.are.equal("comm_register: communicator 'toycomm' is registered; 'othercomm' cannot "
      .. "replace it until it is unregistered (ltc_comm_register(NULL))", err)
    assert.are.equal("toycomm", cur)
    -- collectives run on it (size 1: the values stay)
    local t = ltc.tensor({ 1, 2 })
    assert.are.same({ 1, 2 }, ltc.all_reduce(t, 0):totable())
    assert.are.same({ nil, "identity" }, { toy.register_comm("none") })
    assert.are.same({ nil, "othercomm" }, { toy.register_comm("other") })
    assert.are.same({ nil, "identity" }, { toy.register_comm("none") })
  end)
end)
