-- int[2] schema arguments (PyTorch's `int[2] stride=1`): conv2d, max_pool2d and avg_pool2d
-- take a number or a table of 1 or 2 integers for every pair, with PyTorch's defaults, from
-- their generated bindings (codegen/ops.yaml); a nil bias is conv2d.nobias with the later
-- arguments in their places. Expected values by hand on x = 1..16 as [1, 1, 4, 4].
local ltc = require "ltc"

local function x44() return ltc.arange(1, 17):float():view(1, 1, 4, 4) end
local function dims(t)
  local s, r = t:size(), {}
  for i = 1, #s do r[i] = s[i] end
  return r
end

describe("int[2] arguments", function()
  it("take a number, {n} or {h, w} for conv2d, with PyTorch's defaults", function()
    local x, w = x44(), ltc.ones(1, 1, 2, 2)
    local want = { { { { 14, 22 }, { 46, 54 } } } }
    assert.same(want, ltc.conv2d(x, w, nil, 2):totable())
    assert.same(want, ltc.conv2d(x, w, nil, { 2 }):totable())
    assert.same(want, x:conv2d(w, nil, { 2, 2 }, { 0, 0 }, 1, 1):totable())
    assert.same({ { { { 15, 23 }, { 47, 55 } } } }, ltc.conv2d(x, w, ltc.ones(1), 2):totable())
    -- defaults: stride 1, padding 0, dilation 1, groups 1 (3 x 3 windows of 2 x 2)
    assert.same({ 1, 1, 3, 3 }, dims(ltc.conv2d(x, w)))
    -- a pair {h, w}: stride 2 down, 1 across; padding 1 across only
    assert.same({ 1, 1, 2, 5 }, dims(ltc.conv2d(x, w, nil, { 2, 1 }, { 0, 1 })))
  end)

  it("default max_pool2d and avg_pool2d's stride to kernel_size", function()
    local x = x44()
    assert.same({ { { { 6, 8 }, { 14, 16 } } } }, ltc.max_pool2d(x, 2):totable())
    assert.same({ { { { 6, 7, 8 }, { 10, 11, 12 }, { 14, 15, 16 } } } },
      ltc.max_pool2d(x, 2, 1):totable())
    assert.same({ { { { 3, 4, 5, 6 }, { 11, 12, 13, 14 } } } }, ltc.avg_pool2d(x, { 2, 1 }):totable())
  end)

  it("reject other values naming the op, the argument and what it got", function()
    local x, w = x44(), ltc.ones(1, 1, 2, 2)
    local function err(f, ...)
      local ok, e = pcall(f, ...)
      assert.is_false(ok)
      return e
    end
    assert.matches("conv2d: bad argument #4 'stride' %(an integer or a table of 2 integers "
      .. "expected, got string%)", err(ltc.conv2d, x, w, ltc.ones(1), "2"))
    assert.matches("max_pool2d: bad argument #2 'kernel_size' %(a number or a table of 1 or 2 "
      .. "integers expected, got a table of 3%)", err(ltc.max_pool2d, x, { 1, 2, 3 }))
    assert.matches("max_pool2d: bad argument #2 'kernel_size' %(.*got nil%)", err(ltc.max_pool2d, x))
    assert.matches("avg_pool2d: bad argument #3 'stride' %(entry 2 is string, expected an "
      .. "integer%)", err(ltc.avg_pool2d, x, 2, { 1, "a" }))
    assert.matches("conv2d: bad argument #3 %(ltc.Tensor expected, got table%)",
      err(ltc.conv2d, x, w, { 1, 1 }))
    -- the runtime is still usable
    assert.same({ { { { 6, 8 }, { 14, 16 } } } }, ltc.max_pool2d(x, 2):totable())
  end)
end)
