--- bench/tiny_gpt.lua - issue 15's small-GPT job: examples/tiny_gpt.lua (4 pre-norm layers,
-- 4 heads, width 128, 16 windows of 64 characters of Debian's fortunes, AdamW with warm-up
-- and cosine schedule, clipping) against
-- its PyTorch twin bench/tiny_gpt.py (eager, same initial weights and data through .npy
-- files, same windows), in the same run. Prints time per step after warm-up and the final
-- training and validation losses side by side. BENCH_GPT_STEPS (default 60) steps each.
-- Targets (issue 15): ltc >= 2x faster per step than PyTorch eager, the same loss within
-- noise, zero recompiles after warm-up. The example wraps its step in ltc.jit (capture and
-- replay); the same run traced every step (--jit 0) is a second row, with no target.
local lib = require "bench.lib"

local steps = tonumber(os.getenv("BENCH_GPT_STEPS") or "") or 60
lib.text_model { name = "tiny_gpt", steps = steps,
  workload = string.format("GPT 4x128, 16x64 chars, %d steps, step in ltc.jit (ms/step)", steps),
  also = { args = "--jit 0", label = "the same, every step traced and synced (--jit 0)" } }
