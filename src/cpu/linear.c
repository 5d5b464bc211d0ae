/* linear.c - CPU kernels of the fully connected layer ops over OpenBLAS gemm: linear
 * (self . weight^T + bias, the weight read transposed in place, no copy), its backward
 * (both gemms and the bias sums in one kernel) and addmm. */
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

/* linear_backward's work: with rows r = the leading dims' product, dX[r, in] = dY[r, out] .
 * W[out, in], dW[out, in] = dY^T . X[r, in], db[out] = dY summed over rows. Task t < 2:
 * half t of dX's rows; t >= 2: half t - 2 of dW's rows and of db. */
typedef struct {
    const ltc_kernel_args *a;
    int64_t rows, in, out;
    int halves;        /* 2 when the tasks are shared out, 1 for one task of each */
    bool skip_dx, skip_dw, skip_db; /* results nothing reads (NULL: the plan's fold): unwritten */
} lb_ctx;

static void lb_bias(const lb_ctx *c, int64_t o0, int64_t o1) {
    const ltc_kernel_args *a = c->a;
    if (c->skip_db) return;
    if (a->in_shapes[0].dtype == LTC_F32) {
        const float *g = a->in[0];
        float *db = a->out[2];
        for (int64_t o = o0; o < o1; o++) db[o] = 0;
        for (int64_t r = 0; r < c->rows; r++) {
            const float *gr = g + r * c->out;
            LTC_SIMD for (int64_t o = o0; o < o1; o++) db[o] += gr[o];
        }
    } else {
        const double *g = a->in[0];
        double *db = a->out[2];
        for (int64_t o = o0; o < o1; o++) db[o] = 0;
        for (int64_t r = 0; r < c->rows; r++) {
            const double *gr = g + r * c->out;
            LTC_SIMD for (int64_t o = o0; o < o1; o++) db[o] += gr[o];
        }
    }
}

static void lb_task(void *p, int64_t lo, int64_t hi, int tid) {
    (void)tid;
    const lb_ctx *c = p;
    const ltc_kernel_args *a = c->a;
    ltc_dtype dt = a->in_shapes[0].dtype;
    size_t es = ltc_dtype_size(dt);
    for (int64_t t = lo; t < hi; t++) {
        int64_t h = t % 2, part = c->halves == 2 ? h : 0;
        if (t >= 2 * c->halves) continue;
        if (t / c->halves == 0) { /* dX rows [r0, r1) */
            if (c->skip_dx) continue;
            int64_t r0 = c->rows * part / c->halves, r1 = c->rows * (part + 1) / c->halves;
            if (r1 > r0)
                ltc_cpu_gemm(dt, false, false, r1 - r0, c->in, c->out, 1.0,
                             (const char *)a->in[0] + (size_t)(r0 * c->out) * es, c->out,
                             a->in[2], c->in, 0.0, (char *)a->out[0] + (size_t)(r0 * c->in) * es,
                             c->in);
        } else { /* dW rows (and db entries) [o0, o1) */
            int64_t o0 = c->out * part / c->halves, o1 = c->out * (part + 1) / c->halves;
            if (o1 > o0 && !c->skip_dw)
                ltc_cpu_gemm(dt, true, false, o1 - o0, c->in, c->rows, 1.0,
                             (const char *)a->in[0] + (size_t)o0 * es, c->out, a->in[1], c->in,
                             0.0, (char *)a->out[1] + (size_t)(o0 * c->in) * es, c->in);
            lb_bias(c, o0, o1);
        }
    }
}

/* linear_backward(grad_output [..., out], self [..., in], weight [out, in]) -> (grad_input,
 * grad_weight, grad_bias). A result the kernel gets NULL for is one nothing reads (the
 * plan's fold, cpu_backend.yaml's skips_unread_outputs): it is left unwritten, as PyTorch's
 * output_mask leaves it. With worker threads and a product of at least LTC_GEMM_SMALL
 * multiply-adds, the two gemms go as four independent halves to the threads, each on one
 * OpenBLAS thread: two cores run two single-threaded gemms at nearly twice one's speed, where
 * one gemm threaded over both got 1.2-1.6x on this machine. Otherwise (and with
 * LTC_DETERMINISTIC, whose bits must not depend on the thread count) one gemm after the other
 * (each as ltc_cpu_gemm threads it). */
ltc_status ltc_cpu_kernel_linear_backward(const ltc_kernel_args *a) {
    const ltc_shape *w = &a->in_shapes[2];
    int64_t out = w->dims[0], in = w->dims[1];
    int64_t rows = out ? ltc_shape_numel(&a->in_shapes[0]) / out : 0;
    bool split = ltc_cpu_threads() > 1 && rows * in * out >= LTC_GEMM_SMALL &&
                 !ltc_config_get_int("LTC_DETERMINISTIC");
    bool skip_dx = !a->out[0], skip_dw = !a->out[1], skip_db = !a->out[2];
    /* with one gemm skipped the other's halves alone do not pay for the split */
    split = split && !skip_dx && !skip_dw;
    lb_ctx c = {a, rows, in, out, split ? 2 : 1, skip_dx, skip_dw, skip_db};
    if (rows == 0 || in == 0 || out == 0) { /* empty products: zeros (the bias's sums) */
        if (!skip_dx) memset(a->out[0], 0, ltc_shape_nbytes(&a->out_shapes[0]));
        if (!skip_dw) memset(a->out[1], 0, ltc_shape_nbytes(&a->out_shapes[1]));
        if (out) lb_bias(&c, 0, out);
        return LTC_OK;
    }
    if (split) {
        ltc_cpu_blas_single(true);
        ltc_cpu_parallel_for(4, 1, lb_task, &c);
        ltc_cpu_blas_single(false);
    } else {
        lb_task(&c, 0, 2, 0);
    }
    return LTC_OK;
}

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
