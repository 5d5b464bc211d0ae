--- ltc.nn_positional: PyTorch's positional constructor arguments for ltc.nn's modules.
-- A PyTorch user writes nn.LSTM(10, 20, 2), nn.MultiheadAttention(64, 4, 0.1),
-- nn.TransformerEncoderLayer(128, 4, 512, 0.1), nn.Conv1d(1, 16, 3, 2, 1),
-- nn.Embedding(100, 16, 1); ltc's modules take an options table with the same names. This
-- turns the arguments after the required ones into that table, so both forms work, and a
-- trailing options table may follow the positional ones:
--
--   local opts = positional(name, after, order, ...)
--
-- name: the module ("LSTM"), for errors; after: the last required argument ("hidden_size");
-- order: the option names in PyTorch's positional order; ...: the arguments after the
-- required ones. Returns a new table (nil values left out) that the caller checks as before
-- (nn.check_options: unknown names). A trailing table is the options table unless it is a
-- list (a {h, w} pair or betas given positionally). Raises, naming the module: more
-- positional arguments than `order`, a name given positionally and in the table, a boolean
-- option (bias, batch_first, ...) that is no boolean, a string option (nonlinearity,
-- activation) that is no string, a count or rate (num_layers, dropout, eps, ...) that is no
-- number.
local core = require "ltc.core"
local raise = core._raise -- an error at the caller's line, outside lua/ltc/

local booleans = { bias = true, batch_first = true, bidirectional = true, affine = true,
  track_running_stats = true, elementwise_affine = true, norm_first = true }
local strings = { nonlinearity = true, activation = true }
local numbers = { num_layers = true, dropout = true, eps = true, momentum = true,
  dim_feedforward = true, layer_norm_eps = true, padding_idx = true, kdim = true, vdim = true,
  groups = true, proj_size = true }

local function typename(v)
  return core.is_tensor(v) and "ltc.Tensor" or type(v)
end

return function(name, after, order, ...)
  local n = select("#", ...)
  local last = n > 0 and select(n, ...) or nil
  local has_opts = type(last) == "table" and not core.is_tensor(last) and last[1] == nil
  local n_pos = has_opts and n - 1 or n
  if n_pos > #order then
    raise(string.format("%s: takes at most %d positional argument%s after %s (%s), got %d; give "
      .. "the others in an options table", name, #order, #order == 1 and "" or "s", after,
      table.concat(order, ", "), n_pos))
  end
  local opts = {}
  for i = 1, n_pos do
    local v = select(i, ...)
    if v ~= nil then opts[order[i]] = v end
  end
  if has_opts then
    for k, v in pairs(last) do
      if opts[k] ~= nil then
        raise(string.format("%s: got multiple values for '%s' (positional and in the options table)",
          name, tostring(k)))
      end
      opts[k] = v
    end
  end
  for k, v in pairs(opts) do
    local want = booleans[k] and "boolean" or strings[k] and "string" or numbers[k] and "number"
    if want and type(v) ~= want then
      raise(string.format("%s: %s must be a %s, got %s", name, k, want, typename(v)))
    end
  end
  return opts
end
