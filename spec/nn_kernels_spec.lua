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
