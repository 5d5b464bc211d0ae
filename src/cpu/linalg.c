/* linalg.c - CPU kernels of mm, bmm, dot and outer: each is a case of matmul (gemm.c, over
 * OpenBLAS sgemm/dgemm and sdot/ddot); outer is the product of an [n, 1] column and a
 * [1, m] row. And tril/triu, row copies. */
#include <string.h>

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

/* tril(Tensor self, int diagonal), triu(...): each row i of each matrix [m, n] keeps the
 * columns [0, i + diagonal] (tril) or [i + diagonal, n) (triu): one copy and two fills per row. */
static ltc_status triangle(const ltc_kernel_args *a, bool upper) {
    const ltc_shape *s = &a->in_shapes[0];
    const int64_t m = s->dims[s->ndim - 2], n = s->dims[s->ndim - 1];
    if (m * n == 0) return LTC_OK;
    const int64_t rows = ltc_shape_numel(s) / n;
    const size_t es = ltc_dtype_size(s->dtype);
    int64_t d = a->attrs[0].i; /* clamped, so i + d cannot overflow */
    d = d > n ? n : d < -m ? -m : d;
    const char *in = a->in[0];
    char *out = a->out[0];
    for (int64_t r = 0; r < rows; r++) {
        int64_t i = r % m, lo = upper ? i + d : 0, hi = upper ? n : i + d + 1;
        lo = lo < 0 ? 0 : lo > n ? n : lo;
        hi = hi < lo ? lo : hi > n ? n : hi;
        size_t row = (size_t)(r * n) * es;
        memset(out + row, 0, (size_t)lo * es);
        memcpy(out + row + (size_t)lo * es, in + row + (size_t)lo * es, (size_t)(hi - lo) * es);
        memset(out + row + (size_t)hi * es, 0, (size_t)(n - hi) * es);
    }
    return LTC_OK;
}

ltc_status ltc_cpu_kernel_tril(const ltc_kernel_args *a) { return triangle(a, false); }
ltc_status ltc_cpu_kernel_triu(const ltc_kernel_args *a) { return triangle(a, true); }
