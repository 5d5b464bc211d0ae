-- The derivative formulas generated as C (gen/derivatives.c, codegen/emit_derivs_c.c) against
-- the Lua ones (gen/derivatives.lua): every time the Lua autograd engine calls an op's
-- backward, the C backward is called too, on the same normalised arguments, results and
-- output gradients (core._c_backward, src/lua/ltc_gradcheck.c), and the two gradients must
-- hold the same values (NaN where NaN, the same infinities) with the same sizes and dtypes.
--
-- The programs are the finite-difference cases of spec/autograd_spec.lua (one or more per
-- differentiable op, read from that file with busted's functions stubbed out, the
-- finite-difference check swapped for one backward), and the NaN, infinity and zero inputs
-- below.
local ltc = require "ltc"
local core = require "ltc.core"

local D = ltc.autograd.derivatives()

-- ---- comparing ----------------------------------------------------------------------------

local function flatten(t, out)
  out = out or {}
  if type(t) ~= "table" then out[#out + 1] = t; return out end
  for _, v in ipairs(t) do flatten(v, out) end
  return out
end

local function same_number(x, y)
  if x ~= x or y ~= y then return x ~= x and y ~= y end
  if x == y then return true end
  if x == math.huge or x == -math.huge or y == math.huge or y == -math.huge then return false end
  return math.abs(x - y) <= 1e-12 * (1 + math.abs(x) + math.abs(y))
end

-- nil when the Lua gradient l and the C gradient c agree, else what differs.
local function differ(l, c)
  if type(l) == "number" then l = ltc.tensor(l, "float64") end
  if not core.is_tensor(l) or not core.is_tensor(c) then
    return string.format("Lua gave %s, C gave %s", type(l), type(c))
  end
  local ls, cs = table.concat(l:size(), "x"), table.concat(c:size(), "x")
  if ls ~= cs then return "sizes " .. ls .. " (Lua) and " .. cs .. " (C)" end
  if l:dtype() ~= c:dtype() then return "dtypes " .. l:dtype() .. " (Lua) and " .. c:dtype() .. " (C)" end
  local lv, cv = flatten(l:totable()), flatten(c:totable())
  for j = 1, #lv do
    local x, y = lv[j], cv[j]
    if type(x) == "boolean" then x, y = x and 1 or 0, y and 1 or 0 end
    if not same_number(x, y) then
      return string.format("element %d: Lua %.17g, C %.17g", j, x, y)
    end
  end
end

local checked, failures = {}, {}
local recorded = {} -- the C calls made, {name, args, results, grads, needs}, to replay

-- Calls the C backward of entry like the engine called the Lua one, and compares.
local function compare(entry, a, grads, needs, res)
  local args, needs_c, operand = {}, {}, {}
  local k = 0
  for i, spec in ipairs(entry.args) do
    args[i] = a[i]
    if spec[2] == "tensor" or spec[2] == "list" then
      k = k + 1
      operand[i] = k
      needs_c[i] = needs[k] and entry.formulas[k] or false
    end
  end
  local results, gs = a.result or {}, {}
  for r = 1, entry.n_outputs do
    gs[r] = grads[r] or (results[r] and core.zeros(results[r]:size(), results[r]:dtype())) or grads[1]
  end
  local ok, cg = pcall(core._c_backward, entry.name, args, results, gs, needs_c)
  if not ok then
    failures[#failures + 1] = entry.name .. ": the C backward raised: " .. tostring(cg)
    return
  end
  if cg == nil then return end -- no C backward for this op
  checked[entry.name] = (checked[entry.name] or 0) + 1
  recorded[#recorded + 1] = { entry.name, args, results, gs, needs_c }
  for i, spec in ipairs(entry.args) do
    if needs_c[i] then
      local l, c = res[operand[i]], cg[i]
      local why
      if spec[2] == "list" then
        for j = 1, #l do
          why = why or (l[j] ~= nil and differ(l[j], c[j]) and
            string.format("entry %d: %s", j, differ(l[j], c[j])))
        end
      else
        why = differ(l, c)
      end
      if why then
        failures[#failures + 1] = string.format("%s, gradient of '%s': %s", entry.name, spec[1], why)
      end
    end
  end
end

-- ---- the programs -------------------------------------------------------------------------

-- Fixed weights so that the loss sum(out * w) gives each element its own gradient.
local function weights(out)
  local n, flat = out:numel(), {}
  for k = 1, n do flat[k] = ((k * 37) % 11 - 5) / 7 + 0.05 end
  return ltc.tensor(flat, "float64"):reshape(out:size())
end

-- One backward of sum(f(inputs...) * w) (inputs: nested tables of float64 values).
local function run(f, inputs)
  local ts = {}
  for i, v in ipairs(inputs) do ts[i] = ltc.tensor(v, "float64"):requires_grad_() end
  local out = f(table.unpack(ts))
  ;(out * weights(out)):sum():backward()
end

-- spec/autograd_spec.lua's cases: the functions it gives busted's `it` inside
-- describe("derivatives"), with its gradcheck (an upvalue they share) replaced by run.
local function autograd_cases()
  local cases = {}
  local function noop() end
  local env = setmetatable({
    describe = function(name, body) if name == "derivatives" then body() end end,
    it = function(name, fn)
      local op = name:match("^(%S+) matches central differences")
      if op then cases[op] = fn end
    end,
    before_each = noop, after_each = noop, setup = noop, teardown = noop, pending = noop,
  }, { __index = _ENV }) -- busted's assert and friends
  assert(loadfile("spec/autograd_spec.lua", "t", env))()
  local function swap(fn, seen)
    seen = seen or {}
    if seen[fn] then return end
    seen[fn] = true
    for u = 1, math.huge do
      local name, v = debug.getupvalue(fn, u)
      if not name then break end
      if name == "gradcheck" then debug.setupvalue(fn, u, run)
      elseif type(v) == "function" then swap(v, seen) end
    end
  end
  for _, fn in pairs(cases) do swap(fn) end
  return cases
end

local nan, inf = 0 / 0, math.huge

-- NaN, infinities and zeros, where masks must select and not multiply.
local special = {
  pow = function()
    run(function(a, b) return a ^ b end, { { 0, 0, 2, -1 }, { 0, 2, 0, 0.5 } })
    run(function(a) return a ^ 0 end, { { 0, 1, nan, inf } })
    run(function(a) return a ^ 2 end, { { 0, -1, nan, inf } })
    run(function(a) return a:pow(a) end, { { 0, 1, 2, 0.5 } })
    run(function(a) return 3 ^ a end, { { 0, 1, -2, nan } })
    run(function(a) return 0 ^ a end, { { 0, 1, -2, 2 } })
  end,
  max = function()
    run(function(a) return a:max() end, { { 1, nan, 3, 3 } })
    run(function(a) return a:max() end, { { 1, inf, 3, inf } })
    run(function(a) local v = a:max(2); return v end, { { { 1, nan, 3 }, { 2, 2, -inf } } })
  end,
  min = function() run(function(a) return a:min() end, { { 1, -inf, 3, -inf } }) end,
  norm = function()
    run(function(a) return a:norm() end, { { 0, 0, 0 } })
    run(function(a) return a:norm(1) end, { { 0, -1, 2 } })
    run(function(a) return a:norm(inf) end, { { 1, -3, 3 } })
    run(function(a) return a:norm(-inf, 1) end, { { { 1, -3 }, { 0, 2 } } })
    run(function(a) return a:norm(0) end, { { 1, 0, 3 } })
    run(function(a) return a:norm(3, 2, true) end, { { { 0, 0 }, { 1, -2 } } })
    run(function(a) return a:norm() end, { { nan, 1, 2 } })
  end,
  std = function()
    run(function(a) return a:std() end, { { 1, 1 } })
    run(function(a) return a:std(2, false) end, { { { 1, 1 }, { 1, 3 } } })
    run(function(a) return a:std() end, { { 1 } })
  end,
  var = function() run(function(a) return a:var(1, true, true) end, { { { 1, nan }, { 2, 4 } } }) end,
  prod = function()
    run(function(a) return a:prod() end, { { 2, 0, 3 } })
    run(function(a) return a:prod() end, { { 0, 0, 3 } })
    run(function(a) return a:prod(2) end, { { { 2, 0, 3 }, { 1, 2, 3 } } })
    run(function(a) return a:prod(1, true) end, { { { 0, 0 }, { 0, 2 } } })
  end,
  minimum = function()
    run(function(a, b) return ltc.minimum(a, b) end, { { 1, 2, nan, 3 }, { 1, nan, 0, inf } })
  end,
  maximum = function()
    run(function(a, b) return ltc.maximum(a, b) end, { { 1, 2, nan, -inf }, { 1, nan, 0, 5 } })
  end,
  relu = function()
    run(function(a) return a:relu() end, { { nan, -1, 0, inf } })
    run(function(a) return a:relu():log() end, { { -1, 0, 2, nan } })
  end,
  clamp = function()
    run(function(a) return a:clamp(0, 1) end, { { nan, -1, 0.5, 1, inf } })
    run(function(a) return a:clamp(nil, 1) end, { { -1, 2 } })
  end,
  dropout = function()
    run(function(a) return a:dropout(0) end, { { 0, 1, -0.0, 2 } })
    run(function(a) return a:dropout(0.5, false) end, { { 0, 1 } })
  end,
  logsumexp = function() run(function(a) return a:logsumexp(2) end, { { { -inf, 0 }, { 1, inf } } }) end,
  div = function() run(function(a, b) return a / b end, { { 1, 0, -1 }, { 0, 0, inf } }) end,
}

-- ---- the spec -----------------------------------------------------------------------------

describe("the derivative formulas generated as C", function()
  local saved = {}

  setup(function()
    -- the engine runs the Lua formulas (which compare themselves with the C ones)
    core._ag.use_lua_formulas(true)
    for name, entry in pairs(D) do
      if entry.backward then
        saved[name] = entry.backward
        local lua_backward = entry.backward
        entry.backward = function(a, grads, needs)
          local res = lua_backward(a, grads, needs)
          compare(entry, a, grads, needs, res)
          return res
        end
      end
    end
  end)

  teardown(function()
    core._ag.use_lua_formulas(false)
    for name, fn in pairs(saved) do D[name].backward = fn end
  end)

  before_each(function() failures = {} end)

  -- (an op without `derivatives:` is not marked not_differentiable: differentiating through
  -- it is an error at backward, naming the op)
  it("have a table entry for every op of derivatives.lua, with the same facts", function()
    local T = core._c_derivative_table()
    for name, entry in pairs(D) do
      local c = T[name]
      assert(c, name .. " has no entry in the C table")
      assert.are.same({ #entry.args, entry.n_outputs, entry.view == true,
        entry.save_result == true, entry.not_differentiable == true },
        { c.n_args, c.n_outputs, c.view, c.save_result, c.not_differentiable }, name)
    end
    for name in pairs(T) do assert(D[name], name .. " is in the C table only") end
  end)

  it("exist for every op with a formula", function()
    local missing = {}
    for name, entry in pairs(D) do
      if entry.formulas and not core._c_backward_exists(name) then missing[#missing + 1] = name end
    end
    table.sort(missing)
    assert.are.same({}, missing)
  end)

  local cases = autograd_cases()
  local names = {}
  for name in pairs(cases) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    it("give the Lua formulas' gradients for " .. name .. " (autograd_spec's cases)", function()
      cases[name]()
      assert.are.same({}, failures)
    end)
  end

  local special_names = {}
  for name in pairs(special) do special_names[#special_names + 1] = name end
  table.sort(special_names)
  for _, name in ipairs(special_names) do
    it("give the Lua formulas' gradients for " .. name .. " at NaN, infinities and zeros", function()
      special[name]()
      assert.are.same({}, failures)
    end)
  end

  it("were compared for every op with a C backward", function()
    local unchecked = {}
    for name, entry in pairs(D) do
      if entry.formulas and core._c_backward_exists(name) and not checked[name] then
        unchecked[#unchecked + 1] = name
      end
    end
    table.sort(unchecked)
    assert.are.same({}, unchecked)
  end)

  it("release every tensor they make (replaying all the calls above leaves none alive)", function()
    -- the live tensor count sees what ASan cannot: a tensor never released stays reachable
    -- from the core's list of live tensors
    assert.is_true(#recorded > #names)
    collectgarbage()
    collectgarbage()
    local before = core.live_info().live_tensors
    -- as a backward without create_graph runs them: grad mode off (with it on, a fused
    -- layer's backward of operands that require grad raises: no second derivatives)
    ltc.no_grad(function()
      for _, call in ipairs(recorded) do core._c_backward(table.unpack(call)) end
    end)
    collectgarbage()
    collectgarbage()
    assert.are.equal(before, core.live_info().live_tensors)
  end)

  it("raise the failing op's error and hand back no gradient when an op fails midway", function()
    -- div's gradient for self (grad / other) is made, then the one for other fails
    -- (-grad * self: sizes 4 and 3); under ASan/LSan this also checks that nothing leaks
    local self = ltc.tensor({ 1, 2, 3 }, "float64")
    local other = ltc.tensor({ 2 }, "float64")
    local grad = ltc.ones({ 4 }, "float64")
    local ok, err = pcall(core._c_backward, "div", { self, other }, { self / other }, { grad },
      { true, true })
    assert.is_false(ok)
    assert.matches("div backward: mul", err)
    assert.are.same({}, failures)
    collectgarbage()
    collectgarbage()
    local live = core.live_info().live_tensors
    for _ = 1, 3 do pcall(core._c_backward, "div", { self, other }, { self }, { grad }, { true, true }) end
    collectgarbage()
    collectgarbage()
    assert.are.equal(live, core.live_info().live_tensors)
  end)

  it("sum a broadcast gradient back to its input's size as F.sum_to does", function()
    local g = ltc.tensor({ { { 1, 2, 3 }, { 4, 5, 6 } }, { { 7, 8, 9 }, { 10, 11, 12 } } }, "float64")
    for _, size in ipairs({ { 2, 2, 3 }, { 2, 3 }, { 3 }, { 1, 3 }, { 2, 1 }, { 1 }, {}, { 2, 1, 1 },
      { 1, 2, 3 }, { 1, 1, 1 } }) do
      local why = differ(require("ltc.autograd_formulas").F.sum_to(g, size), core._c_sum_to(g, size))
      assert(why == nil, table.concat(size, "x") .. ": " .. tostring(why))
    end
  end)

  it("catch a wrong gradient", function()
    -- the comparison itself: a Lua backward that differs from the C one is reported
    local entry = D.exp
    local lua_backward = entry.backward
    entry.backward = function(a, grads, needs)
      local res = saved.exp(a, grads, needs)
      res[1] = res[1] * 1.0001
      compare(entry, a, grads, needs, res)
      return res
    end
    local ok = pcall(run, function(a) return a:exp() end, { { 0.5, 1 } })
    entry.backward = lua_backward
    assert.is_true(ok)
    assert.are.equal(1, #failures)
    assert.matches("exp, gradient of 'self': element 1", failures[1])
  end)
end)
