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

#endif
