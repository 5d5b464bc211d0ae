-- Autograd cases where ltc once differed from PyTorch 1.13 (found by a differential comparison
-- over random programs, issue 18). Expected values are PyTorch's, computed with torch 1.13 by
-- the one-line programs quoted in each case.
local ltc = require "ltc"

local function values(t) return t:totable() end

-- a == b elementwise, NaN equal to NaN, within tol
local function close(expected, got, tol)
  tol = tol or 1e-6
  assert.are.equal(#expected, #got)
  for i = 1, #expected do
    local e, g = expected[i], got[i]
    if e ~= e then
      assert(g ~= g, string.format("element %d: expected NaN, got %s", i, tostring(g)))
    else
      assert(math.abs(e - g) <= tol * math.max(1, math.abs(e)),
        string.format("element %d: expected %.9g, got %.9g", i, e, g))
    end
  end
end

local NAN = 0 / 0

describe("requires grad through in-place writes", function()
  it("stays on through zero_, fill_ and copy_ of a constant, and the old value gets zeros", function()
    -- a = tensor([1., 2.], requires_grad=True); b = a * 2; b.zero_(); b.sum().backward()
    for _, write in ipairs {
      function(b) b:zero_() end,
      function(b) b:fill_(3) end,
      function(b) b:copy_(ltc.tensor({ 7.0, 8.0 })) end,
    } do
      local a = ltc.tensor({ 1.0, 2.0 }):requires_grad_()
      local b = a * 2
      write(b)
      assert.is_true(b.requires_grad)
      b:sum():backward()
      close({ 0, 0 }, values(a.grad))
    end
  end)

  it("never reaches an integer tensor, even through copy_ of one that requires grad", function()
    local a = ltc.tensor({ 1.0, 2.0 }):requires_grad_()
    local b = ltc.tensor({ 4, 5 }, "int32")
    b:copy_(a)
    assert.is_false(b.requires_grad)
    b:add_(1)
    assert.are.same({ 2, 3 }, values(b))
  end)

  it("starts a history on a detached alias written with a tensor that requires grad", function()
    -- d = a.detach(); d.add_(s); d.sum().backward() -> s.grad = [1, 1]
    local a = ltc.tensor({ 1.0, 2.0 })
    local s = ltc.tensor({ 1.0, 1.0 }):requires_grad_()
    local d = a:detach()
    d:add_(s)
    assert.is_true(d.requires_grad)
    d:sum():backward()
    close({ 1, 1 }, values(s.grad))
    assert.are.same({ 2, 3 }, values(a))   -- the alias shares a's storage
  end)

  it("gives second derivatives through an in-place op equal to the out-of-place ones", function()
    -- y = x * x; y.sin_(); y.sum().backward(create_graph=True); (x.grad * x.grad).sum().backward()
    local x = ltc.tensor({ 0.5, -2, 1.5 }, "float64"):requires_grad_()
    local y = x * x
    y:sin_()
    y:sum():backward { create_graph = true }
    ;(x.grad * x.grad):sum():backward()
    close({ 4.244652006887187, 59.09750253781979, 29.24401751220473 }, values(x.grad), 1e-12)
  end)
end)

describe("pow gradients", function()
  it("differentiates a number raised to a tensor", function()
    -- (3 ** a).sum().backward(), a = [1, 2]
    local a = ltc.tensor({ 1.0, 2.0 }):requires_grad_()
    ;(3 ^ a):sum():backward()
    close({ 3.295836925506592, 9.887510299682617 }, values(a.grad))
  end)

  it("gives 0, not NaN, for a ^ 0 and a:pow(a) at a = 0", function()
    local a = ltc.tensor({ 0.0, 2.0 }):requires_grad_()
    ;(a ^ 0):sum():backward()
    close({ 0, 0 }, values(a.grad))
    local b = ltc.tensor({ 0.0, 2.0 }):requires_grad_()
    b:pow(b):sum():backward()
    close({ 0, 6.772588729858398 }, values(b.grad))
  end)
end)

describe("masks in backward select, never multiply", function()
  it("relu passes the gradient at NaN", function()
    local a = ltc.tensor({ NAN, 1.0, -1.0 }):requires_grad_()
    a:relu():sum():backward()
    close({ 1, 1, 0 }, values(a.grad))
  end)

  it("relu then log gives 0, not NaN, where relu cut", function()
    local a = ltc.tensor({ -1.0, 2.0 }):requires_grad_()
    a:relu():log():sum():backward()
    close({ 0, 0.5 }, values(a.grad))
  end)

  it("minimum against a NaN passes the gradient", function()
    -- torch.minimum(a, tensor([nan, 2.])).sum().backward(), a = [1, 1]
    local a = ltc.tensor({ 1.0, 1.0 }):requires_grad_()
    ltc.minimum(a, ltc.tensor({ NAN, 2.0 })):sum():backward()
    close({ 1, 1 }, values(a.grad))
    local b = ltc.tensor({ 1.0, 3.0, 2.0 }):requires_grad_()
    ltc.maximum(b, ltc.tensor({ NAN, 2.0, 2.0 })):sum():backward()
    close({ 1, 1, 0.5 }, values(b.grad))
  end)

  it("max of all elements gives the NaN element the gradient", function()
    local a = ltc.tensor({ 1.0, NAN, 3.0 }):requires_grad_()
    a:max():backward()
    close({ 0, 1, 0 }, values(a.grad))
  end)

  it("max along a dim sends a NaN upstream gradient only to the argmax", function()
    -- m = a.max(1).values; (m * tensor([nan])).sum().backward(), a = [[1, 3, 2]]
    local a = ltc.tensor({ { 1.0, 3.0, 2.0 } }):requires_grad_()
    local m = a:max(2)
    ;(m * ltc.tensor({ NAN })):sum():backward()
    close({ 0, NAN, 0 }, values(a.grad)[1])
  end)

  it("std of equal elements has gradient 0", function()
    local a = ltc.tensor({ 1.0, 1.0 }):requires_grad_()
    a:std():backward()
    close({ 0, 0 }, values(a.grad))
  end)
end)

describe("dropout gradients", function()
  it("p = 0 passes every gradient, zeros of self included", function()
    local a = ltc.tensor({ 0.0, 1.0, -0.0, 2.0 }):requires_grad_()
    a:dropout(0.0):sum():backward()
    close({ 1, 1, 1, 1 }, values(a.grad))
  end)

  it("keeps the mask: a kept element that is 0 still gets grad / (1 - p)", function()
    ltc.manual_seed(3)
    local mask = ltc.ones(64, "float64"):dropout(0.5):totable()  -- 2 where kept, 0 where dropped
    ltc.manual_seed(3)
    local a = ltc.zeros(64, "float64"):requires_grad_()
    a:dropout(0.5):sum():backward()
    local g = values(a.grad)
    local kept = 0
    for i = 1, 64 do
      assert.are.equal(mask[i], g[i])
      if mask[i] == 2 then kept = kept + 1 end
    end
    assert(kept > 10 and kept < 54, "the draw kept " .. kept .. " of 64")
  end)
end)

describe("backward of shape-changing ops at their limits", function()
  it("linear with a zero-size feature dim gives empty gradients", function()
    local x = ltc.zeros(3, 0):requires_grad_()
    local w = ltc.zeros(2, 0):requires_grad_()
    local b = ltc.zeros(2):requires_grad_()
    x:linear(w, b):sum():backward()
    assert.are.same({ 3, 0 }, x.grad:size())
    assert.are.same({ 2, 0 }, w.grad:size())
    close({ 3, 3 }, values(b.grad))
  end)

  it("repeatTensor with 5 repeat dims sums the copies back", function()
    -- a.repeat(1, 1, 1, 2, 2).sum().backward(), a = [1, 2] -> [4, 4]
    local a = ltc.tensor({ 1.0, 2.0 }):requires_grad_()
    a:repeatTensor(1, 1, 1, 2, 2):sum():backward()
    close({ 4, 4 }, values(a.grad))
    local b = ltc.tensor({ { 1.0, 2.0 }, { 3.0, 4.0 } }, "float64"):requires_grad_()
    local w = ltc.arange(1, 49, 1, "float64"):reshape({ 2, 1, 3, 2, 4 })
    ;(b:repeatTensor(2, 1, 3, 1, 2) * w):sum():backward()
    -- torch: (b.repeat(2,1,3,1,2) * arange(1,49).reshape(2,1,3,2,4)).sum().backward()
    close({ 264, 276, 312, 324 }, { b.grad[1][1], b.grad[1][2], b.grad[2][1], b.grad[2][2] })
  end)
end)
