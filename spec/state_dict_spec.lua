-- ltc.save / ltc.load of a state dict: one .npz file (NumPy's format: a zip archive of
-- "<name>.npy" members), loaded back into a model with load_state_dict.
local ltc = require "ltc"
local nn = ltc.nn

local function model()
  return nn.Sequential(nn.Conv2d(1, 2, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(2 * 2 * 2, 3), nn.Tanh(), nn.Linear(3, 2))
end

describe("ltc.save and ltc.load of a state dict", function()
  it("round-trips a model: the loaded copy gives equal outputs", function()
    ltc.manual_seed(11)
    local a = model()
    local path = os.tmpname()
    ltc.save(path, a:state_dict())
    ltc.manual_seed(12)
    local b = model()
    local x = ltc.randn(3, 1, 4, 4)
    assert.are_not.same(a(x):totable(), b(x):totable())
    b:load_state_dict(ltc.load(path))
    assert.are.same(a(x):totable(), b(x):totable())
    for _, p in ipairs(b:parameters()) do assert.is_true(p.is_leaf and p.requires_grad) end
    os.remove(path)
  end)

  it("keeps names, sizes, dtypes and exact values", function()
    local path = os.tmpname()
    local sd = { ["1.weight"] = ltc.tensor({ { 0.1, -2.5 }, { 1e-8, 3 } }),
      ["x.y"] = ltc.tensor({ 1, 2, 3 }, "int64"), d = ltc.tensor(0.3, "float64"),
      e = ltc.zeros(0, 2), b = ltc.tensor({ true, false }) }
    ltc.save(path, sd)
    local back = ltc.load(path)
    local names = {}
    for k, v in pairs(back) do
      names[#names + 1] = k
      assert.are.equal(sd[k]:dtype(), v:dtype())
      assert.are.same(sd[k]:size(), v:size())
      assert.are.same(sd[k]:totable(), v:totable())
    end
    table.sort(names)
    assert.are.same({ "1.weight", "b", "d", "e", "x.y" }, names)
    os.remove(path)
  end)

  it("writes a zip archive of .npy members that NumPy's np.load reads", function()
    local path = os.tmpname()
    ltc.save(path, { w = ltc.tensor({ 1.5, 2.5 }) })
    local f = io.open(path, "rb")
    local data = f:read("a")
    f:close()
    assert.are.equal("PK\3\4", data:sub(1, 4))
    assert.is_truthy(data:find("w.npy", 1, true))
    assert.is_truthy(data:find("\147NUMPY", 1, true))
    assert.are.equal("PK\5\6", data:sub(-22, -19))
    os.remove(path)
  end)

  it("still saves and loads a single tensor as .npy", function()
    local path = os.tmpname()
    ltc.save(path, ltc.tensor({ 4, 5 }))
    assert.are.same({ 4, 5 }, ltc.load(path):totable())
    os.remove(path)
  end)

  it("raises clear errors for bad values and damaged files", function()
    local path = os.tmpname()
    assert.has_error(function() ltc.save(path, { w = print }) end,
      "save: a function at w: tables of tensors, numbers, booleans and strings are saved")
    assert.has_error(function() ltc.save(path, 3) end,
      "save: a tensor or a table of tensors expected, got number")
    ltc.save(path, { w = ltc.tensor({ 1, 2, 3 }) })
    local f = io.open(path, "rb")
    local data = f:read("a")
    f:close()
    local i = data:find("\147NUMPY", 1, true)
    data = data:sub(1, i + 70) .. "X" .. data:sub(i + 72) -- flip a byte of the payload
    f = io.open(path, "wb")
    f:write(data)
    f:close()
    local ok, err = pcall(ltc.load, path)
    assert.is_false(ok)
    assert.matches("member 'w.npy' is truncated or corrupt", err, 1, true)
    f = io.open(path, "wb")
    f:write("PK not a zip")
    f:close()
    ok, err = pcall(ltc.load, path)
    assert.is_false(ok)
    assert.matches("is not a .npy file", err, 1, true)
    assert.has_error(function() ltc.io.load_npz(path) end, "load: '" .. path .. "' is not a .npz (zip) file")
    os.remove(path)
  end)
end)
