#!/usr/bin/python3
"""gen_fixtures.py - writes the oracle fixtures of spec/backends_spec.lua.

For every case below: the inputs and PyTorch's (or NumPy's) result as .npy files in
spec/fixtures/, and spec/fixtures/manifest.lua listing, per case, the Lua call that should
give that result. The specs need no Python: the fixtures are committed. Run from the
repository root after changing a case:

    /usr/bin/python3 tools/gen_fixtures.py

Needs Debian's python3-numpy and python3-torch (apt-get install python3-numpy python3-torch).
Conventions: inputs are named x, y, z, w in the Lua call; dims and indices are 1-based in Lua
and 0-based here; index results (argmax, max along a dim) are 1-based in ltc, so the
expected values add 1. Lua numbers are weak scalars, as Python numbers are in PyTorch.
"""
import os
import sys

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spec", "fixtures")
CASES = []


def case(name, inputs, fn, call, tol=1e-6, out_dtype=None):
    """A case: inputs (numpy arrays), fn(*torch tensors) -> tensor or tuple, the Lua call."""
    CASES.append((name, inputs, fn, call, tol, out_dtype))


rng = np.random.default_rng(20240601)


def f32(*shape, lo=-3.0, hi=3.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def f64(*shape, lo=-3.0, hi=3.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float64)


def i32(*shape, lo=-9, hi=10):
    return rng.integers(lo, hi, size=shape).astype(np.int32)


def i64(*shape, lo=-9, hi=10):
    return rng.integers(lo, hi, size=shape).astype(np.int64)


def bools(*shape):
    return rng.integers(0, 2, size=shape).astype(np.bool_)


SPECIAL = np.array([0.0, -0.0, 1.5, -2.5, 0.5, np.nan, np.inf, -np.inf], dtype=np.float32)

# ---- elementwise, unary ---------------------------------------------------------------------

FLOAT_UNARY = {
    "sqrt": (torch.sqrt, f32(2, 3, lo=0.1, hi=4)),
    "rsqrt": (torch.rsqrt, f32(2, 3, lo=0.1, hi=4)),
    "exp": (torch.exp, f32(2, 3)),
    "log": (torch.log, f32(2, 3, lo=0.1, hi=4)),
    "log1p": (torch.log1p, np.array([1e-7, 0.5, -0.5, 3.0], dtype=np.float32)),
    "expm1": (torch.expm1, np.array([1e-7, 0.5, -0.5, 3.0], dtype=np.float32)),
    "sin": (torch.sin, f32(5)),
    "cos": (torch.cos, f32(5)),
    "tanh": (torch.tanh, f32(5)),
    "sigmoid": (torch.sigmoid, f32(5)),
    "gelu": (torch.nn.functional.gelu, f32(2, 4)),
    "silu": (torch.nn.functional.silu, f32(2, 4)),
}
for op, (fn, x) in FLOAT_UNARY.items():
    case(op + "_f32", [x], fn, "x:%s()" % op, 1e-5)
    case(op + "_f64", [x.astype(np.float64)], fn, "ltc.%s(x)" % op, 1e-12)
    case(op + "_i32", [np.array([1, 2, 3], dtype=np.int32)], lambda x, fn=fn: fn(x.float()),
         "x:%s()" % op, 1e-5)

for op in ["abs", "sign", "neg", "floor", "ceil", "round", "relu"]:
    fn = getattr(torch, op)
    case(op + "_f32", [f32(3, 4)], fn, "x:%s()" % op, 1e-6)
    case(op + "_special", [SPECIAL], fn, "x:%s()" % op, 1e-6)
    case(op + "_i64", [i64(7)], fn, "x:%s()" % op, 0)
case("round_halves", [np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49], dtype=np.float32)],
     torch.round, "x:round()", 0)
case("sign_i32", [i32(6)], torch.sign, "x:sign()", 0)
case("abs_0d", [np.array(-2.5, dtype=np.float64)], torch.abs, "x:abs()", 0)
case("abs_empty", [np.zeros((0, 3), dtype=np.float32)], torch.abs, "x:abs()", 0)

case("leaky_relu", [f32(2, 5)], torch.nn.functional.leaky_relu, "x:leaky_relu()", 1e-6)
case("leaky_relu_slope", [SPECIAL], lambda x: torch.nn.functional.leaky_relu(x, 0.2),
     "x:leaky_relu(0.2)", 1e-6)
case("clamp_both", [f32(3, 4)], lambda x: torch.clamp(x, -1, 0.5), "x:clamp(-1, 0.5)", 0)
case("clamp_min", [SPECIAL], lambda x: torch.clamp(x, min=0), "x:clamp(0)", 0)
case("clamp_max", [SPECIAL], lambda x: torch.clamp(x, max=0.5), "x:clamp(nil, 0.5)", 0)
case("clamp_inverted", [f32(4)], lambda x: torch.clamp(x, 1, -1), "x:clamp(1, -1)", 0)
case("clamp_i64", [i64(8)], lambda x: torch.clamp(x, -2, 3), "x:clamp(-2, 3)", 0)
case("isnan", [SPECIAL], torch.isnan, "x:isnan()", 0)
case("isinf", [SPECIAL], torch.isinf, "x:isinf()", 0)
case("isnan_i32", [i32(3)], torch.isnan, "x:isnan()", 0)
case("logical_not", [f32(5)], torch.logical_not, "x:logical_not()", 0)
case("logical_not_bool", [bools(6)], torch.logical_not, "x:logical_not()", 0)

