-- ltc.nn.init, PyTorch's torch.nn.init: gains, fans, the bounds and moments of each
-- distribution (1e6 samples, tolerances of 5 standard errors or more, so that no seed
-- fails), exact fills, seeding, parameters staying leaves, and errors.
local ltc = require "ltc"
local nn = ltc.nn
local init = nn.init

local N = 1000 -- a [N, N] weight: 1e6 samples

-- mean and standard deviation of t, in float64
local function moments(t)
  local d = t:double()
  return d:mean():item(), d:std():item()
end

local function close(want, got, tol, what)
  assert(math.abs(got - want) <= tol, string.format("%s: %.6g, want %.6g +- %.3g", what, got, want, tol))
end

-- the std of N^2 samples is within 0.5% of sigma (5 standard errors: 5 / sqrt(2 N^2) < 0.0036
-- of sigma for a normal, less for a uniform); their mean within 5 sigma / N
local function check_moments(t, mean, std, what)
  local m, s = moments(t)
  close(mean, m, 5 * std / N, what .. " mean")
  close(std, s, 0.005 * std, what .. " std")
end

-- every value of t in [lo, hi] and some within 0.1% of the width of each end (of 1e6
-- uniform samples, none there has probability e^-1000)
local function check_bounds(t, lo, hi, what)
  local mn, mx = t:min():item(), t:max():item()
  local eps = 1e-6 * (hi - lo) -- float32 rounding of lo + u * (hi - lo)
  assert(mn >= lo - eps and mx <= hi + eps, string.format("%s: [%g, %g] outside [%g, %g]", what, mn, mx, lo, hi))
  local near = 1e-3 * (hi - lo)
  assert(mn < lo + near and mx > hi - near, string.format("%s: [%g, %g] does not reach the ends of [%g, %g]",
    what, mn, mx, lo, hi))
end

local function err(f, ...)
  local ok, msg = pcall(f, ...)
  assert(not ok, "no error raised")
  return tostring(msg)
end

-- the error is raised at this file's line and contains each of the plain strings
local function raises(f, ...)
  local msg = err(f)
  assert(msg:find("nn_init_spec%.lua:%d+: nn%.init%."), msg)
  for _, s in ipairs({ ... }) do assert(msg:find(s, 1, true), msg .. "\n  lacks: " .. s) end
end

describe("nn.init.calculate_gain", function()
  it("gives PyTorch's table of gains", function()
    for _, name in ipairs({ "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
      "conv_transpose2d", "conv_transpose3d", "sigmoid" }) do
      assert.are.equal(1, init.calculate_gain(name))
    end
    assert.are.equal(1.6666666666666667, init.calculate_gain("tanh"))
    assert.are.equal(1.4142135623730951, init.calculate_gain("relu"))
    assert.are.equal(1.4141428569978354, init.calculate_gain("leaky_relu"))
    assert.are.equal(1.3867504905630728, init.calculate_gain("leaky_relu", 0.2))
    assert.are.equal(1.4142135623730951, init.calculate_gain("leaky_relu", 0))
    assert.are.equal(0.75, init.calculate_gain("selu"))
  end)

  it("rejects an unknown nonlinearity and a param that is no number", function()
    raises(function() init.calculate_gain("softmax") end, "calculate_gain", "'softmax'", "leaky_relu")
    raises(function() init.calculate_gain(nil) end, "unsupported nonlinearity nil")
    raises(function() init.calculate_gain("leaky_relu", true) end, "negative_slope boolean")
  end)
end)

