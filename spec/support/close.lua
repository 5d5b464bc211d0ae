--- spec/support/close.lua - close(expected, actual [, tol=1e-6 [, path=""]]): compares
-- nested tables of numbers (or booleans) within a relative tolerance; NaN matches NaN,
-- infinities match exactly. Fails with the path of the first difference. dofile'd by specs.
local function close(expected, actual, tol, path)
  tol, path = tol or 1e-6, path or ""
  if type(expected) == "table" then
    assert(type(actual) == "table",
      string.format("at %s: expected a table, got %s", path, tostring(actual)))
    assert(#actual == #expected, string.format("at %s: expected %d entries, got %d",
      path, #expected, #actual))
    for i = 1, #expected do close(expected[i], actual[i], tol, path .. "[" .. i .. "]") end
    return
  end
  local ok
  if type(expected) == "boolean" then ok = actual == expected
  elseif type(actual) ~= "number" then ok = false
  elseif expected ~= expected then ok = actual ~= actual
  elseif expected == math.huge or expected == -math.huge then ok = actual == expected
  else ok = math.abs(actual - expected) <= tol * (1 + math.abs(expected)) end
  assert(ok, string.format("at %s: expected %s, got %s", path, tostring(expected),
    tostring(actual)))
end

return close
