-- Ranks that disagree get an error on every rank naming the mismatch, before any data moves,
-- and stay in step: a correct collective afterwards works. The last rank is the odd one.
package.path = (arg[0]:match("^(.*)/[^/]*$") or ".") .. "/?.lua;" .. package.path
local S = require "support"
local ltc, dist, rank, ws = S.init({ timeout = 30 })
local odd = rank == ws - 1

local function expect(name, f, ...)
  local ok, err = pcall(f)
  err = tostring(err)
  local good = not ok and err:find("ranks disagree", 1, true) ~= nil
  for _, s in ipairs({ ... }) do good = good and err:find(s, 1, true) ~= nil end
  S.check(name, good, ok and "no error" or err)
  -- the failed step's tensors are not run again piecewise (the executor's isolation of a
  -- failure skips graphs with collectives): the odd rank's second all_reduce must not join
  -- its next sync, or the ranks would stay out of step
  -- still in step: a matching collective works
  local t = ltc.full({ 2 }, rank + 1)
  dist.all_reduce(t)
  S.equal(name .. ": the next collective works", t, { ws * (ws + 1) / 2, ws * (ws + 1) / 2 })
end

expect("shapes", function() return ltc.all_reduce(ltc.ones(odd and 4 or 3), 0):totable() end,
  "different sizes", "of 3 float32", "of 4 float32")
expect("dtypes", function()
  return ltc.all_reduce(ltc.ones(3, odd and "float64" or "float32"), 0):totable()
end, "different dtypes", "float64")
expect("ops", function() return ltc.all_reduce(ltc.ones(3), odd and 2 or 0):totable() end,
  "different ops", "all_reduce max", "all_reduce sum")
expect("collectives", function()
  local t = ltc.ones(3)
  return (odd and ltc.broadcast(t, 0) or ltc.all_reduce(t, 0)):totable()
end, "different collectives", "broadcast root 0")
expect("roots", function() return ltc.broadcast(ltc.ones(3), odd and 1 or 0):totable() end,
  "different roots")
-- the odd rank has two collectives in its step, the others one
expect("count", function()
  local a = ltc.all_reduce(ltc.ones(3), 0)
  local b = odd and ltc.all_reduce(ltc.ones(3) * 2, 0) or nil
  ltc.sync()
  return a:totable(), b
end, "a different number of collectives in the step", "1 of 2", "1 of 1")
-- a step of several collectives is checked by one exchange (its first descriptor carries the
-- hash of all): when only a later one differs, each is then checked on its own, so the error
-- still names it, before its data moves
expect("second of two", function()
  local a = ltc.all_reduce(ltc.ones(3), 0)
  local b = ltc.all_reduce(ltc.ones(odd and 5 or 2), 0)
  ltc.sync()
  return a:totable(), b:totable()
end, "different sizes", "collective 2 of 2 in its step", "of 2 float32", "of 5 float32")
expect("third of three", function()
  local a, b = ltc.all_reduce(ltc.ones(2), 0), ltc.broadcast(ltc.ones(2), 0)
  local c = ltc.all_reduce(ltc.ones(2), odd and 3 or 2)
  ltc.sync()
  return a:totable(), b:totable(), c:totable()
end, "different ops", "collective 3 of 3 in its step", "all_reduce min", "all_reduce max")

-- dist.all_reduce's error is at the caller's line (it was lua/ltc/distributed.lua's)
do
  local ok, err = pcall(function()
    local t = ltc.ones(odd and 4 or 3)
    dist.all_reduce(t)
    return t
  end)
  err = tostring(err)
  S.check("dist.all_reduce's mismatch names the script's line",
    not ok and err:find("mismatch.lua:%d+: ") ~= nil and not err:find("distributed.lua", 1, true),
    err)
  local t = ltc.full({ 2 }, rank + 1)
  dist.all_reduce(t)
  S.equal("dist.all_reduce after the mismatch", t, { ws * (ws + 1) / 2, ws * (ws + 1) / 2 })
end
-- the lazy op takes the reduction's name, as dist.all_reduce (it raised "integer expected")
S.equal("ltc.all_reduce(t, \"max\")", ltc.all_reduce(ltc.full({ 2 }, rank + 1), "max"), { ws, ws })

-- ranks that agree: one exchange for a step of three collectives, one per collective outside
-- a step, and the values are right
do
  dist.reset_stats()
  local a, b = ltc.full({ 2 }, rank + 1), ltc.full({ 3 }, rank + 1, "float64")
  local ra, rb, rc = ltc.all_reduce(a, 0), ltc.all_reduce(b, 2), ltc.broadcast(a * 10, 0)
  ltc.sync()
  local s = ws * (ws + 1) / 2
  S.equal("a step of three: sum", ra, { s, s })
  S.equal("a step of three: max", rb, { ws, ws, ws })
  S.equal("a step of three: broadcast", rc, { 10, 10 })
  local st = dist.stats()
  S.check("a step of three collectives makes one check", st.checks == 1, "checks " .. tostring(st.checks))
  dist.reset_stats()
  dist.all_reduce(a)
  dist.all_reduce(b)
  S.check("two collectives outside a step make two checks", dist.stats().checks == 2,
    "checks " .. tostring(dist.stats().checks))
end

-- with the checks off, matching collectives still work
dist.init({ check = false, timeout = 30 })
local t = ltc.ones(4) * (rank + 1)
dist.all_reduce(t, "max")
S.equal("checks off: all_reduce", t, { ws, ws, ws, ws })
S.check("checks off: no exchange", dist.stats().checks == 2, "checks " .. tostring(dist.stats().checks))
dist.init({ check = true, timeout = 30 })
S.done()
