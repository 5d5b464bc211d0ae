#!/usr/bin/python3
"""gen_fixtures_ops.py - the fixtures of the ops of issue 15 (sort, topk, einsum, the special
functions, ...), in spec/fixtures/ops/ with its own manifest.lua; spec/backends_spec.lua runs
them on both backends as it runs those of tools/gen_fixtures.py (same conventions: inputs x,
y, z, w; dims and indices 1-based in Lua, 0-based here). Kept apart from gen_fixtures.py so
that its random inputs, and so its .npy files, do not change when cases are added here.

    /usr/bin/python3 tools/gen_fixtures_ops.py
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fixtures  # noqa: E402  (its write() and conventions)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spec", "fixtures", "ops")
CASES = []
rng = np.random.default_rng(15)


def case(name, inputs, fn, call, tol=1e-6):
    CASES.append((name, inputs, fn, call, tol, None))


def f32(*shape, lo=-3.0, hi=3.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def f64(*shape, lo=-3.0, hi=3.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float64)


def i64(*shape, lo=-9, hi=10):
    return rng.integers(lo, hi, size=shape).astype(np.int64)


def i32(*shape, lo=-9, hi=10):
    return rng.integers(lo, hi, size=shape).astype(np.int32)


def bools(*shape):
    return rng.integers(0, 2, size=shape).astype(np.bool_)


# ---- elementwise math ---------------------------------------------------------------------

UNARY = {  # op: (torch fn, low, high, special values)
    "tan": (torch.tan, -1.4, 1.4, [0.0, -0.0, np.nan, np.inf]),
    "atan": (torch.atan, -5, 5, [0.0, np.inf, -np.inf, np.nan]),
    "asin": (torch.asin, -1, 1, [1.0, -1.0, 1.5, np.nan]),
    "acos": (torch.acos, -1, 1, [1.0, -1.0, -1.5, np.nan]),
    "sinh": (torch.sinh, -3, 3, [0.0, np.inf, -np.inf, 100.0]),
    "cosh": (torch.cosh, -3, 3, [0.0, np.inf, -np.inf, 100.0]),
    "asinh": (torch.asinh, -5, 5, [0.0, -0.0, np.inf, -np.inf]),
    "acosh": (torch.acosh, 1, 5, [1.0, 0.5, np.inf, np.nan]),
    "atanh": (torch.atanh, -0.99, 0.99, [1.0, -1.0, 1.5, 0.0]),
    "erf": (torch.erf, -3, 3, [0.0, np.inf, -np.inf, 1e-30]),
    "erfc": (torch.erfc, -3, 5, [0.0, np.inf, -np.inf, 9.0]),
    "erfinv": (torch.erfinv, -0.999, 0.999, [1.0, -1.0, 0.0, 1.5]),
    "log2": (torch.log2, 0.01, 10, [0.0, 1.0, -1.0, np.inf]),
    "log10": (torch.log10, 0.01, 10, [0.0, 1000.0, -1.0, np.inf]),
    "exp2": (torch.exp2, -5, 5, [0.0, 10.0, -np.inf, np.inf]),
    "lgamma": (torch.lgamma, -4.5, 8, [0.0, 1.0, -2.0, np.inf]),
    "digamma": (torch.digamma, -4.5, 8, [0.0, -0.0, -2.0, 1.0]),
}
for op, (fn, lo, hi, special) in UNARY.items():
    case(op + "_f32", [f32(3, 4, lo=lo, hi=hi)], fn, "x:%s()" % op, 1e-5)
    case(op + "_f64", [f64(7, lo=lo, hi=hi)], fn, "ltc.%s(x)" % op, 1e-11)
    case(op + "_special", [np.array(special, dtype=np.float64)], fn, "x:%s()" % op, 1e-11)
    case(op + "_i64", [np.array([1, 2, 3] if lo >= 0 or op in ("lgamma", "digamma") else [0, 1, -1],
                                dtype=np.int64)], lambda x, fn=fn: fn(x.float()), "x:%s()" % op, 1e-5)
case("erfinv_tails", [np.array([0.9999, -0.99999, 1e-8, 0.5, 0.9], dtype=np.float64)], torch.erfinv,
     "x:erfinv()", 1e-12)
case("digamma_large", [np.array([1e5, 30.5, 0.001, -0.001, -7.3], dtype=np.float64)], torch.digamma,
     "x:digamma()", 1e-12)


def trigamma(x):
    """polygamma(1, x) from mpmath: PyTorch's own is accurate to about 1e-9 only."""
    import mpmath
    return torch.tensor([float(mpmath.polygamma(1, v)) if not (v <= 0 and v == int(v)) else np.inf
                         for v in x.tolist()], dtype=x.dtype)


