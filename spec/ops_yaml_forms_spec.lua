-- PyTorch's call forms that the generated binding takes from ops.yaml alone (no Lua wrapper
-- in lua/ltc/init.lua): randint's `int low=0` before required arguments, and the composite
-- overload div.Tensor_mode, picked by the table of its keywords (codegen/README.md).
local ltc = require "ltc"
local core = require "ltc.core"
local err = dofile("spec/support/err.lua")

describe("ops.yaml's call forms", function()
  it("leave randint's low out when the size table follows high, with a dtype or options after", function()
    ltc.manual_seed(3)
    local r = ltc.randint(4, { 500 }, "int32")
    assert.are.same({ "int32", 0, 3 }, { r:dtype(), r:min():item(), r:max():item() })
    assert.are.equal("int32", ltc.randint(4, { 2 }, { dtype = "int32" }):dtype())
    local s = ltc.randint(3, {}) -- a 0-d draw, as torch.randint(3, ())
    assert.are.same({ 0, "int64" }, { s:dim(), s:dtype() })
    assert.is_true(s:item() >= 0 and s:item() < 3)
    assert.are.same({ 2, 3 }, ltc.randint(1, 7, 2, 3):size()) -- a run of integers: low, high, sizes
    assert.matches("randint: bad argument #1 %(integer expected", err(function() return ltc.randint({ 3 }) end))
  end)

  it("reach div.Tensor_mode through div's generated dispatcher, its function in core._overloads", function()
    assert.are.equal("function", type(core.div)) -- the binding itself, no Lua wrapper
    assert.is_nil(debug.getinfo(ltc.div, "S").source:find("init.lua", 1, true))
    assert.are.equal("function", type(core._overloads["div.Tensor_mode"]))
    local x = ltc.tensor({ -7, 7, 5 }, "int32")
    local q = x:div(2, { rounding_mode = "trunc" })
    assert.are.same({ "int32", { -3, 3, 2 } }, { q:dtype(), q:totable() })
    assert.are.same({ -3.5, 3.5, 2.5 }, x:div(2, {}):totable()) -- no keyword: true division
    -- integers past 2^24 exactly (torch.div(..., rounding_mode="trunc") on int64)
    local big = ltc.tensor({ 2 ^ 40 + 6, -(2 ^ 40 + 6), 7, -7, 6, -9 }, "int64")
    local d = ltc.tensor({ 2, 2, -2, 2, -3, -4 }, "int64")
    assert.are.same({ 2 ^ 39 + 3, -(2 ^ 39 + 3), -3, -3, -2, 2 },
      big:div(d, { rounding_mode = "trunc" }):totable())
    assert.are.same({ -(2 ^ 39 + 3), 2 ^ 39 + 3, -3, 3, -3, 4 },
      big:div(-2, { rounding_mode = "trunc" }):totable())
    assert.are.same({ 11184811 }, ltc.tensor({ 33554435 }, "int32"):div(3, { rounding_mode = "trunc" }):totable())
    x:div_(2, { rounding_mode = "floor" }) -- the in-place method takes the keywords too
    assert.are.same({ -4, 3, 2 }, x:totable())
  end)

  it("raise the composite's errors and the keyword table's at the caller's line", function()
    local x = ltc.tensor({ 1.0 })
    local line = debug.getinfo(1, "l").currentline
    local ok, msg = pcall(function() local r = x:div(2, { rounding_mode = 1 }); return r end)
    assert.is_false(ok)
    assert.matches("ops_yaml_forms_spec.lua:" .. (line + 1) .. ': div: rounding_mode must be "trunc", "floor" or nil, got 1', msg)
    ok, msg = pcall(function() local r = ltc.div(x, 2, { 5 }); return r end)
    assert.matches("ops_yaml_forms_spec.lua:" .. (line + 4) .. ": div: unknown option '1' %(expected rounding_mode%)", msg)
    assert.matches("div: too many arguments", err(function() return x:div(2, {}, 3) end))
  end)
end)