# ---- elementwise, binary and ternary -----------------------------------------------------------

def with_scalar(fn, x, v):
    """fn(x, v) with v a Python number (weak), or a 0-d tensor where fn wants a tensor."""
    try:
        return fn(x, v)
    except TypeError:
        return fn(x, torch.tensor(v))


BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
          "pow": torch.pow, "minimum": torch.minimum, "maximum": torch.maximum,
          "fmod": torch.fmod, "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le,
          "gt": torch.gt, "ge": torch.ge, "floor_divide": torch.floor_divide,
          "remainder": torch.remainder, "logical_and": torch.logical_and,
          "logical_or": torch.logical_or}
for op, fn in BINARY.items():
    pos = op in ("pow",)
    x = f32(2, 3, lo=0.5 if pos else -3)
    case(op + "_f32", [x, f32(2, 3, lo=0.5)], fn, "ltc.%s(x, y)" % op, 1e-5)
    case(op + "_bcast", [f32(2, 1, 3, lo=0.5 if pos else -3), f32(4, 1, lo=0.5)], fn,
         "x:%s(y)" % op, 1e-5)
    case(op + "_f64_i32", [f64(4, lo=0.5 if pos else -3), i32(4, lo=1, hi=4)], fn,
         "x:%s(y)" % op, 1e-12)
    if op not in ("div", "pow"):
        case(op + "_i64", [i64(3, 4), i64(4, lo=1, hi=5)], fn, "x:%s(y)" % op, 0)
    case(op + "_scalar", [f32(5, lo=0.5)], lambda x, fn=fn: with_scalar(fn, x, 0.5),
         "x:%s(0.5)" % op, 1e-6)
    case(op + "_empty", [np.zeros((0, 2), dtype=np.float32), f32(2, lo=0.5)], fn,
         "x:%s(y)" % op, 0)
for op in ["minimum", "maximum"]:
    case(op + "_nan", [SPECIAL, SPECIAL[::-1].copy()], getattr(torch, op), "x:%s(y)" % op, 0)
case("eq_bool", [bools(5), bools(5)], torch.eq, "x:eq(y)", 0)
case("logical_and_mixed", [i32(6, lo=-1, hi=2), f32(6)], torch.logical_and, "x:logical_and(y)", 0)
case("fmod_signs", [np.array([-7, 7, -7, 7], dtype=np.int64), np.array([3, 3, -3, -3], dtype=np.int64)],
     torch.fmod, "x:fmod(y)", 0)
case("fmod_f32_signs", [np.array([-7.5, 7.5, -7.5, 7.5], dtype=np.float32),
                        np.array([2, 2, -2, -2], dtype=np.float32)], torch.fmod, "x:fmod(y)", 0)
case("floordiv_signs", [np.array([-7, 7, -7, 7, 110], dtype=np.int64),
                        np.array([2, 2, -2, -2, 55], dtype=np.int64)], torch.floor_divide, "x // y", 0)
case("remainder_signs", [np.array([-7, 7, -7, 7, 110], dtype=np.int64),
                         np.array([3, 3, -3, -3, 55], dtype=np.int64)], torch.remainder, "x % y", 0)
case("weak_f32_times_half", [f32(3)], lambda x: x * 0.5, "x * 0.5", 0)
case("weak_i32_times_float", [i32(3)], lambda x: x * 2.5, "x * 2.5", 0)
case("weak_i32_plus_int", [i32(3)], lambda x: x + 2, "x + 2", 0)
case("weak_0d_f64_into_f32", [f32(3), np.array(2.0, dtype=np.float64)], lambda x, y: x * y,
     "x * y", 1e-6)
case("i32_plus_i64", [i32(3), i64(3)], torch.add, "x + y", 0)
case("bool_plus_bool", [bools(4), bools(4)], torch.add, "x + y", 0)

case("where", [bools(2, 3), f32(2, 3), f32(2, 3)], torch.where, "ltc.where(x, y, z)", 0)
case("where_bcast_promote", [bools(3, 1), i32(1, 4), f64(4)], torch.where, "ltc.where(x, y, z)", 0)
case("where_scalar", [bools(5), f32(5)], lambda c, a: torch.where(c, a, 0.0), "ltc.where(x, y, 0.0)", 0)
case("lerp", [f32(2, 3), f32(2, 3), f32(2, 3, lo=0, hi=1)], torch.lerp, "x:lerp(y, z)", 1e-6)
case("lerp_scalar", [f32(4), f32(4)], lambda a, b: torch.lerp(a, b, 0.75), "x:lerp(y, 0.75)", 1e-6)
case("addcmul", [f32(2, 3), f32(3), f32(2, 1)], lambda a, b, c: torch.addcmul(a, b, c, value=0.5),
     "x:addcmul(y, z, 0.5)", 1e-6)
