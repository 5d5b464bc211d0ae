-- Day-one API gaps: PyTorch's keyword arguments as a trailing options table for every F.*
-- functional, the functionals and methods a new user reaches for first, and the messages
-- they hit. Values from PyTorch 1.13 (spec/fixtures/day_one.lua, tools/gen_day_one_fixtures.py)
-- or by hand.
local ltc = require "ltc"
local nn = ltc.nn
local F = nn.functional
local close = dofile("spec/support/close.lua")
local fx = dofile("spec/fixtures/day_one.lua")

local function T(v, dtype) return ltc.tensor(v, dtype or "float64") end
local err = dofile("spec/support/err.lua")

describe("F.* keyword arguments as an options table", function()
  local x, w, v = T(fx.x), T(fx.w), T(fx.v)

  it("conv2d, max_pool2d, softmax, dropout take PyTorch's names", function()
    close(fx.conv_stride2, F.conv2d(x, w, nil, { stride = 2 }):totable(), 1e-12)
    close(fx.conv_pad1_dil2, F.conv2d(x, w, nil, { padding = 1, dilation = 2 }):totable(), 1e-12)
    close(fx.conv_pad1_dil2, F.conv2d(x, w, { padding = 1, dilation = 2 }):totable(), 1e-12)
    close(fx.max_pool_stride1, F.max_pool2d(x, 2, { stride = 1 }):totable(), 1e-12)
    close(fx.softmax_dim0, F.softmax(v, { dim = 1 }):totable(), 1e-12)
    assert.equal("float32", F.softmax(v, { dim = 1, dtype = "float32" }):dtype())
    assert.same(v:totable(), F.dropout(v, { p = 0.5, training = false }):totable())
    assert.same({ { 0, 0, 0 }, { 0, 0, 0 } }, F.dropout(v, { p = 1 }):totable())
    assert.same({ { 3, 0, 1 }, { 0.5, 2, 0 } }, F.relu(v, { inplace = false }):totable())
    assert.same({ 2, 32 }, F.flatten(x, { start_dim = 2 }):size())
    assert.same({ 2, 2, 16 }, F.flatten(x, { start_dim = 3, end_dim = 4 }):size())
  end)

  it("raises on unknown names, names given twice and inplace=true", function()
    assert.matches("conv2d: unknown option 'strides' %(known: bias, dilation, groups, padding, "
      .. "stride, weight%)", err(function() return F.conv2d(x, w, nil, { strides = 2 }) end))
    assert.matches("softmax: unknown option 'axis'", err(function() return F.softmax(v, { axis = 1 }) end))
    assert.matches("max_pool2d: got multiple values for argument 'stride'",
      err(function() return F.max_pool2d(x, 2, 1, { stride = 1 }) end))
    assert.matches("relu: inplace=true is not supported",
      err(function() return F.relu(v, { inplace = true }) end))
    assert.matches("dropout: p must be between 0 and 1, got 2",
      err(function() return F.dropout(v, { p = 2 }) end))
  end)
end)

describe("day-one functionals", function()
  local x, v, u = T(fx.x), T(fx.v), T(fx.u)

  it("avg_pool2d", function()
    close(fx.avg_pool2, F.avg_pool2d(x, 2):totable(), 1e-12)
    close(fx.avg_pool3_s2_p1, F.avg_pool2d(x, 3, 2, 1):totable(), 1e-12)
    close(fx.avg_pool3_s2_p1_nopad, F.avg_pool2d(x, 3, { stride = 2, padding = 1,
      count_include_pad = false }):totable(), 1e-12)
  end)

  it("pad (constant, last dim first, negative crops)", function()
    close(fx.pad_1_2, F.pad(v, { 1, 2 }):totable(), 0)
    close(fx.pad_1_0_0_1_val, F.pad(v, { 1, 0, 0, 1 }, { value = -1.5 }):totable(), 0)
    close(fx.pad_neg, F.pad(v, { -1, 1 }):totable(), 0)
    assert.same({ { 0, 7, 0 } }, F.pad(ltc.tensor({ { 7 } }, "int64"), { 1, 1 }):totable())
    assert.matches("pad: mode 'reflect' is not supported",
      err(function() return F.pad(v, { 1, 1 }, "reflect") end))
    assert.matches("pad: pad must be a table of an even number of sizes",
      err(function() return F.pad(v, { 1 }) end))
  end)

  it("pad passes the gradient to the kept elements", function()
    local a = T({ 1, 2 }):requires_grad_()
    F.pad(a, { 1, 2 }):sum():backward()
    assert.same({ 1, 1 }, a.grad:totable())
  end)

  it("normalize, cosine_similarity, batch_norm", function()
    close(fx.normalize, F.normalize(v):totable(), 1e-12)
    close(fx.normalize_p1_dim0, F.normalize(v, { p = 1, dim = 1 }):totable(), 1e-12)
    close(fx.cosine, F.cosine_similarity(v, u):totable(), 1e-12)
    close(fx.cosine_dim0, F.cosine_similarity(v, u, { dim = 1 }):totable(), 1e-12)
    local rm, rv = T({ 0.5, -0.5 }), T({ 2.0, 0.5 })
    local bw, bb = T({ 1.5, 0.5 }), T({ 0.1, -0.2 })
    close(fx.bn_eval, F.batch_norm(x, rm, rv, bw, bb):totable(), 1e-12)
    close(fx.bn_train, F.batch_norm(x, rm, rv, bw, bb, { training = true, momentum = 0.2 }):totable(), 1e-12)
    close(fx.bn_train_rm, rm:totable(), 1e-12)
    close(fx.bn_train_rv, rv:totable(), 1e-12)
  end)
end)

