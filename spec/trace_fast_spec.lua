-- The tracing fast path: shared data of weak scalars, pooled tensors and nodes, the
-- autograd wrappers' fast path. Values are checked against the reference backend.
local ltc = require "ltc"

local function on(backend, fn)
  local prev = ltc.get_backend and ltc.get_backend() or "cpu"
  ltc.set_backend(backend)
  local ok, r = pcall(fn)
  ltc.set_backend(prev)
  assert(ok, r)
  return r
end

describe("the tracing fast path", function()
  it("gives every use of a repeated Lua number its own parameter", function()
    local x = ltc.tensor { 1, 2 }
    local y = x * 2 + 2 -- one number twice: two parameters, as a different number would be
    local z = x * 2 + 3
    local ir_y = ltc.debug.ir(y)
    local ir_z = ltc.debug.ir(z)
    local _, ny = ir_y:gsub("param #", "")
    local _, nz = ir_z:gsub("param #", "")
    assert.equal(nz, ny)
    assert.same({ 4, 6 }, y:totable())
    assert.same({ 5, 7 }, z:totable())
  end)

  it("compiles a loop with numbers once, whatever their values", function()
    local x = ltc.tensor { 1, 2 }
    local function step(a, b) return x * a + b end
    step(2, 2):totable()
    local before = ltc.metrics.counter("UncachedCompile")
    assert.same({ 5, 8 }, step(3, 2):totable())
    assert.same({ 3, 5 }, step(2, 1):totable())
    assert.same({ 4, 6 }, step(2, 2):totable())
    assert.equal(before, ltc.metrics.counter("UncachedCompile"))
  end)

  it("replays a jit function whose number argument equals a literal in it", function()
    local f = ltc.jit(function(x, s) return x * s + 2.0 end)
    local x = ltc.tensor({ 1, 2 }, "float64") -- no conversion: s and 2.0 enter as they are
    assert.same({ 4, 6 }, f(x, 2.0):totable())
    assert.same({ 4, 6 }, f(x, 2.0):totable())
    assert.same({ 5, 8 }, f(x, 3.0):totable()) -- the literal 2.0 stays 2
    assert.same({ 2, 2 }, f(x, 0.0):totable())
  end)

  it("matches the reference backend over a long chain of small ops", function()
    local function chain()
      ltc.manual_seed(5)
      local x = ltc.randn(4, 4)
      local y = x
      for i = 1, 300 do
        y = (y * 1.0001 + 0.5) / 1.25 - (i % 3)
        if i % 50 == 0 then y = y:tanh() end
      end
      return y:totable()
    end
    local want = on("ref", chain)
    local got = on("cpu", chain)
    for i = 1, 4 do
      for j = 1, 4 do assert.near(want[i][j], got[i][j], 1e-5) end
    end
  end)

  it("counts made and freed tensors exactly", function()
    collectgarbage()
    ltc.sync()
    local c0, d0 = ltc.metrics.counter("CreateLtcTensor"), ltc.metrics.counter("DestroyLtcTensor")
    do
      local x = ltc.tensor { 1 }
      for _ = 1, 3000 do x = x + 1 end
      assert.equal(3001, x:item())
    end
    collectgarbage()
    collectgarbage()
    local made = ltc.metrics.counter("CreateLtcTensor") - c0
    assert.is_true(made >= 3001)
    assert.equal(made, ltc.metrics.counter("DestroyLtcTensor") - d0)
  end)

  it("names the caller's line when an op raises without autograd", function()
    local x = ltc.randn(4, 4)
    local ok, msg = pcall(function() return x:matmul(ltc.randn(3)) end)
    assert.is_false(ok)
    assert.truthy(msg:find("^spec/trace_fast_spec.lua:%d+: matmul: "), msg)
    assert.falsy(msg:find("autograd.lua", 1, true), msg)
  end)

  it("still records when an argument requires grad", function()
    local w = ltc.tensor({ 1, 2 }):requires_grad_()
    local y = (w * 3 + 1):sum()
    y:backward()
    assert.same({ 3, 3 }, w.grad:totable())
  end)
end)
