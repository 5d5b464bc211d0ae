#!/usr/bin/python3
"""Fixtures for spec/dtypes_narrow_spec.lua: the narrow dtypes (uint8, int8, int16, float16,
bfloat16) as PyTorch computes them, written as a Lua table, and .npy/.npz files as NumPy
writes them (spec/fixtures/npy_narrow/).

Run with Debian's Python (python3-torch): /usr/bin/python3 tools/gen_dtype_fixtures.py
Float values are written as hex floats (exact); indices are written 1-based (ltc's).
"""
import os
import numpy as np
import torch

from fixture_common import lua  # Lua literals (exact: hexadecimal floats)

torch.set_default_dtype(torch.float32)  # these cases are float32 by default, unlike the others

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spec", "fixtures")

D = {"bool": torch.bool, "uint8": torch.uint8, "int8": torch.int8, "int16": torch.int16,
     "int32": torch.int32, "int64": torch.int64, "float16": torch.float16,
     "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64}
NAME = {v: k for k, v in D.items()}
ORDER = list(D)


def T(vals, dt):
    return torch.tensor(vals, dtype=D[dt])


out = {}

# ---- promotion: torch.result_type ----
prom = {}
for a in ORDER:
    for b in ORDER:
        prom[a + "+" + b] = NAME[torch.result_type(torch.ones(2, dtype=D[a]), torch.ones(2, dtype=D[b]))]
        prom[a + "+0d:" + b] = NAME[torch.result_type(torch.ones(2, dtype=D[a]), torch.ones((), dtype=D[b]))]
    prom[a + "+int"] = NAME[torch.result_type(torch.ones(2, dtype=D[a]), 1)]
    prom[a + "+float"] = NAME[torch.result_type(torch.ones(2, dtype=D[a]), 1.5)]
    prom[a + "+bool"] = NAME[torch.result_type(torch.ones(2, dtype=D[a]), True)]
out["promotion"] = prom

# ---- casts ----
F32 = [0.0, -0.0, 1.5, -1.5, 2.5, 3.5, 0.1, 1 / 3, 100.7, 255.9, 300.0, -1.0, -129.0, 65504.0,
       65519.0, 65520.0, 1e-8, 6e-8, 3e-5, 1e10, 1.00390625, 1.01171875, 3.0e38]
casts = []
for dt in ["float16", "bfloat16"]:
    src = torch.tensor(F32 + [float("inf"), float("-inf")], dtype=torch.float32)
    casts.append({"from": "float32", "to": dt, "x": src, "y": src.to(D[dt]).float()})
    src64 = torch.tensor([0.1, 1 / 3, 65519.99, 1 + 2 ** -11, 1 + 2 ** -11 + 2 ** -40, 2.0 ** -25,
                          2.0 ** -24 * 1.5], dtype=torch.float64)
    casts.append({"from": "float64", "to": dt, "x": src64, "y": src64.to(D[dt]).double()})
for dt in ["uint8", "int8", "int16"]:
    src = torch.tensor([v for v in F32 if abs(v) < 1e12] + [4294967552.0, 3e9, 70000.0, -1e20],
                       dtype=torch.float32)
    casts.append({"from": "float32", "to": dt, "x": src, "y": src.to(D[dt]).long()})
    srci = torch.tensor([0, 1, -1, 127, 128, 255, 256, 300, -129, 32767, 32768, -32769, 65535,
                         1000000, -(2 ** 40) - 3], dtype=torch.int64)
    casts.append({"from": "int64", "to": dt, "x": srci, "y": srci.to(D[dt]).long()})
for dt in ["float16", "bfloat16"]:  # a narrow float to integers (truncates)
    src = torch.tensor([2.5, -2.5, 0.75, 100.5, 200.0, -3.0], dtype=D[dt])
    for to in ["int32", "int64", "uint8", "int8", "bool"]:
        y = src.to(D[to])
        casts.append({"from": dt, "to": to, "x": src.float(), "y": y.tolist()})
out["casts"] = casts

# ---- arithmetic (elementwise, both operands of one narrow dtype) ----
INPUTS = {
    "uint8": ([200, 100, 255, 0, 7], [100, 200, 1, 3, 2]),
    "int8": ([100, -128, 127, -5, 7], [100, -1, 1, 3, -2]),
    "int16": ([30000, -32768, 1234, 7, -9], [10000, -1, 5, -2, 4]),
    "float16": ([1.0, 2.5, 0.1, 65504.0, -3.75, 1e-4], [3.0, 0.3, 0.2, 2.0, 1.5, 3.0]),
    "bfloat16": ([1.0, 2.5, 0.1, 3.0e38, -3.75, 1e-4], [3.0, 0.3, 0.2, 2.0, 1.5, 3.0]),
}
arith = []
for dt, (xa, xb) in INPUTS.items():
    a, b = T(xa, dt), T(xb, dt)
    is_f = a.is_floating_point()
    fs = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
          "add_scalar": lambda: a + 1, "mul_scalar": lambda: a * 3, "add_float": lambda: a + 0.5,
          "lt": lambda: a < b, "eq": lambda: a == b, "maximum": lambda: torch.maximum(a, b),
          "neg": lambda: -a if dt != "uint8" else (0 - a), "div": lambda: a / b}
    if is_f:
        fs.update({"exp": lambda: torch.exp(a), "sqrt": lambda: torch.sqrt(a.abs()),
                   "mul_point1": lambda: a * 0.1, "sub_scalar_float": lambda: a - 1.25})
    else:
        fs.update({"floor_divide": lambda: torch.div(a, b, rounding_mode="floor"),
                   "remainder": lambda: torch.remainder(a, b), "add_big_scalar": lambda: a + 300})
    ops = {}
    for k, f in fs.items():
        try:
            ops[k] = f()
        except RuntimeError:  # not implemented for Half on PyTorch's CPU: not a fixture
            pass
    for k, v in ops.items():
        arith.append({"dtype": dt, "op": k, "x": a.double() if is_f else a.long(),
                      "y": b.double() if is_f else b.long(), "out_dtype": NAME[v.dtype],
                      "out": v.double() if v.is_floating_point() else (v.long() if v.dtype != torch.bool else v)})
