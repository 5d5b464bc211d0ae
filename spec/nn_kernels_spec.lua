-- The multi-threaded, vectorized CPU kernels of softmax, log_softmax, layer_norm and conv2d
-- against the reference backend, at shapes that split across threads and column blocks.
local ltc = require "ltc"

-- Runs fn on a backend with the same random inputs (made there from one seed).
local function run(backend, fn)
  ltc.set_backend(backend)
  ltc.manual_seed(11)
  local y = fn()
  return y:view(-1):totable()
end

local function close(cpu, ref, tol)
  assert.are.equal(#ref, #cpu)
  for i = 1, #ref do
    local a, b = cpu[i], ref[i]
    if a ~= b then -- equal infinities, or both NaN
      assert.is_true(a ~= a and b ~= b or math.abs(a - b) <= tol * (1 + math.abs(b)),
        string.format("element %d: cpu %s, ref %s", i, tostring(a), tostring(b)))
    end
  end
end

local function check(fn, tol)
  close(run("cpu", fn), run("ref", fn), tol or 1e-5)
end

describe("CPU nn kernels", function()
  after_each(function() ltc.set_backend("cpu") end)

  for _, case in ipairs {
    { { 64, 1024 }, -1 }, { { 3, 5, 7 }, 1 }, { { 3, 5, 7 }, 2 }, { { 3, 5, 7 }, 3 },
    { { 40, 700 }, 1 },      -- inner 700: several column blocks, the last one partial
    { { 2, 300, 33 }, 2 },   -- outer slices times column blocks
    { { 1, 1 }, 2 },
  } do
    local size, dim = case[1], case[2]
    local name = table.concat(size, "x") .. " along " .. dim
    it("softmax matches the reference backend: " .. name, function()
      check(function() return (ltc.randn(size) * 4):softmax(dim) end)
    end)
    it("log_softmax matches the reference backend: " .. name, function()
      check(function() return (ltc.randn(size) * 4):log_softmax(dim) end)
    end)
    it("softmax in float64 matches the reference backend: " .. name, function()
      check(function() return (ltc.randn(size, "float64") * 4):softmax(dim) end, 1e-12)
    end)
  end

  it("softmax keeps -inf, inf and NaN rows as the reference backend does", function()
    check(function()
      local x = ltc.randn(6, 40)
      local inf = 1 / 0
      x[1][3] = -inf
      x[2]:fill_(-inf)
      x[3][5] = inf
      x[4][7] = 0 / 0
      return ltc.cat({ x:softmax(2), x:log_softmax(2) })
    end)
  end)

  for _, size in ipairs { { 70, 1000 }, { 2, 3, 4 }, { 5, 1 } } do
    it("layer_norm matches the reference backend: " .. table.concat(size, "x"), function()
      check(function()
        local n = size[#size]
        local x = ltc.randn(size) * 3 + 1
        return ltc.layer_norm(x, { n }, ltc.randn(n), ltc.randn(n))
      end, 1e-4)
    end)
  end

  -- float32 conv2d at stride 1 takes the direct kernel on AVX-512 machines (LTC_CONV_DIRECT),
  -- the rest im2col tiles and OpenBLAS: each case runs both ways.
  for _, c in ipairs {
    { "batched, bias, padding 1", { 4, 6, 13, 11 }, { 5, 6, 3, 3 }, true, 1, 1, 1, 1 },
    { "stride 2, dilation 2", { 2, 4, 17, 15 }, { 3, 4, 3, 3 }, true, 2, 2, 2, 1 },
    { "groups 2", { 2, 4, 9, 9 }, { 6, 2, 3, 3 }, true, 1, 1, 1, 2 },
    { "1x1, bias", { 3, 8, 7, 7 }, { 4, 8, 1, 1 }, true, 1, 0, 1, 1 },
    { "no bias", { 2, 3, 8, 8 }, { 4, 3, 3, 3 }, false, 1, 1, 1, 1 },
    { "unbatched", { 64, 20, 20 }, { 8, 64, 3, 3 }, true, 1, 1, 1, 1 },
    -- 576 rows: column tiles of 448 positions, the last one partial and tiles starting
    -- mid-row; 900 positions are 19 direct tiles of 48, the last one partial
    { "several column tiles", { 2, 64, 30, 30 }, { 5, 64, 3, 3 }, true, 1, 1, 1, 1 },
    { "stride 2 over several column tiles", { 2, 64, 31, 29 }, { 3, 64, 3, 3 }, true, 2, 1, 1, 1 },
    { "5x3 kernel, padding 2x1, dilation 2x1", { 2, 3, 20, 24 }, { 4, 3, 5, 3 }, true, 1,
      { 2, 1 }, { 2, 1 }, 1 },
    { "padding past the kernel's reach", { 1, 2, 6, 18 }, { 3, 2, 2, 2 }, true, 1, 3, 1, 1 },
    -- column tiles of 448 positions that lie wholly in the padding rows
    { "tiles inside the padding", { 1, 64, 4, 20 }, { 2, 64, 3, 3 }, true, 1, { 30, 1 }, 1, 1 },
    { "groups 4, 3 output channels each", { 2, 8, 18, 18 }, { 12, 2, 3, 3 }, true, 1, 1, 1, 4 },
    { "rows narrower than a vector", { 2, 3, 5, 6 }, { 4, 3, 3, 3 }, true, 1, 1, 1, 1 },
    { "1x1 kernel at stride 2", { 2, 4, 9, 9 }, { 3, 4, 1, 1 }, true, 2, 0, 1, 1 },
    { "output channels past a multiple of 8", { 3, 5, 17, 19 }, { 11, 5, 3, 3 }, false, 1, 1, 1, 1 },
  } do
    for _, direct in ipairs { 1, 0 } do
      it(string.format("conv2d matches the reference backend: %s (LTC_CONV_DIRECT %d)", c[1],
        direct), function()
        local saved = ltc.config.LTC_CONV_DIRECT
        ltc.config.LTC_CONV_DIRECT = direct
        local ok, err = pcall(check, function()
          local x, w = ltc.randn(c[2]), ltc.randn(c[3])
          local b = c[4] and ltc.randn(c[3][1]) or nil
          return ltc.conv2d(x, w, b, c[5], c[6], c[7], c[8])
        end, 1e-4)
        ltc.config.LTC_CONV_DIRECT = saved
        assert(ok, err)
      end)
    end
  end

  -- conv2d's backward ops. The input gradient at stride 1 takes the direct kernel (a
  -- convolution of grad_output with the flipped weights) when there are at least 8 input
  -- channels per group, the rest GEMMs into column tiles and col2im; the weight gradient
  -- sums column tiles in 8 fixed parts. Each case runs both ways, and on 1 and 4 threads
  -- gives the same bits.
  local function out_size(n, k, s, p, d)
    return (n + 2 * p - d * (k - 1) - 1) // s + 1
  end
  local function pair(v) return type(v) == "table" and v or { v, v } end
  for _, c in ipairs {
    { "padding 1", { 4, 6, 13, 11 }, { 5, 6, 3, 3 }, 1, 1, 1, 1 },
    -- 576 rows: column tiles of 448 positions, the last one partial
    { "several column tiles", { 2, 64, 30, 30 }, { 5, 64, 3, 3 }, 1, 1, 1, 1 },
    { "stride 2 over several column tiles", { 2, 64, 31, 29 }, { 3, 64, 3, 3 }, 2, 1, 1, 1 },
    { "stride 2, dilation 2", { 2, 4, 17, 15 }, { 3, 4, 3, 3 }, 2, 2, 2, 1 },
    { "5x3 kernel, padding 2x1, dilation 2x1", { 2, 3, 20, 24 }, { 4, 3, 5, 3 }, 1,
      { 2, 1 }, { 2, 1 }, 1 },
    { "padding past the kernel's reach", { 1, 2, 6, 18 }, { 3, 2, 2, 2 }, 1, 3, 1, 1 },
    { "groups 2", { 2, 4, 9, 9 }, { 6, 2, 3, 3 }, 1, 1, 1, 2 },
    { "1x1", { 3, 8, 7, 7 }, { 4, 8, 1, 1 }, 1, 0, 1, 1 },
    { "1x1 at stride 2", { 2, 4, 9, 9 }, { 3, 4, 1, 1 }, 2, 0, 1, 1 },
    { "a batch of 7 over the threads", { 7, 5, 10, 12 }, { 4, 5, 3, 3 }, 1, 1, 1, 1 },
    -- the direct weight gradient: 3 output by 4 input channels a job, images in blocks
    -- of 8, rows in 16-lane vectors (the last one partial)
    { "a batch of 19, 7 output channels", { 19, 5, 9, 9 }, { 7, 5, 3, 3 }, 1, 1, 1, 1 },
    { "rows of two vectors, padding 2x1, dilation 1x2", { 3, 6, 11, 37 }, { 5, 6, 3, 3 }, 1,
      { 2, 1 }, { 1, 2 }, 1 },
    -- 8 and 16 input channels per group: the direct kernel
    { "8 input channels, a batch of 5", { 5, 8, 18, 18 }, { 12, 8, 3, 3 }, 1, 1, 1, 1 },
    { "16 input channels, groups 2, dilation 2", { 3, 16, 17, 19 }, { 6, 8, 3, 3 }, 1, 1, 2, 2 },
    { "16 input channels, no padding", { 2, 16, 20, 20 }, { 4, 16, 3, 3 }, 1, 0, 1, 1 },
    -- column tiles of 448 positions that lie wholly in the padding rows
    { "tiles inside the padding", { 1, 64, 4, 20 }, { 2, 64, 3, 3 }, 1, { 30, 1 }, 1, 1 },
    { "a single image and tile", { 1, 3, 5, 6 }, { 2, 3, 3, 3 }, 1, 1, 1, 1 },
  } do
    local name, xs, ws, stride, padding, dilation, groups = table.unpack(c)
    local s, p, d = pair(stride), pair(padding), pair(dilation)
    local gs = { xs[1], ws[1], out_size(xs[3], ws[3], s[1], p[1], d[1]),
                 out_size(xs[4], ws[4], s[2], p[2], d[2]) }
    local function grads(dt)
      local g, x, w = ltc.randn(gs, dt), ltc.randn(xs, dt), ltc.randn(ws, dt)
      return ltc.cat({ ltc.conv2d_backward_input(g, w, xs, s, p, d, groups):view(-1),
                       ltc.conv2d_backward_weight(g, x, ws, s, p, d, groups):view(-1) })
    end
    for _, direct in ipairs { 1, 0 } do
      for _, dt in ipairs { "float32", "float64" } do
        it(string.format("conv2d's backward ops match the reference backend: %s, %s "
          .. "(LTC_CONV_DIRECT %d)", name, dt, direct), function()
          local saved, threads = ltc.config.LTC_CONV_DIRECT, ltc.config.LTC_NUM_THREADS
          ltc.config.LTC_CONV_DIRECT = direct
          local ok, err = pcall(function()
            local fn = function() return grads(dt) end
            check(fn, dt == "float32" and 1e-4 or 1e-12)
            ltc.config.LTC_NUM_THREADS = 1
            local one = run("cpu", fn)
            ltc.config.LTC_NUM_THREADS = 4
            local four = run("cpu", fn)
            for i = 1, #one do
              assert(one[i] == four[i], string.format("element %d: %s on 1 thread, %s on 4",
                i, tostring(one[i]), tostring(four[i])))
            end
          end)
          ltc.config.LTC_CONV_DIRECT, ltc.config.LTC_NUM_THREADS = saved, threads
          assert(ok, err)
        end)
      end
    end
  end

  -- cross_entropy and its backward: rows in blocks of 1024 elements (several blocks at 300x7),
  -- rows under 64 classes reduced in scalar loops, rows over 1024 classes one at a time.
  for _, size in ipairs { { 256, 10 }, { 300, 7 }, { 3, 1 }, { 5, 63 }, { 7, 64 }, { 9, 65 },
                          { 4, 1500 } } do
    local n, c = size[1], size[2]
    for _, dt in ipairs { "float32", "float64" } do
      local name = table.concat(size, "x") .. " " .. dt
      local tol = dt == "float32" and 1e-5 or 1e-12
      local function inputs()
        local x = ltc.randn(size, dt) * 4
        local t = (ltc.arange(0, n) * 7 % c + 1):long()
        return x, t
      end
      it("cross_entropy matches the reference backend: " .. name, function()
        check(function()
          local x, t = inputs()
          return ltc.cat({ x:cross_entropy(t, 0), x:cross_entropy(t, 1):view(1),
                           x:cross_entropy(t, 2):view(1) })
        end, tol)
      end)
      it("cross_entropy_backward matches the reference backend: " .. name, function()
        check(function()
          local x, t = inputs()
          local g = ltc.randn({ n }, dt)
          return ltc.cat({ ltc.cross_entropy_backward(g, x, t, 0),
                           ltc.cross_entropy_backward(ltc.tensor(3, dt), x, t, 1),
                           ltc.cross_entropy_backward(ltc.tensor(-2, dt), x, t, 2) })
        end, tol)
      end)
    end
  end

  it("cross_entropy in float64 gives the written-out values, with int32 labels", function()
    local x = ltc.tensor({ { 1, 2, 3 }, { 4, 5, -1 } }, "float64")
    local t = ltc.tensor({ 2, 1 }, "int32")
    -- logsumexp(1, 2, 3) = 3.40760596444438, logsumexp(4, 5, -1) = 5.31507216066525
    local l1, l2 = 3.40760596444438 - 2, 5.31507216066525 - 4
    local l = x:cross_entropy(t, 0):totable()
    assert.is_true(math.abs(l[1] - l1) < 1e-12 and math.abs(l[2] - l2) < 1e-12)
    assert.is_true(math.abs(x:cross_entropy(t):item() - (l1 + l2) / 2) < 1e-12)
    local g = ltc.cross_entropy_backward(ltc.tensor(1, "float64"), x, t, 2):totable()
    -- softmax(1, 2, 3) = 0.0900305731703804, 0.244728471054798, 0.665240955774822
    local want = { { 0.0900305731703804, 0.244728471054798 - 1, 0.665240955774822 },
                   { math.exp(4 - 5.31507216066525) - 1, math.exp(5 - 5.31507216066525),
                     math.exp(-1 - 5.31507216066525) } }
    for i = 1, 2 do
      for j = 1, 3 do
        assert.is_true(math.abs(g[i][j] - want[i][j]) < 1e-12, i .. "," .. j .. ": " .. g[i][j])
      end
    end
  end)

  it("cross_entropy keeps -inf, inf and NaN rows as the reference backend does", function()
    for _, dt in ipairs { "float32", "float64" } do
      check(function()
        local x = ltc.randn({ 6, 12 }, dt)
        local inf = 1 / 0
        x[1][3] = -inf
        x[2]:fill_(-inf)
        x[3][5] = inf
        x[4][7] = 0 / 0
        x[5][1] = 0 / 0
        local t = ltc.tensor({ 1, 3, 5, 2, 4, 6 }, "int64")
        return ltc.cat({ x:cross_entropy(t, 0),
                         ltc.cross_entropy_backward(ltc.ones({ 6 }, dt), x, t, 0):view(-1) })
      end)
    end
  end)

  -- fuzz seeds 7 and 23: rows per block were 1024 / classes, a division by zero
  it("an input of no classes with a 0-d target is a label error, not a crash", function()
    local x, t = ltc.full({ 0 }, 0.0), ltc.tensor(1, "int64")
    for _, f in ipairs {
      function() return x:nll_loss(t, 2):item() end,
      function() return x:cross_entropy(t, 0):item() end,
      function() return ltc.cross_entropy_backward(ltc.tensor(1), x, t):totable() end,
      function() return ltc.nll_loss_backward(ltc.tensor(1), x, t):totable() end,
    } do
      local ok, err = pcall(f)
      assert.is_false(ok)
      assert.matches("target 1 out of range for 0 classes", err, 1, true)
    end
    collectgarbage()
  end)

  it("cross_entropy reports a label out of range in a later block of rows", function()
    local x = ltc.randn(300, 7)
    local t = (ltc.arange(0, 300) % 7 + 1):long()
    t[250] = 8
    local ok, err = pcall(function() return x:cross_entropy(t):item() end)
    assert.is_false(ok)
    assert.matches("target 8 out of range for 7 classes", err, 1, true)
    ok, err = pcall(function() return ltc.cross_entropy_backward(ltc.tensor(1), x, t):totable() end)
    assert.is_false(ok)
    assert.matches("target 8 out of range for 7 classes", err, 1, true)
    collectgarbage()
  end)

  it("conv2d's direct kernel pads a batch larger than its padded copy in several parts", function()
    -- 3 images of 4100x1024: 16 MB each padded, over the copy's 32 MB; compared with the
    -- im2col path (checked against the reference backend above) on the CPU backend
    local x, w, b = ltc.randn(3, 1, 4100, 1024), ltc.randn(2, 1, 3, 3), ltc.randn(2)
    local saved = ltc.config.LTC_CONV_DIRECT
    ltc.config.LTC_CONV_DIRECT = 1
    local direct = ltc.conv2d(x, w, b, 1, 1)
    ltc.config.LTC_CONV_DIRECT = 0
    local tiles = ltc.conv2d(x, w, b, 1, 1)
    ltc.config.LTC_CONV_DIRECT = saved
    assert.is_true((direct - tiles):abs():max():item() <= 1e-4)
    assert.are.same({ 3, 2, 4100, 1024 }, direct:size())
  end)

  it("conv2d in float64 matches the reference backend", function()
    check(function()
      local x, w = ltc.randn({ 2, 3, 9, 9 }, "float64"), ltc.randn({ 4, 3, 3, 3 }, "float64")
      return ltc.conv2d(x, w, ltc.randn({ 4 }, "float64"), 1, 1)
    end, 1e-12)
  end)
end)
