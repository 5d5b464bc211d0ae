--- ltc.optim: optimizers (PyTorch's torch.optim): SGD (momentum, Nesterov, weight decay),
-- Adam (amsgrad), AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam and RAdam, each with
-- step(), zero_grad(), state_dict(), load_state_dict() and add_param_group(); learning-rate
-- schedulers in ltc.optim.lr_scheduler (lua/ltc/lr_scheduler.lua).
--
--   local opt = ltc.optim.SGD(model:parameters(), {lr = 0.1, momentum = 0.9})
--   opt:zero_grad(); loss:backward(); opt:step(); ltc.sync()
--
-- step() builds the update as lazy IR and assigns it to each parameter in place (the
-- parameter tensors keep their identity, so modules and the optimizer keep seeing them).
-- maximize = true (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, as PyTorch 1.13)
-- steps along the gradient instead of against it (the formula gets -grad; no C update).
-- The state (momentum buffers, Adam's moments and step count) is made at the first step
-- and updated in place after it, so a step captured by ltc.jit replays correctly (a
-- replay only refreshes tensors that existed before the capture).
-- Hyperparameters are Lua numbers kept as plain fields of each parameter group (opt.lr reads
-- the first group's and `opt.lr = x` writes every group's); they enter graphs as parameters
-- (0-d device data), so changing opt.lr (or a group's lr) between steps never recompiles. After the first steps (which create the
-- optimizer state), every step is the same graph.
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local ltc = require "ltc"
local follow = require("ltc.follow").follow
local live = require("ltc.jit").live -- lr as a graph parameter under ltc.jit (read at replay)

local optim = {}
local core = require "ltc.core"
local positional = require "ltc.nn_positional" -- PyTorch's positional options (the same helper as ltc.nn's)
local set_grad, get_grad, assign = core._ag.set_grad, core._ag.grad, core.assign_

local Optimizer = {}
Optimizer.__index = Optimizer
optim.Optimizer = Optimizer

-- A failed step never happened (issue 17): when the sync of a step fails on a node its
-- gradient depends on, the parameter and every state tensor of it go back to their values
-- before the step. The runtime rolls a tensor back to its newest value that does not depend
-- on the failure, so each state tensor is written once per step (ema, not mul_ then add_,
-- whose mul_ would stay) and the step counts count in a 1 computed from the gradient (one).

--- optim._one(g): a float64 0-d 1 that depends on gradient g (where(isnan(g's first
-- element), 1, 1)), for step counts: incremented by it, a count goes back with its parameter.
local function one(g)
  local g0 = g:numel() > 0 and g:reshape(-1):select(1, 1) or g:sum()
  return core.to(ltc.where(g0:isnan(), 1.0, 1.0), "float64")
end
--- optim._ema(x, a, y): x = x * a + y in place, as one write. Returns x.
local function ema(x, a, y) return assign(x, x * a + y, "data") end
optim._one, optim._ema = one, ema
optim._foreach = true -- whether SGD, Adam and AdamW use their C updates (off: the Lua formulas)

-- Parameter groups from a list of tensors or a list of {params = {...}, lr = ...} tables.
local function groups_of(params, defaults, name)
  if type(params) ~= "table" or #params == 0 then
    raise(name .. ": expected a non-empty list of parameters (or of parameter groups)")
  end
  local groups = {}
  if type(params[1]) ~= "table" then params = { { params = params } } end
  for gi, g in ipairs(params) do
    if type(g) ~= "table" or type(g.params) ~= "table" then
      raise(string.format("%s: parameter group %d is %s, not {params = {...}, ...}", name, gi,
        ltc.typename(g)))
    end
    local group = {}
    for k, v in pairs(defaults) do group[k] = v end
    for k, v in pairs(g) do group[k] = v end
    for i, p in ipairs(group.params) do
      if not ltc.is_tensor(p) then
        raise(string.format("%s: parameter %d is %s, not a tensor", name, i, ltc.typename(p)))
      end
      -- as PyTorch's "can't optimize a non-leaf Tensor": a step would update a copy that
      -- nothing reads, and an integer tensor has no gradient
      if not p.is_leaf then
        raise(string.format("%s: parameter %d is not a leaf tensor (it was computed from others: "
          .. "optimize the tensors it was made from, or a :detach():requires_grad_() copy)", name, i))
      end
      local dt = p:dtype()
      if dt ~= "float32" and dt ~= "float64" and dt ~= "float16" and dt ~= "bfloat16" then
        raise(string.format("%s: parameter %d has dtype %s; only floating tensors can be optimized",
          name, i, dt))
      end
    end
    groups[#groups + 1] = group
  end
  return groups
end

-- PyTorch's positional order of each optimizer's arguments after params (torch 1.13):
-- SGD(params, 0.1, 0.9) is lr 0.1, momentum 0.9.
local pytorch_order = {
  SGD = { "lr", "momentum", "dampening", "weight_decay", "nesterov" },
  Adam = { "lr", "betas", "eps", "weight_decay", "amsgrad" },
  AdamW = { "lr", "betas", "eps", "weight_decay", "amsgrad" },
  RMSprop = { "lr", "alpha", "eps", "weight_decay", "momentum", "centered" },
  Adagrad = { "lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps" },
  Adadelta = { "lr", "rho", "eps", "weight_decay" },
  Adamax = { "lr", "betas", "eps", "weight_decay" },
  NAdam = { "lr", "betas", "eps", "weight_decay", "momentum_decay" },
  RAdam = { "lr", "betas", "eps", "weight_decay" },
}

-- The options of an optimizer called as PyTorch's, positionally (Adam(params, 0.01, {0.9,
-- 0.99})), with an options table (Adam(params, {lr = 0.01})) or both (SGD(params, 0.1,
-- {momentum = 0.9})). A trailing table is the options unless it is a list (betas).
local function options_of(name, defaults, ...)
  local order = {}
  for _, k in ipairs(pytorch_order[name] or { "lr" }) do
    if defaults[k] == nil then break end
    order[#order + 1] = k
  end
  return positional(name, "params", order, ...)
end

local function class(name, defaults, update)
  defaults.params = nil
  update = follow(update) -- a parameter's state (buffers, step counts) on its device
  local cls = setmetatable({}, { __index = Optimizer })
  cls.__index = function(self, k)
    if k == "lr" then return self.param_groups[1].lr end
    return cls[k]
  end
  cls.__newindex = function(self, k, v)
    if k == "lr" then
      for _, g in ipairs(self.param_groups) do g.lr = v end
    else
      rawset(self, k, v)
    end
  end
  cls.name = name
  cls.update = update
  setmetatable(cls, {
    __index = Optimizer,
    __call = function(c, params, ...)
      local opts = options_of(name, defaults, ...)
      for k in pairs(opts) do
        if defaults[k] == nil then raise(string.format("%s: unknown option '%s'", name, k)) end
      end
      local d = {}
      for k, v in pairs(defaults) do d[k] = v end
      for k, v in pairs(opts) do d[k] = v end
      if type(d.lr) ~= "number" or d.lr < 0 then
        raise(string.format("%s: lr must be a number >= 0 (got %s)", name,
          type(d.lr) == "string" and string.format("the string %q", d.lr) or ltc.typename(d.lr) == "number"
            and tostring(d.lr) or ltc.typename(d.lr)))
      end
      -- PyTorch's checks: 0 <= beta < 1, eps >= 0, weight_decay >= 0, momentum >= 0
      if d.betas ~= nil then
        local b = d.betas
        if type(b) ~= "table" or #b ~= 2 then raise(name .. ": betas must be a pair {beta1, beta2}") end
        for i = 1, 2 do
          if type(b[i]) ~= "number" or b[i] < 0 or b[i] >= 1 then
            raise(string.format("%s: beta %d must be in [0, 1) (got %s)", name, i, tostring(b[i])))
          end
        end
      end
      for _, k in ipairs { "eps", "weight_decay", "momentum", "lr_decay",
        "initial_accumulator_value", "momentum_decay" } do
        if d[k] ~= nil and (type(d[k]) ~= "number" or d[k] < 0) then
          raise(string.format("%s: %s must be a number >= 0 (got %s)", name, k, tostring(d[k])))
        end
      end
      if d.maximize ~= nil and type(d.maximize) ~= "boolean" then
        raise(string.format("%s: maximize must be a boolean (got %s)", name, ltc.typename(d.maximize)))
      end
      for _, k in ipairs { "alpha", "rho" } do
        if d[k] ~= nil and (type(d[k]) ~= "number" or d[k] < 0 or d[k] > 1) then
          raise(string.format("%s: %s must be in [0, 1] (got %s)", name, k, tostring(d[k])))
        end
      end
      local o = setmetatable({}, c)
      rawset(o, "defaults", d)
      rawset(o, "param_groups", groups_of(params, d, name))
      rawset(o, "state", setmetatable({}, { __mode = "k" }))
      return o
    end,
  })
  return cls
end

--- opt:zero_grad(): every parameter's grad becomes nil (PyTorch's set_to_none default).
function Optimizer:zero_grad()
  local groups = self.param_groups
  for i = 1, #groups do -- numeric loops: no iterator call per element (every step's path)
    local params = groups[i].params
    for j = 1, #params do set_grad(params[j], nil) end
  end
