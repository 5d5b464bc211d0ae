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

-- PyTorch 1.13's lrs, printed by tools/gen_sched_chain.py (/usr/bin/python3 with torch): SGD
-- with lr 0.1; lrs[1] after construction (or after the load), lrs[k + 1] after step k
local torch_lrs = {
  cos_linear = { 0.05, 0.058397027990898444, 0.05656615427318802, 0.04438478665692402, 0.025934163803956592, 0.007681089055215493, 0.001, 0.007631742512670284, 0.025750000000000002, 0.05050000000000004, 0.07525000000000008, 0.0933682574873298, 0.1000000000000001, 0.09336825748732981, 0.07525000000000011 },
  multistep_exp = { 0.1, 0.08000000000000002, 0.03200000000000001, 0.025600000000000008, 0.02048000000000001, 0.0040960000000000015, 0.0032768000000000016, 0.0026214400000000014 },
  reload_cos = { 0.03454915028125263, 0.009549150281252633, 0.0, 0.009549150281252628, 0.03454915028125265, 0.06545084971874741 },
  reload_seq = { 0.07, 0.1, 0.09000000000000001, 0.08100000000000002, 0.07290000000000002, 0.06561000000000002 },
  resume_cos = { 0.0505, 0.03520365877844011, 0.02140463001152259, 0.010453658778440109, 0.0034227024433899004, 0.001, 0.0034227024433899004 },
  resume_exp = { 0.06561000000000002, 0.05904900000000002, 0.05314410000000002, 0.04782969000000002, 0.043046721000000024 },
  resume_onecycle = { 0.8117456539497631, 0.6112620219362893, 0.38874197806371075, 0.18825834605023697 },
  resume_step = { 0.05, 0.025, 0.025, 0.025, 0.0125, 0.0125, 0.0125 },
  resume_warm = { 0.0775, 0.05500000000000001, 0.032500000000000015, 0.01602885682970026, 0.1 },
  step_exp = { 0.1, 0.09000000000000001, 0.08100000000000002, 0.03645000000000001, 0.03280500000000001, 0.02952450000000001, 0.013286025000000005, 0.011957422500000005, 0.010761680250000006, 0.0048427561125000025, 0.004358480501250002 },
}

