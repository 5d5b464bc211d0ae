-- ltc.jit: warm-up, capture, replay (lua/ltc/jit.lua).
local ltc = require "ltc"

local err = dofile("spec/support/err.lua")

describe("ltc.jit", function()
  it("warms up, captures, then replays", function()
    local calls = 0
    local f = ltc.jit(function(x)
      calls = calls + 1
      return x * 2 + 1
    end)
    local replays = ltc.metrics.counter("GraphReplay")
    assert.same({ 3, 5 }, f(ltc.tensor { 1, 2 }):totable())
    assert.is_nil(f.graph)
    assert.same({ 7, 9 }, f(ltc.tensor { 3, 4 }):totable())
    assert.is_not_nil(f.graph)
    assert.same({ 1, -1 }, f(ltc.tensor { 0, -1 }):totable())
    assert.same({ 11, 21 }, f(ltc.tensor { 5, 10 }):totable())
    assert.equal(2, calls) -- the replays did not run fn
    assert.equal(replays + 2, ltc.metrics.counter("GraphReplay"))
  end)

  it("honors Lua-number arguments on every call", function()
    local f = ltc.jit(function(x, a, b) return x * a + b end)
    local x = ltc.tensor { 1, 2, 3 }
    assert.same({ 2, 4, 6 }, f(x, 2, 0):totable())
    assert.same({ 3, 6, 9 }, f(x, 3, 0):totable())
    assert.same({ 5, 9, 13 }, f(x, 4, 1):totable())
    assert.same({ 0.5, 1, 1.5 }, f(x, 0.5, 0):totable()) -- integer to float: recaptured
    assert.same({ 0.25, 0.5, 0.75 }, f(x, 0.25, 0):totable())
    assert.equal("float32", f(x, 0.25, 0):dtype()) -- weak scalars keep x's dtype
  end)

  it("never overwrites a result handed back earlier", function()
    local f = ltc.jit(function(x) return x + 1, x:sum() end)
    local a, sa = f(ltc.tensor { 1, 1 })
    local b, sb = f(ltc.tensor { 2, 2 })
    local c, sc = f(ltc.tensor { 3, 3 })
    local d = f(ltc.tensor { 4, 4 })
    assert.same({ 2, 2 }, a:totable())
    assert.same({ 3, 3 }, b:totable())
    assert.same({ 4, 4 }, c:totable())
    assert.same({ 5, 5 }, d:totable())
    assert.equal(2, sa:item())
    assert.equal(4, sb:item())
    assert.equal(6, sc:item())
  end)

  it("leaves the caller's tensors alone", function()
    local f = ltc.jit(function(x) x:add_(100); return x * 1 end)
    local x1, x2, x3 = ltc.tensor { 1 }, ltc.tensor { 2 }, ltc.tensor { 3 }
    f(x1)
    f(x2)
    assert.same({ 103 }, f(x3):totable())
    assert.same({ 3 }, x3:totable())
  end)

  it("recaptures when a shape or dtype changes, and counts it", function()
    local f = ltc.jit(function(x) return x:sum(1) end)
    local before = ltc.metrics.counter("JitRecapture")
    f(ltc.ones(2, 3))
    f(ltc.ones(2, 3))
    assert.same({ 2, 2, 2 }, f(ltc.ones(2, 3)):totable())
    assert.same({ 4, 4 }, f(ltc.ones(4, 2)):totable())
    assert.equal(before + 1, ltc.metrics.counter("JitRecapture"))
    assert.same({ 4, 4 }, f(ltc.ones(4, 2)):totable())
    assert.same({ 3 }, f(ltc.ones({ 3, 1 }, "float64")):totable())
    assert.equal("float64", f(ltc.ones({ 3, 1 }, "float64")):dtype())
    assert.equal(before + 2, ltc.metrics.counter("JitRecapture"))
  end)

  it("replays in-place parameter updates (a training step)", function()
    local w = ltc.tensor { 1, 1 }
    local step = ltc.jit(function(x, lr)
      local g = w * x -- d/dw of 0.5 * (w . x)^2-ish, enough for the check
      w:sub_(g * lr)
      return w:sum()
    end)
    local ref = { 1, 1 }
    for i = 1, 5 do
      local x = ltc.tensor { i, 2 * i }
      local lr = 0.01 * i
      local s = step(x, lr)
      ref[1] = ref[1] - ref[1] * i * lr
      ref[2] = ref[2] - ref[2] * 2 * i * lr
      assert.near(ref[1] + ref[2], s:item(), 1e-5)
    end
    assert.near(ref[1], w:totable()[1], 1e-5)
  end)

  it("leaves no half-captured state behind when fn fails during the capture", function()
    local fail = false
    local f = ltc.jit(function(x)
      local y = x + 1
      if fail then error("boom") end
      return y
    end)
    f(ltc.tensor { 1 })
    fail = true
    assert.matches("boom", err(function() f(ltc.tensor { 1 }) end))
    assert.is_nil(f.graph)
    -- the thread is not capturing: values can be read, another graph can capture
    assert.equal(3, (ltc.tensor { 1, 2 }):sum():item())
    local g = ltc.Graph()
    g:capture_begin()
    g:capture_end()
    fail = false
    assert.same({ 6 }, f(ltc.tensor { 5 }):totable()) -- captures again
    assert.same({ 8 }, f(ltc.tensor { 7 }):totable())
  end)

  it("refuses a value read inside fn during the capture, then recovers", function()
    local f = ltc.jit(function(x) return x * x:sum():item() end)
    f(ltc.tensor { 1, 2 })
    assert.matches("cannot read a tensor's value while this thread captures",
      err(function() f(ltc.tensor { 1, 2 }) end))
    assert.equal(3, (ltc.tensor { 1, 2 }):sum():item())
  end)

  it("allows a value read in relaxed mode (fixed at capture)", function()
    local f = ltc.jit(function(x) return x * x:sum():item() end, { mode = "relaxed" })
    f(ltc.tensor { 1, 2 })
    assert.same({ 3, 6 }, f(ltc.tensor { 1, 2 }):totable())
    assert.same({ 6, 6 }, f(ltc.tensor { 2, 2 }):totable()) -- the read is not repeated
  end)

  it("counts and reports state that fn replaces instead of updating in place", function()
    local st = { buf = ltc.zeros(2) }
    local f = ltc.jit(function(g)
      st.buf = st.buf * 0.5 + g -- replaced: the graph keeps reading the old buffer
      return st.buf
    end)
    local stderr, said = io.stderr, {}
    io.stderr = { write = function(_, m) said[#said + 1] = m end } -- luacheck: ignore
    local before = ltc.metrics.counter("GraphFrozenInput")
    local ok, e = pcall(function()
      f(ltc.ones(2))
      f(ltc.ones(2))
    end)
    io.stderr = stderr -- luacheck: ignore
    assert(ok, e)
    assert.equal(before + 1, ltc.metrics.counter("GraphFrozenInput"))
    assert.equal(1, #said)
    assert.matches("reads 1 tensor%(s%) that nothing else holds", said[1])
    -- updated in place, the same state is not frozen and trains as traced
    local buf = ltc.zeros(2)
    local h = ltc.jit(function(g)
      buf:mul_(0.5):add_(g)
      return buf * 1
    end)
    before = ltc.metrics.counter("GraphFrozenInput")
    local outs = {}
    for i = 1, 4 do outs[i] = h(ltc.ones(2)):totable()[1] end
    assert.same({ 1, 1.5, 1.75, 1.875 }, outs)
    assert.equal(before, ltc.metrics.counter("GraphFrozenInput"))
  end)

  it("refuses a non-function", function()
    assert.matches("function expected", err(function() ltc.jit(42) end))
  end)
end)

describe("ltc.jit over a training step", function()
  local nn = ltc.nn

  -- A small synthetic MLP problem: the model, its optimizer and the batches of one
  -- shuffled pass (index_select batches from ltc.data's DataLoader), synced, and the loader.
  local function setup(make_opt)
    ltc.manual_seed(11)
    local model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    local opt = make_opt(model:parameters())
    local x = ltc.randn(96, 8)
    local y = x:narrow(2, 1, 3):argmax(2)
    local loader = ltc.data.DataLoader({ x, y }, { batch_size = 16, shuffle = true, seed = 2,
      drop_last = true })
    local batches = {}
    for _, xb, yb in loader:batches() do batches[#batches + 1] = { xb, yb } end
    ltc.sync()
    loader.epoch = 0 -- the next batches() is the same pass again, as lazy batches
    local calls = 0
    local function step(xb, yb)
      calls = calls + 1
      opt:zero_grad()
      local loss = nn.functional.cross_entropy(model(xb), yb)
      loss:backward()
      opt:step()
      return loss
    end
    return model, batches, step, function() return calls end, loader
  end

  local function params(model)
    local out = {}
    for _, p in ipairs(model:parameters()) do out[#out + 1] = p:reshape({ -1 }):totable() end
    return out
  end

  local function assert_close(want, got, tol)
    for i = 1, #want do
      for k = 1, #want[i] do
        assert.near(want[i][k], got[i][k], tol * (1 + math.abs(want[i][k])))
      end
    end
  end

  local function traced(make_opt)
    local model, batches, step = setup(make_opt)
    local losses = {}
    for i, b in ipairs(batches) do
      local loss = step(b[1], b[2])
      ltc.sync()
      losses[i] = loss:item()
    end
    return params(model), losses
  end

  local sgd = function(ps) return ltc.optim.SGD(ps, { lr = 0.2 }) end

  it("trains an MLP to the traced run's parameters, with no compile or trace after the capture",
  function()
    local want, want_losses = traced(sgd)
    local model, batches, step, calls = setup(sgd)
    local f = ltc.jit(step)
    local counters = { "UncachedCompile", "CachedCompile", "MarkStep", "GraphReplay" }
    local at = {}
    for i, b in ipairs(batches) do
      local loss = f(b[1], b[2])
      assert.near(want_losses[i], loss:item(), 1e-5)
      if i == 2 then -- captured: from here on, replays only
        for _, c in ipairs(counters) do at[c] = ltc.metrics.counter(c) end
      end
    end
    assert.equal(2, calls()) -- warm-up and capture: fn never ran again
    assert.equal(0, ltc.metrics.counter("UncachedCompile") - at.UncachedCompile)
    assert.equal(0, ltc.metrics.counter("CachedCompile") - at.CachedCompile)
    assert.equal(0, ltc.metrics.counter("MarkStep") - at.MarkStep) -- nothing traced to sync
    assert.equal(#batches - 2, ltc.metrics.counter("GraphReplay") - at.GraphReplay)
    assert_close(want, params(model), 1e-5)
  end)

  it("takes lazy DataLoader batches: each replay syncs only the batch's gather", function()
    local want = traced(sgd)
    local model, batches, step, _, loader = setup(sgd)
    local f = ltc.jit(step)
    local uncached, cached
    for i, xb, yb in loader:batches() do
      assert.is_true(ltc.debug.pending().pending_tensors >= 2) -- xb and yb: lazy gathers
      f(xb, yb)
      if i == 2 then
        uncached = ltc.metrics.counter("UncachedCompile")
        cached = ltc.metrics.counter("CachedCompile")
      end
    end
    assert.equal(0, ltc.metrics.counter("UncachedCompile") - uncached)
    assert.equal(#batches - 2, ltc.metrics.counter("CachedCompile") - cached)
    assert_close(want, params(model), 1e-5)
  end)

  -- The optimizers' state used to be replaced at each step (buf = buf * m + g): a replay
  -- then read the capture-time buffer forever, and momentum and Adam trained differently.
  for name, make_opt in pairs {
    ["SGD with momentum"] = function(ps)
      return ltc.optim.SGD(ps, { lr = 0.1, momentum = 0.9, nesterov = true, weight_decay = 1e-3 })
    end,
    Adam = function(ps) return ltc.optim.Adam(ps, { lr = 0.01 }) end,
    AdamW = function(ps) return ltc.optim.AdamW(ps, { lr = 0.01 }) end,
  } do
    it("replays " .. name .. " as the traced steps update", function()
      local want = traced(make_opt)
      local model, batches, step = setup(make_opt)
      local f = ltc.jit(step)
      for _, b in ipairs(batches) do f(b[1], b[2]) end
      assert_close(want, params(model), 1e-5)
    end)
  end
end)
