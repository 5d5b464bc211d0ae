-- Every collective for every dtype against values computed by hand (plain Lua arithmetic
-- over the ranks' known inputs), with 0-size tensors, non-contiguous views and gradients.
package.path = (arg[0]:match("^(.*)/[^/]*$") or ".") .. "/?.lua;" .. package.path
local S = require "support"
local ltc, dist, rank, ws = S.init()

-- rank r holds x_r = {r + 1, -2 (r + 1), 3}: the reductions over r = 0 .. ws-1 by hand
local function x_of(r) return { r + 1, -2 * (r + 1), 3 } end
local want = { sum = {}, max = {}, min = {}, prod = {} }
for i = 1, 3 do
  local s, mx, mn, p = 0, -math.huge, math.huge, 1
  for r = 0, ws - 1 do
    local v = x_of(r)[i]
    s, mx, mn, p = s + v, math.max(mx, v), math.min(mn, v), p * v
  end
  want.sum[i], want.max[i], want.min[i], want.prod[i] = s, mx, mn, p
end

for _, dt in ipairs({ "float32", "float64", "int32", "int64" }) do
  for _, op in ipairs({ "sum", "max", "min", "prod" }) do
    local t = ltc.tensor(x_of(rank), dt)
    dist.all_reduce(t, op)
    S.equal("all_reduce " .. op .. " " .. dt, t, want[op])
    S.check("all_reduce keeps dtype " .. dt, t:dtype() == dt, t:dtype())
  end
end
for _, dt in ipairs({ "float32", "float64" }) do
  local t = ltc.tensor(x_of(rank), dt)
  dist.all_reduce(t, "avg")
  local avg = {}
  for i = 1, 3 do avg[i] = want.sum[i] / ws end
  S.equal("all_reduce avg " .. dt, t, avg, 1e-6)
end
-- bool: sum/max are or, min/prod are and. rank 0 holds {true, false, true}, the others
-- {false, false, true}
do
  local mine = rank == 0 and { true, false, true } or { false, false, true }
  -- in a fixed order: pairs() visits keys in another order on each process (Lua seeds its
  -- string hashes per process), and the ranks must run the same collectives in order
  for _, ow in ipairs({ { "sum", { true, false, true } }, { "max", { true, false, true } },
                        { "min", { false, false, true } }, { "prod", { false, false, true } } }) do
    local op, w = ow[1], ow[2]
    local t = ltc.tensor(mine, "bool")
    dist.all_reduce(t, op)
    S.equal("all_reduce " .. op .. " bool", t, w)
  end
end

-- broadcast from every root, every dtype
for _, dt in ipairs({ "float32", "float64", "int32", "int64", "bool" }) do
  for root = 0, ws - 1 do
    local vals = dt == "bool" and { rank % 2 == 0, rank == root } or { rank * 10 + 1, rank * 10 + 2 }
    local t = ltc.tensor(vals, dt)
    dist.broadcast(t, root)
    local w = dt == "bool" and { root % 2 == 0, true } or { root * 10 + 1, root * 10 + 2 }
    S.equal("broadcast root " .. root .. " " .. dt, t, w)
  end
end

-- reduce (sum) to every root: dst gets the sum, the others keep their own value
for _, dt in ipairs({ "float32", "float64", "int32", "int64" }) do
  for root = 0, ws - 1 do
    local t = ltc.tensor(x_of(rank), dt)
    dist.reduce(t, root)
    S.equal("reduce dst " .. root .. " " .. dt, t, rank == root and want.sum or x_of(rank))
  end
end

-- all_gather: a list of every rank's tensor, and the concatenation
for _, dt in ipairs({ "float32", "float64", "int32", "int64", "bool" }) do
  local mine = dt == "bool" and { { rank == 0, true } } or { { rank, rank + 100 } }
  local parts = dist.all_gather(ltc.tensor(mine, dt))
  S.check("all_gather count " .. dt, #parts == ws, #parts)
  for r = 0, ws - 1 do
    S.equal("all_gather part " .. r .. " " .. dt, parts[r + 1],
      dt == "bool" and { { r == 0, true } } or { { r, r + 100 } })
  end
  local cat = dist.all_gather_into_tensor(ltc.tensor(mine, dt))
  S.check("all_gather_into_tensor size " .. dt, cat:size(1) == ws and cat:size(2) == 2,
    S.show(cat:size()))
end
do -- a 0-d tensor gathers into one entry per rank
  local parts = dist.all_gather(ltc.tensor(rank * 2.5))
  S.check("all_gather 0-d", #parts == ws and parts[ws]:dim() == 0 and parts[ws]:item() == (ws - 1) * 2.5,
    parts[ws] and parts[ws]:item())
end

-- reduce_scatter: rows r*2+1 .. r*2+2 of the sum go to rank r. Rank q holds
-- rows {q + i} for i = 1 .. 2 ws (a column of 1 value each)
for _, dt in ipairs({ "float32", "float64", "int32", "int64" }) do
  local rows = {}
  for i = 1, 2 * ws do rows[i] = { rank + i } end
  for _, op in ipairs({ "sum", "max", "min" }) do
    local got = dist.reduce_scatter(ltc.tensor(rows, dt), op)
    local w = {}
    for k = 1, 2 do
      local i = rank * 2 + k
      local s, mx, mn = 0, -math.huge, math.huge
      for q = 0, ws - 1 do s, mx, mn = s + q + i, math.max(mx, q + i), math.min(mn, q + i) end
      w[k] = { op == "sum" and s or op == "max" and mx or mn }
    end
    S.equal("reduce_scatter " .. op .. " " .. dt, got, w)
  end
end
do
  local got = dist.reduce_scatter(ltc.full({ ws * 2 }, rank + 1, "float64"), "avg")
  S.equal("reduce_scatter avg float64", got, { (ws + 1) / 2, (ws + 1) / 2 }, 1e-12)
end

-- 0-size tensors: every collective runs (and agrees) and keeps the size
do
  local z = ltc.zeros({ 0, 3 })
  dist.all_reduce(z, "sum")
  S.check("all_reduce 0-size", z:size(1) == 0 and z:size(2) == 3, S.show(z:size()))
  dist.broadcast(z, ws - 1)
  S.check("broadcast 0-size", z:numel() == 0, z:numel())
  local g = dist.all_gather_into_tensor(ltc.zeros({ 0, 2 }, "int64"))
  S.check("all_gather 0-size", g:size(1) == 0 and g:size(2) == 2, S.show(g:size()))
  local rs = dist.reduce_scatter(ltc.zeros({ 0 }, "float64"))
  S.check("reduce_scatter 0-size", rs:numel() == 0, rs:numel())
  ltc.sync()
end

-- non-contiguous views: a transpose and a column narrow, reduced and written back in place
do
  local base = ltc.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, "float64") * (rank + 1)
  local tr = ltc.all_reduce(base:t(), 0)
  local f = ws * (ws + 1) / 2
  S.equal("all_reduce of a transpose", tr, { { f, 4 * f }, { 2 * f, 5 * f }, { 3 * f, 6 * f } })
  local m = ltc.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }) * (rank + 1)
  local col = m:narrow(2, 2, 1)
  dist.all_reduce(col, "sum") -- writes through the view into m
  S.equal("all_reduce through a narrowed view", m,
    { { rank + 1, 2 * f, 3 * (rank + 1) }, { 4 * (rank + 1), 5 * f, 6 * (rank + 1) } })
  local g = dist.all_gather_into_tensor(ltc.tensor({ { 1, 2 }, { 3, 4 } }):t() + rank)
  S.equal("all_gather of a transpose (rows of rank 0 first)", g:narrow(1, 1, 2), { { 1, 3 }, { 2, 4 } })
