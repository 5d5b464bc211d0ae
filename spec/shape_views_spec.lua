-- Writes through the views added with permute, unsqueeze, squeeze, flatten, expand, split and
-- chunk reach the base (and its other views), on both backends; expand refuses writes.
local ltc = require "ltc"

for _, backend in ipairs({ "cpu", "ref" }) do
  describe("shape views on the " .. backend .. " backend", function()
    setup(function() ltc.set_backend(backend) end)
    teardown(function() ltc.set_backend("cpu") end)

    it("permute: a write lands at the permuted position of the base", function()
      local x = ltc.zeros(2, 3, 4)
      ltc.sync()
      local p = x:permute(3, 1, 2) -- [4, 2, 3]
      p[4][2][1] = 9               -- x[2][1][4]
      assert.are.equal(9, x[2][1][4])
      assert.are.equal(9, x:sum():item())
      p:narrow(1, 1, 2):fill_(1)   -- x[:, :, 1:2]
      assert.are.same({ { 1, 1, 0, 0 }, { 1, 1, 0, 0 }, { 1, 1, 0, 0 } }, x[1]:totable())
    end)

    it("permute of a transpose, written in place, inverts both", function()
      local x = ltc.arange(24):view(2, 3, 4):float()
      ltc.sync()
      local v = x:transpose(1, 3):permute(2, 3, 1) -- [3, 2, 4]: v[j][i][k] = x[i][j][k]
      v:mul_(-1)
      assert.are.equal(-23, x[2][3][4])
      v[3][1][2] = 100
      assert.are.equal(100, x[1][3][2])
    end)

    it("unsqueeze, squeeze and flatten write back through their base's sizes", function()
      local x = ltc.zeros(2, 3)
      ltc.sync()
      x:unsqueeze(1)[1][2][3] = 4
      assert.are.equal(4, x[2][3])
      x:unsqueeze(3):squeeze(3)[1][1] = 5
      assert.are.equal(5, x[1][1])
      x:view(1, 2, 1, 3):squeeze()[2][1] = 6
      assert.are.equal(6, x[2][1])
      x:flatten():add_(1)
      assert.are.same({ { 6, 1, 1 }, { 7, 1, 5 } }, x:totable())
    end)

    it("split and chunk pieces are views of the tensor", function()
      local x = ltc.zeros(5, 2)
      ltc.sync()
      local a, b, c = table.unpack(x:split(2))
      b:fill_(1)
      c[1][2] = 3
      assert.are.same({ { 0, 0 }, { 0, 0 }, { 1, 1 }, { 1, 1 }, { 0, 3 } }, x:totable())
      local cols = x:chunk(2, 2)
      cols[1]:add_(10)
      assert.are.same({ 10, 10, 11, 11, 10 }, x:select(2, 1):totable())
      assert.are.equal(2, #a)
    end)

    it("a base written after the view was made is seen through the view", function()
      local x = ltc.zeros(2, 3)
      ltc.sync()
      local p = x:permute(2, 1)
      local f = x:flatten()
      x[2][1] = 8
      assert.are.equal(8, p[1][2])
      assert.are.equal(8, f[4])
    end)

    it("expand refuses writes and leaves the base alone", function()
      local x = ltc.tensor({ 1, 2, 3 })
      local e = x:expand(2, 3)
      local ok, err = pcall(function() e:add_(1) end)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("cannot write through an expand view", 1, true))
      assert.are.same({ 1, 2, 3 }, x:totable())
      assert.are.same({ { 1, 2, 3 }, { 1, 2, 3 } }, e:totable())
    end)

    it("rebinding the base leaves a permuted view unchanged", function()
      local x = ltc.tensor({ { 1, 2 }, { 3, 4 } })
      local p = x:permute(2, 1)
      x = x + 1
      assert.are.same({ { 1, 3 }, { 2, 4 } }, p:totable())
      assert.are.same({ { 2, 3 }, { 4, 5 } }, x:totable())
    end)
  end)
end

describe("shape op errors", function()
  it("name the op and the offending value", function()
    local x = ltc.zeros(2, 3)
    assert.has_error(function() x:permute(1, 1) end, "permute: dims: dim 1 appears twice")
    assert.has_error(function() x:permute(1) end,
      "permute: dims must name each of the 2 dims once, got 1 dims")
    assert.has_error(function() x:expand(4, 3, 2) end,
      "expand: cannot expand dim 1 of [2,3] (size 2) to 3: only size-1 dims expand")
    assert.has_error(function() ltc.cat({ x, ltc.zeros(2, 2) }) end,
      "cat: tensor 2 has size [2,2], tensor 1 [2,3]: sizes must match except in the joined dim")
    assert.has_error(function() ltc.stack({ x, ltc.zeros(3, 2) }) end,
      "stack: tensor 2 has size [3,2], tensor 1 [2,3]: sizes must match")
    assert.has_error(function() x:split({ 1, 2 }) end, "split: sizes add up to 3, but dim 1 has size 2")
    assert.has_error(function() x:unsqueeze(4) end)
    assert.has_error(function() x:flatten(2, 1) end,
      "flatten: start_dim (2) must not come after end_dim (1)")
  end)
end)
