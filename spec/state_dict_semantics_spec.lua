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

-- a module whose head shares the embedding's weight (tied weights, as a language model's)
local function tied()
  local Tied = nn.class("TiedLM")
  function Tied:__init()
    self.emb = nn.Embedding(4, 2)
    self.head = nn.Linear(2, 4, { bias = false })
    self.head.weight = self.emb.weight
  end
  function Tied:forward(x) return self.head(self.emb(x)) end
  return Tied()
end

local function keys(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = k end
  table.sort(out)
  return out
end

describe("load_state_dict", function()
  it("copies into the parameters in place: an optimizer made before sees the loaded values", function()
    local m = nn.Linear(2, 1)
    local w, b = m.weight, m.bias
    local view = m:state_dict().weight -- a detached alias of the parameter
    local opt = ltc.optim.SGD(m:parameters(), { lr = 0.5 })
    m:load_state_dict({ weight = ltc.tensor({ { 1, 2 } }), bias = ltc.tensor({ 3 }, "float64") })
    assert.are.equal(w, m.weight)
    assert.are.equal(b, m.bias)
    assert.are.same({ { 1, 2 } }, view:totable())
    assert.are.equal("float32", m.bias:dtype()) -- cast to the parameter's dtype
    assert.is_true(m.weight.is_leaf and m.weight.requires_grad)
    -- y = w.x + b at x = (1, 1) is 6; d(y)/dw = x, d(y)/db = 1; one SGD step of lr 0.5
    m(ltc.ones(1, 2)):sum():backward()
    opt:step()
    assert.are.same({ { 0.5, 1.5 } }, m.weight:totable())
    assert.are.same({ 2.5 }, m.bias:totable())
  end)

  it("keeps each parameter's device, moving the loaded value to it", function()
    local m = nn.Linear(2, 1)
    local w = m.weight
    m:load_state_dict({ weight = ltc.tensor({ { 4, 5 } }):to("ref"), bias = ltc.tensor({ 6 }):to("ref") })
    assert.are.equal(w, m.weight)
    assert.are.equal("cpu:0", m.weight:device())
    assert.are.same({ { 4, 5 } }, m.weight:totable())
    assert.are.same({ 15 }, m(ltc.ones(1, 2)):totable()[1])
  end)

  it("names the key and both sizes in a size mismatch, and copies nothing", function()
    local m = nn.Linear(2, 1)
    local before = m.weight:totable()
    assert.matches("load_state_dict: 'weight' has size 1x3, the module's 1x2",
      err(function() m:load_state_dict({ weight = ltc.zeros(1, 3), bias = ltc.zeros(1) }) end), 1, true)
    assert.are.same(before, m.weight:totable())
  end)

  it("raises on missing and unexpected keys in strict mode, and lists them otherwise", function()
    local m = nn.Linear(2, 1)
    assert.matches("load_state_dict: missing parameter 'bias'; unexpected parameter 'extra'",
      err(function() m:load_state_dict({ weight = ltc.zeros(1, 2), extra = ltc.zeros(1) }) end), 1, true)
    local same, missing, unexpected = m:load_state_dict({ weight = ltc.zeros(1, 2), extra = ltc.zeros(1) }, false)
    assert.are.equal(m, same)
    assert.are.same({ "bias" }, missing)
    assert.are.same({ "extra" }, unexpected)
    assert.are.same({ { 0, 0 } }, m.weight:totable())
  end)

  it("loads tied weights from both names, or from either one alone (our choice; PyTorch: missing)", function()
    local m = tied()
    local w = ltc.tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 }, { 7, 8 } })
    m:load_state_dict({ ["emb.weight"] = w, ["head.weight"] = w })
    assert.are.same(w:totable(), m.head.weight:totable())
    local _, missing, unexpected = m:load_state_dict({ ["head.weight"] = w * 2 })
    assert.are.same({}, missing)
    assert.are.same({}, unexpected)
    assert.are.equal(m.emb.weight, m.head.weight)
    assert.are.same((w * 2):totable(), m.emb.weight:totable())
    m:load_state_dict({ ["emb.weight"] = w })
    assert.are.same(w:totable(), m.head.weight:totable())
    assert.matches("load_state_dict: missing parameters 'emb.weight', 'head.weight'",
      err(function() m:load_state_dict({}) end), 1, true)
  end)
end)

