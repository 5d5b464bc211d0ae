-- ltc.debug: IR text and DOT of pending graphs, backend text, recompile explanations,
-- source lines (LTC_IR_DEBUG), graph dumps (LTC_SAVE_GRAPHS) and ltc.config.
local ltc = require "ltc"

local function lines(s)
  local out = {}
  for l in s:gmatch("[^\n]+") do out[#out + 1] = l end
  return out
end

local function read(path)
  local f = assert(io.open(path))
  local s = f:read("a")
  f:close()
  return s
end

describe("ltc.debug.ir", function()
  it("prints one node a line in post order with parameters, attributes and the root", function()
    local a = ltc.tensor({{1, 2}, {3, 4}})
    local y = (a * 2):sum(2, true)
    local l = lines(ltc.debug.ir(y))
    assert.are.equal(5, #l)
    assert.truthy(l[1]:match("^graph: 4 nodes, 2 parameters, 1 root; hash %x+$"))
    assert.are.equal("%0 = device_data() f32[2,2] param #0", l[2])
    assert.are.equal("%1 = device_data() f32[] param #1 = 2", l[3])
    assert.are.equal("%2 = mul(%0, %1) f32[2,2]", l[4])
    assert.are.equal("%3 = sum(%2, dim=2, keepdim=true) f32[2,1] root #0", l[5])
  end)

  it("shows dims 1-based as written, negative ones wrapped", function()
    local a = ltc.ones(2, 3, 4)
    local s = ltc.debug.ir(a:transpose(1, -1), a:softmax(-1))
    assert.truthy(s:find("transpose(%0, dim0=1, dim1=3) f32[4,3,2] root #0", 1, true))
    assert.truthy(s:find("softmax(%0, dim=3) f32[2,3,4] root #1", 1, true))
    assert.truthy(s:find("%0 = ones(size={2,3,4}, dtype=none) f32[2,3,4]", 1, true))
  end)

  it("names outputs of multi-output nodes and several roots", function()
    local a = ltc.tensor({{1, 5}, {7, 2}})
    local v, i = a:max(2)
    local s = ltc.debug.ir(v, i)
    assert.truthy(s:find("%1 = max.dim(%0, dim=2, keepdim=false) (f32[2], i64[2])"
      .. " root #0 (output 1) root #1 (output 2)", 1, true), s)
    assert.truthy(s:find("2 roots", 1, true))
  end)

  it("shows a tensor that holds data as its parameter", function()
    local a = ltc.tensor({1, 2, 3})
    local l = lines(ltc.debug.ir(a))
    assert.are.equal("%0 = device_data() f32[3] param #0 root #0", l[2])
  end)

  it("with no tensors shows the graph the next sync computes", function()
    ltc.sync()
    local keep = ltc.tensor({1, 2}) + 40
    local s = ltc.debug.ir()
    assert.truthy(s:find("add(%0, %1) f32[2] root #0", 1, true), s)
    assert.are.equal(1, ltc.debug.pending().pending_tensors)
    assert.are.equal(3, ltc.debug.pending().pending_nodes)
    assert.are.same({41, 42}, keep:totable())
  end)

  it("does not trace, sync or compile", function()
    local before = ltc.metrics.counter("MarkStep")
    local compiles = ltc.metrics.counter("UncachedCompile")
    local y = ltc.ones(3) * 5
    ltc.debug.ir(y); ltc.debug.dot(y); ltc.debug.backend_text(y)
    assert.are.equal(before, ltc.metrics.counter("MarkStep"))
    assert.are.equal(compiles, ltc.metrics.counter("UncachedCompile"))
    assert.is_true(ltc.debug.pending().pending_tensors >= 1)
  end)

  it("shows a view written through its base as it will be computed", function()
    local a = ltc.zeros(2, 3)
    local r = a[1]
    a:add_(5)
    local s = ltc.debug.ir(r)
    assert.truthy(s:find("add(%0, %1) f32[2,3]\n%3 = select(%2, dim=1, index=1) f32[3] root #0", 1, true), s)
    assert.are.same({5, 5, 5}, r:totable())
  end)

  it("rejects what is not a tensor", function()
    local ok, err = pcall(ltc.debug.ir, 3)
    assert.is_false(ok)
    assert.truthy(err:find("debug.ir: bad argument #1", 1, true), err)
  end)
end)

describe("ltc.debug.dot", function()
  it("writes a Graphviz digraph with labelled nodes and operand edges", function()
    local a = ltc.tensor({{1, 2}, {3, 4}})
    local d = ltc.debug.dot((a * 2):sum(2, true))
    assert.truthy(d:match("^digraph ltc {"))
    assert.truthy(d:match("}\n$"))
    assert.truthy(d:find('n0 [label="%0 device_data\\nf32[2,2]\\nparam #0", shape=ellipse];', 1, true), d)
    assert.truthy(d:find('n2 [label="%2 mul\\nf32[2,2]"];', 1, true), d)
    assert.truthy(d:find('n3 [label="%3 sum(dim=2, keepdim=true)\\nf32[2,1]\\nroot #0", peripheries=2, style=bold];', 1, true), d)
    assert.truthy(d:find("n0 -> n2 [label=\"1\"];", 1, true))
    assert.truthy(d:find("n1 -> n2 [label=\"2\"];", 1, true))
    assert.truthy(d:find("n2 -> n3;", 1, true))
    local _, edges = d:gsub(" %-> ", "")
    assert.are.equal(3, edges)
  end)
end)

describe("ltc.debug.render", function()
  it("runs Graphviz's dot to write an SVG", function()
    if not os.execute("command -v dot >/dev/null 2>&1") then
      pending("graphviz is not installed")
      return
    end
    local path = os.tmpname() .. ".svg"
    local y = ltc.ones(2, 2):relu()
    assert.are.equal(path, ltc.debug.render(y, path))
    local svg = read(path)
    os.remove(path)
    assert.truthy(svg:find("<svg", 1, true))
    assert.truthy(svg:find("relu", 1, true))
  end)

  it("says how to install Graphviz when dot is missing", function()
    local saved = ltc.debug.dot_command
    ltc.debug.dot_command = "ltc-no-such-dot-program"
    local ok, err = pcall(ltc.debug.render, ltc.ones(2), "/tmp/never.svg")
    ltc.debug.dot_command = saved
    assert.is_false(ok)
    assert.truthy(err:find("apt-get install graphviz", 1, true), err)
  end)

  it("rejects a path without a known picture format", function()
    local ok, err = pcall(ltc.debug.render, ltc.ones(2), "graph.txt")
    assert.is_false(ok)
    assert.truthy(err:find("cannot tell the format of 'graph.txt'", 1, true), err)
  end)
end)

describe("ltc.debug.backend_text", function()
  it("shows the CPU plan of exactly the given tensors' graph without running it", function()
    local a = ltc.tensor({{1, 2, 3}, {4, 5, 6}})
    local y = (a + 1):exp():sum(1)
    local s = ltc.debug.backend_text(y)
    local l = lines(s)
    assert.truthy(l[1]:match("^backend cpu, graph hash %x+ %(compiled for this call, not cached%)$"), l[1])
    -- the plan's steps depend on fusion: add and exp may be one step
    assert.truthy(s:find("\ncpu plan: [23] steps, %d+ buffers, arena %d+ bytes\n"), s)
    assert.truthy(s:find("add[^\n]*b0, b1%) %-> b%d+ f32%[2,3%] temp@%d+\n"), s)
    assert.truthy(s:find("exp", 1, true), s)
    assert.truthy(s:find("step %d: sum%(b%d+%) %-> b%d+ f32%[3%] output\n"), s)
    assert.is_true(ltc.debug.pending().pending_tensors >= 1)
    local v = y:totable()
    assert.is_true(math.abs(v[1] - (math.exp(2) + math.exp(5))) < 1e-3)
  end)

  it("takes the computation from the compile cache once the graph was synced", function()
    ltc.sync()
    local y = (ltc.tensor({1, 2}) * 3):neg()
    local before = ltc.debug.backend_text()
    assert.truthy(before:find("(compiled for this call, not cached)", 1, true))
    ltc.sync()
    local z = (ltc.tensor({5, 6}) * 3):neg()
    local after = ltc.debug.backend_text()
    assert.truthy(after:find("(from the compile cache)", 1, true), after)
    assert.are.same({-3, -6}, y:totable())
    assert.are.same({-15, -18}, z:totable())
  end)
  it("shows each step's mean and fastest time with LTC_PROFILE, and none without", function()
    ltc.sync()
    local function run() local y = (ltc.tensor({1, 2, 3}) * 4):exp():sum(); return y:item() end
    run()
    assert.falsy(ltc.debug.backend_text((ltc.tensor({1, 2, 3}) * 4):exp():sum()):find(" us x ", 1, true))
    ltc.sync()
    ltc.config.LTC_PROFILE = 1
    local ok, err = pcall(function()
      for _ = 1, 3 do assert.is_true(math.abs(run() - (math.exp(4) + math.exp(8) + math.exp(12))) < 1e2) end
      local s = ltc.debug.backend_text((ltc.tensor({1, 2, 3}) * 4):exp():sum())
      assert.truthy(s:find("(from the compile cache)", 1, true), s)
      -- every step ran 3 times (the first run before profiling is not counted)
      local steps, timed = 0, 0
      for line in s:gmatch("[^\n]+") do
        if line:match("^  step %d+:") then
          steps = steps + 1
          local min, us, runs = line:match("%(min ([%d.]+) us%)  %[([%d.]+) us x (%d+)%]$")
          if us then
            timed = timed + 1
            assert.are.equal("3", runs)
            -- the fastest of the runs is no slower than their mean (both rounded to 0.1 us)
            assert.is_true(tonumber(min) >= 0 and tonumber(min) <= tonumber(us) + 0.1, line)
          end
        end
      end
      assert.is_true(steps >= 1)
      assert.are.equal(steps, timed)
    end)
    ltc.config.LTC_PROFILE = 0
    ltc.sync()
    assert(ok, err)
  end)
end)

describe("ltc.debug.explain_recompile", function()
  local function step(batch)
    local x = ltc.ones(batch, 7)
    local w = ltc.full({7, 3}, 0.5)
    local loss = x:matmul(w):tanh():sum()
    return loss:item()
  end

  it("names the shape that changed when the batch size changes", function()
    ltc.sync()
    step(64)
    local c = ltc.metrics.counter("UncachedCompile")
    step(64)
    assert.are.equal(c, ltc.metrics.counter("UncachedCompile"))
    step(32)
    assert.are.equal(c + 1, ltc.metrics.counter("UncachedCompile"))
    local s = ltc.debug.explain_recompile()
    assert.truthy(s:find("missed the compile cache", 1, true), s)
    assert.truthy(s:find("node %0 ones: shape f32[64,7] now f32[32,7]", 1, true), s)
    assert.truthy(s:find("matmul: shape f32[64,3] now f32[32,3]", 1, true), s)
  end)

  it("names a changed dtype and a changed attribute", function()
    ltc.sync()
    local a = ltc.ones(5, 6)
    local r1 = a:softmax(2):sum():item()
    local r2 = a:softmax(1):sum():item()
    assert.is_true(math.abs(r1 - 5) < 1e-5 and math.abs(r2 - 6) < 1e-5)
    local s = ltc.debug.explain_recompile()
    assert.truthy(s:find("softmax: attributes (dim=2) now (dim=1)", 1, true), s)
    local _ = ltc.ones({5, 6}, "float64"):softmax(1):sum():item()
    s = ltc.debug.explain_recompile()
    assert.truthy(s:find("shape f32[5,6] now f64[5,6]", 1, true), s)
  end)
end)

describe("ltc.debug.explain_recompile alignment", function()
  it("matches nodes past an inserted op and names the new and the gone nodes", function()
    ltc.sync()
    local _ = ltc.ones(3, 17):exp():sum():item()
    _ = ltc.ones(3, 17):exp():neg():sum():item()
    local s = ltc.debug.explain_recompile()
    assert.truthy(s:find("; 2 of 4 nodes equal\n", 1, true), s)
    assert.truthy(s:find("node %%2 neg: new, compile #%d+ has no such node here\n"), s)
    assert.truthy(s:find("node %3 sum: operand 1 is %2 neg, was %1 exp", 1, true), s)
    _ = ltc.ones(3, 17):exp():sum():item() -- cached: no new explanation
    assert.are.equal(s, ltc.debug.explain_recompile())
  end)
end)

describe("ltc.debug.pending", function()
  it("counts pending tensors and nodes and prints as one line", function()
    ltc.sync()
    local y = ltc.ones(2) + 1
    collectgarbage() -- the ones(2) temporary would count until collected
    local p = ltc.debug.pending()
    assert.are.equal(1, p.pending_tensors)
    assert.are.equal(3, p.pending_nodes)
    assert.truthy(tostring(p):match("^%d+ live tensors, 1 with pending IR, 3 pending nodes$"))
    assert.are.same({2, 2}, y:totable())
  end)
end)

describe("LTC_IR_DEBUG", function()
  it("records the Lua line that traced each node", function()
    ltc.config.LTC_IR_DEBUG = 1
    local a = ltc.tensor({1, 2})
    local line = debug.getinfo(1, "l").currentline + 1
    local y = (a * 3):exp()
    ltc.config.LTC_IR_DEBUG = 0
    local z = y + 1
    local s = ltc.debug.ir(z)
    assert.truthy(s:find("mul(%0, %1) f32[2]  -- spec/debug_spec.lua:" .. line, 1, true), s)
    assert.truthy(s:find("exp(%2) f32[2]  -- spec/debug_spec.lua:" .. line, 1, true), s)
    assert.truthy(s:find("add(%3, %4) f32[2] root #0\n", 1, true), s)
  end)
end)

describe("ltc.config", function()
  it("lists every option with its value and doc", function()
    local byname = {}
    for _, o in ipairs(ltc.config.list()) do byname[o.name] = o end
    assert.are.equal(ltc.config.LTC_COMPILE_CACHE_SIZE, byname.LTC_COMPILE_CACHE_SIZE.value)
    assert.truthy(byname.LTC_COMPILE_CACHE_SIZE.doc:find("compile cache", 1, true))
    assert.are.equal(0, byname.LTC_IR_DEBUG.min)
    assert.are.equal("text", byname.LTC_SAVE_GRAPHS_FMT.value)
    local seen = {}
    for k, v in pairs(ltc.config) do seen[k] = v end
    assert.are.equal(1, seen.LTC_SYNC_GC)
    assert.are.equal("", seen.LTC_SAVE_GRAPHS)
  end)

  it("checks names, types and values", function()
    local ok, err = pcall(function() ltc.config.LTC_NO_SUCH = 1 end)
    assert.is_false(ok)
    assert.truthy(err:find("unknown configuration option 'LTC_NO_SUCH'", 1, true), err)
    ok, err = pcall(function() ltc.config.LTC_SAVE_GRAPHS_FMT = "png" end)
    assert.truthy(err:find("LTC_SAVE_GRAPHS_FMT must be one of text, dot, got 'png'", 1, true), err)
    ok, err = pcall(function() ltc.config.LTC_COMPILE_CACHE_SIZE = 0 end)
    assert.truthy(err:find("LTC_COMPILE_CACHE_SIZE must be in 1..", 1, true), err)
    ok, err = pcall(function() ltc.config.LTC_SAVE_GRAPHS = 5 end)
    assert.truthy(err:find("LTC_SAVE_GRAPHS is a string option", 1, true), err)
    ok, err = pcall(function() return ltc.config.LTC_NOPE end)
    assert.truthy(err:find("unknown configuration option 'LTC_NOPE'", 1, true), err)
  end)

  it("LTC_SAVE_GRAPHS appends every compiled graph as text or DOT", function()
    local path = os.tmpname()
    ltc.sync()
    ltc.config.LTC_SAVE_GRAPHS = path
    local _ = (ltc.ones(3, 11) * 2):sigmoid():sum():item()
    ltc.config.LTC_SAVE_GRAPHS_FMT = "dot"
    local _ = (ltc.ones(3, 11) * 2):tanh():sum():item()
    ltc.config.LTC_SAVE_GRAPHS = ""
    ltc.config.LTC_SAVE_GRAPHS_FMT = "text"
    local _ = (ltc.ones(3, 11) * 2):relu():sum():item()
    local s = read(path)
    os.remove(path)
    local _, n = s:gsub("compile #", "")
    assert.are.equal(2, n)
    assert.truthy(s:find("-- compile #%d+\ngraph: %d+ nodes"), s)
    assert.truthy(s:find("sigmoid(%1) f32[3,11]", 1, true) or s:find("sigmoid(", 1, true), s)
    assert.truthy(s:find("// compile #%d+\ndigraph ltc {"), s)
    assert.truthy(s:find("tanh", 1, true))
    assert.falsy(s:find("relu", 1, true))
  end)
end)
