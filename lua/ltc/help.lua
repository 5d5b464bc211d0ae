--- ltc.help(x) / ltc.doc(x): the documentation of an op or function, from where it is written:
-- an op's entry in codegen/ops.yaml (through the generated op reference gen/ops.md, installed
-- as ltc/ops.md), else the `---` comment block above the Lua function's definition.
-- x: a function (ltc.softmax, ltc.nn.Linear, a tensor method such as ltc.Tensor... or
-- core.methods.softmax), or a name ("softmax", "ltc.softmax", "t:softmax", "nn.Linear").
local core = require "ltc.core"

local M = {}

local ops_md -- the op reference's text, read once

local function read(path)
  local f = path and io.open(path)
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

local function op_reference()
  if ops_md == nil then
    local here = (debug.getinfo(1, "S").source:match("^@(.*)$") or "")
    local dir = here:match("^(.*)/[^/]*$") or "."
    ops_md = read(package.searchpath("ltc.ops", package.path:gsub("%.lua", ".md"))) or
      read(dir .. "/ops.md") or read(dir .. "/../../gen/ops.md") or
      read(dir .. "/../../docs/ops.md") or false
  end
  return ops_md or nil
end

-- The "## name" section of the op reference, without the heading's blank lines.
local function op_doc(name)
  local md = op_reference()
  if not md then return nil end
  local start = md:find("\n## " .. name .. "\n", 1, true)
  if not start then return nil end
  local body = md:sub(start + 1)
  local stop = body:find("\n#", 4, true) -- the next op, or the composite ops heading
  if stop then body = body:sub(1, stop) end
  return (body:gsub("\n+$", ""))
end

