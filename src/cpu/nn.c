/* nn.c - CPU kernels of the neural-network functions: softmax and log_softmax.
 *
 * Both are computed stably: the max along the dim is subtracted before exp. The input is
 * viewed as outer x n x inner around the dim; exp sums accumulate in double. Rows (or blocks
 * of inner columns) are shared among the worker threads (threads.h); the loops are
 * vectorized (vmath.h) and compiled for several x86-64 levels (LTC_EW_CLONES). */
#include <math.h>
#include <stdlib.h>

#include "elementwise.h"
#include "threads.h"
#include "vmath.h"

/* One row (inner == 1): y = softmax(x) or log_softmax(x) over n contiguous values, in three
 * vectorized passes over the row (max; exp and its sum; scale or shift). EXP is the exp of
 * the element type (libmvec's vector expf/exp through vmath.h). A NaN propagates to the
 * whole row through the sum, as before. */
#define DEF_ROW(NAME, T, EXP)                                                                  \
    LTC_EW_CLONES static void NAME(const T *x, T *y, int64_t n, bool logsm) {                  \
        T mx = x[0];                                                                           \
        _Pragma("omp simd reduction(max:mx)")                                                  \
        for (int64_t j = 1; j < n; j++)                                                        \
            mx = x[j] > mx ? x[j] : mx;                                                        \
        double s = 0;                                                                          \
        if (logsm) {                                                                           \
            _Pragma("omp simd reduction(+:s)")                                                 \
            for (int64_t j = 0; j < n; j++)                                                    \
                s += (double)EXP(x[j] - mx);                                                   \
            T lse = (T)log(s);                                                                 \
            LTC_SIMD                                                                           \
            for (int64_t j = 0; j < n; j++)                                                    \
                y[j] = x[j] - mx - lse;                                                        \
        } else {                                                                               \
            _Pragma("omp simd reduction(+:s)")                                                 \
            for (int64_t j = 0; j < n; j++) {                                                  \
                T e = EXP(x[j] - mx);                                                          \
                y[j] = e;                                                                      \
                s += (double)e;                                                                \
            }                                                                                  \
            T inv = (T)(1.0 / s);                                                              \
            LTC_SIMD                                                                           \
            for (int64_t j = 0; j < n; j++)                                                    \
                y[j] *= inv;                                                                   \
        }                                                                                      \
    }

/* Columns [0, w) of one outer slice, inner > 1: the same along the strided dim (stride
 * `inner` elements), swept row by row so memory is read contiguously. mx and s are scratch
 * arrays of w elements. */
#define DEF_COLS(NAME, T, EXP)                                                                 \
    LTC_EW_CLONES static void NAME(const T *x, T *y, int64_t n, int64_t inner, int64_t w,      \
                                   bool logsm, T *mx, double *s) {                             \
        for (int64_t i = 0; i < w; i++) {                                                      \
            mx[i] = x[i];                                                                      \
            s[i] = 0;                                                                          \
        }                                                                                      \
        for (int64_t j = 1; j < n; j++)                                                        \
            LTC_SIMD for (int64_t i = 0; i < w; i++)                                           \
                mx[i] = x[j * inner + i] > mx[i] ? x[j * inner + i] : mx[i];                   \
        for (int64_t j = 0; j < n; j++)                                                        \
            LTC_SIMD for (int64_t i = 0; i < w; i++) {                                         \
                T e = EXP(x[j * inner + i] - mx[i]);                                           \
                s[i] += (double)e;                                                             \
                if (!logsm)                                                                    \
                    y[j * inner + i] = e;                                                      \
            }                                                                                  \
        for (int64_t i = 0; i < w; i++)                                                        \
            s[i] = logsm ? log(s[i]) : 1.0 / s[i];                                             \
        for (int64_t j = 0; j < n; j++)                                                        \
            LTC_SIMD for (int64_t i = 0; i < w; i++) {                                         \
                int64_t p = j * inner + i;                                                     \
                y[p] = logsm ? x[p] - mx[i] - (T)s[i] : y[p] * (T)s[i];                        \
            }                                                                                  \
    }

