-- The REPL's tab completion (lua/ltc/repl.lua through readline, src/repl/) and ltc.help /
-- ltc.doc (an op's doc from codegen/ops.yaml, a Lua function's doc comment).
local ltc = require "ltc"
local repl = require "ltc.repl"
local bin_ltc = dofile("spec/support/bin_ltc.lua")

describe("ltc.repl.complete", function()
  it("completes ltc's names, nested fields and keywords", function()
    local env = { ltc = ltc }
    assert.are.same({ "ltc.softmax" }, repl.complete("ltc.softm", env))
    assert.are.same({ "ltc.nn.Linear" }, repl.complete("ltc.nn.Line", env))
    assert.are.same({ "ltc.debug.render" }, repl.complete("ltc.debug.rend", env))
    assert.are.same({ "ltc.metrics.report", "ltc.metrics.reset" }, repl.complete("ltc.metrics.re", env))
    assert.are.same({ "local", "ltc" }, repl.complete("l", env))
    assert.are.same({}, repl.complete("ltc.no_such.", env))
  end)

  it("completes a tensor's methods after a colon", function()
    local env = { x = ltc.ones(2) }
    assert.are.same({ "x:argmax", "x:argmin", "x:argsort" }, repl.complete("x:arg", env))
    assert.are.same({ "x:softmax" }, repl.complete("x:softm", env))
    assert.are.same({ "x.grad" }, repl.complete("x.gr", env))
  end)

  it("is what Tab does in bin/ltc's REPL", function()
    local out = bin_ltc.run_tty({ "x = ltc.softm\t\n", "print('same:', x == ltc.softmax)\n",
      "y = ltc.ones(2)\n", "print(y:argm\t\t\n", "os.exit()\n" })
    if not out then
      pending("util-linux's script is not installed")
      return
    end
    assert.truthy(out:find("x = ltc.softmax", 1, true), out)
    assert.truthy(out:find("same:\ttrue", 1, true), out)
    assert.truthy(out:find("y:argmax +y:argmin"), out)
  end)
end)

describe("ltc.help", function()
  it("prints an op's doc from ops.yaml", function()
    local printed = {}
    local saved = _G.print
    _G.print = function(s) printed[#printed + 1] = s end
    local ok, err = pcall(ltc.help, ltc.softmax)
    _G.print = saved
    assert(ok, err)
    local s = printed[1]
    assert.truthy(s:find("^## softmax\n"), s)
    assert.truthy(s:find("`ltc.softmax(self, dim)` / `t:softmax(dim)`", 1, true), s)
    assert.truthy(s:find("Schema: `softmax(Tensor self, dim dim) -> Tensor`", 1, true), s)
    assert.truthy(s:find("exp(x) / sum(exp(x)) along dim, computed stably (max subtracted).", 1, true), s)
    assert.falsy(s:find("## sort", 1, true), s)
  end)

  it("finds an op by name or method, and a Lua function's doc comment", function()
    assert.truthy(ltc.doc("t:sum"):find("Integer and bool tensors sum to int64", 1, true))
    assert.truthy(ltc.doc("ltc.matmul"):find("^## matmul\n"))
    local d = ltc.doc(ltc.nn.Linear)
    assert.truthy(d:find("^nn.Linear: nn.Linear%(in_features, out_features"), d)
    d = ltc.doc(ltc.debug.render)
    assert.truthy(d:find("^debug.render: ltc.debug.render%(t, ... %[, opts%], path%)"), d)
    -- a functional that is an op (its argument checks wrap the binding) and a composite one
    local F = ltc.nn.functional
    assert.truthy(ltc.doc(F.avg_pool2d):find("^## avg_pool2d\n"), ltc.doc(F.avg_pool2d))
    assert.truthy(ltc.doc("pad"):find("Composite: `lua/ltc/nn_functional.lua`", 1, true))
    assert.truthy(ltc.doc(F.pad):find("^nn.functional.pad: F.pad%(x, pad"))
    local none, why = ltc.doc(print)
    assert.is_nil(none)
    assert.truthy(why:find("no documentation found", 1, true), why)
  end)
end)

describe("ltc.help of a value (what a user passes)", function()
  -- every public function and class of these tables has a doc: before, ltc.help of
  -- nn.utils.clip_grad_norm_, the schedulers, ltc.debug.backend_text (also ltc.debug_backend_text,
  -- a name tried first) and the loss modules named in a list said "no doc comment"
  it("finds one for every function and class of nn, nn.functional, nn.init, nn.utils(.rnn), optim, lr_scheduler, autograd, debug, data", function()
    local missing = {}
    for _, path in ipairs({ "nn", "nn.functional", "nn.init", "nn.utils", "nn.utils.rnn", "optim",
      "optim.lr_scheduler", "autograd", "debug", "data" }) do
      local t = ltc
      for part in path:gmatch("[^.]+") do t = t[part] end
      for k, v in pairs(t) do
        local mt = type(v) == "table" and getmetatable(v)
        if type(k) == "string" and k:sub(1, 1) ~= "_" and (type(v) == "function" or (mt and mt.__call)) then
          if not ltc.doc(v) then missing[#missing + 1] = path .. "." .. k end
        end
      end
    end
    table.sort(missing)
    assert.are.same({}, missing)
  end)

  it("gives the right text", function()
    local F = ltc.nn.functional
    local want = {
      { ltc.nn.utils.clip_grad_norm_, "clip_grad_norm_%(params, max_norm" },
      { ltc.nn.utils.clip_grad_value_, "clip_grad_value_%(params, clip_value%)" },
      { ltc.optim.lr_scheduler.StepLR, "StepLR%(opt" },
      { ltc.debug.backend_text, "ltc%.debug%.backend_text%(t" },
      { ltc.nn.MSELoss, "nn%.MSELoss" }, { ltc.nn.GELU, "nn%.GELU%(" },
      { F.unfold, "## im2col" }, { F.fold, "## col2im" }, { F.relu, "## relu" },
      { F.dropout, "F%.dropout%(x" }, { ltc.autograd.grad, "autograd%.grad%(" },
      -- not a file's header that names them in passing (nn_positional's, ltc.nn's)
      { ltc.nn.LSTM, "^nn%.LSTM: nn%.RNN%(input_size, hidden_size" },
      { ltc.nn.GRUCell, "^nn%.GRUCell: nn%.RNNCell%(input_size" },
      { ltc.nn.CrossEntropyLoss, "^nn%.CrossEntropyLoss: nn%.CrossEntropyLoss, nn%.NLLLoss" },
      { ltc.nn.Module, "^nn%.Module: nn%.Module, the base class of every module" },
      { ltc.nn.init.kaiming_uniform_, "^nn%.init%.kaiming_uniform_%(t" },
      { ltc.nn.init.zeros_, "^nn%.init%.zeros_%(t%)" },
      { ltc.nn.TransformerEncoder, "^nn%.TransformerEncoder: nn%.TransformerEncoder%(encoder_layer, num_layers" },
      { ltc.nn.utils.rnn.pad_sequence, "^nn%.utils%.rnn%.pad_sequence%(sequences" },
      { ltc.nn.Module.clone, "^m:clone%(%): a deep copy" },
    }
    for _, w in ipairs(want) do
      local d, why = ltc.doc(w[1])
      assert(d, w[2] .. ": " .. tostring(why))
      assert(d:find(w[2]), w[2] .. " found the wrong doc: " .. d:sub(1, 160))
    end
  end)
end)
