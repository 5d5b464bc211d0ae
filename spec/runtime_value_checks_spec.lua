-- Values PyTorch rejects that are only known when the graph runs: binary_cross_entropy's
-- input outside [0, 1] and bernoulli's probabilities outside [0, 1] (NaN included) raise at
-- the sync that computes them, naming the op, the element and its value, as index ops do
-- for an index out of range; they used to give NaN or a silent 0/1. The checks go through
-- assert_in_range (an op of its own, the identity once checked) and bernoulli's kernel.
local ltc = require "ltc"
local F = ltc.nn.functional

local function err(fn)
  local ok, e = pcall(fn)
  assert.is_false(ok, "expected an error")
  return (tostring(e):gsub("^[^:]*:%d+: ", ""))
end

describe("run-time value checks", function()
  after_each(function() ltc.set_backend("cpu") end)

  for _, be in ipairs { "cpu", "ref" } do
    describe("on " .. be, function()
      before_each(function() ltc.set_backend(be) end)

      it("binary_cross_entropy raises for an input above 1, below 0 or NaN", function()
        local t = ltc.tensor({ 1, 0, 1 })
        assert.are.equal("binary_cross_entropy: all elements of input should be between 0 and 1: "
          .. "element 2 is 1.5, not in [0, 1]",
          err(function() return F.binary_cross_entropy(ltc.tensor({ 0.5, 1.5, 0.2 }), t):item() end))
        assert.are.equal("binary_cross_entropy: all elements of input should be between 0 and 1: "
          .. "element 3 is -0.25, not in [0, 1]",
          err(function() return F.binary_cross_entropy(ltc.tensor({ 0.5, 1, -0.25 }, "float64"), t):item() end))
        assert.are.equal("binary_cross_entropy: all elements of input should be between 0 and 1: "
          .. "element 1 is nan, not in [0, 1]",
          err(function() return F.binary_cross_entropy(ltc.tensor({ 0 / 0, 0.5, 0.5 }), t):item() end))
        -- nn.BCELoss and reduction "none" too
        assert.matches("^binary_cross_entropy: all elements of input should be between 0 and 1: element 1 is 2",
          err(function() return ltc.nn.BCELoss()(ltc.tensor({ 2.0 }), ltc.tensor({ 1.0 })):item() end))
        assert.matches("^binary_cross_entropy: .* element 2 is %-1",
          err(function()
            return F.binary_cross_entropy(ltc.tensor({ 0.5, -1 }), ltc.tensor({ 1, 0 }), { reduction = "none" }):totable()
          end))
      end)

      it("binary_cross_entropy keeps its values and gradient on [0, 1], the ends included", function()
        -- -(log 0.5 + log 0.75) / 2, and the ends 0 and 1 with the log clamped at -100
        local x = ltc.tensor({ 0.5, 0.25, 0, 1 }, "float64"):requires_grad_()
        local l = F.binary_cross_entropy(x, ltc.tensor({ 1, 0, 1, 1 }, "float64"), { reduction = "sum" })
        assert.is_true(math.abs(l:item() - (math.log(2) - math.log(0.75) + 100)) < 1e-12)
        l:backward()
        local g = x.grad:totable()
        assert.is_true(math.abs(g[1] - (-2)) < 1e-12)       -- -t / x
        assert.is_true(math.abs(g[2] - 1 / 0.75) < 1e-12)   -- (1 - t) / (1 - x)
      end)

      it("bernoulli raises for a probability outside [0, 1] or NaN", function()
        assert.are.equal("bernoulli: all probabilities (self) should be between 0 and 1: element 2 is -0.1",
          err(function() return ltc.bernoulli(ltc.tensor({ 0.5, -0.1 })):totable() end))
        assert.are.equal("bernoulli: all probabilities (self) should be between 0 and 1: element 3 is 1.5",
          err(function() return ltc.tensor({ 0, 1, 1.5 }, "float64"):bernoulli():totable() end))
        assert.are.equal("bernoulli: all probabilities (self) should be between 0 and 1: element 1 is nan",
          err(function() return ltc.bernoulli(ltc.tensor({ 0 / 0 })):totable() end))
        -- a value just outside prints with the digits that tell it from the end
        assert.are.equal("bernoulli: all probabilities (self) should be between 0 and 1: element 1 is 1.0000001",
          err(function() return ltc.bernoulli(ltc.tensor({ 1.00000012 })):totable() end))
        assert.are.equal("bernoulli: all probabilities (self) should be between 0 and 1: element 1 is -1e-300",
          err(function() return ltc.bernoulli(ltc.tensor({ -1e-300 }, "float64")):totable() end))
        -- the ends are probabilities: 0 never, 1 always
        assert.are.same({ 0, 1, 0, 1 }, ltc.bernoulli(ltc.tensor({ 0, 1, 0, 1 })):totable())
      end)

      it("bernoulli(p) with a number outside [0, 1] raises when traced", function()
        assert.matches("bernoulli.*p", err(function() return ltc.zeros({ 2 }):bernoulli(1.5) end))
      end)

      it("assert_in_range passes self through and names the element outside", function()
        assert.are.same({ 1, 2, 3 }, ltc.tensor({ 1, 2, 3 }, "int64"):assert_in_range(1, 3):totable())
        assert.are.equal("binary_cross_entropy: all elements of input should be between 0 and 1: "
          .. "element 1 is 1.0000000000000002, not in [0, 1]",
          err(function() return F.binary_cross_entropy(ltc.tensor({ 1 + 2^-52 }, "float64"), ltc.tensor({ 1.0 }, "float64")):item() end))
        assert.are.equal("assert_in_range: element 2 is 7, not in [1, 3]",
          err(function() return ltc.tensor({ 1, 7 }, "int32"):assert_in_range(1, 3):totable() end))
        assert.matches("low %(2%) must be <= high %(1%)",
          err(function() return ltc.zeros({ 1 }):assert_in_range(2, 1) end))
      end)

      it("leaves the runtime usable after the error", function()
        local ok = ltc.tensor({ 2, 4 }) / 2
        local _ = F.binary_cross_entropy(ltc.tensor({ 3.0 }), ltc.tensor({ 1.0 }))
        assert.matches("^binary_cross_entropy:", err(function() ltc.sync() end))
        assert.are.same({ 1, 2 }, ok:totable())
        local l = F.binary_cross_entropy(ltc.tensor({ 0.5 }, "float64"), ltc.tensor({ 1.0 }, "float64"))
        assert.is_true(math.abs(l:item() - math.log(2)) < 1e-12)
      end)
    end)
  end
end)

-- OpenCL's bernoulli kernel sets the error flag (its position; the value stays on the device).
local O = dofile("spec/support/opencl.lua")
describe("bernoulli on opencl", function()
  if not O.avail then
    pending("skipped: " .. tostring(O.why):gsub("\n.*", ""))
    return
  end
  O.ocl.open()
  it("raises for a probability outside [0, 1] or NaN, and draws the ends", function()
    assert.are.equal("bernoulli: all probabilities (self) should be between 0 and 1: element 2 is not",
      err(function() return ltc.bernoulli(ltc.tensor({ 0.5, 1.5, 0.5 }):to("opencl:0")):totable() end))
    assert.are.equal("bernoulli: all probabilities (self) should be between 0 and 1: element 1 is not",
      err(function() return ltc.bernoulli(ltc.tensor({ 0 / 0 }):to("opencl:0")):totable() end))
    assert.are.same({ 0, 1, 1 }, ltc.bernoulli(ltc.tensor({ 0, 1, 1 }):to("opencl:0")):totable())
  end)
end)
