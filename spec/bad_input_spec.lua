-- The bad-input suite: every public op function (gen/ops_meta.lua, from codegen/ops.yaml)
-- called with wrong argument types, missing and extra arguments, incompatible shapes, dims
-- and indices out of range, unsupported dtypes, NaN and infinities, 0-size tensors and
-- sizes too large to exist. Each misuse is a Lua error naming the function (and the
-- offending value); nothing crashes; afterwards the pending graph and every live tensor
-- are intact and compute correctly (DESIGN.md, "Errors and resources").
local ltc = require "ltc"

local calls = dofile("spec/support/op_calls.lua")
local OPS = calls.OPS

-- Overloads share a Lua name (max and max.dim): the fewest required arguments of any of them
-- (fewer is an error), and the most arguments (more is an error).
local MIN_REQUIRED, MAX_ARGS = {}, {}
for _, op in ipairs(OPS) do
  local req = 0
  for k, a in ipairs(op.args) do if not a.optional then req = k end end
  MIN_REQUIRED[op.name] = math.min(MIN_REQUIRED[op.name] or math.huge, req)
  MAX_ARGS[op.name] = math.max(MAX_ARGS[op.name] or 0, #op.args)
end

---------------------------------------------------------------------------------------------
-- witnesses: a pending tensor and a computed one, made before any misuse; checked after each

local W = {}
local function make_witnesses()
  W.data = ltc.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
  ltc.sync()
  W.pending = (W.data * 2 + 1):sum(2) -- {15, 33}, not computed yet
  W.view = W.data:narrow(2, 2, 2)     -- {{2, 3}, {5, 6}}
end

local function check_witnesses(where)
  local p = W.pending:totable()
  assert(p[1] == 15 and p[2] == 33,
    where .. ": a pending tensor made before the error computes wrongly: " .. p[1] .. ", " .. p[2])
  local v = W.view:totable()
  assert(v[1][1] == 2 and v[2][2] == 6, where .. ": a view made before the error is wrong")
  local d = W.data:sum():item()
  assert(d == 21, where .. ": a computed tensor changed: sum " .. d)
  -- and the runtime still works
  local x = (ltc.tensor({ 1, 2 }) + 1):totable()
  assert(x[1] == 2 and x[2] == 3, where .. ": the runtime no longer computes")
  W.pending = (W.data * 2 + 1):sum(2)
end

-- Calls f; it must raise a Lua error (a string) whose message names `name` and contains each
-- of the further strings. Then the witnesses must be intact.
local function must_fail(where, name, f, ...)
  local ok, msg = pcall(f)
  assert(not ok, where .. ": expected an error, got none")
  assert(type(msg) == "string", where .. ": the error is not a string: " .. tostring(msg))
  local plain = msg:gsub("^[^\n:]*:%d+: ", "")
  assert(plain:find(name, 1, true),
    string.format("%s: the message does not name %q: %s", where, name, plain))
  for _, s in ipairs({ ... }) do
    assert(plain:find(s, 1, true),
      string.format("%s: the message lacks %q: %s", where, s, plain))
  end
  return plain
end

-- Calls f: it may succeed (then every tensor it returns must compute: sync and read) or raise
-- a Lua error naming `name`; never crash.
local function may_fail(where, name, f)
  local res = table.pack(pcall(f))
  if not res[1] then
    local msg = res[2]
    assert(type(msg) == "string", where .. ": the error is not a string")
    local plain = msg:gsub("^[^\n:]*:%d+: ", "")
    assert(plain:find(name, 1, true),
      string.format("%s: the message does not name %q: %s", where, name, plain))
    return false, plain
  end
  for i = 2, res.n do
    local t = res[i]
    if ltc.is_tensor(t) then
      local ok, e = pcall(t.totable, t)
      assert(ok, where .. ": the result does not compute: " .. tostring(e))
    end
  end
  return true
end

---------------------------------------------------------------------------------------------
-- a valid call of every op, to perturb one argument at a time

local CNN, valid_tensor, valid_arg, valid_args = calls.CNN, calls.valid_tensor, calls.valid_arg,
  calls.valid_args

local call = calls.caller

-- Values of the wrong type for each schema type.
local WRONG = {
  Tensor = { "a string", {}, true },
  Scalar = { "a string", {}, true },
  ["Tensor[]"] = { 5, "x", { "x" } },
  ["int[]"] = { "x", { 1.5 }, { "a" } },
  dim = { "x", 1.5, {} },
  ["dim?"] = { "x", 1.5 },
  index = { "x", 1.5, {} },
  int = { "x", 1.5, {} },
  ["int?"] = { "x", 1.5 },
  float = { "x", {} },
  ["float?"] = { "x", {} },
  ScalarType = { 5, "float8", {} },
  ["ScalarType?"] = { 5, "float8" },
}

---------------------------------------------------------------------------------------------

describe("every op", function()
  setup(make_witnesses)

  it("has a valid call that the bad-input cases start from", function()
    local missing = {}
    for _, op in ipairs(OPS) do
      local ok, e = pcall(call(op, valid_args(op)))
      if not ok then missing[#missing + 1] = op.full_name .. " (" .. tostring(e) .. ")" end
    end
    assert(#missing == 0, "no valid call for: " .. table.concat(missing, "; "))
  end)

  it("rejects an argument of the wrong type, naming the op and the argument", function()
    for _, op in ipairs(OPS) do
      for k, a in ipairs(op.args) do
        for _, bad in ipairs(WRONG[a.type] or {}) do
          local args = valid_args(op)
          args[k] = bad
          -- the Tensor args of several overloads may take another overload's place
          local where = string.format("%s arg %d (%s %s) = %s", op.full_name, k, a.type, a.name,
            type(bad) == "table" and "{...}" or tostring(bad))
          local ok = pcall(call(op, args))
          if ok and not (a.type == "ScalarType?" and bad == nil) then
            error(where .. ": accepted")
          end
          must_fail(where, op.name, call(op, args))
        end
      end
      check_witnesses(op.full_name)
    end
  end)

  -- ltc.arange has a Lua signature of its own (arange(n) is arange(0, n); lua/ltc/init.lua)
  -- ltc.layer_norm and batch_norm take nil weight and bias, batch_norm also momentum (ops.lua)
  local LUA_SIGNATURE = { arange = true, layer_norm = true, batch_norm = true }

  it("rejects a missing required argument", function()
    for _, op in ipairs(OPS) do
      for k, a in ipairs(LUA_SIGNATURE[op.name] and {} or op.args) do
        if not a.optional and a.type ~= "int[]" and k <= MIN_REQUIRED[op.name] then
          local args = valid_args(op)
          must_fail(op.full_name .. " without " .. a.name, op.name, call(op, args, k - 1))
          args[k] = nil
          must_fail(op.full_name .. " with " .. a.name .. " = nil", op.name, call(op, args))
        end
      end
    end
    check_witnesses("missing")
  end)

  it("rejects extra arguments", function()
    for _, op in ipairs(OPS) do
      if LUA_SIGNATURE[op.name] or #op.args < MAX_ARGS[op.name] then goto continue end
      local args = valid_args(op)
      args[#op.args + 1] = 42
      must_fail(op.full_name .. " with an extra argument", op.name, call(op, args, #op.args + 1),
        "argument")
      ::continue::
    end
    check_witnesses("extra")
  end)

  it("rejects dims and indices out of range, naming the value", function()
    for _, op in ipairs(OPS) do
      for k, a in ipairs(op.args) do
        if a.type == "dim" or a.type == "dim?" or a.type == "index" then
          for _, bad in ipairs({ 0, 3, 9, -3, -9, math.tointeger(2 ^ 53), math.maxinteger, math.mininteger }) do
            local args = valid_args(op)
            args[k] = bad
            local ok = pcall(call(op, args))
            -- an index may be in range for some ops (dim 2 has size 3): only check failures
            if bad == 0 or math.abs(bad) >= 9 or not ok then
              must_fail(string.format("%s %s = %d", op.full_name, a.name, bad), op.name,
                call(op, args), tostring(bad))
            end
          end
        end
      end
    end
    check_witnesses("dims")
  end)

  it("rejects incompatible shapes for elementwise ops and matmul", function()
    for _, op in ipairs(OPS) do
      local n_t = 0
      for _, a in ipairs(op.args) do if a.type == "Tensor" then n_t = n_t + 1 end end
      if (op.elementwise or op.name == "matmul") and n_t >= 2 then
        local args = valid_args(op)
        if op.args[1].name ~= "condition" then args[1] = ltc.ones(2, 3) end
        args[2] = ltc.ones(4, 5)
        must_fail(op.full_name .. " with shapes [2,3] and [4,5]", op.name, call(op, args))
      end
    end
    check_witnesses("shapes")
  end)

  it("either runs or rejects every dtype of every tensor argument", function()
    for _, op in ipairs(OPS) do
      for k, a in ipairs(op.args) do
        if a.type == "Tensor" then
          for _, dt in ipairs({ "float32", "float64", "int32", "int64", "bool" }) do
            local args = valid_args(op)
            args[k] = args[k]:to(dt)
            local ok, msg = may_fail(op.full_name .. " " .. a.name .. " as " .. dt, op.name,
              call(op, args))
            if not ok then assert(msg:find(op.name, 1, true)) end
          end
        end
      end
    end
    check_witnesses("dtypes")
  end)

  it("computes or rejects NaN and infinities in float arguments and tensors", function()
    local specials = { 0 / 0, math.huge, -math.huge }
    for _, op in ipairs(OPS) do
      for k, a in ipairs(op.args) do
        if a.type == "float" or a.type == "float?" then
          for _, v in ipairs(specials) do
            local args = valid_args(op)
            args[k] = v
            may_fail(op.full_name .. " " .. a.name .. " = " .. tostring(v), op.name, call(op, args))
          end
        elseif a.type == "Tensor" and not (a.name == "index" or a.name == "target"
            or a.name == "condition" or op.name == "multinomial"
            or op.name == "assert_in_range" or op.full_name == "bernoulli") then -- values checked at run
          local args = valid_args(op)
          local t = args[k]
          if t:dtype():sub(1, 5) == "float" then
            args[k] = t * ltc.full(t:size(), ({ 0 / 0, math.huge, -math.huge })[k % 3 + 1])
            may_fail(op.full_name .. " " .. a.name .. " with NaN and inf", op.name, call(op, args))
          end
        end
      end
    end
    check_witnesses("nan")
  end)

  it("computes or rejects 0-size tensors", function()
    for _, op in ipairs(OPS) do
      local args = valid_args(op)
      local any = false
      for k, a in ipairs(op.args) do
        if a.type == "Tensor" then
          args[k] = ltc.zeros({ 0, 3 }, args[k]:dtype())
          any = true
        end
      end
      if any then may_fail(op.full_name .. " of [0,3] tensors", op.name, call(op, args)) end
    end
    check_witnesses("empty")
  end)

  it("rejects int[] sizes that are negative or too large to exist", function()
    for _, op in ipairs(OPS) do
      for k, a in ipairs(op.args) do
        if a.type == "int[]" then
          for _, bad in ipairs({ { math.tointeger(2 ^ 40), math.tointeger(2 ^ 40) }, { math.tointeger(2 ^ 62), 4 }, { -5 },
              { math.maxinteger, math.maxinteger }, { math.mininteger } }) do
            local args = valid_args(op)
            args[k] = bad
            local where = op.full_name .. " " .. a.name .. " = {" .. table.concat(bad, ", ") .. "}"
            if op.name == "permute" then may_fail(where, op.name, call(op, args))
            else must_fail(where, op.name, call(op, args)) end
          end
        end
      end
    end
    check_witnesses("sizes")
  end)
end)

describe("allocation", function()
  setup(make_witnesses)

  it("of more bytes than exist is an error at trace time", function()
    must_fail("zeros(2^40, 2^40)", "zeros", function() return ltc.zeros(math.tointeger(2 ^ 40), math.tointeger(2 ^ 40)) end)
    must_fail("ones(2^31, 2^31, 4)", "ones", function() return ltc.ones(math.tointeger(2 ^ 31), math.tointeger(2 ^ 31), 4) end)
    must_fail("full(2^62)", "full", function() return ltc.full({ math.tointeger(2 ^ 62) }, 1) end)
    must_fail("randn(2^61, 4)", "randn", function() return ltc.randn(math.tointeger(2 ^ 61), 4) end)
    must_fail("arange(0, 2^62)", "arange", function() return ltc.arange(0, math.tointeger(2 ^ 62)) end)
    check_witnesses("huge")
  end)

  it("of a huge but valid size fails cleanly at the sync, and nothing else is lost", function()
    local big = ltc.zeros(math.tointeger(2 ^ 38)) -- 1 TiB of float32: traced, not allocated
    local small = ltc.tensor({ 1, 2 }) * 3
    local ok, msg = pcall(function() return big:sum():item() end)
    assert(not ok, "a 1 TiB tensor was computed")
    assert(type(msg) == "string" and msg:find("memory"), "not an out-of-memory error: " .. tostring(msg))
    big = nil
    collectgarbage()
    local s = small:totable()
    assert.are.same({ 3, 6 }, s)
    check_witnesses("1 TiB")
  end)

  it("of a huge tensor from a Lua table is an error", function()
    must_fail("tensor of 9 nested levels", "tensor", function()
      return ltc.tensor({ { { { { { { { { 1 } } } } } } } } })
    end)
    check_witnesses("table")
  end)
end)

describe("reading back", function()
  setup(make_witnesses)

  it("rejects item() of a tensor that has not exactly one element", function()
    must_fail("item of [2,3]", "item", function() return ltc.ones(2, 3):item() end, "6")
    must_fail("item of [0]", "item", function() return ltc.zeros(0):item() end, "0")
    check_witnesses("item")
  end)

  it("rejects t[i] out of range, naming the index", function()
    local t = ltc.tensor({ 1, 2, 3 })
    must_fail("t[4]", "index", function() return t[4] end, "4")
    must_fail("t[-4]", "index", function() return t[-4] end, "-4")
    must_fail("t[0]", "index", function() return t[0] end, "0")
    must_fail("t[4] = 1", "select", function() t[4] = 1 end, "4")
    must_fail("t[1] = 'x'", "newindex", function() t[1] = "x" end)
    check_witnesses("t[i]")
  end)

  it("rejects copy_ of a source that does not broadcast", function()
    local t = ltc.zeros(2, 3)
    must_fail("copy_ [4]", "copy_", function() t:copy_(ltc.ones(4)) end)
    must_fail("copy_ string", "copy_", function() t:copy_("x") end)
    assert.are.same({ { 0, 0, 0 }, { 0, 0, 0 } }, t:totable())
    check_witnesses("copy_")
  end)
end)
