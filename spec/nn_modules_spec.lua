-- ltc.nn modules: registration by assignment (PyTorch's __setattr__), the module tree
-- (children, modules, named_parameters, apply), conversions, buffers in state_dict, printing,
-- and options that are checked and honoured (issue 16).
local ltc = require "ltc"
local nn = ltc.nn

local Net = nn.class("Net")
function Net:__init()
  self.body = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
  self.head = nn.Linear(3, 2, { bias = false })
  self.scale = nn.Parameter(ltc.ones(2))
  self:register_buffer("count", ltc.zeros(1))
  self.note = "plain field"
  self.hidden = 7
end
function Net:forward(x) return self.head(self.body(x)) * self.scale end

local function names(list)
  local out = {}
  for i, e in ipairs(list) do out[i] = e[1] end
  return out
end

describe("a module's fields", function()
  it("register submodules and parameters assigned in __init", function()
    local m = Net()
    assert.are.same({ "scale", "body.1.weight", "body.1.bias", "head.weight" },
      names(m:named_parameters()))
    assert.are.equal(4, #m:parameters())
    assert.are.same({ "body", "head" }, names(m:named_children()))
    assert.are.equal("plain field", m.note)
    assert.are.equal(7, m.hidden)
    assert.is_nil(m.head.bias)
  end)

  it("train what was assigned: every parameter gets a gradient", function()
    ltc.manual_seed(1)
    local m = Net()
    m(ltc.randn(5, 4)):sum():backward()
    for _, np in ipairs(m:named_parameters()) do assert.is_not_nil(np[2].grad, np[1]) end
    m:zero_grad()
    for _, p in ipairs(m:parameters()) do assert.is_nil(p.grad) end
  end)

  it("replace a registered value on reassignment, and unregister for another kind", function()
    local m = Net()
    local lin = nn.Linear(3, 2)
    m.head = lin
    assert.are.equal(lin, m.head)
    assert.are.same({ "scale", "body.1.weight", "body.1.bias", "head.weight", "head.bias" },
      names(m:named_parameters()))
    m.head = nil
    assert.are.same({ "scale", "body.1.weight", "body.1.bias" }, names(m:named_parameters()))
    m.scale = 3
    assert.are.equal(3, m.scale)
    assert.are.same({ "body.1.weight", "body.1.bias" }, names(m:named_parameters()))
    m.extra = ltc.zeros(2) -- a tensor that does not require grad stays a plain field
    assert.are.equal(2, #m:parameters())
  end)

  it("keep buffers out of parameters() and in state_dict()", function()
    local m = Net()
    assert.are.same({ "count" }, names(m:named_buffers()))
    local sd = m:state_dict()
    assert.are.equal(m.count, m:state_dict({ keep_vars = true }).count)
    assert.are.same(m.count:totable(), sd.count:totable()) -- a detached alias (PyTorch's)
    local keys = {}
    for k in pairs(sd) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ "body.1.bias", "body.1.weight", "count", "head.weight", "scale" }, keys)
    local m2 = Net()
    sd.count = ltc.tensor({ 5 })
    m2:load_state_dict(sd)
    assert.are.same({ 5 }, m2.count:totable())
  end)
end)

describe("the module tree", function()
  it("#seq counts children and seq[i] is the i-th", function()
    local s = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
    assert.are.equal(3, #s)
    assert.are.equal("ReLU()", tostring(s[2]))
    s:add(nn.Tanh())
    assert.are.equal(4, #s)
    assert.are.equal(0, #nn.Linear(2, 2))
  end)

  it("modules() lists the module and every submodule depth first", function()
    local m = Net()
    assert.are.same({ "", "body", "body.1", "body.2", "head" }, names(m:named_modules()))
    local ms = m:modules()
    assert.are.equal(m, ms[1])
    assert.are.equal(m.body[1], ms[3])
    assert.are.equal(2, #m:children())
  end)

  it("apply(fn) visits children before the module (custom initialisation)", function()
    local m = Net()
    local seen = {}
    m:apply(function(mod)
      seen[#seen + 1] = getmetatable(mod).__name
      if getmetatable(mod) == nn.Linear then ltc.no_grad(function() mod.weight:fill_(0.5) end) end
    end)
    assert.are.same({ "ltc.nn.Linear", "ltc.nn.ReLU", "ltc.nn.Sequential", "ltc.nn.Linear",
      "ltc.nn.Net" }, seen)
    assert.are.same({ { 0.5, 0.5, 0.5 }, { 0.5, 0.5, 0.5 } }, m.head.weight:totable())
  end)

  it("double() and float() convert parameters and float buffers, keeping them leaves", function()
    local m = Net():double()
    for _, p in ipairs(m:parameters()) do
      assert.are.equal("float64", p:dtype())
      assert.is_true(p.requires_grad and p.is_leaf)
    end
    assert.are.equal("float64", m.count:dtype())
    assert.are.equal("float64", m(ltc.ones(1, 4, "float64")):dtype())
    m:float()
    assert.are.equal("float32", m.head.weight:dtype())
    assert.are.equal("float32", m:to("float32").body[1].bias:dtype())
  end)

  it("print with their sizes", function()
    assert.are.equal("Embedding(10, 4)", tostring(nn.Embedding(10, 4)))
    assert.are.equal("Linear(in_features=3, out_features=2, bias=false)",
      tostring(nn.Linear(3, 2, { bias = false })))
    assert.are.equal("Dropout(p=0.25)", tostring(nn.Dropout(0.25)))
    assert.are.equal(table.concat({ "Net(", "  (body): Sequential(",
      "    (1): Linear(in_features=4, out_features=3, bias=true)", "    (2): ReLU()", "  )",
      "  (head): Linear(in_features=3, out_features=2, bias=false)", ")" }, "\n"), tostring(Net()))
  end)
end)

describe("module options", function()
  it("are errors when unknown, naming the option", function()
    assert.has_error(function() nn.Linear(3, 2, { biass = false }) end,
      "Linear: unknown option 'biass' (known: bias)")
    assert.has_error(function() nn.Embedding(5, 2, { padding = 1 }) end,
      "Embedding: unknown option 'padding' (known: padding_idx)")
    assert.has_error(function() nn.LayerNorm(4, { epsilon = 1 }) end,
      "LayerNorm: unknown option 'epsilon' (known: bias, elementwise_affine, eps)")
    assert.has_error(function() nn.Conv2d(1, 1, 3, { pad = 1 }) end,
      "Conv2d: unknown option 'pad' (known: bias, dilation, groups, padding, stride)")
  end)

  it("are errors for the activations, Softmax and Flatten too (fresh-eyes tester)", function()
    assert.has_error(function() nn.ReLU { foo = 1 } end, "ReLU: unknown option 'foo' (known: inplace)")
    assert.has_error(function() nn.Tanh { foo = 1 } end, "Tanh: unknown option 'foo' (it takes no options)")
    assert.has_error(function() nn.Sigmoid(1) end, "Sigmoid: takes at most 0 arguments (none), got 1")
    assert.has_error(function() nn.GELU { approximat = "tanh" } end,
      "GELU: unknown option 'approximat' (known: approximate)")
    assert.has_error(function() nn.GELU { approximate = "tan" } end,
      "GELU: approximate must be 'none' or 'tanh', got 'tan'")
    assert.has_error(function() nn.ReLU { inplace = true } end,
      "ReLU: inplace=true is not supported (ltc modules return a new tensor)")
    assert.has_error(function() nn.Softmax { dimm = 1 } end, "Softmax: unknown option 'dimm' (known: dim)")
    assert.has_error(function() nn.AdaptiveAvgPool2d { outsize = 2 } end,
      "AdaptiveAvgPool2d: unknown option 'outsize' (known: output_size)")
    assert.has_error(function() nn.Flatten { start = 1 } end,
      "Flatten: unknown option 'start' (known: end_dim, start_dim)")
    assert.are.equal("Softmax(dim=1)", tostring(nn.Softmax { dim = 1 }))
    assert.are.equal("ReLU()", tostring(nn.ReLU { inplace = false }))
  end)

  it("GELU{approximate = 'tanh'} is PyTorch's tanh form, with its gradient", function()
    -- torch 1.13: F.gelu(x, approximate='tanh') and the grad of its sum
    local want = { -0.0036373, -0.1588080, 0.3457140, 1.9545977 }
    local dwant = { -0.0115842, -0.0829641, 0.8673699, 1.0860993 }
    for _, g in ipairs { nn.GELU { approximate = "tanh" }, nn.GELU("tanh"),
      function(x) return nn.functional.gelu(x, { approximate = "tanh" }) end } do
      local x = ltc.tensor({ -3, -1, 0.5, 2 }):requires_grad_()
      local y = g(x)
      y:sum():backward()
      for i = 1, 4 do
        assert.is_true(math.abs(y:totable()[i] - want[i]) < 1e-5, "value " .. i)
        assert.is_true(math.abs(x.grad:totable()[i] - dwant[i]) < 1e-5, "grad " .. i)
      end
    end
    assert.are.equal("GELU(approximate='tanh')", tostring(nn.GELU { approximate = "tanh" }))
    -- "none" is the exact form (-0.0040 at -3, against -0.0036 for tanh)
    local exact = nn.GELU { approximate = "none" }(ltc.tensor({ -3 })):totable()[1]
    assert.is_true(math.abs(exact - -0.0040496) < 1e-6)
    assert.has_error(function() nn.functional.gelu(ltc.ones(2), "x") end,
      "gelu: approximate must be 'none' or 'tanh', got 'x'")
  end)

  it("bias = false leaves Linear and Conv2d without a bias", function()
    local l = nn.Linear(3, 2, { bias = false })
    assert.is_nil(l.bias)
    assert.are.equal(1, #l:parameters())
    assert.are.equal(1, #nn.Conv2d(1, 2, 3, { bias = false }):parameters())
    ltc.no_grad(function() l.weight:fill_(1) end)
    assert.are.same({ { 6, 6 } }, l(ltc.tensor({ { 1, 2, 3 } })):totable())
  end)

  it("ceil_mode rounds MaxPool2d's output size up", function()
    local x = ltc.arange(1, 26):float():reshape({ 1, 1, 5, 5 })
    assert.are.same({ 1, 1, 2, 2 }, nn.MaxPool2d(2)(x):size())
    local y = nn.MaxPool2d(2, { ceil_mode = true })(x)
    assert.are.same({ { { { 7, 9, 10 }, { 17, 19, 20 }, { 22, 24, 25 } } } }, y:totable())
  end)

  it("padding_idx starts Embedding's row at zero and passes it no gradient", function()
    ltc.manual_seed(3)
    local e = nn.Embedding(4, 2, { padding_idx = 2 })
    assert.are.same({ 0, 0 }, e.weight[2]:totable())
    ltc.no_grad(function() e.weight:fill_(1) end)
    local out = e(ltc.tensor({ 2, 1, 2, 4 }, "int64"))
    assert.are.same({ { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 } }, out:totable())
    out:sum():backward()
    assert.are.same({ { 1, 1 }, { 0, 0 }, { 0, 0 }, { 1, 1 } }, e.weight.grad:totable())
    assert.has_error(function() nn.Embedding(4, 2, { padding_idx = 5 }) end,
      "Embedding: padding_idx must be in 1..4 or -4..-1 (got 5)")
  end)

  it("Dropout checks p as ltc.dropout does (repro r16)", function()
    assert.has_error(function() nn.Dropout(-1) end, "Dropout: p must be between 0 and 1, got -1")
    assert.has_error(function() nn.Dropout(2) end, "Dropout: p must be between 0 and 1, got 2")
    assert.has_error(function() nn.functional.dropout(ltc.ones(3), 1.5) end,
      "dropout: p must be between 0 and 1, got 1.5")
    local ok, err = pcall(nn.functional.dropout, ltc.ones(3), 0 / 0)
    assert.is_false(ok)
    assert.is_truthy(err:find("dropout: p must be between 0 and 1", 1, true))
    assert.are.same({ 1, 1, 1 }, nn.Dropout { p = 0.5 }:eval()(ltc.ones(3)):totable())
  end)
end)

describe("forward hooks", function()
  it("see inputs and output, may replace them, and come off with remove()", function()
    local m = nn.Linear(2, 1)
    ltc.no_grad(function() m.weight:fill_(1); m.bias:fill_(0) end)
    local seen = {}
    local h = m:register_forward_hook(function(mod, inputs, out)
      seen[#seen + 1] = { mod == m, inputs[1]:totable(), out:totable() }
      return out * 10
    end)
    local p = m:register_forward_pre_hook(function(_, inputs) return inputs[1] + 1 end)
    assert.are.same({ { 50 } }, m(ltc.tensor({ { 1, 2 } })):totable())
    assert.are.same({ { true, { { 2, 3 } }, { { 5 } } } }, seen) -- the pre-hook's inputs
    h.remove()
    p.remove()
    assert.are.same({ { 3 } }, m(ltc.tensor({ { 1, 2 } })):totable())
    assert.are.equal(1, #seen)
    assert.has_error(function() m:register_forward_hook(3) end,
      "register_forward_hook: a function expected, got number")
  end)

  it("see a module's several results as one table (PyTorch's output tuple) and may replace them", function()
    ltc.manual_seed(5)
    local lstm = nn.LSTM(3, 4)
    local x = ltc.randn(2, 1, 3)
    local y0, st0 = lstm(x)
    local seen
    local h = lstm:register_forward_hook(function(_, _, out)
      seen = out
      return { out[1] * 0, out[2] }
    end)
    local y, st = lstm(x)
    assert.are.equal(2, seen.n)
    assert.are.same(y0:totable(), seen[1]:totable())
    assert.are.same(st0[1]:totable(), seen[2][1]:totable()) -- h_n
    assert.are.same({ 2, 1, 4 }, y:size())
    assert.are.equal(0, y:abs():sum():item())
    assert.are.same(st0[2]:totable(), st[2]:totable()) -- c_n passed through
    h.remove()
    lstm:register_forward_hook(function(_, _, out) return out[1] end)
    assert.has_error(function() lstm(x) end,
      "a forward hook of a module with 2 results must return nil or a table of them (as PyTorch's output tuple), got a tensor")
  end)
end)