case("addcmul_i64", [i64(4), i64(4), i64(4)], torch.addcmul, "x:addcmul(y, z)", 0)
case("addcdiv", [f32(2, 3), f32(3), f32(2, 1, lo=0.5)], lambda a, b, c: torch.addcdiv(a, b, c, value=2),
     "x:addcdiv(y, z, 2)", 1e-6)

# ---- existing reductions, linear algebra, shapes ---------------------------------------------

case("sum_all", [f32(3, 4)], torch.sum, "x:sum()", 1e-6)
case("sum_dim_keep", [f32(2, 3, 4)], lambda x: torch.sum(x, 1, keepdim=True), "x:sum(2, true)", 1e-6)
case("sum_i32", [i32(3, 4)], torch.sum, "x:sum()", 0)
case("sum_bool", [bools(7)], torch.sum, "x:sum()", 0)
case("sum_empty", [np.zeros((0,), dtype=np.float32)], torch.sum, "x:sum()", 0)
case("mean_dim", [f64(3, 5)], lambda x: torch.mean(x, -1), "x:mean(-1)", 1e-12)
case("mean_empty", [np.zeros((0,), dtype=np.float32)], torch.mean, "x:mean()", 0)
case("max_all_nan", [SPECIAL], torch.max, "x:max()", 0)
case("max_dim", [f32(3, 4)], lambda x: (lambda r: (r.values, r.indices + 1))(torch.max(x, 1)),
     "x:max(2)", 0)
case("argmax_dim", [i64(3, 4)], lambda x: torch.argmax(x, 0) + 1, "x:argmax(1)", 0)
case("matmul_2d", [f32(3, 4), f32(4, 2)], torch.matmul, "x:matmul(y)", 1e-5)
case("matmul_batched_bcast", [f32(2, 1, 3, 4), f32(3, 4, 2)], torch.matmul, "x:matmul(y)", 1e-5)
case("matmul_1d_2d", [f64(4), f64(4, 3)], torch.matmul, "x:matmul(y)", 1e-12)
case("matmul_transposed", [f32(4, 3), f32(2, 4)], lambda a, b: torch.matmul(a.t(), b.t()),
     "x:t():matmul(y:t())", 1e-5)
case("matmul_permuted", [f32(3, 2, 4), f32(2, 3, 4)],
     lambda a, b: torch.matmul(a.transpose(0, 1), b.transpose(1, 2)),
     "x:transpose(1, 2):matmul(y:transpose(2, 3))", 1e-5)
case("softmax", [f32(3, 4)], lambda x: torch.softmax(x, 1), "x:softmax(2)", 1e-6)
case("log_softmax_dim1", [f64(3, 4)], lambda x: torch.log_softmax(x, 0), "x:log_softmax(1)", 1e-12)
case("narrow_select", [f32(4, 5)], lambda x: x.narrow(1, 1, 3)[2], "x:narrow(2, 2, 3):select(1, 3)", 0)
case("to_i32", [SPECIAL[np.isfinite(SPECIAL)].copy()], lambda x: x.to(torch.int32), "x:to('int32')", 0)

# ---- more reductions ------------------------------------------------------------------------

def values_indices(r):
    return (r.values, r.indices + 1)


case("prod_all", [f32(2, 3, lo=0.5, hi=1.5)], torch.prod, "x:prod()", 1e-6)
case("prod_dim", [f64(2, 3, 4)], lambda x: torch.prod(x, 2, keepdim=True), "x:prod(3, true)", 1e-12)
case("prod_i32", [i32(5, lo=-3, hi=4)], torch.prod, "x:prod()", 0)
case("prod_empty", [np.zeros((2, 0), dtype=np.float32)], lambda x: torch.prod(x, 1), "x:prod(2)", 0)
case("min_all_nan", [SPECIAL], torch.min, "x:min()", 0)
case("min_all_i64", [i64(6)], torch.min, "x:min()", 0)
case("min_dim", [f32(3, 4)], lambda x: values_indices(torch.min(x, 0)), "x:min(1)", 0)
case("min_dim_ties", [np.array([[2, 1, 1], [0, 0, 5]], dtype=np.int32)],
     lambda x: values_indices(torch.min(x, 1, keepdim=True)), "x:min(2, true)", 0)
case("argmin_all", [f32(3, 4)], lambda x: torch.argmin(x) + 1, "x:argmin()", 0)
case("argmin_dim", [f64(3, 4)], lambda x: torch.argmin(x, 1) + 1, "x:argmin(-1)", 0)
case("var_all", [f32(3, 4)], torch.var, "x:var()", 1e-5)
case("var_dim_biased", [f64(3, 4)], lambda x: torch.var(x, 1, unbiased=False, keepdim=True),
     "x:var(2, false, true)", 1e-12)
case("var_one", [f32(1)], torch.var, "x:var()", 0)
case("std_dim", [f32(4, 3)], lambda x: torch.std(x, 0), "x:std(1)", 1e-5)
case("logsumexp_dim", [f32(3, 4)], lambda x: torch.logsumexp(x, 1), "x:logsumexp(2)", 1e-6)
case("logsumexp_all", [f64(2, 3) * 100], lambda x: torch.logsumexp(x, (0, 1)), "x:logsumexp()", 1e-12)
case("logsumexp_inf", [np.array([[1, -np.inf], [-np.inf, -np.inf], [np.inf, 0]], dtype=np.float32)],
     lambda x: torch.logsumexp(x, 1), "x:logsumexp(2)", 1e-6)
