--- ltc.optim.lr_scheduler: learning-rate schedules (PyTorch's torch.optim.lr_scheduler).
--
--   local sched = ltc.optim.lr_scheduler.CosineAnnealingLR(opt, {T_max = 100})
--   for step = 1, 100 do ...; opt:step(); sched:step() end
--
-- A scheduler writes each parameter group's `lr` (a plain Lua number, which enters the step's
-- graph as a parameter: a new learning rate never recompiles). As in PyTorch, making a
-- scheduler records each group's `initial_lr` where the group has none (a second scheduler
-- keeps the first one's) and sets the lr of epoch 0; sched:step() moves to the next epoch;
-- sched:get_last_lr() returns the lrs it set. Where PyTorch's get_lr is chainable (StepLR,
-- MultiStepLR, ExponentialLR, CosineAnnealingLR, LinearLR) sched:step() computes the next lr
-- from the group's current lr, so two schedulers stepping one optimizer multiply as PyTorch's
-- do; the others (LambdaLR, CosineAnnealingWarmRestarts, OneCycleLR) compute from
-- `initial_lr` as PyTorch's, and sched:step(epoch) uses the closed form (PyTorch's
-- _get_closed_form_lr). Every constructor takes `last_epoch` (default -1, PyTorch's): a
-- schedule resumed at epoch k (after opt:load_state_dict, whose groups hold `initial_lr`,
-- which is then required) steps to epoch k + 1 as PyTorch's constructor does.
-- sched:state_dict() is everything but the optimizer and functions (LambdaLR's lambdas;
-- SequentialLR's sub-schedulers as their state dicts); load_state_dict restores it.
-- Unknown options are errors. The
-- arguments after the optimizer are an options table, or PyTorch's positional ones (in the
-- order each constructor's doc lists them, last_epoch last), optionally followed by an
-- options table: CosineAnnealingLR(opt, 100), StepLR(opt, 30, 0.1), MultiStepLR(opt, {30,
-- 80}, {gamma = 0.5}).
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local M = {}

local pi, cos, floor = math.pi, math.cos, math.floor

local function check(fname, opts, allowed)
  if opts == nil then return {} end
  if type(opts) ~= "table" then raise(fname .. ": options must be a table") end
  for k in pairs(opts) do
    local ok = false
    for _, a in ipairs(allowed) do ok = ok or a == k end
    if not ok then
      local names = { table.unpack(allowed) } -- (allowed is also the positional order)
      table.sort(names)
      raise(string.format("%s: unknown option '%s' (known: %s)", fname, tostring(k),
        table.concat(names, ", ")))
    end
  end
  return opts
end

-- an options table: a table whose keys are all strings (a list is a positional value)
local function is_options(v)
  if type(v) ~= "table" then return false end
  for k in pairs(v) do if type(k) ~= "string" then return false end end
  return true
end

-- The options of a scheduler called as PyTorch's: the arguments after the optimizer in
-- PyTorch's positional order (`allowed`), StepLR(opt, 30, 0.5), and/or a trailing options
-- table, StepLR(opt, {step_size = 30}) or StepLR(opt, 30, {gamma = 0.5}).
local function options_of(fname, allowed, ...)
  local n, a = select("#", ...), { ... }
  local named = {}
  if n > 0 and (a[n] == nil or is_options(a[n])) then
    named = check(fname, a[n], allowed)
    n = n - 1
  end
  if n > #allowed then
    raise(string.format("%s: takes at most %d positional arguments after the optimizer (%s), got %d",
      fname, #allowed, table.concat(allowed, ", "), n))
  end
  local o = {}
  for k, v in pairs(named) do o[k] = v end
  for i = 1, n do
    local k = allowed[i]
    if a[i] ~= nil then
      if named[k] ~= nil then
        raise(string.format("%s: got multiple values for '%s' (positional and in the options table)",
          fname, k))
      end
      o[k] = a[i]
    end
  end
  return o
end

local function check_opt(fname, opt)
  if type(opt) ~= "table" or type(opt.param_groups) ~= "table" then
    raise(fname .. ": the first argument must be an ltc.optim optimizer")
  end
end

local Scheduler = {}
Scheduler.__index = Scheduler
M.LRScheduler = Scheduler

-- A scheduler class; `lr(self, base_lr, epoch, group_index)` is its closed form, and
-- `chain(self, group_lr, base_lr, epoch, group_index)`, where PyTorch's get_lr is chainable,
-- the next lr from the group's current one. `allowed` lists the options in PyTorch's
-- positional order; last_epoch comes after them.
local function class(name, allowed, init, lr, chain)
  local cls = setmetatable({ name = name }, { __index = Scheduler })
  cls.__index = cls
  cls.lr_at, cls.chain = lr, chain
  allowed = { table.unpack(allowed) }
  allowed[#allowed + 1] = "last_epoch"
  setmetatable(cls, {
    __index = Scheduler,
    __call = function(c, opt, ...)
      check_opt(name, opt)
      local o = options_of(name, allowed, ...)
      local last = o.last_epoch or -1
      if math.type(last) ~= "integer" or last < -1 then
        raise(string.format("%s: last_epoch must be an integer >= -1 (got %s)", name, tostring(last)))
      end
      local self = setmetatable({ optimizer = opt, last_epoch = last, _step_count = 0 }, c)
      init(self, o)
      self.base_lrs = {}
      for i, g in ipairs(opt.param_groups) do
        if g.initial_lr == nil and last ~= -1 then
          raise(string.format("%s: last_epoch = %d resumes a schedule, but parameter group %d has "
            .. "no 'initial_lr' (load the optimizer's state_dict first; PyTorch's KeyError)", name,
            last, i))
        end
        if g.initial_lr == nil then g.initial_lr = g.lr end
        self.base_lrs[i] = g.initial_lr
      end
      self:step()
      return self
    end,
  })
  return cls
end

--- M._warn(msg): where the schedulers' warnings go (stderr; a spec may replace it).
function M._warn(msg) io.stderr:write(msg, "\n") end

-- The user's first sched:step() before any opt:step(): warned once per optimizer, as
-- PyTorch warns ("Detected call of lr_scheduler.step() before optimizer.step()"): the first
-- value of the schedule is then skipped. (The constructor's own step is at epoch -1.)
local function check_order(self, name)
  local opt = self.optimizer
  if self.last_epoch == 0 and not opt._stepped and not opt._order_warned then
    opt._order_warned = true
    M._warn(string.format("ltc.optim.lr_scheduler: %s:step() was called before the optimizer's "
      .. "step(): call opt:step() first, then sched:step(), as in PyTorch since 1.1 (this order "
      .. "skips the first value of the learning-rate schedule)", name))
  end
end

--- sched:step([epoch]): the next epoch (or `epoch`), whose lr is written to every group: the
-- chainable form from the group's lr where the class has one, else (and for an explicit
-- epoch) the closed form from the base lr.
function Scheduler:step(epoch)
  if epoch == nil and self._step_count > 0 then check_order(self, self.name) end
  self._step_count = self._step_count + 1
  self.last_epoch = epoch or self.last_epoch + 1
  local lrs = {}
  for i, g in ipairs(self.optimizer.param_groups) do
    if epoch == nil and self.chain then
      lrs[i] = self:chain(g.lr, self.base_lrs[i], self.last_epoch, i)
    else
      lrs[i] = self:lr_at(self.base_lrs[i], self.last_epoch, i)
    end
  end
  self._last_lr = {}
  for i, g in ipairs(self.optimizer.param_groups) do
    g.lr = lrs[i]
    self._last_lr[i] = g.lr
  end
end

--- sched:get_last_lr(): the lrs (one per group) set by the last step.
function Scheduler:get_last_lr()
  local out = {}
  for i, v in ipairs(self._last_lr) do out[i] = v end
  return out
end

-- A copy of v (tables copied through), or nil when v is or holds a function.
local function plain_copy(v)
  if type(v) == "function" then return nil end
  if type(v) ~= "table" then return v end
  local c = {}
  for k, x in pairs(v) do
    local y = plain_copy(x)
    if y == nil then return nil end
    c[k] = y
  end
  return c
end

--- sched:state_dict() / sched:load_state_dict(sd): the scheduler's state (epoch, base lrs,
-- step count, last lrs, its options and counters), copied, as PyTorch saves it: everything
-- but the optimizer and functions (LambdaLR's lr_lambdas stay those of the scheduler that
-- loads), a SequentialLR's sub-schedulers as the list of their state dicts (`_schedulers`).
-- What ltc.save writes; load_state_dict(sd) copies it back (the optimizer's lrs are the
-- optimizer's state: load it too).
function Scheduler:state_dict()
  local sd = {}
  for k, v in pairs(self) do
    if k ~= "optimizer" and k ~= "_schedulers" then sd[k] = plain_copy(v) end
  end
  if self._schedulers then
    sd._schedulers = {}
    for i, s in ipairs(self._schedulers) do sd._schedulers[i] = s:state_dict() end
  end
  return sd
end
function Scheduler:load_state_dict(sd)
  if type(sd) ~= "table" then
    raise(string.format("%s.load_state_dict: a state dict (a table) expected, got %s",
      self.name or "ReduceLROnPlateau", type(sd)))
  end
  local subs = sd._schedulers
  if subs ~= nil and (self._schedulers == nil or #subs ~= #self._schedulers) then
    raise(string.format("%s.load_state_dict: the state dict has %d sub-schedulers, this "
      .. "scheduler %d", self.name, type(subs) == "table" and #subs or 0,
      self._schedulers and #self._schedulers or 0))
  end
  for k, v in pairs(sd) do
    if k ~= "_schedulers" and k ~= "optimizer" then self[k] = plain_copy(v) end
  end
  for i, s in ipairs(subs or {}) do self._schedulers[i]:load_state_dict(s) end
end

local function positive_int(fname, what, v)
  if math.type(v) ~= "integer" or v < 1 then
    raise(string.format("%s: %s must be a positive integer (got %s)", fname, what,
      type(v) == "string" and string.format("the string %q", v) or tostring(v)))
  end
end

--- StepLR(opt, {step_size, gamma=0.1}): lr = initial_lr * gamma^floor(epoch / step_size).
M.StepLR = class("StepLR", { "step_size", "gamma" }, function(self, o)
  positive_int("StepLR", "step_size", o.step_size)
  self.step_size, self.gamma = o.step_size, o.gamma or 0.1
end, function(self, base, e) return base * self.gamma ^ (e // self.step_size) end,
function(self, lr, _, e)
  if e == 0 or e % self.step_size ~= 0 then return lr end
  return lr * self.gamma
end)

--- MultiStepLR(opt, {milestones = {...}, gamma=0.1}): lr = initial_lr * gamma^(number of
-- milestones <= epoch).
M.MultiStepLR = class("MultiStepLR", { "milestones", "gamma" }, function(self, o)
  if type(o.milestones) ~= "table" then raise("MultiStepLR: milestones must be a list of epochs") end
  self.milestones = {}
  for i, m in ipairs(o.milestones) do self.milestones[i] = m end
  table.sort(self.milestones)
  self.gamma = o.gamma or 0.1
end, function(self, base, e)
  local n = 0
  for _, m in ipairs(self.milestones) do if m <= e then n = n + 1 end end
  return base * self.gamma ^ n
end, function(self, lr, _, e)
  local n = 0 -- a milestone listed twice counts twice (PyTorch's Counter)
  for _, m in ipairs(self.milestones) do if m == e then n = n + 1 end end
  if n == 0 then return lr end
  return lr * self.gamma ^ n
end)

--- ExponentialLR(opt, {gamma}): lr = initial_lr * gamma^epoch.
M.ExponentialLR = class("ExponentialLR", { "gamma" }, function(self, o)
  if type(o.gamma) ~= "number" then raise("ExponentialLR: gamma must be a number") end
  self.gamma = o.gamma
end, function(self, base, e) return base * self.gamma ^ e end,
function(self, lr, _, e) if e == 0 then return lr end return lr * self.gamma end)

--- CosineAnnealingLR(opt, {T_max, eta_min=0}): lr = eta_min + (initial_lr - eta_min) (1 +
-- cos(pi epoch / T_max)) / 2.
M.CosineAnnealingLR = class("CosineAnnealingLR", { "T_max", "eta_min" }, function(self, o)
  positive_int("CosineAnnealingLR", "T_max", o.T_max)
  self.T_max, self.eta_min = o.T_max, o.eta_min or 0
end, function(self, base, e)
  return self.eta_min + (base - self.eta_min) * (1 + cos(pi * e / self.T_max)) / 2
end, function(self, lr, base, e)
  local T, eta = self.T_max, self.eta_min
  if e == 0 then return lr end
  if self._step_count == 1 and e > 0 then -- resumed (last_epoch given): PyTorch's closed form
    return eta + (base - eta) * (1 + cos(e * pi / T)) / 2
  end
  if (e - 1 - T) % (2 * T) == 0 then return lr + (base - eta) * (1 - cos(pi / T)) / 2 end
  return (1 + cos(pi * e / T)) / (1 + cos(pi * (e - 1) / T)) * (lr - eta) + eta
end)

--- LinearLR(opt, {start_factor=1/3, end_factor=1, total_iters=5}): the factor of initial_lr
-- moves linearly from start_factor to end_factor over total_iters epochs, then stays.
M.LinearLR = class("LinearLR", { "start_factor", "end_factor", "total_iters" }, function(self, o)
  self.start_factor, self.end_factor = o.start_factor or 1 / 3, o.end_factor or 1
  self.total_iters = o.total_iters or 5
  if self.start_factor <= 0 or self.start_factor > 1 or self.end_factor < 0 or self.end_factor > 1 then
    raise("LinearLR: start_factor must be in (0, 1] and end_factor in [0, 1]")
  end
end, function(self, base, e)
  return base * (self.start_factor + (self.end_factor - self.start_factor)
    * math.min(self.total_iters, e) / self.total_iters)
end, function(self, lr, _, e)
  local s, f, n = self.start_factor, self.end_factor, self.total_iters
  if e == 0 then return lr * s end
  if e > n then return lr end
  return lr * (1 + (f - s) / (n * s + (e - 1) * (f - s)))
end)

--- LambdaLR(opt, {lr_lambda = fn or {fn per group}}): lr = initial_lr * fn(epoch) (epoch from
-- 0).
M.LambdaLR = class("LambdaLR", { "lr_lambda" }, function(self, o)
  local f = o.lr_lambda
  if type(f) ~= "function" and type(f) ~= "table" then
    raise("LambdaLR: lr_lambda must be a function or a list of functions")
  end
  self.lr_lambdas = f
end, function(self, base, e, i)
  local f = self.lr_lambdas
  if type(f) == "table" then f = f[i] end
  return base * f(e)
end)

--- CosineAnnealingWarmRestarts(opt, {T_0, T_mult=1, eta_min=0}): cosine annealing over
-- T_cur = 0 .. T_i - 1 epochs, restarting with T_i = T_i * T_mult (SGDR).
M.CosineAnnealingWarmRestarts = class("CosineAnnealingWarmRestarts", { "T_0", "T_mult", "eta_min" },
  function(self, o)
    positive_int("CosineAnnealingWarmRestarts", "T_0", o.T_0)
    positive_int("CosineAnnealingWarmRestarts", "T_mult", o.T_mult or 1)
    self.T_0, self.T_i, self.T_mult, self.eta_min = o.T_0, o.T_0, o.T_mult or 1, o.eta_min or 0
    self.T_cur = self.last_epoch
  end, function(self, base)
    return self.eta_min + (base - self.eta_min) * (1 + cos(pi * self.T_cur / self.T_i)) / 2
  end)
function M.CosineAnnealingWarmRestarts:step(epoch)
  if epoch == nil and self._step_count > 0 then check_order(self, "CosineAnnealingWarmRestarts") end
  if epoch == nil and self.last_epoch < 0 then epoch = 0 end
  if epoch == nil then
    epoch = self.last_epoch + 1
    self.T_cur = self.T_cur + 1
    if self.T_cur >= self.T_i then
      self.T_cur = self.T_cur - self.T_i
      self.T_i = self.T_i * self.T_mult
    end
  elseif epoch >= self.T_0 then
    if self.T_mult == 1 then self.T_cur = epoch % self.T_0
    else
      local n = floor(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
      self.T_cur = epoch - self.T_0 * (self.T_mult ^ n - 1) / (self.T_mult - 1)
      self.T_i = self.T_0 * self.T_mult ^ n
    end
  else
    self.T_i, self.T_cur = self.T_0, epoch
  end
  Scheduler.step(self, floor(epoch))
end

--- OneCycleLR(opt, {max_lr, total_steps | epochs and steps_per_epoch, pct_start=0.3,
-- anneal_strategy="cos", cycle_momentum=true, base_momentum=0.85, max_momentum=0.95,
-- div_factor=25, final_div_factor=1e4, three_phase=false}): the 1cycle policy: lr rises from
-- max_lr / div_factor to max_lr over pct_start of the steps, then falls to initial_lr /
-- final_div_factor; momentum (SGD's momentum or Adam's beta1) moves the opposite way.
-- Stepping past total_steps is an error.
M.OneCycleLR = class("OneCycleLR", { "max_lr", "total_steps", "epochs", "steps_per_epoch",
  "pct_start", "anneal_strategy", "cycle_momentum", "base_momentum", "max_momentum",
  "div_factor", "final_div_factor", "three_phase" }, function(self, o)
  local total = o.total_steps
  if total == nil then
    if o.epochs == nil or o.steps_per_epoch == nil then
      raise("OneCycleLR: give total_steps, or epochs and steps_per_epoch")
    end
    total = o.epochs * o.steps_per_epoch
  end
  positive_int("OneCycleLR", "total_steps", total)
  self.total_steps = total
  local pct = o.pct_start or 0.3
  if type(pct) ~= "number" or pct < 0 or pct > 1 then
    raise("OneCycleLR: pct_start must be in [0, 1], got " .. tostring(pct))
  end
  local strategy = o.anneal_strategy or "cos"
  if strategy ~= "cos" and strategy ~= "linear" then
    raise("OneCycleLR: anneal_strategy must be 'cos' or 'linear', not '" .. tostring(strategy) .. "'")
  end
  self.anneal = strategy
  if o.three_phase then
    self.phases = {
      { pct * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum" },
      { 2 * pct * total - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum" },
      { total - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum" } }
  else
    self.phases = {
      { pct * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum" },
      { total - 1, "max_lr", "min_lr", "base_momentum", "max_momentum" } }
  end
  local opt = self.optimizer
  local fresh = self.last_epoch == -1 -- resumed: the groups keep their (loaded) values
  for i, g in ipairs(opt.param_groups) do
    local max_lr = type(o.max_lr) == "table" and o.max_lr[i] or o.max_lr
    if type(max_lr) ~= "number" then raise("OneCycleLR: max_lr must be a number (or one per group)") end
    if fresh then
      g.initial_lr = max_lr / (o.div_factor or 25)
      g.max_lr = max_lr
      g.min_lr = g.initial_lr / (o.final_div_factor or 1e4)
    end
  end
  self.cycle_momentum = o.cycle_momentum ~= false
  if self.cycle_momentum then
    local d = opt.defaults or opt.param_groups[1]
    if d.betas == nil and d.momentum == nil then
      raise("OneCycleLR: optimizer must support momentum or betas with cycle_momentum enabled")
    end
    self.use_beta1 = d.betas ~= nil
    for _, g in ipairs(fresh and opt.param_groups or {}) do
      g.max_momentum, g.base_momentum = o.max_momentum or 0.95, o.base_momentum or 0.85
      if self.use_beta1 then g.betas = { g.max_momentum, g.betas[2] } else g.momentum = g.max_momentum end
    end
  end
end, function(self, _, step, i)
  if step > self.total_steps then
    raise(string.format("OneCycleLR: tried to step %d times, total_steps is %d", step,
      self.total_steps))
  end
  local g = self.optimizer.param_groups[i]
  local function anneal(a, b, pct)
    if self.anneal == "cos" then return b + (a - b) / 2 * (cos(pi * pct) + 1) end
    return (b - a) * pct + a
  end
  local start, lr, mom = 0, nil, nil
  for k, ph in ipairs(self.phases) do
    local stop = ph[1]
    if step <= stop or k == #self.phases then
      local pct = (step - start) / (stop - start)
      lr = anneal(g[ph[2]], g[ph[3]], pct)
      if self.cycle_momentum then mom = anneal(g[ph[4]], g[ph[5]], pct) end
      break
    end
    start = stop
  end
  if mom then
    if self.use_beta1 then g.betas = { mom, g.betas[2] } else g.momentum = mom end
  end
  return lr
end)

--- SequentialLR(opt, {schedulers = {s1, s2, ...}, milestones = {m1, ...}}): s1 until epoch
-- m1, then s2 (restarted at its epoch 0), ...; PyTorch's.
M.SequentialLR = class("SequentialLR", { "schedulers", "milestones" }, function(self, o)
  local s, m = o.schedulers, o.milestones
  if type(s) ~= "table" or #s == 0 or type(m) ~= "table" or #m ~= #s - 1 then
    raise("SequentialLR: give schedulers and one milestone fewer than schedulers")
  end
  for i, sch in ipairs(s) do
    if sch.optimizer ~= self.optimizer then
      raise("SequentialLR: scheduler " .. i .. " belongs to another optimizer")
    end
  end
  self._pending, self.milestones = s, m
end, nil)
-- set up after the generic constructor: undo the sub-schedulers' initial steps (PyTorch)
local seq_new = getmetatable(M.SequentialLR).__call
getmetatable(M.SequentialLR).__call = function(c, opt, ...)
  local o = seq_new(c, opt, ...)
  o._schedulers, o._pending = o._pending, nil
  for _, g in ipairs(opt.param_groups) do g.lr = g.initial_lr end
  for _, s in ipairs(o._schedulers) do s.last_epoch = s.last_epoch - 1 end
  local first = o._schedulers[1]
  first._step_count = 0 -- PyTorch's _initial_step
  first:step()
  o.last_epoch = o.last_epoch + 1 -- PyTorch's last_epoch + 1 (0 for a new schedule)
  o._last_lr = o._schedulers[1]:get_last_lr()
  return o
end
function M.SequentialLR:step()
  if self._schedulers == nil then return end -- the generic constructor's initial step
  check_order(self, "SequentialLR")
  self._step_count = self._step_count + 1
  self.last_epoch = self.last_epoch + 1
  local idx = 1
  for _, m in ipairs(self.milestones) do if m <= self.last_epoch then idx = idx + 1 end end
  local s = self._schedulers[idx]
  if idx > 1 and self.milestones[idx - 1] == self.last_epoch then s:step(0) else s:step() end
  self._last_lr = s:get_last_lr()
end

--- ReduceLROnPlateau(opt, {mode="min", factor=0.1, patience=10, threshold=1e-4,
-- threshold_mode="rel", cooldown=0, min_lr=0, eps=1e-8}): sched:step(metric) lowers every
-- lr by factor once the metric (a number; a tensor is read with :item(), a sync) has not
-- improved for more than patience epochs. PyTorch's.
local Plateau = {}
Plateau.__index = Plateau
M.ReduceLROnPlateau = setmetatable(Plateau, { __call = function(_, opt, ...)
  check_opt("ReduceLROnPlateau", opt)
  local o = options_of("ReduceLROnPlateau", { "mode", "factor", "patience", "threshold",
    "threshold_mode", "cooldown", "min_lr", "eps" }, ...)
  local self = setmetatable({ optimizer = opt, mode = o.mode or "min", factor = o.factor or 0.1,
    patience = o.patience or 10, threshold = o.threshold or 1e-4,
    threshold_mode = o.threshold_mode or "rel", cooldown = o.cooldown or 0, eps = o.eps or 1e-8,
    last_epoch = 0, num_bad_epochs = 0, cooldown_counter = 0 }, Plateau)
  if self.factor >= 1 then raise("ReduceLROnPlateau: factor must be < 1") end
  if self.mode ~= "min" and self.mode ~= "max" then
    raise("ReduceLROnPlateau: mode must be 'min' or 'max', not '" .. tostring(self.mode) .. "'")
  end
  if self.threshold_mode ~= "rel" and self.threshold_mode ~= "abs" then
    raise("ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs'")
  end
  self.min_lrs = {}
  for i = 1, #opt.param_groups do
    self.min_lrs[i] = type(o.min_lr) == "table" and o.min_lr[i] or o.min_lr or 0
  end
  self.best = self.mode == "min" and math.huge or -math.huge
  self._last_lr = {}
  for i, g in ipairs(opt.param_groups) do self._last_lr[i] = g.lr end
  return self
end })

function Plateau:is_better(a)
  local best, th = self.best, self.threshold
  if self.mode == "min" then
    if self.threshold_mode == "rel" then return a < best * (1 - th) end
    return a < best - th
  end
  if self.threshold_mode == "rel" then return a > best * (th + 1) end
  return a > best + th
end

function Plateau:step(metric)
  if type(metric) ~= "number" then
    if type(metric) == "userdata" and metric.item then metric = metric:item()
    else raise("ReduceLROnPlateau: step needs the metric (a number or a 0-d tensor)") end
  end
  self.last_epoch = self.last_epoch + 1
  if self:is_better(metric) then self.best, self.num_bad_epochs = metric, 0
  else self.num_bad_epochs = self.num_bad_epochs + 1 end
  if self.cooldown_counter > 0 then
    self.cooldown_counter = self.cooldown_counter - 1
    self.num_bad_epochs = 0
  end
  if self.num_bad_epochs > self.patience then
    for i, g in ipairs(self.optimizer.param_groups) do
      local new = math.max(g.lr * self.factor, self.min_lrs[i])
      if g.lr - new > self.eps then g.lr = new end
    end
    self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
  end
  for i, g in ipairs(self.optimizer.param_groups) do self._last_lr[i] = g.lr end
end
Plateau.get_last_lr = Scheduler.get_last_lr
Plateau.state_dict = Scheduler.state_dict
Plateau.load_state_dict = Scheduler.load_state_dict

return M
