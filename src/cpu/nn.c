/* nn.c - CPU kernels of the neural-network functions: softmax and log_softmax.
 *
 * Both are computed stably: the max along the dim is subtracted before exp. The input is
 * viewed as outer x n x inner around the dim; exp sums accumulate in double. */
#include <math.h>
#include <stdlib.h>

#include "elementwise.h"

/* One outer slice, inner == 1: y = softmax(x) or log_softmax(x) over n contiguous values.
 * EXP is the exp of the element type (expf for float). */
#define DEF_ROW(NAME, T, EXP)                                                                  \
    static void NAME(const T *x, T *y, int64_t n, bool logsm) {                                \
        T mx = x[0];                                                                           \
        for (int64_t j = 1; j < n; j++)                                                        \
            if (x[j] > mx)                                                                     \
                mx = x[j];                                                                     \
        double s = 0;                                                                          \
        if (logsm) {                                                                           \
            for (int64_t j = 0; j < n; j++)                                                    \
                s += (double)EXP(x[j] - mx);                                                   \
            T lse = (T)log(s);                                                                 \
            for (int64_t j = 0; j < n; j++)                                                    \
                y[j] = x[j] - mx - lse;                                                        \
        } else {                                                                               \
            for (int64_t j = 0; j < n; j++) {                                                  \
                y[j] = EXP(x[j] - mx);                                                         \
                s += (double)y[j];                                                             \
            }                                                                                  \
            T inv = (T)(1.0 / s);                                                              \
            for (int64_t j = 0; j < n; j++)                                                    \
                y[j] *= inv;                                                                   \
        }                                                                                      \
    }

/* One outer slice, inner > 1: the same along the strided dim, swept row by row so memory
 * is read contiguously. mx and s are scratch arrays of inner elements. */
#define DEF_COLS(NAME, T, EXP)                                                                 \
    static void NAME(const T *x, T *y, int64_t n, int64_t inner, bool logsm, T *mx,           \
                     double *s) {                                                              \
        for (int64_t i = 0; i < inner; i++) {                                                  \
            mx[i] = x[i];                                                                      \
            s[i] = 0;                                                                          \
        }                                                                                      \
        for (int64_t j = 1; j < n; j++)                                                        \
            for (int64_t i = 0; i < inner; i++)                                                \
                if (x[j * inner + i] > mx[i])                                                  \
                    mx[i] = x[j * inner + i];                                                  \
        for (int64_t j = 0; j < n; j++)                                                        \
            for (int64_t i = 0; i < inner; i++) {                                              \
                T e = EXP(x[j * inner + i] - mx[i]);                                           \
                s[i] += (double)e;                                                             \
                if (!logsm)                                                                    \
                    y[j * inner + i] = e;                                                      \
            }                                                                                  \
        for (int64_t i = 0; i < inner; i++)                                                    \
            s[i] = logsm ? log(s[i]) : 1.0 / s[i];                                             \
        for (int64_t j = 0; j < n; j++)                                                        \
            for (int64_t i = 0; i < inner; i++) {                                              \
                int64_t p = j * inner + i;                                                     \
                y[p] = logsm ? x[p] - mx[i] - (T)s[i] : y[p] * (T)s[i];                        \
            }                                                                                  \
    }

DEF_ROW(row_f32, float, expf)
DEF_ROW(row_f64, double, exp)
DEF_COLS(cols_f32, float, expf)
DEF_COLS(cols_f64, double, exp)

/* softmax or log_softmax of in[0] along attrs[0] (0-based dim), float32 or float64. */
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
    size_t es = ltc_dtype_size(is->dtype);
    void *mx = NULL;
    double *s = NULL;
    if (inner > 1) {
        mx = malloc((size_t)inner * es);
        s = malloc((size_t)inner * sizeof(double));
        if (!mx || !s) {
            free(mx);
            free(s);
            return ltc_errorf(LTC_ERR_NOMEM, "%s: out of memory", name);
        }
    }
    int64_t slice = n * inner;
    for (int64_t o = 0; o < outer; o++) {
        if (is->dtype == LTC_F32) {
            const float *x = (const float *)a->in[0] + o * slice;
            float *y = (float *)a->out[0] + o * slice;
            if (inner == 1)
                row_f32(x, y, n, logsm);
            else
                cols_f32(x, y, n, inner, logsm, mx, s);
        } else {
            const double *x = (const double *)a->in[0] + o * slice;
            double *y = (double *)a->out[0] + o * slice;
            if (inner == 1)
                row_f64(x, y, n, logsm);
            else
                cols_f64(x, y, n, inner, logsm, mx, s);
        }
    }
    free(mx);
    free(s);
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
