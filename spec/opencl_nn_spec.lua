-- The OpenCL backend's kernels for the CNN and LSTM paths against the CPU backend, with no
-- eager-fallback step: conv2d and its backward ops, max_pool2d and its backward, cat, stack,
-- narrow, select and their scatter forms, index_add, scatter_add, arange and the random ops
-- (the same Philox stream as the CPU: the same seed gives the same numbers). Odd sizes,
-- strides, padding, dilation, groups and empty tensors. Skipped with one line without OpenCL.
local ltc = require "ltc"
local close = dofile("spec/support/close.lua")
local O = dofile("spec/support/opencl.lua")
O.assert = assert

if not O.avail then
  describe("opencl kernels for CNN and LSTM", function()
    pending("skipped: " .. tostring(O.why):gsub("\n.*", ""))
  end)
  return
end
O.ocl.open()
local same = O.same

local function out_size(n, k, s, p, d) return (n + 2 * p - d * (k - 1) - 1) // s + 1 end

describe("opencl kernels for CNN and LSTM", function()
  after_each(function() ltc.set_backend("cpu") end)

  describe("conv2d", function()
    for _, c in ipairs {
      -- name, input, weight, stride, padding, dilation, groups, bias
      { "3x3 pad 1 (the CNN's first layer)", { 2, 1, 9, 9 }, { 4, 1, 3, 3 }, 1, 1, 1, 1, true },
      { "odd sizes, stride 2x3, padding 2x1, dilation 1x2", { 3, 5, 11, 13 }, { 7, 5, 3, 2 },
        { 2, 3 }, { 2, 1 }, { 1, 2 }, 1, true },
      { "groups 2, no bias", { 2, 6, 7, 8 }, { 4, 3, 3, 3 }, 1, 0, 1, 2, false },
      { "a 3-d input (one image), 1x1 kernel", { 3, 5, 4 }, { 2, 3, 1, 1 }, 1, 0, 1, 1, true },
      { "depthwise (groups = channels), dilation 2", { 1, 4, 10, 10 }, { 4, 1, 3, 3 }, 2, 2, 2, 4, true },
    } do
      local name, xs, ws, stride, padding, dilation, groups, bias = table.unpack(c)
      local function pr(v) return type(v) == "table" and v or { v, v } end
      local s, p, d = pr(stride), pr(padding), pr(dilation)
      local b0 = #xs - 3
      it("and its backward ops match the CPU: " .. name, function()
        same(function()
          ltc.manual_seed(3)
          local x, w = ltc.randn(xs), ltc.randn(ws)
          local bb = bias and ltc.randn(ws[1]) or nil
          local y = bb and ltc.conv2d(x, w, bb, s, p, d, groups) or ltc.conv2d(x, w, nil, s, p, d, groups)
          local gs = y:size()
          assert.are.equal(out_size(xs[b0 + 2], ws[3], s[1], p[1], d[1]), gs[b0 + 2])
          local g = ltc.randn(gs)
          return y, ltc.conv2d_backward_input(g, w, xs, s, p, d, groups),
            ltc.conv2d_backward_weight(g, x, ws, s, p, d, groups)
        end, 1e-4)
      end)
    end
    it("runs as im2col and a CLBlast GEMM (groups 1; grouped ones direct), one program for every batch size", function()
      ltc.set_backend("opencl")
      local w, b = ltc.randn(5, 3, 3, 3), ltc.randn(5)
      local builds
      for i, n in ipairs { 4, 3, 1 } do
        local x = ltc.randn(n, 3, 8, 8)
        local y = ltc.conv2d(x, w, b, 1, 1)
        local g = ltc.randn(n, 5, 8, 8)
        local gi = ltc.conv2d_backward_input(g, w, { n, 3, 8, 8 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1)
        local gw = ltc.conv2d_backward_weight(g, x, { 5, 3, 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1)
        for _, t in ipairs { y, gi, gw } do
          assert.matches("CLBlast gemm %(conv2d", ltc.debug.backend_text(t))
        end
        ltc.sync()
        local now = ltc.metrics.counter("OpenCLProgramBuild") + ltc.metrics.counter("OpenCLProgramDiskHit")
        if i > 1 then assert.are.equal(builds, now, "a program was built for batch " .. n) end
        builds = now
      end
      local y = ltc.conv2d(ltc.randn(2, 4, 6, 6), ltc.randn(4, 2, 3, 3), nil, 1, 1, 1, 2)
      assert.is_nil(ltc.debug.backend_text(y):match("CLBlast gemm"))
    end)
    it("of an empty batch is empty, and its weight gradient 0", function()
      same(function()
        local x, w = ltc.zeros(0, 2, 5, 5), ltc.ones(3, 2, 3, 3)
        local y = ltc.conv2d(x, w, ltc.ones(3), 1, 1)
        local g = ltc.zeros(0, 3, 5, 5)
        return y, ltc.conv2d_backward_input(g, w, { 0, 2, 5, 5 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1),
          ltc.conv2d_backward_weight(g, x, { 3, 2, 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1)
      end)
    end)
    it("keeps float64", function()
      same(function()
        ltc.manual_seed(4)
        local x, w = ltc.randn({ 2, 3, 6, 5 }, "float64"), ltc.randn({ 2, 3, 3, 3 }, "float64")
        return ltc.conv2d(x, w, nil, 1, 1)
      end, 1e-12)
    end)
  end)

  describe("max_pool2d", function()
    for _, c in ipairs {
      { "2x2 (the CNN's)", { 2, 3, 8, 8 }, 2 },
      { "odd sizes, 3x3 stride 2 padding 1", { 2, 2, 9, 7 }, 3, 2, 1 },
      { "dilation 2, ceil_mode", { 1, 2, 11, 10 }, 2, 2, 0, 2, true },
      { "a 3-d input, 2x3 windows", { 3, 5, 7 }, { 2, 3 }, { 1, 2 } },
    } do
      local name, size, k, s, p, d, ceil = table.unpack(c)
      it("and its backward match the CPU: " .. name, function()
        same(function()
          ltc.manual_seed(5)
          local x = ltc.randn(size)
          local y = ltc.max_pool2d(x, k, s, p, d, ceil)
          local g = ltc.randn(y:size())
          local function pr(v, dv) v = v or dv; return type(v) == "table" and v or { v, v } end
          return y, ltc.max_pool2d_backward(g, x, pr(k), pr(s, k), pr(p, 0), pr(d, 1), ceil or false)
        end, 1e-5)
      end)
    end
    it("takes the first of equal maxima and lets a NaN win, as the CPU", function()
      same(function()
        local x = ltc.tensor({ { { { 1, 1, 0, 2 }, { 1, 0, 0 / 0, 2 }, { 3, 3, 3, 3 }, { 3, 3, 0, 0 / 0 } } } })
        local y = ltc.max_pool2d(x, 2)
        local g = ltc.tensor({ { { { 1, 2 }, { 3, 4 } } } })
        return y, ltc.max_pool2d_backward(g, x, { 2, 2 }, { 2, 2 }, { 0, 0 }, { 1, 1 }, false)
      end, 0)
    end)
  end)

  describe("joins and slices", function()
    it("cat along each dim, int32 and bool, an empty part and a skipped [0]", function()
      same(function()
        local a = ltc.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
        local b = ltc.tensor({ { 7, 8, 9 } })
        local e = ltc.zeros(0, 3)
        local i = ltc.tensor({ { 1, 2 }, { 3, 4 } }, "int32")
        return ltc.cat({ a, b, e, a }, 1), ltc.cat({ a, a:narrow(2, 1, 2) }, 2),
          ltc.cat({ i, i * 2 }, 2), ltc.cat({ ltc.zeros(0), a }, 1),
          ltc.cat({ a:gt(2), a:lt(5) }, 1)
      end, 0)
    end)
    it("stack at the front, middle and end", function()
      same(function()
        local a = ltc.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
        local b = a * 10
        return ltc.stack({ a, b }, 1), ltc.stack({ a, b, a }, 2), ltc.stack({ a, b }, -1)
      end, 0)
    end)
    it("narrow and select along each dim, negative starts, length 0", function()
      same(function()
        local a = ltc.arange(1, 61):view(3, 4, 5):to("float32")
        return a:narrow(1, 2, 2) + 0, a:narrow(2, -2, 2) * 1, a:narrow(3, 6, 0) + 0,
          a:select(1, 3) + 0, a:select(2, -1) * 1, a:select(3, 2) + 0
      end, 0)
    end)
    it("narrow_scatter and select_scatter (writes through views)", function()
      same(function()
        local a = ltc.zeros(3, 4, 5)
        local src = ltc.arange(1, 31):view(3, 2, 5):to("float32")
        local row = ltc.arange(1, 13):view(3, 4):to("float32")
        return ltc.narrow_scatter(a, src, 2, 2), ltc.select_scatter(a, row, 3, -1),
          ltc.select_scatter(a, ltc.ones(4, 5), 1, 1)
      end, 0)
    end)
    it("a write through a narrow view and a row write run on the device", function()
      same(function()
        local a = ltc.zeros(4, 6)
        a:narrow(2, 2, 3):add_(1)
        a[3] = ltc.arange(1, 7):to("float32")
        return a * 1
      end, 0)
    end)
  end)

  describe("index_add and scatter_add", function()
    it("index_add along each dim, repeated indices summed in order, int32 indices", function()
      same(function()
        local base = ltc.arange(1, 13):view(3, 4):to("float32")
        local src1 = ltc.arange(1, 21):view(5, 4):to("float32") * 0.5
        local src2 = ltc.arange(1, 7):view(3, 2):to("float32")
        return base:index_add(1, ltc.tensor({ 3, 1, 3, 2, 3 }, "int64"), src1),
          base:index_add(2, ltc.tensor({ 4, 4 }, "int32"), src2)
      end, 1e-6)
    end)
    it("embedding's backward (index_add) gives the CPU's gradient", function()
      same(function()
        local w = ltc.tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } }):requires_grad_()
        local idx = ltc.tensor({ { 1, 3 }, { 3, 3 } }, "int64")
        local y = ltc.embedding(w, idx)
        ;(y * ltc.tensor({ 1, 2 })):sum():backward()
        return w.grad
      end, 1e-6)
    end)
    it("scatter_add along each dim", function()
      same(function()
        local base = ltc.zeros(3, 4)
        local idx = ltc.tensor({ { 1, 2, 3, 1 }, { 3, 3, 1, 2 } }, "int64")
        local src = ltc.arange(1, 9):view(2, 4):to("float32")
        local idx2 = ltc.tensor({ { 4, 4 }, { 1, 2 }, { 3, 1 } }, "int64")
        local src2 = ltc.tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } })
        return ltc.scatter_add(base, 1, idx, src), ltc.scatter_add(base, 2, idx2, src2)
      end, 1e-6)
    end)
    it("an index out of range is a Lua error naming the op; the runtime goes on", function()
      ltc.set_backend("opencl")
      local ok, err = pcall(function()
        return ltc.zeros(3, 2):index_add(1, ltc.tensor({ 1, 4 }, "int64"), ltc.ones(2, 2)):totable()
      end)
      assert.is_false(ok)
      assert.matches("index_add: index 4 out of range %(1..3", err)
      ok, err = pcall(function()
        return ltc.scatter_add(ltc.zeros(2, 2), 1, ltc.tensor({ { 0, 1 } }, "int64"), ltc.ones(1, 2)):totable()
      end)
      assert.is_false(ok)
      assert.matches("scatter_add: index 0 out of range", err)
      close({ 2, 4 }, (ltc.tensor({ 1, 2 }) * 2):totable())
    end)
  end)

  describe("arange and the random ops", function()
    it("arange in every dtype, negative and fractional steps, empty", function()
      same(function()
        return ltc.arange(0, 10), ltc.arange(1, 2, 0.1), ltc.arange(5, -3, -2, "float64"),
          ltc.arange(0, 7, 1, "int32"), ltc.arange(3, 3)
      end, 0)
    end)
    it("rand, randn, randint and bernoulli draw the CPU's numbers for the same seed", function()
      same(function()
        ltc.manual_seed(42)
        local p = ltc.rand(5, 7)
        return p, ltc.randn(3, 33), ltc.rand({ 4 }, "float64"), ltc.randn({ 9 }, "float64"),
          ltc.randint(-3, 11, { 6, 5 }), ltc.randint(0, 4, { 7 }, "int32"), ltc.bernoulli(p),
          ltc.tensor({ 1, 2, 3, 4, 5, 6 }):bernoulli(0.3), ltc.rand(0)
      end, 1e-6)
    end)
    it("dropout keeps the CPU's elements and scales them as it does; p = 0, 1, eval", function()
      local c, o = same(function()
        ltc.manual_seed(7)
        local x = ltc.randn(64, 33) + 3
        return ltc.dropout(x, 0.25), ltc.dropout(x, 1), ltc.dropout(x, 0.5, false),
          ltc.nn.functional.dropout(x, 0.4)
      end, 1e-6)
      local kept = 0
      for _, row in ipairs(o[1][1]) do for _, v in ipairs(row) do if v ~= 0 then kept = kept + 1 end end end
      assert.is_true(kept > 0.6 * 64 * 33 and kept < 0.9 * 64 * 33, "kept " .. kept)
    end)
    it("draws fresh numbers at every step of a loop without recompiling", function()
      ltc.set_backend("opencl")
      ltc.manual_seed(1)
      local a = ltc.rand(1000):sum():item()
      local compiles = ltc.metrics.counter("UncachedCompile")
      local b = ltc.rand(1000):sum():item()
      assert.are_not.equal(a, b)
      assert.are.equal(compiles, ltc.metrics.counter("UncachedCompile"))
      assert.is_true(math.abs(b / 1000 - 0.5) < 0.05)
    end)
  end)

  describe("norm (gradient clipping)", function()
    it("p = 2, 1, 3, inf, -inf and 0, of everything and along each dim, keepdim; NaN wins", function()
      same(function()
        local a = ltc.tensor({ { 3, -4, 0, 1 }, { 0.5, 2, -2, 0 }, { 1, 1, 1, 1 } })
        return a:norm(), a:norm(1), a:norm(3, 1), a:norm(math.huge, 2), a:norm(-math.huge, 1),
          a:norm(0, 2, true), ltc.tensor({ 1, 0 / 0, 2 }):norm(), ltc.zeros(0):norm(),
          ltc.tensor({ 1e-3, 2e-3 }, "float64"):norm()
      end, 1e-6)
    end)
    it("clip_grad_norm_ clips on the device", function()
      same(function()
        local w = ltc.tensor({ { 3, 4 }, { 0, 12 } }):requires_grad_()
        ;(w * w):sum():backward()
        local total = ltc.nn.utils.clip_grad_norm_({ w }, 5)
        return total, w.grad
      end, 1e-6)
    end)
  end)

  describe("training steps", function()
    it("a CNN step (conv, relu, max_pool, linear, cross_entropy, SGD) runs wholly on the device", function()
      same(function()
        ltc.manual_seed(0)
        local nn = ltc.nn
        local model = nn.Sequential(nn.Conv2d(1, 4, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
          nn.Conv2d(4, 6, 3, { stride = 2 }), nn.ReLU(), nn.Flatten(), nn.Linear(6 * 3 * 3, 5))
        local opt = ltc.optim.SGD(model:parameters(), { lr = 0.05 })
        local x = ltc.randn(7, 1, 14, 14)
        local y = ltc.tensor({ 1, 2, 3, 4, 5, 1, 2 }, "int64") -- (% of integers is a host step)
        local losses = {}
        for i = 1, 3 do
          opt:zero_grad()
          local loss = nn.functional.cross_entropy(model(x), y)
          loss:backward()
          opt:step()
          losses[i] = loss
        end
        return ltc.stack(losses), model[1].weight
      end, 1e-4)
    end)
    it("ltc.jit replays a CNN step with dropout on the device to the CPU's losses", function()
      local r0 = ltc.metrics.counter("GraphReplay")
      local _, o = same(function()
        ltc.manual_seed(0)
        local nn = ltc.nn
        local model = nn.Sequential(nn.Conv2d(1, 3, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
          nn.Flatten(), nn.Dropout(0.3), nn.Linear(3 * 5 * 5, 4))
        local opt = ltc.optim.SGD(model:parameters(), { lr = 0.1 })
        local step = ltc.jit(function(x, y)
          opt:zero_grad()
          local loss = nn.functional.cross_entropy(model(x), y)
          loss:backward()
          opt:step()
          return loss
        end)
        local data = ltc.randn(12, 1, 10, 10)
        local labels = ltc.tensor({ 1, 2, 3, 4, 1, 2, 3, 4, 4, 3, 2, 1 }, "int64")
        local losses = {}
        for i = 1, 5 do
          local lo = ((i - 1) % 3) * 4 + 1
          losses[i] = step(data:narrow(1, lo, 4), labels:narrow(1, lo, 4)):item()
        end
        return ltc.tensor(losses), model[1].weight
      end, 1e-4)
      assert.are_not.equal(o[1][1][4], o[1][1][1]) -- it trains (and dropout draws anew)
      assert.is_true(ltc.metrics.counter("GraphReplay") - r0 >= 6) -- 3 replays on each backend
    end)
    it("LSTM and GRU take the step-by-step ops, as the device lowers no fused layer op", function()
      assert.is_false(ltc.debug.lowers_op("opencl", "lstm_layer"))
      assert.is_false(ltc.debug.lowers_op("opencl:0", "gru_layer", "float64"))
      assert.is_true(ltc.debug.lowers_op("opencl", "add"))
      assert.is_false(ltc.debug.lowers_op("opencl", "add", "float16")) -- narrow: on the host
      local x = ltc.randn(3, 2, 4):to("opencl")
      for _, name in ipairs { "LSTM", "GRU" } do
        local m = ltc.nn[name](4, 5):to("opencl")
        local ir = ltc.debug.ir((m(x)))
        assert.is_nil(ir:find("_layer(", 1, true), ir)
        assert.truthy(ir:find("sigmoid", 1, true), ir)
      end
    end)
    it("an LSTM step (embedding, 2 layers with dropout, Adam) runs wholly on the device", function()
      same(function()
        ltc.manual_seed(0)
        local nn = ltc.nn
        local emb, lstm, head = nn.Embedding(11, 6), nn.LSTM(6, 8, { num_layers = 2, dropout = 0.2 }), nn.Linear(8, 11)
        local params = {}
        for _, m in ipairs({ emb, lstm, head }) do
          for _, p in ipairs(m:parameters()) do params[#params + 1] = p end
        end
        local opt = ltc.optim.Adam(params, { lr = 0.01 })
        local tok = ltc.tensor({ { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 }, { 10, 11, 1 }, { 2, 3, 4 } }, "int64")
        local tgt = ltc.tensor({ 3, 10, 6, 2, 9, 5, 1, 8, 4, 11, 7, 3, 10, 6, 2 }, "int64")
        local losses = {}
        for i = 1, 2 do
          opt:zero_grad()
          local out = lstm(emb(tok))
          local loss = nn.functional.cross_entropy(head(out):reshape({ 15, 11 }), tgt)
          loss:backward()
          opt:step()
          losses[i] = loss
        end
        return ltc.stack(losses), emb.weight
      end, 1e-4)
    end)
  end)
end)
