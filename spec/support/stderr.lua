--- spec/support/stderr.lua - quiet(fn): runs fn with io.stderr captured (ltc's warnings
-- write there) and returns what was written, as one string; fails the test, after putting
-- io.stderr back, when fn raises. dofile'd by specs.
return function(fn)
  local stderr, said = io.stderr, {}
  io.stderr = { write = function(_, m) said[#said + 1] = m end } -- luacheck: ignore
  local ok, e = pcall(fn)
  io.stderr = stderr -- luacheck: ignore
  assert(ok, e)
  return table.concat(said)
end
