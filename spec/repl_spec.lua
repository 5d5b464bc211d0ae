-- The REPL launcher bin/ltc, driven through a pipe: `ltc` is loaded and tensors print
-- themselves.

local bin_ltc = dofile("spec/support/bin_ltc.lua")
local run, shell_quote = bin_ltc.run, bin_ltc.shell_quote

describe("bin/ltc", function()
  it("with no arguments is a REPL where ltc is loaded and tensors print themselves", function()
    local out, status = run("", "x = ltc.ones(2) * 3\nx\nprint(#x)\n" ..
      "ltc.tensor({{1, 2}, {3, 4}}):sum(2)\n")
    assert.are.equal(0, status)
    assert.truthy(out:find("Lua 5.4", 1, true), out)
    assert.truthy(out:find(" 3\n 3\n[ltc.float32 of size 2 on cpu:0]\n", 1, true), out)
    assert.truthy(out:find("\n2\n", 1, true), out)
    assert.truthy(out:find(" 3\n 7\n[ltc.float32 of size 2 on cpu:0]\n", 1, true), out)
  end)

  it("shows the debug functions' output in the REPL", function()
    local out = run("-i", "y = (ltc.ones(2, 2) * 2):sum(1)\nprint(ltc.debug.ir(y))\n")
    assert.truthy(out:find("%3 = sum(%2, dim=1, keepdim=false) f32[2] root #0", 1, true), out)
  end)

  it("loads ltc for lua5.4's options and runs scripts with their arguments", function()
    local out, status = run("-e " .. shell_quote("print(ltc.arange(1, 4))"))
    assert.are.equal(0, status)
    assert.are.equal(" 1\n 2\n 3\n[ltc.int64 of size 3 on cpu:0]\n", out)
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write('local ltc = require "ltc"\nprint(ltc.full({1}, tonumber(arg[1])):item())\n')
    f:close()
    out, status = run(shell_quote(script) .. " 7")
    os.remove(script)
    assert.are.equal(0, status)
    assert.are.equal("7.0\n", out)
  end)

  it("reports a Lua error with a non-zero status", function()
    local out, status = run("-e " .. shell_quote("local _ = ltc.ones(2) + ltc.ones(3)"))
    assert.are_not.equal(0, status)
    assert.truthy(out:find("add: shapes [2] and [3] are not broadcastable", 1, true), out)
  end)
end)