case("norm_2", [f32(3, 4)], torch.norm, "x:norm()", 1e-6)
case("norm_1_dim", [f64(3, 4)], lambda x: torch.norm(x, 1, 1), "x:norm(1, 2)", 1e-12)
case("norm_inf", [f32(3, 4)], lambda x: torch.norm(x, float("inf"), 0, keepdim=True),
     "x:norm(math.huge, 1, true)", 0)
case("norm_3", [f32(5)], lambda x: torch.norm(x, 3), "x:norm(3)", 1e-6)
case("norm_0", [np.array([0, 1.5, 0, -2], dtype=np.float32)], lambda x: torch.norm(x, 0), "x:norm(0)", 0)
case("all_any_dim", [bools(3, 4)], lambda x: (torch.all(x, 1), torch.any(x, 0)),
     "x:all(2), x:any(1)", 0)
case("all_any_f32", [np.array([0.5, 0, np.nan], dtype=np.float32)], lambda x: (torch.all(x), torch.any(x)),
     "x:all(), x:any()", 0)
case("all_any_empty", [np.zeros((0,), dtype=np.int64)], lambda x: (torch.all(x), torch.any(x)),
     "x:all(), x:any()", 0)
case("cumsum", [f32(3, 4)], lambda x: torch.cumsum(x, 1), "x:cumsum(2)", 1e-6)
case("cumsum_i32", [i32(3, 4)], lambda x: torch.cumsum(x, 0), "x:cumsum(1)", 0)
case("cumsum_bool", [bools(6)], lambda x: torch.cumsum(x, 0), "x:cumsum(1)", 0)

# ---- convolution and pooling ------------------------------------------------------------------

F = torch.nn.functional


def conv_case(name, xs, ws, stride, padding, dilation, groups, bias=True, dt=np.float32, tol=1e-5):
    """conv2d and its two gradients (from torch.nn.grad) for one geometry."""
    mk = f32 if dt == np.float32 else f64
    x, w = mk(*xs), mk(*ws)
    args = (stride, padding, dilation, groups)
    lua = "{%d, %d}, {%d, %d}, {%d, %d}, %d" % (*stride, *padding, *dilation, groups)
    if bias:
        b = mk(ws[0])
        case(name, [x, w, b], lambda x, w, b: F.conv2d(x, w, b, *args),
             "ltc.conv2d(x, y, z, %s)" % lua.replace("}, {", "}, {"), tol)
    else:
        case(name, [x, w], lambda x, w: F.conv2d(x, w, None, *args),
             "x:conv2d(y, nil, {%d, %d}, {%d, %d}, {%d, %d}, %d)" % (*stride, *padding, *dilation, groups), tol)
    out = F.conv2d(torch.from_numpy(x), torch.from_numpy(w), None, *args)
    g = mk(*out.shape)
    size = "{" + ", ".join(str(v) for v in xs) + "}"
    wsize = "{" + ", ".join(str(v) for v in ws) + "}"
    ub = len(xs) == 3  # torch.nn.grad wants a batch: add one and take it off
    bx = [1] + list(xs) if ub else list(xs)
    case(name + "_grad_input", [g, w],
         lambda g, w: torch.nn.grad.conv2d_input(bx, w, g[None] if ub else g, *args)[0 if ub else slice(None)],
         "ltc.conv2d_backward_input(x, y, %s, %s)" % (size, lua), tol)
    case(name + "_grad_weight", [g, x],
         lambda g, x: torch.nn.grad.conv2d_weight(x[None] if ub else x, list(ws), g[None] if ub else g, *args),
         "ltc.conv2d_backward_weight(x, y, %s, %s)" % (wsize, lua), tol)


conv_case("conv2d_basic", (2, 3, 7, 6), (4, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1)
conv_case("conv2d_stride_pad_dil", (2, 3, 9, 8), (4, 3, 3, 2), (2, 1), (1, 2), (1, 2), 1)
conv_case("conv2d_groups", (1, 4, 6, 6), (6, 2, 3, 3), (2, 2), (1, 1), (1, 1), 2, bias=False)
conv_case("conv2d_1x1", (2, 5, 4, 3), (3, 5, 1, 1), (1, 1), (0, 0), (1, 1), 1, dt=np.float64, tol=1e-12)
conv_case("conv2d_unbatched", (3, 5, 5), (2, 3, 2, 2), (1, 1), (1, 1), (1, 1), 1)
case("conv2d_empty_batch", [np.zeros((0, 3, 5, 5), dtype=np.float32), f32(2, 3, 3, 3)],
     lambda x, w: F.conv2d(x, w), "x:conv2d(y)", 0)
case("conv2d_defaults", [f32(1, 2, 5, 5), f32(3, 2, 3, 3), f32(3)],
     lambda x, w, b: F.conv2d(x, w, b, 1, 1), "x:conv2d(y, z, 1, 1)", 1e-5)


def pool_case(name, x, lua, fn, grad=True, tol=1e-6):
    """A pooling op and its gradient (max_pool2d_backward / avg_pool2d_backward)."""
    case(name, [x], fn, "x:%s" % lua, tol)
    if not grad:
        return
    xt = torch.from_numpy(x).requires_grad_()
    out = fn(xt)
    g = (f32 if x.dtype == np.float32 else f64)(*out.shape)
    op = lua.split("(")[0]
    args = lua[len(op) + 1:-1]

    def back(g, x):
        xt = x.clone().requires_grad_()
        (gx,) = torch.autograd.grad(fn(xt), xt, g)
        return gx
    case(name + "_grad", [g, x], back, "ltc.%s_backward(x, y, %s)" % (op, args), tol)


pool_case("max_pool2d_2x2", f32(2, 3, 6, 7), "max_pool2d({2, 2}, {2, 2}, {0, 0}, {1, 1}, false)",
          lambda x: F.max_pool2d(x, 2, 2))
pool_case("max_pool2d_pad_ceil", f32(1, 2, 7, 7), "max_pool2d({3, 3}, {2, 2}, {1, 1}, {1, 1}, true)",
          lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True))