end

-- gradients across ranks: d/dw of sum_r sum(all_reduce(w) * c_r) is sum_r c_r on every rank
do
  local w = ltc.tensor({ 1.0, 2.0 }, "float64"):requires_grad_()
  local c = ltc.tensor({ rank + 1, 1 }, "float64")
  local loss = (ltc.all_reduce(w, 0) * c):sum()
  loss:backward()
  S.equal("all_reduce sum gradient", w.grad, { ws * (ws + 1) / 2, ws }, 1e-12)
  -- broadcast from the last rank: only that rank's input gets the sum of the gradients
  local v = ltc.tensor({ 3.0 }, "float64"):requires_grad_()
  local out = (ltc.broadcast(v, ws - 1) * (rank + 1)):sum()
  out:backward()
  S.equal("broadcast gradient", v.grad, { rank == ws - 1 and ws * (ws + 1) / 2 or 0 }, 1e-12)
  -- all_gather's gradient is the reduce_scatter of the gradients
  local a = ltc.tensor({ 1.0 }, "float64"):requires_grad_()
  local weights = {}
  for q = 1, ws do weights[q] = q * (rank + 1) end -- rank p weighs block q by q (p + 1)
  local ag = (ltc.all_gather(a, ws) * ltc.tensor(weights, "float64")):sum()
  ag:backward()
  S.equal("all_gather gradient", a.grad, { (rank + 1) * ws * (ws + 1) / 2 }, 1e-12)