describe("nn.init fans", function()
  local fans = init._calculate_fan_in_and_fan_out
  it("are PyTorch's for Linear and convolution weights", function()
    local function both(t) return { fans(t) } end
    assert.are.same({ 20, 30 }, both(nn.Linear(20, 30).weight))           -- [out, in]
    assert.are.same({ 12, 24 }, both(nn.Conv1d(4, 8, 3).weight))           -- [8, 4, 3]
    assert.are.same({ 105, 560 }, both(ltc.zeros(16, 3, 5, 7)))            -- Conv2d(3, 16, (5, 7))
    assert.are.same({ 18, 72 }, both(nn.Conv2d(4, 8, 3, { groups = 2 }).weight)) -- [8, 2, 3, 3]
    assert.are.same({ 54, 36 }, both(nn.ConvTranspose2d(4, 6, 3).weight))  -- [in, out, 3, 3]
    assert.are.same({ 3 * 8, 2 * 8 }, both(ltc.zeros(2, 3, 2, 2, 2)))      -- Conv3d
  end)

  it("need 2 dims or more", function()
    raises(function() fans(ltc.zeros(5)) end, "fewer than 2 dimensions", "1-d")
    raises(function() init.xavier_uniform_(ltc.zeros(5)) end, "xavier_uniform_", "fewer than 2")
    raises(function() init.kaiming_normal_(ltc.tensor(1.5)) end, "kaiming_normal_", "0-d")
  end)
end)

describe("nn.init's uniform fills", function()
  it("stay within their bounds and reach both ends", function()
    ltc.manual_seed(0)
    local t = ltc.empty(N, N)
    check_bounds(init.uniform_(t), 0, 1, "uniform_")
    check_bounds(init.uniform_(t, -3, 5), -3, 5, "uniform_(-3, 5)")
    check_moments(t, 1, 8 / math.sqrt(12), "uniform_(-3, 5)")
    local b = math.sqrt(6 / (N + 2 * N))
    local w = ltc.empty(2 * N, N)
    check_bounds(init.xavier_uniform_(w), -b, b, "xavier_uniform_")
    check_bounds(init.xavier_uniform_(w, 2), -2 * b, 2 * b, "xavier_uniform_(gain 2)")
    -- kaiming: sqrt(3) gain / sqrt(fan)
    b = math.sqrt(3) * math.sqrt(2) / math.sqrt(N)
    check_bounds(init.kaiming_uniform_(w), -b, b, "kaiming_uniform_ (a=0: gain sqrt(2))")
    b = math.sqrt(3) * (5 / 3) / math.sqrt(2 * N)
    check_bounds(init.kaiming_uniform_(w, { mode = "fan_out", nonlinearity = "tanh" }), -b, b,
      "kaiming_uniform_ fan_out tanh")
    -- nn.Linear's own init: kaiming_uniform_ with a = sqrt(5) gives 1 / sqrt(fan_in)
    check_bounds(init.kaiming_uniform_(w, math.sqrt(5)), -1 / math.sqrt(N), 1 / math.sqrt(N),
      "kaiming_uniform_(a = sqrt(5))")
    check_moments(w, 0, 1 / math.sqrt(3 * N), "kaiming_uniform_(a = sqrt(5))")
  end)
end)

describe("nn.init's normal fills", function()
  it("have the mean and std they promise", function()
    ltc.manual_seed(1)
    local t = ltc.empty(N, N)
    check_moments(init.normal_(t), 0, 1, "normal_")
    check_moments(init.normal_(t, 2, 3), 2, 3, "normal_(2, 3)")
    check_moments(init.normal_(t, { std = 0.02 }), 0, 0.02, "normal_{std = 0.02}")
    local w = ltc.empty(N, 2 * N, 1, 1) -- a 1x1 conv: fan_in 2N, fan_out N
    check_moments(init.xavier_normal_(w), 0, math.sqrt(2 / (3 * N)), "xavier_normal_")
    check_moments(init.xavier_normal_(w, 2), 0, 2 * math.sqrt(2 / (3 * N)), "xavier_normal_(gain 2)")
    check_moments(init.kaiming_normal_(w), 0, math.sqrt(2) / math.sqrt(2 * N), "kaiming_normal_")
    check_moments(init.kaiming_normal_(w, 0, "fan_out", "relu"), 0, math.sqrt(2 / N),
      "kaiming_normal_ fan_out relu")
    check_moments(init.kaiming_normal_(w, { a = 0.2, mode = "FAN_OUT" }), 0,
      1.3867504905630728 / math.sqrt(N), "kaiming_normal_(a = 0.2, FAN_OUT)")
  end)

  it("trunc_normal_ stays within [a, b], with the truncated normal's moments", function()
    ltc.manual_seed(2)
    local t = ltc.empty(N, N)
    init.trunc_normal_(t) -- N(0, 1) on [-2, 2]: std 0.87963 (sqrt(1 - 4 phi(2) / Z))
    check_bounds(t, -2, 2, "trunc_normal_")
    check_moments(t, 0, 0.8796256610342398, "trunc_normal_")
    -- a and b are values, not counts of std: N(0.5, 2^2) on [-1, 1] is nearly uniform
    check_bounds(init.trunc_normal_(t, 0.5, 2, -1, 1), -1, 1, "trunc_normal_(0.5, 2, -1, 1)")
    check_bounds(init.trunc_normal_(t, { std = 0.02, a = -0.04, b = 0.04 }), -0.04, 0.04,
      "trunc_normal_{std = 0.02}")
    -- far in a tail: still inside
    local mn, mx = init.trunc_normal_(t, 0, 1, 3, 3.5):min():item(), t:max():item()
    assert(mn >= 3 and mx <= 3.5, mn .. " " .. mx)
  end)
end)

