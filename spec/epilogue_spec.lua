-- The CPU plan's GEMM epilogues (src/cpu/epilogue.c): a fused elementwise step that reads a
-- linear's result, or a linear_backward's input gradient, runs inside that step on each block
-- of rows. The values must be those of the two steps run apart (the same bits: the same loops
-- over the same GEMM result) and, within float32 rounding, the reference backend's.
local ltc = require "ltc"

local function max_rel_diff(a, b)
  local m = 0
  for i = 1, #a do
    local d = math.abs(a[i] - b[i]) / math.max(1, math.abs(b[i]))
    if d ~= d then return math.huge end
    if d > m then m = d end
  end
  assert(#a == #b, "lengths " .. #a .. " and " .. #b)
  return m
end

local function flat(t) return t:to("float64"):view(-1):totable() end

-- f(backend) on each way the CPU plan may run a GEMM (one thread; two threads with the rows
-- always split; two threads timed) and on the reference backend; restores the settings
local function ways(f)
  local saved_t, saved_s = ltc.config.LTC_NUM_THREADS, ltc.config.LTC_GEMM_SPLIT
  local r = {}
  local ok, err = pcall(function()
    for i, c in ipairs { { 1, 2 }, { 2, 1 }, { 2, 2 }, { 2, 2 } } do
      ltc.config.LTC_NUM_THREADS, ltc.config.LTC_GEMM_SPLIT = c[1], c[2]
      r[i] = f("cpu")
    end
    ltc.set_backend("ref")
    r.ref = f("ref")
  end)
  ltc.set_backend("cpu")
  ltc.config.LTC_NUM_THREADS, ltc.config.LTC_GEMM_SPLIT = saved_t, saved_s
  assert(ok, err)
  return r
end

describe("a GEMM epilogue", function()
  -- 263 x 129 x 127 multiply-adds: over LTC_GEMM_SPLIT, so with LTC_GEMM_SPLIT 1 the rows
  -- go as two uneven blocks to the two threads, each running the group on its rows
  -- (a result of 263 rows: the group runs on the row blocks; of 560, over 64K elements: after
  -- the GEMM, as its own step would)
  for _, rows in ipairs { 263, 560 } do
    it("runs relu, a comparison and ops with other operands inside the linear, with the values of the steps apart (" .. rows .. " rows)", function()
      ltc.manual_seed(11)
      local dx, dw, db, ds = ltc.randn(rows, 127), ltc.randn(129, 127), ltc.randn(129), ltc.randn(rows, 129)
      local r = ways(function(backend)
        local x, w, b, s = ltc.tensor(dx:totable()), ltc.tensor(dw:totable()), ltc.tensor(db:totable()),
          ltc.tensor(ds:totable())
        local y = ltc.linear(x, w, b)
        local r = y:relu()
        local m = r:le(0)
        local a = r * s + 0.5
        local text = backend == "cpu" and ltc.debug.backend_text(a, m) or ""
        local merged = { flat(a), flat(m) }
        -- the same ops on the same GEMM result, synced first: a step of their own
        ltc.sync()
        local r2 = y:relu()
        local m2 = r2:le(0)
        local a2 = r2 * s + 0.5
        return { merged = merged, apart = { flat(a2), flat(m2) }, text = text }
      end)
      for i = 1, 4 do
        assert.truthy(r[i].text:find("linear + fused(relu, mul, add, le)", 1, true), r[i].text)
        assert.are.same(r[i].apart, r[i].merged, "way " .. i)
        assert.is_true(max_rel_diff(r[i].merged[1], r.ref.merged[1]) < 1e-4, "way " .. i)
      end
      -- a relu mask is exact unless an element of y lies within rounding of 0
      local differ = 0
      for k, v in ipairs(r[2].merged[2]) do if v ~= r.ref.merged[2][k] then differ = differ + 1 end end
      assert.is_true(differ <= 2, differ .. " elements of y <= 0 differ from the reference")
    end)
  end

  it("runs after a linear without bias, and a group that reads another GEMM's later result goes with that one", function()
    ltc.manual_seed(12)
    local dx, dw, dv = ltc.randn(300, 96), ltc.randn(80, 96), ltc.randn(80, 96)
    local r = ways(function(backend)
      local x, w, v = ltc.tensor(dx:totable()), ltc.tensor(dw:totable()), ltc.tensor(dv:totable())
      local y, z = ltc.linear(x, w), ltc.linear(x, v)
      local out = (y:sigmoid() + z):tanh()
      local text = backend == "cpu" and ltc.debug.backend_text(out) or ""
      return { flat(out), text = text }
    end)
    for i = 1, 4 do
      local text = r[i].text
      -- the group reads z, made after y: it runs as z's linear's epilogue, not y's
      assert.truthy(text:find("step 0: linear.nobias(", 1, true), text)
      assert.truthy(text:find("step 1: linear.nobias + fused(sigmoid, add, tanh)", 1, true), text)
      assert.is_true(max_rel_diff(r[i][1], r.ref[1]) < 1e-4, "way " .. i)
      -- the ways agree within rounding, not always in bits: OpenBLAS's Haswell kernels (which
      -- OPENBLAS_CORETYPE=Haswell picks on an AVX-512 machine) round a row by its place in
      -- the call, and the split calls start at another row (300 rows as two blocks of 150)
      assert.is_true(max_rel_diff(r[i][1], r[1][1]) < 1e-5, "way " .. i .. " against one thread")
    end
  end)

  -- gelu and gelu_backward are hand-written loops (src/cpu/gelu.c) that fuse as generated ones
  it("runs gelu inside the linear and gelu_backward inside the linear_backward, with the reference's gradients", function()
    ltc.manual_seed(15)
    local dx, dw1, db1 = ltc.randn(300, 48), ltc.randn(160, 48), ltc.randn(160)
    local dw2 = ltc.randn(24, 160)
    local r = ways(function(backend)
      local x = ltc.tensor(dx:totable())
      local w1, b1 = ltc.tensor(dw1:totable()):requires_grad_(), ltc.tensor(db1:totable()):requires_grad_()
      local w2 = ltc.tensor(dw2:totable()):requires_grad_()
      local h = ltc.linear(x, w1, b1):gelu()
      local loss = ltc.linear(h, w2):tanh():sum()
      loss:backward()
      local text = backend == "cpu" and ltc.debug.backend_text(h, w1.grad, b1.grad, w2.grad) or ""
      return { flat(h), flat(w1.grad), flat(b1.grad), flat(w2.grad), text = text }
    end)
    for i = 1, 4 do
      assert.truthy(r[i].text:find("linear + fused(gelu)", 1, true), r[i].text)
      assert.truthy(r[i].text:find("linear_backward + fused(gelu_backward)", 1, true), r[i].text)
      for k = 1, 4 do
        local d = max_rel_diff(r[i][k], r.ref[k])
        assert.is_true(d < 1e-3, "way " .. i .. ", value " .. k .. ": " .. d)
      end
    end
  end)

  it("runs the relu mask of a backward inside the linear_backward that makes its gradient", function()
    ltc.manual_seed(13)
    local dx, dw1, db1 = ltc.randn(256, 64), ltc.randn(128, 64), ltc.randn(128)
    local dw2, db2 = ltc.randn(10, 128), ltc.randn(10)
    local r = ways(function(backend)
      local x = ltc.tensor(dx:totable())
      local w1, b1 = ltc.tensor(dw1:totable()):requires_grad_(), ltc.tensor(db1:totable()):requires_grad_()
      local w2, b2 = ltc.tensor(dw2:totable()):requires_grad_(), ltc.tensor(db2:totable()):requires_grad_()
      local loss = ltc.linear(ltc.linear(x, w1, b1):relu(), w2, b2):pow(2):mean()
      loss:backward()
      local text = backend == "cpu" and ltc.debug.backend_text(w1.grad, b1.grad, w2.grad, b2.grad) or ""
      return { flat(w1.grad), flat(b1.grad), flat(w2.grad), flat(b2.grad), text = text }
    end)
    for i = 1, 4 do
      assert.truthy(r[i].text:find("linear_backward + fused(where)", 1, true), r[i].text)
      for k = 1, 4 do
        assert.is_true(max_rel_diff(r[i][k], r.ref[k]) < 1e-4, "way " .. i .. ", gradient " .. k)
      end
    end
  end)

  it("leaves a group with a reduction, and every group under LTC_GEMM_EPILOGUE=0, a step of its own", function()
    ltc.manual_seed(14)
    local x, w = ltc.randn(70, 33), ltc.randn(45, 33)
    ltc.sync()
    local s = (ltc.linear(x, w) * 2):sum(2)
    local text = ltc.debug.backend_text(s)
    assert.truthy(text:find("step 1: fused(mul -> sum)", 1, true), text)
    local saved = ltc.config.LTC_GEMM_EPILOGUE
    ltc.config.LTC_GEMM_EPILOGUE = 0
    local ok, err = pcall(function()
      local t = (ltc.linear(x, w) * 3):exp() -- a new graph: compiled under the setting
      text = ltc.debug.backend_text(t)
      assert.truthy(text:find("step 1: fused(mul, exp)", 1, true), text)
      assert.is_true(max_rel_diff(flat(t), flat((ltc.linear(x, w) * 3):exp())) == 0)
    end)
    ltc.config.LTC_GEMM_EPILOGUE = saved
    assert(ok, err)
  end)
end)
