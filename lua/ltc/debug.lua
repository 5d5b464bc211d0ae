--- ltc.debug: looking at the pending graph from a script or the REPL.
--
-- Every function that takes tensors (t, ...) looks at the pending IR that computes them;
-- with no tensors it looks at the graph the next sync would compute (every live tensor with
-- pending IR). Nothing is traced, run or synced.
local core = require "ltc.core"

local M = {}

-- Frames in ltc's own Lua files are skipped when LTC_IR_DEBUG records source lines, so a
-- node points at the user's line (not at init.lua).
do
  local src = debug.getinfo(1, "S").source -- "@/path/lua/ltc/debug.lua"
  local dir = src:match("^(@.*[/\\])debug%.lua$")
  if dir then core.debug_set_source_skip(dir) end
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
M.ir = core.debug_ir

--- ltc.debug.dot(t, ...): the same graph as Graphviz DOT (a string): parameters are
-- ellipses, roots are bold with a double border, edges are labelled with the operand number.
M.dot = core.debug_dot

--- ltc.debug.backend_text(t, ...): the default backend's text of the computation for that
-- graph (the CPU plan: steps, buffers, their sizes and arena offsets), without running it.
-- Taken from the compile cache when the graph was compiled before, else compiled for this
-- call only (not cached, not counted).
M.backend_text = core.debug_backend_text

--- ltc.debug.explain_recompile(): why the last compile-cache miss happened, as text: the
-- compiled graph against the nearest of the last 8 compiled graphs, naming the differing
-- nodes ("node %0 device_data: shape f32[64,4] now f32[32,4]").
M.explain_recompile = core.debug_explain_recompile

--- ltc.debug.view_steps(t): how many view ops t's record holds from its base (0: not a view).
-- Chains of narrows of one dim, reshapes and undone transposes stay short (issue 17, r07).
M.view_steps = core.debug_view_steps

--- ltc.debug.explain_jit(f): why the ltc.jit callable f captured again, as text: one line
-- per recapture (the last 8), naming the argument whose shape or dtype changed or the Lua
-- value that changed ("call 7: upvalue model.2.training changed (true -> false)"), and
-- whether f now runs untraced.
function M.explain_jit(f)
  if type(f) ~= "table" or type(f.recaptures) ~= "table" then
    error("ltc.debug.explain_jit: expected a callable made by ltc.jit, got " .. type(f), 2)
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

--- ltc.debug.render(t, ..., path): writes the graph of the tensors as a picture with
-- Graphviz's dot; the format comes from path's extension (.svg, .png, .pdf). Returns path.
-- Errors: no path, an unknown extension, dot not installed (the message says how to install
-- it), or dot failing.
function M.render(...)
  local n = select("#", ...)
  local path = n > 0 and select(n, ...) or nil
  if type(path) ~= "string" then
    error("ltc.debug.render: the last argument must be the output path (.svg, .png or .pdf)", 2)
  end
  local fmt = path:match("%.(%w+)$")
  fmt = fmt and fmt:lower()
  if fmt ~= "svg" and fmt ~= "png" and fmt ~= "pdf" then
    error("ltc.debug.render: cannot tell the format of '" .. path ..
      "' (use a .svg, .png or .pdf name)", 2)
  end
  local dot = core.debug_dot(table.unpack({ ... }, 1, n - 1))
  if not os.execute("command -v " .. shell_quote(M.dot_command) .. " >/dev/null 2>&1") then
    error("ltc.debug.render: Graphviz's '" .. M.dot_command .. "' program is not installed;" ..
      " install it with: sudo apt-get install graphviz (or write ltc.debug.dot(...) to a file)", 2)
  end
  local tmp = os.tmpname()
  local f = assert(io.open(tmp, "w"))
  f:write(dot)
  f:close()
  local ok = os.execute(string.format("%s -T%s -o %s %s", shell_quote(M.dot_command), fmt,
    shell_quote(path), shell_quote(tmp)))
  os.remove(tmp)
  if not ok then error("ltc.debug.render: " .. M.dot_command .. " failed writing " .. path, 2) end
  return path
end

return M