case("polygamma_1", [f64(6, lo=-4.5, hi=9)], trigamma, "x:polygamma(1)", 1e-12)
case("polygamma_0_f32", [f32(5, lo=0.1, hi=9)], lambda x: torch.polygamma(0, x), "ltc.polygamma(x, 0)", 1e-5)
case("polygamma_1_special", [np.array([0.0, -2.0, 1.0, 1e-3, 50.0], dtype=np.float64)],
     trigamma, "x:polygamma(1)", 1e-12)  # a pole is +inf (PyTorch: a huge finite number)

BINARY = {"atan2": torch.atan2, "hypot": torch.hypot, "logaddexp": torch.logaddexp}
for op, fn in BINARY.items():
    case(op + "_f32", [f32(2, 3), f32(2, 3)], fn, "x:%s(y)" % op, 1e-5)
    case(op + "_bcast_f64", [f64(2, 1, 3), f64(4, 1)], fn, "ltc.%s(x, y)" % op, 1e-12)
    case(op + "_scalar", [f32(4)], lambda x, fn=fn: fn(x, torch.tensor(0.5)), "x:%s(0.5)" % op, 1e-6)
SP = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, np.inf, -np.inf], dtype=np.float64)
SQ = np.array([-0.0, 0.0, np.inf, -np.inf, 1.0, np.nan, -np.inf, np.inf], dtype=np.float64)
for op, fn in BINARY.items():
    case(op + "_special", [SP, SQ], fn, "x:%s(y)" % op, 1e-12)
case("logaddexp_far", [np.array([1000.0, -1000.0, 0.0], dtype=np.float32),
                       np.array([999.0, -1001.0, -50.0], dtype=np.float32)], torch.logaddexp,
     "x:logaddexp(y)", 1e-6)

# ---- tril, triu ------------------------------------------------------------------------------

case("tril", [f32(4, 5)], torch.tril, "x:tril()", 0)
case("tril_diag_batched", [f64(2, 3, 4)], lambda x: torch.tril(x, 1), "x:tril(1)", 0)
case("tril_neg_i64", [i64(5, 3)], lambda x: torch.tril(x, -2), "ltc.tril(x, -2)", 0)
case("tril_far", [f32(3, 3)], lambda x: (torch.tril(x, 100), torch.tril(x, -100)),
     "x:tril(100), x:tril(-100)", 0)
case("triu", [f32(4, 5)], torch.triu, "x:triu()", 0)
case("triu_diag_bool", [bools(2, 3, 3)], lambda x: torch.triu(x, 1), "x:triu(1)", 0)
case("triu_neg", [i32(4, 2)], lambda x: torch.triu(x, -1), "ltc.triu(x, -1)", 0)
case("triu_far", [f64(2, 3)], lambda x: (torch.triu(x, 100), torch.triu(x, -100)),
     "x:triu(100), x:triu(-100)", 0)
case("triu_empty", [np.zeros((0, 3), dtype=np.float32)], torch.triu, "x:triu()", 0)

# ---- sorting and selection --------------------------------------------------------------------
# torch.sort(stable=True) is stable as ltc's sort; topk and kthvalue are not, so their inputs
# have no ties (distinct values from a permutation).