end

-- One parameter's update by the optimizer's Lua formula (its first step, a step after a
-- failed one, the optimizers and options without a C update).
local function step_param(p, grad, state, update, g)
  local st = state[p]
  -- state made by a step whose sync failed has no value: that step never happened
  -- for it, so start over as at the first step (issue 17)
  if st and next(st) ~= nil then
    for _, v in pairs(st) do
      if ltc.is_tensor(v) and not v:has_value() then st = nil; break end
    end
  end
  if not st then st = {}; state[p] = st end
  if g.maximize then grad = -grad end -- PyTorch's maximize: ascend the objective
  assign(p, update(p, grad, st, g), "data")
end

-- The body of step, run with grad mode off (no closure or table per step: the hot path).
-- An optimizer's `foreach(params, state, j, group)` (SGD, Adam, AdamW) updates params[j..]
-- in one C call that traces what its Lua formula traces, and returns the index of a
-- parameter it leaves to the formula (state not made yet or made by a failed step), or nil.
local function step_groups(self)
  local state, update = self.state, self.update
  -- (an update replaced on the optimizer object is run as it is)
  local foreach = optim._foreach and rawget(self, "update") == nil and self.foreach
  local groups = self.param_groups
  for i = 1, #groups do
    local g = groups[i]
    local params = g.params
    local j, n = 1, #params
    while j <= n do
      if foreach and not g.maximize then
        j = foreach(params, state, j, g)
        if j == nil then break end
      end
      local p = params[j]
      local grad = get_grad(p)
      if grad ~= nil then step_param(p, grad, state, update, g) end
      j = j + 1
    end
  end
