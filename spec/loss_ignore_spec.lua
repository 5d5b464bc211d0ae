-- Labels of -100 (PyTorch's default ignore_index) on the fused losses cross_entropy and
-- nll_loss and their backward ops (F.cross_entropy / F.nll_loss without options on [N, C]):
-- an ignored row adds nothing, "mean" divides by the rows not ignored (NaN when there are
-- none), and its gradient row is 0; on the CPU backend (its kernels apart, and the backward
-- step that writes the loss too: src/cpu/fold.c), the reference backend and OpenCL (when
-- `require "ltc.opencl"` finds a device). Expected values are PyTorch 1.13's
-- (spec/fixtures/loss_ignore.lua from tools/gen_loss_ignore_fixtures.py).
local ltc = require "ltc"
local F = ltc.nn.functional
local close = dofile("spec/support/close.lua")
local err = dofile("spec/support/err.lua")
local fx = dofile("spec/fixtures/loss_ignore.lua")

local devices = { "cpu", "ref" }
local ok_mod, ocl = pcall(require, "ltc.opencl")
if ok_mod and ocl.available() then
  ocl.open()
  devices[#devices + 1] = "opencl"
end

local codes = { none = 0, mean = 1, sum = 2 }
local names = {}
for name in pairs(fx) do names[#names + 1] = name end
table.sort(names)

-- the case's input: written out, or x[i][j] = 3 sin(0.37 i + 0.11 j) (0-based i, j)
local function input(c, dtype)
  if c.x then return ltc.tensor(c.x, dtype) end
  local x = {}
  for i = 0, c.n - 1 do
    local row = {}
    for j = 0, c.c - 1 do row[j + 1] = 3 * math.sin(0.37 * i + 0.11 * j) end
    x[i + 1] = row
  end
  return ltc.tensor(x, dtype)
end

-- the upstream gradient of the loss: a scalar (mean, sum) or one per row (none)
local function upstream(c, red, dtype)
  if red ~= "none" then return ltc.tensor(c.gout, dtype) end
  if c.x then return ltc.tensor(c.gout_none, dtype) end
  local g = {}
  for i = 0, c.n - 1 do g[i + 1] = 0.5 + math.cos(0.3 * i) end
  return ltc.tensor(g, dtype)
end

local function value(t) return t:dim() == 0 and t:item() or t:totable() end

local function check_grad(c, key, grad, tol, what)
  if c[key .. "_grad"] then return close(c[key .. "_grad"], grad:totable(), tol, what) end
  local g = grad:totable()
  for _, e in ipairs(c[key .. "_at"]) do
    close(e[3], g[e[1]][e[2]], tol, string.format("%s [%d][%d]", what, e[1], e[2]))
  end
end

local function fallbacks()
  local n = 0
  for _, op in ipairs { "cross_entropy", "cross_entropy_backward", "nll_loss", "nll_loss_backward" } do
    n = n + ltc.metrics.counter("EagerFallback::" .. op)
  end
  return n
end

describe("cross_entropy and nll_loss with labels of -100", function()
  after_each(function() ltc.set_backend("cpu") end)

  for _, dev in ipairs(devices) do
    for _, dtype in ipairs { "float64", "float32" } do
      local tol = dtype == "float64" and 1e-10 or 2e-5
      for _, name in ipairs(names) do
        it(string.format("ignore those rows as PyTorch does: %s, %s, %s", name, dtype, dev), function()
          ltc.set_backend(dev)
          local c = fx[name]
          local f0 = fallbacks()
          for _, labels in ipairs { "int64", "int32" } do
            local t = ltc.tensor(c.t, labels)
            for _, op in ipairs { "cross_entropy", "nll_loss" } do
              local short = op == "cross_entropy" and "ce" or "nll"
              for red, code in pairs(codes) do
                local key, what = short .. "_" .. red, string.format("%s %s %s", op, red, labels)
                local go = upstream(c, red, dtype)
                -- the forward and the backward op, each alone
                close(c[key], value(ltc[op](input(c, dtype), t, code)), tol, what)
                check_grad(c, key, ltc[op .. "_backward"](go, input(c, dtype), t, code), tol,
                  what .. " backward")
                -- autograd, the loss and its gradient in one graph (F's fused path on [N, C])
                local x = input(c, dtype):requires_grad_()
                local loss = x:dim() == 2 and F[op](x, t, { reduction = red }) or ltc[op](x, t, code)
                loss:backward(go)
                ltc.sync()
                close(c[key], value(loss), tol, what .. " (with its backward)")
                check_grad(c, key, x.grad, tol, what .. " grad")
              end
            end
          end
          assert.are.equal(0, fallbacks() - f0, "ran through the eager fallback")
        end)
      end
    end

    it("raise for other labels outside 1..C, -100 among them or not, on " .. dev, function()
      ltc.set_backend(dev)
      local x = ltc.zeros(4, 3)
      for _, bad in ipairs { 4, 0, -1, -99, -101 } do
        local t = ltc.tensor({ -100, 2, bad, -100 }, "int64")
        local msg = string.format("target %d out of range for 3 classes (labels are 1-based)", bad)
          :gsub("[%(%)%-]", "%%%0")
        assert.matches("cross_entropy: " .. msg, err(function() return F.cross_entropy(x, t):item() end))
        assert.matches("nll_loss: " .. msg, err(function() return F.nll_loss(x, t, { reduction = "sum" }):item() end))
        assert.matches("cross_entropy_backward: " .. msg,
          err(function() return ltc.cross_entropy_backward(ltc.tensor(1), x, t):totable() end))
        assert.matches("nll_loss_backward: " .. msg,
          err(function() return ltc.nll_loss_backward(ltc.ones(4), x, t, 0):totable() end))
      end
      -- the runtime goes on: mean over the two rows kept
      local l = F.cross_entropy(x, ltc.tensor({ -100, 2, 3, -100 }, "int64")):item()
      assert.is_true(math.abs(l - math.log(3)) < 1e-6, tostring(l))
    end)

    it("reads nothing of an input of no classes whose one label is -100, on " .. dev, function()
      -- torch: F.cross_entropy(torch.zeros(0), torch.tensor(-100)) and F.nll_loss(...) are nan
      -- (mean), 0 (sum, none); label 0 or 1 raises
      ltc.set_backend(dev)
      local x, t = ltc.zeros(0), ltc.tensor(-100, "int64")
      for _, op in ipairs { "cross_entropy", "nll_loss" } do
        local mean = ltc[op](x, t, 1):item()
        assert.is_true(mean ~= mean, op .. " mean " .. tostring(mean))
        assert.are.equal(0, ltc[op](x, t, 2):item())
        assert.are.equal(0, ltc[op](x, t, 0):item())
        assert.are.equal(0, ltc[op .. "_backward"](ltc.tensor(1), x, t, 1):numel())
        assert.matches(op .. ": target 1 out of range for 0 classes",
          err(function() return ltc[op](x, ltc.tensor(1, "int64"), 1):item() end))
      end
    end)
  end

  it("nn.CrossEntropyLoss and nn.NLLLoss without options ignore them too", function()
    local c = fx.mixed
    local x, t = ltc.tensor(c.x), ltc.tensor(c.t, "int64")
    close(c.ce_mean, ltc.nn.CrossEntropyLoss()(x, t):item(), 1e-5)
    close(c.nll_sum, ltc.nn.NLLLoss({ reduction = "sum" })(x, t):item(), 1e-5)
  end)
end)

describe("nll_loss_backward with a NaN upstream gradient", function()
  -- PyTorch selects: the gradient is -g at each row's label and exactly 0 elsewhere, so a NaN
  -- g stays at the labels (the reference backend gave NaN everywhere: 0 * NaN; fuzz seed 72)
  it("is NaN at the labels and 0 elsewhere on the CPU and the reference backend", function()
    for _, dev in ipairs { "cpu", "ref" } do
      ltc.set_backend(dev)
      local x = ltc.tensor({ { 10.0, 3.0 }, { 0.25, 0.0 } })
      local g = ltc.nll_loss_backward(ltc.tensor(0 / 0), x, ltc.tensor({ 1, 2 }, "int64"), 1):totable()
      ltc.set_backend("cpu")
      assert.is_true(g[1][1] ~= g[1][1] and g[2][2] ~= g[2][2], dev)
      assert.are.same({ 0, 0 }, { g[1][2], g[2][1] }, dev)
    end
  end)
end)