pool_case("max_pool2d_dilated", f64(2, 1, 8, 6), "max_pool2d({2, 3}, {1, 2}, {1, 0}, {2, 1}, false)",
          lambda x: F.max_pool2d(x, (2, 3), (1, 2), (1, 0), (2, 1)), tol=1e-12)
pool_case("max_pool2d_overlap", np.array([[[[1, 5, 5, 2], [5, 0, 3, 5], [2, 2, 9, 1]]]], dtype=np.float32),
          "max_pool2d({2, 2}, {1, 1}, {0, 0}, {1, 1}, false)", lambda x: F.max_pool2d(x, 2, 1))
case("max_pool2d_nan", [np.array([[[1, np.nan, 3, 4], [5, 6, 7, 8]]], dtype=np.float32)],
     lambda x: F.max_pool2d(x, 2), "x:max_pool2d(2)", 0)
case("max_pool2d_lua_defaults", [f32(1, 1, 5, 5)], lambda x: F.max_pool2d(x, 2), "ltc.max_pool2d(x, 2)", 0)
pool_case("avg_pool2d_2x2", f32(2, 3, 6, 7), "avg_pool2d({2, 2}, {2, 2}, {0, 0}, false, true)",
          lambda x: F.avg_pool2d(x, 2, 2))
pool_case("avg_pool2d_pad", f32(1, 2, 5, 6), "avg_pool2d({3, 3}, {2, 2}, {1, 1}, false, true)",
          lambda x: F.avg_pool2d(x, 3, 2, 1))
pool_case("avg_pool2d_pad_nocount_ceil", f64(1, 2, 5, 6), "avg_pool2d({3, 2}, {2, 2}, {1, 1}, true, false)",
          lambda x: F.avg_pool2d(x, (3, 2), 2, 1, ceil_mode=True, count_include_pad=False), tol=1e-12)
case("avg_pool2d_unbatched", [f32(2, 4, 4)], lambda x: F.avg_pool2d(x, 2), "x:avg_pool2d(2)", 1e-6)

# ---- more shape ops -------------------------------------------------------------------------------

case("permute", [f32(2, 3, 4)], lambda x: x.permute(2, 0, 1), "x:permute(3, 1, 2)", 0)
case("permute_neg_i64", [i64(2, 3, 4)], lambda x: x.permute(1, 2, 0), "x:permute(-2, -1, 1)", 0)
case("permute_of_transpose", [f32(3, 4, 5)], lambda x: x.transpose(0, 2).permute(1, 0, 2) + 1,
     "x:transpose(1, 3):permute(2, 1, 3) + 1", 0)
case("unsqueeze", [f32(2, 3)], lambda x: x.unsqueeze(1), "x:unsqueeze(2)", 0)
case("unsqueeze_last", [i32(2, 3)], lambda x: x.unsqueeze(-1), "x:unsqueeze(-1)", 0)
case("unsqueeze_0d", [np.array(3.5, dtype=np.float64)], lambda x: x.unsqueeze(0), "x:unsqueeze(1)", 0)
case("squeeze_all", [f32(1, 3, 1, 2)], lambda x: x.squeeze(), "x:squeeze()", 0)
case("squeeze_dim", [f32(1, 3, 1, 2)], lambda x: (x.squeeze(2), x.squeeze(1)), "x:squeeze(3), x:squeeze(2)", 0)
case("flatten_all", [f32(2, 3, 4)], lambda x: x.flatten(), "x:flatten()", 0)
case("flatten_mid", [bools(2, 3, 4, 2)], lambda x: x.flatten(1, 2), "x:flatten(2, 3)", 0)
case("flatten_0d", [np.array(2, dtype=np.int64)], lambda x: x.flatten(), "x:flatten()", 0)
case("expand", [f32(3, 1)], lambda x: x.expand(2, 3, 4), "x:expand(2, 3, 4)", 0)
case("expand_keep", [i64(1, 4)], lambda x: x.expand(3, -1), "x:expand(3, -1)", 0)
case("expand_as", [f32(4), f32(2, 4)], lambda x, y: x.expand_as(y) * y, "x:expand_as(y) * y", 1e-6)
case("cat_dim1", [f32(2, 3), f32(1, 3)], lambda x, y: torch.cat([x, y]), "ltc.cat({x, y})", 0)
case("cat_dim2_three", [f32(2, 1), f32(2, 3), f32(2, 2)], lambda x, y, z: torch.cat([x, y, z], 1),
     "ltc.cat({x, y, z}, 2)", 0)
