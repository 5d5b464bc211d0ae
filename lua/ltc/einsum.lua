--- ltc.einsum: Einstein summation over the generated ops. install(core) adds
-- ltc.einsum(equation, a, b, ...) (or ltc.einsum(equation, {a, b, ...})), PyTorch's
-- torch.einsum: subscripts are letters, `...` stands for the dims no letter names (they
-- broadcast, aligned from the right), `->` names the output (without it: the letters used once,
-- in alphabetical order, after the `...` dims). A letter repeated in one operand takes the
-- diagonal. Lowered to ops: a letter in one operand only and not in the output is summed
-- away at once; then operands are contracted left to right, each pair as one bmm over
-- [batch, left, summed] x [batch, summed, right] after permute/reshape (size-1 dims expand);
-- the result is permuted to the output's order. Floating dtypes (bmm's rule).
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local M = {}

local function fail(fmt, ...) raise("einsum: " .. string.format(fmt, ...)) end

-- The labels of one operand's subscripts, with `...` expanded to the ellipsis labels E
-- (shared by all operands, aligned from the right); nd is the operand's number of dims.
local function parse_term(term, nd, ell, k)
  local labels, pre, post = {}, term:match("^(.-)%.%.%.(.*)$")
  if pre then
    if post:find("%.") then fail("more than one '...' in operand %d", k) end
  else
    pre, post = term, ""
  end
  for c in (pre .. post):gmatch(".") do
    if not c:match("%a") then fail("bad subscript '%s' in operand %d (letters only)", c, k) end
  end
  local named = #pre + #post
  if (term:find("%.%.%.") and nd < named) or (not term:find("%.%.%.") and nd ~= named) then
    fail("operand %d has %d dims but its subscripts '%s' name %d", k, nd, term, named)
  end
  for c in pre:gmatch(".") do labels[#labels + 1] = c end
  if term:find("%.%.%.") then
    local ne = nd - named
    for i = #ell - ne + 1, #ell do labels[#labels + 1] = ell[i] end
  end
  for c in post:gmatch(".") do labels[#labels + 1] = c end
  return labels
end

-- t (with labels) with repeated labels replaced by their diagonal: t * eye over the pair of
-- dims, summed over the second of them.
local function diagonals(core, t, labels)
  local i = 1
  while i <= #labels do
    local j = nil
    for q = i + 1, #labels do if labels[q] == labels[i] then j = q; break end end
    if j then
      local n = t:size(i)
      if t:size(j) ~= n then fail("subscript %s has sizes %d and %d in one operand", labels[i], n, t:size(j)) end
      local shape = {}
      for d = 1, #labels do shape[d] = (d == i or d == j) and n or 1 end
      local eye = core.eye(n, n, t:dtype())
      -- eye laid out on dims i and j of t (i < j): move its two dims there with a reshape
      t = (t * eye:reshape(shape)):sum(j)
      table.remove(labels, j)
    else
      i = i + 1
    end
  end
  return t
end

-- Sums t over the dims whose labels are not in `keep` (a set); returns t and its labels.
local function sum_unkept(t, labels, keep)
  for d = #labels, 1, -1 do
    if not keep[labels[d]] then
      t = t:sum(d)
      table.remove(labels, d)
    end
  end
  return t, labels
end

-- t permuted to the label order `to` (a permutation of labels).
local function permute_to(t, labels, to)
  local pos, perm, identity = {}, {}, true
  for d, l in ipairs(labels) do pos[l] = d end
  for d, l in ipairs(to) do perm[d] = pos[l]; identity = identity and perm[d] == d end
  if identity or #to < 2 then return t end
  return t:permute(perm)
end

--- install(core): adds core.einsum.
function M.install(core)
  local is_tensor = function(v) return getmetatable(v) == core.metatable end
  core.einsum = function(equation, ...)
    local ops = { ... }
    if type(ops[1]) == "table" and not is_tensor(ops[1]) then ops = ops[1] end
    if type(equation) ~= "string" then fail("equation must be a string, got %s", type(equation)) end
    for k, t in ipairs(ops) do
      if not is_tensor(t) then fail("operand %d is a %s, not a tensor", k, type(t)) end
    end
    for k = 2, #ops do
      local a, b = ops[1]:dtype(), ops[k]:dtype()
      if a ~= b or not ops[1]:is_floating_point() then
        fail("operands must share one floating dtype (float32, float64, float16 or bfloat16), got %s and %s", a, b)
      end
    end
    local eq = equation:gsub("%s", "")
    local lhs, rhs = eq:match("^(.-)%->(.*)$")
    lhs = lhs or eq
    local terms = {}
    for term in (lhs .. ","):gmatch("([^,]*),") do terms[#terms + 1] = term end
    if #terms ~= #ops then fail("the equation has %d operands, got %d tensors", #terms, #ops) end
    -- the ellipsis labels: as many as the most dims any `...` stands for
    local ne = 0
    for k, term in ipairs(terms) do
      if term:find("%.%.%.") then
        local named = #term:gsub("%.%.%.", "")
        ne = math.max(ne, ops[k]:dim() - named)
      end
    end
    local ell = {}
    for i = 1, ne do ell[i] = string.char(0x80 + i) end -- never a letter
    local labels, size = {}, {}
    for k, term in ipairs(terms) do
      labels[k] = parse_term(term, ops[k]:dim(), ell, k)
    end
    -- the output labels
    local out = {}
    if rhs then
      local seen = {}
      for _, l in ipairs(parse_term(rhs, #rhs:gsub("%.%.%.", "") + (rhs:find("%.%.%.") and ne or 0), ell, 0)) do
        if seen[l] then fail("output subscript %s appears twice", l) end
        seen[l] = true
        out[#out + 1] = l
      end
    else
      local count = {}
      for _, ls in ipairs(labels) do for _, l in ipairs(ls) do count[l] = (count[l] or 0) + 1 end end
      for _, l in ipairs(ell) do out[#out + 1] = l end
      local letters = {}
      for l, c in pairs(count) do if c == 1 and l:match("%a") then letters[#letters + 1] = l end end
      table.sort(letters)
      for _, l in ipairs(letters) do out[#out + 1] = l end
    end
    -- sizes: equal, or 1 (broadcast)
    for k, ls in ipairs(labels) do
      for d, l in ipairs(ls) do
        local n = ops[k]:size(d)
        if size[l] == nil or size[l] == 1 then size[l] = n
        elseif n ~= 1 and n ~= size[l] then
          fail("subscript %s has size %d in operand %d but %d before", l:match("%a") and l or "...", n, k, size[l])
        end
      end
    end
    local in_out = {}
    for _, l in ipairs(out) do
      if not size[l] then fail("output subscript %s is in no operand", l) end
      in_out[l] = true
    end
    -- diagonals, then labels used by this operand alone and not in the output summed away
    local ts = {}
    for k = 1, #ops do
      ts[k] = diagonals(core, ops[k], labels[k])
      local keep = {}
      for l in pairs(in_out) do keep[l] = true end
      for q = 1, #ops do if q ~= k then for _, l in ipairs(labels[q]) do keep[l] = true end end end
      ts[k], labels[k] = sum_unkept(ts[k], labels[k], keep)
    end
    -- contract left to right
    local t, lt = ts[1], labels[1]
    for k = 2, #ops do
      local u, lu = ts[k], labels[k]
      local later = {}
      for l in pairs(in_out) do later[l] = true end
      for q = k + 1, #ops do for _, l in ipairs(labels[q]) do later[l] = true end end
      local in_u = {}
      for _, l in ipairs(lu) do in_u[l] = true end
      local in_t = {}
      for _, l in ipairs(lt) do in_t[l] = true end
      local batch, left, summed, right = {}, {}, {}, {}
      for _, l in ipairs(lt) do
        if in_u[l] then
          if later[l] then batch[#batch + 1] = l else summed[#summed + 1] = l end
        else
          left[#left + 1] = l
        end
      end
      for _, l in ipairs(lu) do if not in_t[l] then right[#right + 1] = l end end
      local function prod(ls)
        local p = 1
        for _, l in ipairs(ls) do p = p * size[l] end
        return p
      end
      local function sizes(ls)
        local s = {}
        for i, l in ipairs(ls) do s[i] = size[l] end
        return s
      end
      local function arrange(x, lx, order)
        local o = {}
        for _, group in ipairs(order) do for _, l in ipairs(group) do o[#o + 1] = l end end
        x = permute_to(x, lx, o)
        return x:expand(sizes(o))
      end
      local a = arrange(t, lt, { batch, left, summed })
        :reshape({ prod(batch), prod(left), prod(summed) })
      local b = arrange(u, lu, { batch, summed, right })
        :reshape({ prod(batch), prod(summed), prod(right) })
      local r = a:bmm(b)
      lt = {}
      for _, group in ipairs({ batch, left, right }) do for _, l in ipairs(group) do lt[#lt + 1] = l end end
      t = r:reshape(sizes(lt))
    end
    t, lt = sum_unkept(t, lt, in_out)
    -- a label of the output that no operand had at size > 1 keeps size 1: expand to size
    local o = {}
    for _, l in ipairs(out) do o[#o + 1] = l end
    t = permute_to(t, lt, o)
    local want = {}
    for i, l in ipairs(out) do want[i] = size[l] end
    if #want > 0 then t = t:expand(want) end
    return t
  end
end

return M
