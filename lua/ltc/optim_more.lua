--- The rest of ltc.optim, added by lua/ltc/optim.lua: require("ltc.optim_more")(optim, class).
-- Optimizer:state_dict(), load_state_dict(), add_param_group(), and the optimizers RMSprop,
-- Adagrad, Adadelta, Adamax, NAdam and RAdam, each PyTorch's single-tensor formula (spec/
-- optim_sched_spec.lua compares every step with PyTorch's parameters). As for SGD and Adam,
-- the state is made at the first step and updated in place after it, and step counts are
-- float64 0-d tensors, so no step after the first recompiles.
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local ltc = require "ltc"
local live = require("ltc.jit").live -- lr read live at replay under ltc.jit (as optim.lua)

return function(optim, class)
  local Optimizer = optim.Optimizer
  local one, ema = optim._one, optim._ema -- one write per state tensor per step (optim.lua)

  -- st[name], made as zeros (or `fill`) of p's size at the first step.
  local function buf(st, name, p, fill)
    local b = st[name]
    if b == nil then
      b = ltc.full(p:size(), fill or 0, p:dtype())
      st[name] = b
    end
    return b
  end

  -- the step count st.step, incremented in place (a float64 0-d tensor from 1) by a 1
  -- computed from the gradient g: it goes back with the parameter when the step fails.
  local function count(st, g)
    if st.step == nil then st.step = one(g)
    else st.step:add_(one(g)) end
    return st.step
  end

  --- opt:state_dict(): {state = {[i] = {name = tensor or number, ...}}, param_groups =
  -- {{lr = ..., ..., params = {i, ...}}}}, PyTorch's layout: parameters are numbered from 1
  -- across the groups in order; the state's tensors are the optimizer's own (not copies).
  function Optimizer:state_dict()
    local state, groups, index = {}, {}, 0
    for gi, g in ipairs(self.param_groups) do
      local pg = {}
      for k, v in pairs(g) do if k ~= "params" then pg[k] = v end end
      pg.params = {}
      for _, p in ipairs(g.params) do
        index = index + 1
        pg.params[#pg.params + 1] = index
        local st = self.state[p]
        if st and next(st) then
          local copy = {}
          for k, v in pairs(st) do copy[k] = v end
          state[index] = copy
        end
      end
      groups[gi] = pg
    end
    return { state = state, param_groups = groups }
  end

  --- opt:load_state_dict(sd): restores hyperparameters and state (moments, step counts) from
  -- a state_dict() of an optimizer of the same kind over parameters of the same sizes, group
  -- by group. Tensors are copied, so sd can be reused.
  -- the state keys each optimizer's step reads (a state without one would restart silently)
  local required_state = { Adam = { "step", "exp_avg", "exp_avg_sq" },
    AdamW = { "step", "exp_avg", "exp_avg_sq" } }
  function Optimizer:load_state_dict(sd)
    local name = getmetatable(self).name
    if type(sd) ~= "table" or type(sd.param_groups) ~= "table" or type(sd.state) ~= "table" then
      raise(name .. ".load_state_dict: expected a table {state = ..., param_groups = ...}")
    end
    if #sd.param_groups ~= #self.param_groups then
      raise(string.format("%s.load_state_dict: %d parameter groups given, the optimizer has %d",
        name, #sd.param_groups, #self.param_groups))
    end
    local index = 0
    for gi, g in ipairs(self.param_groups) do
      local sg = sd.param_groups[gi]
      if #sg.params ~= #g.params then
        raise(string.format("%s.load_state_dict: group %d has %d parameters, the optimizer's %d",
          name, gi, #sg.params, #g.params))
      end
      for k, v in pairs(sg) do
        if k ~= "params" then
          if type(v) == "table" then
            local c = {}
            for i, x in ipairs(v) do c[i] = x end
            v = c
          end
          g[k] = v
        end
      end
      for pi, p in ipairs(g.params) do
        index = index + 1
        local st = sd.state[sg.params[pi]]
        if st then
          local mine = {}
          if type(st) ~= "table" then
            raise(string.format("%s.load_state_dict: the state of parameter %d must be a table, got %s",
              name, index, ltc.typename(st)))
          end
          for _, k in ipairs(next(st) ~= nil and required_state[name] or {}) do
            if st[k] == nil then
              raise(string.format("%s.load_state_dict: the state of parameter %d has no '%s'", name, index, k))
            end
          end
          if g.amsgrad and required_state[name] and next(st) ~= nil and st.max_exp_avg_sq == nil then
            raise(string.format("%s.load_state_dict: the state of parameter %d has no 'max_exp_avg_sq' "
              .. "(amsgrad)", name, index))
          end
          for k, v in pairs(st) do
            if k == "step" then
              -- the count as the float64 0-d tensor the optimizer keeps on the parameter's
              -- device (PyTorch's state dicts may hold a number or a float32 tensor)
              if type(v) == "number" then v = ltc.tensor(v, "float64")
              elseif ltc.is_tensor(v) and v:numel() == 1 then v = v:reshape({}):to("float64")
              else
                raise(string.format("%s.load_state_dict: 'step' of parameter %d must be a number or a "
                  .. "one-element tensor, got %s", name, index, ltc.is_tensor(v) and "a tensor of "
                  .. v:numel() .. " elements" or ltc.typename(v)))
              end
              v = v:to(p:device())
            end
            if ltc.is_tensor(v) then
              if k ~= "step" and v:numel() ~= p:numel() then
                raise(string.format("%s.load_state_dict: state '%s' of parameter %d has %d elements, the parameter %d",
                  name, k, index, v:numel(), p:numel()))
              end
              v = ltc.no_grad(function() return v:detach():clone() end)
            end
            mine[k] = v
          end
          self.state[p] = mine
        else
          self.state[p] = nil
        end
      end
    end
    return self
  end

  --- opt:add_param_group(group): adds {params = {...}, lr = ..., ...}; options not given
  -- take the optimizer's defaults; unknown options and parameters already in a group are
  -- errors (PyTorch).
  function Optimizer:add_param_group(group)
    local name = getmetatable(self).name
    if type(group) ~= "table" or type(group.params) ~= "table" then
      raise(name .. ".add_param_group: expected a table {params = {...}, ...}")
    end
    local params = group.params
    if ltc.is_tensor(params) then params = { params } end
    local seen = {}
    for _, g in ipairs(self.param_groups) do for _, p in ipairs(g.params) do seen[p] = true end end
    local new = {}
    for k, v in pairs(group) do
      if k ~= "params" and self.defaults[k] == nil then
        raise(string.format("%s.add_param_group: unknown option '%s'", name, tostring(k)))
      end
      new[k] = v
    end
    for k, v in pairs(self.defaults) do if new[k] == nil then new[k] = v end end
    new.params = {}
    for i, p in ipairs(params) do
      if not ltc.is_tensor(p) then
        raise(string.format("%s.add_param_group: parameter %d is %s, not a tensor", name, i, type(p)))
      end
      if seen[p] then
        raise(string.format("%s.add_param_group: parameter %d is already in a group", name, i))
      end
      new.params[i] = p
    end
    if new.initial_lr == nil and self.param_groups[1].initial_lr ~= nil then new.initial_lr = new.lr end
    self.param_groups[#self.param_groups + 1] = new
    return self
  end

  local function decay(g, p, o)
    if o.weight_decay ~= 0 then return g + o.weight_decay * p end
    return g
  end

  --- optim.RMSprop(params, {lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
  -- centered=false}): sq = alpha sq + (1 - alpha) g^2; avg = sqrt(sq - ga^2 if centered) + eps;
  -- with momentum buf = momentum buf + g / avg and p -= lr buf, else p -= lr g / avg.
  optim.RMSprop = class("RMSprop", { lr = 0.01, alpha = 0.99, eps = 1e-8, weight_decay = 0,
    momentum = 0, centered = false, maximize = false }, function(p, g, st, o)
    g = decay(g, p, o)
    local sq = buf(st, "square_avg", p)
    ema(sq, o.alpha, g * g * (1 - o.alpha))
    local avg
    if o.centered then
      local ga = buf(st, "grad_avg", p)
      ema(ga, o.alpha, g * (1 - o.alpha))
      avg = (sq - ga * ga):sqrt() + o.eps
    else
      avg = sq:sqrt() + o.eps
    end
    if o.momentum > 0 then
      local b = buf(st, "momentum_buffer", p)
      ema(b, o.momentum, g / avg)
      return p - live(o, "lr") * b
    end
    return p - live(o, "lr") * (g / avg)
  end)

  --- optim.Adagrad(params, {lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
  -- eps=1e-10}): sum += g^2; p -= lr / (1 + (step - 1) lr_decay) * g / (sqrt(sum) + eps).
  optim.Adagrad = class("Adagrad", { lr = 0.01, lr_decay = 0, weight_decay = 0,
    initial_accumulator_value = 0, eps = 1e-10, maximize = false }, function(p, g, st, o)
    local t = count(st, g)
    g = decay(g, p, o)
    local sum = buf(st, "sum", p, o.initial_accumulator_value)
    sum:copy_(sum + g * g)
    local clr = live(o, "lr") / ((t - 1) * o.lr_decay + 1)
    return p - g / (sum:sqrt() + o.eps) * clr
  end)

  --- optim.Adadelta(params, {lr=1, rho=0.9, eps=1e-6, weight_decay=0}): sq = rho sq + (1 -
  -- rho) g^2; d = sqrt(acc + eps) / sqrt(sq + eps) g; acc = rho acc + (1 - rho) d^2; p -= lr d.
  optim.Adadelta = class("Adadelta", { lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0,
    maximize = false },
    function(p, g, st, o)
      g = decay(g, p, o)
      local sq, acc = buf(st, "square_avg", p), buf(st, "acc_delta", p)
      ema(sq, o.rho, g * g * (1 - o.rho))
      local d = (acc + o.eps):sqrt() / (sq + o.eps):sqrt() * g
      ema(acc, o.rho, d * d * (1 - o.rho))
      return p - live(o, "lr") * d
    end)

  --- optim.Adamax(params, {lr=2e-3, betas={0.9, 0.999}, eps=1e-8, weight_decay=0}): m = b1 m
  -- + (1 - b1) g; u = max(b2 u, |g| + eps); p -= lr / (1 - b1^t) m / u.
  optim.Adamax = class("Adamax", { lr = 0.002, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0,
    maximize = false },
    function(p, g, st, o)
      local b1, b2 = o.betas[1], o.betas[2]
      local t = count(st, g)
      g = decay(g, p, o)
      local m, u = buf(st, "exp_avg", p), buf(st, "exp_inf", p)
      ema(m, b1, g * (1 - b1))
      u:copy_(ltc.maximum(u * b2, g:abs() + o.eps))
      return p - m / u * (live(o, "lr") / (1 - b1 ^ t))
    end)

  --- optim.NAdam(params, {lr=2e-3, betas={0.9, 0.999}, eps=1e-8, weight_decay=0,
  -- momentum_decay=4e-3}): Adam with Nesterov momentum (Dozat), PyTorch 2's formula: mu_t =
  -- b1 (1 - 0.5 * 0.96^(t * momentum_decay)); the step mixes g and m with the products of mu.
  optim.NAdam = class("NAdam", { lr = 0.002, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0,
    momentum_decay = 0.004 }, function(p, g, st, o)
    local b1, b2 = o.betas[1], o.betas[2]
    local t = count(st, g)
    g = decay(g, p, o)
    local m, v = buf(st, "exp_avg", p), buf(st, "exp_avg_sq", p)
    if st.mu_product == nil then st.mu_product = ltc.tensor(1, "float64") end
    local mu = (1 - 0.5 * 0.96 ^ (t * o.momentum_decay)) * b1
    local mu_next = (1 - 0.5 * 0.96 ^ ((t + 1) * o.momentum_decay)) * b1
    st.mu_product:copy_(st.mu_product * mu)
    local prod = st.mu_product
    ema(m, b1, g * (1 - b1))
    ema(v, b2, g * g * (1 - b2))
    local denom = (v / (1 - b2 ^ t)):sqrt() + o.eps
    local c1 = (1 - mu) / (1 - prod) * (-live(o, "lr"))
    local c2 = mu_next / (1 - prod * mu_next) * (-live(o, "lr"))
    return p + g / denom * c1 + m / denom * c2
  end)

  --- optim.RAdam(params, {lr=1e-3, betas={0.9, 0.999}, eps=1e-8, weight_decay=0}): Adam with
  -- the variance rectification of Liu et al.: while the SMA length rho_t <= 5 the step is lr m
  -- / (1 - b1^t) (the choice made in the graph, with no sync).
  optim.RAdam = class("RAdam", { lr = 0.001, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0 },
    function(p, g, st, o)
      local b1, b2 = o.betas[1], o.betas[2]
      local t = count(st, g)
      g = decay(g, p, o)
      local m, v = buf(st, "exp_avg", p), buf(st, "exp_avg_sq", p)
      ema(m, b1, g * (1 - b1))
      ema(v, b2, g * g * (1 - b2))
      local bc2 = 1 - b2 ^ t
      local mhat = m / (1 - b1 ^ t)
      local rho_inf = 2 / (1 - b2) - 1
      local rho_t = rho_inf - t * 2 * b2 ^ t / bc2
      local rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / (rho_t * ((rho_inf - 4) * (rho_inf - 2))))
        :clamp(0):sqrt()
      local adaptive = bc2:sqrt() / (v:sqrt() + o.eps)
      local rectified = mhat * adaptive * (rect * live(o, "lr"))
      return p - ltc.where(rho_t:gt(5), rectified, mhat * live(o, "lr"))
    end)
end
