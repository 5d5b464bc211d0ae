-- Graph capture and replay (ltc.Graph, src/cpu/capture.c).
local ltc = require "ltc"

local function close(a, b, tol)
  local ta, tb = a:totable(), b:totable()
  local function walk(x, y)
    if type(x) == "table" then
      assert.equal(#x, #y)
      for i = 1, #x do walk(x[i], y[i]) end
    else
      assert(math.abs(x - y) <= (tol or 1e-5) * (1 + math.abs(y)),
        string.format("%.9g vs %.9g", x, y))
    end
  end
  walk(ta, tb)
end

local err = dofile("spec/support/err.lua")

describe("the graph registry", function()
  it("has the CPU implementation and no other", function()
    assert.is_true(ltc.has_graph_impl("cpu"))
    assert.is_false(ltc.has_graph_impl("tpu"))
  end)

  it("refuses a graph for an unknown device type, naming it", function()
    assert.matches("no graph implementation for device type 'tpu'",
      err(function() ltc.Graph { device = "tpu" } end))
  end)

  it("hands out distinct pool handles", function()
    local a, b = ltc.graph_pool_handle(), ltc.graph_pool_handle()
    assert.is_true(math.type(a) == "integer" and a ~= b)
  end)
end)

describe("misuse of a graph", function()
  it("replay before a capture is an error", function()
    assert.matches("replay: nothing captured yet", err(function() ltc.Graph():replay() end))
  end)

  it("pool before a capture is an error", function()
    assert.matches("pool: nothing captured yet", err(function() ltc.Graph():pool() end))
  end)

  it("instantiate before capture_end is an error", function()
    local g = ltc.Graph { keep_graph = true }
    assert.matches("instantiate: nothing captured yet", err(function() g:instantiate() end))
    g:capture_begin()
    assert.matches("instantiate: the capture has not ended", err(function() g:instantiate() end))
    assert.matches("replay: the graph is still capturing", err(function() g:replay() end))
    g:capture_end()
    g:instantiate()
    g:instantiate() -- keep_graph: instantiating again is allowed
  end)

  it("a second instantiate without keep_graph is an error", function()
    local g = ltc.Graph()
    g:capture_begin()
    g:capture_end()
    assert.matches("already instantiated by capture_end.*keep_graph",
      err(function() g:instantiate() end))
  end)

  it("capturing on a graph that owns one is an error until reset", function()
    local g = ltc.Graph()
    g:capture_begin()
    assert.matches("already capturing", err(function() g:capture_begin() end))
    g:capture_end()
    assert.matches("already owns a captured graph", err(function() g:capture_begin() end))
    g:reset()
    g:capture_begin()
    g:capture_end()
  end)

  it("capture_end without capture_begin is an error", function()
    assert.matches("capture_end: the graph is not capturing",
      err(function() ltc.Graph():capture_end() end))
  end)

  it("a second capture on the same thread is an error", function()
    local g1, g2 = ltc.Graph(), ltc.Graph()
    g1:capture_begin()
    assert.matches("already captures a graph", err(function() g2:capture_begin() end))
    g1:capture_end()
  end)

  it("bad capture arguments are errors", function()
    assert.matches("unknown capture mode 'sometimes'",
      err(function() ltc.Graph():capture_begin { mode = "sometimes" } end))
    assert.matches("pool must be a handle",
      err(function() ltc.Graph():capture_begin { pool = "big" } end))
  end)

  it("debug_dump needs debug mode or keep_graph, and says so", function()
    local g = ltc.Graph()
    g:capture_begin()
    g:capture_end()
    assert.matches("enable_debug_mode.*keep_graph", err(function() g:debug_dump("/tmp/x.dot") end))
  end)
end)

describe("capture and replay", function()
  it("replays the recorded syncs on the static inputs' current data", function()
    local x = ltc.tensor { { 1, 2 }, { 3, 4 } }
    local w = ltc.tensor { { 1, 0 }, { 0, 1 } }
    local g = ltc.Graph()
    g:capture_begin()
    local y = x:matmul(w) + 1
    w:add_(1)
    g:capture_end()
    assert.same({ { 2, 3 }, { 4, 5 } }, y:totable())
    g:replay() -- w is now {{2,1},{1,2}}
    assert.same({ { 5, 6 }, { 11, 12 } }, y:totable())
    assert.same({ { 3, 2 }, { 2, 3 } }, w:totable())
    x:copy_(ltc.tensor { { 0, 0 }, { 0, 1 } })
    g:replay()
    assert.same({ { 1, 1 }, { 3, 4 } }, y:totable())
    assert.same({ { 4, 3 }, { 3, 4 } }, w:totable())
  end)

  it("reads an input written with a cast or a broadcast (pending IR) at replay", function()
    local x = ltc.zeros(2, 2)
    local g = ltc.Graph()
    g:capture_begin()
    local y = x * 2
    g:capture_end()
    x:copy_(ltc.tensor({ 1, 2 }, "int64")) -- broadcast and cast: x is pending
    g:replay()
    assert.same({ { 2, 4 }, { 2, 4 } }, y:totable())
  end)

  it("does not capture work that was pending before capture_begin", function()
    local a = ltc.tensor { 1, 2 }
    local b = a * 10 -- pending: computed by capture_begin's sync
    local g = ltc.Graph()
    g:capture_begin()
    local c = b + 1
    g:capture_end()
    a:copy_(ltc.tensor { 5, 5 })
    g:replay()
    assert.same({ 10, 20 }, b:totable())
    assert.same({ 11, 21 }, c:totable())
  end)

  it("captures work still pending at capture_end", function()
    local a = ltc.tensor { 1, 2 }
    local g = ltc.Graph()
    g:capture_begin()
    local c = a * 3 -- never synced explicitly
    g:capture_end()
    a:copy_(ltc.tensor { 2, 2 })
    g:replay()
    assert.same({ 6, 6 }, c:totable())
  end)

  it("feeds one sync's outputs to the next within a replay", function()
    local x = ltc.tensor { 1, 2, 3 }
    local g = ltc.Graph()
    g:capture_begin()
    local a = x + 1
    ltc.sync()
    local b = a * a
    ltc.sync()
    local c = b - x
    g:capture_end()
    assert.same({ 3, 7, 13 }, c:totable())
    x:copy_(ltc.tensor { 0, 1, 2 })
    g:replay()
    assert.same({ 1, 2, 3 }, a:totable())
    assert.same({ 1, 4, 9 }, b:totable())
    assert.same({ 1, 3, 7 }, c:totable())
  end)

  it("replays a step with an op the CPU backend leaves to the reference fallback (cumsum)", function()
    -- instantiating a capture whose step is the eager fallback's composite crashed (pool_fit
    -- of a missing plan)
    local x = ltc.tensor { { 1, 2, 3 }, { 4, 5, 6 } }
    local g = ltc.Graph()
    g:capture_begin()
    local y = (x * 2):cumsum(2) + 1
    g:capture_end()
    assert.same({ { 3, 7, 13 }, { 9, 19, 31 } }, y:totable())
    x:copy_(ltc.tensor { { 0, 1, 0 }, { 2, 2, 2 } })
    g:replay()
    assert.same({ { 1, 3, 3 }, { 5, 9, 13 } }, y:totable())
  end)

  it("with keep_graph, the first replay instantiates", function()
    local x = ltc.tensor { 1 }
    local g = ltc.Graph { keep_graph = true }
    g:capture_begin()
    local y = x + 1
    g:capture_end()
    x:copy_(ltc.tensor { 41 })
    g:replay()
    assert.same({ 42 }, y:totable())
  end)

  it("an empty capture replays as a no-op", function()
    local g = ltc.Graph()
    g:capture_begin()
    g:capture_end()
    g:replay()
  end)

  it("keeps views of an updated parameter up to date", function()
    local w = ltc.tensor { { 1, 2 }, { 3, 4 } }
    local g = ltc.Graph()
    g:capture_begin()
    w:mul_(2)
    g:capture_end()
    local row = w[2]
    assert.same({ 6, 8 }, row:totable())
    g:replay()
    assert.same({ 12, 16 }, row:totable())
  end)

  it("writes a DOT file of the captured graph in debug mode", function()
    local x = ltc.tensor { 1, 2 }
    local g = ltc.Graph()
    g:enable_debug_mode()
    g:capture_begin()
    local y = (x + 1):exp()
    g:capture_end()
    local path = os.tmpname()
    g:debug_dump(path)
    local f = assert(io.open(path))
    local dot = f:read("a")
    f:close()
    os.remove(path)
    assert.matches("^digraph ltc_graph", dot)
    assert.matches("static input", dot)
    assert.matches("install into tensor", dot)
    assert.matches("exp", dot)
    g:replay()
    assert.equal(2, #y:totable())
  end)
end)

-- A two-layer MLP training step with hand-written gradients (as examples/digits.lua).
local function mlp_params(seed)
  ltc.manual_seed(seed)
  local p = {
    w1 = ltc.randn(8, 16) * 0.3, b1 = ltc.zeros(16),
    w2 = ltc.randn(16, 4) * 0.3, b2 = ltc.zeros(4),
  }
  ltc.sync()
  return p
end

local function mlp_step(p, x, y, lr)
  local n = x:size(1)
  local h = (x:matmul(p.w1) + p.b1):relu()
  local logits = h:matmul(p.w2) + p.b2
  local g = (logits:softmax(2) - y) / n
  local dh = g:matmul(p.w2:t()) * h:gt(0):float()
  p.w2:sub_(h:t():matmul(g) * lr)
  p.b2:sub_(g:sum(1) * lr)
  p.w1:sub_(x:t():matmul(dh) * lr)
  p.b1:sub_(dh:sum(1) * lr)
  return (y * logits:log_softmax(2)):sum() * (-1 / n)
end

local function batches(k)
  ltc.manual_seed(100)
  local out = {}
  for i = 1, k do
    local x = ltc.randn(32, 8)
    local labels = ltc.randn(32, 4):argmax(2)
    local y = labels:view(-1, 1):eq(ltc.arange(1, 5)):float()
    ltc.sync()
    out[i] = { x = x, y = y }
  end
  return out
end

describe("replaying a training step", function()
  it("equals eager steps over several batches, parameters updated in place", function()
    local data = batches(6)
    local eager = mlp_params(3)
    local eager_loss = {}
    for i, b in ipairs(data) do
      eager_loss[i] = mlp_step(eager, b.x, b.y, 0.5)
      ltc.sync()
    end

    local p = mlp_params(3)
    local x, y = ltc.zeros(32, 8), ltc.zeros(32, 4)
    local g = ltc.Graph()
    local loss
    for i, b in ipairs(data) do
      x:copy_(b.x)
      y:copy_(b.y)
      if i == 1 then
        g:capture_begin()
        loss = mlp_step(p, x, y, 0.5)
        g:capture_end()
      else
        g:replay()
      end
      close(loss, eager_loss[i])
    end
    for _, k in ipairs { "w1", "b1", "w2", "b2" } do close(p[k], eager[k]) end
  end)

  it("steady-state replays allocate nothing new from the pool", function()
    local p = mlp_params(1)
    local x, y = ltc.randn(32, 8), ltc.zeros(32, 4)
    local g = ltc.Graph()
    g:capture_begin()
    local loss = mlp_step(p, x, y, 0.1)
    g:capture_end()
    g:replay()
    g:replay()
    local before = ltc.graph_pool_info(g:pool())
    for _ = 1, 5 do g:replay() end
    local after = ltc.graph_pool_info(g:pool())
    assert.equal(before.mallocs, after.mallocs)
    assert.is_true(after.reuses > before.reuses)
    assert.is_true(loss:item() == loss:item()) -- a number, not NaN
  end)
end)

describe("memory pools", function()
  it("are shared by graphs captured with the same handle", function()
    local h = ltc.graph_pool_handle()
    local x = ltc.tensor { 1, 2, 3, 4 }
    local g1, g2 = ltc.Graph(), ltc.Graph()
    g1:capture_begin { pool = h }
    local a = x * 2
    g1:capture_end()
    g2:capture_begin { pool = g1:pool() }
    local b = a + x
    g2:capture_end()
    assert.equal(h, g1:pool())
    assert.equal(h, g2:pool())
    assert.equal(2, ltc.graph_pool_info(h).graphs)
    x:copy_(ltc.tensor { 1, 1, 1, 1 })
    g1:replay()
    g2:replay()
    assert.same({ 2, 2, 2, 2 }, a:totable())
    assert.same({ 3, 3, 3, 3 }, b:totable())
    g1:reset()
    assert.equal(1, ltc.graph_pool_info(h).graphs)
    g2:reset()
    a, b = nil, nil
    collectgarbage()
    collectgarbage()
    assert.is_nil(ltc.graph_pool_info(h)) -- released once nothing uses it
  end)

  it("a private pool is released by reset once its data is gone", function()
    local x = ltc.tensor { 1, 2 }
    local g = ltc.Graph()
    g:capture_begin()
    local y = x + 1
    g:capture_end()
    local h = g:pool()
    assert.is_table(ltc.graph_pool_info(h))
    g:reset()
    assert.same({ 2, 3 }, y:totable()) -- data still held stays valid
    y = nil
    collectgarbage()
    collectgarbage()
    assert.is_nil(ltc.graph_pool_info(h))
  end)
end)

describe("random numbers in a captured graph", function()
  it("are fresh on every replay and equal the uncaptured sequence", function()
    ltc.manual_seed(7)
    local eager = {}
    for i = 1, 4 do
      local r = ltc.rand(5) + ltc.randn(3):sum()
      eager[i] = r:totable()
    end

    ltc.manual_seed(7)
    local g = ltc.Graph()
    g:capture_begin()
    local r = ltc.rand(5) + ltc.randn(3):sum()
    g:capture_end()
    local got = { r:totable() }
    for i = 2, 4 do
      g:replay()
      got[i] = r:totable()
    end
    for i = 1, 4 do
      for k = 1, 5 do assert.near(eager[i][k], got[i][k], 1e-6) end
    end
    assert.are_not.same(got[1], got[2])
    -- the generator advanced as the eager steps did: the next draw matches too
    local after = ltc.rand(2):totable()
    ltc.manual_seed(7)
    for _ = 1, 4 do ltc.rand(5); ltc.randn(3) end
    assert.same(ltc.rand(2):totable(), after)
  end)
end)

describe("capture modes on the capturing thread", function()
  for _, mode in ipairs { "global", "thread_local", "default" } do
    it("reading a value raises in " .. mode .. " mode, saying why", function()
      local x = ltc.tensor { 1, 2 }
      local g = ltc.Graph()
      g:capture_begin { mode = mode }
      local s = x:sum()
      local msg = err(function() return s:item() end)
      assert.matches("cannot read a tensor's value while this thread captures a graph", msg)
      assert.matches("never on replay", msg)
      assert.matches("item", err(function() return tostring(x) end) .. "item")
      g:capture_end()
      assert.equal(3, s:item())
    end)
  end

  it("reading a value is allowed in relaxed mode", function()
    local x = ltc.tensor { 1, 2 }
    local g = ltc.Graph()
    g:capture_begin { mode = "relaxed" }
    local s = x:sum()
    assert.equal(3, s:item())
    local t = s * 2
    g:capture_end()
    x:copy_(ltc.tensor { 5, 5 })
    g:replay()
    assert.equal(20, t:item())
  end)
end)

describe("capture on any backend", function()
  it("names a fused step in debug_dump as backend_text does", function()
    local x = ltc.randn(64, 64)
    local g = ltc.Graph{keep_graph = true}
    g:capture_begin()
    local _ = x:relu():sum()
    g:capture_end()
    local path = os.tmpname()
    g:debug_dump(path)
    local f = assert(io.open(path))
    local dot = f:read("a")
    f:close()
    os.remove(path)
    assert.truthy(dot:find('label="fused(relu -> sum)"', 1, true), dot)
  end)

  it("accepts only pool ids that graph_pool_handle() gave out", function()
    local g = ltc.Graph()
    local made_up = ltc.graph_pool_handle() + 1000
    assert.has_error(function() g:capture_begin{pool = made_up} end,
      "capture_begin: pool " .. made_up .. " was not made by ltc.graph_pool_handle() or g:pool()")
    local h = ltc.graph_pool_handle()
    g:capture_begin{pool = h}
    g:capture_end()
  end)

  it("refuses a sync on another backend during a capture, naming both", function()
    local r = ltc.tensor({1}, {device = "ref"})
    local g = ltc.Graph()
    g:capture_begin()
    local z = r * 2
    local ok, err = pcall(ltc.sync)
    assert.is_false(ok)
    assert.matches("sync on backend 'ref' while this thread captures a graph on 'cpu'", err, 1, true)
    z = nil -- luacheck: ignore
    g:capture_end()
    g:reset()
    assert.are.equal(3, (r * 3):item())
  end)
end)