describe("state_dict", function()
  it("lists every name of tied weights, as PyTorch", function()
    local m = tied()
    assert.are.same({ "emb.weight", "head.weight" }, keys(m:state_dict()))
    assert.are.equal(1, #m:parameters()) -- named_parameters still gives a shared tensor once
    local sd = m:state_dict({ keep_vars = true })
    assert.are.equal(sd["emb.weight"], sd["head.weight"])
  end)

  it("returns detached aliases that share storage, the tensors themselves with keep_vars", function()
    local m = nn.Linear(2, 1)
    local sd = m:state_dict()
    assert.is_false(sd.weight.requires_grad)
    assert.is_false(rawequal(sd.weight, m.weight))
    ltc.no_grad(function() m.weight:copy_(ltc.tensor({ { 7, 8 } })) end)
    assert.are.same({ { 7, 8 } }, sd.weight:totable())
    sd.bias:fill_(2)
    assert.are.same({ 2 }, m.bias:totable())
    local kv = m:state_dict({ keep_vars = true })
    assert.are.equal(m.weight, kv.weight)
    assert.is_true(kv.weight.requires_grad)
  end)

  it("puts a prefix before each name and fills a destination table", function()
    local m = nn.Sequential(nn.Linear(2, 1), nn.BatchNorm1d(1))
    local dest = { step = 3 }
    local sd = m:state_dict({ prefix = "model.", destination = dest })
    assert.are.equal(dest, sd)
    assert.are.same({ "model.1.bias", "model.1.weight", "model.2.bias", "model.2.num_batches_tracked",
      "model.2.running_mean", "model.2.running_var", "model.2.weight", "step" }, keys(sd))
  end)

  it("checks its options", function()
    local m = nn.Linear(2, 1)
    assert.matches("state_dict: unknown option 'keepvars' (known: destination, keep_vars, prefix)",
      err(function() m:state_dict({ keepvars = true }) end), 1, true)
    assert.matches("state_dict: prefix must be a string, got number",
      err(function() m:state_dict({ prefix = 1 }) end), 1, true)
    assert.matches("state_dict: bad argument #1 (an options table {prefix, keep_vars, destination} "
      .. "expected, got string)", err(function() m:state_dict("x") end), 1, true)
  end)
end)

describe("the class weight of cross_entropy and nll_loss", function()
  local x = ltc.tensor({ { 1, 2, 0.5 }, { 0.1, -1, 2 }, { 0, 0, 0 }, { 3, 1, -2 } })
  local y = ltc.tensor({ 1, 2, 3, 1 }, "int64")
  local F = nn.functional

  it("weights each class (one element per class)", function()
    -- torch: F.cross_entropy(x, y - 1, weight=torch.tensor([1., 2., 0.5])) = 1.891131043434143
    local w = ltc.tensor({ 1, 2, 0.5 })
    assert.is_true(math.abs(F.cross_entropy(x, y, { weight = w }):item() - 1.891131043434143) < 1e-6)
    assert.is_true(math.abs(F.nll_loss(x:log_softmax(2), y, { weight = w }):item() - 1.891131043434143) < 1e-6)
  end)

  it("raises naming the op and both sizes when the weight is not one per class", function()
    local msg = "cross_entropy: weight has size [2], the input has 3 classes (weight must be [3], one per class)"
    assert.matches(msg, err(function() F.cross_entropy(x, y, { weight = ltc.ones(2) }) end), 1, true)
    assert.matches(msg, err(function() nn.CrossEntropyLoss({ weight = ltc.ones(2) })(x, y) end), 1, true)
    assert.matches(msg, err(function() F.cross_entropy(x, x:softmax(2), ltc.ones(2)) end), 1, true)
    assert.matches("cross_entropy: weight has size [1], the input has 3 classes",
      err(function() F.cross_entropy(x, y, { weight = ltc.ones(1), label_smoothing = 0.1 }) end), 1, true)
    -- a one-element weight would broadcast; a [3, 1] one has the right count but not the shape
    assert.matches("nll_loss: weight has size [1], the input has 3 classes (weight must be [3], one per class)",
      err(function() F.nll_loss(x, y, { weight = ltc.ones(1) }) end), 1, true)
    assert.matches("nll_loss: weight has size [3, 1], the input has 3 classes",
      err(function() F.nll_loss(x, y, { weight = ltc.ones(3, 1) }) end), 1, true)
    assert.matches("nll_loss: weight has size [5], the input has 4 classes",
      err(function() F.nll_loss(ltc.zeros(2, 4, 3), ltc.ones(2, 3):long(), { weight = ltc.ones(5) }) end), 1, true)
    assert.matches("nll_loss: weight must be a tensor of 3 elements, one per class, got table",
      err(function() F.nll_loss(x, y, { weight = { 1, 2, 3 } }) end), 1, true)
  end)
end)
