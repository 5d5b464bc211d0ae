--- bench/char_lstm.lua - issue 15's char-rnn job: examples/char_lstm.lua (2-layer LSTM, hidden
-- 128, windows of 64 characters of 32 streams of Debian's fortunes, Adam, clipping) against
-- its PyTorch twin bench/char_lstm.py (eager, same initial weights and data through .npy
-- files, same windows), in the same run. Prints time per step after warm-up and the final
-- training and validation losses side by side. BENCH_CHAR_STEPS (default 60) steps each.
-- Targets (issue 15): ltc >= 2x faster per step than PyTorch eager, the same loss within
-- noise, zero recompiles after warm-up.
local lib = require "bench.lib"

local steps = tonumber(os.getenv("BENCH_CHAR_STEPS") or "") or 60
if not io.open("/usr/share/games/fortunes/fortunes", "r") then
  print("char_lstm: no /usr/share/games/fortunes (apt-get install fortunes); skipped")
  return
end
local dir = os.tmpname()
os.remove(dir)
local root = lib.dir .. "/.."
local cmd = string.format("cd '%s' && LTC_BUILD=%s bin/ltc examples/char_lstm.lua --steps %d "
  .. "--chars 200000 --eval-every 0 --sample 0 --keyvals 1 --init-dir '%s' --plot '%s/loss.svg' "
  .. "--checkpoint '%s/ckpt.npz'", root, os.getenv("BUILD") or "build", steps, dir, dir, dir)
local l = lib.keyvals(cmd)
local t = lib.keyvals(string.format("%s '%s/char_lstm.py' '%s' %d %d", lib.python, lib.dir, dir,
  steps, lib.threads))
os.execute("rm -rf '" .. dir .. "'")

print(string.format("ltc:          %s ms/step, training loss %s, validation loss %s, %s compile(s) after warm-up",
  tostring(l.ltc_step_ms), tostring(l.ltc_train_loss), tostring(l.ltc_val_loss),
  tostring(l.ltc_compiles_after_warmup)))
print(string.format("torch eager:  %s ms/step, training loss %s, validation loss %s",
  tostring(t.torch_step_ms), tostring(t.torch_train_loss), tostring(t.torch_val_loss)))

local ok = l.ltc_step_ms and t.torch_step_ms
lib.row { bench = "char_lstm", workload = string.format("LSTM 2x128, 32x64 chars, %d steps (ms/step)", steps),
  ltc = ok and lib.fmt(l.ltc_step_ms, "ms", 1) or "n/a",
  peers = t.torch_step_ms and "eager " .. lib.fmt(t.torch_step_ms, "ms", 1) or "n/a",
  ratio = ok and string.format("%.2f x faster", t.torch_step_ms / l.ltc_step_ms) or "n/a",
  target = ">= 2x faster", met = ok and t.torch_step_ms / l.ltc_step_ms >= 2 or nil }
lib.row { bench = "char_lstm", workload = "validation loss after the same steps",
  ltc = l.ltc_val_loss and string.format("%.4f", l.ltc_val_loss) or "n/a",
  peers = t.torch_val_loss and string.format("eager %.4f", t.torch_val_loss) or "n/a",
  ratio = (l.ltc_val_loss and t.torch_val_loss) and string.format("%+.4f", l.ltc_val_loss - t.torch_val_loss) or "n/a",
  target = "within 0.05", met = (l.ltc_val_loss and t.torch_val_loss) and math.abs(l.ltc_val_loss - t.torch_val_loss) <= 0.05 or nil }
