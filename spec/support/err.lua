--- spec/support/err.lua - err(fn): the message of the error fn raises, as a string; fails
-- the test when fn does not raise. dofile'd by specs (plain assert: busted's is the spec's own).
return function(fn)
  local ok, msg = pcall(fn)
  assert(not ok, "expected an error, but the call returned")
  return tostring(msg)
end
