/* linear.c - CPU kernels of the fully connected layer ops over OpenBLAS gemm: linear
 * (self . weight^T + bias, the weight read transposed in place, no copy) and addmm. */
#include <string.h>

#include "elementwise.h"
#include "threads.h"

/* C[m,n] = alpha * A[m,k] . op(B) + beta * C, row-major; op(B) = B^T (B is [n,k]) when
 * `bt`, else B ([k,n]). */
static void gemm(ltc_dtype dt, bool bt, int64_t m, int64_t n, int64_t k, double alpha,
                 const void *A, const void *B, double beta, void *C) {
    ltc_cpu_gemm(dt, false, bt, m, n, k, alpha, A, k, B, bt ? k : n, beta, C, n);
}

/* linear(self [..., in], weight [out, in], bias [out]) and linear.nobias. */
static ltc_status linear(const ltc_kernel_args *a, bool bias) {
    const ltc_shape *s = &a->in_shapes[0], *w = &a->in_shapes[1];
    ltc_dtype dt = s->dtype;
    int64_t k = w->dims[1], n = w->dims[0], m = k ? ltc_shape_numel(s) / k : 0;
    if (!k) m = ltc_shape_numel(&a->out_shapes[0]) / (n ? n : 1);
    size_t es = ltc_dtype_size(dt), row = (size_t)n * es;
    char *y = a->out[0];
    if (m == 0 || n == 0) return LTC_OK;
    if (bias)
        for (int64_t i = 0; i < m; i++) memcpy(y + (size_t)i * row, a->in[2], row);
    else
        memset(y, 0, (size_t)m * row);
    if (k) gemm(dt, true, m, n, k, 1.0, a->in[0], a->in[1], 1.0, y);
    return LTC_OK;
}

ltc_status ltc_cpu_kernel_linear(const ltc_kernel_args *a) { return linear(a, true); }
ltc_status ltc_cpu_kernel_linear_nobias(const ltc_kernel_args *a) { return linear(a, false); }

/* addmm(self, mat1 [m,k], mat2 [k,n], beta, alpha): beta * self (broadcast to [m,n]) +
 * alpha * mat1 . mat2. With beta == 0 self is not read (NaN there does not propagate), as
 * in PyTorch. */
ltc_status ltc_cpu_kernel_addmm(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0], *m1 = &a->in_shapes[1], *m2 = &a->in_shapes[2];
    ltc_dtype dt = m1->dtype;
    double beta = a->attrs[0].f, alpha = a->attrs[1].f;
    int64_t m = m1->dims[0], k = m1->dims[1], n = m2->dims[1];
    int64_t rows = s->ndim == 2 ? s->dims[0] : 1, cols = s->ndim >= 1 ? s->dims[s->ndim - 1] : 1;
    int64_t sr = rows == 1 ? 0 : cols, sc = cols == 1 ? 0 : 1;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            int64_t o = i * n + j, p = i * sr + j * sc;
            if (dt == LTC_F32)
                ((float *)a->out[0])[o] = beta == 0 ? 0.0f : (float)beta * ((const float *)a->in[0])[p];
            else
                ((double *)a->out[0])[o] = beta == 0 ? 0.0 : beta * ((const double *)a->in[0])[p];
        }
    if (m && n && k) gemm(dt, false, m, n, k, alpha, a->in[1], a->in[2], 1.0, a->out[0]);
    return LTC_OK;
}
