-- The character-level examples' shared helpers (examples/text_common.lua) and a short run of
-- examples/char_lstm.lua: its summary line must give a finite time per step even when the
-- run ends before warm-up is over (it printed "inf ms/step" for --steps 3).
local common = dofile("examples/text_common.lua")

describe("examples/text_common.lua step_ms", function()
  it("times the steps after warm-up when there are some, else all steps, and says which", function()
    -- by hand: 10 steps from t = 1 s to 3 s, warm-up over at 1.5 s with 8 steps after it
    local ms, how = common.step_ms(1, 3, 1.5, 10, 8)
    assert.are.equal(1.5 / 8 * 1000, ms)
    assert.are.equal("after warm-up", how)
    -- 3 steps, the last being the last warm-up step: the mean over the 3
    ms, how = common.step_ms(1, 1.3, 1.3, 3, 0)
    assert.is_true(math.abs(ms - 100) < 1e-9)
    assert.are.equal("over all 3 steps, none after warm-up", how)
    assert.are.equal("100.0 ms/step over all 3 steps, none after warm-up", common.format_ms(ms, how))
    -- ended before warm-up (no t_warm)
    ms = common.step_ms(0, 0.02, nil, 2, -1)
    assert.is_true(math.abs(ms - 10) < 1e-9)
    -- no steps at all
    ms, how = common.step_ms(0, 0, nil, 0, -3)
    assert.is_nil(ms)
    assert.are.equal("n/a ms/step no steps", common.format_ms(ms, how))
  end)
end)

describe("examples/char_lstm.lua", function()
  local function run(steps)
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    local p = io.popen(string.format("bin/ltc examples/char_lstm.lua --steps %d --hidden 16 "
      .. "--batch 4 --seq 8 --chars 20000 --embed 8 --eval-every 0 --sample 10 --plot %s/l.svg "
      .. "--checkpoint %s/c.npz 2>&1", steps, dir, dir))
    local out = p:read("a")
    local ok = p:close()
    os.execute("rm -rf " .. dir)
    return out, ok
  end

  it("prints a finite time per step for a run that ends at warm-up, and after it", function()
    if not io.open("/usr/share/games/fortunes/fortunes") then return pending("no fortunes") end
    local out, ok = run(3)
    assert.is_true(ok, out)
    assert.is_nil(out:find("inf", 1, true), out)
    assert.truthy(out:find("%(%d+%.%d ms/step over all 3 steps, none after warm%-up%)"), out)
    out, ok = run(5)
    assert.is_true(ok, out)
    assert.truthy(out:find("%(%d+%.%d ms/step after warm%-up%)"), out)
  end)

  it("names a bad option value and a checkpoint of another model, without a traceback", function()
    -- "--steps x" ran on to "attempt to sub a 'string' with a 'number'"; a --resume of another
    -- --hidden ended in load_state_dict's traceback
    local p = io.popen("bin/ltc examples/tiny_gpt.lua --steps x 2>&1")
    local out = p:read("a")
    local _, _, code = p:close()
    assert.are.equal(2, code)
    assert.truthy(out:find("tiny_gpt: --steps takes a number, got 'x'", 1, true), out)
    if not io.open("/usr/share/games/fortunes/fortunes") then return pending("no fortunes") end
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    local args = "--batch 4 --seq 8 --chars 20000 --embed 8 --eval-every 0 --sample 10 --plot "
      .. dir .. "/l.svg --checkpoint " .. dir .. "/c.npz"
    p = io.popen("bin/ltc examples/char_lstm.lua --steps 1 --hidden 16 " .. args .. " 2>&1")
    out = p:read("a") -- (read before close: an unread pipe ends the writer with SIGPIPE)
    assert(p:close(), out)
    p = io.popen("bin/ltc examples/char_lstm.lua --steps 1 --hidden 8 --resume " .. dir .. "/c.npz " .. args .. " 2>&1")
    out = p:read("a")
    _, _, code = p:close()
    os.execute("rm -rf " .. dir)
    assert.are.equal(1, code)
    assert.truthy(out:find("char_lstm: %-%-resume .-c%.npz: load_state_dict: 'lstm%.weight_ih_l0' has size "
      .. "64x8, the module's 32x8; 'lstm%.weight_hh_l0' has size 64x16, the module's 32x8;"), out)
    assert.truthy(out:find("'head%.weight' has size 83x16, the module's 83x8 %(a checkpoint of this example, "
      .. "written with the same %-%-hidden"), out)
    assert.is_nil(out:find("stack traceback", 1, true), out)
  end)
end)

describe("examples/tiny_gpt.lua", function()
  -- keyvals of a short run of a small model
  local function run(jit)
    local p = io.popen("bin/ltc examples/tiny_gpt.lua --steps 6 --width 16 --layers 1 --heads 2 "
      .. "--seq 8 --batch 2 --chars 20000 --warmup 2 --sample 0 --keyvals 1 --jit " .. jit .. " 2>&1")
    local out = p:read("a")
    assert(p:close(), out)
    local kv = {}
    for k, v in out:gmatch("\n(ltc_[%w_]+) ([%d.%-]+)") do kv[k] = tonumber(v) end
    return kv, out
  end

  it("trains the same with its step in ltc.jit (the default) as traced (--jit 0), with no recompiles", function()
    if not io.open("/usr/share/games/fortunes/fortunes") then return pending("no fortunes") end
    local j, jout = run(1)
    local t, tout = run(0)
    assert.truthy(jout:find("ltc.jit: steps from 3 on replay", 1, true), jout)
    assert.truthy(tout:find("--jit 0: every step traced", 1, true), tout)
    -- the replays run the captured step's kernels on each window: the losses of the traced run
    assert.is_number(j.ltc_train_loss, jout)
    assert.are.equal(t.ltc_train_loss, j.ltc_train_loss)
    assert.are.equal(t.ltc_val_loss, j.ltc_val_loss)
    -- a loss that moved from its start (ln 108-ish for a uniform guess over the vocabulary)
    assert.is_true(j.ltc_train_loss > 1 and j.ltc_train_loss < 6, jout)
    assert.are.equal(0, j.ltc_compiles_after_warmup)
    assert.are.equal(0, t.ltc_compiles_after_warmup)
  end)
end)
