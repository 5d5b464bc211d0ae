--- ltc.data: a small data loader (batches, seeded shuffling) and the Fashion-MNIST / MNIST
-- data sets read from IDX files.
--
--   local d = ltc.data.fashion_mnist()             -- /usr/share/datasets/fashion-mnist
--   local loader = ltc.data.DataLoader({d.train_x, d.train_y},
--                                      {batch_size = 128, shuffle = true, seed = 0})
--   for step, x, y in loader:batches() do ... end
--
-- A batch is index_select(1, idx) over the whole data tensors with an int64 index tensor
-- made from Lua: the index is a graph parameter, so every full batch is the same graph and a
-- training loop compiles once. The data tensors stay on the device; nothing is copied
-- through Lua.
local raise = require("ltc.core")._raise -- an error at the caller's line, outside lua/ltc/
local ltc = require "ltc"

local data = {}

---------------------------------------------------------------------------------------------
-- a seeded generator for shuffling (splitmix64; the same permutation on every platform)

local function splitmix(state)
  local s = state
  return function()
    s = s + 0x9E3779B97F4A7C15
    local z = s
    z = (z ~ (z >> 30)) * 0xBF58476D1CE4E5B9
    z = (z ~ (z >> 27)) * 0x94D049BB133111EB
    return z ~ (z >> 31)
  end
end

--- data.permutation(n, seed): a table holding 1..n in an order fixed by seed (Fisher-Yates).
function data.permutation(n, seed)
  local count, iseed = math.tointeger(n), math.tointeger(seed or 0)
  if not count or count < 0 then
    raise("permutation: bad argument #1 (an integer n >= 0 expected, got " .. (math.type(n)
      and tostring(n) or type(n)) .. ")")
  end
  if not iseed then
    raise("permutation: bad argument #2 (an integer seed expected, got " .. (math.type(seed)
      and tostring(seed) or type(seed)) .. ")")
  end
  local rand, p = splitmix(iseed), {}
  n = count
  for i = 1, n do p[i] = i end
  for i = n, 2, -1 do
    local j = (rand() >> 1) % i + 1
    p[i], p[j] = p[j], p[i]
  end
  return p
end

---------------------------------------------------------------------------------------------
-- DataLoader

local Loader = {}
Loader.__index = Loader

--- data.DataLoader(tensors, opts): batches of the rows (dim 1) of one tensor or a list of
-- tensors with the same number of rows. opts: batch_size (default 1), shuffle (default
-- false), seed (default 0; epoch e shuffles with seed + e - 1), drop_last (default false: a
-- last, smaller batch has another shape and so another graph).
-- distributed (default false): each rank of ltc.distributed iterates over its own shard of
-- the epoch's order, as PyTorch's DistributedSampler: the (shuffled) order of every row,
-- padded by repeating its start to a multiple of the world size (or cut to one with
-- drop_last), dealt round-robin: rank r (0-based) takes positions r+1, r+1+W, ... Every rank
-- uses the same seed, so the shards are disjoint and cover the epoch; batch k of every rank
-- together is batch k of a single process with batch_size * W. opts.rank and
-- opts.world_size override ltc.distributed's (read when an epoch starts).
function data.DataLoader(tensors, opts)
  if ltc.is_tensor(tensors) then tensors = { tensors } end
  if type(tensors) ~= "table" or #tensors == 0 then
    raise("DataLoader: expected a tensor or a list of tensors, got " .. type(tensors))
  end
  for i, t in ipairs(tensors) do
    if not ltc.is_tensor(t) or t:dim() == 0 then
      raise(string.format("DataLoader: item %d is %s, not a tensor with rows", i,
        ltc.is_tensor(t) and "a 0-d tensor" or "a " .. type(t)))
    end
  end
  if opts ~= nil and type(opts) ~= "table" then
    raise("DataLoader: options must be a table (batch_size =, shuffle =, ...), got " .. type(opts))
  end
  opts = opts or {}
  local n = tensors[1]:size(1)
  for i, t in ipairs(tensors) do
    if t:size(1) ~= n then
      raise(string.format("DataLoader: tensor %d has %d rows, tensor 1 has %d", i, t:size(1), n))
    end
  end
  local bs = opts.batch_size or 1
  if math.type(bs) ~= "integer" or bs < 1 then raise("DataLoader: batch_size must be a positive integer") end
  return setmetatable({
    tensors = tensors, n = n, batch_size = bs, shuffle = opts.shuffle or false,
    seed = opts.seed or 0, drop_last = opts.drop_last or false, epoch = 0,
    distributed = opts.distributed or false, rank = opts.rank, world_size = opts.world_size,
  }, Loader)
end

-- distributed: this rank's rank and the world size
local function placement(self)
  local dist = require "ltc.distributed"
  local ws = self.world_size or dist.world_size()
  local rank = self.rank or dist.rank()
  if math.type(ws) ~= "integer" or ws < 1 or math.type(rank) ~= "integer" or rank < 0 or rank >= ws then
    raise(string.format("DataLoader: rank %s is out of range for world_size %s (ranks are 0-based)",
      tostring(rank), tostring(ws)))
  end
  return rank, ws
