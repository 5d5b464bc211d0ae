-- ltc.save and ltc.load: NumPy's .npy format.
local ltc = require "ltc"

local tmp = os.tmpname()

local function write(bytes)
  local f = assert(io.open(tmp, "wb"))
  f:write(bytes)
  f:close()
end

-- A version 1.0 .npy file with the given header dict and data bytes.
local function npy(dict, data)
  local header = dict .. string.rep(" ", (64 - (10 + #dict + 1) % 64) % 64) .. "\n"
  return "\147NUMPY\1\0" .. string.pack("<I2", #header) .. header .. (data or "")
end

describe("ltc.save and ltc.load", function()
  teardown(function() os.remove(tmp) end)

  for _, dtype in ipairs({"float32", "float64", "int32", "int64"}) do
    it("round-trip a " .. dtype .. " matrix", function()
      local t = ltc.tensor({{1, -2, 3}, {4, 5, -6}}, dtype)
      ltc.save(tmp, t)
      local u = ltc.load(tmp)
      assert.are.equal(dtype, u:dtype())
      assert.are.same(t:totable(), u:totable())
    end)
  end

  it("round-trip bool, 0-d and empty tensors", function()
    ltc.save(tmp, ltc.tensor({true, false, true}))
    assert.are.same({true, false, true}, ltc.load(tmp):totable())
    ltc.save(tmp, ltc.tensor(2.5, "float64"))
    local s = ltc.load(tmp)
    assert.are.equal(0, s:dim())
    assert.are.equal(2.5, s:item())
    ltc.save(tmp, ltc.zeros(0, 3))
    assert.are.same({0, 3}, ltc.load(tmp):size())
  end)

  it("save syncs a pending tensor", function()
    ltc.save(tmp, ltc.tensor({1, 2}) * 3)
    assert.are.same({3, 6}, ltc.load(tmp):totable())
  end)

  it("writes a header NumPy reads: magic, version 1.0, 64-byte aligned data", function()
    ltc.save(tmp, ltc.tensor({1, 2, 3}, "int32"))
    local f = assert(io.open(tmp, "rb"))
    local bytes = f:read("a")
    f:close()
    assert.are.equal("\147NUMPY\1\0", bytes:sub(1, 8))
    local hlen = string.unpack("<I2", bytes, 9)
    assert.are.equal(0, (10 + hlen) % 64)
    assert.truthy(bytes:find("'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", 1, true))
    assert.are.equal(10 + hlen + 12, #bytes)
  end)

  it("reads a version 2.0 file", function()
    local header = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }"
    header = header .. string.rep(" ", (64 - (12 + #header + 1) % 64) % 64) .. "\n"
    write("\147NUMPY\2\0" .. string.pack("<I4", #header) .. header .. string.pack("<dd", 1.5, -2))
    assert.are.same({1.5, -2}, ltc.load(tmp):totable())
  end)

  it("names the path of a missing file", function()
    assert.has_error(function() ltc.load("/nonexistent/x.npy") end)
    local ok, err = pcall(ltc.load, "/nonexistent/x.npy")
    assert.is_false(ok)
    assert.truthy(err:find("load: cannot open /nonexistent/x.npy", 1, true))
  end)

  local malformed = {
    {"a file without the magic", "PK\3\4 not numpy", "is not a .npy file"},
    {"a truncated header", "\147NUMPY\1\0\100\0{'descr'", "file ends inside the header"},
    {"an unknown version", "\147NUMPY\9\0\0\0", "unsupported .npy version 9.0"},
    {"an unsupported dtype", npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }"),
     "unsupported dtype '<c8'"},
    {"a wide unsigned dtype", npy("{'descr': '>u2', 'fortran_order': False, 'shape': (1,), }"),
     "unsupported dtype '>u2'"},
    {"a bad Fortran order", npy("{'descr': '<f4', 'fortran_order': 1, 'shape': (2, 2), }"),
     "bad 'fortran_order' value"},
    {"a missing shape", npy("{'descr': '<f4', 'fortran_order': False, }"), "no 'shape' tuple"},
    {"short data", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", "\0\0\0\0"),
     "data is shorter than the header's shape needs (16 bytes)"},
  }
  for _, m in ipairs(malformed) do
    it("rejects " .. m[1] .. " with a clear error", function()
      write(m[2])
      local ok, err = pcall(ltc.load, tmp)
      assert.is_false(ok)
      assert.truthy(err:find(m[3], 1, true), err)
      assert.truthy(err:find(tmp, 1, true), err)
    end)
  end
end)