end

-- bad input across ranks: a root beyond the world size
do
  local ok, err = pcall(dist.broadcast, ltc.ones(2), ws)
  S.check("broadcast root out of range", not ok and err:find("out of range for " .. ws .. " ranks", 1, true), err)
  ok, err = pcall(dist.reduce, ltc.ones(2), -1)
  S.check("reduce dst -1", not ok and err:find("dst -1 is out of range", 1, true), err)
  ok, err = pcall(function() return ltc.all_gather(ltc.ones(2), ws + 1):totable() end)
  S.check("all_gather traced for another world size",
    not ok and err:find("traced for world_size " .. (ws + 1), 1, true), err)
  -- the checks a collective on the tensor's own buffer makes itself (no op is traced there),
  -- before any rank communicates; a view takes the traced op's path and gets its checks
  local held = ltc.ones(2, "int64")
  ltc.sync()
  ok, err = pcall(dist.all_reduce, held, "avg")
  S.check("in place: avg of int64", not ok and err:find("ltc.distributed.all_reduce: all_reduce: op avg "
    .. "needs a floating-point tensor, got int64", 1, true), err)
  ok, err = pcall(dist.all_reduce, held:narrow(1, 1, 1), "avg")
  S.check("a view: avg of int64", not ok and err:find("op avg needs a floating-point tensor, got int64",
    1, true), err)
  local path = package.searchpath("ltc.distributed", package.cpath)
  local C = package.loadlib(path, "luaopen_ltc_distributed")()
  ok, err = pcall(C.all_reduce_, held, 9)
  S.check("in place: op 9", not ok and err:find("op must be 0 (sum), 1 (avg), 2 (max), 3 (min) or 4 "
    .. "(prod), got 9", 1, true), err)
  ok, err = pcall(C.broadcast_, held, ws)
  S.check("in place: root " .. ws, not ok and err:find("root " .. ws .. " is out of range for " .. ws
    .. " ranks (ranks are 0.." .. (ws - 1) .. ")", 1, true), err)
  S.equal("in place: the tensor is left as it was", held, { 1, 1 })
  -- and the runtime still works afterwards
  local t = ltc.ones(2)
  dist.all_reduce(t)
  S.equal("all_reduce after errors", t, { ws, ws })
end

