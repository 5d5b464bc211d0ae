--- ltc.debug: looking at the pending graph from a script or the REPL.
--
-- Every function that takes tensors (t, ...) looks at the pending IR that computes them;
-- with no tensors it looks at the graph the next sync would compute (every live tensor with
-- pending IR). Nothing is traced, run or synced.
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local core = require "ltc.core"

local M = {}

-- Frames in ltc's own Lua files are skipped when LTC_IR_DEBUG records source lines, so a
-- node points at the user's line (not at init.lua); in a source tree, the generated
-- derivatives (gen/derivatives.lua, installed beside this file) too: a backward op points at
-- the user's `loss:backward()`.
do
  local src = debug.getinfo(1, "S").source -- "@/path/lua/ltc/debug.lua"
  local dir = src:match("^(@.*[/\\])debug%.lua$")
  -- where lua/ltc/autograd.lua finds gen/derivatives.lua in a source tree
  local root = src:match("^@(.*)/lua/ltc/[^/]*$") or "."
  if dir then core._set_source_skip(dir, "@" .. root .. "/gen/derivatives.lua") end
end

--- ltc.debug.pending(): {live_tensors=, pending_tensors=, pending_nodes=}: live tensors,
-- those holding pending IR, and the node count of their graph (prints as one line).
local pending_mt = {
  __tostring = function(p)
    return string.format("%d live tensors, %d with pending IR, %d pending nodes",
      p.live_tensors, p.pending_tensors, p.pending_nodes)
  end,
}
function M.pending() return setmetatable(core.live_info(), pending_mt) end