-- The `--` comment block just above line `line` of a Lua source file.
local function comment_above(path, line)
  local s = read(path)
  if not s then return nil end
  local lines = {}
  for l in (s .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = l end
  local out = {}
  local i = line - 1
  -- a class's __init: the comment is above the line that makes the class
  if lines[i] and lines[i]:match("^%s*[%w_.]+%s*=%s*[%w_.]+%.class%(") then i = i - 1 end
  while i >= 1 and lines[i]:match("^%s*%-%-") do
    table.insert(out, 1, (lines[i]:gsub("^%s*%-%-%-? ?", "")))
    i = i - 1
  end
  if #out == 0 then return nil end
  return table.concat(out, "\n")
end

-- The Lua files of the loaded ltc modules (lua/ltc/*.lua), in a fixed order.
local function module_files()
  local names = {}
  for k in pairs(package.loaded) do
    if (k == "ltc" or k:match("^ltc%.")) and k ~= "ltc.core" then names[#names + 1] = k end
  end
  table.sort(names)
  local files = {}
  for _, k in ipairs(names) do
    local f = package.searchpath(k, package.path)
    if f then files[#files + 1] = f end
  end
  return files
end

-- The `---` comment blocks of the ltc modules' files: {first = line, lines = {...}, text}.
local blocks
local function doc_blocks()
  if blocks then return blocks end
  blocks = {}
  for _, path in ipairs(module_files()) do
    local lines = {}
    for l in ((read(path) or "") .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = l end
    for i, l in ipairs(lines) do
      if l:match("^%s*%-%-%- ") then -- a doc block starts here: its lines up to the code
        local j = i
        while lines[j + 1] and lines[j + 1]:match("^%s*%-%-") and not lines[j + 1]:match("^%s*%-%-%- ") do
          j = j + 1
        end
        local b = { lines = {}, header = i == 1 } -- a file's header: its last resort
        for k = i, j do b.lines[#b.lines + 1] = (lines[k]:gsub("^%s*%-%-%-? ?", "")) end
        b.text = table.concat(b.lines, "\n")
        blocks[#blocks + 1] = b
      end
    end
  end
  return blocks
end

-- The `---` comment block that documents `name` by its call form, for functions made in a
-- loop, in C (documented in lua/ltc/init.lua) or by a class factory: the first block whose
-- first line (else any line) has "ltc.<name>(", "t:<name>(", "<name>(", "<last two parts of
-- name>(" or "<last part>(" (tried in this order), not preceded by a letter, digit or _;
-- a file's header block only when no other block has one.
local function named_comment(name)
  local short = name:match("([%w_]+)$")
  local cands = { "ltc." .. name .. "(", "t:" .. short .. "(", name .. "(" }
  local two = name:match("([%w_]+%.[%w_]+)$")
  if two then cands[#cands + 1] = two .. "(" end
  cands[#cands + 1] = short .. "("
  local function found(line, c)
    local i = 1
    while true do
      local a = line:find(c, i, true)
      if not a then return false end
      if a == 1 or not line:sub(a - 1, a - 1):match("[%w_]") then return true end
      i = a + 1
    end
  end
  -- blocks other than files' headers first: a header mentions many names in passing
  -- (nn_positional's names nn.LSTM(10, 20, 2) as an example)
  for _, headers in ipairs({ false, true }) do
    for _, first_only in ipairs({ true, false }) do
      for _, c in ipairs(cands) do
        for _, b in ipairs(doc_blocks()) do
          if b.header ~= headers then goto next_block end
          for k = 1, first_only and 1 or #b.lines do
            if found(b.lines[k], c) then return b.text end
          end
          ::next_block::
        end
      end
    end
    -- a class among others in a list ("--- nn.CrossEntropyLoss, nn.NLLLoss, nn.MSELoss, ...")
    if name:find(".", 1, true) then
      for _, b in ipairs(doc_blocks()) do
        if b.header ~= headers then goto next_list end
        for _, l in ipairs(b.lines) do
          local i = 1
          while true do
            local a, e = l:find(name, i, true)
            if not a then break end
            if (a == 1 or not l:sub(a - 1, a - 1):match("[%w_.]")) and not l:sub(e + 1, e + 1):match("[%w_]") then
              return b.text
            end
            i = a + 1
          end
        end
        ::next_list::
      end
    end
  end
  return nil
end

-- Where a function value lives in ltc's tables: "softmax" (an op), "nn.Linear", ... Every
-- name it has, the top level first ("debug_backend_text" and then "debug.backend_text").
local subtables = { "nn", "nn.functional", "nn.utils", "optim", "optim.lr_scheduler", "autograd",
  "debug", "metrics", "jit", "io", "data" }
local function key_of(t, f, prefix, out)
  if type(t) ~= "table" then return end
  local ks = {}
  for k, v in pairs(t) do if v == f and type(k) == "string" then ks[#ks + 1] = prefix .. k end end
  table.sort(ks)
  for _, k in ipairs(ks) do out[#out + 1] = k end
end
local function names_of(f, ltc)
  local out = {}
  key_of(ltc, f, "", out)
  key_of(core.methods, f, "", out)
  for _, sub in ipairs(subtables) do
    local t = ltc
    for part in sub:gmatch("[^.]+") do t = type(t) == "table" and rawget(t, part) or nil end
    key_of(t, f, sub .. ".", out)
  end
  return out
end
local function name_of(f, ltc) return names_of(f, ltc)[1] end

--- M.wraps[wrapper] = fn: wrapper only checks arguments and calls fn, whose doc comment is
-- the documentation (ltc.nn.functional's argument checks).
M.wraps = setmetatable({}, { __mode = "k" })

-- The op reference's section for one of names: the name itself, an op's short name, and
-- for nn.functional.<op> defined over the op (F.relu) the op's.
local function op_doc_of(names, functional)
  for _, name in ipairs(names) do
    local short = name:match("([%w_]+)$")
    local d = op_doc(name) or (not name:find("%.") and op_doc(short))
      or (functional and name:match("^nn%.functional%.[%w_]+$") and op_doc(short))
    if d then return d end
  end
end

--- M.doc(x): the documentation as a string, or nil and why not.
function M.doc(x)
  local ltc = require "ltc"
  local names, f = {}, nil
  if type(x) == "string" then
    local name = x:gsub("^ltc%.", ""):gsub("^[%a_][%w_]*:", "")
    names[1] = name
    f = ltc[name] or core.methods[name]
    if not f then
      local ok, v = pcall(function()
        local t = ltc
        for part in name:gmatch("[^.]+") do t = t[part] end
        return t
      end)
      f = ok and v or nil
    end
  elseif type(x) == "function" or type(x) == "table" then
    f = x
    names = names_of(x, ltc)
  else
    return nil, "ltc.help: a function or a name expected, got " .. type(x)
  end
  local name = names[1]
  local d = op_doc_of(names)
  if d then return d end
  if type(f) == "table" and type(getmetatable(f)) == "table" and getmetatable(f).__call then
    local init = rawget(f, "__init") or (type(rawget(f, "__index")) == "table" and rawget(f, "__index").__init)
    if type(init) == "function" then f = init end
  end
  local class_init = type(x) == "table" or (type(x) == "string" and type(f) == "table")
  local where
  if type(f) == "function" then
    -- a wrapper of an op's binding or composite (F.avg_pool2d of ltc.avg_pool2d, F.fold of
    -- ltc.col2im, itself a device guard's wrapper): the op's doc
    while M.wraps[f] do
      f = M.wraps[f]
      local ns = names_of(f, ltc) -- and the names of what wraps f (ltc.im2col of im2col)
      for w, g in pairs(M.wraps) do
        if g == f then for _, n in ipairs(names_of(w, ltc)) do ns[#ns + 1] = n end end
      end
      d = op_doc_of(ns)
      if d then return d end
    end
    local info = debug.getinfo(f, "S")
    if info.what == "Lua" and info.source:sub(1, 1) == "@" then
      -- a class made by a factory shares its __init: its own doc names it
      local c = not class_init and comment_above(info.source:sub(2), info.linedefined)
      if c then return (name and (name .. ": ") or "") .. c end
      where = info.short_src .. ":" .. info.linedefined
    end
  end
  d = op_doc_of(names, true)
  if d then return d end
  for _, n in ipairs(names) do
    local c = named_comment(n)
    if c then return n .. ": " .. c end
  end
  if type(f) == "function" and where then
    local info = debug.getinfo(f, "S")
    local c = comment_above(info.source:sub(2), info.linedefined)
    if c then return (name and (name .. ": ") or "") .. c end
    return nil, "ltc.help: " .. (name or "this function") .. " has no doc comment (" .. where .. ")"
  end
  return nil, "ltc.help: no documentation found for " .. (name or tostring(x))
end

--- M.help(x): prints M.doc(x) (or why there is none).
function M.help(x)
  local d, why = M.doc(x)
  print(d or why)
end

return M