def vi(r):
    return (r.values, r.indices + 1)


def distinct(*shape, dt=np.float32):
    n = int(np.prod(shape))
    p = rng.permutation(n).reshape(shape) - n // 2
    return (p * 0.5 if dt in (np.float32, np.float64) else p).astype(dt)


TIES = np.array([[3, 1, 2, 1, 3, 0], [5, 5, 5, 2, 2, 9]], dtype=np.int64)
case("sort", [f32(3, 5)], lambda x: vi(torch.sort(x, stable=True)), "x:sort()", 0)
case("sort_desc_dim1", [f64(4, 3)], lambda x: vi(torch.sort(x, dim=0, descending=True, stable=True)),
     "x:sort(1, true)", 0)
case("sort_ties_i64", [TIES], lambda x: vi(torch.sort(x, stable=True)), "x:sort(-1)", 0)
case("sort_ties_desc", [TIES], lambda x: vi(torch.sort(x, descending=True, stable=True)),
     "x:sort(2, true)", 0)
case("sort_nan", [np.array([2, np.nan, -np.inf, 1, np.nan, np.inf], dtype=np.float32)],
     lambda x: (vi(torch.sort(x, stable=True)) + vi(torch.sort(x, descending=True, stable=True))),
     "(function() local v, i = x:sort(); local w, j = x:sort(1, true); return v, i, w, j end)()", 0)
case("sort_bool", [bools(7)], lambda x: vi(torch.sort(x, stable=True)), "x:sort()", 0)
case("sort_0d", [np.array(2.5, dtype=np.float32)], lambda x: vi(torch.sort(x)), "x:sort()", 0)
case("sort_empty", [np.zeros((2, 0), dtype=np.float32)], lambda x: vi(torch.sort(x)), "x:sort()", 0)
case("argsort", [TIES], lambda x: torch.argsort(x, stable=True) + 1, "x:argsort()", 0)
case("argsort_desc_dim1", [f32(4, 3)], lambda x: torch.argsort(x, dim=0, descending=True, stable=True) + 1,
     "ltc.argsort(x, 1, true)", 0)
case("topk", [distinct(3, 6)], lambda x: vi(torch.topk(x, 3)), "x:topk(3)", 0)
case("topk_smallest_dim1", [distinct(5, 2, dt=np.float64)], lambda x: vi(torch.topk(x, 2, 0, largest=False)),
     "x:topk(2, 1, false)", 0)
case("topk_i32_all", [distinct(6, dt=np.int32)], lambda x: vi(torch.topk(x, 6)), "x:topk(6)", 0)
case("topk_zero", [f32(2, 3)], lambda x: vi(torch.topk(x, 0)), "x:topk(0)", 0)
case("kthvalue", [distinct(3, 5)], lambda x: vi(torch.kthvalue(x, 2)), "x:kthvalue(2)", 0)
case("kthvalue_dim1_keep", [distinct(4, 3, dt=np.float64)], lambda x: vi(torch.kthvalue(x, 4, 0, keepdim=True)),
     "x:kthvalue(4, 1, true)", 0)
case("median_all", [distinct(3, 4)], torch.median, "x:median()", 0)
case("median_all_odd_i64", [i64(7)], torch.median, "x:median()", 0)
case("median_nan", [np.array([3, 1, np.nan, 2, np.nan], dtype=np.float32)], torch.median, "x:median()", 0)
case("median_dim", [distinct(3, 4)], lambda x: vi(torch.median(x, 1)), "x:median(2)", 0)
case("median_dim_keep_nan", [np.array([[3, 1, np.nan, 2, np.nan], [4, 0, 1, 3, 2]], dtype=np.float64)],
     lambda x: vi(torch.median(x, 1, keepdim=True)), "x:median(-1, true)", 0)
