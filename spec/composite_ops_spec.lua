-- Composite ops (issue 15: ops.yaml knows every op): the ops written in Lua over the
-- generated ones are entries of codegen/ops.yaml with `composite: <file>`, listed in
-- gen/ops_meta.lua and documented in the op reference. Each such entry must name a function
-- ltc has (or ltc.nn.functional, for a functional), defined in the file it names; and every op
-- any file of lua/ltc defines with def(...), and every functional ltc.nn.functional's files
-- define with `function F.<name>(`, must be a generated op or a composite entry, so that no op
-- is known only to Lua. A composite overload (`overload_of:`, reached through a generated op's
-- dispatcher) is registered in its file as core._overloads["<full name>"], and every such
-- registration is an entry.
local ltc = require "ltc"

local META = dofile("gen/ops_meta.lua")
local generated, composite, files, overloads = {}, {}, {}, {}
for _, op in ipairs(META) do
  if op.composite then
    if op.overload_of then
      overloads[op.full_name] = op -- a composite overload of a generated op's name
    else
      composite[op.name] = op
    end
    files[op.composite] = true
  else
    generated[op.name] = true
  end
end

local F = ltc.nn.functional

local function read(path)
  local f = assert(io.open(path))
  local s = f:read("a")
  f:close()
  return s
end