case("cat_neg_dim_i32", [i32(2, 2, 2), i32(2, 2, 3)], lambda x, y: torch.cat([x, y], -1), "ltc.cat({x, y}, -1)", 0)
case("cat_skip_empty", [np.zeros((0,), dtype=np.float32), f32(2, 3)], lambda x, y: torch.cat([x, y, x]),
     "ltc.cat({x, y, x})", 0)
case("cat_zero_size", [np.zeros((2, 0), dtype=np.float32), f32(2, 3)], lambda x, y: torch.cat([x, y], 1),
     "ltc.cat({x, y}, 2)", 0)
case("stack", [f32(2, 3), f32(2, 3)], lambda x, y: torch.stack([x, y]), "ltc.stack({x, y})", 0)
case("stack_last", [i64(2, 3), i64(2, 3)], lambda x, y: torch.stack([x, y, x], -1), "ltc.stack({x, y, x}, -1)", 0)
case("stack_0d", [np.array(1.5, dtype=np.float32), np.array(2.5, dtype=np.float32)],
     lambda x, y: torch.stack([x, y]), "ltc.stack({x, y})", 0)
case("repeat", [f32(2, 3)], lambda x: x.repeat(2, 1, 3), "x:repeatTensor(2, 1, 3)", 0)
case("repeat_table", [bools(3)], lambda x: x.repeat(2, 2), "x:repeatTensor({2, 2})", 0)
case("repeat_zero", [f32(2, 3)], lambda x: x.repeat(0, 2), "ltc['repeat'](x, {0, 2})", 0)
case("flip", [f32(2, 3, 4)], lambda x: x.flip(0, 2), "x:flip({1, 3})", 0)
case("flip_neg_i32", [i32(3, 4)], lambda x: x.flip(-1), "x:flip({-1})", 0)
case("flip_none", [f32(3)], lambda x: x.flip([]), "x:flip({})", 0)
case("split_size", [f32(5, 2)], lambda x: torch.split(x, 2), "table.unpack(x:split(2))", 0)
case("split_sizes", [f32(2, 6)], lambda x: torch.split(x, [1, 3, 2], 1), "table.unpack(x:split({1, 3, 2}, 2))", 0)
case("chunk", [f32(7, 2)], lambda x: torch.chunk(x, 3), "table.unpack(x:chunk(3))", 0)
case("chunk_fewer", [i64(2, 6)], lambda x: torch.chunk(x, 4, -1), "table.unpack(x:chunk(4, -1))", 0)

# ---- more linear algebra ----------------------------------------------------------------------

case("mm", [f32(3, 4), f32(4, 2)], torch.mm, "x:mm(y)", 1e-5)
case("mm_f64_transposed", [f64(4, 3), f64(2, 4)], lambda x, y: torch.mm(x.t(), y.t()), "x:t():mm(y:t())", 1e-12)
case("mm_empty_inner", [np.zeros((2, 0), dtype=np.float32), np.zeros((0, 3), dtype=np.float32)], torch.mm,
     "ltc.mm(x, y)", 0)
case("bmm", [f32(2, 3, 4), f32(2, 4, 5)], torch.bmm, "x:bmm(y)", 1e-5)
case("dot", [f32(7), f32(7)], torch.dot, "x:dot(y)", 1e-5)
case("dot_f64", [f64(5), f64(5)], torch.dot, "ltc.dot(x, y)", 1e-12)
case("outer", [f32(3), f32(4)], torch.outer, "x:outer(y)", 1e-6)
case("outer_f64_narrow", [f64(6), f64(2)], lambda x, y: torch.outer(x[1:4], y), "x:narrow(1, 2, 3):outer(y)", 1e-12)

# ---- masking, scattering, more nn functions and creation ops -----------------------------------

case("masked_fill", [f32(2, 3), bools(2, 3)], lambda x, m: x.masked_fill(m, -1.5),
     "x:masked_fill(y, -1.5)", 0)
case("masked_fill_bcast", [f32(2, 3), bools(3)], lambda x, m: x.masked_fill(m, 2), "x:masked_fill(y, 2)", 0)
case("masked_fill_i64_float", [i64(5), bools(5)], lambda x, m: x.masked_fill(m, 2.5),
     "x:masked_fill(y, 2.5)", 0)
case("masked_fill_0d_tensor", [f64(4), bools(4), np.array(3.25, dtype=np.float32)],
     lambda x, m, v: x.masked_fill(m, v), "ltc.masked_fill(x, y, z)", 0)
case("masked_fill_bool", [bools(6), bools(6)], lambda x, m: x.masked_fill(m, True), "x:masked_fill(y, 1)", 0)
case("masked_fill_empty", [np.zeros((0, 3), dtype=np.float32), bools(3)],
     lambda x, m: x.masked_fill(m, 1.0), "x:masked_fill(y, 1)", 0)
