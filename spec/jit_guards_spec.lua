-- ltc.jit never returns what an untraced call would not: results are not overwritten
-- (also inside tables, also from the warm-up), and the Lua values a capture depended on
-- (opt.lr, training flags, numbers in tables, upvalues) are read live or guarded.
local ltc = require "ltc"
local nn = ltc.nn

local quiet = dofile("spec/support/stderr.lua") -- fn run with io.stderr captured

describe("ltc.jit results", function()
  it("hands back tensors inside returned tables as its own, never overwritten", function()
    local f = ltc.jit(function(x) return { a = x * 2, list = { x + 1 } } end)
    local r = {}
    for i = 1, 4 do r[i] = f(ltc.tensor { i }) end
    for i = 1, 4 do
      assert.same({ 2 * i }, r[i].a:totable())
      assert.same({ i + 1 }, r[i].list[1]:totable())
    end
  end)

  it("does not hand back fn's own tensor from the warm-up (repro r15)", function()
    local acc = ltc.zeros(2)
    local f = ltc.jit(function(x) acc:add_(x); return acc end)
    local a = {}
    for i = 1, 4 do a[i] = f(ltc.ones(2)) end
    assert.is_false(rawequal(a[1], acc))
    for i = 1, 4 do assert.same({ i, i }, a[i]:totable()) end
    assert.same({ 4, 4 }, acc:totable())
  end)
end)