describe("nn.init's exact fills", function()
  it("constant_, ones_, zeros_ and eye_", function()
    assert.are.same({ 2.5, 2.5, 2.5 }, init.constant_(ltc.empty(3), 2.5):totable())
    assert.are.same({ { 1, 1 } }, init.ones_(ltc.zeros(1, 2)):totable())
    assert.are.same({ 0, 0 }, init.zeros_(ltc.ones(2, "int64")):totable())
    assert.are.same({ { 1, 0, 0, 0 }, { 0, 1, 0, 0 }, { 0, 0, 1, 0 } }, init.eye_(ltc.randn(3, 4)):totable())
    assert.are.same({ { 1, 0 }, { 0, 1 }, { 0, 0 } }, init.eye_(ltc.ones(3, 2, "int32")):totable())
  end)

  it("dirac_ makes a convolution that keeps its input", function()
    assert.are.same({ { { 0, 1, 0 }, { 0, 0, 0 } }, { { 0, 0, 0 }, { 0, 1, 0 } },
      { { 0, 0, 0 }, { 0, 0, 0 } } }, init.dirac_(ltc.randn(3, 2, 3)):totable())
    -- groups 2: in each half of the output channels, the first min(2, 1) copy an input channel
    local w = init.dirac_(ltc.randn(4, 1, 2, 3), 2)
    assert.are.same({ { { 0, 0, 0 }, { 0, 1, 0 } } }, w[1]:totable())
    assert.are.same({ { { 0, 0, 0 }, { 0, 1, 0 } } }, w[3]:totable())
    assert.are.equal(2, w:sum():item())
    local x = ltc.randn(2, 3, 5, 5)
    local conv = nn.Conv2d(3, 3, 3, { padding = 1, bias = false })
    init.dirac_(conv.weight)
    assert.are.same(x:totable(), conv(x):totable())
  end)
end)

describe("nn.init on parameters", function()
  local fills = {
    function(p) return init.uniform_(p, -1, 1) end, function(p) return init.normal_(p) end,
    function(p) return init.trunc_normal_(p, 0, 0.02) end, function(p) return init.constant_(p, 3) end,
    init.ones_, init.zeros_, init.eye_, init.xavier_uniform_, init.xavier_normal_,
    init.kaiming_uniform_, init.kaiming_normal_,
  }

  it("fill in place, return the tensor, and leave a leaf that requires grad", function()
    for i, fill in ipairs(fills) do
      local m = nn.Linear(4, 3)
      local p = m.weight
      assert.is_true(rawequal(p, fill(p)), "fill " .. i)
      assert.is_true(p.is_leaf and p.requires_grad, "fill " .. i)
      assert.is_nil(p.grad_fn, "fill " .. i)
      assert.is_true(rawequal(p, m:parameters()[1]))
      m(ltc.ones(2, 4)):sum():backward()
      assert.are.same({ 3, 4 }, { p.grad:size(1), p.grad:size(2) })
      assert.is_nil(p.grad.grad_fn)
    end
  end)

  it("write through a view into the parameter", function()
    local p = nn.Linear(2, 3).weight
    init.zeros_(p:narrow(1, 2, 1))
    init.constant_(p:narrow(1, 3, 1), 7)
    assert.are.same({ 0, 0 }, p[2]:totable())
    assert.are.same({ 7, 7 }, p[3]:totable())
    assert.is_true(p.is_leaf and p.requires_grad)
    assert.is_nil(p.grad_fn)
  end)

  it("draw from the seeded generator and keep the dtype", function()
    local function draw(fill, dtype)
      ltc.manual_seed(7)
      return fill(ltc.empty({ 5, 6 }, dtype))
    end
    for i, fill in ipairs({ fills[1], fills[2], fills[3], init.xavier_uniform_, init.xavier_normal_,
      init.kaiming_uniform_, init.kaiming_normal_ }) do
      assert.are.same(draw(fill):totable(), draw(fill):totable(), "fill " .. i)
      local a = draw(fill)
      assert.are_not.same(a:totable(), fill(ltc.empty(5, 6)):totable(), "fill " .. i)
      assert.are.equal("float64", draw(fill, "float64"):dtype())
    end
    -- the same stream as ltc.rand
    ltc.manual_seed(3)
    local u = ltc.rand(4, 4)
    ltc.manual_seed(3)
    assert.are.same((u * 2 - 1):totable(), init.uniform_(ltc.empty(4, 4), -1, 1):totable())
  end)

  it("return a tensor with no elements as it is", function()
    local t = ltc.empty(0, 3)
    for _, fill in ipairs(fills) do assert.is_true(rawequal(t, fill(t))) end
  end)
end)

