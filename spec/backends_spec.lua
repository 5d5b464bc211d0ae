-- Every fixture case of tools/gen_fixtures.py (expected values from PyTorch and NumPy, in
-- spec/fixtures/*.npy), run on both backends: "cpu" (the fast one, with its eager fallback)
-- and "ref" (the reference backend). Values, dtypes and sizes must match the fixture.
local ltc = require "ltc"

-- The cases of tools/gen_fixtures.py, then those of tools/gen_fixtures_ops.py (in ops/).
local cases = {}
for _, dir in ipairs({"spec/fixtures/", "spec/fixtures/ops/"}) do
  for _, case in ipairs(dofile(dir .. "manifest.lua")) do
    case.dir = dir
    cases[#cases + 1] = case
  end
end

local close = dofile("spec/support/close.lua")

-- Runs one case on the current backend and checks every output against its fixture.
local function run(case)
  local inputs = {}
  for i, f in ipairs(case.inputs) do inputs[i] = ltc.load(case.dir .. f) end
  local fn = assert(load("local ltc, x, y, z, w = ...; return " .. case.call, case.name, "t"))
  local results = table.pack(fn(ltc, table.unpack(inputs)))
  assert.are.equal(#case.outputs, results.n, case.name .. ": number of results")
  for i, f in ipairs(case.outputs) do
    local want, got = ltc.load(case.dir .. f), results[i]
    assert.are.equal(want:dtype(), got:dtype(), case.name .. ": dtype of result " .. i)
    assert.are.same(want:size(), got:size(), case.name .. ": size of result " .. i)
    close(want:totable(), got:totable(), case.tol, case.name)
  end
end

for _, backend in ipairs({"cpu", "ref"}) do
  describe("fixtures on the " .. backend .. " backend", function()
    setup(function() ltc.set_backend(backend) end)
    teardown(function() ltc.set_backend("cpu") end)
    for _, case in ipairs(cases) do
      it(case.name .. ": " .. case.call, function() run(case) end)
    end
  end)
end

describe("the two backends", function()
  after_each(function() ltc.set_backend("cpu") end)

  it("draw the same random numbers from the same seed", function()
    ltc.manual_seed(7)
    local a = ltc.randn(3, 4):totable()
    ltc.set_backend("ref")
    ltc.manual_seed(7)
    close(a, ltc.randn(3, 4):totable(), 0, "randn")
  end)

  it("use each other's data", function()
    local x = ltc.tensor({1, 2, 3})
    ltc.set_backend("ref")
    local y = x * 2
    assert.are.equal("ref", ltc.get_backend())
    ltc.set_backend("cpu")
    assert.are.same({3, 6, 9}, (y + x):totable())
  end)

  it("run an op the CPU backend does not lower on the reference backend, counted per run", function()
    ltc.metrics.reset()
    local x = ltc.tensor({{1, 2}, {3, 4}})
    assert.are.same({{1, 2}, {4, 6}}, x:cumsum(1):totable())
    assert.are.equal(1, ltc.metrics.counter("EagerFallback::cumsum"))
    assert.are.same({{1, 3}, {3, 7}}, x:cumsum(2):totable())
    assert.are.same({{1, 3}, {3, 7}}, x:cumsum(2):totable()) -- a cached graph still counts
    assert.are.equal(3, ltc.metrics.counter("EagerFallback::cumsum"))
    assert.are.equal(0, ltc.metrics.counter("EagerFallback::add"))
    x:to("ref"):cumsum(1):totable() -- on the reference backend it is no fallback
    assert.are.equal(3, ltc.metrics.counter("EagerFallback::cumsum"))
  end)

  it("reject an unknown backend name", function()
    assert.has_error(function() ltc.set_backend("gpu") end, "set_backend: no backend named 'gpu'")
  end)
end)

describe("the backend registry", function()
  it("lists the built-in backends, cpu first", function()
    local names = ltc.backends()
    assert.are.equal("cpu", names[1])
    assert.are.equal("ref", names[2])
  end)

  it("keeps compiled graphs apart per backend (no flush on a switch)", function()
    local x = ltc.tensor({1, 2, 3})
    assert.are.same({2, 4, 6}, (x * 2):totable())
    ltc.set_backend("ref")
    assert.are.same({2, 4, 6}, (x * 2):totable())
    ltc.set_backend("cpu")
    ltc.metrics.reset()
    assert.are.same({2, 4, 6}, (x * 2):totable())
    assert.are.equal(0, ltc.metrics.counter("UncachedCompile"))
    assert.are.equal(1, ltc.metrics.counter("CachedCompile"))
  end)

  it("refuses an unknown backend by name", function()
    local ok, err = pcall(ltc.set_backend, "nope")
    assert.is_false(ok)
    assert.matches("no backend named 'nope'", err)
  end)
end)