end

--- opt:step(): one update of every parameter that has a gradient (no recording).
function Optimizer:step()
  -- lr may have been set since the construction checked it (opt.lr = x, group.lr = x): a
  -- value the formulas cannot use raises here, naming the optimizer, not in a formula (or,
  -- under ltc.jit, as a misleading capture error)
  local groups = self.param_groups
  for i = 1, #groups do
    local lr = groups[i].lr
    if type(lr) ~= "number" and not (ltc.is_tensor(lr) and lr:dim() == 0) then
      raise(string.format("%s: lr must be a number (or a 0-d tensor), got %s%s", getmetatable(self).name,
        ltc.is_tensor(lr) and "a tensor of size [" .. table.concat(lr:size(), ", ") .. "]" or ltc.typename(lr),
        #groups > 1 and " (parameter group " .. i .. ")" or ""))
    end
  end
  -- for lr_scheduler's order check; set once, so ltc.jit's guards see no change after call 1
  if not self._stepped then self._stepped = true end
  local prev = core._ag.set_grad_enabled(false)
  local ok, err = pcall(step_groups, self)
  core._ag.set_grad_enabled(prev)
  if not ok then raise(err) end
end

--- optim.SGD(params, {lr, momentum=0, dampening=0, weight_decay=0, nesterov=false}):
-- PyTorch's SGD: g = grad + wd * p; buf = momentum * buf + (1 - dampening) * g (buf = g at
-- the first step); g = g + momentum * buf (Nesterov) or buf; p = p - lr * g.
optim.SGD = class("SGD", { lr = 0.001, momentum = 0, dampening = 0, weight_decay = 0,
  nesterov = false, maximize = false }, function(p, g, st, o)
  if o.weight_decay ~= 0 then g = g + o.weight_decay * p end
  if o.momentum ~= 0 then
    local buf = st.momentum_buffer
    if buf == nil then -- a copy of its own: later steps update it in place
      buf = g:clone()
      st.momentum_buffer = buf
    else
      ema(buf, o.momentum, (1 - o.dampening) * g)
    end
    if o.nesterov then g = g + o.momentum * buf else g = buf end
  end
  return p - live(o, "lr") * g
end)
local sgd_, adam_ = core._sgd_, core._adam_
function optim.SGD.foreach(params, state, j, o)
  return sgd_(params, state, j, live(o, "lr"), o.weight_decay, o.momentum, 1 - o.dampening,
    o.nesterov)
end

-- Adam's moment update and step, shared by Adam and AdamW.
-- The state (moments and the step count, a float64 0-d tensor as PyTorch's capturable
-- Adam keeps it) is made at the first step and updated in place after it.
local function adam_step(p, g, st, o)
  local b1, b2 = o.betas[1], o.betas[2]
  local m, v, t = st.exp_avg, st.exp_avg_sq, st.step
  local tn -- the count after this step
  if m == nil then
    m = g * (1 - b1)
    v = g * g * (1 - b2)
    t = one(g)
    tn = t
    st.exp_avg, st.exp_avg_sq, st.step = m, v, t
    if o.amsgrad then st.max_exp_avg_sq = v:clone() end
  else
    -- the bias corrections use t + 1, computed from the old count; the count itself counts
    -- in a 1 computed from the new first moment after the update (below): it still goes
    -- back with its parameter (see one), and the update's loop over the parameter stays one
    -- fused loop (a 1 read from g before the moments would end the loop there)
    tn = t + 1
    ema(m, b1, g * (1 - b1))
    ema(v, b2, g * g * (1 - b2))
    if o.amsgrad then st.max_exp_avg_sq:copy_(ltc.maximum(st.max_exp_avg_sq, v)) end
  end
  local bc1, bc2 = 1 - b1 ^ tn, 1 - b2 ^ tn
  if o.amsgrad then v = st.max_exp_avg_sq end
  local denom = v:sqrt() * (1 / bc2:sqrt()) + o.eps
  local out = p - m / denom * (live(o, "lr") / bc1)
  if tn ~= t then t:add_(one(m)) end
  return out
end

--- optim.Adam(params, {lr=1e-3, betas={0.9, 0.999}, eps=1e-8, weight_decay=0,
-- amsgrad=false}): PyTorch's Adam (L2 weight decay added to the gradient; amsgrad divides by
-- the running maximum of the second moment). The step count is a tensor and the bias
-- corrections are computed in the graph: a new step count never recompiles.
optim.Adam = class("Adam", { lr = 0.001, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0,
  amsgrad = false, maximize = false },
  function(p, g, st, o)
    if o.weight_decay ~= 0 then g = g + o.weight_decay * p end
    return adam_step(p, g, st, o)
  end)
