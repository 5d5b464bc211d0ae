-- More of ltc.nn as PyTorch has it: nn.Embedding.from_pretrained, nn.LSTM with proj_size
-- (against PyTorch 1.13: spec/fixtures/nn_more.lua from tools/gen_nn_more_fixtures.py) and
-- nn.init.orthogonal_.
local ltc = require "ltc"
local nn = ltc.nn

local function raises(f, want)
  local ok, msg = pcall(f)
  assert.is_false(ok)
  assert(tostring(msg):find(want, 1, true), msg)
  assert(tostring(msg):find("nn_more_spec%.lua:%d+:"), msg)
end

describe("nn.Embedding.from_pretrained", function()
  local w = { { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 } }

  it("looks rows up in the given weights, frozen by default", function()
    local e = nn.Embedding.from_pretrained(ltc.tensor(w))
    assert.are.equal(3, e.num_embeddings)
    assert.are.equal(3, e.embedding_dim)
    assert.are.same({ { 7, 8, 9 }, { 1, 2, 3 } }, e(ltc.tensor({ 3, 1 }, "int64")):totable())
    assert.is_false(e.weight.requires_grad)
    assert.are.equal(1, #e:parameters()) -- still a parameter, as PyTorch's
    assert.is_not_nil(e:state_dict().weight)
    local x = ltc.tensor({ 1.0 }):requires_grad_()
    local y = (e(ltc.tensor({ 2 }, "int64")) * x):sum()
    y:backward()
    assert.is_nil(e.weight.grad)
    assert.are.same({ 15 }, x.grad:totable())
  end)

  it("trains the weights with freeze = false, but not the padding row", function()
    for _, e in ipairs { nn.Embedding.from_pretrained(ltc.tensor(w), false, 2),
      nn.Embedding.from_pretrained(ltc.tensor(w), { freeze = false, padding_idx = -2 }) } do
      assert.is_true(e.weight.requires_grad and e.weight.is_leaf)
      assert.are.equal(2, e.padding_idx)
      -- the padding row is kept as given (PyTorch zeroes it only when it draws the weights)
      assert.are.same(w, e.weight:totable())
      e(ltc.tensor({ 1, 2, 2, 3 }, "int64")):sum():backward()
      assert.are.same({ { 1, 1, 1 }, { 0, 0, 0 }, { 1, 1, 1 } }, e.weight.grad:totable())
    end
  end)

  it("shares the given tensor's storage, keeps its dtype and leaves its flags alone", function()
    local t = ltc.tensor(w, "float64")
    local e = nn.Embedding.from_pretrained(t, false)
    assert.are.equal("float64", e.weight:dtype())
    assert.is_false(t.requires_grad)
    ltc.no_grad(function() e.weight[1] = 0 end)
    assert.are.same({ 0, 0, 0 }, t[1]:totable())
  end)

  it("checks its arguments", function()
    raises(function() nn.Embedding.from_pretrained(ltc.ones(3)) end,
      "Embedding.from_pretrained: embeddings must be a 2-d tensor [num_embeddings, embedding_dim], got [3]")
    raises(function() nn.Embedding.from_pretrained({ 1, 2 }) end, "must be a 2-d tensor")
    raises(function() nn.Embedding.from_pretrained(ltc.ones({ 2, 2 }, "int64")) end,
      "embeddings must be of a floating dtype, got int64")
    raises(function() nn.Embedding.from_pretrained(ltc.ones(2, 2), "yes") end,
      "freeze must be a boolean, got string")
    raises(function() nn.Embedding.from_pretrained(ltc.ones(2, 2), true, 3) end,
      "padding_idx must be in 1..2 or -2..-1 (got 3)")
    raises(function() nn.Embedding.from_pretrained(ltc.ones(2, 2), { max_norm = 1 }) end,
      "unknown option 'max_norm'")
  end)
end)

describe("nn.LSTM with proj_size", function()
  local fx = dofile("spec/fixtures/nn_more.lua")
  local close = dofile("spec/support/close.lua")
  local function T(v) return ltc.tensor(v, "float64") end

  local function run(c)
    local m = nn.LSTM(c.I, c.H, c.opts):double()
    local sd = {}
    for k, v in pairs(c.params) do sd[k] = T(v) end
    m:load_state_dict(sd)
    local x, h0, c0 = T(c.x):requires_grad_(), T(c.h0):requires_grad_(), T(c.c0):requires_grad_()
    local out, st = m(x, { h0, c0 })
    close(c.out, out:totable(), 1e-10, "out")
    close(c.hn, st[1]:totable(), 1e-10, "hn")
    close(c.cn, st[2]:totable(), 1e-10, "cn")
    ;((out * T(c.gw)):sum() + (st[1] * T(c.gh)):sum() + (st[2] * T(c.gc)):sum()):backward()
    close(c.grad_x, x.grad:totable(), 1e-10, "grad_x")
    close(c.grad_h0, h0.grad:totable(), 1e-10, "grad_h0")
    close(c.grad_c0, c0.grad:totable(), 1e-10, "grad_c0")
    close(c.grad_whr, m.weight_hr_l0.grad:totable(), 1e-10, "grad_whr")
    return m
  end

  it("matches PyTorch: two layers, outputs, final states and gradients", function()
    run(fx.lstm_proj)
  end)

  it("matches PyTorch bidirectional with batch_first", function()
    run(fx.lstm_proj_bidir_bf)
  end)

  it("has PyTorch's parameters and sizes, and h of proj_size", function()
    local m = nn.LSTM(3, 5, 2, { proj_size = 2 })
    local names = {}
    for _, np in ipairs(m:named_parameters()) do names[#names + 1] = np[1] .. "=" .. table.concat(np[2]:size(), "x") end
    table.sort(names)
    assert.are.same({ "bias_hh_l0=20", "bias_hh_l1=20", "bias_ih_l0=20", "bias_ih_l1=20",
      "weight_hh_l0=20x2", "weight_hh_l1=20x2", "weight_hr_l0=2x5", "weight_hr_l1=2x5",
      "weight_ih_l0=20x3", "weight_ih_l1=20x2" }, names)
    assert.are.equal(2, nn.LSTM(3, 5, 1, true, false, 0, false, 2).proj_size) -- positional
    local out, st = m(ltc.randn(4, 3))
    assert.are.same({ 4, 2 }, out:size())
    assert.are.same({ 2, 2 }, st[1]:size())
    assert.are.same({ 2, 5 }, st[2]:size())
    assert.truthy(tostring(m):find("proj_size=2", 1, true))
  end)

  it("checks proj_size and the states' sizes", function()
    raises(function() nn.LSTM(3, 5, { proj_size = 5 }) end, "LSTM: proj_size 5 must be smaller than hidden_size 5")
    raises(function() nn.LSTM(3, 5, { proj_size = -1 }) end, "LSTM: proj_size must be a positive integer, or 0")
    raises(function() nn.GRU(3, 5, { proj_size = 2 }) end, "unknown option 'proj_size'")
    local m = nn.LSTM(3, 5, { proj_size = 2 })
    raises(function() m(ltc.randn(4, 2, 3), { ltc.zeros(1, 2, 5), ltc.zeros(1, 2, 5) }) end,
      "LSTM: h0 has size [1, 2, 5], expected [1, 2, 2]")
    raises(function() m(ltc.randn(4, 2, 3), { ltc.zeros(1, 2, 2), ltc.zeros(1, 2, 2) }) end,
      "LSTM: c0 has size [1, 2, 2], expected [1, 2, 5]")
  end)

  teardown(function() fx = nil end)
end)

describe("nn.init.orthogonal_", function()
  -- max |a - b| over the elements
  local function maxdiff(a, b) return (a - b):abs():max():item() end

  it("fills rows <= cols with orthonormal rows: W W^T = I", function()
    for _, s in ipairs { { 3, 5 }, { 4, 4 }, { 1, 6 } } do
      local w = nn.init.orthogonal_(ltc.empty(s[1], s[2], "float64"))
      assert.is_true(maxdiff(w:matmul(w:t()), ltc.eye(s[1], s[1], "float64")) < 1e-12, s[1] .. "x" .. s[2])
    end
  end)

  it("fills rows > cols with orthonormal columns: W^T W = I", function()
    local w = nn.init.orthogonal_(ltc.empty(7, 3, "float64"))
    assert.is_true(maxdiff(w:t():matmul(w), ltc.eye(3, 3, "float64")) < 1e-12)
    local f = nn.init.orthogonal_(ltc.empty(40, 24)) -- float32
    assert.are.equal("float32", f:dtype())
    assert.is_true(maxdiff(f:t():matmul(f), ltc.eye(24)) < 1e-5)
  end)

  it("flattens the dims after the first, and scales by gain", function()
    local w = ltc.empty(4, 2, 3, 3, "float64")
    nn.init.orthogonal_(w)
    local m = w:reshape({ 4, 18 })
    assert.is_true(maxdiff(m:matmul(m:t()), ltc.eye(4, 4, "float64")) < 1e-12)
    ltc.manual_seed(5)
    local a = nn.init.orthogonal_(ltc.empty(3, 6, "float64"))
    ltc.manual_seed(5)
    local b = nn.init.orthogonal_(ltc.empty(3, 6, "float64"), 2.5)
    ltc.manual_seed(5)
    local c = nn.init.orthogonal_(ltc.empty(3, 6, "float64"), { gain = 2.5 })
    assert.is_true(maxdiff(a * 2.5, b) < 1e-12)
    assert.are.equal(0, maxdiff(b, c))
    assert.is_true(maxdiff(b:matmul(b:t()), ltc.eye(3, 3, "float64") * 6.25) < 1e-11)
    -- a fresh draw each call
    assert.is_true(maxdiff(a, nn.init.orthogonal_(ltc.empty(3, 6, "float64"))) > 0.01)
  end)

  it("writes a parameter in place, which stays a leaf", function()
    local lin = nn.Linear(5, 3)
    local p = lin.weight
    assert.is_true(rawequal(p, nn.init.orthogonal_(p)))
    assert.is_true(p.is_leaf and p.requires_grad)
    assert.is_nil(p.grad_fn)
    assert.is_true(maxdiff(p:matmul(p:t()), ltc.eye(3)) < 1e-5)
    assert.are.equal(0, nn.init.orthogonal_(ltc.empty(0, 3)):numel())
  end)

  it("checks its arguments", function()
    raises(function() nn.init.orthogonal_(ltc.empty(3)) end,
      "nn.init.orthogonal_: only tensors with 2 or more dimensions are supported, got 1-d")
    raises(function() nn.init.orthogonal_(ltc.zeros({ 2, 2 }, "int64")) end, "floating tensors only")
    raises(function() nn.init.orthogonal_(ltc.empty(2, 2), "x") end, "gain must be a number, got string")
  end)
end)
