-- The everyday API of PyTorch's day one: keyword tables for every op of ops.yaml, the default
-- dtype, inference mode, small composites, clip_grad_norm_'s inf norm, Ellipsis indexing.
-- Expected values from PyTorch 2 (torch on /usr/bin/python3; each block says the call that
-- gave them) or by hand.
local ltc = require "ltc"
local core = require "ltc.core"
local err = dofile("spec/support/err.lua")

local function x23() return ltc.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }) end

describe("keyword tables for generated ops", function()
  it("put keywords in the schema's places (dims 1-based)", function()
    local x = x23()
    -- x.sum(dim=1, keepdim=True) -> [[6.0], [15.0]]
    assert.same({ { 6 }, { 15 } }, x:sum{ dim = 2, keepdim = true }:totable())
    assert.same({ { 6 }, { 15 } }, ltc.sum(x, { dim = 2, keepdim = true }):totable())
    -- x.transpose(dim0=0, dim1=1)
    assert.same({ { 1, 4 }, { 2, 5 }, { 3, 6 } }, x:transpose{ dim0 = 1, dim1 = 2 }:totable())
    -- x.narrow(dim=1, start=1, length=1) (start 1-based here)
    assert.same({ { 2 }, { 5 } }, x:narrow{ dim = 2, start = 2, length = 1 }:totable())
    -- x.clamp(max=2.5)
    assert.same({ { 1, 2, 2.5 }, { 2.5, 2.5, 2.5 } }, x:clamp{ max = 2.5 }:totable())
    assert.same({ { 2, 2, 3 }, { 3, 3, 3 } }, x:clamp(2, { max = 3 }):totable())
  end)

  it("take positional values in the table's array part (ltc.cat{{a, b}, dim = 2})", function()
    local x = x23()
    -- torch.cat([x, x], dim=1): size [2, 6], first row [1, 2, 3, 1, 2, 3]
    local c = ltc.cat{ { x, x }, dim = 2 }
    assert.same({ 2, 6 }, c:size())
    assert.same({ 1, 2, 3, 1, 2, 3 }, c[1]:totable())
    assert.same({ 2, 6 }, ltc.cat({ x, x }, { dim = 2 }):size())
    assert.same({ 4, 3 }, ltc.stack{ { x, x }, dim = 1 }:reshape(4, 3):size())
  end)

  it("reach ops that Lua functions replaced, and their in-place forms", function()
    local x = x23()
    -- x.softmax(dim=0)[0] -> 0.04742587357759476 each
    local s = x:softmax{ dim = 1 }[1]:totable()
    for i = 1, 3 do assert.is_true(math.abs(s[i] - 0.04742587357759476) < 1e-6) end
    local y = x23()
    y:clamp_{ min = 3 }
    assert.same({ { 3, 3, 3 }, { 4, 5, 6 } }, y:totable())
  end)

  it("come from the generator: core._keywords lists each overload's argument names", function()
    assert.same({ "self", "dim", "keepdim" }, { table.unpack(core._keywords.sum[1]) })
    assert.equal(1, core._keywords.sum[1].n_required)
    assert.same({ "tensors", "dim" }, { table.unpack(core._keywords.cat[1]) })
  end)

  it("raise an error naming the op and an unknown key", function()
    local x = x23()
    assert.matches("abs: unknown keyword argument 'foo'", err(function() return x:abs{ foo = 1 } end))
    assert.matches("cat: unknown keyword argument 'axis' %(expected dim%)",
      err(function() return ltc.cat{ { x, x }, axis = 2 } end))
    assert.matches("transpose: unknown keyword argument 'dim3'",
      err(function() return x:transpose{ dim3 = 1 } end))
    assert.matches("narrow: argument 'dim' given by position and by keyword",
      err(function() return x:narrow(1, { dim = 1, start = 1, length = 1 }) end))
  end)

  it("raise the same errors from the ops Lua functions replaced, at the caller's line", function()
    local x = x23()
    -- the message after the position, and the line of this file it names
    local function where(fn)
      local msg = err(fn)
      local line, rest = msg:match("day_one_api_spec%.lua:(%d+): (.*)$")
      assert(line, "no position of this file in: " .. msg)
      return tonumber(line), rest
    end
    local l0 = debug.getinfo(1, "l").currentline
    local cat_line, cat_msg = where(function() local c = ltc.cat({ x, x }, { dimm = 1 }); return c end)
    local clamp_line, clamp_msg = where(function() return x:clamp(0, { maxx = 1 }) end)
    local inplace_line, inplace_msg = where(function() local y = x:clamp_(0, { maxx = 1 }); return y end)
    local dup_line, dup_msg = where(function() return x:clamp(0, { min = 1 }) end)
    -- an error of the op under the Lua function (cat's sizes), past the keyword closure
    local size_line, size_msg = where(function() local c = ltc.cat{ { x, x:t() }, dim = 1 }; return c end)
    assert.same({ l0 + 1, l0 + 2, l0 + 3, l0 + 4, l0 + 6 },
      { cat_line, clamp_line, inplace_line, dup_line, size_line })
    assert.equal("cat: unknown keyword argument 'dimm' (expected dim)", cat_msg)
    assert.equal("clamp: unknown keyword argument 'maxx' (expected max)", clamp_msg)
    assert.equal("clamp_: unknown keyword argument 'maxx' (expected max)", inplace_msg)
    assert.equal("clamp: argument 'min' given by position and by keyword", dup_msg)
    assert.equal("cat: tensor 2 has size [3,2], tensor 1 [2,3]: sizes must match except in the "
      .. "joined dim", size_msg)
  end)

  it("name a key no overload takes before one given twice, whatever the table's order", function()
    local x = x23()
    for _, key in ipairs { "a", "b", "c", "d", "foo", "zzz" } do
      local msg = err(function() return x:narrow(1, { dim = 1, [key] = 1 }) end)
      assert.equal("narrow: unknown keyword argument '" .. key .. "' (expected start, length)",
        msg:match("narrow: .*$"))
      msg = err(function() return x:clamp(0, { min = 1, [key] = 1 }) end)
      assert.equal("clamp: unknown keyword argument '" .. key .. "' (expected max)",
        msg:match("clamp: .*$"))
    end
  end)

  it("reach the Lua functions through one C closure that ltc.help looks through", function()
    assert.equal("C", debug.getinfo(ltc.cat, "S").what)
    local fn = require("ltc.help").wraps[ltc.cat]
    assert.equal("Lua", debug.getinfo(fn, "S").what)
    assert.matches("cat%(Tensor%[%] tensors, dim dim=1%)", ltc.doc(ltc.cat))
  end)

  it("leave the creation functions' options and div's rounding_mode as they were", function()
    assert.equal("int64", ltc.zeros(2, { dtype = "int64" }):dtype())
    local q = ltc.tensor({ -7, 7 }, "int32"):div(2, { rounding_mode = "floor" })
    assert.same({ -4, 3 }, q:totable())
  end)
end)

describe("the default dtype", function()
  after_each(function() ltc.set_default_dtype("float32") end)

  it("is float32 and can be float64, float16 or bfloat16", function()
    assert.equal("float32", ltc.get_default_dtype())
    for _, d in ipairs { "float64", "float16", "bfloat16", "float32" } do
      ltc.set_default_dtype(d)
      assert.equal(d, ltc.get_default_dtype())
    end
    ltc.set_default_dtype(ltc.double)
    assert.equal("float64", ltc.get_default_dtype())
  end)

  it("refuses other dtypes, naming set_default_dtype", function()
    assert.matches("set_default_dtype: the default dtype must be a floating dtype",
      err(function() ltc.set_default_dtype("int64") end))
    assert.matches("set_default_dtype: unknown dtype 'foo'", err(function() ltc.set_default_dtype("foo") end))
    assert.equal("float32", ltc.get_default_dtype())
  end)

  it("is the dtype of tensors of numbers, creation functions and float promotion", function()
    ltc.set_default_dtype("float64")
    -- with torch.set_default_dtype(torch.float64): tensor([1.5]), zeros(2), arange(0.5, 2),
    -- int32 * 2.5 and int32.sqrt() are float64; arange(3) int64; float32 * 2.5 float32
    assert.equal("float64", ltc.tensor({ 1.5 }):dtype())
    assert.equal("float64", ltc.tensor(2):dtype())
    for _, t in ipairs { ltc.zeros(2), ltc.ones(2), ltc.full({ 2 }, 1), ltc.rand(2), ltc.randn(2),
                         ltc.arange(0.5, 2), ltc.linspace(0, 1, 3), ltc.eye(2) } do
      assert.equal("float64", t:dtype())
    end
    assert.equal("int64", ltc.arange(3):dtype())
    local i = ltc.tensor({ 1, 2 }, "int32")
    assert.equal("float64", (i * 2.5):dtype())
    assert.equal("float64", i:sqrt():dtype())
    assert.equal("float32", (ltc.ones(2, "float32") * 2.5):dtype())
    -- float64 keeps what float32 rounds: 0.1 + 0.2 ~= 0.3 exactly as in double arithmetic
    assert.equal(0.1 + 0.2, (ltc.tensor({ 0.1 }) + 0.2)[1])
  end)
end)

describe("inference mode", function()
  it("turns recording off inside fn and restores it after", function()
    local w = ltc.ones(2):requires_grad_()
    assert.is_false(ltc.is_inference_mode_enabled())
    local inside, grad, y = ltc.inference_mode(function(a)
      return ltc.is_inference_mode_enabled(), ltc.is_grad_enabled(), w * a
    end, 2)
    assert.same({ true, false, false }, { inside, grad, y.requires_grad })
    assert.same({ false, true }, { ltc.is_inference_mode_enabled(), ltc.is_grad_enabled() })
    assert.same({ 2, 2 }, y:totable())
  end)

  it("restores the modes when fn raises", function()
    assert.matches("boom", err(function() ltc.inference_mode(function() error("boom") end) end))
    assert.same({ false, true }, { ltc.is_inference_mode_enabled(), ltc.is_grad_enabled() })
  end)

  it("holds for a block as a to-be-closed guard, and inference_mode(false, fn) leaves it", function()
    local w = ltc.ones(2):requires_grad_()
    do
      local _ <close> = ltc.inference_mode()
      assert.is_true(ltc.is_inference_mode_enabled())
      assert.is_false((w * 2).requires_grad)
      local inf, rg = ltc.inference_mode(false, function()
        return ltc.is_inference_mode_enabled(), (w * 2).requires_grad
      end)
      assert.same({ false, true }, { inf, rg })
      assert.is_true(ltc.is_inference_mode_enabled())
    end
    assert.same({ false, true }, { ltc.is_inference_mode_enabled(), ltc.is_grad_enabled() })
    do
      local _ <close> = ltc.no_grad()
      assert.is_false(ltc.is_grad_enabled())
    end
    assert.is_true(ltc.is_grad_enabled())
  end)

  it("names inference_mode when fn is not a function", function()
    assert.matches("inference_mode: bad argument #1 %(a function expected, got number%)",
      err(function() ltc.inference_mode(3) end))
  end)
end)

describe("composites", function()
  local function flat(t) return t:reshape(-1):totable() end

  it("unbind, new_zeros/new_ones/new_full/new_empty/new_tensor, tolist", function()
    local x = x23()
    local u = x:unbind(2)
    assert.same({ 3, { 1, 4 }, { 3, 6 } }, { #u, u[1]:totable(), u[3]:totable() })
    assert.same({ 2, { 1, 2, 3 } }, { #ltc.unbind(x), ltc.unbind(x)[1]:totable() })
    local i = ltc.tensor({ 1 }, "int32")
    assert.same({ "int32", { 2, 3 }, { { 0, 0, 0 }, { 0, 0, 0 } } },
      { i:new_zeros(2, 3):dtype(), i:new_zeros({ 2, 3 }):size(), i:new_zeros(2, 3):totable() })
    assert.same({ "float64", { 1, 1 } }, { x:new_ones(2, "float64"):dtype(), x:new_ones(2):totable() })
    assert.same({ "int32", { 7, 7 } }, { i:new_full({ 2 }, 7):dtype(), i:new_full({ 2 }, 7):totable() })
    assert.same({ 3, 1 }, x:new_empty(3, 1):size())
    assert.same({ "int32", { 5, 6 } }, { i:new_tensor({ 5, 6 }):dtype(), i:new_tensor({ 5, 6 }):totable() })
    assert.same({ { 1, 2, 3 }, { 4, 5, 6 } }, x:tolist())
    assert.equal(3, ltc.tensor(3):tolist())
  end)

  it("clamp_min, clamp_max and their in-place forms", function()
    -- torch.tensor([1, 0, 2, 3]).clamp_min(1) -> [1, 1, 2, 3]; tensor([1., 5]).clamp_max(2) -> [1, 2]
    assert.same({ 1, 1, 2, 3 }, ltc.tensor({ 1, 0, 2, 3 }, "int64"):clamp_min(1):totable())
    assert.same({ 1, 2 }, ltc.clamp_max(ltc.tensor({ 1, 5 }), 2):totable())
    local y = ltc.tensor({ -1, 4 })
    assert.equal(y, y:clamp_min_(0))
    y:clamp_max_(3)
    assert.same({ 0, 3 }, y:totable())
  end)

  it("roll, with its gradient", function()
    local x = x23()
    -- x.roll(1), x.roll(1, 1), x.roll((1, -1), (0, 1)) flattened
    assert.same({ 6, 1, 2, 3, 4, 5 }, flat(x:roll(1)))
    assert.same({ 3, 1, 2, 6, 4, 5 }, flat(x:roll(1, 2)))
    assert.same({ 5, 6, 4, 2, 3, 1 }, flat(x:roll({ 1, -1 }, { 1, 2 })))
    assert.same({ 1, 2, 3, 4, 5, 6 }, flat(x:roll(3, 2)))
    -- (w.roll(1) * tensor([1., 2, 3])).sum().backward(): w.grad [2, 3, 1]
    local w = ltc.tensor({ 1, 2, 3 }):requires_grad_();
    (w:roll(1) * ltc.tensor({ 1, 2, 3 })):sum():backward()
    assert.same({ 2, 3, 1 }, w.grad:totable())
    assert.matches("roll: shifts %(2%) and dims %(1%)", err(function() return x:roll({ 1, 1 }, 1) end))
  end)

  it("repeat_interleave with int, table and tensor counts, and tile", function()
    local x = x23()
    -- x.repeat_interleave(2); x.repeat_interleave(2, 0); x.repeat_interleave(tensor([1, 0, 2]), 1)
    assert.same({ 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6 }, x:repeat_interleave(2):totable())
    assert.same({ 1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6 }, flat(x:repeat_interleave(2, 1)))
    assert.same({ 1, 3, 3, 4, 6, 6 }, flat(x:repeat_interleave(ltc.tensor({ 1, 0, 2 }, "int64"), 2)))
    assert.same({ 1, 3, 3, 4, 6, 6 }, flat(x:repeat_interleave({ 1, 0, 2 }, 2)))
    -- w.repeat_interleave(tensor([2, 0, 1])) * tensor([1., 2, 3]), summed: w.grad [3, 0, 3]
    local w = ltc.tensor({ 1, 2, 3 }):requires_grad_();
    (w:repeat_interleave(ltc.tensor({ 2, 0, 1 }, "int64")) * ltc.tensor({ 1, 2, 3 })):sum():backward()
    assert.same({ 3, 0, 3 }, w.grad:totable())
    assert.matches("repeat_interleave: repeats has 2 counts, but dim 2 has size 3",
      err(function() return x:repeat_interleave({ 1, 2 }, 2) end))
    -- x.tile((2,)).shape [2, 6]; x.tile((2, 1, 1)).shape [2, 2, 3]
    assert.same({ 2, 6 }, x:tile(2):size())
    assert.same({ 1, 2, 3, 1, 2, 3 }, x:tile(2)[1]:totable())
    assert.same({ 2, 2, 3 }, x:tile({ 2, 1, 1 }):size())
  end)

  it("isclose, allclose, equal, as_tensor", function()
    local a = ltc.tensor({ 1, 0 / 0, math.huge, 1e-9, 2 })
    local b = ltc.tensor({ 1 + 1e-6, 0 / 0, math.huge, 0, 2.1 })
    -- torch.isclose(a, b) -> [True, False, True, True, False]; equal_nan=True: [True, True, True, True, False]
    assert.same({ true, false, true, true, false }, ltc.isclose(a, b):totable())
    assert.same({ true, true, true, true, false }, a:isclose(b, { equal_nan = true }):totable())
    -- by hand, rtol 0.1, atol 0: |1e-9 - 0| <= 0 fails, |2 - 2.1| <= 0.21 holds
    assert.same({ true, true, true, false, true }, ltc.isclose(a, b, 0.1, 0, true):totable())
    local x = x23()
    assert.is_true(ltc.allclose(x, x + 1e-7))
    assert.is_false(x:allclose(x + 1e-3))
    assert.is_true(ltc.equal(x, x:clone()))
    assert.is_false(ltc.equal(x, x:t()))
    assert.is_false(ltc.equal(x, x + 1))
    assert.equal(x, ltc.as_tensor(x))
    assert.equal(x, ltc.as_tensor(x, "float32"))
    assert.equal("float64", ltc.as_tensor(x, "float64"):dtype())
    assert.same({ "int64", { 1, 2 } }, { ltc.as_tensor({ 1, 2 }, "int64"):dtype(), ltc.as_tensor({ 1, 2 }, "int64"):totable() })
  end)

  it("nan_to_num and nan_to_num_", function()
    local v = ltc.tensor({ 0 / 0, math.huge, -math.huge, 1 })
    -- tensor([nan, inf, -inf, 1]).nan_to_num() -> [0, 3.4028234663852886e+38, -3.4028234663852886e+38, 1]
    assert.same({ 0, 3.4028234663852886e+38, -3.4028234663852886e+38, 1 }, v:nan_to_num():totable())
    assert.same({ 1, 2, -3, 1 }, v:nan_to_num(1, 2, -3):totable())
    assert.same({ 0, 2, -1.7976931348623157e308, 1 },
      v:double():nan_to_num{ posinf = 2 }:totable())
    v:nan_to_num_()
    assert.same({ 0, 3.4028234663852886e+38, -3.4028234663852886e+38, 1 }, v:totable())
    assert.same({ 1, 2 }, ltc.tensor({ 1, 2 }, "int32"):nan_to_num():totable())
  end)

  it("t:where(cond, other) and the fields mT, mH, H", function()
    local x = x23()
    -- x.where(x > 2, tensor(0.)) -> [0, 0, 3, 4, 5, 6]
    assert.same({ 0, 0, 3, 4, 5, 6 }, flat(x:where(x:gt(2), 0)))
    -- torch.ones(4, 2, 3).mT.shape -> [4, 3, 2]
    assert.same({ 4, 3, 2 }, ltc.ones(4, 2, 3).mT:size())
    assert.same({ 4, 3, 2 }, ltc.ones(4, 2, 3).mH:size())
    assert.same({ { 1, 4 }, { 2, 5 }, { 3, 6 } }, x.H:totable())
    assert.matches("t.mT: needs a tensor of at least 2 dims, got 1%-d", err(function() return ltc.ones(3).mT end))
    assert.matches("t.H: needs a 0%-d or 2%-d tensor", err(function() return ltc.ones(2, 2, 2).H end))
  end)
end)

describe("clip_grad_norm_'s inf norm and randint's messages", function()
  it("takes norm_type \"inf\" as math.huge", function()
    -- p.grad = tensor([3., -4.]); clip_grad_norm_([p], 1, 'inf') -> tensor(4.), grad [0.75, -1.0]
    for _, nt in ipairs { "inf", math.huge, { norm_type = "inf" } } do
      local p = ltc.tensor({ 3, -4 }):requires_grad_()
      p.grad = ltc.tensor({ 3, -4 })
      local total = ltc.nn.utils.clip_grad_norm_({ p }, 1, nt)
      assert.equal(4, total:item())
      local g = p.grad:totable()
      assert.is_true(math.abs(g[1] - 0.75) < 1e-6 and math.abs(g[2] + 1) < 1e-6)
    end
    assert.matches("clip_grad_norm_: max_norm and norm_type must be numbers %(norm_type also \"inf\"%)",
      err(function() ltc.nn.utils.clip_grad_norm_({}, 1, "foo") end))
  end)

  it("says how randint's arguments read", function()
    assert.matches("randint: low %(10%) must be less than high %(3%): ltc.randint%(10, 3%) is "
      .. "randint%(low, high%), one draw; 3 draws in %[0, 10%) are ltc.randint%(10, {3}%)",
      err(function() return ltc.randint(10, 3) end))
    assert.matches("randint: no size given", err(function() return ltc.randint(10) end))
    assert.matches("randint: no size given", err(function() return ltc.randint() end))
    assert.same({ 3 }, ltc.randint(10, { 3 }):size())
  end)
end)

describe("Ellipsis in a table index", function()
  -- x = torch.arange(24).reshape(2, 3, 4): x[..., 0].shape (2, 3), x[..., 0][1][2] 20;
  -- x[0, ..., 1] [1, 5, 9]; x[1, ..., 2, 3] 23; x[..., 1, 2].shape (2,)
  local x = ltc.arange(24):reshape(2, 3, 4)

  it("stands for the dims the other entries leave", function()
    assert.same({ 2, 3 }, x[{ ltc.ellipsis, 1 }]:size())
    assert.equal(20, x[{ "...", 1 }]:totable()[2][3])
    assert.same({ 1, 5, 9 }, x[{ 1, "...", 2 }]:totable())
    assert.equal(23, x[{ 2, "...", 3, 4 }])
    assert.same({ 2 }, x[{ "...", 2, 3 }]:size())
    assert.same({ 3, 4 }, x[{ 1, "..." }]:size())
    assert.equal(0, x[{ "...", 1, 1, 1 }])
    assert.same({ 2, 3, 4 }, x["..."]:size())
  end)

  it("writes through t[{...}] = v and t[\"...\"] = v", function()
    local y = ltc.zeros(2, 2)
    y[{ "...", 1 }] = 5
    assert.same({ { 5, 0 }, { 5, 0 } }, y:totable())
    y["..."] = 7
    assert.same({ { 7, 7 }, { 7, 7 } }, y:totable())
  end)

  it("is one per index, and other strings are errors", function()
    assert.matches('index: more than one "..." %(entries 1 and 3%)',
      err(function() return x[{ "...", 1, "..." }] end))
    assert.matches("index: entry 1 is a string '..'", err(function() return x[{ "..", 1 }] end))
  end)
end)
