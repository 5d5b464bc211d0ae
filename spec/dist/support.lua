-- Shared by the scripts under spec/dist/, which spec/distributed_spec.lua runs under mpirun
-- with 2 and 3 ranks. Each rank prints "ok <check>" or "FAIL rank <r> <check>: <why>" per
-- check and "done rank <r>" at the end; the spec reads that output.
local ltc = require "ltc"
local dist = require "ltc.distributed"

local S = { ltc = ltc, dist = dist }

function S.init(opts)
  S.rank, S.ws = dist.init(opts)
  return ltc, dist, S.rank, S.ws
end

local failures = 0
function S.check(name, cond, why)
  if cond then
    print("ok " .. name)
  else
    failures = failures + 1
    print(string.format("FAIL rank %d %s: %s", S.rank or -1, name, tostring(why)))
  end
  io.stdout:flush()
end

-- |a - b| <= tol everywhere (nested tables or numbers); booleans and integers exactly.
function S.close(a, b, tol)
  if type(a) == "table" and type(b) == "table" then
    if #a ~= #b then return false end
    for i = 1, #a do if not S.close(a[i], b[i], tol) then return false end end
    return true
  end
  if type(a) == "number" and type(b) == "number" then return math.abs(a - b) <= (tol or 0) end
  return a == b
end

function S.show(t)
  if type(t) ~= "table" then return tostring(t) end
  local parts = {}
  for i = 1, #t do parts[i] = S.show(t[i]) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

-- check that a:totable() equals the expected table
function S.equal(name, got, want, tol)
  local g = type(got) == "userdata" and got:totable() or got
  S.check(name, S.close(g, want, tol), "got " .. S.show(g) .. ", want " .. S.show(want))
end

function S.done()
  print(string.format("done rank %d failures %d", S.rank, failures))
  io.stdout:flush()
end

--- S.mlp(dtype): the specs' two-layer perceptron 5-6-3 of the given dtype, from seed 7 (ltc.nn
-- layers are float32): a callable table with parameters().
function S.mlp(dtype)
  local ltc = S.ltc
  ltc.manual_seed(7)
  local ps = {}
  for i, size in ipairs({ { 5, 6 }, { 6 }, { 6, 3 }, { 3 } }) do
    ps[i] = (ltc.randn(size) * 0.5):to(dtype):detach():requires_grad_()
  end
  ltc.sync()
  return setmetatable({ parameters = function() return ps end }, {
    __call = function(_, x) return (x:matmul(ps[1]) + ps[2]):relu():matmul(ps[3]) + ps[4] end,
  })
end

--- S.data(dtype, n): n rows of 5 features and 3 classes (1-based), the same from seed 11 on
-- every run of a rank.
function S.data(dtype, n)
  local ltc = S.ltc
  ltc.manual_seed(11)
  local x = ltc.randn(n, 5):to(dtype)
  local y = (ltc.arange(0, n) % 3 + 1):long()
  ltc.sync()
  return x, y
end

return S