out["arith"] = arith

mixed = []
for da, db, xa, xb in [("uint8", "int8", [200, 3], [-100, 100]), ("float16", "bfloat16", [1.1, 3.0], [2.2, 0.7]),
                       ("int16", "float16", [3, -7], [0.25, 1.5]), ("uint8", "bool", [255, 3], [True, False]),
                       ("int8", "int32", [-128, 5], [1, 2]), ("uint8", "float32", [250, 1], [0.5, 2.0]),
                       ("bfloat16", "int64", [1.5, 256.0], [1, 3])]:
    a, b = T(xa, da), T(xb, db)
    v = a + b
    mixed.append({"a": da, "b": db, "x": a.tolist() if not a.is_floating_point() else a.double(),
                  "y": b.tolist() if not b.is_floating_point() else b.double(), "out_dtype": NAME[v.dtype],
                  "out": v.double() if v.is_floating_point() else v.tolist()})
out["mixed"] = mixed

# ---- reductions ----
red = []
for dt, vals in [("uint8", [200, 100, 255, 7]), ("int8", [-128, 127, -1, 100]), ("int16", [30000, 30000, -5, 1]),
                 ("float16", [65504.0, 65504.0, 0.1, 0.2]), ("float16", [0.1, 0.2, 0.3, 1000.0]),
                 ("bfloat16", [0.1, 0.2, 0.3, 1000.0])]:
    a = T(vals, dt)
    is_f = a.is_floating_point()
    fs = {"sum": lambda: a.sum(), "max": lambda: a.max(), "min": lambda: a.min(),
          "argmax": lambda: a.argmax() + 1, "cumsum": lambda: a.cumsum(0)}
    if is_f and torch.isfinite(a.sum()):  # PyTorch's CPU mean of float16 is sum (rounded) / n
        fs["mean"] = lambda: a.mean()
    else:
        fs["prod"] = lambda: a.prod()
    rs = {}
    for k, f in fs.items():
        try:
            rs[k] = f()
        except RuntimeError:
            pass
    for k, v in rs.items():
        red.append({"dtype": dt, "op": k, "x": a.double() if is_f else a.tolist(), "out_dtype": NAME[v.dtype],
                    "out": v.double() if v.is_floating_point() else v.tolist()})
out["reductions"] = red

# bfloat16 matmul and softmax (float16's are not implemented on PyTorch's CPU). ltc computes
# the product in float32 and rounds once; PyTorch 1.13's CPU kernel rounds partial sums to
# bfloat16 (a worse result in the last bit), so the fixture is the float32 product rounded.
a = torch.tensor([[1.1, 2.2, 3.3], [-0.4, 0.5, 0.6]], dtype=torch.bfloat16)
b = torch.tensor([[0.7, 1.0], [-1.5, 2.0], [0.3, 0.1]], dtype=torch.bfloat16)
out["bf16_matmul"] = {"a": a.double(), "b": b.double(), "out": (a.float() @ b.float()).bfloat16().double()}
out["bf16_softmax"] = {"a": a.double(), "out": torch.softmax(a, -1).double()}