-- dist.all_reduce / dist.broadcast of a tensor that holds its value run now, in place on its
-- buffer (no graph is compiled or run); everything that shares the buffer still sees the value
-- it had: a saved value of autograd, a tensor sharing the data; views see the new value
do
  local x = ltc.tensor({ 1, 2, 3 }, "float64") * (rank + 1)
  ltc.sync()
  local f = ws * (ws + 1) / 2
  local compiles = ltc.metrics.counter("CachedCompile") + ltc.metrics.counter("UncachedCompile")
  dist.all_reduce(x, "sum")
  S.equal("in place: all_reduce", x, { f, 2 * f, 3 * f })
  dist.broadcast(x, ws - 1)
  S.equal("in place: broadcast", x, { f, 2 * f, 3 * f })
  S.check("in place: no graph ran", ltc.metrics.counter("CachedCompile")
    + ltc.metrics.counter("UncachedCompile") == compiles, "compiles")
  -- a tensor that synced graphs have read is still reduced in its own buffer
  local z = x + 1
  ltc.sync()
  compiles = ltc.metrics.counter("CachedCompile") + ltc.metrics.counter("UncachedCompile")
  dist.all_reduce(x, "sum")
  S.equal("in place: all_reduce of a tensor read before", x, { ws * f, 2 * ws * f, 3 * ws * f })
  S.check("in place: no graph ran for a tensor read before", ltc.metrics.counter("CachedCompile")
    + ltc.metrics.counter("UncachedCompile") == compiles, "compiles")
  S.equal("in place: what read it keeps its value", z, { f + 1, 2 * f + 1, 3 * f + 1 })
  -- a view computed before the write sees it
  local m = ltc.tensor({ { 1, 2 }, { 3, 4 } }, "float64") * (rank + 1)
  ltc.sync()
  local row = m[2]
  S.equal("in place: view before", row, { 3 * (rank + 1), 4 * (rank + 1) })
  dist.all_reduce(m, "sum")
  S.equal("in place: a view sees the write", row, { 3 * f, 4 * f })
  -- autograd saved x for w's gradient: the reduction must not change what backward sees
  local w = ltc.tensor({ 1, 1, 1 }, "float64"):requires_grad_()
  local xs = ltc.tensor({ 1, 2, 3 }, "float64") * (rank + 1)
  ltc.sync()
  local loss = (w * xs):sum()
  dist.all_reduce(xs, "sum")
  S.equal("in place: all_reduce of a value autograd saved", xs, { f, 2 * f, 3 * f })
  loss:backward()
  S.equal("in place: backward sees the saved value", w.grad, { rank + 1, 2 * (rank + 1), 3 * (rank + 1) })
  -- a pending tensor: what is pending is synced first (as a read would), then it runs
  local p = ltc.tensor({ 1, 2 }, "float64") * (rank + 1)
  dist.all_reduce(p, "max")
  S.check("pending: synced and reduced at once", not ltc.debug.ir(p):find("all_reduce", 1, true), ltc.debug.ir(p))
  S.equal("pending: all_reduce", p, { ws, 2 * ws })
end

-- ranks whose tensors differ in what is pending (only the root filled it), or whose other
-- work differs in what is pending, still run the same collectives in the same order
do
  local b = ltc.zeros({ 2 }, "float64")
  ltc.sync()
  if rank == 0 then b:fill_(7) end -- pending on rank 0 only
  dist.broadcast(b, 0)
  S.equal("broadcast of a tensor only the root wrote", b, { 7, 7 })
  -- a recorded collective pending on every rank, and a tensor pending on one rank only
  local y = ltc.all_reduce(ltc.full({ 2 }, rank + 1, "float64"), 0)
  local c = ltc.full({ 1 }, rank + 1, "float64")
  ltc.sync()
  if rank == ws - 1 then c:mul_(10) end
  dist.all_reduce(c, "sum")
  local f = ws * (ws + 1) / 2
  S.equal("all_reduce after a recorded collective, pending on one rank", c, { f + 9 * ws })
  S.equal("the recorded collective", y, { f, f })
  -- a view on one rank, a whole tensor on the others
  local m = ltc.zeros({ 2, 2 }, "float64") + rank + 1
  ltc.sync()
  local target = rank == 0 and m[1] or ltc.tensor({ rank + 1, rank + 1 }, "float64")
  dist.all_reduce(target, "sum")
  S.equal("all_reduce of a view on rank 0 and of tensors elsewhere", target, { f, f })
end

dist.barrier()
S.done()
