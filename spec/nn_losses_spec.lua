-- ltc.nn losses against PyTorch (spec/fixtures/nn_losses.lua, from tools/gen_nn_fixtures.py):
-- values and input gradients in float64, with PyTorch's 0-based labels written 1-based.
local ltc = require "ltc"
local nn = ltc.nn
local F = nn.functional
local close = dofile("spec/support/close.lua")
local fx = dofile("spec/fixtures/nn_losses.lua")

local function T(v, dtype) return ltc.tensor(v, dtype or "float64") end

-- the fixture's options with tensors for weights and 1-based ignore_index
local function opts_of(c)
  local o = {}
  for k, v in pairs(c.opts) do
    if type(v) == "table" then o[k] = T(v)
    elseif k == "ignore_index" then o[k] = v + 1
    else o[k] = v end
  end
  return o
end

local function check(c, fn, ...)
  local x = T(c.x):requires_grad_()
  local out = fn(x, ...)
  close(c.out, type(c.out) == "table" and out:totable() or out:item(), 1e-9)
  out:sum():backward()
  close(c.grad, x.grad:totable(), 1e-9)
end

describe("cross_entropy and nll_loss", function()
  for _, name in ipairs { "ce_plain", "ce_weight", "ce_ignore", "ce_smooth", "ce_all",
    "ce_sum_weight", "ce_none_smooth", "ce_spatial", "ce_spatial_none", "ce_probs",
    "ce_probs_smooth_weight" } do
    it("matches PyTorch: " .. name, function()
      local c = fx[name]
      local t = c.int and T(c.t, "int64") or T(c.t)
      check(c, function(x) return F.cross_entropy(x, t, opts_of(c)) end)
      check(c, function(x) return nn.CrossEntropyLoss(opts_of(c))(x, t) end)
    end)
  end
  for _, name in ipairs { "nll_weight", "nll_ignore", "nll_none" } do
    it("matches PyTorch: " .. name, function()
      local c = fx[name]
      check(c, function(x) return nn.NLLLoss(opts_of(c))(x, T(c.t, "int64")) end)
    end)
  end
  it("rejects unknown options, naming them", function()
    local x, t = ltc.zeros(2, 3), ltc.tensor({ 1, 2 }, "int64")
    assert.has_error(function() F.cross_entropy(x, t, { smoothing = 0.1 }) end,
      "cross_entropy: unknown option 'smoothing' (known: ignore_index, label_smoothing, reduction, weight)")
    assert.has_error(function() nn.NLLLoss { ignore = 1 } end,
      "NLLLoss: unknown option 'ignore' (known: ignore_index, reduction, weight)")
    assert.has_error(function() F.cross_entropy(x, t, { label_smoothing = 2 }) end,
      "cross_entropy: label_smoothing must be in [0, 1], got 2")
    assert.has_error(function() F.cross_entropy(x, t, { reduction = "avg" }) end,
      "cross_entropy: reduction must be 'none', 'mean' or 'sum', not 'avg'")
    assert.has_error(function() F.cross_entropy(x, ltc.ones(2, 2), { weight = ltc.ones(3) }) end,
      "cross_entropy: input [2, 3] and target [2, 2] must have the same size")
  end)
  it("ignores every label of a batch to NaN under 'mean', as PyTorch (0/0)", function()
    local l = F.cross_entropy(ltc.zeros(2, 3), ltc.tensor({ 2, 2 }, "int64"), { ignore_index = 2 })
    assert.is_true(l:item() ~= l:item())
  end)
end)

describe("the other losses", function()
  for _, name in ipairs { "l1", "l1_sum", "smooth_l1", "smooth_l1_beta", "huber", "huber_none",
    "bce", "bce_weight", "bce_logits", "bce_logits_pw", "kl", "kl_mean", "kl_log", "mse" } do
    it("match PyTorch: " .. name, function()
      local c = fx[name]
      local fn = ({ l1 = F.l1_loss, smooth = F.smooth_l1_loss, huber = F.huber_loss,
        bce = F.binary_cross_entropy, kl = F.kl_div, mse = F.mse_loss })[name:match("^[a-z0-9]+")]
      if name:match("^smooth") then fn = F.smooth_l1_loss end
      if name:match("^bce_logits") then fn = F.binary_cross_entropy_with_logits end
      check(c, function(x) return fn(x, T(c.t), opts_of(c)) end)
    end)
  end
  it("match PyTorch as modules: BCEWithLogitsLoss(pos_weight), HuberLoss, KLDivLoss", function()
    local c = fx.bce_logits_pw
    check(c, function(x) return nn.BCEWithLogitsLoss(opts_of(c))(x, T(c.t)) end)
    c = fx.huber
    check(c, function(x) return nn.HuberLoss(opts_of(c))(x, T(c.t)) end)
    c = fx.kl
    check(c, function(x) return nn.KLDivLoss(opts_of(c))(x, T(c.t)) end)
    c = fx.smooth_l1_beta
    check(c, function(x) return nn.SmoothL1Loss(opts_of(c))(x, T(c.t)) end)
    c = fx.bce
    check(c, function(x) return nn.BCELoss()(x, T(c.t)) end)
    c = fx.l1
    check(c, function(x) return nn.L1Loss()(x, T(c.t)) end)
  end)
  for _, name in ipairs { "cosine_emb", "cosine_emb_none" } do
    it("match PyTorch: " .. name, function()
      local c = fx[name]
      check(c, function(x) return nn.CosineEmbeddingLoss(opts_of(c))(x, T(c.x2), T(c.y, "int64")) end)
    end)
  end
  it("check their options", function()
    assert.has_error(function() nn.HuberLoss { beta = 1 } end,
      "HuberLoss: unknown option 'beta' (known: delta, reduction)")
    assert.has_error(function() F.huber_loss(ltc.zeros(2), ltc.zeros(2), { delta = 0 }) end,
      "huber_loss: delta must be a number > 0, got 0")
    assert.has_error(function() F.l1_loss(ltc.zeros(2), ltc.zeros(2), 3) end,
      "l1_loss: options must be a table, not number")
  end)
end)

-- the fixtures are large Lua tables: free them after this file, so later specs that
-- collect garbage often do not walk them on every collection
teardown(function() fx = nil end)
