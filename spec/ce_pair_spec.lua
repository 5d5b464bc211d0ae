-- A cross_entropy and its backward in one graph run as one CPU step (src/cpu/fold.c): the
-- backward step writes the loss too. The values must be those of the two kernels apart:
-- the loss bit for bit equal to a forward-only graph's, the gradient softmax - one-hot
-- (worked out here in float64 from the same logits).
local ltc = require "ltc"
local F = ltc.nn.functional

local logits = {
  { 0.5, -1.25, 2.0, 0.0, 0.75, -0.5, 1.5 },
  { -2.0, 0.25, 0.5, 1.0, -0.75, 3.0, 0.125 },
  { 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0 },
  { 4.0, -4.0, 0.5, 2.5, -1.0, 0.0, 1.25 },
  { -0.5, 0.5, -1.5, 1.5, -2.5, 2.5, 0.0 },
}
local labels = { 3, 6, 1, 7, 4 }

-- softmax(row) - onehot(label), times scale, in float64
local function expected_grad(scale)
  local g = {}
  for i, row in ipairs(logits) do
    local mx, s = -math.huge, 0
    for _, v in ipairs(row) do mx = math.max(mx, v) end
    for _, v in ipairs(row) do s = s + math.exp(v - mx) end
    g[i] = {}
    for j, v in ipairs(row) do
      g[i][j] = (math.exp(v - mx) / s - (j == labels[i] and 1 or 0)) * scale
    end
  end
  return g
end

local close = dofile("spec/support/close.lua") -- close(expected, actual, tol)

describe("cross_entropy with its backward in one graph", function()
  local y = ltc.tensor(labels):long()

  for _, red in ipairs({ "mean", "sum", "none" }) do
    it("gives the forward-only loss bit for bit and the softmax gradient (" .. red .. ")", function()
      local alone = F.cross_entropy(ltc.tensor(logits), y, { reduction = red })
      ltc.sync()
      local x = ltc.tensor(logits):requires_grad_()
      local loss = F.cross_entropy(x, y, { reduction = red })
      -- the pending graph holds the backward step with two outputs and no forward step
      if red == "none" then loss:backward(ltc.ones(#labels)) else loss:backward() end
      local plan = ltc.debug.backend_text()
      assert.is_truthy(plan:find("cross_entropy_backward%(.-%) %-> b%d+ f32%[5,7%] %S+ b%d+ f32"), plan)
      assert.is_nil(plan:find("\n%s*step %d+: cross_entropy%("), plan)
      ltc.sync()
      assert.are.same(alone:totable(), loss:totable())
      close(expected_grad(red == "mean" and 1 / #labels or 1), x.grad:totable(), 1e-6)
    end)
  end

  it("keeps the forward apart when the backward's gradient reads the loss", function()
    local x = ltc.tensor(logits):requires_grad_()
    local loss = F.cross_entropy(x, y)
    loss:backward(loss:detach() * 2) -- the gradient needs the loss first
    ltc.sync()
    local l = F.cross_entropy(ltc.tensor(logits), y):item()
    assert.is_true(math.abs(loss:item() - l) < 1e-6)
    close(expected_grad(2 * l / #labels), x.grad:totable(), 1e-5)
  end)

  it("raises for a label out of range, naming the op, and stays usable", function()
    local x = ltc.tensor(logits):requires_grad_()
    local bad = ltc.tensor({ 3, 6, 1, 9, 4 }):long()
    local ok, err = pcall(function()
      local loss = F.cross_entropy(x, bad)
      loss:backward()
      ltc.sync()
    end)
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("target 9 out of range for 7 classes"), err)
    local loss = F.cross_entropy(ltc.tensor(logits), y)
    assert.is_true(loss:item() > 0)
  end)
end)