case("mode", [TIES], lambda x: vi(torch.mode(x)), "x:mode()", 0)
case("mode_dim1", [np.array([[1, 2], [1, 3], [2, 3], [2, 2]], dtype=np.int32)],
     lambda x: vi(torch.mode(x, 0)), "x:mode(1)", 0)
case("mode_f32", [np.array([1, 2.5, -1, 0.5, 1, 2.5], dtype=np.float32)], lambda x: vi(torch.mode(x)),
     "x:mode()", 0)

# ---- reductions over several dims, var/std with correction, amax/amin --------------------------

case("sum_dims_keep", [f32(2, 3, 4)], lambda x: torch.sum(x, (0, 2), keepdim=True), "x:sum({1, 3}, true)", 1e-6)
case("sum_dims_neg_i32", [i32(2, 3, 4)], lambda x: torch.sum(x, (-1, 1)), "x:sum({-1, 2})", 0)
case("sum_dims_empty_table", [f64(2, 3)], lambda x: torch.sum(x, ()), "x:sum({})", 1e-12)
case("mean_dims", [f64(3, 2, 4, 2)], lambda x: torch.mean(x, (1, 3)), "x:mean({2, 4})", 1e-12)
case("logsumexp_dims", [f32(2, 3, 4)], lambda x: torch.logsumexp(x, (0, 1), keepdim=True),
     "x:logsumexp({1, 2}, true)", 1e-6)
case("norm_dims", [f32(2, 3, 4)], lambda x: torch.linalg.vector_norm(x, 2, (0, 2)), "x:norm(2, {1, 3})", 1e-6)
case("norm_dims_inf", [f64(2, 3, 4)], lambda x: torch.linalg.vector_norm(x, float("inf"), (1, 2), keepdim=True),
     "x:norm(math.huge, {2, 3}, true)", 0)
case("norm_dims_1", [f32(3, 2, 2)], lambda x: torch.linalg.vector_norm(x, 1, (0, 1)), "x:norm(1, {1, 2})", 1e-6)
case("var_dims", [f64(2, 3, 4)], lambda x: torch.var(x, (0, 2)), "x:var({1, 3})", 1e-12)
case("var_dims_biased_keep", [f32(2, 3, 4)], lambda x: torch.var(x, (1, 2), unbiased=False, keepdim=True),
     "x:var({2, 3}, false, true)", 1e-5)
case("var_correction", [f64(3, 5)], lambda x: torch.var(x, 1, correction=2), "x:var(2, 2)", 1e-12)
case("var_correction_0_all", [f64(3, 5)], lambda x: torch.var(x, None, correction=0), "x:var(nil, 0)", 1e-12)
case("var_correction_half_keep", [f32(4, 3)], lambda x: torch.from_numpy(np.var(x.numpy(), axis=0, ddof=0.5, keepdims=True)),
     "x:var(1, 0.5, true)", 1e-5)
case("std_dims_correction", [f64(2, 3, 4)], lambda x: torch.std(x, (0, 2), correction=3), "x:std({1, 3}, 3)", 1e-12)
case("std_correction_1", [f32(3, 4)], lambda x: torch.std(x, -1, correction=1), "x:std(-1, 1)", 1e-5)
case("amax_dims", [f32(2, 3, 4)], lambda x: torch.amax(x, (0, 2)), "x:amax({1, 3})", 0)
case("amax_dim_keep_i64", [i64(3, 4)], lambda x: torch.amax(x, 1, keepdim=True), "x:amax(2, true)", 0)
case("amax_all", [f64(3, 4)], torch.amax, "x:amax()", 0)
case("amin_dims_keep", [f32(2, 3, 4)], lambda x: torch.amin(x, (1, 2), keepdim=True), "x:amin({2, 3}, true)", 0)
case("amin_nan", [np.array([[1, np.nan], [0, -1]], dtype=np.float32)], lambda x: torch.amin(x, 0), "x:amin(1)", 0)


if __name__ == "__main__":
    gen_fixtures.write(CASES, OUT, "tools/gen_fixtures_ops.py")
