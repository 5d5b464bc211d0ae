-- The creation functions' trailing options table, PyTorch's keywords: device, dtype and
-- requires_grad (torch.zeros(2, dtype=torch.int64, requires_grad=...)). Only device was taken;
-- {dtype = ...} raised "dtype name expected, got table".
local ltc = require "ltc"
local err = dofile("spec/support/err.lua")

local function info(t) return { t:dtype(), t:device(), t.requires_grad, t:size() } end

describe("a creation function's options table", function()
  it("takes dtype, device and requires_grad in any combination", function()
    assert.are.same({ "int64", "cpu:0", false, { 2 } }, info(ltc.zeros(2, { dtype = "int64" })))
    assert.are.same({ "float32", "cpu:0", true, { 2, 3 } }, info(ltc.ones(2, 3, { requires_grad = true })))
    assert.are.same({ "float64", "ref:0", true, { 2 } },
      info(ltc.tensor({ 1, 2 }, { dtype = "float64", device = "ref", requires_grad = true })))
    assert.are.same({ "int32", "cpu:0", false, { 2 } }, info(ltc.full({ 2 }, 3, { dtype = "int32" })))
    assert.are.same({ 0, 1, 2, 3, 4 }, ltc.arange(0, 5, { dtype = "float64" }):totable())
    assert.are.equal("float64", ltc.arange(0, 5, { dtype = "float64" }):dtype())
    assert.are.same({ "float64", "ref:0", false, { 2, 3 } },
      info(ltc.randn(2, 3, { device = "ref", dtype = "float64" })))
    assert.are.same({ "int64", "ref:0", false, { 2 } }, info(ltc.zeros(2, "int64", { device = "ref" })))
    assert.are.equal("cpu:0", ltc.default_device()) -- the device guard is restored
  end)

  it("makes a leaf that requires grad and gets its gradient", function()
    local w = ltc.tensor({ 1, 2, 3 }, { requires_grad = true })
    assert.is_true(w.is_leaf)
    ;(w * w):sum():backward()
    assert.are.same({ 2, 4, 6 }, w.grad:totable())
  end)

  it("raises naming the function for an unknown key, a dtype given twice, an integer requiring grad", function()
    err(function() ltc.zeros(2, { dtyp = "int64" }) end, "zeros: unknown option 'dtyp' (expected device, dtype or requires_grad)")
    err(function() ltc.zeros(2, "int64", { dtype = "int32" }) end, "zeros: dtype given twice ('int64' and dtype = 'int32')")
    err(function() ltc.ones(2, { dtype = "int64", requires_grad = true }) end, "ones: ")
    err(function() ltc.ones(2, { dtype = "int64", requires_grad = true }) end, "only floating")
    err(function() ltc.load("x.npy", { dtype = "int64" }) end, "load: unknown option 'dtype' (expected device)")
  end)

  it("leaves data tables alone: an empty table and nested lists are data", function()
    assert.are.same({ 0 }, ltc.tensor({}):size())
    assert.are.same({ { 1, 2 }, { 3, 4 } }, ltc.tensor({ { 1, 2 }, { 3, 4 } }):totable())
  end)
end)
