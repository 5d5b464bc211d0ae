-- The OpenCL backend's kernels for the ops that used to run through the eager fallback
-- (src/opencl/lower_more.c, kernels_more.c) against the CPU backend on random inputs, with
-- no eager-fallback step: layer_norm and batch_norm (and their backward, composed of device
-- ops), nll_loss and its backward, gather, scatter, scatter_add (gather's backward),
-- tril/triu, avg_pool2d and its backward, cumsum/cumprod, sort/argsort/topk. Odd sizes and
-- a ragged batch: sizes are kernel arguments, so a second size builds no program.
-- Skipped with one line without OpenCL.
local ltc = require "ltc"
local O = dofile("spec/support/opencl.lua")
O.assert = assert

if not O.avail then
  describe("opencl kernels for norms, losses, gather/scatter, scans and sorting", function()
    pending("skipped: " .. tostring(O.why):gsub("\n.*", ""))
  end)
  return
end
O.ocl.open()
local same = O.same

-- Programs the driver built (from source or from the disk cache): a run that reuses the
-- built programs adds none.
local function builds()
  return ltc.metrics.counter("OpenCLProgramBuild") + ltc.metrics.counter("OpenCLProgramDiskHit")
end

-- fn(n) run on the device for each n in sizes, all on the device and matching the CPU; the
-- sizes after the first build no program (a new graph, the same kernels).
local function ragged(fn, sizes, tol)
  for i, n in ipairs(sizes) do
    local b0 = builds()
    same(function() return fn(n) end, tol)
    if i > 1 then assert.are.equal(b0, builds(), "a program was built for size " .. n) end
  end
end

describe("opencl kernels for norms, losses, gather/scatter, scans and sorting", function()
  after_each(function() ltc.set_backend("cpu") end)

  describe("layer_norm", function()
    it("over the last dim and the last two, with weight and bias and their gradients", function()
      ragged(function(n)
        ltc.manual_seed(n)
        local x = (ltc.randn(n, 7, 13) * 3 + 1):requires_grad_()
        local w, b = (ltc.randn(13) + 1):requires_grad_(), ltc.randn(13):requires_grad_()
        local y = ltc.layer_norm(x, 13, w, b, 1e-5)
        ;(y * ltc.randn(n, 7, 13)):sum():backward()
        local z = ltc.layer_norm(x:detach(), { 7, 13 })
        return y, z, x.grad, w.grad, b.grad
      end, { 5, 3, 1 }, 1e-4)
    end)
    it("keeps float64", function()
      same(function()
        ltc.manual_seed(2)
        return ltc.layer_norm(ltc.randn({ 3, 9 }, "float64"), 9, ltc.randn({ 9 }, "float64"),
          ltc.randn({ 9 }, "float64"))
      end, 1e-10)
    end)
  end)

  describe("batch_norm", function()
    it("training and eval over [N, C, H, W] and [N, C], with the gradients", function()
      ragged(function(n)
        ltc.manual_seed(10 + n)
        local x = (ltc.randn(n, 3, 5, 7) * 2 + 0.5):requires_grad_()
        local w, b = (ltc.randn(3) + 1):requires_grad_(), ltc.randn(3):requires_grad_()
        local rm, rv = ltc.zeros(3), ltc.ones(3)
        local y = ltc.batch_norm(x, rm, rv, w, b, true, 0.1, 1e-5)
        ;(y * ltc.randn(n, 3, 5, 7)):sum():backward()
        local e = ltc.batch_norm(ltc.randn(n, 4), ltc.randn(4), ltc.rand(4) + 0.5, ltc.randn(4), ltc.randn(4), false)
        return y, e, x.grad, w.grad, b.grad, rm, rv
      end, { 4, 3 }, 1e-4)
    end)
  end)

  describe("nll_loss", function()
    it("none, mean and sum, and the backward of each, int64 and int32 labels", function()
      ragged(function(n)
        ltc.manual_seed(20 + n)
        local lp = ltc.randn(n, 11):log_softmax(2):requires_grad_()
        local t = (ltc.rand(n) * 11):floor():to("int64") + 1
        local outs = {}
        for red = 0, 2 do
          outs[#outs + 1] = ltc.nll_loss(lp, red == 1 and t:to("int32") or t, red)
          outs[#outs + 1] = ltc.nll_loss_backward(red == 0 and ltc.randn(n) or ltc.tensor(1.5), lp, t, red)
        end
        ;(ltc.nll_loss(lp, t, 1) * 2):backward()
        outs[#outs + 1] = lp.grad
        outs[#outs + 1] = ltc.nll_loss(ltc.tensor({ 0.5, -1, 2 }), ltc.tensor(2, "int64"), 2)
        return table.unpack(outs)
      end, { 6, 5 }, 1e-6)
    end)
    it("a label out of range is a Lua error naming the op; the runtime goes on", function()
      ltc.set_backend("opencl")
      local ok, err = pcall(function()
        return ltc.nll_loss(ltc.zeros(2, 3), ltc.tensor({ 1, 4 }, "int64"), 1):item()
      end)
      assert.is_false(ok)
      assert.matches("nll_loss: target 4 out of range for 3 classes", err)
      assert.are.equal(3, ltc.nll_loss(ltc.tensor({ { -1, -2, -3 } }), ltc.tensor({ 3 }, "int64"), 2):item())
    end)
  end)

  describe("gather and scatter", function()
    it("gather along each dim with a smaller index, and its backward (scatter_add)", function()
      ragged(function(n)
        ltc.manual_seed(30 + n)
        local x = ltc.randn(n, 5, 6):requires_grad_()
        local i1 = (ltc.rand(n - 1, 5, 4) * n):floor():to("int64") + 1
        local i3 = (ltc.rand(n, 3, 9) * 6):floor():to("int32") + 1
        local a, c = x:gather(1, i1), x:gather(3, i3)
        ;(a:sum() + (c * c):sum()):backward()
        return a, c, x.grad
      end, { 4, 3, 2 }, 1e-5)
    end)
    it("scatter (the last write wins), a value, and scatter_add of a smaller index", function()
      ragged(function(n)
        ltc.manual_seed(40 + n)
        local self = ltc.randn(n, 6)
        local idx = ltc.tensor({ { 2, 2, 1 }, { 6, 1, 6 } }, "int64")
        local src = ltc.randn(3, 4)
        local iy = (ltc.rand(n, 2) * n):floor():to("int64") + 1
        return ltc.scatter(self, 2, idx, src), ltc.scatter(self, 2, idx, 7.5),
          ltc.scatter_add(self, 1, iy, ltc.ones(n, 2)), ltc.scatter_add(self, 2, idx, src),
          ltc.scatter(ltc.zeros({ n, 3 }, "int32"), 2, idx:narrow(1, 1, 1):clamp(1, 3), 2)
      end, { 3, 5 }, 1e-6)
    end)
    it("an index out of range is a Lua error naming the op", function()
      ltc.set_backend("opencl")
      local ok, err = pcall(function()
        return ltc.ones(2, 3):gather(2, ltc.tensor({ { 1, 4 } }, "int64")):totable()
      end)
      assert.is_false(ok)
      assert.matches("gather: index 4 out of range %(1..3", err)
      ok, err = pcall(function()
        return ltc.scatter(ltc.zeros(2, 2), 1, ltc.tensor({ { 3, 1 } }, "int64"), ltc.ones(1, 2)):totable()
      end)
      assert.is_false(ok)
      assert.matches("scatter: index 3 out of range %(1..2", err)
    end)
  end)

  describe("tril and triu", function()
    it("every diagonal, batched, int64 and bool", function()
      ragged(function(n)
        ltc.manual_seed(50 + n)
        local a = ltc.randn(n, 4, 7)
        return a:tril(), a:triu(), a:tril(2), a:triu(-1), a:tril(-9), a:triu(100),
          ltc.arange(1, 13):view(3, 4):tril(1), a:gt(0):triu(1)
      end, { 3, 2 }, 0)
    end)
  end)

  describe("avg_pool2d", function()
    for _, c in ipairs {
      { "2x2", { 2 }, nil, 0 },
      { "3x3 stride 2 padding 1, count_include_pad off", { 3 }, 2, 1, false, false },
      { "2x3 windows stride 1x2, ceil_mode", { 2, 3 }, { 1, 2 }, { 1, 1 }, true, true },
    } do
      local name, k, s, p, ceil, cip = table.unpack(c)
      it("and its backward match the CPU: " .. name, function()
        ragged(function(n)
          ltc.manual_seed(60 + n)
          local x = ltc.randn(n, 3, 9, 11):requires_grad_()
          local y = ltc.avg_pool2d(x, k, s, p, ceil or false, cip == nil and true or cip)
          ;(y * ltc.randn(y:size())):sum():backward()
          return y, x.grad
        end, { 2, 3 }, 1e-5)
      end)
    end
  end)

  describe("cumsum and cumprod", function()
    it("along each dim, floats, int32 (to int64) and bool, and cumsum's backward", function()
      ragged(function(n)
        ltc.manual_seed(70 + n)
        local x = (ltc.rand(n, 5, 3) + 0.5):requires_grad_()
        local i = (ltc.rand(n, 6) * 7):floor():to("int32") - 2
        local y = x:cumsum(2)
        ;(y * y):sum():backward()
        return y, x:cumsum(1), x:cumprod(3), x:cumprod(1), i:cumsum(2), i:cumprod(1),
          i:gt(0):cumsum(2), x.grad
      end, { 4, 3 }, 1e-5)
    end)
  end)

  describe("sort, argsort and topk", function()
    it("ascending and descending along each dim: stable, NaN above every number", function()
      ragged(function(n)
        ltc.manual_seed(80 + n)
        local x = (ltc.rand(n, 9) * 4):floor() -- many ties
        local nan = ltc.tensor({ 3, 0 / 0, 1, 0 / 0, 1, -2 })
        local v1, i1 = x:sort(2)
        local v2, i2 = x:sort(1, true)
        local v3, i3 = nan:sort()
        local v4, i4 = nan:sort(1, true)
        return v1, i1, v2, i2, v3, i3, v4, i4, x:argsort(2, true),
          ltc.tensor({ 5, 1, 4, 1 }, "int32"):sort()
      end, { 5, 3 }, 0)
    end)
    it("topk, largest and smallest, k from 0 to the line", function()
      ragged(function(n)
        ltc.manual_seed(90 + n)
        local x = ltc.randn(n, 12)
        local a, ai = x:topk(3)
        local b, bi = x:topk(2, 1, false)
        local c, ci = x:topk(0)
        local d, di = x:topk(12, 2, false)
        return a, ai, b, bi, c, ci, d, di
      end, { 4, 6 }, 0)
    end)
  end)

  describe("kthvalue, median, cummax and cummin", function()
    it("along each dim with ties and NaN, as the CPU", function()
      ragged(function(n)
        ltc.manual_seed(110 + n)
        local x = (ltc.rand(n, 7) * 4):floor()
        local nan = ltc.tensor({ { 3, 0 / 0, 1, 2 }, { 5, 1, 1, 4 } })
        local k1, i1 = x:kthvalue(2, 2)
        local k2, i2 = x:kthvalue(n, 1, true)
        local m1, j1 = x:median(2)
        local m2, j2 = nan:median(2)
        local c1, d1 = x:cummax(2)
        local c2, d2 = nan:cummin(2)
        local c3, d3 = (x * 3):to("int32"):cummax(1)
        return k1, i1, k2, i2, m1, j1, m2, j2, x:median(), nan:median(), c1, d1, c2, d2, c3, d3
      end, { 5, 3 }, 0)
    end)
  end)

  describe("flip, repeat, one_hot, eye, linspace, empty, randperm, dot and outer", function()
    it("match the CPU", function()
      ragged(function(n)
        ltc.manual_seed(120 + n)
        local x = ltc.randn(n, 3, 4)
        local lab = (ltc.rand(n) * 5):floor():to("int64") + 1
        local v, u = ltc.randn(n), ltc.randn(n)
        return x:flip({ 1, 3 }), x:flip({ -2 }), x:repeatTensor(2, 1, 3), x:repeatTensor(2, 1, 1, 1),
          lab:one_hot(5), lab:to("int32"):one_hot(7), ltc.eye(n), ltc.eye(n, 4, "int64"),
          ltc.linspace(-1, 2, n), ltc.linspace(0, 10, 7, "int32"), ltc.empty({ n, 2 }), ltc.randperm(n),
          ltc.randperm(9, "int32"), v:dot(u), v:outer(u), ltc.tensor({ 1, 2 }, "float64"):dot(ltc.tensor({ 3, 4 }, "float64"))
      end, { 5, 3 }, 1e-6)
    end)
    it("one_hot of a class out of range is a Lua error naming the op", function()
      ltc.set_backend("opencl")
      local ok, err = pcall(function() return ltc.tensor({ 1, 6 }, "int64"):one_hot(5):totable() end)
      assert.is_false(ok)
      assert.matches("one_hot: index 6 out of range %(1..5", err)
    end)
  end)

  describe("mse_loss", function()
    it("none, mean and sum, broadcasting, and its gradient", function()
      ragged(function(n)
        ltc.manual_seed(130 + n)
        local x = ltc.randn(n, 4):requires_grad_()
        local t = ltc.randn(4)
        local l = ltc.mse_loss(x, t, 1)
        l:backward()
        return ltc.mse_loss(x:detach(), t, 0), l, ltc.mse_loss(t, x:detach(), 2), x.grad,
          ltc.mse_loss(ltc.zeros(0, 2), ltc.zeros(0, 2), 1)
      end, { 5, 3 }, 1e-6)
    end)
  end)

  describe("var, std, prod, logsumexp, all and any", function()
    it("of everything and along each dim, unbiased or not, keepdim, integers", function()
      ragged(function(n)
        ltc.manual_seed(100 + n)
        local x = ltc.randn(n, 7) * 2
        local i = (ltc.rand(n, 4) * 5):floor():to("int64") - 1
        return x:var(), x:var(2, false), x:std(1, true, true), x:std(), ltc.ones(1):var(),
          (x * 0.5):prod(2), i:prod(1), x:logsumexp(2), x:logsumexp(1, true),
          ltc.tensor({ -math.huge, 1 / 0 }):logsumexp(1), i:all(2), i:any(1), i:gt(-1):all(),
          ltc.zeros(0, 3):any(1)
      end, { 5, 3 }, 1e-5)
    end)
  end)

  it("matmul of 4-d batches (attention's [B, H, T, D]) is one batched CLBlast GEMM, and its gradients", function()
    ragged(function(n)
      ltc.manual_seed(140 + n)
      local q = ltc.randn(n, 2, 5, 3):requires_grad_()
      local k = ltc.randn(n, 2, 5, 3):requires_grad_()
      local s = q:matmul(k:transpose(-2, -1))
      ;(s * s):sum():backward()
      return s, q.grad, k.grad
    end, { 3, 2 }, 1e-4)
  end)

  it("a transformer-style block (layer_norm, attention with triu mask, nll_loss) trains on the device", function()
    same(function()
      ltc.manual_seed(0)
      local d = 8
      local wq, wo = (ltc.randn(d, d) * 0.3):requires_grad_(), (ltc.randn(d, 5) * 0.3):requires_grad_()
      local g, b = ltc.ones(d):requires_grad_(), ltc.zeros(d):requires_grad_()
      local x = ltc.randn(6, d)
      local t = ltc.tensor({ 1, 2, 3, 4, 5, 1 }, "int64")
      local opt = ltc.optim.SGD({ wq, wo, g, b }, { lr = 0.1 })
      local losses = {}
      for i = 1, 3 do
        opt:zero_grad()
        local h = ltc.layer_norm(x, d, g, b)
        local s = h:matmul(wq):matmul(h:t()):masked_fill(ltc.ones(6, 6):triu(1):gt(0), -1e9)
        local out = s:softmax(2):matmul(h):matmul(wo)
        local loss = ltc.nll_loss(out:log_softmax(2), t, 1)
        loss:backward()
        opt:step()
        losses[i] = loss:detach()
      end
      return ltc.stack(losses), wq, g
    end, 1e-4)
  end)
end)
