-- The CPU plan's batch steps (src/cpu/batch.c): small fused elementwise steps that make only
-- the computation's results (an optimizer's update of each parameter) run as one step whose
-- blocks the threads share. The values must be the steps' own, bit for bit, however the
-- threads share the blocks, and a step that reads a member's result must still see it.
local ltc = require "ltc"
local nn = ltc.nn

local function flat(t) return t:to("float64"):view(-1):totable() end

-- f() on one thread, two threads always split, two threads timed; restores the settings
local function each_way(f)
  local saved_t, saved_s = ltc.config.LTC_NUM_THREADS, ltc.config.LTC_GEMM_SPLIT
  local ok, err = pcall(function()
    for _, c in ipairs { { 1, 2 }, { 2, 1 }, { 2, 2 } } do
      ltc.config.LTC_NUM_THREADS, ltc.config.LTC_GEMM_SPLIT = c[1], c[2]
      f()
    end
  end)
  ltc.config.LTC_NUM_THREADS, ltc.config.LTC_GEMM_SPLIT = saved_t, saved_s
  assert(ok, err)
end

local function with_batch(on, f)
  local saved = ltc.config.LTC_BATCH_STEPS
  ltc.config.LTC_BATCH_STEPS = on
  local ok, r = pcall(f)
  ltc.config.LTC_BATCH_STEPS = saved
  assert(ok, r)
  return r
end

-- three AdamW steps of an MLP; returns the losses and every parameter's values
local function train(batched)
  return with_batch(batched, function()
    ltc.manual_seed(5)
    local model = nn.Sequential(nn.Linear(33, 70), nn.ReLU(), nn.Linear(70, 9))
    local opt = ltc.optim.AdamW(model:parameters(), { lr = 0.01 })
    local x = ltc.randn(40, 33)
    local y = (ltc.arange(0, 40) % 9 + 1):long()
    local losses, text = {}, nil
    for i = 1, 3 do
      opt:zero_grad()
      local loss = nn.functional.cross_entropy(model(x), y)
      loss:backward()
      opt:step()
      if i == 3 then text = ltc.debug.backend_text() end
      losses[i] = loss:item()
    end
    local params = {}
    for i, p in ipairs(model:parameters()) do params[i] = flat(p) end
    return { losses = losses, params = params, text = text }
  end)
end

describe("a batch step", function()
  it("runs an optimizer's updates of every parameter as one step, with the same bits", function()
    local want = train(0)
    assert.falsy(want.text:find("batch of", 1, true), want.text)
    each_way(function()
      local got = train(1)
      assert.truthy(got.text:find("batch of 4: fused(", 1, true), got.text)
      assert.are.same(want.losses, got.losses)
      assert.are.same(want.params, got.params)
    end)
  end)

  it("runs before a step that reads what a member made", function()
    each_way(function()
      local a, b = ltc.arange(1, 3001):float(), ltc.arange(1, 2001):float()
      ltc.sync()
      local y1 = a * 2 + 1        -- a result, read by c below
      local y2 = (b + 1) * 3      -- a result
      local c = y1:cumsum(1)      -- reads y1: the batch of y1's and y2's steps runs before it
      local y3 = (b * 3):sqrt()
      local text = ltc.debug.backend_text()
      local at_batch, at_cumsum = text:find("batch of 2", 1, true), text:find("cumsum", 1, true)
      assert.truthy(at_batch and at_cumsum and at_batch < at_cumsum, text)
      local v1, v2, vc = y1:totable(), y2:totable(), c:to("float64"):totable()
      assert.are.equal(3, v1[1]); assert.are.equal(6001, v1[3000])
      assert.are.equal(9, v2[2])
      assert.are.equal(3000 * 3001 + 3000, vc[3000])
      assert.is_true(math.abs(y3:to("float64"):totable()[2000] - math.sqrt(6000)) < 1e-3)
    end)
  end)

  it("takes members with more inputs and outputs than a step had room for", function()
    each_way(function()
      local ps, qs, outs = {}, {}, {}
      for i = 1, 40 do
        ps[i] = ltc.full({ 100 + i }, i)
        qs[i] = ltc.full({ 100 + i }, 2 * i)
      end
      ltc.sync()
      for i = 1, 40 do outs[i] = { ps[i] * qs[i] + 1, ps[i] - qs[i] } end
      local text = ltc.debug.backend_text()
      assert.truthy(text:find("batch of 40", 1, true), text)
      ltc.sync()
      for i = 1, 40 do
        local m, d = outs[i][1]:view(-1):totable(), outs[i][2]:view(-1):totable()
        assert.are.equal(100 + i, #m)
        assert.are.equal(2 * i * i + 1, m[1]); assert.are.equal(2 * i * i + 1, m[100 + i])
        assert.are.equal(-i, d[50])
      end
    end)
  end)

  it("is left out on the reference backend", function()
    ltc.set_backend("ref")
    local ok, err = pcall(function()
      local a, b = ltc.ones(10), ltc.ones(20)
      ltc.sync()
      local y1, y2 = a * 2, b + 1
      assert.falsy(ltc.debug.backend_text():find("batch", 1, true))
      assert.are.equal(2, y1:sum():item() / 10)
      assert.are.equal(40, y2:sum():item())
    end)
    ltc.set_backend("cpu")
    assert(ok, err)
  end)
end)
