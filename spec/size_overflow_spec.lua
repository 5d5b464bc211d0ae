-- Sizes near the integer limits (issue 17): every op of gen/ops_meta.lua (codegen/ops.yaml)
-- is called with each size-like argument (int, int?, index, dim, int[] entries) set to
-- values near 2^31, 2^62 and math.maxinteger (and their negatives), and with every tensor
-- argument replaced by an empty tensor whose other dim is 2^31, 2^62 or math.maxinteger.
-- Each call either raises a Lua error naming the op, or returns tensors whose sizes are all
-- non-negative, whose numel is their product and whose byte count fits in int64 (the one
-- checked shape constructor, ltc_shape_check). Huge results are never computed: they are
-- closed at once (what a Lua front end made on the way is young garbage, which a young
-- collection after each call frees), and after each test no tensor is left pending that was
-- not pending before it (a full collection only when one is), before anything syncs. The
-- calls are generated from the schemas, so a new op is covered by the next build.
local ltc = require "ltc"
local calls = dofile("spec/support/op_calls.lua")
local OPS, valid_args = calls.OPS, calls.valid_args

local P31, P62, MAX, MIN = 1 << 31, 1 << 62, math.maxinteger, math.mininteger
local NEAR = { P31 - 1, P31, P31 + 1, P62 - 1, P62, P62 + 1, MAX - 1, MAX,
  -P31, -P31 - 1, -P62, MIN + 1, MIN, (1 << 32) + 1 }
local ESIZE = { float32 = 4, float64 = 8, int32 = 4, int64 = 8, bool = 1 }
local SIZE_TYPES = { int = true, ["int?"] = true, index = true, dim = true, ["dim?"] = true }

local counts = { calls = 0, errors = 0, results = 0 }

-- Checks one result's shape invariants (without computing it).
local function check_shape(where, t)
  local sizes, prod = t:size(), 1.0
  for d, s in ipairs(sizes) do
    assert(math.type(s) == "integer" and s >= 0,
      where .. ": size " .. d .. " is " .. tostring(s))
    prod = prod * s
  end
  assert(t:numel() == math.tointeger(prod) or (prod >= 2 ^ 53 and t:numel() >= 2 ^ 53),
    where .. ": numel " .. t:numel() .. " is not the product of the sizes " .. prod)
  assert(prod * ESIZE[t:dtype()] < 2 ^ 63, where .. ": the byte count overflows int64")
end

