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
