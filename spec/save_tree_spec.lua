-- ltc.save / ltc.load of a nested table (an optimizer's state_dict(), a checkpoint), as
-- torch.save / torch.load of a state dict: tensors, numbers, booleans and strings come back
-- exactly, and an optimizer resumed from its saved state goes on bit for bit as one that was
-- never stopped.
local ltc = require "ltc"
local nn = ltc.nn

local function roundtrip(t)
  local path = os.tmpname()
  ltc.save(path, t)
  local back = ltc.load(path)
  os.remove(path)
  return back
end

-- the bits of a double, so that NaN, -0.0 and the last digit are compared exactly
local function bits(x) return string.pack("<d", x) end

describe("ltc.save and ltc.load of a nested table", function()
  it("gives back tensors, numbers with their subtype, booleans and strings", function()
    local w = ltc.tensor({ { 0.1, -2.5 }, { 1e-8, 3 } })
    local back = roundtrip({
      state = { [1] = { step = ltc.tensor(3, "float64"), exp_avg = w, n = 7 }, [3] = { k = 2 } },
      param_groups = { { lr = 0.1, betas = { 0.9, 0.999 }, amsgrad = false, params = { 1, 2, 3 },
        name = "a\0b\n" } },
      odd = { 0 / 0, -0.0, math.huge, -math.huge, math.maxinteger, math.mininteger, 2 ^ -1074, 1 / 3 },
      empty = {},
    })
    assert.are.same(w:totable(), back.state[1].exp_avg:totable())
    assert.are.equal("float32", back.state[1].exp_avg:dtype())
    assert.are.equal("float64", back.state[1].step:dtype())
    assert.are.same({}, back.state[1].step:size())
    assert.are.equal(3, back.state[1].step:item())
    assert.are.equal("integer", math.type(back.state[1].n))
    assert.are.equal(7, back.state[1].n)
    assert.is_nil(back.state[2])
    assert.are.equal(2, back.state[3].k)
    local g = back.param_groups[1]
    assert.are.equal("float", math.type(g.lr))
    assert.are.equal(bits(0.1), bits(g.lr))
    assert.are.same({ 0.9, 0.999 }, g.betas)
    assert.is_false(g.amsgrad)
    assert.are.same({ 1, 2, 3 }, g.params)
    assert.are.equal("integer", math.type(g.params[1]))
    assert.are.equal("a\0b\n", g.name)
    local odd = { 0 / 0, -0.0, math.huge, -math.huge, math.maxinteger, math.mininteger, 2 ^ -1074, 1 / 3 }
    for i, x in ipairs(odd) do
      assert.are.equal(math.type(x), math.type(back.odd[i]))
      if math.type(x) == "float" then assert.are.equal(bits(x), bits(back.odd[i])) end
    end
    assert.are.equal(math.maxinteger, back.odd[5])
    assert.are.same({}, back.empty)
  end)

  it("saves a tensor that appears twice once, and it loads as one tensor", function()
    local t = ltc.tensor({ 1, 2 })
    local back = roundtrip({ a = t, b = { t }, c = 1 })
    assert.are.equal(back.a, back.b[1])
  end)

  it("keeps a flat table of tensors a plain .npz (np.load's names), nested tensors named by path", function()
    local path = os.tmpname()
    ltc.save(path, { opt = { state = { [1] = { exp_avg = ltc.tensor({ 1 }) } } }, step = 4 })
    local f = io.open(path, "rb")
    local data = f:read("a")
    f:close()
    os.remove(path)
    assert.is_truthy(data:find("opt.state.1.exp_avg.npy", 1, true))
    assert.is_truthy(data:find("__ltc_tree__", 1, true))
    local back = ltc.io.load_npz and roundtrip({ w = ltc.tensor({ 2 }) })
    assert.are.same({ 2 }, back.w:totable())
  end)

  it("names the key path of what it cannot save", function()
    local path = os.tmpname()
    assert.has_error(function() ltc.save(path, { state = { [2] = { fn = print } } }) end,
      "save: a function at state[2].fn: tables of tensors, numbers, booleans and strings are saved")
    assert.has_error(function() ltc.save(path, { a = { ["b c"] = io.stdout } }) end,
      "save: a userdata at a[\"b c\"]: tables of tensors, numbers, booleans and strings are saved")
    local cyc = { x = {} }
    cyc.x.back = cyc
    assert.has_error(function() ltc.save(path, { root = cyc }) end,
      "save: a cycle (the table is also at root) at root.x.back: tables of tensors, numbers, "
      .. "booleans and strings are saved")
    assert.has_error(function() ltc.save(path, { [true] = 1 }) end,
      "save: a boolean key at [true]: tables of tensors, numbers, booleans and strings are saved")
    assert.has_error(function() ltc.save(path, { k = { [1.5] = 1 } }) end,
      "save: a float key at k[1.5]: tables of tensors, numbers, booleans and strings are saved")
    assert.has_error(function() ltc.save(path, { m = nn.Linear(2, 2) }) end,
      "save: a table with a metatable (an object: save its state_dict() instead) at m: tables of "
      .. "tensors, numbers, booleans and strings are saved")
    local t = ltc.tensor({ 1 })
    t:close()
    assert.has_error(function() ltc.save(path, { s = { t } }) end,
      "save: a closed tensor at s[1]: tables of tensors, numbers, booleans and strings are saved")
    os.remove(path)
  end)

  it("raises naming the file on a damaged structure", function()
    local path = os.tmpname()
    ltc.save(path, { a = { 1, 2 } })
    local f = io.open(path, "rb")
    local data = f:read("a")
    f:close()
    local i = data:find("LTCTREE1", 1, true)
    -- the local copy of the member: cut its last byte and fix nothing else (the CRC catches it)
    f = io.open(path, "wb")
    f:write(data:sub(1, i + 9) .. "Q" .. data:sub(i + 11))
    f:close()
    local ok, err = pcall(ltc.load, path)
    assert.is_false(ok)
    assert.matches("member '__ltc_tree__' is truncated or corrupt (CRC-32)", err, 1, true)
    os.remove(path)
  end)
end)

-- a tiny regression, its loss and a step of opt
local function step(model, opt, x, y)
  opt:zero_grad()
  local loss = nn.functional.mse_loss(model(x), y)
  loss:backward()
  opt:step()
end

local function params(model)
  local out = {}
  for k, v in pairs(model:state_dict()) do out[k] = v:totable() end
  return out
end

for _, case in ipairs {
  { "Adam", function(ps) return ltc.optim.Adam(ps, { lr = 0.01 }) end },
  { "Adam (amsgrad)", function(ps) return ltc.optim.Adam(ps, { lr = 0.01, amsgrad = true }) end },
  { "AdamW", function(ps) return ltc.optim.AdamW(ps, { lr = 0.01, weight_decay = 0.1 }) end },
  { "SGD (momentum)", function(ps) return ltc.optim.SGD(ps, { lr = 0.05, momentum = 0.9, nesterov = true }) end },
} do
  describe(case[1] .. " resumed from ltc.save of its state_dict()", function()
    it("goes on bit for bit as the uninterrupted run", function()
      ltc.manual_seed(5)
      local x, y = ltc.randn(8, 3), ltc.randn(8, 2)
      local function make()
        ltc.manual_seed(6)
        local m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
        return m, case[2](m:parameters())
      end
      local m1, o1 = make()
      for _ = 1, 6 do step(m1, o1, x, y) end

      local m2, o2 = make()
      for _ = 1, 3 do step(m2, o2, x, y) end
      local path = os.tmpname()
      ltc.save(path, { model = m2:state_dict(), opt = o2:state_dict(), epoch = 3 })
      local ck = ltc.load(path)
      os.remove(path)
      local m3, o3 = make()
      m3:load_state_dict(ck.model)
      o3:load_state_dict(ck.opt)
      assert.are.equal(3, ck.epoch)
      for _ = 4, 6 do step(m3, o3, x, y) end
      assert.are.same(params(m1), params(m3))
    end)
  end)
end
