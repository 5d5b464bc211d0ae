-- ltc.optim's C updates (core._sgd_, core._adam_, src/lua/ltc_optim.c): SGD and Adam/AdamW
-- update a parameter group in one C call after their first step. They must trace the very
-- graphs the Lua formulas trace (optim._foreach = false runs those), compute PyTorch's
-- updates (checked against the formulas written out below in plain Lua numbers), honour a
-- live lr under ltc.jit without recompiling, and raise the formulas' errors.
local ltc = require "ltc"
local optim = ltc.optim

local function close(want, got, tol)
  assert.equal(#want, #got)
  for i = 1, #want do
    assert(math.abs(want[i] - got[i]) <= tol * math.max(1, math.abs(want[i])),
      string.format("element %d: want %.12g, got %.12g", i, want[i], got[i]))
  end
end

local configs = {
  { "SGD", { lr = 0.1 } },
  { "SGD", { lr = 1 } }, -- an integer lr is an integer weak scalar, as in the formula
  { "SGD", { lr = 0.1, momentum = 0.9 } },
  { "SGD", { lr = 0.1, momentum = 0.9, nesterov = true, weight_decay = 0.01 } },
  { "SGD", { lr = 0.1, momentum = 0.9, dampening = 0.1, weight_decay = 1e-4 } },
  { "Adam", { lr = 0.01 } },
  { "Adam", { lr = 0.01, weight_decay = 0.1 } },
  { "AdamW", { lr = 0.01 } },
  { "AdamW", { lr = 0.01, weight_decay = 0 } },
  { "Adam", { lr = 0.01, amsgrad = true } }, -- stays in Lua
}

-- The IR text of every parameter and state tensor after each of 3 steps, and the values.
local function trace_steps(c, foreach)
  local saved = optim._foreach
  optim._foreach = foreach
  ltc.manual_seed(0)
  local model = ltc.nn.Sequential(ltc.nn.Linear(4, 4), ltc.nn.ReLU(), ltc.nn.Linear(4, 3))
  local opt = optim[c[1]](model:parameters(), c[2])
  local x, y = ltc.randn(2, 4), ltc.tensor({ 1, 3 }):long()
  local texts, values = {}, {}
  for _ = 1, 3 do
    opt:zero_grad()
    ltc.nn.functional.cross_entropy(model(x), y):backward()
    ltc.sync()
    opt:step()
    local ts = {}
    for _, p in ipairs(model:parameters()) do
      ts[#ts + 1] = p
      local st, keys = opt.state[p], {}
      for k in pairs(st) do keys[#keys + 1] = k end
      table.sort(keys)
      for _, k in ipairs(keys) do ts[#ts + 1] = st[k] end
    end
    texts[#texts + 1] = ltc.debug.ir(table.unpack(ts))
    ltc.sync()
  end
  for _, p in ipairs(model:parameters()) do
    for _, v in ipairs(p:reshape(-1):totable()) do values[#values + 1] = v end
  end
  optim._foreach = saved
  return texts, values
end

describe("optim's C updates", function()
  for _, c in ipairs(configs) do
    local name = c[1]
    for k, v in pairs(c[2]) do name = name .. " " .. k .. "=" .. tostring(v) end
    it("trace the Lua formulas' graphs: " .. name, function()
      local lua_texts, lua_values = trace_steps(c, false)
      local c_texts, c_values = trace_steps(c, true)
      for i = 1, 3 do assert.equal(lua_texts[i], c_texts[i]) end
      assert.same(lua_values, c_values)
    end)
  end

  it("run after the first step (the formula runs once per parameter)", function()
    for _, c in ipairs(configs) do
      local cls = optim[c[1]]
      local calls, update = 0, cls.update
      cls.update = function(...) calls = calls + 1; return update(...) end
      local p = ltc.randn(3):requires_grad_()
      local opt = cls({ p }, c[2])
      for _ = 1, 4 do opt:zero_grad(); (p * p):sum():backward(); opt:step(); ltc.sync() end
      cls.update = update
      assert.equal(c[2].amsgrad and 4 or 1, calls)
    end
  end)

  -- PyTorch's updates written out, with a constant gradient g and lr changed at step 3
  local g = { 0.5, -1.0 }
  local function sgd_ref(o, steps)
    local p, buf = { 1.0, -2.0 }, nil
    for t = 1, steps do
      local lr = t >= 3 and o.lr / 2 or o.lr
      local d = {}
      for i = 1, 2 do d[i] = g[i] + (o.weight_decay or 0) * p[i] end
      if (o.momentum or 0) ~= 0 then
        if not buf then buf = { d[1], d[2] }
        else for i = 1, 2 do buf[i] = o.momentum * buf[i] + (1 - (o.dampening or 0)) * d[i] end end
        for i = 1, 2 do d[i] = o.nesterov and d[i] + o.momentum * buf[i] or buf[i] end
      end
      for i = 1, 2 do p[i] = p[i] - lr * d[i] end
    end
    return p
  end
  local function adam_ref(o, steps, decoupled)
    local p, m, v = { 1.0, -2.0 }, { 0, 0 }, { 0, 0 }
    local b1, b2, eps, wd = 0.9, 0.999, 1e-8, o.weight_decay or (decoupled and 0.01 or 0)
    for t = 1, steps do
      local lr = t >= 3 and o.lr / 2 or o.lr
      for i = 1, 2 do
        local d = g[i]
        if decoupled then p[i] = p[i] * (1 - lr * wd) else d = d + wd * p[i] end
        m[i] = b1 * m[i] + (1 - b1) * d
        v[i] = b2 * v[i] + (1 - b2) * d * d
        local denom = math.sqrt(v[i]) / math.sqrt(1 - b2 ^ t) + eps
        p[i] = p[i] - lr * m[i] / denom / (1 - b1 ^ t)
      end
    end
    return p
  end
  local function run(cls, o, steps, jit)
    local p = ltc.tensor({ 1.0, -2.0 }, "float64"):requires_grad_()
    local opt = cls({ p }, o)
    local step = function() opt:zero_grad(); p.grad = ltc.tensor(g, "float64"); opt:step() end
    if jit then step = ltc.jit(step) end
    local compiles
    for t = 1, steps do
      if t == 3 then opt.lr = o.lr / 2 end
      if t == 4 then compiles = ltc.counter("UncachedCompile") end
      step()
      ltc.sync()
    end
    return p:totable(), ltc.counter("UncachedCompile") - compiles
  end

  for _, c in ipairs {
    { "SGD", { lr = 0.1 } },
    { "SGD", { lr = 0.1, momentum = 0.9, dampening = 0.25, weight_decay = 0.01 } },
    { "SGD", { lr = 0.1, momentum = 0.9, nesterov = true, weight_decay = 0.01 } },
    { "Adam", { lr = 0.05 } },
    { "Adam", { lr = 0.05, weight_decay = 0.1 } },
    { "AdamW", { lr = 0.05 } },
    { "AdamW", { lr = 0.05, weight_decay = 0.5 } },
  } do
    local name = c[1]
    for k, v in pairs(c[2]) do name = name .. " " .. k .. "=" .. tostring(v) end
    it("compute PyTorch's update, traced and replayed by ltc.jit with a live lr: " .. name,
      function()
        local want = c[1] == "SGD" and sgd_ref(c[2], 6) or adam_ref(c[2], 6, c[1] == "AdamW")
        local traced = run(optim[c[1]], c[2], 6, false)
        close(want, traced, 1e-12)
        local replayed, compiles = run(optim[c[1]], c[2], 6, true)
        -- under ltc.jit AdamW's 1 - lr * wd is made of two weak scalars (the live lr and
        -- wd), so it is a float32 0-d tensor even for a float64 parameter (the Lua formula
        -- computes the same, optim._foreach = false)
        close(want, replayed, c[1] == "AdamW" and 1e-6 or 1e-12)
        assert.equal(0, compiles) -- the lr changed at step 3: no compile after it
      end)
  end

  -- the count is read from the new first moment after the update, not from the gradient
  -- before it, so the moments, the decay and the step of a parameter are one loop over it
  -- (two before: reading g's first element ended the loop before the step)
  for _, foreach in ipairs { true, false } do
    it("run Adam's steady update of a parameter as one fused loop (foreach=" .. tostring(foreach)
      .. ")", function()
      local saved = optim._foreach
      optim._foreach = foreach
      local p = ltc.randn(64, 96):requires_grad_()
      local opt = optim.AdamW({ p }, { lr = 0.01, weight_decay = 0.1 })
      local text
      for i = 1, 3 do
        opt:zero_grad(); (p * p):sum():backward(); opt:step()
        if i == 3 then text = ltc.debug.backend_text() end
        ltc.sync()
      end
      optim._foreach = saved
      local loops = 0
      for line in text:gmatch("[^\n]+") do
        if line:match("^%s*step %d+: fused") and line:find("f32[64,96]", 1, true) then loops = loops + 1 end
      end
      assert.equal(1, loops, text)
      assert.equal(3, opt.state[p].step:item())
    end)
  end

  it("raise the formulas' errors for a gradient that does not fit", function()
    local cases = { { "SGD", { lr = 0.1, momentum = 0.9 } }, { "Adam", {} }, { "AdamW", {} } }
    for _, c in ipairs(cases) do
      local p = ltc.tensor({ 1.0, 2.0, 3.0 }):requires_grad_()
      local opt = optim[c[1]]({ p }, c[2])
      opt:zero_grad(); (p * p):sum():backward(); opt:step(); ltc.sync()
      p.grad = ltc.ones(4)
      assert.has_error(function() opt:step() end,
        "add: shapes [3] and [4] are not broadcastable")
      p.grad = ltc.ones(3, 3)
      local ok, err = pcall(opt.step, opt)
      assert.is_false(ok)
      assert.matches("data: in%-place result of shape %[3,3%] does not fit a tensor of shape %[3%]",
        err)
    end
  end)
end)

describe("an optimizer's parameters", function()
  -- PyTorch: ValueError "can't optimize a non-leaf Tensor"; ltc took one and its steps
  -- updated a copy nothing read (a break-it session's finding)
  it("are leaf floating tensors, or the optimizer raises naming the parameter", function()
    local a = ltc.ones(2):requires_grad_()
    local ok, msg = pcall(optim.AdamW, { ltc.ones(3):requires_grad_(), a * 2 }, 0.1)
    assert.is_false(ok)
    assert.matches("AdamW: parameter 2 is not a leaf tensor", msg)
    ok, msg = pcall(optim.SGD, { ltc.ones(2, "int64") }, 0.1)
    assert.is_false(ok)
    assert.matches("SGD: parameter 1 has dtype int64; only floating tensors can be optimized", msg)
    local p = ltc.ones(2, "float64"):requires_grad_()
    local o = optim.SGD({ p }, 0.5)
    p:sum():backward()
    o:step()
    assert.are.same({ 0.5, 0.5 }, p:totable())
  end)
end)
