-- ltc.debug.ir names parameters as ltc.debug.render does (issue 16): by their module path
-- with {names = model}, else by the tag ltc.nn gives them; other parameters keep "param #k".
local ltc = require "ltc"

describe("ltc.debug.ir", function()
  local m, y
  before_each(function()
    m = ltc.nn.Sequential(ltc.nn.Linear(3, 4), ltc.nn.ReLU(), ltc.nn.Linear(4, 2))
    ltc.sync()
    y = m(ltc.ones(5, 3))
  end)

  it("names parameters by module path with {names = model}", function()
    local text = ltc.debug.ir(y, { names = m })
    assert.truthy(text:find("\n%1 = device_data() f32[4,3] 1.weight (param #0)\n", 1, true), text)
    assert.truthy(text:find("\n%2 = device_data() f32[4] 1.bias (param #1)\n", 1, true), text)
    assert.truthy(text:find("\n%5 = device_data() f32[2,4] 3.weight (param #2)\n", 1, true), text)
    assert.truthy(text:find("\n%6 = device_data() f32[2] 3.bias (param #3)\n", 1, true), text)
  end)

  it("names them by their tag without it, and leaves other parameters numbered", function()
    local text = ltc.debug.ir(y)
    assert.truthy(text:find("f32[4,3] Linear.weight (param #0)", 1, true), text)
    local a = ltc.ones(2) * 2
    assert.truthy(ltc.debug.ir(a):find("\n%1 = device_data() f32[] param #0 = 2\n", 1, true))
  end)

  it("checks its options", function()
    local ok, msg = pcall(function() local _ = ltc.debug.ir(y, { bogus = 1 }) end)
    assert.is_false(ok)
    assert.truthy(msg:find("debug_ir_names_spec%.lua:%d+: debug.ir: unknown option 'bogus'"), msg)
  end)
end)
