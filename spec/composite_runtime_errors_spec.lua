-- Runtime errors of composite ops name the op the user called. index_fill is traced as
-- one_hot, take_along_dim as gather, index_copy as scatter, masked_scatter as gather, the
-- functionals of ltc.nn.functional as the ops they are written with: an index
-- out of range is found when the graph runs, by the internal op's kernel. Its nodes carry the
-- composite's name (core._op_scope, ltc_op_scope_enter), and the sync's error names it, with
-- the offending value and the valid range, on every backend; the runtime stays usable.
local ltc = require "ltc"

local I = function(v) return ltc.tensor(v, "int64") end

-- The message of the error fn raises (a string), with the position taken off.
local function err(fn)
  local ok, e = pcall(fn)
  assert.is_false(ok, "expected an error")
  return (tostring(e):gsub("^[^:]*:%d+: ", ""))
end

-- OpenCL where a device exists: its kernels' error flag names the failing step's node, which
-- the executor renames as on the CPU (before, "one_hot:", "gather:", "index_select:" there)
local O = dofile("spec/support/opencl.lua")
local backends = { "cpu", "ref" }
if O.avail then backends[#backends + 1] = "opencl" end

describe("a runtime error of a composite op", function()
  after_each(function() ltc.set_backend("cpu") end)

  for _, be in ipairs(backends) do
    describe("on " .. be, function()
      before_each(function()
        if be == "opencl" then O.ocl.use() else ltc.set_backend(be) end
      end)

      it("names index_fill, the index and the range (not one_hot)", function()
        local x = ltc.zeros({ 3, 4 })
        assert.are.equal("index_fill: index 5 out of range (1..3; indices are 1-based)",
          err(function() return x:index_fill(1, I { 1, 5 }, 7):totable() end))
        assert.are.equal("index_fill: index 0 out of range (1..4; indices are 1-based)",
          err(function() return x:index_fill(2, I { 0 }, 7):totable() end))
      end)

      it("names index_fill_ written in place, and the tensor keeps its value", function()
        local y = ltc.tensor({ 1, 2, 3 })
        y:add_(1)
        assert.are.equal("index_fill: index 4 out of range (1..3; indices are 1-based)",
          err(function() y:index_fill_(1, I { 4 }, 0); return y:totable() end))
        assert.are.same({ 2, 3, 4 }, y:totable())
      end)

      it("names index_copy (not scatter)", function()
        local x = ltc.zeros({ 3, 4 })
        assert.are.equal("index_copy: index 4 out of range (1..3; indices are 1-based)",
          err(function() return x:index_copy(1, I { 4 }, ltc.ones({ 1, 4 })):totable() end))
        -- 0-d self: traced as one_hot
        assert.are.equal("index_copy: index 2 out of range (1..1; indices are 1-based)",
          err(function() return ltc.tensor(1.0):index_copy(1, I { 2 }, ltc.tensor(5.0)):totable() end))
      end)

      it("names take_along_dim (not gather), with and without dim", function()
        local x = ltc.zeros({ 3, 4 })
        assert.are.equal("take_along_dim: index 9 out of range (1..4; indices are 1-based)",
          err(function() return x:take_along_dim(I { { 1 }, { 9 }, { 1 } }, 2):totable() end))
        assert.are.equal("take_along_dim: index 13 out of range (1..12; indices are 1-based)",
          err(function() return ltc.take_along_dim(x, I { 13 }):totable() end))
      end)

      it("names masked_scatter and says that source is too short", function()
        local e = err(function()
          return ltc.zeros({ 4 }):masked_scatter(ltc.tensor({ true, true, true, false }), ltc.ones({ 2 })):totable()
        end)
        assert.are.equal("masked_scatter: mask has more true values than source has elements (the "
          .. "index is the count of a true value): index 3 out of range (1..2; indices are 1-based)", e)
      end)

      it("names the functional of ltc.nn.functional (and the module calling it), not its internal op", function()
        local F, x, t = ltc.nn.functional, ltc.zeros({ 2, 3 }), I { 1, 5 }
        -- with class weights, cross_entropy and nll_loss gather the weights: no longer "gather:"
        assert.are.equal("cross_entropy: index 5 out of range (1..3; indices are 1-based)",
          err(function() return F.cross_entropy(x, t, { weight = ltc.ones({ 3 }) }):item() end))
        assert.are.equal("cross_entropy: index 5 out of range (1..3; indices are 1-based)",
          err(function() return ltc.nn.CrossEntropyLoss({ label_smoothing = 0.1 })(x, t):item() end))
        assert.are.equal("nll_loss: index 5 out of range (1..3; indices are 1-based)",
          err(function() return F.nll_loss(x, t, { weight = ltc.ones({ 3 }) }):item() end))
        -- nn.Embedding calls F.embedding (an index_select)
        assert.are.equal("embedding: index 5 out of range (1..3; indices are 1-based)",
          err(function() return ltc.nn.Embedding(3, 2)(t):totable() end))
        -- the op's own message stays when the op is the functional itself
        assert.are.equal("cross_entropy: target 5 out of range for 3 classes (labels are 1-based)",
          err(function() return F.cross_entropy(x, t):item() end))
      end)

      it("leaves the runtime usable: the rest of the step is computed, later syncs work", function()
        local a = ltc.tensor({ 1, 2 }) * 3
        local bad = ltc.zeros({ 2 }):index_fill(1, I { 3 }, 1)
        assert.are.equal("index_fill: index 3 out of range (1..2; indices are 1-based)",
          err(function() ltc.sync() end))
        assert.are.same({ 3, 6 }, a:totable())
        -- the failed result keeps the message naming index_fill
        assert.matches("failed (index_fill: index 3 out of range (1..2", err(function() return bad:totable() end), 1, true)
        assert.are.same({ 0, 1 }, ltc.zeros({ 2 }):index_fill(1, I { 2 }, 1):totable())
      end)

      it("still names the internal op when the user called it, after the same graph failed as a composite", function()
        -- one_hot over the same shapes: the compiled computation is shared, the name is not
        local x = ltc.zeros({ 3 })
        assert.matches("^index_fill:", err(function() return x:index_fill(1, I { 7 }, 1):totable() end))
        assert.matches("^one_hot: index 7 out of range",
          err(function() return I({ 7 }):one_hot(3):sum(1):gt(0):totable() end))
        assert.matches("^gather: index 5 out of range",
          err(function() return ltc.zeros({ 4 }):gather(1, I { 5 }):totable() end))
      end)

      it("names the same with a label made once (core._op_label) as with the name each call", function()
        local core = require "ltc.core"
        local fill, hinted = core._op_label("fill"), core._op_label("fill", "the hint")
        local function bad() return ltc.zeros({ 2 }):index_fill(1, I { 3 }, 1) end
        local function run(...)
          local scopes = { ... }
          local function enter(i)
            if i > #scopes then return bad() end
            local _ <close> = core._op_scope(table.unpack(scopes[i]))
            return enter(i + 1)
          end
          return err(function() return enter(1):totable() end)
        end
        for _, case in ipairs {
          { "fill: index 3 out of range (1..2; indices are 1-based)", { fill }, { "fill" } },
          { "fill: the hint: index 3 out of range (1..2; indices are 1-based)", { hinted }, { "fill", "the hint" } },
          -- a nested scope of the outermost's name adds its hint; another name changes nothing
          { "fill: the hint: index 3 out of range (1..2; indices are 1-based)", { fill }, { hinted } },
          { "fill: index 3 out of range (1..2; indices are 1-based)", { fill }, { core._op_label("other", "h") } },
          { "fill: the hint: index 3 out of range (1..2; indices are 1-based)", { hinted }, { fill } },
        } do
          local want, outer, inner = case[1], case[2], case[3]
          local function args(s) return type(s[1]) == "string" and s or { s[1] } end
          assert.are.equal(want, run(args(outer), args(inner)))
          -- the string forms give the same
          local function str(s)
            if type(s[1]) == "string" then return s end
            return s[1] == fill and { "fill" } or s[1] == hinted and { "fill", "the hint" } or { "other", "h" }
          end
          assert.are.equal(want, run(str(outer), str(inner)))
        end
        assert.has_error(function() core._op_label({}) end)
      end)

      it("ends the scope when the composite raises at trace time", function()
        assert.has_error(function() ltc.zeros({ 2 }):index_fill(9, I { 1 }, 0) end)
        assert.has_error(function() ltc.zeros({ 2 }):take_along_dim(I { 1 }, "x") end)
        assert.matches("^gather: index 5 out of range",
          err(function() return ltc.zeros({ 4 }):gather(1, I { 5 }):totable() end))
      end)
    end)
  end
end)
