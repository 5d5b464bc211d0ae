/* norm.c - CPU kernels of the normalisation and regularisation functions: layer_norm and
 * its backward, batch_norm and dropout. Floating dtypes; statistics accumulate in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "elementwise.h"
#include "ltc_rng.h"
#include "threads.h"

/* layer_norm of one row of n elements: mean and biased variance (two vectorized passes in
 * double), then (x - mean) * rstd * w + b in the element type. */
#define DEF_LN_ROW(NAME, T)                                                                    \
    LTC_EW_CLONES static void NAME(const T *x, const T *w, const T *b, T *y, int64_t n,        \
                                   double eps) {                                               \
        double mean = 0, var = 0;                                                              \
        _Pragma("omp simd reduction(+:mean)")                                                  \
        for (int64_t j = 0; j < n; j++) mean += x[j];                                          \
        mean /= (double)n;                                                                     \
        _Pragma("omp simd reduction(+:var)")                                                   \
        for (int64_t j = 0; j < n; j++) var += (x[j] - mean) * (x[j] - mean);                  \
        T m = (T)mean, r = (T)(1 / sqrt(var / (double)n + eps));                               \
        LTC_SIMD                                                                               \
        for (int64_t j = 0; j < n; j++) y[j] = (x[j] - m) * r * w[j] + b[j];                   \
    }
DEF_LN_ROW(ln_row_f32, float)
DEF_LN_ROW(ln_row_f64, double)

typedef struct {
    const ltc_kernel_args *a;
    int64_t n;
    double eps;
} ln_ctx;

/* Elements per chunk handed to a thread: a quarter of the elementwise kernels' 64K, as a
 * row's statistics, normalisation (and the backward's two sums) make several passes over it;
 * tiny_gpt's [1024, 128] rows (131K elements, 70 us forward and 145 us backward on one
 * thread) go to the threads in 8 chunks rather than staying on one in 2. */
#define LN_GRAIN 16384

static void ln_range(void *p, int64_t lo, int64_t hi, int tid) {
    (void)tid;
    const ln_ctx *c = p;
    const ltc_kernel_args *a = c->a;
    for (int64_t r = lo; r < hi; r++) {
        if (a->in_shapes[0].dtype == LTC_F32)
            ln_row_f32((const float *)a->in[0] + r * c->n, a->in[1], a->in[2],
                       (float *)a->out[0] + r * c->n, c->n, c->eps);
        else
            ln_row_f64((const double *)a->in[0] + r * c->n, a->in[1], a->in[2],
                       (double *)a->out[0] + r * c->n, c->n, c->eps);
    }
}

/* layer_norm(self, normalized_shape, weight, bias, eps): attrs normalized_shape, eps. Rows
 * are shared among the worker threads. */
ltc_status ltc_cpu_kernel_layer_norm(const ltc_kernel_args *a) {
    int64_t n = ltc_shape_numel(&a->in_shapes[1]);
    int64_t rows = n ? ltc_shape_numel(&a->in_shapes[0]) / n : 0;
    ln_ctx c = {a, n, a->attrs[1].f};
    if (rows) ltc_cpu_parallel_for(rows, LN_GRAIN / n + 1, ln_range, &c);
    return LTC_OK;
}

/* layer_norm_backward over rows [r0, r1) of n elements: dx per row, and this block's sums of
 * g * x^ and g into gw, gb (zeroed first). Statistics in double, as the forward's. */
