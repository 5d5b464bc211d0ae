--- bench/attention.lua - scaled_dot_product_attention forward + backward (the gradients of
-- sum(out * g) with respect to q, k and v) at a typical head size: the fused op (blocked
-- kernels, src/cpu/attention.c) against the same attention written over the ops (ltc's
-- path before the op, which materialises the [L, S] scores) and against PyTorch eager with
-- the softmax written out (torch 1.13 has no F.scaled_dot_product_attention), PyTorch at its
-- best thread count. Target: at least as fast as PyTorch eager.
local lib = require "bench.lib"
local ltc = lib.ltc
local F = ltc.nn.functional

-- `lua5.4 bench/attention.lua mem fused|ops [p]`: one causal head of 4096 positions, forward
-- and backward in a fresh process (dropout p, default 0); prints the peak RSS above the
-- inputs' (MB) and the CPU time
if arg and arg[1] == "mem" then
  local n, e = 4096, 32
  local q, k, v = ltc.randn(1, n, e):requires_grad_(), ltc.randn(1, n, e):requires_grad_(),
    ltc.randn(1, n, e):requires_grad_()
  ltc.sync()
  local function hwm()
    for l in io.lines("/proc/self/status") do
      local kb = l:match("^VmHWM:%s+(%d+)")
      if kb then return tonumber(kb) / 1024 end
    end
  end
  local base, t0 = hwm(), os.clock()
  local out, p = nil, tonumber(arg[3] or "0")
  if arg[2] == "fused" then
    out = F.scaled_dot_product_attention(q, k, v, { is_causal = true, dropout_p = p })
  else
    local s = q:matmul(k:transpose(-2, -1)) * (1 / math.sqrt(e))
    local w = s:masked_fill(ltc.ones({ n, n }, "bool"):tril():logical_not(), -math.huge):softmax(-1)
    if p > 0 then w = F.dropout(w, p, true) end
    out = w:matmul(v)
  end
  local gs = { ltc.autograd.grad({ out:sum() }, { q, k, v }) }
  ltc.sync()
  assert(#gs == 3)
  print(string.format("peak_mb %.1f", hwm() - base))
  print(string.format("cpu_ms %.1f", (os.clock() - t0) * 1e3))
  return
end

-- dropout inside the fused op (the keep decisions drawn in the blocked loops, forward and
-- backward) against the path ltc took before it: the ops with F.dropout on the [L, S] weights
local function dropout_rows()
  local b, h, l, e, p = 16, 4, 64, 32, 0.1
  local function step(attn)
    local q, k, v = ltc.randn(b, h, l, e):requires_grad_(), ltc.randn(b, h, l, e):requires_grad_(),
      ltc.randn(b, h, l, e):requires_grad_()
    local g = ltc.randn(b, h, l, e)
    ltc.sync()
    return function()
      local gs = { ltc.autograd.grad({ (attn(q, k, v) * g):sum() }, { q, k, v }) }
      ltc.sync()
      return gs
    end
  end
  local mask = ltc.ones({ l, l }, "bool"):tril():logical_not()
  local fused = lib.best(step(function(q, k, v)
    return F.scaled_dot_product_attention(q, k, v, { is_causal = true, dropout_p = p })
  end)) * 1e3
  local ops = lib.best(step(function(q, k, v)
    local s = q:matmul(k:transpose(-2, -1)) * (1 / math.sqrt(e))
    return F.dropout(s:masked_fill(mask, -math.huge):softmax(-1), p, true):matmul(v)
  end)) * 1e3
  local workload = string.format("f32 q,k,v [%d,%d,%d,%d], causal, dropout %g, fwd+bwd", b, h, l, e, p)
  print(string.format("sdpa %s: fused %s; over the ops %s", workload, lib.fmt(fused, "ms", 3),
    lib.fmt(ops, "ms", 3)))
  lib.row { bench = "sdpa", workload = workload, ltc = lib.fmt(fused, "ms", 3),
    peers = string.format("ltc over the ops %s", lib.fmt(ops, "ms", 3)),
    ratio = string.format("%s of the ops", lib.fmt(ops / fused, "x")),
    target = "faster than the ops", met = fused < ops }
end
-- `lua5.4 bench/attention.lua dropout`: that row alone
if arg and arg[1] == "dropout" then
  dropout_rows()
  return
end

local B, H, L, E = 8, 4, 256, 32

-- the attention over the ops, as lua/ltc/nn_attention.lua's path for dropout
local function composite(q, k, v, causal)
  local s = q:matmul(k:transpose(-2, -1)) * (1 / math.sqrt(E))
  if causal then s = s:masked_fill(ltc.ones({ L, L }, "bool"):tril():logical_not(), -math.huge) end
  return s:softmax(-1):matmul(v)
end

local function step_fn(attn, causal)
  local q, k, v = ltc.randn(B, H, L, E):requires_grad_(), ltc.randn(B, H, L, E):requires_grad_(),
    ltc.randn(B, H, L, E):requires_grad_()
  local g = ltc.randn(B, H, L, E)
  ltc.sync()
  local gs
  return function()
    gs = nil
    local out = attn(q, k, v, causal)
    gs = { ltc.autograd.grad({ (out * g):sum() }, { q, k, v }) }
    ltc.sync()
  end
end

for _, causal in ipairs { false, true } do
  local workload = string.format("f32 q,k,v [%d,%d,%d,%d]%s, fwd+bwd", B, H, L, E, causal and ", causal" or "")
  local fused = lib.best(step_fn(function(q, k, v, c)
    return F.scaled_dot_product_attention(q, k, v, { is_causal = c })
  end, causal)) * 1e3
  local ops = lib.best(step_fn(composite, causal)) * 1e3
  local py = lib.py("sdpa", B, H, L, E, causal and 1 or 0)
  local r = type(py.torch_ms) == "number" and py.torch_ms / fused or nil
  print(string.format("sdpa %s: fused %s; over the ops %s; PyTorch eager %s", workload,
    lib.fmt(fused, "ms", 3), lib.fmt(ops, "ms", 3), lib.peer(py, "torch_ms", "ms", 3)))
  lib.row { bench = "sdpa", workload = workload, ltc = lib.fmt(fused, "ms", 3),
    peers = string.format("ltc over the ops %s; PyTorch eager %s", lib.fmt(ops, "ms", 3),
      lib.peer(py, "torch_ms", "ms", 3)),
    ratio = string.format("%s speed of PyTorch; %s of the ops", lib.fmt(r, "x"),
      lib.fmt(ops / fused, "x")),
    target = ">= 1x PyTorch eager", met = r ~= nil and r >= 1 }
end

dropout_rows()

-- memory: the fused op keeps no [L, S] matrix, forward or backward, with dropout or without
for _, p in ipairs { 0, 0.1 } do
  local mem = {}
  for _, m in ipairs { "fused", "ops" } do
    mem[m] = lib.keyvals(string.format("LTC_NUM_THREADS=1 lua5.4 %s/attention.lua mem %s %g", lib.dir, m, p))
  end
  local workload = "peak RSS of fwd+bwd, one causal head, L=S=4096, E=32"
    .. (p > 0 and string.format(", dropout %g", p) or "")
  print(string.format("sdpa %s: fused %s MB (%s ms CPU); over the ops %s MB (%s ms CPU)", workload,
    tostring(mem.fused.peak_mb), tostring(mem.fused.cpu_ms), tostring(mem.ops.peak_mb), tostring(mem.ops.cpu_ms)))
  lib.row { bench = "sdpa", workload = workload, ltc = lib.fmt(mem.fused.peak_mb, "MB", 1),
    peers = string.format("ltc over the ops %s", lib.fmt(mem.ops.peak_mb, "MB", 1)),
    ratio = "", target = "report", met = nil }
end
