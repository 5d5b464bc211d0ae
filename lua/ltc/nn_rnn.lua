--- ltc.nn recurrent modules (PyTorch's torch.nn.RNN, LSTM, GRU and their cells) and
-- nn.utils.rnn.pad_sequence, added to ltc.nn by lua/ltc/nn.lua: require("ltc.nn_rnn")(nn, F).
--
-- Parameters, their names, shapes, gate order and initialisation are PyTorch's (uniform in
-- +-1/sqrt(hidden_size)), so a state dict moves between the two (spec/rnn_spec.lua compares
-- outputs and gradients with PyTorch's for the same weights). Gate order: LSTM i, f, g, o;
-- GRU r, z, n. An LSTM or GRU layer is one lstm_layer or gru_layer op per direction (the
-- fused recurrences of codegen/ops.yaml) after one linear for the input projection of every
-- step. In an RNN layer, in the cells, and on a backend without the fused ops, each time step
-- is two small matrix products and the gate math, which the CPU backend fuses into one loop
-- (spec/rnn_spec.lua checks the plan).
local core = require "ltc.core"
local raise = core._raise -- an error at the caller's line, outside lua/ltc/
local ltc = require "ltc"
local positional = require "ltc.nn_positional" -- nn.LSTM(10, 20, 2): PyTorch's positional order

return function(nn, F)
  local check_options, set, check_size = nn.check_options, nn.option_set, nn.check_size
  local uniform = nn._private.uniform

  local gates = { RNN = 1, LSTM = 4, GRU = 3 }

  -- One time step of `mode` from the input projection xw [B, G*H] (x W_ih^T + b_ih), the
  -- state h [B, H] (and c for LSTM) and the recurrent weights. Returns h' (and c').
  local function step(mode, xw, h, c, w_hh, b_hh, H, nonlinearity)
    local hw = h:matmul(w_hh:t())
    if b_hh then hw = hw + b_hh end
    if mode == "RNN" then
      local a = xw + hw
      return nonlinearity == "relu" and a:relu() or a:tanh()
    elseif mode == "LSTM" then
      local g = xw + hw
      local i = g:narrow(-1, 1, H):sigmoid()
      local f = g:narrow(-1, H + 1, H):sigmoid()
      local gg = g:narrow(-1, 2 * H + 1, H):tanh()
      local o = g:narrow(-1, 3 * H + 1, H):sigmoid()
      local c2 = f * c + i * gg
      return o * c2:tanh(), c2
    else
      local r = (xw:narrow(-1, 1, H) + hw:narrow(-1, 1, H)):sigmoid()
      local z = (xw:narrow(-1, H + 1, H) + hw:narrow(-1, H + 1, H)):sigmoid()
      local n = (xw:narrow(-1, 2 * H + 1, H) + r * hw:narrow(-1, 2 * H + 1, H)):tanh()
      return n + z * (h - n)
    end
  end

  -- Whether x's device runs mode's fused layer op (lstm_layer, gru_layer) itself for x's
  -- dtype (the CPU does; a backend without it, such as OpenCL, takes the step-by-step ops
  -- instead of the core's eager fallback): the core's answer about the op kind
  -- (ltc_device_lowers_op, no node traced), asked when the module first sees a device and
  -- dtype and kept on the module with them, so a forward on the same device and dtype
  -- compares two interned strings (no key is built per step).
  local function fused_ok(self, mode, x)
    local dev, dt = x:device(), x:dtype()
    local c = rawget(self, "_fused_lowers")
    if c == nil or c[1] ~= dev or c[2] ~= dt then
      c = { dev, dt, core._device_lowers_op(dev, mode == "LSTM" and "lstm_layer" or "gru_layer", dt) }
      rawset(self, "_fused_lowers", c)
    end
    return c[3]
  end

  local function input_proj(x, w_ih, b_ih)
    if b_ih then return F.linear(x, w_ih, b_ih) end
    return F.linear(x, w_ih)
  end

  local function check_input(name, x, I, want_dims)
    if not ltc.is_tensor(x) then raise(name .. ": input must be a tensor, got " .. type(x)) end
    local d = x:dim()
    local ok = false
    for _, w in ipairs(want_dims) do ok = ok or d == w end
    if not ok or x:size(-1) ~= I then
      raise(string.format("%s: input of size [%s] must be %s with a last dim of input_size %d",
        name, table.concat(x:size(), ", "), table.concat(want_dims, "-d or ") .. "-d", I))
    end
    if not x:is_floating_point() then
      raise(string.format("%s: input must be of a floating dtype, got %s", name, x:dtype()))
    end
  end

  -- x (the input or a state) must be of the weights' dtype w (PyTorch raises too), checked
  -- here so that the error names the module, not the op that would meet them first
  local function check_dtype(name, what, x, w)
    if x:dtype() ~= w:dtype() then
      raise(string.format("%s: %s dtype %s does not match the weights' dtype %s (convert the %s "
        .. "with :to(\"%s\") or the module with :to(\"%s\"))", name, what, x:dtype(), w:dtype(),
        what, w:dtype(), x:dtype()))
    end
  end

  local function check_state(name, what, t, want, w, why)
    if not ltc.is_tensor(t) then
      raise(string.format("%s: %s must be a tensor, got %s%s", name, what, type(t),
        type(t) == "table" and (name == "GRU" or name == "RNN") and " (the state of a GRU or RNN is one "
          .. "tensor h0; a table {h0, c0} is an LSTM's)" or ""))
    end
    check_dtype(name, what, t, w)
    local s = t:size()
    local ok = #s == #want
    for i = 1, #want do ok = ok and s[i] == want[i] end
    if not ok then
      raise(string.format("%s: %s has size [%s], expected [%s]%s", name, what, table.concat(s, ", "),
        table.concat(want, ", "), why or ""))
    end
  end

  ---------------------------------------------------------------------------------------------
  -- cells

  local function cell_class(mode)
    local name = mode .. "Cell"
    local cls = nn.class(name)
    function cls:__init(input_size, hidden_size, ...)
      check_size(name, "input_size", input_size)
      check_size(name, "hidden_size", hidden_size)
      local allowed = mode == "RNN" and set("bias", "nonlinearity") or set("bias")
      local opts = check_options(name, positional(name, "hidden_size",
        mode == "RNN" and { "bias", "nonlinearity" } or { "bias" }, ...), allowed, 3)
      self.nonlinearity = opts.nonlinearity or "tanh"
      if self.nonlinearity ~= "tanh" and self.nonlinearity ~= "relu" then
        raise(name .. ": nonlinearity must be 'tanh' or 'relu', not '" .. tostring(self.nonlinearity) .. "'")
      end
      self.input_size, self.hidden_size, self.mode = input_size, hidden_size, mode
      local G, k = gates[mode] * hidden_size, 1 / math.sqrt(hidden_size)
      self:register_parameter("weight_ih", uniform({ G, input_size }, k))
      self:register_parameter("weight_hh", uniform({ G, hidden_size }, k))
      if opts.bias ~= false then
        self:register_parameter("bias_ih", uniform({ G }, k))
        self:register_parameter("bias_hh", uniform({ G }, k))
      end
    end
    --- cell(x [, h]) for RNNCell and GRUCell: x [B, input_size] (or [input_size]), h [B,
    -- hidden_size] (zeros when nil); returns h'. LSTMCell's cell(x [, {h, c}]) returns h', c'.
    function cls:forward(x, state)
      check_input(name, x, self.input_size, { 1, 2 })
      check_dtype(name, "input", x, self.weight_ih)
      local unbatched = x:dim() == 1
      if unbatched then x = x:unsqueeze(1) end
      local B, H = x:size(1), self.hidden_size
      local h, c
      if mode == "LSTM" then
        if state ~= nil then
          if type(state) ~= "table" or getmetatable(state) == ltc.Tensor then
            raise(name .. ": the state must be a table {h, c}")
          end
          h, c = state[1], state[2]
        end
      else
        h = state
      end
      local want = unbatched and { H } or { B, H }
      if h == nil then h = ltc.zeros({ B, H }, x:dtype())
      else check_state(name, "h", h, want, self.weight_ih); if unbatched then h = h:unsqueeze(1) end end
      if mode == "LSTM" then
        if c == nil then c = ltc.zeros({ B, H }, x:dtype())
        else check_state(name, "c", c, want, self.weight_ih); if unbatched then c = c:unsqueeze(1) end end
      end
      local h2, c2 = step(mode, input_proj(x, self.weight_ih, self.bias_ih), h, c,
        self.weight_hh, self.bias_hh, H, self.nonlinearity)
      if unbatched then
        h2 = h2:squeeze(1)
        if c2 then c2 = c2:squeeze(1) end
      end
      return h2, c2
    end
    function cls:extra_repr()
      local s = string.format("%d, %d", self.input_size, self.hidden_size)
      if self.bias_ih == nil then s = s .. ", bias=false" end
      if self.nonlinearity ~= "tanh" then s = s .. ", nonlinearity=" .. self.nonlinearity end
      return s
    end
    return cls
  end

  --- nn.RNNCell(input_size, hidden_size [, {bias=true, nonlinearity="tanh"}]),
  -- nn.LSTMCell(input_size, hidden_size [, {bias}]), nn.GRUCell(...): one step; see forward.
  -- PyTorch's positional arguments work too: nn.RNNCell(4, 8, true, "relu"), nn.GRUCell(4, 8, false).
  nn.RNNCell = cell_class("RNN")
  nn.LSTMCell = cell_class("LSTM")
  nn.GRUCell = cell_class("GRU")

  ---------------------------------------------------------------------------------------------
  -- multi-layer, optionally bidirectional sequence modules

  local function seq_class(mode)
    local cls = nn.class(mode)
    function cls:__init(input_size, hidden_size, ...)
      check_size(mode, "input_size", input_size)
      check_size(mode, "hidden_size", hidden_size)
      local allowed = set("num_layers", "bias", "batch_first", "dropout", "bidirectional")
      if mode == "RNN" then allowed.nonlinearity = true end
      if mode == "LSTM" then allowed.proj_size = true end
      -- PyTorch's positional order (RNN has nonlinearity second, LSTM proj_size last)
      local order = mode == "RNN" and { "num_layers", "nonlinearity", "bias", "batch_first",
        "dropout", "bidirectional" } or { "num_layers", "bias", "batch_first", "dropout", "bidirectional" }
      if mode == "LSTM" then order[#order + 1] = "proj_size" end
      local opts = check_options(mode, positional(mode, "hidden_size", order, ...), allowed, 3)
      local L = opts.num_layers or 1
      check_size(mode, "num_layers", L)
      local p = opts.dropout or 0
      if type(p) ~= "number" or not (p >= 0 and p <= 1) then
        raise(string.format("%s: dropout must be between 0 and 1, got %s", mode, tostring(p)))
      end
      if p > 0 and L == 1 then -- PyTorch warns the same
        nn._warn(string.format("%s: dropout=%g with num_layers=1 does nothing: dropout applies "
          .. "between recurrent layers, after all but the last", mode, p))
      end
      self.nonlinearity = opts.nonlinearity or "tanh"
      if self.nonlinearity ~= "tanh" and self.nonlinearity ~= "relu" then
        raise(mode .. ": nonlinearity must be 'tanh' or 'relu', not '" .. tostring(self.nonlinearity) .. "'")
      end
      self.mode, self.input_size, self.hidden_size, self.num_layers = mode, input_size, hidden_size, L
      self.bias, self.batch_first = opts.bias ~= false, opts.batch_first == true
      self.dropout, self.bidirectional = p, opts.bidirectional == true
      local P = opts.proj_size or 0
      if math.type(P) ~= "integer" or P < 0 then
        raise(string.format("LSTM: proj_size must be a positive integer, or 0 for no projection, got %s",
          tostring(P)))
      end
      if P >= hidden_size then
        raise(string.format("LSTM: proj_size %d must be smaller than hidden_size %d", P, hidden_size))
      end
      self.proj_size = P
      -- h's size: proj_size with a projection (h = (o * tanh(c)) W_hr^T), else hidden_size
      local real = P > 0 and P or hidden_size
      local D = self.bidirectional and 2 or 1
      local G, k = gates[mode] * hidden_size, 1 / math.sqrt(hidden_size)
      for l = 0, L - 1 do
        for d = 1, D do
          local sfx = "_l" .. l .. (d == 2 and "_reverse" or "")
          local in_l = l == 0 and input_size or real * D
          self:register_parameter("weight_ih" .. sfx, uniform({ G, in_l }, k))
          self:register_parameter("weight_hh" .. sfx, uniform({ G, real }, k))
          if self.bias then
            self:register_parameter("bias_ih" .. sfx, uniform({ G }, k))
            self:register_parameter("bias_hh" .. sfx, uniform({ G }, k))
          end
          if P > 0 then self:register_parameter("weight_hr" .. sfx, uniform({ P, hidden_size }, k)) end
        end
      end
    end

    --- m(x [, h0]) for RNN and GRU, m(x [, {h0, c0}]) for LSTM: x [T, B, input_size]
    -- ([B, T, input_size] with batch_first; [T, input_size] unbatched); h0, c0 [num_layers *
    -- D, B, hidden_size] (D = 2 when bidirectional; zeros when nil). Returns output [T, B, D *
    -- hidden_size] (the last layer's h at every step, both directions concatenated) and h_n
    -- [num_layers * D, B, hidden_size] (LSTM: a table {h_n, c_n}), as PyTorch. An LSTM with
    -- proj_size P > 0 has h (h0, h_n, each step of output) of size P, c of hidden_size.
    function cls:forward(x, state)
      check_input(mode, x, self.input_size, { 2, 3 })
      check_dtype(mode, "input", x, self.weight_ih_l0)
      local unbatched = x:dim() == 2
      if unbatched then x = x:unsqueeze(2)
      elseif self.batch_first then x = x:transpose(1, 2) end
      local T, B, H = x:size(1), x:size(2), self.hidden_size
      local L, D = self.num_layers, self.bidirectional and 2 or 1
      local P = self.proj_size or 0
      local R = P > 0 and P or H -- h's size
      local h0, c0
      if mode == "LSTM" then
        if state ~= nil then
          if type(state) ~= "table" or getmetatable(state) == ltc.Tensor then
            raise("LSTM: the state must be a table {h0, c0}, got " .. (ltc.is_tensor(state)
              and "a tensor of size [" .. table.concat(state:size(), ", ") .. "] (a GRU's or RNN's state is one tensor; an LSTM's is two)"
              or ltc.typename(state)))
          end
          h0, c0 = state[1], state[2]
          if (h0 == nil) ~= (c0 == nil) then
            raise("LSTM: the state must be a table {h0, c0} of both tensors (or nil for zeros), got "
              .. (h0 == nil and "no h0" or "no c0"))
          end
        end
      else
        h0 = state
      end
      -- how the wanted size follows from the module and the input: a wrong batch size is most
      -- often batch_first set one way and the input laid out the other
      local function want_why(size, size_name)
        local want = unbatched and { L * D, size } or { L * D, B, size }
        return want, string.format(" ([num_layers%s, %s%s]: num_layers %d%s, %s %d)",
          D == 2 and " * 2 (bidirectional)" or "", unbatched and "" or "batch, ", size_name, L,
          unbatched and "" or string.format(", batch %d (dim %d of the input [%s], batch_first = %s)",
            B, self.batch_first and 1 or 2, self.batch_first and "batch, seq, input_size" or "seq, batch, input_size",
            tostring(self.batch_first)), size_name, size)
      end
      if h0 ~= nil then
        local want, why = want_why(R, P > 0 and "proj_size" or "hidden_size")
        check_state(mode, "h0", h0, want, self.weight_ih_l0, why)
        if unbatched then h0 = h0:unsqueeze(2) end
      end
      if c0 ~= nil then
        local want, why = want_why(H, "hidden_size")
        check_state(mode, "c0", c0, want, self.weight_ih_l0, why)
        if unbatched then c0 = c0:unsqueeze(2) end
      end
      local zeros = {}
      local function init(s, idx, size)
        if s then return s:select(1, idx) end
        size = size or H
        zeros[size] = zeros[size] or ltc.zeros({ B, size }, x:dtype())
        return zeros[size]
      end
      if mode ~= "RNN" and P == 0 and fused_ok(self, mode, x) then
        return self:_fused_layers(x, h0, c0, init, unbatched)
      end
      -- the layer's input as a list of T steps [B, in]: each step's input projection is its
      -- own small product, because the gradient of a select of one [T, B, 4H] projection
      -- would write T full-size zero tensors in the backward pass
      local hn, cn = {}, {}
      local steps = {}
      for t = 1, T do steps[t] = x:select(1, t) end
      local outs
      for l = 0, L - 1 do
        outs = {}
        for d = 1, D do
          local sfx = "_l" .. l .. (d == 2 and "_reverse" or "")
          local idx = l * D + d
          local w_ih, b_ih = self["weight_ih" .. sfx], self["bias_ih" .. sfx]
          local w_hh, b_hh = self["weight_hh" .. sfx], self["bias_hh" .. sfx]
          local w_hr = P > 0 and self["weight_hr" .. sfx]:t() or nil
          local h, c = init(h0, idx, R), mode == "LSTM" and init(c0, idx) or nil
          local hs = {}
          for s = 1, T do
            local t = d == 1 and s or T - s + 1
            h, c = step(mode, input_proj(steps[t], w_ih, b_ih), h, c, w_hh, b_hh, H, self.nonlinearity)
            if w_hr then h = h:matmul(w_hr) end -- LSTM's projection
            hs[t] = h
          end
          outs[d] = hs
          hn[idx], cn[idx] = h, c
        end
        for t = 1, T do
          steps[t] = D == 2 and ltc.cat({ outs[1][t], outs[2][t] }, 2) or outs[1][t]
        end
        if self.dropout > 0 and self.training and l < L - 1 then
          if mode ~= "RNN" then
            -- one mask over all steps, drawn as the fused path (_fused_layers) draws it
            local all = F.dropout(ltc.stack(steps, 1), self.dropout, true)
            for t = 1, T do steps[t] = all:select(1, t) end
          else
            for t = 1, T do steps[t] = F.dropout(steps[t], self.dropout, true) end
          end
        end
      end
      return self:_outputs(ltc.stack(steps, 1), hn, cn, unbatched)
    end

    -- The module's results from the last layer's output [T, B, H'] and each layer and
    -- direction's final states: output (batch_first or unbatched as the input came), h_n
    -- and, for LSTM, {h_n, c_n}.
    function cls:_outputs(out, hn, cn, unbatched)
      local h_n = ltc.stack(hn, 1)
      local c_n = self.mode == "LSTM" and ltc.stack(cn, 1) or nil
      if unbatched then
        out, h_n = out:squeeze(2), h_n:squeeze(2)
        if c_n then c_n = c_n:squeeze(2) end
      elseif self.batch_first then
        out = out:transpose(1, 2)
      end
      if c_n then return out, { h_n, c_n } end
      return out, h_n
    end

    -- LSTM's and GRU's layers, each direction one lstm_layer or gru_layer op (the fused
    -- recurrence: per step one small product and the gate loop, in C; its backward one op too)
    -- over the input projection of all T steps at once (one linear; LSTM's b_hh folded into
    -- its bias, GRU's b_hh given to the op, as it sits inside r * (W_hn h + b_hn)). x [T, B, in].
    function cls:_fused_layers(x, h0, c0, init, unbatched)
      local T, L, D, H = x:size(1), self.num_layers, self.bidirectional and 2 or 1, self.hidden_size
      local lstm = self.mode == "LSTM"
      local hn, cn = {}, {}
      local input = x
      for l = 0, L - 1 do
        local outs = {}
        for d = 1, D do
          local sfx = "_l" .. l .. (d == 2 and "_reverse" or "")
          local idx = l * D + d
          local w_ih, b_ih = self["weight_ih" .. sfx], self["bias_ih" .. sfx]
          local w_hh, b_hh = self["weight_hh" .. sfx], self["bias_hh" .. sfx]
          local h = init(h0, idx)
          -- the final state is the step processed last: T forward, 1 in reverse
          local last = d == 1 and T or 1
          local out
          if lstm then
            local proj = b_ih and F.linear(input, w_ih, b_ih + b_hh) or F.linear(input, w_ih)
            local c = init(c0, idx)
            local c_seq
            out, c_seq = ltc.lstm_layer(proj, h, c, w_hh, d == 2)
            cn[idx] = T > 0 and c_seq:select(1, last) or c
          else
            local proj = b_ih and F.linear(input, w_ih, b_ih) or F.linear(input, w_ih)
            out = ltc.gru_layer(proj, h, w_hh, b_hh or ltc.zeros({ 3 * H }, x:dtype()), d == 2)
          end
          hn[idx] = T > 0 and out:select(1, last) or h
          outs[d] = out
        end
        input = D == 2 and ltc.cat(outs, 3) or outs[1]
        if self.dropout > 0 and self.training and l < L - 1 then
          input = F.dropout(input, self.dropout, true)
        end
      end
      return self:_outputs(input, hn, cn, unbatched)
    end

    function cls:extra_repr()
      local s = string.format("%d, %d", self.input_size, self.hidden_size)
      if self.num_layers ~= 1 then s = s .. ", num_layers=" .. self.num_layers end
      if not self.bias then s = s .. ", bias=false" end
      if self.batch_first then s = s .. ", batch_first=true" end
      if self.dropout ~= 0 then s = s .. ", dropout=" .. self.dropout end
      if self.bidirectional then s = s .. ", bidirectional=true" end
      if (self.proj_size or 0) > 0 then s = s .. ", proj_size=" .. self.proj_size end
      return s
    end
    return cls
  end

  --- nn.RNN(input_size, hidden_size [, {num_layers=1, nonlinearity="tanh", bias=true,
  -- batch_first=false, dropout=0, bidirectional=false}]), nn.LSTM(...), nn.GRU(...) (no
  -- nonlinearity; LSTM also proj_size=0): PyTorch's modules; parameters
  -- weight_ih_l<k>[_reverse], weight_hh_l<k>, bias_ih_l<k>, bias_hh_l<k>, and with an LSTM's
  -- proj_size P > 0 weight_hr_l<k> [P, hidden_size] (PyTorch's LSTM with projections: h =
  -- (o * tanh(c)) W_hr^T, so h and the output have size P; such an LSTM runs step by step,
  -- not as the fused lstm_layer). dropout applies between layers while training. PyTorch's
  -- positional arguments work too, with or without a trailing options table:
  -- nn.LSTM(10, 20, 2), nn.GRU(10, 20, 2, true, true) (num_layers, bias, batch_first),
  -- nn.LSTM(10, 20, 2, {batch_first = true}); nn.RNN's second is nonlinearity, as PyTorch's.
  nn.RNN = seq_class("RNN")
  nn.LSTM = seq_class("LSTM")
  nn.GRU = seq_class("GRU")

  ---------------------------------------------------------------------------------------------
  -- nn.utils.rnn

  nn.utils.rnn = nn.utils.rnn or {}

  local function sizes(t) return "[" .. table.concat(t:size(), ", ") .. "]" end

  --- nn.utils.rnn.pad_sequence(sequences [, batch_first=false [, padding_value=0 [,
  -- padding_side="right"]]]): the list of tensors [L_i, *] padded with padding_value to the
  -- longest length and stacked: [max L, B, *], or [B, max L, *] with batch_first (PyTorch's
  -- torch.nn.utils.rnn.pad_sequence); padding_side "left" pads before each sequence. Made of
  -- pad and stack, so it is differentiable; the result has the first sequence's dtype (the
  -- others are converted, as PyTorch copies them into it). The options may be given by name
  -- in a trailing table, pad_sequence(seqs, {batch_first = true}). An empty list, a tensor
  -- with no dims or trailing dims unlike the first's raise.
  function nn.utils.rnn.pad_sequence(sequences, ...)
    local fname = "pad_sequence"
    local names = { "batch_first", "padding_value", "padding_side" }
    local o = check_options(fname, positional(fname, "sequences", names, ...), set(table.unpack(names)), 2)
    local value, side = o.padding_value or 0, o.padding_side or "right"
    if type(value) ~= "number" then
      raise("pad_sequence: padding_value must be a number, got " .. ltc.typename(value))
    end
    if side ~= "right" and side ~= "left" then
      raise(string.format("pad_sequence: padding_side must be 'left' or 'right', got %s",
        type(side) == "string" and "'" .. side .. "'" or ltc.typename(side)))
    end
    if type(sequences) ~= "table" or ltc.is_tensor(sequences) then
      raise("pad_sequence: bad argument #1 (a list of tensors expected, got "
        .. ltc.typename(sequences) .. ")")
    end
    if sequences[1] == nil then raise("pad_sequence: received an empty list of sequences") end
    local first, longest = sequences[1], 0
    for i, s in ipairs(sequences) do
      if not ltc.is_tensor(s) or s:dim() == 0 then
        raise(string.format("pad_sequence: sequence %d must be a tensor [L, *] of 1 dim or more, "
          .. "got %s", i, ltc.is_tensor(s) and "a 0-d tensor" or ltc.typename(s)))
      end
      local same = s:dim() == first:dim()
      for d = 2, same and s:dim() or 0 do same = same and s:size(d) == first:size(d) end
      if not same then
        raise(string.format("pad_sequence: sequence %d is %s, but its dims after the first must "
          .. "be those of sequence 1, %s", i, sizes(s), sizes(first)))
      end
      longest = math.max(longest, s:size(1))
    end
    local padded, dtype = {}, first:dtype()
    for i, s in ipairs(sequences) do
      if s:dtype() ~= dtype then s = s:to(dtype) end
      local extra = longest - s:size(1)
      if extra > 0 then
        local amounts = {} -- PyTorch's order: the last dim first; only the first dim grows
        for _ = 2, s:dim() do amounts[#amounts + 1] = 0; amounts[#amounts + 1] = 0 end
        amounts[#amounts + 1] = side == "left" and extra or 0
        amounts[#amounts + 1] = side == "left" and 0 or extra
        s = F.pad(s, amounts, "constant", value)
      end
      padded[i] = s
    end
    return ltc.stack(padded, o.batch_first and 1 or 2)
  end
end