with open(os.path.join(HERE, "dtypes_narrow.lua"), "w") as f:
    f.write("-- generated by tools/gen_dtype_fixtures.py (PyTorch %s, NumPy %s): do not edit\n"
            % (torch.__version__, np.__version__))
    f.write("return " + lua(out, exact=True) + "\n")

# ---- .npy and .npz files as NumPy writes them ----
d = os.path.join(HERE, "npy_narrow")
os.makedirs(d, exist_ok=True)
arrs = {
    "u1": np.array([[0, 1, 255], [7, 128, 200]], dtype="u1"),
    "i1": np.array([-128, -1, 0, 127], dtype="i1"),
    "i2": np.array([[-32768, 5], [32767, -2]], dtype="<i2"),
    "f2": np.array([0.1, -2.5, 65504, np.inf, 1e-7], dtype="<f2"),
    "be_f4": np.array([[1.5, -2.25, 3.0], [0.1, 1e30, -0.0]], dtype=">f4"),
    "be_f8": np.array([0.1, -1e300], dtype=">f8"),
    "be_i8": np.array([1, -2, 2 ** 40 + 3], dtype=">i8"),
    "be_i4": np.array([[1, -2], [70000, -70000]], dtype=">i4"),
    "be_i2": np.array([1, -2, 300], dtype=">i2"),
    "be_f2": np.array([0.5, -3.0, 1000.0], dtype=">f2"),
    "fortran_f4": np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3) + 0.5),
    "fortran_i2": np.asfortranarray(np.arange(24, dtype="<i2").reshape(2, 3, 4) - 10),
    "fortran_be_i8": np.asfortranarray(np.arange(6, dtype=">i8").reshape(3, 2) * 1000),
    "fortran_b1": np.asfortranarray(np.array([[True, False, True], [False, False, True]])),
    "fortran_u1": np.asfortranarray(np.arange(6, dtype="u1").reshape(2, 3) * 40),
}
vals = {}
for k, v in arrs.items():  # (the conversion files below are not in values.lua)
    np.save(os.path.join(d, k + ".npy"), v)
    vals[k] = {"dtype": {"u": "uint8", "i": {1: "int8", 2: "int16", 4: "int32", 8: "int64"}.get(v.dtype.itemsize),
                         "f": {2: "float16", 4: "float32", 8: "float64"}.get(v.dtype.itemsize), "b": "bool"}[v.dtype.kind],
               "shape": list(v.shape), "values": v.astype(np.float64 if v.dtype.kind == "f" else v.dtype.newbyteorder("=")).tolist()}
np.savez_compressed(os.path.join(d, "compressed.npz"), a=np.arange(10, dtype="<f4") / 4, b=np.array([[1, 2], [3, 4]], dtype="u1"))
np.savez(os.path.join(d, "plain.npz"), a=np.arange(3, dtype="<i2"))
# every float16 bit pattern, and float32 samples (ties, subnormals, overflow) with NumPy's
# float16 and PyTorch's bfloat16 of them: the conversions checked bit for bit
allh = np.arange(65536, dtype="<u2").view("<f2")
np.save(os.path.join(d, "all_f16.npy"), allh)
np.save(os.path.join(d, "all_f16_as_f32.npy"), allh.astype("<f4"))
rng = np.random.default_rng(0)
h = rng.integers(0, 65536, 2048, dtype=np.uint16).view("<f2").astype("<f4")
nxt = np.nextafter(h[1:], np.float32(np.inf), dtype=np.float32)
ties = (h[:-1].astype(np.float64) + np.nextafter(h[:-1].astype("<f2"), np.float16(np.inf)).astype(np.float64)) / 2
samples = np.concatenate([h, nxt, ties.astype("<f4"), rng.standard_normal(2048).astype("<f4") * 1000,
                          (rng.standard_normal(1024) * 1e-6).astype("<f4"),
                          np.array([65504, 65519.996, 65520, 1e38, -1e-8, 5.96e-8, 2.98e-8, 2.9802322e-08], "<f4")])
samples = samples[np.isfinite(samples) | np.isinf(samples)]
np.save(os.path.join(d, "f32_samples.npy"), samples.astype("<f4"))
with np.errstate(over="ignore"):
    np.save(os.path.join(d, "f32_samples_f16.npy"), samples.astype("<f2"))
np.save(os.path.join(d, "f32_samples_bf16.npy"),
        torch.from_numpy(samples.astype("<f4")).bfloat16().float().numpy())
with open(os.path.join(d, "values.lua"), "w") as f:
    f.write("-- generated by tools/gen_dtype_fixtures.py (NumPy %s): do not edit\n" % np.__version__)
    f.write("return " + lua(vals, exact=True) + "\n")