-- Runs f: a Lua error must name `name`; results must have sane shapes. Results are closed
-- and the rest collected before returning, so that no later sync computes them.
local function try(where, name, f)
  counts.calls = counts.calls + 1
  local res = table.pack(pcall(f))
  if not res[1] then
    counts.errors = counts.errors + 1
    local msg = res[2]
    assert(type(msg) == "string", where .. ": the error is not a string: " .. tostring(msg))
    local plain = msg:gsub("^[^\n:]*:%d+: ", "")
    assert(plain:find(name, 1, true),
      string.format("%s: the message does not name %q: %s", where, name, plain))
  else
    for i = 2, res.n do
      if ltc.is_tensor(res[i]) then
        counts.results = counts.results + 1
        check_shape(where, res[i])
        res[i]:close()
      end
    end
  end
  res = nil
  -- a young collection finalizes what the call made on the way (a full one, per call or
  -- per test, is slow in the whole suite's heap: 0.12 s each there)
  collectgarbage("step")
end

local call = calls.caller

local function pending() return ltc.debug.pending().pending_tensors end

-- the runtime still computes, and no huge tensor made above was left pending
local function still_works()
  local x = (ltc.tensor({ 1, 2 }) * 3 + 1):totable()
  assert(x[1] == 4 and x[2] == 7, "the runtime no longer computes")
end

describe("sizes near 2^31, 2^62 and math.maxinteger", function()
  local trim, before
  teardown(function()
    ltc.config.LTC_TRIM_GRAPH_SIZE = trim
    io.stderr:write(string.format("size_overflow_spec: %d generated calls, %d raised, %d results checked\n",
      counts.calls, counts.errors, counts.results))
  end)
  -- no trim sync may compute a huge result that a young collection left alive
  setup(function()
    trim = ltc.config.LTC_TRIM_GRAPH_SIZE
    ltc.config.LTC_TRIM_GRAPH_SIZE = 0
    collectgarbage()
    before = pending()
  end)
  -- nothing a test made is left pending when still_works syncs: the young collections
  -- after each call freed it, else a full collection here does (then it must have)
  after_each(function()
    for _ = 1, 2 do -- what the last calls made survives their own young collection
      if pending() > before then collectgarbage("step") end
    end
    if pending() > before then
      collectgarbage()
      collectgarbage()
    end
    assert.is_true(pending() <= before, "tensors left pending: " .. tostring(ltc.debug.pending()))
    still_works()
  end)

  it("in every op's int, index and dim arguments raise or give sane shapes", function()
    local n = 0
    for _, op in ipairs(OPS) do
      for k, a in ipairs(op.args) do
        if SIZE_TYPES[a.type] then
          for _, v in ipairs(NEAR) do
            local args = valid_args(op)
            args[k] = v
            try(op.full_name .. " " .. a.name .. " = " .. v, op.name, call(op, args))
            n = n + 1
          end
        end
      end
    end
    assert(n > 500, "too few calls generated: " .. n)
  end)

  it("in every entry of every op's int[] arguments raise or give sane shapes", function()
    local n = 0
    for _, op in ipairs(OPS) do
      for k, a in ipairs(op.args) do
        if a.type == "int[]" then
          local base = valid_args(op)[k]
          for j = 1, #base do
            for _, v in ipairs(NEAR) do
              local args = valid_args(op)
              local list = { table.unpack(base) }
              list[j] = v
              args[k] = list
              try(op.full_name .. " " .. a.name .. "[" .. j .. "] = " .. v, op.name, call(op, args))
              n = n + 1
            end
          end
          -- every entry at once (a size whose element count overflows)
          for _, v in ipairs({ P31, P62, MAX }) do
            local args = valid_args(op)
            local list = {}
            for j = 1, #base do list[j] = v end
            args[k] = list
            try(op.full_name .. " " .. a.name .. " all " .. v, op.name, call(op, args))
            n = n + 1
          end
        end
      end
    end
    assert(n > 500, "too few calls generated: " .. n)
  end)

  it("as the other dim of empty tensor arguments raise or give sane shapes", function()
    local n = 0
    for _, op in ipairs(OPS) do
      local tensors = {}
      for k, a in ipairs(op.args) do
        if a.type == "Tensor" then tensors[#tensors + 1] = k end
      end
      for _, v in ipairs({ P31, P62, MAX }) do
        for _, layout in ipairs({ { v, 0 }, { 0, v } }) do
          if #tensors > 0 then
            -- made inside the call: a size whose non-zero product has too many bytes is
            -- refused by ltc.ones itself (then the error names "ones")
            local where = op.full_name .. " of [" .. table.concat(layout, ",") .. "] tensors"
            counts.calls = counts.calls + 1
            local ok, msg = pcall(function()
              local args = valid_args(op)
              for _, k in ipairs(tensors) do
                local dt = ltc.is_tensor(args[k]) and args[k]:dtype() or "float32"
                args[k] = ltc.ones(layout, dt)
              end
              try(where, op.name, call(op, args))
              for _, k in ipairs(tensors) do args[k]:close() end
            end)
            if not ok then
              assert(tostring(msg):find("ones: ", 1, true) and msg:find("too many bytes", 1, true),
                where .. ": " .. tostring(msg))
            end
            n = n + 1
          end
        end
      end
    end
    assert(n > 300, "too few calls generated: " .. n)
  end)
end)

describe("size overflow", function()
  after_each(still_works)

  it("narrow's bounds check does not overflow (r09)", function()
    local ok, msg = pcall(function() return ltc.zeros(5, 3):narrow(1, 2, math.maxinteger) end)
    assert.is_false(ok)
    assert.truthy(msg:find("narrow: start 2 with length 9223372036854775807 exceeds dim 1 of size 5",
      1, true))
  end)

  it("conv2d's output byte count is checked (r10)", function()
    local ok, msg = pcall(function()
      return ltc.conv2d(ltc.ones(1, 1, 1, 1), ltc.ones(1, 1, 1, 1), nil, 1, { 1073709056, 1073774592 })
    end)
    assert.is_false(ok)
    assert.truthy(msg:find("conv2d: a float32 tensor of sizes [1,1,2147418113,2147549185] has too many bytes",
      1, true))
  end)

  it("linear, addmm and broadcasting check the result's byte count (r11)", function()
    local B = 1 << 31
    local ok, msg = pcall(ltc.linear, ltc.ones(B, 0), ltc.ones(B, 0))
    assert.is_false(ok)
    assert.truthy(msg:find("linear: a float32 tensor of sizes [2147483648,2147483648] has too many bytes",
      1, true))
    ok, msg = pcall(ltc.addmm, ltc.ones(1), ltc.ones(B, 0), ltc.ones(0, B))
    assert.is_false(ok)
    assert.truthy(msg:find("addmm: ", 1, true) and msg:find("too many bytes", 1, true))
    ok, msg = pcall(ltc.add, ltc.ones(B, 1), ltc.ones(1, B))
    assert.is_false(ok)
    assert.truthy(msg:find("add: ", 1, true) and msg:find("too many bytes", 1, true))
    -- 2^62 bools are 2^62 bytes: a valid (lazy) size, as in PyTorch
    local z = ltc.ones(B, 1, "bool"):logical_and(ltc.ones(1, B, "bool"))
    assert.are.same({ B, B }, z:size())
    z:close()
  end)
end)
