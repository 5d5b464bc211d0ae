-- ltc.autograd.grad, t:retain_grad() and t:register_hook(fn), over the C engine
-- (src/core/autograd_engine.c). Expected values are PyTorch's (worked by hand: d/dx sum(x^2)
-- = 2x, and so on).
local ltc = require "ltc"

local function close(t, want)
  local got = t:totable()
  assert.are.equal(#want, #got)
  for i = 1, #want do assert.is_true(math.abs(got[i] - want[i]) < 1e-9, i .. ": " .. got[i]) end
end

describe("ltc.autograd.grad", function()
  it("returns d(outputs)/d(inputs) without touching any grad", function()
    local x = ltc.tensor({ 1, 2, 3 }, "float64"):requires_grad_()
    local w = ltc.tensor({ 0.5, -1, 2 }, "float64"):requires_grad_()
    local y = (x * x * w):sum()
    local gx, gw = ltc.autograd.grad(y, { x, w })
    close(gx, { 1, -4, 12 })      -- 2 x w
    close(gw, { 1, 4, 9 })        -- x^2
    assert.is_nil(x.grad)
    assert.is_nil(w.grad)
  end)

  it("gives gradients of gradients with create_graph", function()
    local x = ltc.tensor({ 1, 2, 3 }, "float64"):requires_grad_()
    local gx = ltc.autograd.grad((x * x * x):sum(), x, { create_graph = true })
    close(gx, { 3, 12, 27 })      -- 3 x^2
    assert.is_true(gx.requires_grad)
    close(ltc.autograd.grad(gx:sum(), x), { 6, 12, 18 }) -- 6 x
  end)

  it("takes PyTorch's positional retain_graph and create_graph, and names a bad one", function()
    local x = ltc.tensor({ 1, 2, 3 }, "float64"):requires_grad_()
    local gx = ltc.autograd.grad({ (x * x * x):sum() }, { x }, nil, nil, true)
    close(gx, { 3, 12, 27 })
    assert.is_true(gx.requires_grad)
    close(ltc.autograd.grad(gx:sum(), x, nil, false, false), { 6, 12, 18 })
    local y = (x * x):sum()
    close(ltc.autograd.grad(y, x, nil, true), { 2, 4, 6 }) -- retained: a second grad works
    close(ltc.autograd.grad(y, x), { 2, 4, 6 })
    local ok, err = pcall(ltc.autograd.grad, (x * x):sum(), x, nil, 1)
    assert.is_false(ok)
    assert.matches("grad: bad argument #4 (an options table {retain_graph, create_graph, "
      .. "allow_unused} or PyTorch's positional retain_graph, create_graph booleans expected, got "
      .. "number)", err, 1, true)
    ok, err = pcall(ltc.autograd.grad, (x * x):sum(), x, nil, true, "yes")
    assert.is_false(ok)
    assert.matches("grad: bad argument #5 (create_graph: a boolean expected, got string)", err, 1, true)
  end)

  it("takes grad_outputs and several outputs, and non-leaf inputs", function()
    local x = ltc.tensor({ 1, 2 }, "float64"):requires_grad_()
    local h = x * 3
    local a, b = h * 2, h * h
    local gh = ltc.autograd.grad({ a, b }, h, { ltc.tensor({ 1, 1 }, "float64"),
      ltc.tensor({ 0.5, 2 }, "float64") })
    close(gh, { 2 + 0.5 * 2 * 3, 2 + 2 * 2 * 6 }) -- 2 + go_b * 2h
  end)

  it("raises for an unused input unless allow_unused, and for an input without grad", function()
    local a = ltc.tensor({ 1 }):requires_grad_()
    local b = ltc.tensor({ 2 }):requires_grad_()
    local ok, err = pcall(ltc.autograd.grad, (a * 2):sum(), { a, b })
    assert.is_false(ok)
    assert.matches("input 2 was not used", err, 1, true)
    local ga, gb = ltc.autograd.grad((a * 2):sum(), { a, b }, { allow_unused = true })
    close(ga, { 2 })
    assert.is_nil(gb)
    ok, err = pcall(ltc.autograd.grad, (a * 2):sum(), ltc.tensor({ 1 }))
    assert.is_false(ok)
    assert.matches("input 1 does not require grad", err, 1, true)
  end)
end)

describe("t:retain_grad()", function()
  it("keeps the gradient of a tensor with history, accumulated over backwards", function()
    local x = ltc.tensor({ 1, 2, 3 }, "float64"):requires_grad_()
    local h = x * 3
    h:retain_grad()
    assert.is_true(h.retains_grad)
    local z = (h * h):sum()
    z:backward({ retain_graph = true })
    close(h.grad, { 6, 12, 18 })  -- 2h
    close(x.grad, { 18, 36, 54 }) -- 2h * 3
    z:backward()
    close(h.grad, { 12, 24, 36 })
  end)

  it("is an error on a tensor that does not require grad", function()
    local ok, err = pcall(function() ltc.tensor({ 1 }):retain_grad() end)
    assert.is_false(ok)
    assert.matches("requires_grad=False", err, 1, true)
  end)
end)

describe("t:register_hook(fn)", function()
  it("sees and may replace the gradient of a leaf, until removed", function()
    local w = ltc.tensor({ 1, 1 }, "float64"):requires_grad_()
    local seen
    local handle = w:register_hook(function(g) seen = g:totable(); return g * 10 end)
    ;(w * 2):sum():backward()
    assert.are.same({ 2, 2 }, seen)
    close(w.grad, { 20, 20 })
    handle.remove()
    w.grad = nil
    ;(w * 2):sum():backward()
    close(w.grad, { 2, 2 })
  end)

  it("runs once on a leaf's whole gradient when the leaf is used more than once", function()
    -- torch 1.13: x.register_hook(lambda g: g + 1); (x * x + x).sum().backward() calls the
    -- hook once, x.grad = 2x + 1 + 1 = [4, 6, 8] (it ran once per use of x: [6, 8, 10])
    local x = ltc.tensor({ 1, 2, 3 }, "float64"):requires_grad_()
    local calls = 0
    x:register_hook(function(g) calls = calls + 1; return g + 1 end)
    ;(x * x + x):sum():backward()
    assert.are.equal(1, calls)
    close(x.grad, { 4, 6, 8 })
    -- a second backward accumulates a second hooked gradient: [4, 6, 8] + [4, 6, 8]
    ;(x * x + x):sum():backward()
    assert.are.equal(2, calls)
    close(x.grad, { 8, 12, 16 })
  end)

  it("changes the gradient a non-leaf passes on", function()
    local x = ltc.tensor({ 1, 2 }, "float64"):requires_grad_()
    local h = x * 3
    h:register_hook(function(g) return g * 0 + 1 end)
    ;(h * h):sum():backward()
    close(x.grad, { 3, 3 })
  end)

  it("leaves t.grad after every hook of t, even one registered after retain_grad (2.x)", function()
    local x = ltc.tensor({ 1, 2 }):requires_grad_()
    local y = x * 3
    y:retain_grad()
    y:register_hook(function(g) return g * 10 end)
    local z = (y * 1):sum()
    z:backward()
    close(y.grad, { 10, 10 }) -- PyTorch 1.13: {1, 1}; 2.x: {10, 10}
    close(x.grad, { 30, 30 })
  end)

  it("runs a leaf's hooks on the gradient autograd.grad returns (1.13 does not)", function()
    local a = ltc.tensor({ 1, 2 }):requires_grad_()
    a:register_hook(function(g) return g * 100 end)
    close(ltc.autograd.grad((a * 2):sum(), a), { 200, 200 }) -- PyTorch 1.13: {2, 2}
  end)

  it("raises a hook's error and a wrong size from backward, and stays usable", function()
    local w = ltc.tensor({ 1, 1 }):requires_grad_()
    w:register_hook(function() error("hook failed") end)
    local ok, err = pcall(function() (w * 2):sum():backward() end)
    assert.is_false(ok)
    assert.matches("hook failed", err, 1, true)
    local v = ltc.tensor({ 1, 1 }):requires_grad_()
    v:register_hook(function() return ltc.ones(3) end)
    ok, err = pcall(function() (v * 2):sum():backward() end)
    assert.is_false(ok)
    assert.matches("size", err, 1, true)
    local u = ltc.tensor({ 1, 2 }):requires_grad_()
    ;(u * u):sum():backward()
    assert.are.same({ 2, 4 }, u.grad:totable())
    ok, err = pcall(function() ltc.tensor({ 1 }):register_hook(function() end) end)
    assert.is_false(ok)
    assert.matches("does not require grad", err, 1, true)
  end)
end)

describe("saved values and in-place writes", function()
  local core = require "ltc.core"
  local function live()
    collectgarbage(); collectgarbage()
    return core.live_info().live_tensors
  end

  it("leave no reference cycle when an op's input is written with its result", function()
    local w = ltc.tensor({ 1, 2 }, "float64"):requires_grad_()
    local before = live()
    do
      local x = w * 1
      x:mul_(ltc.tensor({ 3, 4 }, "float64"))   -- mul saves x, and x's history becomes that mul
      local y = w:exp()
      y:sin_()                                  -- sin saves y
      local z = ltc.zeros(2, "float64")
      z:copy_(w)
      z:maximum_(w * 2)
    end
    assert.are.equal(before, live())
  end)

  it("frees no tensor the executor still installs (fuzz seed 22, a crash under ASan)", function()
    local a = ltc.tensor(-2.0, "float32"):requires_grad_()
    local b = ltc.ones({ 1, 3, 5, 4 }, "float64")
    b:copy_(a)
    local p = b:permute({ 1, 3, 4, 2 })
    p:zero_()
    local s = p:select(3, -4)
    assert.are.same({ 1, 5, 3 }, s:size())
    assert.are.same({ { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } },
      s:totable()[1])
    assert.is_true(b.requires_grad)
  end)

  it("differentiate with the value saved before the write", function()
    local w = ltc.tensor({ 1, 2 }, "float64"):requires_grad_()
    local x = w * 1
    x:mul_(ltc.tensor({ 3, 4 }, "float64"))
    local y = x * x            -- saves x = {3, 8}
    x:add_(100)                -- y keeps x's value {3, 8}
    y:sum():backward()
    assert.are.same({ 18, 64 }, w.grad:totable())  -- d(x^2)/dw = 2 x * {3, 4}
  end)
end)
