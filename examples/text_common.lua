--- examples/text_common.lua - what the character-level examples (char_lstm.lua, tiny_gpt.lua)
-- share: their command-line options and the text they train on (Debian's fortune files,
-- bytes as 1-based class indices). Loaded with dofile from the example's own folder.
local M = {}

--- M.options(name, opts, usage): opts (defaults; a number default makes the option a
-- number) updated from `--key value` pairs of the command line (`--init-dir` sets
-- opts.init_dir); an unknown option or a missing value prints `usage` and exits with 2.
function M.options(name, opts, usage)
  local i, a = 1, arg or {}
  while a[i] do
    local key = a[i]:match("^%-%-([%w%-]+)$")
    key = key and key:gsub("%-", "_")
    if not key or opts[key] == nil or a[i + 1] == nil then
      io.stderr:write("usage: " .. name .. ".lua " .. usage .. "\n")
      os.exit(2)
    end
    local v = a[i + 1]
    if type(opts[key]) == "number" then
      local x = tonumber(v)
      if not x then
        io.stderr:write(string.format("%s: --%s takes a number, got '%s'\nusage: %s.lua %s\n", name,
          a[i]:sub(3), v, name, usage))
        os.exit(2)
      end
      v = math.tointeger(x) or x
    end
    opts[key] = v
    i = i + 2
  end
  return opts
end

-- The text files of dir (not fortune's .dat/.u8 indexes, nothing with a NUL byte), in name
-- order, concatenated up to `limit` bytes.
local function read_corpus(dir, limit)
  local p = io.popen("ls '" .. dir .. "' 2>/dev/null")
  local names = {}
  for name in p:lines() do
    if not name:match("%.dat$") and not name:match("%.u8$") then names[#names + 1] = name end
  end
  p:close()
  table.sort(names)
  local parts, n = {}, 0
  for _, name in ipairs(names) do
    local f = io.open(dir .. "/" .. name, "rb")
    if f then
      local s = f:read("a")
      f:close()
      if s and not s:find("\0", 1, true) then
        parts[#parts + 1] = s
        n = n + #s
        if n >= limit then break end
      end
    end
  end
  return table.concat(parts):sub(1, limit)
end

--- M.corpus(name, dir, limit) -> codes, vocab, index: the first `limit` bytes of dir's text
-- files as class indices 1..#vocab (codes[i]), the bytes in use in order (vocab[c] is the
-- byte of class c, index[byte] its class). Exits with 3, saying how to get the text, when
-- dir holds less than 10,000 bytes of it.
function M.corpus(name, dir, limit)
  local text = read_corpus(dir, limit)
  if #text < 10000 then
    io.stderr:write(name .. ": no text in " .. dir .. " (install Debian's fortunes: "
      .. "sudo apt-get install fortunes), or pass --data DIR\n")
    os.exit(3)
  end
  local seen, vocab, index = {}, {}, {}
  for i = 1, #text do seen[text:byte(i)] = true end
  for b = 0, 255 do if seen[b] then vocab[#vocab + 1] = b; index[b] = #vocab end end
  local codes = {}
  for i = 1, #text do codes[i] = index[text:byte(i)] end
  return codes, vocab, index
end

--- M.step_ms(t0, t1, t_warm, steps, timed) -> ms, how: the training time per step, in ms,
-- for the summary line. t0 and t1 are the clock before the first and after the last of
-- `steps` steps, t_warm the clock after the last warm-up step (nil if the run ended before
-- it), `timed` the steps after it. The mean over the steps after warm-up when there are any;
-- otherwise the mean over all steps, and `how` says so (a run too short to time the steady
-- state printed "inf ms/step"). nil and "no steps" when steps is 0.
function M.step_ms(t0, t1, t_warm, steps, timed)
  if t_warm and timed > 0 then return (t1 - t_warm) / timed * 1000, "after warm-up" end
  if steps <= 0 then return nil, "no steps" end
  return (t1 - t0) / steps * 1000, string.format("over all %d steps, none after warm-up", steps)
end

--- M.format_ms(ms, how) -> "12.3 ms/step after warm-up" (or "n/a ms/step no steps").
function M.format_ms(ms, how)
  return string.format("%s ms/step %s", ms and string.format("%.1f", ms) or "n/a", how)
end

return M