#define DEF_LN_BWD_ROWS(NAME, T)                                                               \
    LTC_EW_CLONES static void NAME(const T *g, const T *x, const T *w, T *dx, T *gw, T *gb,    \
                                   int64_t r0, int64_t r1, int64_t n, double eps) {            \
        for (int64_t j = 0; j < n; j++) gw[j] = 0, gb[j] = 0;                                  \
        for (int64_t r = r0; r < r1; r++) {                                                    \
            const T *xr = x + r * n, *gr = g + r * n;                                          \
            T *dr = dx + r * n;                                                                \
            double mean = 0, var = 0, sa = 0, sb = 0;                                          \
            _Pragma("omp simd reduction(+:mean)")                                              \
            for (int64_t j = 0; j < n; j++) mean += xr[j];                                     \
            mean /= (double)n;                                                                 \
            _Pragma("omp simd reduction(+:var)")                                               \
            for (int64_t j = 0; j < n; j++) var += (xr[j] - mean) * (xr[j] - mean);            \
            T m = (T)mean, rs = (T)(1 / sqrt(var / (double)n + eps));                          \
            _Pragma("omp simd reduction(+:sa, sb)")                                            \
            for (int64_t j = 0; j < n; j++) {                                                  \
                T xh = (xr[j] - m) * rs, dxh = gr[j] * w[j];                                   \
                sa += dxh;                                                                     \
                sb += dxh * xh;                                                                \
                gw[j] += gr[j] * xh;                                                           \
                gb[j] += gr[j];                                                                \
            }                                                                                  \
            T a = (T)(sa / (double)n), b = (T)(sb / (double)n);                                \
            LTC_SIMD                                                                           \
            for (int64_t j = 0; j < n; j++)                                                    \
                dr[j] = rs * (gr[j] * w[j] - a - (xr[j] - m) * rs * b);                        \
        }                                                                                      \
    }
DEF_LN_BWD_ROWS(ln_bwd_f32, float)
DEF_LN_BWD_ROWS(ln_bwd_f64, double)

/* Rows per block of layer_norm_backward's weight and bias sums: a function of n alone, so
 * the sums (block by block, then the blocks in order) do not depend on the thread count. */
static int64_t ln_block_rows(int64_t n) { return n >= 4096 ? 1 : 4096 / n; }

typedef struct {
    const ltc_kernel_args *a;
    int64_t n, rows, per;
    double eps;
    void *part; /* [blocks, 2, n]: each block's sums of g * x^ and of g */
} ln_bwd_ctx;

static void ln_bwd_range(void *p, int64_t lo, int64_t hi, int tid) {
    (void)tid;
    const ln_bwd_ctx *c = p;
    const ltc_kernel_args *a = c->a;
    for (int64_t k = lo; k < hi; k++) {
        int64_t r0 = k * c->per, r1 = r0 + c->per < c->rows ? r0 + c->per : c->rows;
        if (a->in_shapes[0].dtype == LTC_F32) {
            float *pw = (float *)c->part + 2 * k * c->n;
            ln_bwd_f32(a->in[0], a->in[1], a->in[2], a->out[0], pw, pw + c->n, r0, r1, c->n,
                       c->eps);
        } else {
            double *pw = (double *)c->part + 2 * k * c->n;
            ln_bwd_f64(a->in[0], a->in[1], a->in[2], a->out[0], pw, pw + c->n, r0, r1, c->n,
                       c->eps);
        }
    }
}

/* The blocks' sums added in block order into gw and gb. */
#define LN_BWD_SUM(T)                                                                          \
    do {                                                                                       \
        const T *pp = c.part;                                                                  \
        T *gw = a->out[1], *gb = a->out[2];                                                    \
        for (int64_t j = 0; j < n; j++) gw[j] = 0, gb[j] = 0;                                  \
        for (int64_t k = 0; k < blocks; k++) {                                                 \
            const T *pw = pp + 2 * k * n, *pb = pw + n;                                        \
            LTC_SIMD for (int64_t j = 0; j < n; j++) gw[j] += pw[j], gb[j] += pb[j];           \
        }                                                                                      \
    } while (0)

/* layer_norm_backward(grad_output, self, normalized_shape, weight, eps) -> (grad_input,
 * grad_weight, grad_bias): blocks of rows shared among the worker threads, each with its own
 * partial weight and bias sums. */
