-- ltc.jit with the autograd habits of a PyTorch user: gradients accumulated over calls
-- (no zero_grad), an argument that requires grad, backward on a returned tensor, a call
-- under no_grad. Each either replays what an untraced call computes or says why not.
local ltc = require "ltc"

local quiet = dofile("spec/support/stderr.lua") -- fn run with io.stderr captured

describe("ltc.jit and autograd", function()
  it("accumulates a parameter's grad over calls without zero_grad, as untraced", function()
    local w = ltc.ones(3):requires_grad_()
    local f = ltc.jit(function(x) local l = (w * x):sum(); l:backward(); return l end)
    local got = {}
    quiet(function()
      for i = 1, 5 do f(ltc.tensor { 1, 2, 3 }); got[i] = w.grad:totable()[3] end
    end)
    -- before: the capture cloned the grad into a new tensor, replays kept reading the old
    -- one: 3, 6, 6, 6, 6
    assert.same({ 3, 6, 9, 12, 15 }, got)
  end)

  it("runs fn untraced when an argument requires grad, so its grad reaches the caller", function()
    local f = ltc.jit(function(x) (x * x):sum():backward(); return x.grad end)
    local before = ltc.metrics.counter("JitUntraced")
    for i = 1, 4 do
      local x = ltc.tensor({ 1, 2, 3 }):mul(i):requires_grad_()
      local g = f(x)
      assert.same({ 2 * i, 4 * i, 6 * i }, x.grad:totable())
      assert.same({ 2 * i, 4 * i, 6 * i }, g:totable()) -- x.grad inside fn too (was nil)
    end
    assert.equal(before + 4, ltc.metrics.counter("JitUntraced"))
  end)

  it("says why backward fails on a tensor a jitted function returned", function()
    local w = ltc.ones(3):requires_grad_()
    local f = ltc.jit(function(x) return (w * x):sum() end)
    local ok, e = pcall(function() f(ltc.ones(3)):backward() end)
    assert.is_false(ok)
    assert.matches("backward: .*returned by an ltc.jit function.*call backward inside", e)
  end)

  it("captures again when called with grad mode switched", function()
    local f = ltc.jit(function(x) return x * 2 end)
    for _ = 1, 3 do f(ltc.ones(2)) end
    local before = ltc.metrics.counter("JitRecapture")
    ltc.no_grad(function() return f(ltc.ones(2)) end)
    assert.equal(before + 1, ltc.metrics.counter("JitRecapture"))
    assert.matches("no_grad", ltc.debug.explain_jit(f))
  end)

  it("names ltc.jit and the way out when fn prints a tensor during the capture", function()
    local f = ltc.jit(function(x) local y = x * 2; print(y); return y end)
    local p = _G.print
    _G.print = function() end -- luacheck: ignore
    f(ltc.ones(2))
    _G.print = function(...) return tostring(...) end -- luacheck: ignore
    local ok, e = pcall(f, ltc.ones(2))
    _G.print = p -- luacheck: ignore
    assert.is_false(ok)
    assert.matches("cannot read a tensor's value.*ltc.jit captures fn at its call 2.*relaxed", e)
  end)

  it("captures again when a parameter is frozen with requires_grad_(false)", function()
    local w = ltc.tensor({ 1, 2 }):requires_grad_()
    local b = ltc.tensor({ 0, 0 }):requires_grad_()
    local step = function(x)
      w.grad, b.grad = nil, nil
      local l = ((w * x + b) ^ 2):sum()
      l:backward()
      ltc.no_grad(function()
        w:sub_(w.grad * 0.1)
        if b.grad then b:sub_(b.grad * 0.1) end
      end)
      return l
    end
    local f = ltc.jit(step)
    for _ = 1, 3 do f(ltc.ones(2)) end
    b:requires_grad_(false)
    local b_before = b:totable()
    for _ = 1, 2 do f(ltc.ones(2)) end
    assert.same(b_before, b:totable()) -- before: the replays kept updating b
    assert.matches("upvalue b%.requires_grad changed %(true %-> false%)", ltc.debug.explain_jit(f))
  end)
end)

describe("a capture that copies a static input into another tensor", function()
  it("replays buf:copy_(x) with x's new value (the replay left buf with no data)", function()
    local x, buf = ltc.ones(2), ltc.zeros(2)
    local g = ltc.Graph { keep_graph = false }
    g:capture_begin { mode = "thread_local" }
    buf:copy_(x) -- same size and dtype: buf shares x's data, no computation to record
    g:capture_end()
    x:copy_(ltc.ones(2) * 5) -- pending when the replay starts
    g:replay()
    assert.same({ 5, 5 }, buf:totable())
  end)

  it("lets a jitted fn copy its argument into state and return it", function()
    local buf = ltc.zeros(2)
    local f = ltc.jit(function(x) buf:copy_(x); return buf end)
    for i = 1, 4 do
      assert.same({ i, i }, f(ltc.ones(2) * i):totable()) -- call 3 raised "share: no data"
      assert.same({ i, i }, buf:totable())
    end
  end)
end)

describe("ltc.jit with a table of tensors as argument (a batch)", function()
  it("replays a new batch table of the same shape instead of capturing on every call", function()
    local w = ltc.tensor { 1, 2, 3 }
    local f = ltc.jit(function(b) return (b.x * w):sum() + b.pair[2]:sum() end)
    local c0, r0 = ltc.metrics.counter("JitCapture"), ltc.metrics.counter("JitReplay")
    for i = 1, 5 do
      local got = f({ x = ltc.ones(3) * i, pair = { ltc.ones(1), ltc.ones(2) * i } }):item()
      assert.equal(6 * i + 2 * i, got)
    end
    -- before: a new table each call recaptured every call (5 - 1 captures, no replay)
    assert.equal(1, ltc.metrics.counter("JitCapture") - c0)
    assert.equal(3, ltc.metrics.counter("JitReplay") - r0)
  end)

  it("captures again when a tensor in the table changes size, or a number in it changes", function()
    local f = ltc.jit(function(b) return b.x:sum() * b.scale end)
    assert.equal(6, f({ x = ltc.ones(3), scale = 2 }):item())
    assert.equal(6, f({ x = ltc.ones(3), scale = 2 }):item())
    assert.equal(8, f({ x = ltc.ones(4), scale = 2 }):item())
    assert.equal(12, f({ x = ltc.ones(4), scale = 3 }):item()) -- a constant of the capture
    assert.equal(12, f({ x = ltc.ones(4), scale = 3 }):item())
    assert.matches("scale=ninteger:2", ltc.debug.explain_jit(f))
  end)
end)