function optim.Adam.foreach(params, state, j, o)
  if o.amsgrad then return j end
  local b1, b2 = o.betas[1], o.betas[2]
  return adam_(params, state, j, live(o, "lr"), o.weight_decay, b1, b2, 1 - b1, 1 - b2, o.eps,
    false)
end

--- optim.AdamW(params, {lr=1e-3, betas, eps=1e-8, weight_decay=1e-2, amsgrad=false}): Adam
-- with decoupled weight decay p = p * (1 - lr * wd) (PyTorch's AdamW).
optim.AdamW = class("AdamW", { lr = 0.001, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0.01,
  amsgrad = false, maximize = false },
  function(p, g, st, o)
    if o.weight_decay ~= 0 then p = p * (1 - live(o, "lr") * o.weight_decay) end
    return adam_step(p, g, st, o)
  end)
function optim.AdamW.foreach(params, state, j, o)
  if o.amsgrad then return j end
  local b1, b2, lr = o.betas[1], o.betas[2], live(o, "lr")
  return adam_(params, state, j, lr, o.weight_decay, b1, b2, 1 - b1, 1 - b2, o.eps, true,
    type(lr) == "number" and 1 - lr * o.weight_decay or 0)
end

require("ltc.optim_more")(optim, class)
optim.lr_scheduler = require "ltc.lr_scheduler"

return optim
