-- spec/support/op_calls.lua - every op of gen/ops_meta.lua (from codegen/ops.yaml) that the
-- loaded module binds, and a valid call of each to perturb one argument at a time. Shared by
-- bad_input_spec (wrong types, shapes, dims) and size_overflow_spec (huge sizes).
local ltc = require "ltc"

local function load_meta()
  local src = debug.getinfo(1, "S").source:match("^@(.*)$") or ""
  local dir = src:match("^(.*)/spec/[^/]*$") or "."
  return dofile(dir .. "/gen/ops_meta.lua")
end
local META = load_meta()

-- ops that the loaded module binds (ops_meta.lua may be ahead of a stale build)
local OPS = {}
for _, op in ipairs(META) do
  if ltc[op.name] and not op.composite then OPS[#OPS + 1] = op end
end

-- convolution and pooling: an image [1, 1, 4, 4], a 2x2 kernel, stride 1, no padding
local CNN = { conv2d = true, conv2d_backward_input = true, conv2d_backward_weight = true,
  max_pool2d = true, max_pool2d_backward = true, avg_pool2d = true, avg_pool2d_backward = true }
local CNN_INTS = { stride = { 1, 1 }, padding = { 0, 0 }, dilation = { 1, 1 }, kernel_size = { 2, 2 },
  input_size = { 1, 1, 4, 4 }, weight_size = { 2, 1, 2, 2 } }

local function valid_tensor(op, a, first)
  local n = a.name
  if CNN[op.name] then
    if n == "weight" then return ltc.ones(2, 1, 2, 2) end
    if n == "bias" then return ltc.ones(2) end
    if n == "grad_output" then return ltc.ones(1, op.name:find("conv") and 2 or 1, 3, 3) end
    return ltc.ones(1, 1, 4, 4)
  end
  if op.name == "scaled_dot_product_attention" or op.name == "scaled_dot_product_attention_backward" then
    -- query, key, value [2, 3] (L = S = 2, E = Ev = 3)
    if n == "attn_mask" then return ltc.tensor({ { true, false }, { true, true } }) end
    if n == "logsumexp" then return ltc.zeros(2) end
    if n == "rng_state" then return ltc.tensor({ 1, 0 }, "int64") end -- {seed, offset}
    return ltc.ones(2, 3)
  end
  if op.name:find("^scaled_dot_product_attention_packed") then
    -- qkv [1, 2, 6] (N 1, L 2, E 2, one head)
    if n == "qkv" then return ltc.ones(1, 2, 6) end
    if n == "logsumexp" then return ltc.zeros(1, 1, 2) end
    return ltc.ones(1, 2, 2)
  end
  if op.name == "lstm_layer" or op.name == "lstm_layer_backward" then
    -- T = 2, B = 2, H = 3: input_proj and gates [2, 2, 12], h0 and c0 [2, 3], weight_hh
    -- [12, 3], the sequences [2, 2, 3]
    if n == "input_proj" or n == "gates" then return ltc.ones(2, 2, 12) end
    if n == "h0" or n == "c0" then return ltc.ones(2, 3) end
    if n == "weight_hh" then return ltc.ones(12, 3) end
    return ltc.ones(2, 2, 3)
  end
  if op.name == "gru_layer" or op.name == "gru_layer_backward" then
    -- T = 2, B = 2, H = 3: input_proj [2, 2, 9], gates [2, 2, 12], h0 [2, 3], weight_hh [9, 3],
    -- bias_hh [9], the sequences [2, 2, 3]
    if n == "input_proj" then return ltc.ones(2, 2, 9) end
    if n == "gates" then return ltc.ones(2, 2, 12) end
    if n == "h0" then return ltc.ones(2, 3) end
    if n == "weight_hh" then return ltc.ones(9, 3) end
    if n == "bias_hh" then return ltc.ones(9) end
    return ltc.ones(2, 2, 3)
  end
  if op.name == "gather" or op.name == "scatter_add" or op.name == "scatter" then
    if n == "index" then return ltc.tensor({ { 1, 2, 1 }, { 2, 1, 2 } }, "int64") end
  end
  if n == "mask" then return ltc.tensor({ { true, false, true }, { false, true, false } }) end
  if n == "indices" then return ltc.tensor({ 1, 2 }, "int64") end
  if op.name == "mse_loss" then return ltc.ones(2, 3) end
  if op.name == "batch_norm" and not first then return ltc.ones(3) end
  if a.type == "Scalar" then return 2.5 end
  if n == "index" then return ltc.tensor({ 1, 2 }, "int64") end
  if n == "target" then return ltc.tensor({ 1, 3 }, "int64") end
  if n == "condition" then return ltc.tensor({ { true, false, true }, { false, true, false } }) end
  if op.name == "matmul" and not first then return ltc.ones(3, 2) end
  if op.name == "mm" and not first then return ltc.ones(3, 2) end
  if op.name == "bmm" then return first and ltc.ones(2, 2, 3) or ltc.ones(2, 3, 2) end
  if op.name == "dot" or op.name == "outer" then return ltc.ones(3) end
  if (op.name == "linear" or op.name == "addmm") and not first then
    if n == "weight" then return ltc.ones(4, 3) end
    if n == "bias" then return ltc.ones(4) end
    if n == "mat1" then return ltc.ones(2, 5) end
    if n == "mat2" then return ltc.ones(5, 3) end
  end
  if op.name == "narrow_scatter" and n == "src" then return ltc.ones(1, 3) end
  if op.name == "select_scatter" and n == "src" then return ltc.ones(3) end
  if op.name == "layer_norm_backward" and n == "grad_output" then return ltc.ones(2, 3) end
  if op.name == "linear_backward" and n == "grad_output" then return ltc.ones(2, 2) end
  if n == "grad_output" then return ltc.tensor(1.0) end
  if op.name == "index_add" and n == "source" then return ltc.ones(2, 3) end
  if op.name == "scatter_add" and n == "src" then return ltc.ones(2, 3) end
  if op.name == "one_hot" then return ltc.tensor({ 1, 2 }, "int64") end
  if op.full_name == "bernoulli" then return ltc.tensor({ { 0, 0.5, 1 }, { 0.25, 0.75, 1 } }) end -- probabilities
  return ltc.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
end

local function valid_arg(op, a, k)
  local ty = a.type
  if ty == "Tensor" or ty == "Scalar" then return valid_tensor(op, a, k == 1) end
  if ty == "Tensor[]" then return { ltc.ones(2, 3), ltc.ones(2, 3) } end
  if ty == "int[]" then
    if CNN[op.name] then return CNN_INTS[a.name] end
    if op.name == "permute" then return { 2, 1 } end
    if op.name == "flip" then return { 1, 2 } end
    return { 2, 3 }
  end
  if ty == "dim" or ty == "dim?" then return 1 end
  if ty == "index" then return 1 end
  if ty == "int" or ty == "int?" then
    if a.name == "num_classes" then return 4 end
    if a.name == "reduction" then return 1 end
    if a.name == "high" then return 5 end
    if a.name == "root" then return 0 end -- a rank: 0 is the only one of a single process
    return 1
  end
  if op.name == "assert_in_range" then return a.name == "low" and 0.0 or 10.0 end -- self is 1..6
  if ty == "float" or ty == "float?" then return 0.5 end
  if ty == "bool" then return false end
  if ty == "ScalarType" or ty == "ScalarType?" then return "float32" end
  return nil
end

local function valid_args(op)
  local args = {}
  for k, a in ipairs(op.args) do args[k] = valid_arg(op, a, k) end
  return args
end

-- A function calling ltc.<op.name> with args[1..n] (n defaults to #op.args) as the schema
-- of op orders them; an overload that Lua reaches with a nil in one place
-- (conv2d.nobias: conv2d(x, w, nil, ...)) gets it there.
local function caller(op, args, n)
  local f, list = ltc[op.name], table.pack(table.unpack(args, 1, n or #op.args))
  if op.nil_at and list.n >= op.nil_at - 1 then
    for i = list.n, op.nil_at, -1 do list[i + 1] = list[i] end
    list[op.nil_at], list.n = nil, list.n + 1
  end
  return function() return f(table.unpack(list, 1, list.n)) end
end

return { META = META, OPS = OPS, CNN = CNN, valid_tensor = valid_tensor, valid_arg = valid_arg,
  valid_args = valid_args, caller = caller }