describe("day-one methods", function()
  it("module:half() and module:bfloat16()", function()
    local m = nn.Linear(2, 3)
    assert.equal(m, m:half())
    assert.equal("float16", m.weight:dtype())
    assert.is_true(m.weight.requires_grad)
    m:bfloat16()
    assert.equal("bfloat16", m.bias:dtype())
  end)

  it("ltc.eye(n, dtype)", function()
    local e = ltc.eye(2, "float64")
    assert.equal("float64", e:dtype())
    assert.same({ { 1, 0 }, { 0, 1 } }, e:totable())
    assert.same({ 2, 3 }, ltc.eye(2, 3, "int64"):size())
    assert.equal("float32", ltc.eye(2):dtype())
  end)

  it("ltc.eye binds straight from its schema: a dtype name in cols' place leaves cols out", function()
    -- the generated binding, no Lua front end (codegen/README.md: an optional int before a
    -- ScalarType)
    assert.equal("C", debug.getinfo(require("ltc.core").eye, "S").what)
    local e = ltc.eye(3, "int32")
    assert.equal("int32", e:dtype())
    assert.same({ { 1, 0, 0 }, { 0, 1, 0 }, { 0, 0, 1 } }, e:totable())
    assert.same({ { 1, 0 } }, ltc.eye(1, 2, "float64"):totable())
    assert.equal("float64", ltc.eye(2, nil, "float64"):dtype())
    local ok, msg = pcall(ltc.eye, 2, "bogus")
    assert.is_false(ok)
    assert.truthy(msg:find("eye: unknown dtype 'bogus'", 1, true), msg)
    ok, msg = pcall(ltc.eye, 2, 2.5)
    assert.is_false(ok)
    assert.truthy(msg:find("eye: bad argument #2 (integer expected, got the number 2.5)", 1, true), msg)
    ok, msg = pcall(ltc.eye, 2, "float64", 3)
    assert.is_false(ok)
    assert.truthy(msg:find("eye: too many arguments", 1, true), msg)
  end)

  it("for xb, yb in loader do", function()
    local xs = ltc.arange(1, 6):reshape({ 5, 1 })
    local ys = ltc.arange(11, 16)
    local loader = ltc.data.DataLoader({ xs, ys }, { batch_size = 2 })
    for _ = 1, 2 do -- two epochs
      local got = {}
      for xb, yb in loader do got[#got + 1] = { xb:reshape({ -1 }):totable(), yb:totable() } end
      assert.same({ { { 1, 2 }, { 11, 12 } }, { { 3, 4 }, { 13, 14 } }, { { 5 }, { 15 } } }, got)
    end
    for xb in loader do assert.same({ 2, 1 }, xb:size()); break end
    local n = 0
    for _ in loader do n = n + 1 end -- a fresh epoch after a break
    assert.equal(3, n)
  end)
end)

describe("day-one messages", function()
  it("cross_entropy with float labels names the dtype", function()
    assert.matches("cross_entropy: target must be int64 or int32 class indices, got float32",
      err(function() return F.cross_entropy(ltc.randn(4, 3), ltc.tensor({ 1, 3, 2, 1 })) end))
  end)

  it("uint8 // 0 does not name int32 alone", function()
    local e = err(function() return (ltc.tensor({ 1, 2 }, "uint8") // 0):totable() end)
    assert.matches("floor_divide: integer division by zero %(// 0 and %% 0 of an integer tensor, "
      .. "uint8, int8, int16 or int32, raise", e)
    e = err(function() return (ltc.tensor({ 1, 2 }, "int64") // 0):totable() end)
    assert.matches("of an integer tensor, int64, raise", e)
  end)

  it("module:to(an integer dtype) names Module.to", function()
    local m = nn.Linear(2, 2)
    assert.matches("Module.to: only floating dtypes .* got uint8", err(function() return m:to("uint8") end))
    assert.equal("float32", m.weight:dtype())
  end)

  it("modules print pairs as PyTorch does", function()
    local c = nn.Conv2d(3, 4, { 3, 2 }, { stride = { 2, 1 }, dilation = { 1, 2 } })
    assert.equal("Conv2d(3, 4, kernel_size=(3, 2), stride=(2, 1), dilation=(1, 2))", tostring(c))
    assert.equal("Conv2d(3, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=false)",
      tostring(nn.Conv2d(3, 4, 3, { padding = 1, bias = false })))
    assert.equal("MaxPool2d(kernel_size=(2, 3), stride=(2, 3), padding=0, dilation=1, ceil_mode=false)",
      tostring(nn.MaxPool2d({ 2, 3 })))
    assert.equal("AvgPool2d(kernel_size=(2, 3), stride=(2, 3), padding=0)", tostring(nn.AvgPool2d({ 2, 3 })))
  end)

  it("ltc.load of a PyTorch .pt says to save with numpy", function()
    assert.matches("load: 'spec/fixtures/torch_pickle.pt' is a PyTorch pickle %(torch.save, %.pt%), "
      .. "which ltc does not read: save the tensors with numpy instead",
      err(function() return ltc.load("spec/fixtures/torch_pickle.pt") end))
  end)
end)

describe("ltc.help finds", function()
  it("the doc comments of classes made by factories, loops and C functions", function()
    local want = {
      ["nn.LSTM"] = "nn%.LSTM%(", ["nn.GRU"] = "nn%.GRU%(", ["optim.SGD"] = "PyTorch's SGD",
      ["optim.Adam"] = "PyTorch's Adam", ["optim.lr_scheduler.StepLR"] = "StepLR%(opt",
      ["optim.lr_scheduler.OneCycleLR"] = "OneCycleLR%(opt",
      result_type = "ltc%.result_type%(a, b", half = "t:half%(%)",
      bfloat16 = "t:bfloat16%(%)", element_size = "t:element_size%(%)",
      is_floating_point = "t:is_floating_point%(%)", load = "ltc%.load%(path%)",
      manual_seed = "ltc%.manual_seed%(seed%)", sync = "ltc%.sync%(%)",
      ["nn.functional.pad"] = "F%.pad%(x, pad",
    }
    for name, pat in pairs(want) do
      local d, why = ltc.doc(name)
      assert(d, name .. ": " .. tostring(why))
      assert(d:find(pat), name .. " found the wrong doc: " .. d:sub(1, 120))
    end
  end)

  it("the ops.yaml entry of an op made by a factory (expand_as, zeros_like), not its comment", function()
    for _, name in ipairs { "expand_as", "view_as", "zeros_like", "full_like", "rand_like" } do
      local d, why = ltc.doc(name)
      assert(d, name .. ": " .. tostring(why))
      assert(d:find("^## " .. name .. "\n\nSchema: `" .. name .. "%(Tensor self"),
        name .. " found the wrong doc: " .. d:sub(1, 120))
    end
  end)

  it("raises option errors at the caller's line", function()
    local line = debug.getinfo(1, "l").currentline + 1
    local ok, e = pcall(function() local r = F.softmax(ltc.ones(2), { axis = 1 }); return r end)
    assert.is_false(ok)
    assert.matches("day_one_spec%.lua:" .. line .. ": softmax: unknown option 'axis'", e)
  end)
end)

describe("reciprocal, trunc, frac (composites)", function()
  -- PyTorch 1.13: torch.trunc/frac/reciprocal of [-2.5, -0.5, 0, 0.5, 3.75, inf, -inf, nan]
  local inf, nan = math.huge, 0 / 0
  local x = T({ -2.5, -0.5, 0, 0.5, 3.75, inf, -inf, nan })

  it("match PyTorch's values", function()
    close({ -2, -0.0, 0, 0, 3, inf, -inf, nan }, x:trunc():totable(), 0)
    assert.equal("-0.0", tostring(x:trunc():totable()[2]))
    close({ -0.5, -0.5, 0, 0.5, 0.75, nan, nan, nan }, x:frac():totable(), 0)
    close({ -0.4, -2, inf, 2, 1 / 3.75, 0, -0.0, nan }, ltc.reciprocal(x):totable(), 1e-15)
    local i = ltc.tensor({ -3, 0, 2 }, "int64")
    assert.same({ -3, 0, 2 }, i:trunc():totable())
    assert.equal("int64", i:trunc():dtype())
    local r = i:reciprocal()
    assert.equal("float32", r:dtype())
    close({ -1 / 3, inf, 0.5 }, r:totable(), 1e-7)
    assert.matches("frac: needs a floating tensor, got int64", err(function() return i:frac() end))
  end)

  it("have the gradients of their parts", function()
    local a = T({ -2.5, 0.5, 4 }):requires_grad_()
    ;(a:frac() + a:trunc() * 3 + a:reciprocal()):sum():backward()
    close({ 1 - 1 / 6.25, 1 - 4, 1 - 1 / 16 }, a.grad:totable(), 1e-15)
  end)
end)
