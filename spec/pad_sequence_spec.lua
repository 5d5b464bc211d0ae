-- nn.utils.rnn.pad_sequence (PyTorch's torch.nn.utils.rnn.pad_sequence): exact values in both
-- layouts, padding on either side, dtypes, a backward through it, and errors.
local ltc = require "ltc"
local pad_sequence = ltc.nn.utils.rnn.pad_sequence

describe("nn.utils.rnn.pad_sequence", function()
  local a, b, c = ltc.tensor({ 1, 2, 3 }), ltc.tensor({ 4, 5 }), ltc.tensor({ 6 })

  it("pads [L_i] to [max L, B], or [B, max L] with batch_first", function()
    assert.are.same({ { 1, 4, 6 }, { 2, 5, 0 }, { 3, 0, 0 } }, pad_sequence({ a, b, c }):totable())
    assert.are.same({ { 1, 2, 3 }, { 4, 5, -1 }, { 6, -1, -1 } },
      pad_sequence({ a, b, c }, true, -1):totable())
    assert.are.same({ { 1, 2, 3 }, { 4, 5, 9 }, { 6, 9, 9 } },
      pad_sequence({ a, b, c }, { batch_first = true, padding_value = 9 }):totable())
    assert.are.same({ { 1, 2, 3 }, { 0, 4, 5 }, { 0, 0, 6 } },
      pad_sequence({ a, b, c }, { batch_first = true, padding_side = "left" }):totable())
    assert.are.same({ { 1 }, { 2 }, { 3 } }, pad_sequence({ a }):totable())
  end)

  it("keeps the trailing dims: [L_i, *] to [max L, B, *]", function()
    local x = ltc.tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } })
    local y = ltc.tensor({ { 7, 8 } })
    local z = ltc.zeros(0, 2) -- an empty sequence is all padding
    local out = pad_sequence({ x, y, z }, false, -1)
    assert.are.same({ 3, 3, 2 }, { out:size(1), out:size(2), out:size(3) })
    assert.are.same({ { { 1, 2 }, { 7, 8 }, { -1, -1 } }, { { 3, 4 }, { -1, -1 }, { -1, -1 } },
      { { 5, 6 }, { -1, -1 }, { -1, -1 } } }, out:totable())
    out = pad_sequence({ x, y }, true)
    assert.are.same({ { { 1, 2 }, { 3, 4 }, { 5, 6 } }, { { 7, 8 }, { 0, 0 }, { 0, 0 } } }, out:totable())
  end)

  it("gives the first sequence's dtype", function()
    local out = pad_sequence({ ltc.tensor({ 1, 2 }, "int64"), ltc.tensor({ 3.5 }) }, true, 7)
    assert.are.equal("int64", out:dtype())
    assert.are.same({ { 1, 2 }, { 3, 7 } }, out:totable())
    assert.are.equal("float64", pad_sequence({ ltc.tensor({ 1 }, "float64"), b }):dtype())
  end)

  it("is differentiable: each sequence gets the gradient of its place, the padding none", function()
    local x = ltc.tensor({ { 1, 2 }, { 3, 4 } }):requires_grad_()
    local y = ltc.tensor({ { 5, 6 } }):requires_grad_()
    local out = pad_sequence({ x, y }, false, 9) -- [2, 2, 2]: out[t][b]
    assert.are.same({ { { 1, 2 }, { 5, 6 } }, { { 3, 4 }, { 9, 9 } } }, out:totable())
    local w = ltc.arange(1, 9):reshape({ 2, 2, 2 }):float()
    local loss = (out * w):sum()
    assert.are.equal(1 * 1 + 2 * 2 + 5 * 3 + 6 * 4 + 3 * 5 + 4 * 6 + 9 * 7 + 9 * 8, loss:item())
    loss:backward()
    assert.are.same({ { 1, 2 }, { 5, 6 } }, x.grad:totable())
    assert.are.same({ { 3, 4 } }, y.grad:totable())
    -- left padding moves the gradient with the values
    x.grad, y.grad = nil, nil
    out = pad_sequence({ x, y }, { batch_first = true, padding_side = "left" }) -- [2, 2, 2]: out[b][t]
    assert.are.same({ { { 1, 2 }, { 3, 4 } }, { { 0, 0 }, { 5, 6 } } }, out:totable())
    ;(out * w):sum():backward()
    assert.are.same({ { 1, 2 }, { 3, 4 } }, x.grad:totable())
    assert.are.same({ { 7, 8 } }, y.grad:totable())
  end)

  it("raises for an empty list, mismatched trailing dims and bad options", function()
    local function raises(f, want)
      local ok, msg = pcall(f)
      assert.is_false(ok)
      assert(tostring(msg):find("pad_sequence_spec%.lua:%d+: pad_sequence: "), msg)
      assert(tostring(msg):find(want, 1, true), msg)
    end
    raises(function() pad_sequence({}) end, "empty list of sequences")
    raises(function() pad_sequence({ ltc.zeros(2, 3), ltc.zeros(4, 2) }) end,
      "sequence 2 is [4, 2], but its dims after the first must be those of sequence 1, [2, 3]")
    raises(function() pad_sequence({ ltc.zeros(2, 3), ltc.zeros(2) }) end, "sequence 2 is [2]")
    raises(function() pad_sequence({ a, ltc.tensor(1) }) end, "sequence 2 must be a tensor [L, *] of 1 dim or more, got a 0-d tensor")
    raises(function() pad_sequence({ a, "b" }) end, "sequence 2 must be a tensor [L, *] of 1 dim or more, got string")
    raises(function() pad_sequence(a) end, "bad argument #1 (a list of tensors expected, got ltc.Tensor)")
    raises(function() pad_sequence({ a }, 1) end, "batch_first must be a boolean, got number")
    raises(function() pad_sequence({ a }, false, "x") end, "padding_value must be a number, got string")
    raises(function() pad_sequence({ a }, { padding_side = "top" }) end, "padding_side must be 'left' or 'right', got 'top'")
    raises(function() pad_sequence({ a }, { total_length = 4 }) end, "unknown option 'total_length'")
  end)
end)