describe("composite ops", function()
  it("are listed (at least einsum, sum.dims, unique, take_along_dim)", function()
    for _, name in ipairs { "einsum", "sum", "unique", "take_along_dim", "nonzero" } do
      assert.is_truthy(composite[name], name)
    end
  end)

  it("are listed for the functionals (pad, normalize, cosine_similarity)", function()
    for _, name in ipairs { "pad", "normalize", "cosine_similarity" } do
      assert.equal("lua/ltc/nn_functional.lua", composite[name] and composite[name].composite, name)
    end
  end)

  it("name a function of ltc or ltc.nn.functional defined in the file the entry names", function()
    for _, op in ipairs(META) do
      if op.overload_of then -- its function is core._overloads[<full name>], set in its file
        local core = require "ltc.core"
        assert.equal("function", type(core._overloads[op.full_name]), op.full_name)
        assert.is_truthy(read(op.composite):find('_overloads["' .. op.full_name .. '"] =', 1, true),
          op.full_name .. " is not registered in " .. op.composite)
      end
    end
    for name, op in pairs(composite) do
      assert.is_truthy(type(ltc[name]) == "function" or type(F[name]) == "function", name)
      local src = read(op.composite)
      assert.is_truthy(src:find('def("' .. name .. '"', 1, true) or
        src:find("core." .. name .. " =", 1, true) or src:find('"' .. name .. '"', 1, true) or
        src:find("\n%s*function F%." .. name .. "%("), -- indented inside return function(nn, F)
        name .. " is not defined in " .. op.composite)
    end
  end)

  -- every file of lua/ltc, not only those an entry names: a file with no entry yet (as
  -- ops_more.lua had) would otherwise define ops that ops.yaml never hears of
  local lua_files = {}
  do
    local ls = assert(io.popen("ls lua/ltc/*.lua"))
    for path in ls:lines() do lua_files[#lua_files + 1] = path end
    ls:close()
    assert.is_true(#lua_files > 20, "ls lua/ltc/*.lua found " .. #lua_files .. " files")
  end

  it("cover every op a file of lua/ltc defines", function()
    local missing = {}
    local function need(ok, msg) if not ok then missing[#missing + 1] = msg end end
    for _, path in ipairs(lua_files) do
      local src = read(path)
      for name in src:gmatch('\n%s*def%("([%w_]+)"%s*,') do
        need(generated[name] or composite[name],
          path .. " defines ltc." .. name .. ", which is in no ops.yaml entry")
      end
      -- a name made at run time (def("new_" .. name, ...)) is one no scan can check
      for prefix in src:gmatch('\n%s*def%("([%w_]*)"%s*%.%.') do
        need(false, path .. " defines ltc." .. prefix .. "... by a computed name: write it out")
      end
      for name in src:gmatch('\n%s*core%._overloads%["([%w_.]+)"%]') do
        need(overloads[name], path .. " registers the overload " .. name
          .. ", which is no ops.yaml composite entry with overload_of")
      end
    end
    -- ltc.nn.functional's files (autograd_formulas.lua has an F table of its own)
    local functional = { ["lua/ltc/nn_functional.lua"] = true }
    for path in pairs(files) do functional[path] = true end
    for path in pairs(functional) do
      for name in read(path):gmatch("\n%s*function F%.([%w_]+)%(") do
        need(generated[name] or composite[name],
          path .. " defines ltc.nn.functional." .. name .. ", which is in no ops.yaml entry")
      end
    end
    assert.are.same({}, missing)
  end)

  -- the scan above reads def("<name>", ...) only; a name from a loop (def(name .. "_as", ...)),
  -- a helper (like("zeros_like", ...)) or core.<name> = function escapes it. Every Lua
  -- function of ltc.core is therefore checked too: the C bindings are generated ops or the
  -- runtime's own functions, a Lua one is an op written in lua/ltc (or a generated op wrapped)
  it("cover every Lua function the files of lua/ltc put in ltc.core", function()
    local core = require "ltc.core"
    local missing = {}
    for name, fn in pairs(core) do
      if type(name) == "string" and type(fn) == "function" and not name:find("^_")
          and debug.getinfo(fn, "S").what == "Lua" and not (generated[name] or composite[name]) then
        local info = debug.getinfo(fn, "S")
        missing[#missing + 1] = string.format("ltc.%s (%s:%d) is in no ops.yaml entry", name,
          info.short_src:match("lua/ltc/.*$") or info.short_src, info.linedefined)
      end
    end
    table.sort(missing)
    assert.are.same({}, missing)
  end)

  it("have their ops.yaml doc in ltc.help, and the generated ops' docs stop at the next op", function()
    local d = assert(ltc.doc("einsum"))
    assert.matches("^## einsum\n", d)
    assert.matches("Composite: `lua/ltc/einsum.lua`", d, 1, true)
    assert.is_nil(d:find("## amax", 1, true))
    -- the last generated op's section does not run into the composite ops' heading
    local last
    for _, op in ipairs(META) do if not op.composite then last = op.full_name end end
    local ld = assert(ltc.doc(last))
    assert.is_nil(ld:find("Composite", 1, true), last)
  end)
  it("take their in-place methods from ops.yaml's inplace key, not from a list in init.lua", function()
    local core = require "ltc.core"
    local listed = {}
    for _, name in ipairs(core.inplace_ops) do listed[name] = true end
    for _, name in ipairs { "index_fill", "index_copy", "masked_scatter" } do
      assert.is_true(listed[name], name)
    end
    local src = read("lua/ltc/init.lua")
    assert.is_nil(src:find('"index_fill"', 1, true), "lua/ltc/init.lua lists index_fill")
    local t = ltc.tensor({ 1, 2, 3 })
    t:index_copy_(1, ltc.tensor({ 3 }, "int64"), ltc.tensor({ 9 }))
    assert.are.same({ 1, 2, 9 }, t:totable())
  end)
  it("make ops_more's clamp_min_, clamp_max_ and nan_to_num_ from ops.yaml too", function()
    local core = require "ltc.core"
    local listed = {}
    for _, name in ipairs(core.inplace_ops) do listed[name] = true end
    local src = read("lua/ltc/ops_more.lua")
    for _, name in ipairs { "clamp_min", "clamp_max", "nan_to_num" } do
      assert.is_true(listed[name], name)
      assert.is_nil(src:find("methods." .. name .. "_", 1, true), "ops_more.lua writes " .. name .. "_")
    end
    local t = ltc.tensor({ -1, 2, 5 })
    assert.equal(t, t:clamp_min_(0):clamp_max_(3))
    assert.are.same({ 0, 2, 3 }, t:totable())
    local v = ltc.tensor({ 0 / 0, math.huge, 1 }, "float64")
    assert.equal(v, v:nan_to_num_(7, 8))
    assert.are.same({ 7, 8, 1 }, v:totable())
    local w = ltc.tensor({ 1, 2 })
    w.requires_grad = true
    assert.has_error(function() w:clamp_min_(0) end,
      "clamp_min_: a leaf tensor that requires grad is used in an in-place operation (use "
      .. "ltc.no_grad, or t.data)")
  end)
end)
