-- ltc.nn, ltc.optim, ltc.data and the IDX reader; a small synthetic training run compiles
-- nothing new after its first steps.
local ltc = require "ltc"
local nn = ltc.nn

local function tmpname() return os.tmpname() end

-- Writes an uncompressed IDX file: magic 0 0 type ndim, big-endian sizes, then the bytes.
local function write_idx(path, type_code, dims, payload)
  local f = assert(io.open(path, "wb"))
  f:write(string.char(0, 0, type_code, #dims))
  for _, d in ipairs(dims) do f:write(string.pack(">I4", d)) end
  f:write(payload)
  f:close()
end

describe("ltc.io.read_idx", function()
  it("reads uint8 images with a scale and labels as 1-based int64", function()
    local p = tmpname()
    write_idx(p, 0x08, { 2, 2, 3 }, string.char(0, 51, 102, 153, 204, 255, 0, 0, 0, 255, 255, 255))
    local x = ltc.io.read_idx(p, { scale = 1 / 255 })
    assert.are.equal("float32", x:dtype())
    assert.are.same({ 2, 2, 3 }, x:size())
    local v = x:totable()
    assert.is_true(math.abs(v[1][1][2] - 0.2) < 1e-6)
    assert.are.equal(1, v[2][2][3])
    write_idx(p, 0x08, { 3 }, string.char(9, 0, 4))
    local y = ltc.io.read_idx(p, { dtype = "int64", offset = 1 })
    assert.are.equal("int64", y:dtype())
    assert.are.same({ 10, 1, 5 }, y:totable())
    os.remove(p)
  end)

  it("reads big-endian int32 and float64 data", function()
    local p = tmpname()
    write_idx(p, 0x0C, { 2 }, string.pack(">i4>i4", -7, 70000))
    assert.are.same({ -7, 70000 }, ltc.io.read_idx(p, { dtype = "int64" }):totable())
    write_idx(p, 0x0E, { 2 }, string.pack(">d>d", 0.5, -2.25))
    assert.are.same({ 0.5, -2.25 }, ltc.io.read_idx(p, { dtype = "float64" }):totable())
    os.remove(p)
  end)

  it("rejects a file that is not IDX or is truncated", function()
    local p = tmpname()
    local f = io.open(p, "wb"); f:write("hello world"); f:close()
    assert.has_error(function() ltc.io.read_idx(p) end,
      "read_idx: '" .. p .. "' is not an IDX file (bad magic number)")
    write_idx(p, 0x08, { 4 }, string.char(1, 2))
    local ok, err = pcall(ltc.io.read_idx, p)
    assert.is_false(ok)
    assert.matches("is truncated", err, 1, true)
    os.remove(p)
    assert.has_error(function() ltc.io.read_idx(p) end)
  end)
end)

describe("ltc.data.DataLoader", function()
  it("shuffles with a seed: the same order for the same seed, every row once", function()
    local a, b = ltc.data.permutation(50, 7), ltc.data.permutation(50, 7)
    assert.are.same(a, b)
    assert.are_not.same(a, ltc.data.permutation(50, 8))
    local seen = {}
    for _, v in ipairs(a) do seen[v] = (seen[v] or 0) + 1 end
    for i = 1, 50 do assert.are.equal(1, seen[i]) end
  end)

  it("makes batches by index_select, dropping a short last batch when asked", function()
    local x = ltc.arange(1, 11):float():reshape({ 10, 1 })
    local y = ltc.arange(1, 11)
    local loader = ltc.data.DataLoader({ x, y }, { batch_size = 4 })
    assert.are.equal(3, #loader)
    local sizes = {}
    for step, xb, yb in loader:batches() do
      sizes[step] = xb:size(1)
      if step == 1 then
        assert.are.same({ { 1 }, { 2 }, { 3 }, { 4 } }, xb:totable())
        assert.are.same({ 1, 2, 3, 4 }, yb:totable())
      end
    end
    assert.are.same({ 4, 4, 2 }, sizes)
    local dl = ltc.data.DataLoader({ x, y }, { batch_size = 4, shuffle = true, drop_last = true })
    assert.are.equal(2, #dl)
    local rows = {}
    for _, xb, yb in dl:batches() do
      local xs, ys = xb:totable(), yb:totable()
      for i = 1, #ys do
        assert.are.equal(ys[i], xs[i][1])
        rows[#rows + 1] = ys[i]
      end
    end
    assert.are.equal(8, #rows)
  end)
end)

describe("ltc.nn", function()
  it("initialises Linear in +-1/sqrt(in_features) and lists its parameters", function()
    ltc.manual_seed(1)
    local m = nn.Linear(16, 4)
    local ps = m:parameters()
    assert.are.equal(2, #ps)
    assert.are.same({ 4, 16 }, ps[1]:size())
    assert.is_true(ps[1].requires_grad)
    local w = ps[1]:totable()
    for _, row in ipairs(w) do
      for _, v in ipairs(row) do assert.is_true(math.abs(v) <= 0.25) end
    end
    assert.is_nil(nn.Linear(3, 2, false).bias)
  end)

  it("names parameters in state_dict and loads them back in place", function()
    local m = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1))
    local sd = m:state_dict()
    local names = {}
    for k in pairs(sd) do names[#names + 1] = k end
    table.sort(names)
    assert.are.same({ "1.bias", "1.weight", "3.bias", "3.weight" }, names)
    local w = m[1].weight
    m:load_state_dict({ ["1.weight"] = ltc.ones(2, 3), ["1.bias"] = ltc.zeros(2),
      ["3.weight"] = ltc.ones(1, 2), ["3.bias"] = ltc.tensor({ 0.5 }) })
    assert.are.equal(w, m[1].weight)
    assert.are.same({ { 1, 1, 1 }, { 1, 1, 1 } }, w:totable())
    assert.are.same({ { 6.5 } }, m(ltc.tensor({ { 1, 1, 1 } })):totable())
    assert.has_error(function() m:load_state_dict({ ["1.weight"] = ltc.ones(3, 3) }, false) end)
    assert.has_error(function() m:load_state_dict({}) end,
      "load_state_dict: missing parameters '1.weight', '1.bias', '3.weight', '3.bias'")
    -- every problem in one error, and nothing copied: w keeps its ones
    assert.has_error(function()
      m:load_state_dict({ ["1.weight"] = ltc.zeros(2, 3), ["1.bias"] = ltc.zeros(3), ["9.x"] = ltc.ones(1) })
    end, "load_state_dict: '1.bias' has size 3, the module's 2; missing parameters '3.weight', '3.bias'; "
      .. "unexpected parameter '9.x'")
    assert.are.same({ { 1, 1, 1 }, { 1, 1, 1 } }, w:totable())
    -- a PyTorch state dict (children numbered from 0) is named as such
    assert.has_error(function()
      m:load_state_dict({ ["0.weight"] = ltc.ones(2, 3), ["0.bias"] = ltc.zeros(2),
        ["2.weight"] = ltc.ones(1, 2), ["2.bias"] = ltc.tensor({ 0.5 }) })
    end, "load_state_dict: missing parameters '1.weight', '1.bias', '3.weight', '3.bias' (the state "
      .. "dict has '0.weight': ltc numbers the children of Sequential and ModuleList from 1, as "
      .. "Torch7, PyTorch from 0; add 1 to each number in its names); unexpected parameters "
      .. "'0.bias', '0.weight', '2.bias', '2.weight'")
  end)

  it("switches Dropout off in eval mode and keeps the expected scale in training", function()
    local m = nn.Sequential(nn.Dropout(0.5))
    local x = ltc.ones(1000)
    m:eval()
    assert.are.same(x:totable(), m(x):totable())
    m:train()
    local y = m(x)
    local s = y:sum():item()
    assert.is_true(s > 800 and s < 1200, tostring(s))
    for _, v in ipairs(y:totable()) do assert.is_true(v == 0 or v == 2) end
  end)

  it("computes LayerNorm, Embedding, Flatten and the losses", function()
    local ln = nn.LayerNorm(4)
    local y = ln(ltc.tensor({ { 1, 2, 3, 4 }, { 2, 2, 2, 6 } }))
    for _, row in ipairs(y:totable()) do
      local m = (row[1] + row[2] + row[3] + row[4]) / 4
      assert.is_true(math.abs(m) < 1e-5)
    end
    local e = nn.Embedding(5, 3)
    assert.are.same({ 2, 2, 3 }, e(ltc.tensor({ { 1, 5 }, { 2, 2 } }, "int64")):size())
    assert.are.same({ 2, 12 }, nn.Flatten()(ltc.zeros(2, 3, 4)):size())
    local mse = nn.MSELoss()(ltc.tensor({ 1, 2 }), ltc.tensor({ 0, 0 }))
    assert.are.equal(2.5, mse:item())
    local x, t = ltc.tensor({ { 1, 2, 3 } }), ltc.tensor({ 3 }, "int64")
    local ce = nn.CrossEntropyLoss()(x, t):item()
    local nll = nn.NLLLoss()(x:log_softmax(2), t):item()
    assert.is_true(math.abs(ce - nll) < 1e-6)
  end)
end)

describe("ltc.optim", function()
  it("SGD with momentum and weight decay follows PyTorch's update", function()
    local p = ltc.tensor({ 1.0 }):requires_grad_()
    local opt = ltc.optim.SGD({ p }, { lr = 0.1, momentum = 0.9, weight_decay = 0.5 })
    for _ = 1, 2 do
      opt:zero_grad()
      ;(p * 2):sum():backward()
      opt:step()
    end
    -- step 1: g = 2 + 0.5 = 2.5, buf = 2.5, p = 0.75
    -- step 2: g = 2 + 0.375 = 2.375, buf = 2.25 + 2.375 = 4.625, p = 0.75 - 0.4625
    assert.is_true(math.abs(p:item() - 0.2875) < 1e-6, tostring(p:item()))
    assert.is_true(p.is_leaf and p.requires_grad)
  end)

  it("Adam's first step moves each parameter by lr against its gradient's sign", function()
    local p = ltc.tensor({ 1.0, -1.0 }):requires_grad_()
    local opt = ltc.optim.Adam({ p }, { lr = 0.01 })
    ;(p * ltc.tensor({ 3.0, -0.5 })):sum():backward()
    opt:step()
    local v = p:totable()
    assert.is_true(math.abs(v[1] - 0.99) < 1e-5 and math.abs(v[2] + 0.99) < 1e-5)
    local q = ltc.tensor({ 1.0 }):requires_grad_()
    local w = ltc.optim.AdamW({ q }, { lr = 0.1, weight_decay = 0.5 })
    ;(q * 0):sum():backward()
    w:step()
    assert.is_true(math.abs(q:item() - 0.95) < 1e-6, tostring(q:item()))
  end)

  it("rejects unknown options", function()
    assert.has_error(function() ltc.optim.SGD({ ltc.zeros(1) }, { lr = 0.1, momentun = 0.9 }) end,
      "SGD: unknown option 'momentun'")
  end)
end)

describe("a training loop", function()
  local function run(make_opt, steps, lr_schedule)
    ltc.manual_seed(3)
    local model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3))
    local opt = make_opt(model:parameters())
    local x = ltc.randn(64, 8)
    local y = x:narrow(2, 1, 3):argmax(2)
    local loader = ltc.data.DataLoader({ x, y }, { batch_size = 16, shuffle = true, drop_last = true })
    ltc.sync()
    ltc.metrics.reset()
    local compiles, losses, step = {}, {}, 0
    while step < steps do
      for _, xb, yb in loader:batches() do
        step = step + 1
        if lr_schedule then opt.lr = lr_schedule(step) end
        opt:zero_grad()
        local loss = nn.functional.cross_entropy(model(xb), yb)
        loss:backward()
        opt:step()
        ltc.sync()
        losses[step] = loss:item()
        compiles[step] = ltc.metrics.counter("UncachedCompile")
        if step == steps then break end
      end
    end
    return compiles, losses
  end

  it("compiles nothing new after its first steps (SGD with momentum, changing lr)", function()
    local compiles, losses = run(function(ps)
      return ltc.optim.SGD(ps, { lr = 0.2, momentum = 0.9 })
    end, 24, function(step) return 0.2 / (1 + step) end)
    assert.are.equal(compiles[3], compiles[24])
    assert.is_true(compiles[3] <= 3, tostring(compiles[3]))
    assert.is_true(losses[24] < losses[1])
  end)

  it("compiles nothing new after its first steps with Adam", function()
    local compiles, losses = run(function(ps) return ltc.optim.Adam(ps, { lr = 0.01 }) end, 16)
    assert.are.equal(compiles[3], compiles[16])
    assert.is_true(losses[16] < losses[1])
  end)

  it("trains a small CNN (conv, pool, flatten, linear) with no new compiles after its first steps", function()
    ltc.manual_seed(5)
    local model = nn.Sequential(nn.Conv2d(1, 4, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
      nn.Conv2d(4, 8, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 2 * 2, 3))
    local opt = ltc.optim.SGD(model:parameters(), { lr = 0.1, momentum = 0.9 })
    local x = ltc.randn(64, 1, 8, 8)
    local y = x:reshape({ 64, 64 }):narrow(2, 1, 3):argmax(2)
    local loader = ltc.data.DataLoader({ x, y }, { batch_size = 16, shuffle = true, drop_last = true })
    ltc.sync()
    ltc.metrics.reset()
    local compiles, losses, step = {}, {}, 0
    while step < 24 do
      for _, xb, yb in loader:batches() do
        step = step + 1
        opt:zero_grad()
        local loss = nn.functional.cross_entropy(model(xb), yb)
        loss:backward()
        opt:step()
        ltc.sync()
        losses[step] = loss:item()
        compiles[step] = ltc.metrics.counter("UncachedCompile")
        if step == 24 then break end
      end
    end
    assert.are.equal(compiles[3], compiles[24])
    assert.is_true(compiles[3] <= 3, tostring(compiles[3]))
    local first, last = 0, 0
    for i = 1, 4 do first, last = first + losses[i], last + losses[20 + i] end
    assert.is_true(last < first, string.format("loss %.4f -> %.4f", first / 4, last / 4))
    for _, p in ipairs(model:parameters()) do
      assert.is_true(p.is_leaf and p.requires_grad)
    end
  end)
end)
