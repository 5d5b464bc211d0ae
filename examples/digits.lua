--- Softmax regression on the handwritten digits data set (UCI optdigits, 8x8 images).
--
-- Trains on a fixed, seeded split (1500 train, 297 test) with full-batch gradient
-- descent; the gradients are written by hand with ltc ops. Each training step is one
-- sync, and after the first step every sync is a compile-cache hit.
--
--   lua5.4 examples/digits.lua [steps] [data path]
local ltc = require "ltc"

local steps = tonumber(arg and arg[1]) or 300
local here = (arg and arg[0] or ""):match("^(.*)/examples/[^/]*$") or "."
local path = arg and arg[2] or (here .. "/data/digits.csv.gz")
local lr = 0.5

-- the data: 64 pixel counts 0..16, then the label 0..9
local rows = ltc.io.read_csv(path)
assert(#rows == 1797, "expected 1797 rows in " .. path .. ", got " .. #rows)

-- a fixed, seeded split (Lua 5.4's xoshiro256**, Fisher-Yates)
math.randomseed(42)
local order = {}
for i = 1, #rows do order[i] = i end
for i = #rows, 2, -1 do
  local j = math.random(i)
  order[i], order[j] = order[j], order[i]
end

local function split(first, last)
  local xs, ys = {}, {}
  for k = first, last do
    local row = rows[order[k]]
    local x = {}
    for p = 1, 64 do x[p] = row[p] / 16 end
    xs[#xs + 1] = x
    ys[#ys + 1] = row[65] + 1 -- class labels are 1-based
  end
  return ltc.tensor(xs), ltc.tensor(ys, "int64")
end
local x_train, y_train = split(1, 1500)
local x_test, y_test = split(1501, #rows)
local n = x_train:size(1)

-- one-hot targets: label == class, as float32
local classes = ltc.arange(1, 11)
local y_onehot = y_train:view(-1, 1):eq(classes):float()

local w = ltc.zeros(64, 10)
local b = ltc.zeros(10)
ltc.sync() -- materialize the data and the parameters before the loop

ltc.metrics.reset()
local loss
for step = 1, steps do
  local logits = x_train:matmul(w) + b
  local g = (logits:softmax(2) - y_onehot) / n           -- dloss/dlogits
  w = w - lr * x_train:t():matmul(g)
  b = b - lr * g:sum(1)
  loss = -(y_onehot * logits:log_softmax(2)):sum() / n
  ltc.sync()                                              -- one sync per step
  if step == 1 or step % 50 == 0 then
    print(string.format("step %4d  loss %.4f", step, loss:item()))
  end
end

local train_compiles = ltc.metrics.counter("UncachedCompile")
local train_hits = ltc.metrics.counter("CachedCompile")

local pred = x_test:matmul(w):add(b):argmax(2)
local accuracy = pred:eq(y_test):float():mean():item()
print(string.format("test accuracy %.4f (%d test images)", accuracy, x_test:size(1)))
print(string.format("training: %d steps, UncachedCompile %d, CachedCompile %d",
  steps, train_compiles, train_hits))
print(string.format("in all:   UncachedCompile %d, CachedCompile %d, MarkStep %d",
  ltc.metrics.counter("UncachedCompile"), ltc.metrics.counter("CachedCompile"),
  ltc.metrics.counter("MarkStep")))
if accuracy < 0.93 then
  io.stderr:write("accuracy below 0.93\n")
  os.exit(1)
end
