--- bench/char_lstm.lua - issue 15's char-rnn job: examples/char_lstm.lua (2-layer LSTM, hidden
-- 128, windows of 64 characters of 32 streams of Debian's fortunes, Adam, clipping) against
-- its PyTorch twin bench/char_lstm.py (eager, same initial weights and data through .npy
-- files, same windows), in the same run. Prints time per step after warm-up and the final
-- training and validation losses side by side. BENCH_CHAR_STEPS (default 60) steps each.
-- Targets (issue 15): ltc >= 2x faster per step than PyTorch eager, the same loss within
-- noise, zero recompiles after warm-up.
local lib = require "bench.lib"

local steps = tonumber(os.getenv("BENCH_CHAR_STEPS") or "") or 60
lib.text_model { name = "char_lstm", steps = steps,
  args = "--eval-every 0 --plot 'DIR/loss.svg' --checkpoint 'DIR/ckpt.npz'",
  workload = string.format("LSTM 2x128, 32x64 chars, %d steps (ms/step)", steps) }
