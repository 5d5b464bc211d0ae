--- ltc.debug's drawing of large graphs (ltc.debug.dot with options, ltc.debug.render):
-- what repeats is collapsed, parameters are named by their module path, and the drawing can
-- be cut to what feeds one tensor.
--
-- Collapsing: nodes with the same structure (op and shape, and the same of their operands two
-- levels up) become one box "add f32[4,32] x64": an RNN's time steps or a
-- transformer's layers fold onto one step's worth of boxes, whatever the graph's size. With
-- LTC_IR_DEBUG=1 the boxes are grouped in frames by the Lua source line that traced them
-- (`cluster = "line"`, the default when lines were recorded; the line carries the module
-- that ran it, "train.lua:12 in 1.fc (Linear)") or by module alone (`cluster = "module"`). Boxes carry ids ("g12"); the
-- option `expand` draws the nodes of chosen boxes or lines one by one. Unnamed 0-d
-- parameters (Lua numbers) are drawn only inside expanded boxes.
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local core = require "ltc.core"

local M = {}

--- Names given by ltc.debug.tag (weak keys): used where `names` does not name a tensor.
M.tags = setmetatable({}, { __mode = "k" })

local function esc(s)
  return (s:gsub('[\\"]', "\\%0"):gsub("\n", "\\n"))
end

