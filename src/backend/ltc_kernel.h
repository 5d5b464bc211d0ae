/*
 * ltc_kernel.h - the calling convention of host kernels, shared by the CPU backend and
 * the reference backend. A kernel computes one IR node's outputs from its inputs; all
 * buffers are contiguous row-major with the dtypes and sizes of their shapes.
 *
 * Kernels never see IR nodes: the plan copies the op, attributes and shapes it needs.
 * Shapes were checked at trace time, so a kernel may trust them; it returns an error only
 * for data-dependent problems (an index out of range, say).
 */
#ifndef LTC_KERNEL_H
#define LTC_KERNEL_H

#include <math.h>
#include <stdint.h>

#include "ltc_ir.h"

typedef struct ltc_kernel_args {
    int op;                       /* ltc_op */
    const ltc_attr *attrs;        /* as in the node, schema order */
    int n_attrs;
    int n_in;
    const ltc_shape *in_shapes;   /* n_in */
    const void *const *in;        /* n_in buffers */
    int n_out;
    const ltc_shape *out_shapes;  /* n_out */
    void *const *out;             /* n_out buffers, written by the kernel */
    const void *ctx;              /* the step's own data (a fused step's group), or NULL */
} ltc_kernel_args;

typedef ltc_status (*ltc_kernel_fn)(const ltc_kernel_args *a);

/* Generated (gen/cpu_ops.c): the CPU backend's kernel for each op, NULL where the CPU
 * backend lowers nothing (the op then falls back to the reference backend). */
extern const ltc_kernel_fn ltc_cpu_kernels[];
/* Generated (gen/ref_ops.c): the reference backend's kernel for every op of ops.yaml. */
extern const ltc_kernel_fn ltc_ref_kernels[];

/* ---- integer arithmetic that wraps --------------------------------------------------------- */

/* Integer tensors wrap on overflow, as PyTorch's do (two's complement: int32 2^31-1 + 1 is
 * -2^31, -INT64_MIN is INT64_MIN). Signed overflow is undefined in C, so kernels compute in
 * the unsigned type of the same width and convert back (implementation-defined, modulo 2^N
 * in GCC and Clang). LTC_WRAP_U(x) is x as that unsigned type (int8_t bool bytes stay as
 * they are: their sums cannot overflow an int). Used by ops.yaml's `expr_int`, so both the
 * CPU and the reference backend's generated loops stay defined under UBSan. */
#define LTC_WRAP_U(x) \
    _Generic((x), int32_t: (uint32_t)(x), int64_t: (uint64_t)(x), default: (x))

/* Integer power b^e as PyTorch computes it for integer tensors (the `expr_int` of pow in
 * ops.yaml): exact, by squaring, wrapping around on overflow; for e < 0, 1 for b == 1, +-1
 * for b == -1 (by e's parity) and 0 otherwise (0 too: no division by zero). */
static inline int64_t ltc_ipow(int64_t b, int64_t e) {
    if (e < 0) return b == 1 ? 1 : b == -1 ? ((e & 1) ? -1 : 1) : 0;
    uint64_t r = 1, x = (uint64_t)b;
    while (e) {
        if (e & 1) r *= x;
        x *= x;
        e >>= 1;
    }
    return (int64_t)r;
}

/* clamp of an integer x to [lo, hi] (the `expr_int` of clamp in ops.yaml): the bounds are the
 * op's float attributes, NaN when absent; they are made integers (ceil / floor, saturated at
 * int64's range) and compared with x as integers, so x itself never goes through a double
 * (int64 values past 2^53 keep every bit). lo > hi gives hi, as PyTorch's clamp. */
static inline int64_t ltc_clamp_int(int64_t x, double lo, double hi) {
    if (lo == lo) {
        int64_t l = lo <= -9223372036854775808.0 ? INT64_MIN
                  : lo >= 9223372036854775808.0  ? INT64_MAX
                                                 : (int64_t)ceil(lo);
        if (x < l) x = l;
    }
    if (hi == hi) {
        int64_t h = hi <= -9223372036854775808.0 ? INT64_MIN
                  : hi >= 9223372036854775808.0  ? INT64_MAX
                                                 : (int64_t)floor(hi);
        if (x > h) x = h;
    }
    return x;
}

/* arange into an integer dtype: element i of start + i * step, in integer arithmetic when
 * start and step are integers (a double holds start + i * step exactly only up to 2^53, so
 * arange(2^53 + 2, 2^53 + 4) would give 2^53 + 4 twice), else through the double, converted
 * (PyTorch's arange(0.5, 3, dtype=int64) gives 0, 1, 2). Wraps as integer tensors do. */
static inline int64_t ltc_arange_int(double start, double step, int64_t i) {
    if (start == floor(start) && step == floor(step) && fabs(start) < 9.2e18 && fabs(step) < 9.2e18)
        return (int64_t)((uint64_t)(int64_t)start + (uint64_t)i * (uint64_t)(int64_t)step);
    return (int64_t)(start + (double)i * step);
}

/* ---- integer // and % by zero ----------------------------------------------------------------
 * They raise, as in PyTorch (ZeroDivisionError), where the generated loops would give 0. Every
 * backend that runs an integer division (ops.yaml's `int_div: true`: floor_divide, remainder,
 * div_trunc) on the host calls this before the kernel
 * (the CPU plan, the OpenCL backend's host steps): LTC_OK, or the error naming the op. */
static inline bool ltc_kernel_has_zero_(const void *buf, const ltc_shape *s) {
    int64_t n = ltc_shape_numel(s);
    switch (s->dtype) {
    case LTC_I32:
        for (int64_t i = 0; i < n; i++)
            if (((const int32_t *)buf)[i] == 0) return true;
        return false;
    case LTC_I64:
        for (int64_t i = 0; i < n; i++)
            if (((const int64_t *)buf)[i] == 0) return true;
        return false;
    case LTC_BOOL:
        for (int64_t i = 0; i < n; i++)
            if (((const uint8_t *)buf)[i] == 0) return true;
        return false;
    default:
        return false; /* a float divisor makes a float result: not checked here */
    }
}

static inline ltc_status ltc_kernel_int_div_check(const ltc_kernel_args *a) {
    if (!ltc_op_int_div(a->op) || (a->out_shapes[0].dtype != LTC_I32 && a->out_shapes[0].dtype != LTC_I64) ||
        ltc_shape_numel(&a->out_shapes[0]) == 0 || !ltc_kernel_has_zero_(a->in[1], &a->in_shapes[1]))
        return LTC_OK;
    /* int32 is also the compute dtype of uint8, int8 and int16 (trace.c): the kernel cannot
     * tell the tensor's own dtype, so the message names the integer dtypes, not int32 */
    return ltc_errorf(LTC_ERR_ARG, "%s: integer %s by zero (// 0 and %% 0 of an integer tensor, "
                      "%s, raise, as PyTorch's ZeroDivisionError; use a float tensor for inf/nan)",
                      ltc_op_name(a->op), a->op == LTC_OP_REMAINDER ? "modulo" : "division",
                      a->out_shapes[0].dtype == LTC_I64 ? "int64"
                                                        : "uint8, int8, int16 or int32");
}


#endif
