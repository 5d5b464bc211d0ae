-- Writes through an expand view, as PyTorch 1.13 allows them (values from /usr/bin/python3
-- with torch, by hand):
--   b = torch.ones(2, 3); b.expand(4, 2, 3).fill_(2)            -> b all 2 (zero_ likewise)
--   b = torch.ones(3); b.expand(2, 3)[1] = 5                     -> b == [5, 5, 5]
--   b = torch.arange(6.).view(2, 3)
--   b.unsqueeze(1).expand(2, 4, 3).select(1, 2).copy_([[10, 11, 12], [13, 14, 15]])
--                                                                -> b == [[10, 11, 12], [13, 14, 15]]
--   b.unsqueeze(1).expand(2, 4, 3)[0].narrow(0, 1, 2).fill_(9)   -> b == [[9, 9, 9], [3, 4, 5]]
--   b = torch.ones(3); b.expand(1, 3).add_(1)                    -> b == [2, 2, 2]
--   add_, mul_, copy_ (even of one value) through a view that repeats elements raise
--   ("more than one element of the written-to tensor refers to a single memory location");
--   autograd through a write that repeats no element:
--   a = torch.ones(3, requires_grad=True); b = a * 1; v = torch.tensor([5., 6, 7], rg)
--   b.expand(2, 3)[1].copy_(v * 2); (b * [1, 2, 3]).sum().backward()
--                                                -> a.grad == [0, 0, 0], v.grad == [2, 4, 6]
--   a = torch.arange(6.).view(2, 3) (rg); b = a * 1; b[0].expand(2, 3)[1].fill_(7)
--   (b * arange(6).view(2, 3)).sum().backward()  -> b == [[7, 7, 7], [3, 4, 5]],
--                                                   a.grad == [[0, 0, 0], [3, 4, 5]]
local ltc = require "ltc"

local function flat(t) return t:reshape(t:numel()):totable() end

local err = dofile("spec/support/err.lua")

describe("fill_ and zero_ through an expand view", function()
  it("give every element of the base the value", function()
    local b = ltc.ones(2, 3)
    local x = b:expand(4, 2, 3)
    x:fill_(2)
    assert.are.same({ 2, 2, 2, 2, 2, 2 }, flat(b))
    assert.are.equal(48, x:sum():item())
    x:zero_()
    assert.are.same({ 0, 0, 0, 0, 0, 0 }, flat(b))
    assert.are.equal(0, x:sum():item())
  end)

  it("are seen by the base's other views", function()
    local b = ltc.ones(2, 3)
    local col = b:select(2, 2)
    b:expand(3, 2, 3):fill_(4)
    assert.are.same({ 4, 4 }, col:totable())
  end)

  it("t[i] = number and t[{...}] = number fill (PyTorch's setitem)", function()
    local b = ltc.ones(3)
    local x = b:expand(2, 3)
    x[2] = 5
    assert.are.same({ 5, 5, 5 }, b:totable())
    local c = ltc.ones(3)
    c:expand(2, 3)[{ {}, { 2, 3 } }] = 7
    assert.are.same({ 1, 7, 7 }, c:totable())
  end)

  it("take one value only", function()
    local msg = err(function() ltc.ones(3):fill_(ltc.ones(2)) end)
    assert.truthy(msg:find("fill_: the value must have one element", 1, true), msg)
  end)
end)

