-- PyTorch's semantics of state dicts and of what they touch, so that a user coming from
-- PyTorch meets no silent surprise: load_state_dict copies in place (an optimizer made before
-- sees the loaded values), state_dict lists tied names and detaches, copy_ moves a value
-- between devices, lr schedulers compose and resume as PyTorch's, and a loss weight of the
-- wrong size is an error.
local ltc = require "ltc"
local nn = ltc.nn

local function err(f)
  local ok, e = pcall(f)
  assert.is_false(ok)
  return tostring(e)
end

-- the other devices there are: the reference backend always, OpenCL where it runs
local devices = { "ref" }
do
  local ok_mod, ocl = pcall(require, "ltc.opencl")
  if ok_mod and ocl.available() then ocl.open(); devices[#devices + 1] = "opencl" end
end

describe("copy_ from a tensor on another device", function()
  for _, dev in ipairs(devices) do
    it("moves the value to the written tensor, which keeps its device: " .. dev, function()
      local b = ltc.tensor({ 1, 2, 3 }):to(dev)
      local a = ltc.zeros(3)
      a:copy_(b)
      ltc.sync()
      assert.are.equal("cpu:0", a:device())
      assert.are.same({ 1, 2, 3 }, a:totable())
      assert.are.same({ 2, 4, 6 }, (a * 2):totable()) -- a cpu op on it
      local c = ltc.zeros(3):to(dev)
      c:copy_(ltc.tensor({ 4, 5, 6 }))
      assert.are.equal(b:device(), c:device())
      assert.are.same({ 4, 5, 6 }, c:totable())
    end)

    it("writes through a view and t[i] = v, and broadcasts: " .. dev, function()
      local b = ltc.tensor({ 7, 8, 9 }):to(dev)
      local d = ltc.zeros(2, 3)
      d[1] = b
      d:narrow(1, 2, 1):copy_(b * 2)
      assert.are.same({ { 7, 8, 9 }, { 14, 16, 18 } }, d:totable())
      assert.are.equal("cpu:0", d:device())
      local e = ltc.zeros(2, 3)
      e:copy_(b)
      assert.are.same({ { 7, 8, 9 }, { 7, 8, 9 } }, e:totable())
    end)

    it("sends the gradient back to the source's device: " .. dev, function()
      local q = ltc.tensor({ 1, 2, 3 }):to(dev):requires_grad_()
      local p = ltc.zeros(3)
      p:copy_(q)
      ;(p * ltc.tensor({ 1, 2, 3 })):sum():backward()
      assert.are.equal(q:device(), q.grad:device())
      assert.are.same({ 1, 2, 3 }, q.grad:totable())
    end)
  end

  it("leaves other in-place ops on two devices an error naming both", function()
    local e = ltc.zeros(3)
    assert.matches("add_: expected all tensors on one device, found cpu:0 and ref:0",
      err(function() e:add_(ltc.ones(3):to("ref")) end), 1, true)
  end)
end)