SCATTER_IDX = np.array([[1, 2, 3, 1], [3, 1, 2, 2]], dtype=np.int64)  # 1-based, no repeats per column
case("scatter_dim1", [f32(3, 4), SCATTER_IDX, f32(2, 5)],
     lambda x, i, s: torch.scatter(x, 0, i - 1, s), "x:scatter(1, y, z)", 0)
case("scatter_dim2_i32", [i32(2, 4), np.array([[4, 1], [2, 3]], dtype=np.int32), i32(2, 2)],
     lambda x, i, s: torch.scatter(x, 1, i.long() - 1, s), "x:scatter(-1, y, z)", 0)
case("scatter_value", [f64(2, 3), np.array([[3], [1]], dtype=np.int64)],
     lambda x, i: torch.scatter(x, 1, i - 1, 4.0), "x:scatter(2, y, 4)", 0)
case("masked_select", [f32(3, 4), bools(3, 4)], torch.masked_select, "x:masked_select(y)", 0)
case("masked_select_bcast", [i64(2, 3), bools(3)], torch.masked_select, "ltc.masked_select(x, y)", 0)
case("masked_select_none", [f32(4), np.zeros(4, dtype=np.bool_)], torch.masked_select, "x:masked_select(y)", 0)
case("nonzero", [rng.integers(-1, 2, size=(3, 4)).astype(np.int64)], lambda x: torch.nonzero(x) + 1,
     "x:nonzero()", 0)
case("nonzero_bool_3d", [bools(2, 2, 3)], lambda x: torch.nonzero(x) + 1, "x:nonzero()", 0)
case("nonzero_f32_1d", [np.array([0, 1.5, -0.0, np.nan, 0], dtype=np.float32)],
     lambda x: torch.nonzero(x) + 1, "x:nonzero()", 0)
case("nonzero_0d", [np.array(3.0, dtype=np.float32)], lambda x: torch.nonzero(x) + 1, "x:nonzero()", 0)
case("nonzero_empty", [np.zeros((0, 3), dtype=np.float32)], lambda x: torch.nonzero(x) + 1, "x:nonzero()", 0)
case("mse_loss_mean", [f32(3, 4), f32(3, 4)], F.mse_loss, "x:mse_loss(y)", 1e-6)
case("mse_loss_sum_bcast", [f64(2, 3), f64(3)], lambda x, y: F.mse_loss(x, y.expand(2, 3), reduction="sum"),
     "ltc.mse_loss(x, y, 2)", 1e-12)
case("mse_loss_none", [f32(2, 3), f32(2, 3)], lambda x, y: F.mse_loss(x, y, reduction="none"),
     "x:mse_loss(y, 0)", 1e-6)
case("mse_loss_empty", [np.zeros((0,), dtype=np.float32), np.zeros((0,), dtype=np.float32)],
     F.mse_loss, "x:mse_loss(y)", 0)
case("embedding", [f32(5, 3), np.array([[5, 1], [2, 5]], dtype=np.int64)],
     lambda w, i: F.embedding(i - 1, w), "ltc.embedding(x, y)", 0)
case("embedding_i32_1d", [f64(4, 2), np.array([3, 3, 1], dtype=np.int32)],
     lambda w, i: F.embedding(i.long() - 1, w), "ltc.embedding(x, y)", 0)
case("layer_norm", [f32(2, 3, 4), f32(4), f32(4)], lambda x, w, b: F.layer_norm(x, (4,), w, b),
     "ltc.layer_norm(x, 4, y, z)", 1e-5)
case("layer_norm_2d_noaffine", [f64(2, 3, 4)], lambda x: F.layer_norm(x, (3, 4), eps=1e-3),
     "ltc.layer_norm(x, {3, 4}, nil, nil, 1e-3)", 1e-12)
case("batch_norm_eval", [f32(4, 3, 2, 2), f32(3), f32(3, lo=0.5, hi=2), f32(3)],
     lambda x, m, v, w: F.batch_norm(x, m, v, w), "ltc.batch_norm(x, y, z, w)", 1e-5)


def batch_norm_train(x, m, v):
    y = F.batch_norm(x, m, v, training=True, momentum=0.2)
    return y, m, v


case("batch_norm_train", [f64(4, 3, 5), f64(3), f64(3, lo=0.5, hi=2)], batch_norm_train,
     "ltc.batch_norm(x, y, z, nil, nil, true, 0.2), y, z", 1e-12)
case("batch_norm_train_2d", [f32(6, 2), f32(2), f32(2, lo=0.5, hi=2)], batch_norm_train,
     "ltc.batch_norm(x, y, z, nil, nil, true, 0.2), y, z", 1e-5)
case("linspace", [], lambda: torch.linspace(-1, 2, 7), "ltc.linspace(-1, 2, 7)", 1e-6)
case("linspace_one", [], lambda: torch.linspace(3, 5, 1), "ltc.linspace(3, 5, 1)", 0)
case("linspace_empty", [], lambda: torch.linspace(3, 5, 0), "ltc.linspace(3, 5, 0)", 0)
case("linspace_f64_down", [], lambda: torch.linspace(3, -2, 9, dtype=torch.float64),
     "ltc.linspace(3, -2, 9, 'float64')", 1e-15)