-- names: a module (anything with named_parameters()), a list of {name, tensor} pairs, or a
-- table name -> tensor. Returns data id -> name and node id -> name.
local function name_maps(names)
  local by_data, by_node = {}, {}
  local function add(list)
    for _, np in ipairs(list) do
      if not core.is_tensor(np[2]) then
        raise("names: '" .. tostring(np[1]) .. "' is not a tensor")
      end
      local node, data = core.debug_tensor_ids(np[2])
      if data then by_data[data] = np[1] end
      if node then by_node[node] = np[1] end
    end
  end
  local tagged = {}
  for t, name in pairs(M.tags) do -- (a collected tensor may linger as a key: skipped)
    if core.is_tensor(t) then tagged[#tagged + 1] = { name, t } end
  end
  add(tagged)
  if names == nil then return by_data, by_node end
  local list
  if type(names) == "table" and type(names.named_parameters) == "function" then
    list = names:named_parameters()
  elseif type(names) == "table" and type(names[1]) == "table" then
    list = names
  elseif type(names) == "table" then
    list = {}
    for k, v in pairs(names) do
      if core.is_tensor(v) then list[#list + 1] = { tostring(k), v }
      elseif core.is_tensor(k) then list[#list + 1] = { tostring(v), k } end
    end
    table.sort(list, function(a, b) return a[1] < b[1] end)
  else
    raise("names: a module, a list of {name, tensor} or a table of tensors expected, got " ..
      type(names))
  end
  -- the first name of a tensor wins (a list names shared parameters once)
  local first, seen = {}, {}
  for _, np in ipairs(list) do
    if not seen[np[2]] then seen[np[2]] = true; first[#first + 1] = np end
  end
  add(first)
  return by_data, by_node
end

--- M.param_names(g, names): node index (1-based, in g's post order) -> the name of the tensor
-- that node is, from `names` (a module: its parameter paths, "1.weight"; a list of {name,
-- tensor}; a table name -> tensor) or else ltc.debug.tag ("Linear.weight").
function M.param_names(g, names)
  local by_data, by_node = name_maps(names)
  local pname = {}
  for i = 1, g.n do
    pname[i] = (g.data[i] and by_data[g.data[i]]) or by_node[g.id[i]] or nil
  end
  return pname
end

-- The nodes that feed node `root` (and it), at most `depth` operand steps away.
local function feeding(g, root, depth)
  local keep, level = { [root] = 0 }, nil
  for i = root, 1, -1 do
    level = keep[i]
    if level and (not depth or level < depth) then
      for _, a in ipairs(g.args[i]) do
        if not keep[a] or keep[a] > level + 1 then keep[a] = level + 1 end
      end
    end
  end
  return keep
end

local function find_root(g, feeds)
  if math.type(feeds) == "integer" then
    if feeds < 0 or feeds >= g.n then
      raise("feeds: no node %" .. feeds .. " in a graph of " .. g.n .. " nodes")
    end
    return feeds + 1
  end
  if not core.is_tensor(feeds) then
    raise("feeds: a tensor or a node number (%k of ltc.debug.ir) expected, got " ..
      type(feeds))
  end
  local node, data = core.debug_tensor_ids(feeds)
  for i = g.n, 1, -1 do
    if g.id[i] == node or (data and g.data[i] == data) then return i end
  end
  raise("feeds: the tensor is not in this graph")
end

-- Structural keys: level 1 is op and shape (not the attributes: a select of step t has index
-- t); level 3 adds the operands' level 2.
local function structure_keys(g, pname)
  local ids, next_id = {}, 0
  local function intern(s)
    local v = ids[s]
    if not v then next_id = next_id + 1; v = next_id; ids[s] = v end
    return v
  end
  local k1, k2, k3 = {}, {}, {}
  for i = 1, g.n do
    local base = pname[i] and ("param " .. pname[i]) or
      (g.param[i] and ("param " .. g.shape[i])) or (g.op[i] .. " " .. g.shape[i])
    k1[i] = intern(base)
    local a2, a3 = {}, {}
    for q, a in ipairs(g.args[i]) do a2[q], a3[q] = k1[a], k2[a] end
    k2[i] = intern(k1[i] .. "<" .. table.concat(a2, ",") .. ">")
    k3[i] = intern("3:" .. k1[i] .. "<" .. table.concat(a3, ",") .. ">")
  end
  return k3
end

-- The figures print as one line (the REPL shows them after render's path).
local info_mt = {
  __tostring = function(i)
    return string.format("%d nodes drawn as %d (%d boxes, %d source lines, %d edges)",
      i.nodes, i.drawn, i.groups, i.lines, i.edges)
  end,
}

--- M.dot(g, opts): DOT text and {nodes =, groups =, drawn =, edges =, lines =} for the
-- exported graph g (core.debug_graph). opts: names, feeds, depth, cluster ("line",
-- "structure" or false), expand (true, or a list of box ids "g3" and source lines).
function M.dot(g, opts)
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "names" and k ~= "feeds" and k ~= "depth" and k ~= "cluster" and k ~= "expand" then
      raise("ltc.debug: unknown option '" .. tostring(k) ..
        "' (names, feeds, depth, cluster, expand)")
    end
  end
  local pname = M.param_names(g, opts.names)
  local keep
  if opts.feeds ~= nil then keep = feeding(g, find_root(g, opts.feeds), opts.depth)
  else
    keep = {}
    for i = 1, g.n do keep[i] = 0 end
  end
  local has_lines = false
  for i = 1, g.n do if keep[i] and g.source[i] then has_lines = true; break end end
  local cluster = opts.cluster
  if cluster == nil then cluster = has_lines and "line" or "structure" end
  if cluster ~= "line" and cluster ~= "module" and cluster ~= "structure" and cluster ~= false then
    raise("ltc.debug: cluster must be \"line\", \"module\", \"structure\" or false, got " ..
      tostring(cluster))
  end
  local expand_all, expand = opts.expand == true, {}
  if type(opts.expand) == "table" then
    for _, e in ipairs(opts.expand) do expand[e] = true end
  elseif opts.expand ~= nil and opts.expand ~= true and opts.expand ~= false then
    raise("ltc.debug: expand must be true or a list of box ids and source lines")
  end

  -- which node stands alone, which is folded into a box, which is hidden
  local scalar, alone = {}, {}
  for i = 1, g.n do
    if keep[i] and g.param[i] and not pname[i] then scalar[i] = g.ndim[i] == 0 end
    alone[i] = keep[i] and (pname[i] ~= nil or (g.param[i] and not scalar[i])) or false
  end
  local key = cluster and structure_keys(g, pname) or nil
  local line_of = {}
  for i = 1, g.n do
    if cluster == "line" then line_of[i] = g.source[i] or "(no source line)"
    elseif cluster == "module" then
      line_of[i] = g.source[i] and g.source[i]:match(" in (.+)$") or "(outside modules)"
    else line_of[i] = "" end
  end
  -- boxes: one per (line, structure); ids in order of first appearance
  local box_of, boxes = {}, {}
  local box_by = {}
  for i = 1, g.n do
    if keep[i] and not alone[i] and not scalar[i] then
      local k = cluster and (line_of[i] .. "\0" .. key[i]) or i
      local b = box_by[k]
      if not b then
        b = { id = "g" .. (#boxes + 1), members = {}, line = line_of[i] }
        boxes[#boxes + 1] = b
        box_by[k] = b
      end
      b.members[#b.members + 1] = i
      box_of[i] = b
    end
  end
  -- a hidden scalar belongs to its first consumer's box
  local consumer = {}
  for i = 1, g.n do
    if keep[i] then
      for _, a in ipairs(g.args[i]) do
        if scalar[a] and not consumer[a] then consumer[a] = i end
      end
    end
  end
  for _, b in ipairs(boxes) do
    b.open = not cluster or expand_all or expand[b.id] or (b.line ~= "" and expand[b.line]) or
      #b.members == 1
  end

  local out = {}
  local function add(s) out[#out + 1] = s end
  local info = setmetatable({ nodes = 0, groups = 0, drawn = 0, edges = 0, lines = 0 }, info_mt)
  for i = 1, g.n do if keep[i] then info.nodes = info.nodes + 1 end end
  local title = g.header
  if opts.feeds ~= nil then title = title .. "\nthe " .. info.nodes .. " nodes that feed one tensor" end
  add("digraph ltc {\n  graph [label=\"" .. esc(title) .. "\", labelloc=t, fontname=\"monospace\"" ..
    ", nslimit=2, mclimit=0.5, ranksep=0.3, nodesep=0.2];\n")
  add("  node [shape=box, fontname=\"monospace\", fontsize=10, height=0.3];\n")
  add("  edge [arrowsize=0.6];\n")

  local rep = {} -- node -> DOT name
  local function node_label(i)
    local t = { "%" .. (i - 1) .. " " .. g.op[i] .. (g.attrs[i] ~= "" and "(" .. g.attrs[i] .. ")" or ""),
      g.shape[i] }
    if pname[i] then t[1] = pname[i] end
    if g.param[i] and not pname[i] then
      t[#t + 1] = "param #" .. g.param[i] .. (g.value[i] and (" = " .. string.format("%.9g", g.value[i])) or "")
    end
    if g.root[i] then t[#t + 1] = "root #" .. g.root[i] end
    if g.source[i] and cluster ~= "line" then t[#t + 1] = g.source[i] end -- (module: the line too)
    return table.concat(t, "\n")
  end
  local function draw_node(i, indent)
    rep[i] = "n" .. (i - 1)
    local shape = g.param[i] and ", shape=ellipse" or ""
    if pname[i] then shape = shape .. ", style=filled, fillcolor=\"#e8f0ff\"" end
    if g.root[i] then shape = shape .. ", peripheries=2, style=bold" end
    add(indent .. rep[i] .. " [label=\"" .. esc(node_label(i)) .. "\"" .. shape .. "];\n")
    info.drawn = info.drawn + 1
  end
  local function box_label(b)
    local i = b.members[1]
    local attrs = g.attrs[i]
    for _, m in ipairs(b.members) do
      if g.attrs[m] ~= attrs then attrs = "..."; break end
    end
    local t = { "[" .. b.id .. "] " .. g.op[i] .. (attrs ~= "" and "(" .. attrs .. ")" or ""),
      g.shape[i] .. "  x" .. #b.members }
    local roots, lines, nl = {}, {}, 0
    for _, m in ipairs(b.members) do
      if g.root[m] then roots[#roots + 1] = "#" .. g.root[m] end
      local s = g.source[m]
      if s and not lines[s] then lines[s] = true; nl = nl + 1 end
    end
    if #roots > 0 then
      t[#t + 1] = "roots " .. table.concat(roots, " ", 1, math.min(#roots, 4)) .. (#roots > 4 and " ..." or "")
    end
    if cluster ~= "line" and nl > 0 then -- (module frames: the lines inside them)
      local s = g.source[i]
      t[#t + 1] = nl == 1 and s or (s .. " and " .. (nl - 1) .. " more lines")
    end
    return table.concat(t, "\n")
  end
  local function draw_box(b, indent)
    if b.open then
      for _, i in ipairs(b.members) do draw_node(i, indent) end
      for i, c in pairs(consumer) do
        if box_of[c] == b then draw_node(i, indent) end
      end
      return
    end
    local root = false
    for _, m in ipairs(b.members) do root = root or g.root[m] end
    for _, m in ipairs(b.members) do rep[m] = b.id end
    add(indent .. b.id .. " [label=\"" .. esc(box_label(b)) .. "\", style=\"filled" ..
      (root and ",bold" or "") .. "\", fillcolor=\"#f4f4f4\"" .. (root and ", peripheries=2" or "") .. "];\n")
    info.groups = info.groups + 1
    info.drawn = info.drawn + 1
  end
  for i = 1, g.n do if alone[i] then draw_node(i, "  ") end end
  if cluster == "line" or cluster == "module" then
    local order, by_line = {}, {}
    for _, b in ipairs(boxes) do
      if not by_line[b.line] then by_line[b.line] = {}; order[#order + 1] = b.line end
      table.insert(by_line[b.line], b)
    end
    for k, line in ipairs(order) do
      local n = 0
      for _, b in ipairs(by_line[line]) do n = n + #b.members end
      add("  subgraph cluster_" .. k .. " {\n    label=\"" .. esc(line .. "  (" .. n .. " nodes)") ..
        "\"; style=dashed; color=\"#888888\";\n")
      for _, b in ipairs(by_line[line]) do draw_box(b, "    ") end
      add("  }\n")
      info.lines = info.lines + 1
    end
  else
    for _, b in ipairs(boxes) do draw_box(b, "  ") end
  end
  -- edges: one per pair of drawn nodes, counted
  local seen, edge_order = {}, {}
  for i = 1, g.n do
    local to = rep[i]
    if to then
      for q, a in ipairs(g.args[i]) do
        local from = rep[a]
        if from and from ~= to then
          local k = from .. " -> " .. to
          local e = seen[k]
          if not e then
            e = { k = k, n = 0, q = q, multi = #g.args[i] > 1 and to == "n" .. (i - 1) }
            seen[k] = e
            edge_order[#edge_order + 1] = e
          end
          e.n = e.n + 1
        end
      end
    end
  end
  for _, e in ipairs(edge_order) do
    local attrs = {}
    if e.n > 1 then
      attrs[#attrs + 1] = "penwidth=" .. string.format("%.1f", math.min(4, 1 + math.log(e.n, 4)))
      attrs[#attrs + 1] = "tooltip=\"x" .. e.n .. "\""
    elseif e.multi then
      attrs[#attrs + 1] = "headlabel=\"" .. e.q .. "\", labelfontsize=8"
    end
    add("  " .. e.k .. (#attrs > 0 and (" [" .. table.concat(attrs, ", ") .. "]") or "") .. ";\n")
    info.edges = info.edges + 1
  end
  add("}\n")
  return table.concat(out), info
end

return M
