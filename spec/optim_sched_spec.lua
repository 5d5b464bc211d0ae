-- ltc.optim's optimizers, state dicts, parameter groups and learning-rate schedulers, and
-- ltc.nn.utils' gradient clipping, against PyTorch (spec/fixtures/nn_optim.lua from
-- tools/gen_nn_fixtures.py: each optimizer's parameters after each of 8 steps with given
-- gradients; each scheduler's lr, and momentum, after each of 25 steps).
local ltc = require "ltc"
local close = dofile("spec/support/close.lua")
local fx = dofile("spec/fixtures/nn_optim.lua")
local S = ltc.optim.lr_scheduler
-- the schedules below step without an optimizer step: their order warning is checked on its
-- own at the end ("warns once when ..."), not printed
local warned = {}
local default_warn = S._warn
S._warn = function(msg) warned[#warned + 1] = msg end

local function T(v) return ltc.tensor(v, "float64") end

local function run(cls, opts, steps, p)
  p = p or T(fx.optim.p0):requires_grad_()
  local opt = ltc.optim[cls]({ p }, opts)
  local traj = {}
  for k = 1, steps do
    p.grad = T(fx.optim.grads[k])
    opt:step()
    traj[k] = p:totable()
  end
  return traj, opt, p
end

describe("the optimizers", function()
  local names = {}
  for name in pairs(fx.optim.cases) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    it("match PyTorch step by step: " .. name, function()
      local c = fx.optim.cases[name]
      local traj = run(c.cls, c.opts, #c.traj)
      close(c.traj, traj, 1e-9)
    end)
  end

  it("compile nothing after the first two steps, even when lr changes", function()
    for _, cls in ipairs { "RMSprop", "Adagrad", "NAdam", "RAdam", "Adamax", "Adadelta" } do
      local p = ltc.randn(4, 3):requires_grad_()
      local opt = ltc.optim[cls]({ p }, { lr = 0.01 })
      for k = 1, 6 do
        if k == 3 then ltc.metrics.reset() end
        opt.lr = 0.01 / k
        p.grad = ltc.randn(4, 3)
        opt:step()
        ltc.sync()
      end
      assert.are.equal(0, ltc.metrics.counter("UncachedCompile"), cls)
    end
  end)

  it("check their options", function()
    local p = ltc.zeros(2):requires_grad_()
    assert.has_error(function() ltc.optim.RMSprop({ p }, { beta = 1 }) end, "RMSprop: unknown option 'beta'")
    assert.has_error(function() ltc.optim.RMSprop({ p }, { alpha = 2 }) end, "RMSprop: alpha must be in [0, 1] (got 2)")
    assert.has_error(function() ltc.optim.Adagrad({ p }, { lr_decay = -1 }) end,
      "Adagrad: lr_decay must be a number >= 0 (got -1)")
    assert.has_error(function() ltc.optim.Adam({ p }, { maximize = 1 }) end,
      "Adam: maximize must be a boolean (got number)")
    -- NAdam and RAdam have no maximize in PyTorch 1.13
    assert.has_error(function() ltc.optim.NAdam({ p }, { maximize = true }) end, "NAdam: unknown option 'maximize'")
  end)
end)

describe("an lr set to a bad value (fresh-eyes tester)", function()
  it("raises at step naming the optimizer, eagerly and under ltc.jit", function()
    local p = ltc.ones(2):requires_grad_()
    local opt = ltc.optim.AdamW({ p }, { lr = 0.01 })
    local function body()
      opt:zero_grad()
      local loss = (p * p):sum()
      loss:backward()
      opt:step()
      return loss
    end
    opt.lr = "fast"
    assert.has_error(body, "AdamW: lr must be a number (or a 0-d tensor), got string")
    opt.lr = 0.01
    local step = ltc.jit(body)
    for _ = 1, 3 do step() end
    opt.lr = "fast"
    assert.has_error(step, "AdamW: lr must be a number (or a 0-d tensor), got string")
    opt.lr = nil
    assert.has_error(step, "AdamW: lr must be a number (or a 0-d tensor), got nil")
    opt.lr = 0.01
    step()
    local sgd = ltc.optim.SGD({ { params = { p } }, { params = { ltc.ones(1):requires_grad_() } } }, { lr = 0.1 })
    sgd.param_groups[2].lr = ltc.ones(2)
    assert.has_error(function() sgd:step() end,
      "SGD: lr must be a number (or a 0-d tensor), got a tensor of size [2] (parameter group 2)")
    -- a 0-d tensor lr works: p = 1 - 0.1 * 1
    local q = ltc.ones(2):requires_grad_()
    local sgd2 = ltc.optim.SGD({ q }, { lr = 0.5 })
    sgd2.lr = ltc.tensor(0.1, "float64")
    q.grad = ltc.ones(2)
    sgd2:step()
    close({ 0.9, 0.9 }, q:totable(), 1e-6)
  end)
end)

describe("optimizer state dicts", function()
  it("resume a run exactly: moments and step counts included", function()
    local c = fx.optim.cases.Adam_amsgrad
    local _, opt, p = run("Adam", c.opts, 4)
    local sd = opt:state_dict()
    assert.are.same({ 1 }, sd.param_groups[1].params)
    assert.are.equal(4, sd.state[1].step:item())
    local q = T(p:totable()):requires_grad_()
    local opt2 = ltc.optim.Adam({ q }, { lr = 0.5 })
    opt2:load_state_dict(sd)
    assert.are.equal(0.01, opt2.lr)
    for k = 5, 8 do
      q.grad = T(fx.optim.grads[k])
      opt2:step()
    end
    close(c.traj[8], q:totable(), 1e-9)
    -- the loaded state is a copy: the first optimizer's moments are untouched
    assert.are.equal(4, opt.state[p].step:item())
  end)

  it("refuse a state dict of another layout", function()
    local p = ltc.zeros(2):requires_grad_()
    local opt = ltc.optim.SGD({ p }, { lr = 0.1 })
    assert.has_error(function() opt:load_state_dict({ state = {}, param_groups = {} }) end,
      "SGD.load_state_dict: 0 parameter groups given, the optimizer has 1")
  end)
end)

describe("optimizer state dicts from PyTorch (fresh-eyes tester)", function()
  -- torch 1.13: Adam/AdamW(lr=0.1) over ones(2), one step with grad 1, its state dict with
  -- step = 7 (a number) loaded into a new optimizer, one step with grad {1, 2}
  local want = { Adam = { 0.9333786368370056, 0.9356982707977295 },
    AdamW = { 0.9323786497116089, 0.9346982836723328 } }
  for _, cls in ipairs { "Adam", "AdamW" } do
    it(cls .. " takes a number step as its float64 0-d count", function()
      for _, foreach in ipairs { true, false } do
        ltc.optim._foreach = foreach
        local a = ltc.ones(2):requires_grad_()
        local opt = ltc.optim[cls]({ a }, { lr = 0.1 })
        a.grad = ltc.ones(2)
        opt:step()
        local sd = opt:state_dict()
        sd.state[1].step = 7
        local b = ltc.ones(2):requires_grad_()
        local opt2 = ltc.optim[cls]({ b }, { lr = 0.1 })
        opt2:load_state_dict(sd)
        b.grad = ltc.tensor({ 1, 2 })
        opt2:step()
        ltc.optim._foreach = true
        close(want[cls], b:totable(), 1e-6)
        local step = opt2:state_dict().state[1].step
        assert.are.equal("float64", step:dtype())
        assert.are.equal(0, step:dim())
        assert.are.equal(8, step:item())
      end
    end)
  end

  it("refuse an Adam state without its moments, naming the parameter and the key", function()
    local a, b = ltc.ones(2):requires_grad_(), ltc.ones(3):requires_grad_()
    local opt = ltc.optim.Adam({ a, b }, { lr = 0.1 })
    a.grad, b.grad = ltc.ones(2), ltc.ones(3)
    opt:step()
    for _, key in ipairs { "exp_avg", "exp_avg_sq" } do
      local sd = opt:state_dict()
      sd.state[2][key] = nil
      assert.has_error(function() ltc.optim.Adam({ a, b }):load_state_dict(sd) end,
        "Adam.load_state_dict: the state of parameter 2 has no '" .. key .. "'")
    end
    local sd = opt:state_dict()
    sd.state[1].step = "7"
    assert.has_error(function() ltc.optim.AdamW({ a, b }):load_state_dict(sd) end,
      "AdamW.load_state_dict: 'step' of parameter 1 must be a number or a one-element tensor, got string")
  end)
end)

describe("add_param_group", function()
  it("adds a group with its own options and the defaults for the rest", function()
    local a, b = ltc.tensor({ 1.0 }):requires_grad_(), ltc.tensor({ 1.0 }):requires_grad_()
    local opt = ltc.optim.SGD({ a }, { lr = 0.1, momentum = 0.5 })
    opt:add_param_group { params = { b }, lr = 0.01 }
    assert.are.equal(0.5, opt.param_groups[2].momentum)
    a.grad, b.grad = ltc.tensor({ 1.0 }), ltc.tensor({ 1.0 })
    opt:step()
    close({ 0.9 }, a:totable(), 1e-7)
    close({ 0.99 }, b:totable(), 1e-7)
    assert.has_error(function() opt:add_param_group { params = { a } } end,
      "SGD.add_param_group: parameter 1 is already in a group")
    assert.has_error(function() opt:add_param_group { params = { ltc.zeros(1) }, beta = 1 } end,
      "SGD.add_param_group: unknown option 'beta'")
  end)
end)

describe("gradient clipping", function()
  it("clip_grad_norm_ scales all gradients by max_norm / total, without a sync", function()
    local a, b = ltc.zeros(2):requires_grad_(), ltc.zeros(1):requires_grad_()
    a.grad, b.grad = ltc.tensor({ 3, 4 }), ltc.tensor({ 12 })
    ltc.sync()
    ltc.metrics.reset()
    local total = ltc.nn.utils.clip_grad_norm_({ a, b }, 6.5)
    assert.are.equal(0, ltc.metrics.counter("MarkStep"))
    local k = 6.5 / (13 + 1e-6)
    close({ 3 * k, 4 * k }, a.grad:totable(), 1e-6)
    close({ 12 * k }, b.grad:totable(), 1e-6)
    close(13, total:item(), 1e-6)
    -- under the limit nothing changes; the inf-norm is the largest |g|
    ltc.nn.utils.clip_grad_norm_({ a, b }, 100)
    close({ 12 * k }, b.grad:totable(), 1e-6)
    a.grad = ltc.tensor({ -3, 1 })
    close(6, ltc.nn.utils.clip_grad_norm_({ a, b }, 1, math.huge):item(), 1e-6)
    close({ -0.5, 1 / 6 }, a.grad:totable(), 1e-5)
  end)

  it("clip_grad_norm_ with error_if_nonfinite raises on a NaN or infinite norm (PyTorch)", function()
    local a = ltc.zeros(2):requires_grad_()
    a.grad = ltc.tensor({ 0 / 0, 1 })
    local ok, err = pcall(ltc.nn.utils.clip_grad_norm_, { a }, 1, 2, true)
    assert.is_false(ok)
    assert.matches("clip_grad_norm_: the total norm of order 2 of the gradients is non-finite", err, 1, true)
    ok, err = pcall(ltc.nn.utils.clip_grad_norm_, { a }, 1, { norm_type = math.huge, error_if_nonfinite = true })
    assert.is_false(ok)
    assert.matches("order inf", err, 1, true)
    -- finite: clipped as without the flag; an option of the wrong kind is named
    a.grad = ltc.tensor({ 3, 4 })
    close(5, ltc.nn.utils.clip_grad_norm_({ a }, 1, 2, true):item(), 1e-6)
    close({ 0.6, 0.8 }, a.grad:totable(), 1e-5)
    assert.has_error(function() ltc.nn.utils.clip_grad_norm_({ a }, 1, 2, "yes") end,
      "clip_grad_norm_: error_if_nonfinite must be a boolean, got string")
    assert.has_error(function() ltc.nn.utils.clip_grad_norm_({ a }, 1, { norm = 2 }) end,
      "clip_grad_norm_: unknown option 'norm'")
  end)

  it("clip_grad_value_ clamps every gradient", function()
    local m = ltc.nn.Linear(2, 1)
    m.weight.grad, m.bias.grad = ltc.tensor({ { -3, 0.5 } }), ltc.tensor({ 2 })
    ltc.nn.utils.clip_grad_value_(m, 1)
    assert.are.same({ { -1, 0.5 } }, m.weight.grad:totable())
    assert.are.same({ 1 }, m.bias.grad:totable())
  end)
end)

describe("lr_scheduler", function()
  local function follow(make, steps, adam, metrics)
    local p = ltc.zeros(1):requires_grad_()
    local opt = adam and ltc.optim.Adam({ p }, { lr = 0.1 }) or ltc.optim.SGD({ p }, { lr = 0.1, momentum = 0.9 })
    local s = make(opt)
    local function mom() return adam and opt.param_groups[1].betas[1] or opt.param_groups[1].momentum end
    local lrs, moms = { opt.lr }, { mom() }
    for k = 1, steps do
      if metrics then s:step(metrics[k]) else s:step() end
      lrs[#lrs + 1], moms[#moms + 1] = opt.lr, mom()
    end
    return lrs, moms, s
  end
  local cases = {
    StepLR = function(o) return S.StepLR(o, { step_size = 4, gamma = 0.5 }) end,
    MultiStepLR = function(o) return S.MultiStepLR(o, { milestones = { 3, 7, 20 }, gamma = 0.3 }) end,
    ExponentialLR = function(o) return S.ExponentialLR(o, { gamma = 0.9 }) end,
    CosineAnnealingLR = function(o) return S.CosineAnnealingLR(o, { T_max = 10, eta_min = 0.001 }) end,
    CosineAnnealingWarmRestarts = function(o)
      return S.CosineAnnealingWarmRestarts(o, { T_0 = 3, T_mult = 2, eta_min = 0.01 })
    end,
    LinearLR = function(o) return S.LinearLR(o, { start_factor = 0.25, total_iters = 8 }) end,
    LambdaLR = function(o) return S.LambdaLR(o, { lr_lambda = function(e) return 1 / (1 + e) end }) end,
    OneCycleLR = function(o) return S.OneCycleLR(o, { max_lr = 1.0, total_steps = 25 }) end,
    SequentialLR = function(o)
      return S.SequentialLR(o, { schedulers = { S.LinearLR(o, { start_factor = 0.1, total_iters = 5 }),
        S.CosineAnnealingLR(o, { T_max = 15 }) }, milestones = { 5 } })
    end,
  }
  -- PyTorch's positional arguments (fresh-eyes tester: they raised "options must be a table")
  local positional = {
    StepLR = function(o) return S.StepLR(o, 4, 0.5) end,
    MultiStepLR = function(o) return S.MultiStepLR(o, { 3, 7, 20 }, { gamma = 0.3 }) end,
    ExponentialLR = function(o) return S.ExponentialLR(o, 0.9) end,
    CosineAnnealingLR = function(o) return S.CosineAnnealingLR(o, 10, 0.001) end,
    CosineAnnealingWarmRestarts = function(o) return S.CosineAnnealingWarmRestarts(o, 3, 2, 0.01) end,
    LinearLR = function(o) return S.LinearLR(o, 0.25, nil, 8) end,
    LambdaLR = function(o) return S.LambdaLR(o, function(e) return 1 / (1 + e) end) end,
    OneCycleLR = function(o) return S.OneCycleLR(o, 1.0, 25) end,
    SequentialLR = function(o)
      return S.SequentialLR(o, { S.LinearLR(o, 0.1, 1.0, 5), S.CosineAnnealingLR(o, 15) }, { 5 })
    end,
  }
  -- both ways of building a schedule give PyTorch's lrs and momenta (one fixture per name)
  for title, set in pairs { ["matches PyTorch's lrs and momenta: "] = cases,
                            ["takes PyTorch's positional arguments: "] = positional } do
    for name, make in pairs(set) do
      it(title .. name, function()
        local lrs, moms = follow(make, 25)
        close(fx.sched[name].lrs, lrs, 1e-12)
        close(fx.sched[name].moms, moms, 1e-12)
      end)
    end
  end
  it("refuses an argument given twice or too many positional arguments", function()
    local opt = ltc.optim.SGD({ ltc.zeros(1):requires_grad_() }, { lr = 0.1 })
    assert.has_error(function() S.StepLR(opt, 2, { step_size = 3 }) end,
      "StepLR: got multiple values for 'step_size' (positional and in the options table)")
    assert.has_error(function() S.StepLR(opt, 2, 0.1, -1, 3) end,
      "StepLR: takes at most 3 positional arguments after the optimizer (step_size, gamma, last_epoch), got 4")
    assert.has_error(function() S.StepLR(opt, "x") end,
      'StepLR: step_size must be a positive integer (got the string "x")')
    -- the positional order survives an unknown-option error (which lists the names sorted)
    assert.has_error(function() S.StepLR(opt, { stepsize = 3 }) end,
      "StepLR: unknown option 'stepsize' (known: gamma, last_epoch, step_size)")
    assert.are.equal(0.1 * 0.5, (function() local s = S.StepLR(opt, 1, 0.5); s:step(); return opt.lr end)())
  end)
  it("matches PyTorch: OneCycleLR with Adam's beta1, linear, three phases", function()
    local lrs, moms = follow(function(o)
      return S.OneCycleLR(o, { max_lr = 0.5, total_steps = 25, anneal_strategy = "linear",
        three_phase = true, pct_start = 0.2 })
    end, 25, true)
    close(fx.sched.OneCycleLR_adam_linear_3.lrs, lrs, 1e-12)
    close(fx.sched.OneCycleLR_adam_linear_3.moms, moms, 1e-12)
  end)
  it("matches PyTorch: ReduceLROnPlateau", function()
    local lrs = follow(function(o)
      return S.ReduceLROnPlateau(o, { patience = 2, factor = 0.5, cooldown = 1, min_lr = 0.01 })
    end, 25, false, fx.sched.metrics)
    close(fx.sched.ReduceLROnPlateau.lrs, lrs, 1e-12)
    lrs = follow(function(o)
      return S.ReduceLROnPlateau(o, { mode = "max", threshold_mode = "abs", threshold = 0.1, patience = 1 })
    end, 25, false, fx.sched.metrics)
    close(fx.sched.ReduceLROnPlateau_max_abs.lrs, lrs, 1e-12)
  end)

  it("never recompiles a training step as the lr changes", function()
    local m = ltc.nn.Linear(3, 2)
    local opt = ltc.optim.SGD(m:parameters(), { lr = 0.1, momentum = 0.9 })
    local s = S.CosineAnnealingLR(opt, { T_max = 10 })
    local x = ltc.randn(4, 3)
    for k = 1, 8 do
      if k == 3 then ltc.metrics.reset() end
      opt:zero_grad()
      m(x):sum():backward()
      opt:step()
      s:step()
      ltc.sync()
    end
    assert.are.equal(0, ltc.metrics.counter("UncachedCompile"))
  end)

  it("raises clear errors", function()
    local opt = ltc.optim.SGD({ ltc.zeros(1):requires_grad_() }, { lr = 0.1 })
    assert.has_error(function() S.StepLR(opt, { step = 3 }) end,
      "StepLR: unknown option 'step' (known: gamma, last_epoch, step_size)")
    assert.has_error(function() S.StepLR(opt, {}) end, "StepLR: step_size must be a positive integer (got nil)")
    local s = S.OneCycleLR(opt, { max_lr = 1, total_steps = 2, cycle_momentum = false })
    s:step(); s:step()
    assert.has_error(function() s:step() end, "OneCycleLR: tried to step 3 times, total_steps is 2")
    local ada = ltc.optim.Adagrad({ ltc.zeros(1):requires_grad_() })
    assert.has_error(function() S.OneCycleLR(ada, { max_lr = 1, total_steps = 2 }) end,
      "OneCycleLR: optimizer must support momentum or betas with cycle_momentum enabled")
  end)
end)

describe("lr_scheduler's order check", function()
  it("warns once when sched:step() comes before any opt:step(), as PyTorch", function()
    -- torch 1.13: UserWarning "Detected call of `lr_scheduler.step()` before
    -- `optimizer.step()`" (the lr still changes: 0.1 -> 0.05 here, as below)
    local p = ltc.zeros(1):requires_grad_()
    local opt = ltc.optim.SGD({ p }, { lr = 0.1 })
    local s = S.StepLR(opt, 1, 0.5)
    local before = #warned
    s:step()
    s:step()
    assert.are.equal(before + 1, #warned)
    assert.matches("StepLR:step%(%) was called before the optimizer's step%(%)", warned[#warned])
    close(opt.lr, 0.025)
    -- opt:step() first: no warning, nor for a second scheduler of a stepped optimizer
    local opt2 = ltc.optim.SGD({ p }, { lr = 0.1 })
    local s2 = S.CosineAnnealingLR(opt2, 10)
    p.grad = ltc.ones(1)
    opt2:step()
    s2:step()
    S.ExponentialLR(opt2, 0.9):step()
    assert.are.equal(before + 1, #warned)
    -- ReduceLROnPlateau does not check (PyTorch 1.13's does not either)
    S.ReduceLROnPlateau(ltc.optim.SGD({ p }, { lr = 0.1 })):step(1)
    assert.are.equal(before + 1, #warned)
  end)
end)

-- the fixtures are large Lua tables: free them after this file, so later specs that
-- collect garbage often do not walk them on every collection
teardown(function() fx = nil; S._warn = default_warn end)