describe("a write through an expand view that repeats no element", function()
  it("reaches the base (a select after the expand)", function()
    local b = ltc.arange(6):float():view(2, 3)
    b:unsqueeze(2):expand(2, 4, 3):select(2, 3):copy_(ltc.tensor({ { 10, 11, 12 }, { 13, 14, 15 } }))
    assert.are.same({ 10, 11, 12, 13, 14, 15 }, flat(b))
  end)

  it("reaches the base (a select and a narrow after the expand)", function()
    local b = ltc.arange(6):float():view(2, 3)
    b:unsqueeze(2):expand(2, 4, 3)[1]:narrow(1, 2, 2):fill_(9)
    assert.are.same({ 9, 9, 9, 3, 4, 5 }, flat(b))
  end)

  it("reaches the base (an expand to a size-1 dim)", function()
    local b = ltc.ones(3)
    b:expand(1, 3):add_(1)
    assert.are.same({ 2, 2, 2 }, b:totable())
  end)

  it("records autograd as PyTorch does", function()
    local a = ltc.ones(3):requires_grad_()
    local b = a * 1
    local v = ltc.tensor({ 5, 6, 7 }):requires_grad_()
    b:expand(2, 3)[2]:copy_(v * 2)
    assert.are.same({ 10, 12, 14 }, b:totable())
    local _ = (b * ltc.tensor({ 1, 2, 3 })):sum():backward()
    assert.are.same({ 0, 0, 0 }, a.grad:totable())
    assert.are.same({ 2, 4, 6 }, v.grad:totable())

    local a2 = ltc.arange(6):float():view(2, 3):requires_grad_()
    local b2 = a2 * 1
    b2[1]:expand(2, 3)[2]:fill_(7)
    assert.are.same({ 7, 7, 7, 3, 4, 5 }, flat(b2))
    local _ = (b2 * ltc.arange(6):float():view(2, 3)):sum():backward()
    assert.are.same({ 0, 0, 0, 3, 4, 5 }, flat(a2.grad))
  end)
end)

describe("other writes through an expand view that repeats elements", function()
  it("raise naming the op, and leave the base alone", function()
    local b = ltc.tensor({ 1, 2, 3 })
    local x = b:expand(2, 3)
    for _, f in ipairs({
      { "add_", function() x:add_(1) end },
      { "mul_", function() x:mul_(2) end },
      { "copy_", function() x:copy_(ltc.ones(2, 3)) end },
      { "copy_", function() x:copy_(5) end },
    }) do
      local msg = err(f[2])
      assert.truthy(msg:find(f[1] .. ": cannot write through an expand view that repeats", 1,
        true), msg)
      assert.truthy(msg:find("expand_write_spec.lua:%d+: "), msg)
    end
    assert.are.same({ 1, 2, 3 }, b:totable())
  end)

  it("fill_ through one is not differentiable (PyTorch raises at the backward)", function()
    local b = ltc.ones(2, 3):requires_grad_() * 1
    local msg = err(function() b:expand(2, 2, 3):fill_(1) end)
    assert.truthy(msg:find("fill_: writing through an expand view that repeats elements is "
      .. "not differentiable", 1, true), msg)
  end)
end)

describe("index_fill_, index_copy_ and masked_scatter_ (documented, PyTorch's)", function()
  it("write in place", function()
    local t = ltc.zeros(2, 3)
    assert.are.equal(t, t:index_fill_(2, ltc.tensor({ 1, 3 }, "int64"), 5))
    assert.are.same({ 5, 0, 5, 5, 0, 5 }, flat(t))
    t:index_copy_(1, ltc.tensor({ 2 }, "int64"), ltc.tensor({ { 7, 8, 9 } }))
    assert.are.same({ 5, 0, 5, 7, 8, 9 }, flat(t))
    local m = ltc.tensor({ true, false, true })
    local u = ltc.zeros(3)
    u:masked_scatter_(m, ltc.tensor({ 1, 2 }))
    assert.are.same({ 1, 0, 2 }, u:totable())
  end)

  it("raise through an expand view that repeats elements (PyTorch only warns)", function()
    local x = ltc.ones(3):expand(2, 3)
    local msg = err(function() x:index_fill_(2, ltc.tensor({ 1 }, "int64"), 1) end)
    assert.truthy(msg:find("index_fill_: cannot write through an expand view", 1, true), msg)
  end)
end)

describe("uniform_ and normal_", function()
  it("name themselves in errors (not copy_), as PyTorch's raise for an expand view", function()
    local x = ltc.ones(3):expand(2, 3)
    for _, name in ipairs({ "uniform_", "normal_" }) do
      local msg = err(function() x[name](x) end)
      assert.truthy(msg:find("expand_write_spec.lua:%d+: " .. name .. ": cannot write through an "
        .. "expand view"), msg)
      msg = err(function() local t = ltc.ones(2, "int64"); t[name](t) end)
      assert.truthy(msg:find(name .. ": floating tensors only, got int64", 1, true), msg)
    end
  end)

  it("write through a view that repeats no element", function()
    local b = ltc.zeros(3)
    b:expand(1, 3):uniform_(2, 3)
    for _, v in ipairs(b:totable()) do assert.is_true(v >= 2 and v < 3) end
  end)
end)
