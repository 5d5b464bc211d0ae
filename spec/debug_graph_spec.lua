-- ltc.debug at the size of a real model: drawings that collapse what repeats, name parameters
-- by module path and keep what feeds one tensor; explain_recompile's structural diff.
local ltc = require "ltc"
local nn = ltc.nn

-- A GRU cell unrolled over T steps with a linear head, forward and backward: the pending
-- graph of the loss and the gradients (nn.GRU itself is one fused gru_layer op per layer).
local function gru_step(T)
  ltc.manual_seed(0)
  local model = nn.Sequential(nn.GRUCell(4, 8))
  local head = nn.Linear(8, 3)
  ltc.sync()
  local x = ltc.randn(T, 2, 4)
  local h, hs = ltc.zeros(2, 8), {}
  for t = 1, T do
    h = model[1](x:select(1, t), h)
    hs[t] = h
  end
  local loss = head(ltc.stack(hs, 1)):sum()
  loss:backward()
  local ts = { loss }
  for _, p in ipairs(model:parameters()) do ts[#ts + 1] = p.grad end
  return model, ts
end

local function dot_of(ts, opts)
  local args = { table.unpack(ts) }
  args[#args + 1] = opts
  return ltc.debug.dot(table.unpack(args))
end

describe("ltc.debug.dot with options", function()
  it("collapses a GRU's time steps: 64 steps draw as many boxes as 8", function()
    local model8, ts8 = gru_step(8)
    local _, info8 = dot_of(ts8, { names = model8 })
    local model64, ts64 = gru_step(64)
    local t0 = os.clock()
    local d64, info64 = dot_of(ts64, { names = model64 })
    local seconds = os.clock() - t0
    assert.are.equal(563, info8.nodes)
    assert.are.equal(4427, info64.nodes)
    assert.are.equal(47, info64.groups)
    assert.are.equal(info8.groups, info64.groups)
    assert.are.equal(info8.drawn, info64.drawn)
    assert.are.equal(88, info64.drawn)
    assert.is_true(seconds < 2, "dot took " .. seconds .. " s")
    -- a box counts its members: the input projection of every step is one box
    assert.truthy(d64:find('linear\\nf32[2,24]  x64"', 1, true), d64)
  end)

  it("names parameters by their module path", function()
    ltc.manual_seed(0)
    local model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    ltc.sync()
    local y = model(ltc.ones(5, 3)):sum()
    local d = ltc.debug.dot(y, { names = model })
    assert.truthy(d:find('[label="1.weight\\nf32[4,3]", shape=ellipse', 1, true), d)
    assert.truthy(d:find('[label="3.bias\\nf32[2]", shape=ellipse', 1, true), d)
    assert.falsy(d:find("param #", 1, true), d)
    -- a list of {name, tensor} pairs or a table of tensors work as well
    d = ltc.debug.dot(y, { names = { { "w1", model[1].weight } } })
    assert.truthy(d:find('[label="w1\\nf32[4,3]"', 1, true), d)
    d = ltc.debug.dot(y, { names = { head_bias = model[3].bias } })
    assert.truthy(d:find('[label="head_bias\\nf32[2]"', 1, true), d)

    -- without names: the tag a module gave its parameter when it registered it
    d = ltc.debug.dot(y, {})
    assert.truthy(d:find('[label="Linear.weight\\nf32[4,3]"', 1, true), d)
    assert.falsy(d:find("param #", 1, true), d)
    -- any tensor can be tagged
    local x = ltc.debug.tag(ltc.tensor({ { 1, 2, 3 } }), "batch")
    d = ltc.debug.dot(model(x):sum(), {})
    assert.truthy(d:find('[label="batch\\nf32[1,3]"', 1, true), d)
  end)

  it("draws only what feeds one tensor, or one node of ltc.debug.ir", function()
    ltc.manual_seed(0)
    local model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    ltc.sync()
    local h = model[1](ltc.ones(5, 3))
    local y = model[3](model[2](h)):sum()
    local d, info = ltc.debug.dot(y, { names = model, feeds = h })
    assert.are.equal(4, info.nodes)
    assert.truthy(d:find("%3 linear", 1, true), d)
    assert.falsy(d:find("tanh", 1, true), d)
    assert.truthy(d:find("the 4 nodes that feed one tensor", 1, true), d)
    _, info = ltc.debug.dot(y, { feeds = 4 }) -- %4 tanh
    assert.are.equal(5, info.nodes)
    _, info = ltc.debug.dot(y, { feeds = 4, depth = 1 })
    assert.are.equal(2, info.nodes)
    local ok, err = pcall(ltc.debug.dot, y, { feeds = ltc.ones(2) })
    assert.is_false(ok)
    assert.truthy(err:find("feeds: the tensor is not in this graph", 1, true), err)
  end)

  it("expands chosen boxes, or every node", function()
    local model, ts = gru_step(8)
    local d, info = dot_of(ts, { names = model })
    local members = tonumber(d:match('g3 %[label="[^"]*  x(%d+)"'))
    assert.are.equal(8, members)
    local d2, info2 = dot_of(ts, { names = model, expand = { "g3" } })
    assert.falsy(d2:find("g3 [", 1, true))
    assert.are.equal(info.groups - 1, info2.groups)
    assert.are.equal(info.drawn + members - 1, info2.drawn)
    local _, all = dot_of(ts, { names = model, expand = true })
    assert.are.equal(0, all.groups)
    assert.are.equal(563, all.drawn)
    local ok, err = pcall(ltc.debug.dot, ts[1], { expnad = true })
    assert.is_false(ok)
    assert.truthy(err:find("unknown option 'expnad'", 1, true), err)
  end)

  it("frames the boxes by the source line that traced them (LTC_IR_DEBUG=1)", function()
    ltc.sync()
    ltc.config.LTC_IR_DEBUG = 1
    local x = ltc.ones(3, 4)
    local l1 = debug.getinfo(1, "l").currentline
    for _ = 1, 20 do x = (x * 0.5):tanh() end
    local y = x:sum()
    ltc.config.LTC_IR_DEBUG = 0
    local d, info = ltc.debug.dot(y, {})
    assert.are.equal(3, info.lines) -- ones, the loop, sum
    assert.truthy(d:find('label="spec/debug_graph_spec.lua:' .. (l1 + 1) .. '  (40 nodes)"', 1, true), d)
    -- 20 mul and 20 tanh: two boxes, the first mul (of ones) and tanh apart
    assert.truthy(d:find("tanh\\nf32[3,4]  x19", 1, true), d)
    assert.truthy(d:find("mul\\nf32[3,4]  x19", 1, true), d)
    local _, flat = ltc.debug.dot(y, { cluster = "structure" })
    assert.are.equal(0, flat.lines)
  end)
end)

describe("LTC_IR_DEBUG source lines of backward ops", function()
  it("point at the user's loss:backward(), not into the generated derivatives", function()
    ltc.sync()
    ltc.config.LTC_IR_DEBUG = 1
    local w = ltc.ones(3):requires_grad_()
    local loss = (w * w):exp():sum()
    local line = debug.getinfo(1, "l").currentline + 1
    local ok, err = pcall(function() loss:backward() end)
    ltc.config.LTC_IR_DEBUG = 0
    assert(ok, err)
    local s = ltc.debug.ir(w.grad)
    assert.falsy(s:find("derivatives.lua", 1, true), s)
    assert.truthy(s:find("  -- spec/debug_graph_spec.lua:" .. line .. "\n", 1, true), s)
  end)
end)

describe("LTC_IR_DEBUG module paths", function()
  local Block = nn.class("SpecBlock")
  function Block:__init() self.fc = nn.Linear(4, 4); self.act = nn.Tanh() end
  local fwd_line = debug.getinfo(1, "l").currentline + 1
  function Block:forward(x) return self.act(self.fc(x)) + x end

  it("name the module that traced a node by its path in the model", function()
    local model = nn.Sequential(Block(), nn.Linear(4, 2))
    ltc.sync()
    ltc.config.LTC_IR_DEBUG = 1
    local line = debug.getinfo(1, "l").currentline + 1
    local y = model(ltc.ones(3, 4)):sum()
    ltc.config.LTC_IR_DEBUG = 0
    local s = ltc.debug.ir(y)
    local at = "  -- spec/debug_graph_spec.lua:"
    assert.truthy(s:find(" f32[3,4]" .. at .. fwd_line .. " in 1.fc (Linear)\n", 1, true), s)
    assert.truthy(s:find("tanh(%3) f32[3,4]" .. at .. fwd_line .. " in 1.act (Tanh)\n", 1, true), s)
    assert.truthy(s:find("add(%4, %0) f32[3,4]" .. at .. fwd_line .. " in 1 (SpecBlock)\n", 1, true), s)
    assert.truthy(s:find(" f32[3,2]" .. at .. line .. " in 2 (Linear)\n", 1, true), s)
    assert.truthy(s:find("root #0" .. at .. line .. "\n", 1, true), s) -- sum: outside the model
    local _, info = ltc.debug.dot(y, { cluster = "module" })
    assert.are.equal(5, info.lines)
  end)

  it("leave the line of an error raised in a module's forward at the caller's", function()
    local m = nn.LSTM(2, 3)
    for _, flag in ipairs({ 0, 1 }) do
      ltc.config.LTC_IR_DEBUG = flag
      local line = debug.getinfo(1, "l").currentline + 1
      local ok, err = pcall(function() local out = m(ltc.ones(1, 1, 2), ltc.ones(1, 1, 3)); return out end)
      ltc.config.LTC_IR_DEBUG = 0
      assert.is_false(ok)
      assert.truthy(err:find("^spec/debug_graph_spec.lua:" .. line .. ": LSTM: the state must be a table"), err)
    end
  end)
end)

describe("ltc.debug.render at real size", function()
  it("draws a 4,427-node GRU training step with Graphviz in seconds", function()
    if not os.execute("command -v dot >/dev/null 2>&1") then
      pending("graphviz is not installed")
      return
    end
    local model, ts = gru_step(64)
    local path = os.tmpname() .. ".svg"
    local args = { table.unpack(ts) }
    args[#args + 1] = { names = model }
    args[#args + 1] = path
    local t0 = os.time()
    local p, info = ltc.debug.render(table.unpack(args))
    local seconds = os.difftime(os.time(), t0)
    local f = assert(io.open(path))
    local svg = f:read("a")
    f:close()
    os.remove(path)
    assert.are.equal(path, p)
    assert.are.equal(88, info.drawn)
    assert.is_true(seconds <= 20, "render took " .. seconds .. " s")
    assert.truthy(svg:find("1.weight_hh", 1, true))
    local w, h = svg:match('<svg width="(%d+)pt" height="(%d+)pt"')
    assert.is_true(tonumber(w) < 3000 and tonumber(h) < 3000, w .. "x" .. h)
  end)
end)

describe("ltc.debug.explain_recompile's diff", function()
  it("names the first real difference with its source line and prints the diff", function()
    ltc.sync()
    ltc.config.LTC_IR_DEBUG = 1
    local line
    local function f(extra)
      local x = ltc.ones(8, 4)
      local w = ltc.full({ 4, 4 }, 0.5)
      local h = x:matmul(w)
      line = debug.getinfo(1, "l").currentline + 1
      if extra then h = h + x:matmul(w):sin() end
      for _ = 1, 6 do h = h:tanh():matmul(w) * 2 end
      return h:sum():item()
    end
    local ok, err = pcall(function()
      f(false)
      f(true)
    end)
    ltc.config.LTC_IR_DEBUG = 0
    assert(ok, err)
    local s = ltc.debug.explain_recompile()
    local at = "spec/debug_graph_spec.lua:" .. line
    assert.truthy(s:find("; 28 of 32 nodes equal\n", 1, true), s)
    assert.truthy(s:find("\nfirst difference: node %4 matmul at " .. at ..
      ": new, compile #", 1, true), s)
    -- the consequence is marked as such, not counted as a cause
    assert.truthy(s:find("node %7 tanh: operand 1 is %6 add, was %3 matmul (follows from its operands)", 1, true), s)
    assert.truthy(s:find("\n+ %5 = sin(%4) f32[8,4]  -- " .. at .. "\n", 1, true), s)
    assert.truthy(s:find("\n- %4 = tanh(%3) f32[8,4]  -- ", 1, true), s)
    assert.truthy(s:find("\n+ %7 = tanh(%6) f32[8,4]  -- ", 1, true), s)
  end)

  it("aligns graphs of thousands of nodes: one extra op is one difference", function()
    ltc.sync()
    local function chain(extra)
      local x = ltc.ones(4)
      if extra then x = x:exp() end
      for _ = 1, 1200 do x = (x * 0.5):tanh() end
      return x:sum():item()
    end
    chain(false)
    chain(true)
    local s = ltc.debug.explain_recompile()
    assert.truthy(s:find("; 3601 of 3603 nodes equal\n", 1, true), s)
    assert.truthy(s:find("\nfirst difference: node %1 exp: new, ", 1, true), s)
    local _, n = s:gsub("\nnode %%", "")
    assert.are.equal(2, n) -- exp is new, the first mul's operand changed
  end)

  it("numbers compiles from 1 again after metrics.reset()", function()
    ltc.sync()
    local _ = ltc.ones(3, 5):exp():sum():item()
    ltc.metrics.reset()
    _ = ltc.ones(3, 5):neg():sum():item()
    assert.are.equal(1, ltc.metrics.counter("UncachedCompile"))
    local s = ltc.debug.explain_recompile()
    assert.truthy(s:find("^compile #1: a graph of 3 nodes"), s)
    assert.truthy(s:find("nearest compiled graph: compile #%d+ %(before metrics.reset%(%)%)"), s)
    _ = ltc.ones(3, 5):sin():sum():item()
    s = ltc.debug.explain_recompile()
    assert.truthy(s:find("^compile #2: "), s)
    assert.truthy(s:find("nearest compiled graph: compile #1, 3 nodes", 1, true), s)
  end)
end)