case("linspace_i64", [], lambda: torch.linspace(0, 10, 4, dtype=torch.int64),
     "ltc.linspace(0, 10, 4, 'int64')", 0)
case("eye", [], lambda: torch.eye(3), "ltc.eye(3)", 0)
case("eye_rect_i64", [], lambda: torch.eye(2, 4, dtype=torch.int64), "ltc.eye(2, 4, 'int64')", 0)
case("eye_bool_tall", [], lambda: torch.eye(4, 2, dtype=torch.bool), "ltc.eye(4, 2, 'bool')", 0)
case("eye_empty", [], lambda: torch.eye(0), "ltc.eye(0)", 0)
case("empty_is_zeros", [], lambda: torch.zeros(2, 3, dtype=torch.int32), "ltc.empty(2, 3, 'int32')", 0)
case("clone", [i32(2, 3)], torch.clone, "x:clone()", 0)
case("contiguous_of_transpose", [f32(3, 4)], lambda x: x.t().contiguous(), "x:t():contiguous()", 0)
case("zeros_like", [i32(2, 3)], torch.zeros_like, "ltc.zeros_like(x)", 0)
case("ones_like_dtype", [f32(3)], lambda x: torch.ones_like(x, dtype=torch.float64),
     "ltc.ones_like(x, 'float64')", 0)
case("full_like", [i64(2, 2)], lambda x: torch.full_like(x, 7), "ltc.full_like(x, 7)", 0)
case("empty_like", [f64(2, 0)], torch.zeros_like, "ltc.empty_like(x)", 0)

# ---- ops that only had specs on one backend, or gradient checks ----------------------------------

case("arange_int", [], lambda: torch.arange(-3, 7, 2), "ltc.arange(-3, 7, 2)", 0)
case("arange_float", [], lambda: torch.arange(0, 1, 0.25), "ltc.arange(0, 1, 0.25)", 0)
case("arange_f64_down", [], lambda: torch.arange(5, 2, -0.5, dtype=torch.float64),
     "ltc.arange(5, 2, -0.5, 'float64')", 0)
case("view", [f32(2, 6)], lambda x: x.view(3, 4), "x:view(3, 4)", 0)
case("reshape_infer", [i64(2, 3, 2)], lambda x: x.reshape(-1, 4), "x:reshape({-1, 4})", 0)
case("reshape_of_transpose", [f32(3, 4)], lambda x: x.t().reshape(12), "x:t():reshape({12})", 0)
case("broadcast_to", [f32(3, 1)], lambda x: x.broadcast_to(2, 3, 4), "x:broadcast_to({2, 3, 4})", 0)
case("narrow_scatter", [f32(3, 5), f32(3, 2)],
     lambda x, s: torch.slice_scatter(x, s, dim=1, start=2, end=4, step=1), "x:narrow_scatter(y, 2, 3)", 0)
case("select_scatter", [i64(3, 4), i64(3)],
     lambda x, s: torch.select_scatter(x, s, 1, 3), "x:select_scatter(y, 2, -1)", 0)
case("gelu_backward", [f32(2, 5), f32(2, 5)], lambda g, x: torch.ops.aten.gelu_backward(g, x),
     "ltc.gelu_backward(x, y)", 1e-5)
case("gelu_backward_f64", [f64(6), f64(6)], lambda g, x: torch.ops.aten.gelu_backward(g, x),
     "ltc.gelu_backward(x, y)", 1e-12)


def write(cases=CASES, out=OUT, script="tools/gen_fixtures.py"):
    """Writes the cases' .npy files and manifest.lua into out (after removing its old .npy)."""
    OUT = out
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if f.endswith(".npy"):
            os.remove(os.path.join(OUT, f))
    lines = ["-- GENERATED by %s (PyTorch %s, NumPy %s); do not edit." %
             (script, torch.__version__, np.__version__),
             "-- Each case: the Lua call over inputs x, y, z, w and the .npy files of the",
             "-- inputs and of the expected outputs (relative to this folder); tol is relative.",
             "return {"]
    for name, inputs, fn, call, tol, _ in cases:
        ins = []
        for k, a in enumerate(inputs):
            f = "%s.%s.npy" % (name, "xyzw"[k])
            np.save(os.path.join(OUT, f), np.array(a, order="C"))
            ins.append(f)
        res = fn(*[torch.from_numpy(np.array(a)) for a in inputs])
        res = res if isinstance(res, tuple) else (res,)
        outs = []
        for k, r in enumerate(res):
            f = "%s.out%d.npy" % (name, k + 1)
            np.save(os.path.join(OUT, f), np.array(r.numpy(), order="C"))
            outs.append(f)
        q = lambda fs: "{" + ", ".join('"%s"' % f for f in fs) + "}"
        lua_call = '"' + call.replace("\\", "\\\\").replace('"', '\\"') + '"'
        lines.append('  {name = "%s", call = %s, tol = %g, inputs = %s, outputs = %s},' %
                     (name, lua_call, tol, q(ins), q(outs)))
    lines.append("}")
    with open(os.path.join(OUT, "manifest.lua"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("wrote %d cases to %s" % (len(cases), os.path.normpath(OUT)))


if __name__ == "__main__":
    write()
