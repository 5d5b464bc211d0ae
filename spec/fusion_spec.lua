-- Elementwise fusion and the vectorized loops of the CPU backend, checked against the
-- reference backend (obvious per-element loops, no fusion): random programs of elementwise
-- ops over same-shape, broadcast and scalar operands, at sizes of one block, many blocks and
-- enough blocks to be split over the worker threads.
local ltc = require "ltc"

-- A small deterministic generator (the programs must not depend on ltc's RNG).
local function lcg(seed)
  local s = seed
  return function(n)
    s = (s * 1103515245 + 12345) % 2147483648
    return s % n + 1
  end
end

-- Values in [-3, 3), a few exact zeros, as a flat table.
local function values(n, rnd)
  local t = {}
  for i = 1, n do t[i] = rnd(13) == 1 and 0 or (rnd(6000) - 3000) / 1000 end
  return t
end

local function numel(size)
  local n = 1
  for _, d in ipairs(size) do n = n * d end
  return n
end

-- The largest difference between two flat tables relative to (floor + |b|): floor 1 for
-- programs (cancellation near 0 magnifies an ulp of exp), 1e-30 for single functions.
-- NaN must match NaN, inf inf.
local function max_rel_diff(a, b, floor)
  floor = floor or 1
  local worst = 0
  for i = 1, #a do
    local x, y = a[i], b[i]
    if x ~= x or y ~= y then
      if (x ~= x) ~= (y ~= y) then return math.huge end
    elseif x == math.huge or x == -math.huge or y == math.huge or y == -math.huge then
      if x ~= y then return math.huge end
    else
      local d = math.abs(x - y) / (floor + math.abs(y))
      if d > worst then worst = d end
    end
  end
  return worst
end

local unary = {
  function(x) return x:relu() end,
  function(x) return -x end,
  function(x) return (x * 0.25):exp() end,
  function(x) return x:abs():log1p() end,
  function(x) return x:tanh() end,
  function(x) return x:sigmoid() end,
  function(x) return x:abs():sqrt() end,
  function(x) return x * x end,
  function(x) return x:sin() end,
  function(x) return x:clamp(-1, 1.5) end,
  function(x) return (x:abs() + 1):log() end,
  function(x) return x:gelu() end,
  function(x) return x:leaky_relu(0.1) end,
}
local binary = {
  function(x, y) return x + y end,
  function(x, y) return x - y end,
  function(x, y) return x * y end,
  function(x, y) return x / (y:abs() + 0.5) end,
  function(x, y) return ltc.maximum(x, y) end,
  function(x, y) return ltc.where(x:gt(y), x, y * 2) end,
}

-- A random program: `steps` ops over the inputs (tensors of `size` and broadcastable
-- shapes, Lua numbers), returning the last value and one intermediate (a second output).
local function program(rnd, steps)
  local ops = {}
  for i = 1, steps do
    local kind = rnd(3)
    if kind == 1 then ops[i] = { "u", rnd(#unary), rnd(i + 2) }
    else ops[i] = { "b", rnd(#binary), rnd(i + 2), rnd(i + 2), rnd(4) == 1 and rnd(5) } end
  end
  return function(ins)
    local vals = { ins[1], ins[2], ins[3] }
    for i, op in ipairs(ops) do
      local a = vals[math.min(op[3], #vals)]
      if op[1] == "u" then
        vals[#vals + 1] = unary[op[2]](a)
      else
        -- a Lua number operand: only with + - * (the others call methods on it)
        local b = op[5] and (op[5] - 3) * 0.5 or vals[math.min(op[4], #vals)]
        vals[#vals + 1] = binary[op[5] and (op[2] - 1) % 3 + 1 or op[2]](a, b)
      end
    end
    return vals[#vals], vals[4 + (steps // 2)]
  end
end

local function run(backend, fn, datas, sizes)
  ltc.set_backend(backend)
  local ins = {}
  for i, d in ipairs(datas) do ins[i] = ltc.tensor(d):view(sizes[i]) end
  local y1, y2 = fn(ins)
  return y1:view(-1):totable(), y2:view(-1):totable()
end

-- Program fn on inputs of shapes sh (values from rnd) gives the reference backend's values
-- on the CPU backend.
local function check_program(fn, sh, rnd)
  local datas = {}
  for i, s in ipairs(sh) do datas[i] = values(numel(s), rnd) end
  local c1, c2 = run("cpu", fn, datas, sh)
  local r1, r2 = run("ref", fn, datas, sh)
  assert.are.equal(#r1, #c1)
  assert.is_true(max_rel_diff(c1, r1) < 1e-5, "first output differs")
  assert.is_true(max_rel_diff(c2, r2) < 1e-5, "second output differs")
end

describe("elementwise fusion", function()
  after_each(function() ltc.set_backend("cpu") end)

  local shapes = {
    { { 7, 5 }, { 7, 5 }, { 5 } },
    { { 3, 1, 4 }, { 3, 2, 4 }, { 2, 1 } },
    { { 2500 }, { 2500 }, { 1 } },              -- two blocks
    { { 1100, 257 }, { 1100, 1 }, { 257 } },    -- many blocks, threads, broadcasts
    { { 9000 }, {}, { 9000 } },                 -- a 0-d operand
  }
  for si, sh in ipairs(shapes) do
    for seed = 1, 6 do
      it(string.format("matches the reference backend: shapes %d, program %d", si, seed), function()
        local rnd = lcg(seed * 7919 + si)
        check_program(program(rnd, 4 + rnd(8)), sh, rnd)
      end)
    end
  end

  -- Without fusion every op runs its own generated kernel; a 0-d or broadcast operand is
  -- expanded into blocks of equal values so the loop takes its unit-stride path. Sizes
  -- around and across the block (256 elements), odd lengths, attributes (clamp, leaky_relu).
  it("unfused kernels with 0-d and broadcast operands match the reference backend", function()
    local saved = ltc.config.LTC_FUSION
    ltc.config.LTC_FUSION = 0
    local ok, err = pcall(function()
      for _, sh in ipairs {
        { { 33 }, {}, { 33 } }, { { 257 }, {}, { 1 } }, { { 1000 }, { 1 }, {} },
        { { 7, 300 }, { 7, 1 }, { 300 } }, { { 5, 1, 513 }, { 1, 3, 1 }, {} },
      } do
        for seed = 1, 4 do
          local rnd = lcg(seed * 31 + #sh[1])
          check_program(program(rnd, 3 + rnd(5)), sh, rnd)
        end
        ltc.set_backend("cpu")
        local x = ltc.tensor(values(numel(sh[1]), lcg(5))):view(sh[1])
        local want = {}
        for i, v in ipairs(x:view(-1):totable()) do want[i] = v > 0.5 and 1 or 0 end
        assert.are.same(want, x:gt(0.5):to("float32"):view(-1):totable())
      end
    end)
    ltc.config.LTC_FUSION = saved
    ltc.set_backend("cpu")
    assert(ok, err)
  end)

  it("runs a chain as one step with no full-size temporaries", function()
    local a, b, c = ltc.randn(4096), ltc.randn(4096), ltc.randn(4096)
    ltc.sync()
    local y = (a * b + c):relu() * 0.5 + (-a):exp()
    local text = ltc.debug.backend_text(y)
    assert.truthy(text:find("fused%(mul, add, relu, mul, neg, exp, add%)"), text)
    assert.truthy(text:find("1 steps"), text)
    assert.truthy(text:find("arena 0 bytes"), text)
  end)

  it("stores an intermediate that is also a result, and reads it in later steps", function()
    local a = ltc.tensor({ 1, -2, 3, -4 })
    local h = (a * 2):relu()
    local y = h + 1
    local s = h:sum()
    assert.are.same({ 2, 0, 6, 0 }, h:totable())
    assert.are.same({ 3, 1, 7, 1 }, y:totable())
    assert.are.equal(8, s:item())
  end)

  it("fuses a dtype conversion: relu's backward mask (gt, to, mul) is one step", function()
    local a, g = ltc.tensor({ 1, -2, 3, -4, 0 }), ltc.tensor({ 10, 20, 30, 40, 50 })
    local y = a:gt(0):float() * g
    local text = ltc.debug.backend_text(y)
    assert.truthy(text:find("fused%(gt, to, mul%)"), text)
    assert.truthy(text:find("1 steps"), text)
    assert.are.same({ 10, 0, 30, 0, 0 }, y:totable())
  end)

  -- Tensor.to's rules, from the values (not from ltc): float to integer truncates toward
  -- zero, anything to bool is x ~= 0, float32 rounds to nearest.
  local function f32(v) return string.unpack("f", string.pack("f", v)) end
  local function convert(v, src, dst)
    if src == "bool" then v = v and 1 or 0 end
    if dst == "bool" then return v ~= 0 end
    if dst == "int32" or dst == "int64" then
      return math.tointeger(v >= 0 and math.floor(v) or math.ceil(v))
    end
    return dst == "float32" and f32(v) or v
  end
  local sources = {
    float32 = { -2.75, -0.5, 0, 0.5, 3.9, 7, -100000.25, 1e-3 },
    float64 = { -2.75, -0.5, 0, 0.5, 3.9, 7, -100000.25, 1e-300 },
    int32 = { -3, -1, 0, 1, 4, 7, -100000, 2147483647 },
    int64 = { -3, -1, 0, 1, 4, 7, -100000, 16777217 },
    bool = { true, false, false, true, true, true, false, true },
  }
  for _, src in ipairs { "float32", "float64", "int32", "int64", "bool" } do
    for _, dst in ipairs { "float32", "float64", "int32", "int64", "bool" } do
      it("converts " .. src .. " to " .. dst .. " alone and as a fused, threaded step", function()
        local vals = sources[src]
        local want = {}
        for i, v in ipairs(vals) do
          want[i] = convert(src == "float32" and f32(v) or v, src, dst)
        end
        assert.are.same(want, ltc.tensor(vals, src):to(dst):totable())
        -- 2^18 + 8 elements: a lone conversion that large becomes a fused step of 129 blocks,
        -- split over the threads
        local N = 262152
        local many = {}
        for i = 1, N do many[i] = vals[(i - 1) % 8 + 1] end
        local big = ltc.tensor(many, src)
        local y = big:to(dst)
        local text = ltc.debug.backend_text(y)
        assert.truthy(text:find("fused%(to%)"), text)
        local got = y:totable()
        assert.are.equal(N, #got)
        for i = 1, N, 997 do assert.are.equal(want[(i - 1) % 8 + 1], got[i]) end
        assert.are.same(want, y:narrow(1, N - 7, 8):totable())
      end)
    end
  end

  it("keeps the bits of exp, log, tanh and sigmoid within a few ulp of the reference", function()
    local n = 20000
    local xs = {}
    for i = 1, n do xs[i] = (i - n / 2) / n * 40 end
    local pos = {}
    for i = 1, n do pos[i] = i / n * 100 end
    for _, case in ipairs {
      { "exp", xs }, { "log", pos }, { "tanh", xs }, { "sigmoid", xs }, { "log1p", pos },
      { "expm1", xs }, { "sin", xs }, { "cos", xs },
    } do
      local got, want = {}, {}
      for _, backend in ipairs { "cpu", "ref" } do
        ltc.set_backend(backend)
        local r = ltc.tensor(case[2])[case[1]](ltc.tensor(case[2])):totable()
        if backend == "cpu" then got = r else want = r end
      end
      -- 4 ulp of float32 is about 4.8e-7 relative
      assert.is_true(max_rel_diff(got, want, 1e-30) < 5e-7, case[1])
    end
  end)
end)

describe("reductions fused into their elementwise producers", function()
  after_each(function()
    ltc.set_backend("cpu")
    ltc.config.LTC_NUM_THREADS = 0
  end)

  -- fn(a, b) on the CPU backend (plan text, values on 1 and 4 threads) and on the reference.
  local function check(fn, size, dtype, want_fused)
    local rnd = lcg(numel(size))
    local da, db = values(numel(size), rnd), values(numel(size), rnd)
    local function run_on(backend, threads)
      ltc.set_backend(backend)
      ltc.config.LTC_NUM_THREADS = threads or 0
      local a = ltc.tensor(da, dtype):view(size)
      local b = ltc.tensor(db, dtype):view(size)
      local outs = { fn(a, b) }
      local text = backend == "cpu" and ltc.debug.backend_text(table.unpack(outs)) or ""
      local flat = {}
      for i, o in ipairs(outs) do flat[i] = o:view(-1):totable() end
      return flat, text
    end
    local cpu, text = run_on("cpu")
    local one = run_on("cpu", 1)
    local four = run_on("cpu", 4)
    local ref = run_on("ref")
    if want_fused then
      assert.truthy(text:find(want_fused, 1, true), text)
    else
      assert.falsy(text:find(" -> sum)", 1, true) or text:find(" -> mean)", 1, true), text)
    end
    for i = 1, #ref do
      assert.is_true(max_rel_diff(cpu[i], ref[i]) < 1e-5, "output " .. i .. " differs\n" .. text)
      assert.are.same(cpu[i], one[i], "1 thread")
      assert.are.same(cpu[i], four[i], "4 threads")
    end
  end

  it("sums all elements in the pass that computes them (no temporary)", function()
    check(function(a, b) return (a * b):exp():sum() end, { 37, 29 }, nil, "fused(mul, exp -> sum)")
    check(function(a, b) return (a - b):abs():mean() end, { 700, 500 }, nil, "fused(sub, abs -> mean)")
  end)

  it("reduces the last dim, in blocks of whole rows, keepdim or not", function()
    check(function(a, b) return (a + b):relu():sum(2) end, { 300, 7 }, nil, "fused(add, relu -> sum)")
    check(function(a, b) return (a * b):mean(-1, true) end, { 5, 3000 }, nil, "fused(mul -> mean)")
    check(function(a, b) return (a * b + 1):sum(3) end, { 4, 150, 1111 }, "float64", "fused(mul, add -> sum)")
  end)

  it("still stores a value that something else reads", function()
    check(function(a, b)
      local h = (a * b):tanh()
      return h:sum(2), h + 1
    end, { 64, 40 }, nil, "-> sum)")
    -- the reduced value is not the last member's: its block buffer must outlive the others
    check(function(a, b)
      local h = a * b
      local y = ((h + 1) * 0.5):exp()
      return y, h:sum() -- y first: the plan's order is mul, add, mul, exp, sum
    end, { 3000 }, nil, "fused(mul, add, mul, exp -> sum)")
  end)

  it("leaves other reductions to the reduction kernels", function()
    check(function(a, b) return (a * b):sum(1) end, { 30, 20 }) -- not the last dim
    check(function(a, b) return (a * b):sum(2) end, { 2, 20000 }) -- rows longer than 16384
    check(function(a, b) return (a:gt(b)):sum() end, { 30, 20 }) -- an integer sum
  end)
end)

describe("plan folds", function()
  after_each(function() ltc.set_backend("cpu") end)

  local function both(f)
    local r = {}
    for _, backend in ipairs { "cpu", "ref" } do
      ltc.set_backend(backend)
      ltc.manual_seed(3)
      r[backend] = f():view(-1):totable()
    end
    ltc.set_backend("cpu")
    return r.cpu, r.ref
  end

  it("folds transposes into the matmul (no transposed copy) with the reference's values", function()
    for _, case in ipairs {
      function(a, b) return a:matmul(b:t()) end,
      function(a, b) return a:t():matmul(b) end,
      function(a, b) return a:t():matmul(b:t()) end,
      function(a, b) return a:transpose(1, 2):matmul(b:transpose(-1, -2)) end,
    } do
      local c, r = both(function()
        local a, b = ltc.randn(6, 6), ltc.randn(6, 6, "float64")
        return case(a, b:float()) + case(a:double(), b):float()
      end)
      assert.is_true(max_rel_diff(c, r) < 1e-5)
    end
    local a, b = ltc.randn(5, 3), ltc.randn(4, 3)
    ltc.sync()
    local text = ltc.debug.backend_text(a:matmul(b:t()))
    assert.falsy(text:find("step 1"), text)
  end)

  it("folds a chain of transposes and a transposed product (a GEMM's gradient) into the GEMM", function()
    for _, case in ipairs {
      function(a, b) return a:matmul(b:t():t()) end, -- t(t(b)) is b
      function(a, b) return a:t():t():t():matmul(b) end,
      function(a, b) return a:matmul(b):t() end, -- (a b)^T = b^T a^T
      function(a, b) return a:t():matmul(b):t() end,
      function(a, b) return a:matmul(b:t()):t() + 1 end,
    } do
      local c, r = both(function()
        local a, b = ltc.randn(5, 5), ltc.randn(5, 5, "float64")
        return case(a, b:float()) + case(a:double(), b):float()
      end)
      assert.is_true(max_rel_diff(c, r) < 1e-5)
    end
    local a, b = ltc.randn(5, 3), ltc.randn(3, 4)
    ltc.sync()
    for _, y in ipairs { a:matmul(b:t():t()), a:matmul(b):t(), b:t():matmul(a:t()):t():t() } do
      local text = ltc.debug.backend_text(y)
      assert.falsy(text:find("step 1"), text) -- one step: the GEMM
      assert.are.same({ 5, 4 }, a:matmul(b):size())
    end
    -- a product that something else also reads stays, and its transpose is made
    local p = a:matmul(b)
    local text = ltc.debug.backend_text(p:t(), p + 1)
    assert.truthy(text:find("t%("), text)
    local got, want = (p:t() + (p + 1):t()):totable(), nil
    want = (a:matmul(b) * 2 + 1):t():contiguous():totable()
    assert.is_true(max_rel_diff(ltc.tensor(got):view(-1):totable(), ltc.tensor(want):view(-1):totable()) < 1e-5)
    -- the gradient of W in h W^T: dW = g^T h is one GEMM, no transposed copy of W or of dW
    local h, w = ltc.randn(4, 3), ltc.randn(6, 3):requires_grad_()
    ltc.sync()
    h:matmul(w:t()):sum():backward()
    text = ltc.debug.backend_text(w.grad)
    assert.falsy(text:find(" t%("), text)
  end)

  it("leaves linear's input gradient unmade when nothing reads it, with the reference's weight and bias gradients", function()
    local g = {}
    for _, backend in ipairs { "cpu", "ref" } do
      ltc.set_backend(backend)
      ltc.manual_seed(5)
      local x, w, b = ltc.randn(300, 70), ltc.randn(90, 70):requires_grad_(), ltc.randn(90):requires_grad_()
      local xg = ltc.randn(300, 70):requires_grad_() -- and one whose gradient is read
      ;(ltc.linear(x, w, b):tanh():sum() + ltc.linear(xg, w, b):sin():sum()):backward()
      g[backend] = { w.grad:view(-1):totable(), b.grad:totable(), xg.grad:view(-1):totable() }
    end
    ltc.set_backend("cpu")
    for i = 1, 3 do assert.is_true(max_rel_diff(g.cpu[i], g.ref[i]) < 1e-4) end
  end)

  it("reads through views instead of copying, and keeps a view that is a result", function()
    local x = ltc.randn(4, 6)
    ltc.sync()
    local y = x:view(24):exp() + 1
    local text = ltc.debug.backend_text(y)
    assert.falsy(text:find("view"), text)
    local v = x:view(6, 4)
    local z = (v * 2):sum()
    assert.are.same({ 6, 4 }, v:size())
    assert.is_true(math.abs(z:item() - 2 * x:sum():item()) < 1e-4)
    local c, r = both(function() local t = ltc.randn(3, 4); return t:view(4, 3):t():matmul(t:view(4, 3)) end)
    assert.is_true(max_rel_diff(c, r) < 1e-5)
  end)
end)

describe("a fused group of many members on fewer elements than a split of elements takes", function()
  after_each(function()
    ltc.set_backend("cpu")
    ltc.config.LTC_NUM_THREADS = 0
    ltc.config.LTC_GEMM_SPLIT = 2
  end)

  -- an AdamW-like update, 12+ members over 20001 elements (10 blocks): shared out over the
  -- threads by work (LTC_GEMM_SPLIT 1: always), the same bits as on one thread and within
  -- float32 rounding of the reference backend; the sum over all elements too
  it("gives one thread's bits on two threads, and the reference's values", function()
    local n = 20001
    local rnd = lcg(7)
    local dp, dg, dm, dv = values(n, rnd), values(n, rnd), values(n, rnd), values(n, rnd)
    for i = 1, n do dv[i] = math.abs(dv[i]) end
    local function run(backend, threads, split)
      ltc.set_backend(backend)
      ltc.config.LTC_NUM_THREADS, ltc.config.LTC_GEMM_SPLIT = threads, split
      local p, g, m, v = ltc.tensor(dp), ltc.tensor(dg), ltc.tensor(dm), ltc.tensor(dv)
      local m2 = m * 0.9 + g * 0.1
      local v2 = v * 0.95 + g * g * 0.05
      local p2 = p * 0.9997 - m2 / (v2:sqrt() * 1.3 + 1e-8) * 0.003
      local s = (p2 * p2):sum()
      local text = backend == "cpu" and ltc.debug.backend_text(p2, m2, v2, s) or ""
      return { p2:totable(), m2:totable(), v2:totable(), { s:item() } }, text
    end
    local one = run("cpu", 1, 1)
    local two, text = run("cpu", 2, 1)
    local timed = run("cpu", 2, 2)
    local ref = run("ref", 0, 2)
    assert.truthy(text:find("fused%(mul, mul"), text)
    for i = 1, 4 do
      assert.are.same(one[i], two[i], "output " .. i .. " on two threads")
      assert.are.same(one[i], timed[i], "output " .. i .. " timed")
      assert.is_true(max_rel_diff(one[i], ref[i]) < 1e-5, "output " .. i .. " against the reference")
    end
  end)
end)