--- ltc.debug.ir(t, ...): the pending IR as text, one node a line in post order:
--   graph: 4 nodes, 2 parameters, 1 root; hash ...
--   %0 = device_data() f32[2,2] param #0
--   %1 = device_data() f32[] param #1 = 2
--   %2 = mul(%0, %1) f32[2,2]
--   %3 = sum(%2, dim=2, keepdim=true) f32[2,1] root #0
-- Attributes carry their schema names, dims 1-based; 0-d parameters (Lua numbers) show
-- their value; with LTC_IR_DEBUG=1 each node ends with "-- file:line" of the code that made it.
-- A parameter that is a named tensor is named as in ltc.debug.render: by its path in the
-- module given as a last argument {names = model} ("%1 = device_data() f32[4,3] 1.weight
-- (param #0)"), else by its ltc.debug.tag (ltc.nn tags its parameters "Linear.weight").
local draw = require "ltc.debug_draw"
local debug_ir = core.debug_ir
function M.ir(...)
  local n = select("#", ...)
  local last = n > 0 and select(n, ...) or nil
  local opts
  if type(last) == "table" and not core.is_tensor(last) then
    opts, n = last, n - 1
    for k in pairs(opts) do
      if k ~= "names" then raise("debug.ir: unknown option '" .. tostring(k) .. "' (names)") end
    end
  end
  local ts = table.pack(...)
  local text = debug_ir(table.unpack(ts, 1, n))
  local pname = draw.param_names(core.debug_graph(table.unpack(ts, 1, n)), opts and opts.names)
  if next(pname) == nil then return text end
  return (text:gsub("(\n%%(%d+) = device_data%(%) [^\n]-) (param #%d+)", function(head, k, param)
    local name = pname[tonumber(k) + 1]
    if not name then return nil end
    return head .. " " .. name .. " (" .. param .. ")"
  end))
end


--- ltc.debug.tag(t, name): names tensor t in drawings (ltc.debug.dot with options, render)
-- where no `names` option names it; returns t. ltc.nn tags the parameters it registers
-- ("Linear.weight"). The tags do not keep tensors alive.
M.tags = draw.tags
function M.tag(t, name)
  if not core.is_tensor(t) then raise("ltc.debug.tag: a tensor expected, got " .. type(t)) end
  draw.tags[t] = tostring(name)
  return t
end

-- Splits (t, ..., [opts]) into the tensors and the options table (nil when absent).
local function split_opts(...)
  local n = select("#", ...)
  local last = n > 0 and select(n, ...) or nil
  if type(last) == "table" and not core.is_tensor(last) then
    return { ... }, n - 1, last
  end
  return { ... }, n, nil
end

--- ltc.debug.dot(t, ... [, opts]): the same graph as Graphviz DOT (a string): parameters are
-- ellipses, roots are bold with a double border, edges are labelled with the operand number.
-- With an options table (even {}), the drawing for large graphs that ltc.debug.render makes,
-- and a second result {nodes =, drawn =, groups =, lines =, edges =} (nodes of the graph
-- drawn, DOT nodes, collapsed boxes, source-line frames, edges):
--   names   = model (or a list of {name, tensor}, or {name = tensor}): parameters are labelled
--             by their module path ("1.weight") instead of "param #3"
--   cluster = "line" | "module" | "structure" | false: nodes of the same structure (op and
--             shape, and those of their operands two levels up) become one box "x64", in a
--             frame per Lua source line with "line" (the default when LTC_IR_DEBUG=1 recorded
--             lines, else "structure"; a line names the module that ran it, "train.lua:12 in
--             1.fc (Linear)"), per module with "module"; false draws every node
--   expand  = true | {"g12", "train.lua:40", ...}: draw the nodes of these boxes (their ids
--             are in their labels) or source lines one by one
--   feeds   = t (a tensor) or k (node %k of ltc.debug.ir): only what feeds it; depth = n
--             keeps n operand steps from it
function M.dot(...)
  local ts, n, opts = split_opts(...)
  if not opts then return core.debug_dot(table.unpack(ts, 1, n)) end
  return draw.dot(core.debug_graph(table.unpack(ts, 1, n)), opts)
end

--- ltc.debug.backend_text(t, ...): the default backend's text of the computation for that
-- graph (the CPU plan: steps, buffers, their sizes and arena offsets), without running it.
-- Taken from the compile cache when the graph was compiled before, else compiled for this
-- call only (not cached, not counted).
M.backend_text = core.debug_backend_text

--- ltc.debug.explain_recompile(): why the last compile-cache miss happened, as text: the
-- compiled graph against the nearest of the last 8 compiled graphs, naming the differing
-- nodes ("node %0 device_data: shape f32[64,4] now f32[32,4]").
M.explain_recompile = core.debug_explain_recompile

--- ltc.debug.lowered(t): whether t's device computes t's pending op itself (false: its
-- backend does not lower the op, and the core's eager fallback would run it on another
-- backend, with a round trip through the host). True for a computed tensor and on the CPU.
M.lowered = core.debug_lowered

--- ltc.debug.lowers_op(device, op [, dtype="float32"]): whether device ("cpu", "opencl:0")
-- runs nodes of op (a full name from docs/ops.md: "lstm_layer", "conv2d.nobias") whose
-- operands are of dtype itself, as its backend's lowers_op slot says; asks about the kind,
-- makes no node (ltc.debug.lowered answers for one pending tensor). Errors name an unknown
-- device, op or dtype; a backend's device type exists once its module is loaded
-- (require "ltc.opencl" first for "opencl").
function M.lowers_op(device, op, dtype)
  local args = { { device, "a device name such as \"cpu\" or \"opencl:0\"" },
    { op, "an op name such as \"lstm_layer\"" } }
  for i = 1, 2 do
    if type(args[i][1]) ~= "string" then
      raise(string.format("ltc.debug.lowers_op: bad argument #%d (%s expected, got %s)", i,
        args[i][2], core.typename(args[i][1])))
    end
  end
  local ok, r = pcall(core._device_lowers_op, device, op, dtype)
  if ok then return r end
  local msg = tostring(r):gsub("^lowers_op:", "ltc.debug.lowers_op:")
  if msg:find("unknown device type", 1, true) then
    local kind = device:match("^[^:]*")
    msg = msg .. (kind == "opencl" and " (its backend registers it: require \"ltc.opencl\" first)"
      or " (a backend's device type exists once its module is loaded, such as require \"ltc.opencl\")")
  end
  raise(msg)
end

--- ltc.debug.view_steps(t): how many view ops t's record holds from its base (0: not a view).
-- Chains of narrows of one dim, reshapes and undone transposes stay short (issue 17, r07).
M.view_steps = core.debug_view_steps

--- ltc.debug.explain_jit(f): why the ltc.jit callable f captured again, as text: one line
-- per recapture (the last 8), naming the argument whose shape or dtype changed or the Lua
-- value that changed ("call 7: upvalue model.2.training changed (true -> false)"), and
-- whether f now runs untraced.
function M.explain_jit(f)
  if type(f) ~= "table" or type(f.recaptures) ~= "table" then
    raise("ltc.debug.explain_jit: expected a callable made by ltc.jit, got " .. type(f))
  end
  local out = { string.format("ltc.jit: %d calls, %s; %d Lua values guarded", f.calls,
    f.graph and "a captured graph" or "no captured graph", f.guarded or 0) }
  if #f.recaptures == 0 then out[#out + 1] = "no recapture" end
  for _, r in ipairs(f.recaptures) do out[#out + 1] = r end
  if f.untraced then out[#out + 1] = "runs untraced: " .. f.untraced end
  return table.concat(out, "\n")
end

--- The Graphviz program ltc.debug.render runs.
M.dot_command = "dot"

local function shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

--- ltc.debug.render(t, ... [, opts], path): writes the graph of the tensors as a picture with
-- Graphviz's dot; the format comes from path's extension (.svg, .png, .pdf). Returns path and
-- the figures of ltc.debug.dot. The drawing is ltc.debug.dot's with options (opts as there):
-- what repeats is collapsed, so a 10,000-node training step is drawn in seconds; expand = true
-- draws every node (Graphviz then takes minutes past a few hundred nodes).
-- Errors: no path, an unknown extension, dot not installed (the message says how to install
-- it), or dot failing.
function M.render(...)
  local n = select("#", ...)
  local path = n > 0 and select(n, ...) or nil
  if type(path) ~= "string" then
    raise("ltc.debug.render: the last argument must be the output path (.svg, .png or .pdf)")
  end
  local fmt = path:match("%.(%w+)$")
  fmt = fmt and fmt:lower()
  if fmt ~= "svg" and fmt ~= "png" and fmt ~= "pdf" then
    raise("ltc.debug.render: cannot tell the format of '" .. path ..
      "' (use a .svg, .png or .pdf name)")
  end
  local ts, nt, opts = split_opts(...)
  nt = nt - 1 -- the path
  if nt > 0 and type(ts[nt]) == "table" and not core.is_tensor(ts[nt]) then
    opts, nt = ts[nt], nt - 1
  end
  local dot, info = draw.dot(core.debug_graph(table.unpack(ts, 1, nt)), opts or {})
  if not os.execute("command -v " .. shell_quote(M.dot_command) .. " >/dev/null 2>&1") then
    raise("ltc.debug.render: Graphviz's '" .. M.dot_command .. "' program is not installed;" ..
      " install it with: sudo apt-get install graphviz (or write ltc.debug.dot(...) to a file)")
  end
  local tmp = os.tmpname()
  local f = assert(io.open(tmp, "w"))
  f:write(dot)
  f:close()
  local ok = os.execute(string.format("%s -T%s -o %s %s", shell_quote(M.dot_command), fmt,
    shell_quote(path), shell_quote(tmp)))
  os.remove(tmp)
  if not ok then raise("ltc.debug.render: " .. M.dot_command .. " failed writing " .. path) end
  return path, info
end

return M