describe("lr schedulers as PyTorch's", function()
  local S = ltc.optim.lr_scheduler
  local function opt() return ltc.optim.SGD({ ltc.zeros(1):requires_grad_() }, { lr = 0.1, momentum = 0.9 }) end
  local function close(want, got)
    assert.are.equal(#want, #got)
    for i = 1, #want do
      assert.is_true(math.abs(want[i] - got[i]) <= 1e-12 * math.max(1, math.abs(want[i])),
        string.format("lr %d: want %.17g, got %.17g", i, want[i], got[i]))
    end
  end
  -- the lrs of o while every scheduler of ss steps, steps times
  local function follow(o, ss, steps)
    local lrs = { o.lr }
    for _ = 1, steps do
      o._stepped = true -- as after opt:step() (no order warning)
      for _, s in ipairs(ss) do s:step() end
      lrs[#lrs + 1] = o.lr
    end
    return lrs
  end

  it("multiply when two of them step one optimizer (the chainable form)", function()
    local o = opt()
    close(torch_lrs.step_exp, follow(o, { S.StepLR(o, 3, 0.5), S.ExponentialLR(o, 0.9) }, 10))
    o = opt()
    close(torch_lrs.cos_linear, follow(o, { S.CosineAnnealingLR(o, 6, 0.001),
      S.LinearLR(o, { start_factor = 0.5, total_iters = 4 }) }, 14))
    o = opt()
    close(torch_lrs.multistep_exp, follow(o, { S.MultiStepLR(o, { 2, 5, 5 }, 0.5), S.ExponentialLR(o, 0.8) }, 7))
  end)

  it("set initial_lr only where a group has none", function()
    local o = opt()
    o.param_groups[1].initial_lr = 0.5
    local s = S.StepLR(o, 3)
    assert.are.same({ 0.5 }, s.base_lrs)
    assert.are.equal(0.1, o.lr)
    local o2 = opt()
    o2._stepped = true -- as after opt:step() (no order warning)
    S.ExponentialLR(o2, 0.9):step()
    S.StepLR(o2, 3) -- a second scheduler keeps the first one's initial_lr
    assert.are.equal(0.1, o2.param_groups[1].initial_lr)
  end)

  it("resume with last_epoch from a loaded optimizer, as PyTorch's constructor", function()
    for _, case in ipairs {
      { "resume_step", 4, 6, function(o, e) return S.StepLR(o, 3, 0.5, e) end },
      { "resume_cos", 4, 6, function(o, e) return S.CosineAnnealingLR(o, { T_max = 10, eta_min = 0.001, last_epoch = e }) end },
      { "resume_exp", 3, 4, function(o, e) return S.ExponentialLR(o, { gamma = 0.9, last_epoch = e }) end },
      { "resume_onecycle", 3, 3, function(o, e) return S.OneCycleLR(o, 1, 10, { last_epoch = e }) end },
      { "resume_warm", 4, 4, function(o, e) return S.CosineAnnealingWarmRestarts(o, 3, 2, 0.01, e) end },
    } do
      local name, k, steps, make = case[1], case[2], case[3], case[4]
      local o = opt()
      follow(o, { make(o, -1) }, k)
      local o2 = opt()
      o2:load_state_dict(o:state_dict())
      close(torch_lrs[name], follow(o2, { make(o2, k) }, steps))
    end
  end)

  it("refuse to resume without initial_lr, and a bad last_epoch", function()
    assert.matches("StepLR: last_epoch = 4 resumes a schedule, but parameter group 1 has no 'initial_lr' "
      .. "(load the optimizer's state_dict first; PyTorch's KeyError)", err(function() S.StepLR(opt(), 3, 0.5, 4) end), 1, true)
    assert.matches("ExponentialLR: last_epoch must be an integer >= -1 (got -2)",
      err(function() S.ExponentialLR(opt(), { gamma = 0.9, last_epoch = -2 }) end), 1, true)
  end)

  it("save their state and load it back, SequentialLR with its sub-schedulers'", function()
    local function seq(o)
      return S.SequentialLR(o, { S.LinearLR(o, { start_factor = 0.1, total_iters = 3 }), S.ExponentialLR(o, 0.9) }, { 3 })
    end
    for _, case in ipairs { { "reload_seq", seq, 2, 5 }, { "reload_cos", function(o) return S.CosineAnnealingLR(o, 5) end, 3, 5 } } do
      local name, make, k, steps = case[1], case[2], case[3], case[4]
      local o = opt()
      local s = make(o)
      follow(o, { s }, k)
      local path = os.tmpname()
      ltc.save(path, { opt = o:state_dict(), sched = s:state_dict() }) -- no function in it
      local ck = ltc.load(path)
      os.remove(path)
      local o2 = opt()
      local s2 = make(o2)
      o2:load_state_dict(ck.opt)
      s2:load_state_dict(ck.sched)
      close(torch_lrs[name], follow(o2, { s2 }, steps))
    end
    local o = opt()
    local sd = seq(o):state_dict()
    assert.are.equal(2, #sd._schedulers)
    assert.are.same({ 0.1 }, sd._schedulers[1].base_lrs)
    assert.are.equal(0.1, sd._schedulers[1].start_factor)
    assert.are.equal(0.9, sd._schedulers[2].gamma)
    assert.is_nil(sd.optimizer)
    assert.matches("SequentialLR.load_state_dict: the state dict has 1 sub-schedulers, this scheduler 2",
      err(function() seq(opt()):load_state_dict({ _schedulers = { {} } }) end), 1, true)
  end)

  it("leave functions out of the state dict (LambdaLR keeps its own lambdas)", function()
    local o = opt()
    local s = S.LambdaLR(o, function(e) return 1 / (1 + e) end)
    follow(o, { s }, 3)
    local sd = s:state_dict()
    assert.is_nil(sd.lr_lambdas)
    assert.are.equal(3, sd.last_epoch)
    local o2 = opt()
    local s2 = S.LambdaLR(o2, function(e) return 1 / (1 + e) end)
    s2:load_state_dict(sd)
    s2:step()
    close({ 0.1 / 5 }, { o2.lr })
    sd.base_lrs[1] = 7 -- a copy: the scheduler's own table is untouched
    assert.are.same({ 0.1 }, s.base_lrs)
  end)
end)