DEF_ROW(row_f32, float, expf)
DEF_ROW(row_f64, double, exp)
DEF_COLS(cols_f32, float, expf)
DEF_COLS(cols_f64, double, exp)

/* Columns of the inner dim one work item takes (the scratch of a call is on its stack). */
#define COL_BLOCK 256
/* Bytes of a column block (about half a core's L2 cache). */
#define CACHE_BYTES (512 << 10)
/* Elements a thread's share should have at least. */
#define PAR_ELEMS 65536

typedef struct {
    const ltc_kernel_args *a;
    int64_t n, inner, bw, blocks; /* blocks of bw <= COL_BLOCK columns per outer slice */
    bool logsm, f32;
} sm_ctx;

/* Work items [lo, hi): rows (inner == 1), else (outer slice, column block) pairs. */
static void sm_range(void *p, int64_t lo, int64_t hi, int tid) {
    (void)tid;
    const sm_ctx *c = p;
    int64_t n = c->n, inner = c->inner, slice = n * inner;
    for (int64_t it = lo; it < hi; it++) {
        if (inner == 1) {
            if (c->f32)
                row_f32((const float *)c->a->in[0] + it * n, (float *)c->a->out[0] + it * n, n,
                        c->logsm);
            else
                row_f64((const double *)c->a->in[0] + it * n, (double *)c->a->out[0] + it * n, n,
                        c->logsm);
            continue;
        }
        int64_t o = it / c->blocks, i0 = it % c->blocks * c->bw;
        int64_t w = inner - i0 < c->bw ? inner - i0 : c->bw, off = o * slice + i0;
        double s[COL_BLOCK];
        if (c->f32) {
            float mx[COL_BLOCK];
            cols_f32((const float *)c->a->in[0] + off, (float *)c->a->out[0] + off, n, inner, w,
                     c->logsm, mx, s);
        } else {
            double mx[COL_BLOCK];
            cols_f64((const double *)c->a->in[0] + off, (double *)c->a->out[0] + off, n, inner,
                     w, c->logsm, mx, s);
        }
    }
}

/* softmax or log_softmax of in[0] along attrs[0] (0-based dim), float32 or float64; the rows
 * (or column blocks) are shared among the worker threads. */
static ltc_status softmax_any(const ltc_kernel_args *a, bool logsm) {
    const char *name = logsm ? "log_softmax" : "softmax";
    const ltc_shape *is = &a->in_shapes[0];
    if (is->dtype != LTC_F32 && is->dtype != LTC_F64)
        return ltc_errorf(LTC_ERR_ARG, "%s: dtype %s is not a floating dtype", name,
                          ltc_dtype_name(is->dtype));
    int64_t outer, n, inner;
    ltc_cpu_split_dim(is, a->attrs[0].i, &outer, &n, &inner);
    if (outer * n * inner == 0)
        return LTC_OK;
    /* a column block's n x bw elements should stay in cache for the three sweeps */
    int64_t bw = (int64_t)(CACHE_BYTES / ltc_dtype_size(is->dtype)) / n / 16 * 16;
    bw = bw < 16 ? 16 : bw > COL_BLOCK ? COL_BLOCK : bw;
    sm_ctx c = {.a = a, .n = n, .inner = inner, .bw = bw, .blocks = (inner + bw - 1) / bw,
                .logsm = logsm, .f32 = is->dtype == LTC_F32};
    int64_t items = inner == 1 ? outer : outer * c.blocks;
    int64_t per_item = inner == 1 ? n : n * (inner < bw ? inner : bw);
    int64_t grain = PAR_ELEMS / per_item + 1;
    ltc_cpu_parallel_for(items, grain, sm_range, &c);
    return LTC_OK;
}

/* softmax(Tensor self, dim dim): exp(x - max) / sum(exp(x - max)) along dim. */
ltc_status ltc_cpu_kernel_softmax(const ltc_kernel_args *a) {
    return softmax_any(a, false);
}

/* log_softmax(Tensor self, dim dim): x - max - log(sum(exp(x - max))) along dim. */
ltc_status ltc_cpu_kernel_log_softmax(const ltc_kernel_args *a) {
    return softmax_any(a, true);
}