describe("ltc.jit guards", function()
  local function linear_sgd(opts)
    ltc.manual_seed(3)
    local m = nn.Linear(3, 2)
    local opt = ltc.optim.SGD(m:parameters(), opts)
    local x = ltc.tensor { { 1, 2, 3 }, { -1, 0, 2 } }
    local step = function(xb)
      opt:zero_grad()
      local l = m(xb):sum()
      l:backward()
      opt:step()
      return l
    end
    return m, opt, x, step
  end

  it("reads opt.lr live at every replay: lr = 0 stops training, with no recapture", function()
    local m, opt, x, step = linear_sgd { lr = 0.1 }
    local f = ltc.jit(step)
    for _ = 1, 3 do f(x) end
    local before = ltc.metrics.counter("JitRecapture")
    -- d(sum of outputs)/dW = the column sums of x for each row of W: {0, 2, 5}
    local w = m.weight:totable()
    opt.lr = 0.0
    f(x); f(x)
    assert.same(w, m.weight:totable())
    opt.lr = 0.5
    f(x)
    assert.near(w[1][3] - 0.5 * 5, m.weight:totable()[1][3], 1e-5)
    assert.near(w[2][2] - 0.5 * 2, m.weight:totable()[2][2], 1e-5)
    assert.equal(before, ltc.metrics.counter("JitRecapture"))
  end)

  it("recaptures when a module's training flag changes, counts it and explains it", function()
    local Twice = nn.class("Twice") -- doubles while training, identity in eval mode
    function Twice:forward(x) return self.training and x * 2 or x end
    local model = nn.Sequential(Twice())
    local f = ltc.jit(function(x) return model(x) end)
    local before = ltc.metrics.counter("JitGuardRecapture")
    f(ltc.tensor { 1 }); f(ltc.tensor { 2 })
    assert.same({ 6 }, f(ltc.tensor { 3 }):totable())
    model:eval()
    assert.same({ 3 }, f(ltc.tensor { 3 }):totable())
    assert.same({ 4 }, f(ltc.tensor { 4 }):totable())
    assert.equal(before + 1, ltc.metrics.counter("JitGuardRecapture"))
    local text = ltc.debug.explain_jit(f)
    assert.matches("call 4: upvalue model[%.%w_]*%.training changed %(true %-> false%)", text)
  end)

  it("recaptures when a number read from a table or an upvalue changes", function()
    local cfg, shift = { scale = 2 }, 0
    local f = ltc.jit(function(x) return x * cfg.scale + shift end)
    f(ltc.tensor { 1 }); f(ltc.tensor { 1 })
    assert.same({ 2 }, f(ltc.tensor { 1 }):totable())
    cfg.scale = 5
    assert.same({ 5 }, f(ltc.tensor { 1 }):totable())
    shift = 1
    assert.same({ 11 }, f(ltc.tensor { 2 }):totable())
    cfg.scale = 0 / 0 -- NaN equals itself for the guard: no recapture at every call
    assert.is_true(f(ltc.tensor { 2 }):item() ~= f(ltc.tensor { 2 }):item())
    local before = ltc.metrics.counter("JitRecapture")
    f(ltc.tensor { 2 })
    assert.equal(before, ltc.metrics.counter("JitRecapture"))
    assert.matches("upvalue shift changed %(0 %-> 1%)", ltc.debug.explain_jit(f))
  end)

  it("runs fn untraced once it replaces its state on every capture, as untraced", function()
    local st = { buf = ltc.zeros(1) }
    local f = ltc.jit(function(g)
      st.buf = st.buf * 0.5 + g
      return st.buf
    end)
    local got = {}
    local said = quiet(function()
      for i = 1, 6 do got[i] = f(ltc.ones(1)):item() end
    end)
    assert.same({ 1, 1.5, 1.75, 1.875, 1.9375, 1.96875 }, got)
    assert.matches("runs untraced", said)
    assert.matches("upvalue st%.buf", ltc.debug.explain_jit(f))
  end)

  it("can be turned off with {guards = false}", function()
    local cfg = { scale = 2 }
    local f = ltc.jit(function(x) return x * cfg.scale end, { guards = false })
    f(ltc.tensor { 1 }); f(ltc.tensor { 1 })
    cfg.scale = 3
    assert.same({ 2 }, f(ltc.tensor { 1 }):totable()) -- the capture's value, as asked
  end)

  -- A model, an optimizer and Lua-side knobs; the same random sequence of calls and knob
  -- changes runs untraced and under ltc.jit: every result, kept to the end, is the same.
  it("matches untraced runs over random sequences of calls and changes", function()
    local function world()
      ltc.manual_seed(5)
      local Twice = nn.class("Twice")
      function Twice:forward(x) return self.training and x * 2 or x end
      local model = nn.Sequential(nn.Linear(4, 3), Twice(), nn.Linear(3, 2))
      local opt = ltc.optim.SGD(model:parameters(), { lr = 0.1, momentum = 0.5 })
      local cfg, shift = { scale = 1.0 }, 0
      local function step(x, y)
        opt:zero_grad()
        local out = model(x) * cfg.scale + shift
        local loss = ((out - y) ^ 2):mean()
        loss:backward()
        opt:step()
        return { loss = loss, out = out }
      end
      local knobs = {
        lr = function(v) opt.lr = v end,
        momentum = function(v) opt.param_groups[1].momentum = v end,
        train = function(v) model:train(v) end,
        scale = function(v) cfg.scale = v end,
        shift = function(v) shift = v end,
      }
      return model, step, knobs
    end
    local choices = {
      lr = { 0.0, 0.05, 0.1, 0.2 }, momentum = { 0.5, 0.9 }, train = { true, false },
      scale = { 0.5, 1.0, 2.0 }, shift = { 0, 1 },
    }
    local names = { "lr", "momentum", "train", "scale", "shift" }
    ltc.manual_seed(9)
    local xs, ys = {}, {}
    for i = 1, 3 do xs[i], ys[i] = ltc.randn(5, 4), ltc.randn(5, 2) end
    for seq = 1, 3 do
      math.randomseed(100 + seq)
      local plan = {}
      for i = 1, 30 do
        if math.random() < 0.3 then
          local k = names[math.random(#names)]
          plan[i] = { k, choices[k][math.random(#choices[k])] }
        else
          plan[i] = { "call", math.random(3) }
        end
      end
      local function run(jit)
        local model, step, knobs = world()
        local f = jit and ltc.jit(step) or step
        local out = {}
        quiet(function()
          for _, p in ipairs(plan) do
            if p[1] == "call" then out[#out + 1] = f(xs[p[2]], ys[p[2]]) else knobs[p[1]](p[2]) end
          end
        end)
        local vals = {}
        for i, r in ipairs(out) do vals[i] = { r.loss:item(), r.out:totable() } end
        local ps = {}
        for i, p in ipairs(model:parameters()) do ps[i] = p:reshape({ -1 }):totable() end
        return vals, ps
      end
      local want, want_ps = run(false)
      local got, got_ps = run(true)
      assert.equal(#want, #got)
      for i = 1, #want do
        assert.near(want[i][1], got[i][1], 1e-5 * (1 + math.abs(want[i][1])))
        for r = 1, #want[i][2] do
          for c = 1, 2 do assert.near(want[i][2][r][c], got[i][2][r][c], 1e-5) end
        end
      end
      for i = 1, #want_ps do
        for k = 1, #want_ps[i] do assert.near(want_ps[i][k], got_ps[i][k], 1e-5) end
      end
    end
  end)
end)