describe("nn.init errors", function()
  it("name the function and the bad value", function()
    local w = ltc.empty(3, 4)
    raises(function() init.kaiming_uniform_(w, 0, "fan_avg") end, "kaiming_uniform_", "'fan_avg'",
      "fan_in, fan_out")
    raises(function() init.kaiming_normal_(w, { nonlinearity = "swish" }) end, "kaiming_normal_",
      "unsupported nonlinearity 'swish'")
    raises(function() init.kaiming_normal_(w, { nonlinearity = 3 }) end, "nonlinearity must be a string")
    raises(function() init.kaiming_uniform_(w, { gain = 2 }) end, "kaiming_uniform_", "unknown option 'gain'",
      "a, mode, nonlinearity")
    raises(function() init.xavier_normal_(w, 1, 2) end, "xavier_normal_", "at most 1 positional")
    raises(function() init.xavier_uniform_(w, "x") end, "xavier_uniform_", "gain must be a number, got string")
    raises(function() init.uniform_(w, 1, 0) end, "uniform_", "a = 1 > b = 0")
    raises(function() init.uniform_(w, 0, { a = 1 }) end, "multiple values for 'a'")
    raises(function() init.normal_(w, 0, -1) end, "normal_", "std must be >= 0, got -1")
    raises(function() init.normal_(w, 0 / 0) end, "mean must be a number, got nan")
    raises(function() init.trunc_normal_(w, 0, 1, 2, -2) end, "trunc_normal_", "a < b", "a = 2, b = -2")
    raises(function() init.trunc_normal_(w, 0, 0) end, "std must be > 0, got 0")
    raises(function() init.normal_(ltc.zeros(3, "int64")) end, "normal_", "floating tensors only, got int64")
    raises(function() init.kaiming_uniform_({ 3, 4 }) end, "kaiming_uniform_", "bad argument #1",
      "got table")
    raises(function() init.zeros_(nil) end, "zeros_", "got nil")
    raises(function() init.ones_(w, 1) end, "ones_", "takes only the tensor")
    raises(function() init.constant_(w) end, "constant_", "val must be a number, got nil")
    raises(function() init.eye_(ltc.empty(2, 2, 2)) end, "eye_", "2 dimensions", "3-d")
    raises(function() init.dirac_(ltc.empty(3, 3)) end, "dirac_", "3, 4, or 5 dimensions", "2-d")
    raises(function() init.dirac_(ltc.empty(3, 3, 3), 2) end, "dirac_", "(3)", "groups (2)")
    raises(function() init.dirac_(ltc.empty(4, 3, 3), 0) end, "groups must be a positive integer, got 0")
  end)

  it("is a table of PyTorch's functions only (the modules' internal helper is elsewhere)", function()
    assert.is_nil(init.uniform)
    for name, f in pairs(init) do
      assert.are.equal("function", type(f), name)
      assert.truthy(ltc.doc(f), name)
    end
  end)
end)
