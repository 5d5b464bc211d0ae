-- Devices: every tensor lives on one ("cpu:0", "ref:0"); values move between backends only
-- through their transfer slots; an op on two devices is an error naming both (PyTorch's rule).
local ltc = require "ltc"

describe("devices", function()
  after_each(function() ltc.set_default_device("cpu") end)

  it("are listed per backend, cpu first", function()
    assert.are.same({"cpu:0", "ref:0"}, {ltc.devices()[1], ltc.devices()[2]})
    assert.are.equal("cpu:0", ltc.default_device())
  end)

  it("name a tensor's device in its printed footer", function()
    assert.are.equal(" 1\n 2\n[ltc.float32 of size 2 on cpu:0]", tostring(ltc.tensor({1, 2})))
    assert.are.equal(" 1\n 2\n[ltc.float32 of size 2 on ref:0]",
                     tostring(ltc.tensor({1, 2}, {device = "ref"})))
    assert.are.equal("[ltc.float32 of size 0 on ref:0]", tostring(ltc.zeros(0, {device = "ref:0"})))
  end)

  it("follow the default device, which can be set and read back", function()
    ltc.set_default_device("ref:0")
    assert.are.equal("ref:0", ltc.default_device())
    local t = ltc.ones(2)
    assert.are.equal("ref:0", t:device())
    assert.are.equal("ref:0", (t * 3):device())
    ltc.set_default_device("cpu")
    assert.are.equal("cpu:0", ltc.zeros(1):device())
    assert.are.equal("ref:0", t:device())
  end)

  it("refuse an unknown type or ordinal", function()
    assert.has_error(function() ltc.set_default_device("gpu") end,
                     "set_default_device: unknown device type 'gpu' in 'gpu'")
    assert.has_error(function() ltc.set_default_device("ref:1") end,
                     "set_default_device: device 'ref:1': backend 'ref' has 1 device")
    assert.has_error(function() ltc.tensor({1}):to("cpu:x") end, "to: bad device ordinal in 'cpu:x'")
    assert.are.equal("cpu:0", ltc.default_device()) -- unchanged
  end)

  it("place creation results with a device option and restore the default", function()
    local z = ltc.zeros(2, 3, {device = "ref"})
    assert.are.equal("ref:0", z:device())
    assert.are.same({2, 3}, z:size())
    assert.are.equal("ref:0", ltc.arange(1, 4, {device = "ref"}):device())
    assert.are.same({1, 2, 3}, ltc.arange(1, 4, {device = "ref"}):totable())
    assert.are.equal("cpu:0", ltc.default_device())
    assert.has_error(function() ltc.ones(2, {device = "nope"}) end)
    assert.are.equal("cpu:0", ltc.default_device())
  end)

  it("place them under a device guard of this thread, never switching the default", function()
    local core = require "ltc.core"
    assert.is_nil(core._device_guard("ref:0"))        -- no guard before
    assert.are.equal("ref:0", ltc.zeros(1):device())   -- the guard places new tensors
    assert.are.equal("ref:0", ltc.default_device())    -- this thread's default, as torch.device()'s context
    assert.are.equal("ref:0", core._device_guard(nil)) -- removed, the previous one returned
    assert.are.equal("cpu:0", ltc.zeros(1):device())
    -- the option nests in a guard and gives it back
    core._device_guard("ref")
    assert.are.equal("cpu:0", ltc.zeros(1, {device = "cpu"}):device())
    assert.are.equal("ref:0", ltc.zeros(1):device())
    core._device_guard(nil)
    assert.has_error(function() core._device_guard("nope") end)
  end)

  it("move values with t:to(device), counted as transfers", function()
    local a = ltc.tensor({{1, 2}, {3, 4}}) * 2
    ltc.metrics.reset()
    local r = a:to("ref")
    assert.are.equal("ref:0", r:device())
    assert.are.same({{2, 4}, {6, 8}}, r:totable())
    assert.are.equal(1, ltc.metrics.counter("DeviceTransfer"))
    assert.are.equal("cpu:0", r:to("cpu:0"):device())
    assert.are.same({{3, 5}, {7, 9}}, (r:to("cpu") + 1):totable())
    assert.are.equal(a:device(), a:to("cpu"):device()) -- already there: no copy
    assert.are.equal(3, ltc.metrics.counter("DeviceTransfer"))
    assert.are.equal("float64", a:to("float64"):dtype()) -- a dtype still casts
  end)

  it("move back with t:cpu(), PyTorch's Tensor.cpu (t itself on the CPU)", function()
    local r = ltc.tensor({1.5, -2}, {device = "ref"})
    local c = r:cpu()
    assert.are.equal("cpu:0", c:device())
    assert.are.same({1.5, -2}, c:totable())
    assert.are.equal(c, c:cpu())
  end)

  it("refuse an op on tensors of two devices, naming the op and both", function()
    local c, r = ltc.tensor({1, 2}), ltc.tensor({1, 2}, {device = "ref"})
    assert.has_error(function() return c + r end,
      "add: expected all tensors on one device, found cpu:0 and ref:0 (move one with t:to(device))")
    assert.has_error(function() return ltc.cat({r, c}, 1) end,
      "cat: expected all tensors on one device, found ref:0 and cpu:0 (move one with t:to(device))")
    assert.are.same({2, 4}, (c + r:to("cpu")):totable()) -- and the runtime goes on
  end)

  it("let Lua numbers join an op on any device", function()
    local r = ltc.tensor({1, 2}, {device = "ref"})
    assert.are.same({3, 5}, (r * 2 + 1):totable())
    assert.are.equal("ref:0", (2 * r):device())
  end)

  it("read single elements and items through the backend", function()
    local r = ltc.tensor({5, 6, 7}, {device = "ref"})
    assert.are.equal(6, r[2])
    assert.are.equal(18, r:sum():item())
  end)

  it("sync pending work of two devices as one graph each", function()
    local c = ltc.tensor({1, 2}) + 1
    local r = ltc.tensor({1, 2}, {device = "ref"}) * 10
    ltc.sync()
    assert.are.same({2, 3}, c:totable())
    assert.are.same({10, 20}, r:totable())
  end)
end)
