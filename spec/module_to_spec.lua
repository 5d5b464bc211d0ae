-- m:to(dtype or device) converts parameters in place, as PyTorch's param.data = fn(param):
-- an optimizer made before the conversion keeps updating the module's parameters.
local ltc = require "ltc"
local nn = ltc.nn

-- A Linear(2, 1) with weight {{1, 2}} and bias {0}, an SGD over it, one step of
-- loss = sum(m(ones(1, 2))): dloss/dW = {{1, 1}}, dloss/db = {1}, so lr = 0.5 gives
-- W = {{0.5, 1.5}}, b = {-0.5}.
local function model()
  local m = nn.Linear(2, 1)
  m:load_state_dict { weight = ltc.tensor { { 1, 2 } }, bias = ltc.tensor { 0 } }
  return m
end

local function step(m, opt, dev, dtype)
  opt:zero_grad()
  local x = ltc.ones(1, 2):to(dtype)
  if dev then x = x:to(dev) end
  m(x):sum():backward()
  opt:step()
end

describe("Module:to", function()
  it("keeps the parameters an optimizer made before it holds (dtype)", function()
    local m = model()
    local w = m.weight
    local opt = ltc.optim.SGD(m:parameters(), { lr = 0.5 })
    m:double()
    assert.equal(w, m.weight) -- before: a new Parameter, the optimizer kept the float32 one
    assert.equal("float64", m.weight:dtype())
    assert.is_true(m.weight.requires_grad)
    step(m, opt, nil, "float64")
    assert.same({ { 0.5, 1.5 } }, m.weight:totable())
    assert.same({ -0.5 }, m.bias:totable())
  end)

  it("converts a parameter's grad with it", function()
    local m = model()
    m(ltc.ones(1, 2)):sum():backward()
    m:double()
    assert.equal("float64", m.weight.grad:dtype())
    assert.same({ { 1, 1 } }, m.weight.grad:totable())
  end)

  it("moves the parameters an optimizer holds to another backend", function()
    local m = model()
    local opt = ltc.optim.SGD(m:parameters(), { lr = 0.5 })
    m:to("ref")
    assert.equal("ref:0", ltc.device(m.weight))
    step(m, opt, "ref", "float32")
    assert.same({ { 0.5, 1.5 } }, m.weight:totable())
  end)

  it("lets t.data = v change a parameter's dtype and device, as PyTorch", function()
    local p = nn.Parameter(ltc.tensor { 1, 2 })
    p.data = ltc.tensor({ 3, 4 }, "float64")
    assert.equal("float64", p:dtype()) -- before: float32, the value cast into it
    p.data = ltc.tensor({ 5, 6 }):to("ref")
    assert.equal("ref:0", ltc.device(p))
    assert.same({ 5, 6 }, p:totable())
    assert.is_true(p.requires_grad)
  end)

  it("t:to(device) hands back t itself when t is there already", function()
    local t = ltc.ones(2)
    assert.is_true(rawequal(t, t:to("cpu"))) -- before: a new Lua value for the same tensor
    assert.is_true(rawequal(t, t:to("cpu:0")))
    local r = t:to("ref")
    assert.is_true(rawequal(r, r:to("ref")))
    assert.is_false(rawequal(t, r))
  end)

  it("names the devices when t:to() gets a device it does not know (\"cuda\")", function()
    local ok, e = pcall(function() local r = ltc.ones(2):to("cuda"); return r end)
    assert.is_false(ok)
    -- before: only "unknown dtype 'cuda' (expected float32, ...)"
    assert.matches("unknown dtype 'cuda'.*nor a device: the devices are cpu, ref", e)
    assert.matches("module_to_spec", e) -- at the caller's line
  end)
end)

describe("a captured graph after Module:to", function()
  it("ltc.jit captures again after m:double(), as an untraced call computes", function()
    local m = model()
    local f = ltc.jit(function(x) return m(x):sum() end)
    for _ = 1, 3 do assert.equal(3, f(ltc.ones(1, 2)):item()) end
    m:double()
    -- untraced: float32 input, float64 weight is an error; the replay read the float64
    -- weight's bytes as float32 and returned a number
    local ok, e = pcall(function() return f(ltc.ones(1, 2)):item() end)
    assert.is_false(ok)
    assert.matches("linear: self and weight must have one dtype", e)
    assert.equal(3, f(ltc.ones(1, 2, "float64")):item())
  end)

  it("a Graph replay after a static input was converted in place is an error", function()
    local w, x = ltc.tensor { 1, 2 }, ltc.tensor { 3, 4 }
    local g = ltc.Graph { keep_graph = false }
    g:capture_begin { mode = "thread_local" }
    local y = (w * x):sum()
    g:capture_end()
    assert.equal(11, y:item())
    ltc.no_grad(function() w.data = ltc.tensor({ 1, 2, 3 }, "float64") end)
    local ok, e = pcall(function() g:replay() end)
    assert.is_false(ok)
    assert.matches("does not have the captured shape, dtype or device", e)
  end)
end)

