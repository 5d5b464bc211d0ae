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

/* x ^ y for integers, exact and wrapping (square and multiply in uint64_t); a negative
 * exponent gives 1 for x == 1, +-1 for x == -1 and 0 otherwise (the integer part of the
 * true power, as PyTorch's integer pow of a tensor exponent). */
static inline uint64_t ltc_ipow(int64_t x, int64_t y) {
    if (y < 0) return x == 1 ? 1 : x == -1 ? ((y & 1) ? UINT64_MAX : 1) : 0;
    uint64_t r = 1, b = (uint64_t)x;
    for (uint64_t e = (uint64_t)y; e; e >>= 1, b *= b)
        if (e & 1) r *= b;
    return r;
}

#endif