ltc_status ltc_cpu_kernel_layer_norm_backward(const ltc_kernel_args *a) {
    int64_t n = ltc_shape_numel(&a->in_shapes[2]);
    int64_t rows = n ? ltc_shape_numel(&a->in_shapes[1]) / n : 0;
    size_t es = ltc_dtype_size(a->in_shapes[1].dtype);
    if (n == 0) return LTC_OK;
    int64_t per = ln_block_rows(n), blocks = (rows + per - 1) / per;
    ln_bwd_ctx c = {a, n, rows, per, a->attrs[1].f, NULL};
    if (blocks && !(c.part = malloc((size_t)(blocks * 2 * n) * es)))
        return ltc_errorf(LTC_ERR_NOMEM, "out of memory for %lld partial sums",
                          (long long)(blocks * 2 * n));
    if (blocks) ltc_cpu_parallel_for(blocks, LN_GRAIN / (per * n) + 1, ln_bwd_range, &c);
    if (a->in_shapes[1].dtype == LTC_F32) LN_BWD_SUM(float);
    else LN_BWD_SUM(double);
    free(c.part);
    return LTC_OK;
}

/* batch_norm per channel ch over outer x inner elements. */
#define BATCH_NORM(T)                                                                          \
    do {                                                                                       \
        const T *x = a->in[0], *rm = a->in[1], *rv = a->in[2], *w = a->in[3], *b = a->in[4];   \
        T *y = a->out[0];                                                                      \
        for (int64_t ch = 0; ch < c; ch++) {                                                   \
            double mean = rm[ch], var = rv[ch];                                                \
            if (training) {                                                                    \
                double m = (double)(outer * inner);                                            \
                mean = var = 0;                                                                \
                for (int64_t o = 0; o < outer; o++)                                            \
                    for (int64_t k = 0; k < inner; k++) mean += x[(o * c + ch) * inner + k];   \
                mean /= m;                                                                     \
                for (int64_t o = 0; o < outer; o++)                                            \
                    for (int64_t k = 0; k < inner; k++) {                                      \
                        double d = x[(o * c + ch) * inner + k] - mean;                         \
                        var += d * d;                                                          \
                    }                                                                          \
                var /= m;                                                                      \
            }                                                                                  \
            double scale = w[ch] / sqrt(var + eps), shift = b[ch] - mean * scale;              \
            for (int64_t o = 0; o < outer; o++) {                                              \
                const T *xr = x + (o * c + ch) * inner;                                        \
                T *yr = y + (o * c + ch) * inner;                                              \
                for (int64_t k = 0; k < inner; k++) yr[k] = (T)(xr[k] * scale + shift);        \
            }                                                                                  \
        }                                                                                      \
    } while (0)

/* batch_norm(self, running_mean, running_var, weight, bias, training, eps). */
ltc_status ltc_cpu_kernel_batch_norm(const ltc_kernel_args *a) {
    int64_t outer, c, inner;
    ltc_cpu_split_dim(&a->in_shapes[0], 1, &outer, &c, &inner);
    bool training = a->attrs[0].i != 0;
    double eps = a->attrs[1].f;
    if (a->in_shapes[0].dtype == LTC_F32) BATCH_NORM(float);
    else BATCH_NORM(double);
    return LTC_OK;
}

/* dropout(self, p, train): element i kept when the uniform draw i (in self's dtype) is
 * below 1 - p, then x * keep / (1 - p), as ltc.rand(...):lt(1 - p) would give; p = 1 gives
 * x * 0; a copy when not train. The generator state is the last input. */
ltc_status ltc_cpu_kernel_dropout(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0];
    const int64_t *st = a->in[a->n_in - 1];
    uint64_t seed = (uint64_t)st[0], offset = (uint64_t)st[1];
    double p = a->attrs[0].f;
    int64_t n = ltc_shape_numel(s);
    if (!a->attrs[1].i) {
        memcpy(a->out[0], a->in[0], ltc_shape_nbytes(s));
    } else if (s->dtype == LTC_F32) {
        const float *x = a->in[0];
        float *y = a->out[0], q = (float)(1 - p);
        for (int64_t i = 0; i < n; i++)
            y[i] = p == 1 ? x[i] * 0 : x[i] * (float)(ltc_rng_uniform_f32(seed, offset, i) < q) / q;
    } else {
        const double *x = a->in[0];
        double *y = a->out[0], q = 1 - p;
        for (int64_t i = 0; i < n; i++)
            y[i] = p == 1 ? x[i] * 0 : x[i] * (double)(ltc_rng_uniform_f64(seed, offset, i) < q) / q;
    }
    return LTC_OK;
}
