/* linalg.c - CPU kernels of mm, bmm, dot and outer: each is a case of matmul (gemm.c, over
 * OpenBLAS sgemm/dgemm and sdot/ddot); outer is the product of an [n, 1] column and a
 * [1, m] row. */
#include "elementwise.h"

ltc_status ltc_cpu_kernel_matmul(const ltc_kernel_args *a); /* gemm.c */

/* mm(Tensor self, Tensor mat2), bmm(Tensor self, Tensor mat2), dot(Tensor self, Tensor other) */
ltc_status ltc_cpu_kernel_mm(const ltc_kernel_args *a) { return ltc_cpu_kernel_matmul(a); }
ltc_status ltc_cpu_kernel_bmm(const ltc_kernel_args *a) { return ltc_cpu_kernel_matmul(a); }
ltc_status ltc_cpu_kernel_dot(const ltc_kernel_args *a) { return ltc_cpu_kernel_matmul(a); }

/* outer(Tensor self, Tensor vec2): self as a column times vec2 as a row. */
ltc_status ltc_cpu_kernel_outer(const ltc_kernel_args *a) {
    ltc_shape in[2] = {a->in_shapes[0], a->in_shapes[1]};
    in[0].ndim = 2, in[0].dims[1] = 1;
    in[1].ndim = 2, in[1].dims[1] = in[1].dims[0], in[1].dims[0] = 1;
    ltc_kernel_args b = *a;
    b.in_shapes = in;
    return ltc_cpu_kernel_matmul(&b);
}