end

-- The rows this rank iterates over in an epoch (all of them unless distributed).
local function rows(self)
  if not self.distributed then return self.n end
  local _, ws = placement(self)
  if self.drop_last then return self.n // ws end
  return (self.n + ws - 1) // ws
end

--- #loader: the number of batches in an epoch (of this rank's shard when distributed).
function Loader:__len()
  local n = rows(self)
  if self.drop_last then return n // self.batch_size end
  return (n + self.batch_size - 1) // self.batch_size
end

--- loader:batches(): an iterator over one epoch: step, then one batch per tensor.
function Loader:batches()
  self.epoch = self.epoch + 1
  local order = self.shuffle and data.permutation(self.n, self.seed + self.epoch - 1) or nil
  local bs, n, nb, step = self.batch_size, self.n, #self, 0
  if self.distributed then
    local rank, ws = placement(self)
    local shard, total = {}, rows(self) * ws
    for k = rank + 1, total, ws do
      local pos = (k - 1) % self.n + 1 -- padding repeats the order's start
      shard[#shard + 1] = order and order[pos] or pos
    end
    order, n = shard, #shard
  end
  local tensors = self.tensors
  return function()
    step = step + 1
    if step > nb then return nil end
    local first = (step - 1) * bs
    local count = math.min(bs, n - first)
    local idx = {}
    if order then
      for k = 1, count do idx[k] = order[first + k] end
    else
      for k = 1, count do idx[k] = first + k end
    end
    local it = tensors[1] and ltc.tensor(idx, "int64", { device = tensors[1]:device() }) -- the
      or ltc.tensor(idx, "int64")                                -- data's device
    local out = { step }
    for i, t in ipairs(tensors) do out[i + 1] = t:index_select(1, it) end
    return table.unpack(out, 1, #tensors + 1)
  end
end

--- for xb, yb in loader do ... end: one epoch of batches (loader:batches() without the
-- step), as iterating a PyTorch DataLoader. The generic for calls the loader for each batch
-- with the previous batch as control value: the first call (control nil) starts an epoch.
function Loader:__call(_, prev)
  if prev == nil or not self._epoch_iter then self._epoch_iter = self:batches() end
  local r = table.pack(self._epoch_iter())
  if r[1] == nil then
    self._epoch_iter = nil
    return nil
  end
  return table.unpack(r, 2, r.n)
end

---------------------------------------------------------------------------------------------
-- data sets

data.FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

-- Raises "<fname>: bad argument #1 (a directory path expected, ...)" at the caller's line
-- (ltc._raise: the first line outside ltc's files) unless dir is a string.
local function check_dir(fname, dir)
  if type(dir) ~= "string" then
    ltc._raise(fname .. ": bad argument #1 (a directory path expected, got " .. ltc.typename(dir) .. ")")
  end
end

--- data.mnist_files(dir): the four IDX paths of an MNIST-format data set in dir, or nil and
-- a message naming the first missing file.
function data.mnist_files(dir)
  check_dir("mnist_files", dir)
  local names = { "train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                  "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte" }
  local paths = {}
  for i, nm in ipairs(names) do
    local p = dir .. "/" .. nm
    if exists(p .. ".gz") then p = p .. ".gz" elseif not exists(p) then
      return nil, "missing " .. p .. "(.gz)"
    end
    paths[i] = p
  end
  return paths
end

--- data.mnist(dir) / data.fashion_mnist([dir]): {train_x, train_y, test_x, test_y}: images
-- as float32 [N, 784] in [0, 1], labels as int64 [N], 1-based (class k is label k - 1 of
-- the files). Raises when a file is missing or malformed.
function data.mnist(dir)
  check_dir("mnist", dir)
  local paths, err = data.mnist_files(dir)
  if not paths then raise("mnist: " .. err) end
  local function images(p)
    local t = ltc.io.read_idx(p, { scale = 1 / 255 })
    return t:reshape({ t:size(1), -1 })
  end
  local function labels(p) return ltc.io.read_idx(p, { dtype = "int64", offset = 1 }) end
  local d = {
    train_x = images(paths[1]), train_y = labels(paths[2]),
    test_x = images(paths[3]), test_y = labels(paths[4]),
  }
  ltc.sync() -- the reshapes: the data enter every later graph as parameters
  return d
end

function data.fashion_mnist(dir)
  if dir ~= nil then check_dir("fashion_mnist", dir) end
  return data.mnist(dir or data.FASHION_MNIST_DIR)
end

--- Fashion-MNIST's class names, by 1-based label.
data.FASHION_MNIST_CLASSES = { "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal",
  "Shirt", "Sneaker", "Bag", "Ankle boot" }

return data
