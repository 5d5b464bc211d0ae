/* reduce.c - CPU kernels of the reductions: sum, mean, max, max.dim, argmax.
 *
 * Each reduction views its input as outer x n x inner around the reduced dim (see
 * ltc_cpu_split_dim) and sweeps the n rows of each outer slice, so the inner dim is read
 * contiguously. Sums accumulate in double (floats) or 64-bit integers (int and bool). */
#include <math.h>
#include <stdlib.h>

#include "elementwise.h"

/* acc[i] = sum over j < n of x[j * inner + i], for i < inner (eight partial sums when
 * inner == 1, which breaks the add latency chain and rounds more evenly). */
#define DEF_ACC(NAME, T, A)                                                                    \
    static void NAME(const T *x, int64_t n, int64_t inner, A *acc) {                           \
        if (inner == 1) {                                                                      \
            A s[8] = {0};                                                                      \
            int64_t j = 0;                                                                     \
            for (; j + 8 <= n; j += 8)                                                         \
                for (int u = 0; u < 8; u++)                                                    \
                    s[u] += (A)x[j + u];                                                       \
            for (; j < n; j++)                                                                 \
                s[0] += (A)x[j];                                                               \
            acc[0] = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));        \
            return;                                                                            \
        }                                                                                      \
        for (int64_t i = 0; i < inner; i++)                                                    \
            acc[i] = 0;                                                                        \
        for (int64_t j = 0; j < n; j++) {                                                      \
            const T *r = x + j * inner;                                                        \
            for (int64_t i = 0; i < inner; i++)                                                \
                acc[i] += (A)r[i];                                                             \
        }                                                                                      \
    }

DEF_ACC(acc_f32, float, double)
DEF_ACC(acc_f64, double, double)
/* integers wrap on overflow, as in PyTorch: accumulate unsigned (well defined) */
DEF_ACC(acc_i32, int32_t, uint64_t)
DEF_ACC(acc_i64, int64_t, uint64_t)
DEF_ACC(acc_bool, unsigned char, uint64_t)

/* Sums in[0] along dim (or all of it) and writes the sums, or the means when `mean`, to
 * out[0] in its dtype. attrs: dim (0-based or LTC_NONE), keepdim (shape only). */
static ltc_status reduce_sum(const ltc_kernel_args *a, bool mean, const char *name) {
    const ltc_shape *is = &a->in_shapes[0], *os = &a->out_shapes[0];
    int64_t outer, n, inner;
    ltc_cpu_split_dim(is, a->attrs[0].i, &outer, &n, &inner);
    if (outer * inner == 0)
        return LTC_OK;
    bool is_float = is->dtype == LTC_F32 || is->dtype == LTC_F64;
    if (mean && !is_float)
        return ltc_errorf(LTC_ERR_ARG, "%s: dtype %s is not a floating dtype", name,
                          ltc_dtype_name(is->dtype));
    void *acc = malloc((size_t)inner * 8);
    if (!acc)
        return ltc_errorf(LTC_ERR_NOMEM, "%s: out of memory", name);
    size_t ies = ltc_dtype_size(is->dtype), oes = ltc_dtype_size(os->dtype);
    for (int64_t o = 0; o < outer; o++) {
        const char *x = (const char *)a->in[0] + o * n * inner * (int64_t)ies;
        switch (is->dtype) {
        case LTC_F32: acc_f32((const float *)x, n, inner, acc); break;
        case LTC_F64: acc_f64((const double *)x, n, inner, acc); break;
        case LTC_I32: acc_i32((const int32_t *)x, n, inner, acc); break;
        case LTC_I64: acc_i64((const int64_t *)x, n, inner, acc); break;
        default: acc_bool((const unsigned char *)x, n, inner, acc); break;
        }
        if (mean) {
            double *d = acc;
            for (int64_t i = 0; i < inner; i++)
                d[i] /= (double)n; /* 0 / 0 is NaN: the mean of nothing */
        }
        char *y = (char *)a->out[0] + o * inner * (int64_t)oes;
        ltc_cpu_convert(y, os->dtype, acc, is_float ? LTC_F64 : LTC_I64, inner);
    }
    free(acc);
    return LTC_OK;
}

/* sum(Tensor self, dim? dim, bool keepdim): float dtypes keep theirs; int32, int64 and
 * bool give int64. The sum of nothing is 0. */
ltc_status ltc_cpu_kernel_sum(const ltc_kernel_args *a) {
    return reduce_sum(a, false, "sum");
}

/* mean(Tensor self, dim? dim, bool keepdim): float32/float64; the mean of nothing is NaN. */
ltc_status ltc_cpu_kernel_mean(const ltc_kernel_args *a) {
    return reduce_sum(a, true, "mean");
}

/* For i < inner: vals[i] = max over j < n of x[j * inner + i], idx[i] = its 0-based j (the
 * first on ties; a NaN wins and keeps its place). n >= 1. */
#define DEF_MAX(NAME, T, ISNAN)                                                                \
    static void NAME(const T *x, int64_t n, int64_t inner, T *vals, int64_t *idx) {            \
        for (int64_t i = 0; i < inner; i++) {                                                  \
            vals[i] = x[i];                                                                    \
            idx[i] = 0;                                                                        \
        }                                                                                      \
        for (int64_t j = 1; j < n; j++) {                                                      \
            const T *r = x + j * inner;                                                        \
            for (int64_t i = 0; i < inner; i++) {                                              \
                T v = r[i], b = vals[i];                                                       \
                if (v > b || (ISNAN(v) && !ISNAN(b))) {                                        \
                    vals[i] = v;                                                               \
                    idx[i] = j;                                                                \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }
#define NEVER_NAN(v) ((void)(v), 0)

DEF_MAX(max_f32, float, isnan)
DEF_MAX(max_f64, double, isnan)
DEF_MAX(max_i32, int32_t, NEVER_NAN)
DEF_MAX(max_i64, int64_t, NEVER_NAN)
DEF_MAX(max_bool, unsigned char, NEVER_NAN)

/* Runs the max sweep over in[0] (outer x n x inner) writing vals (outer * inner elements of
 * the input dtype, or NULL: then a scratch of inner elements is reused) and 1-based idx. */
static ltc_status reduce_max(const ltc_kernel_args *a, int64_t dim, void *vals, int64_t *idx,
                             const char *name) {
    const ltc_shape *is = &a->in_shapes[0];
    int64_t outer, n, inner;
    ltc_cpu_split_dim(is, dim, &outer, &n, &inner);
    if (outer * inner == 0)
        return LTC_OK;
    if (n == 0)
        return ltc_errorf(LTC_ERR_ARG, "%s: the reduced dim is empty", name);
    size_t es = ltc_dtype_size(is->dtype);
    void *scratch = NULL;
    if (!vals) {
        scratch = malloc((size_t)inner * es);
        if (!scratch)
            return ltc_errorf(LTC_ERR_NOMEM, "%s: out of memory", name);
    }
    for (int64_t o = 0; o < outer; o++) {
        const char *x = (const char *)a->in[0] + o * n * inner * (int64_t)es;
        void *v = vals ? (char *)vals + o * inner * (int64_t)es : scratch;
        int64_t *ix = idx + o * inner;
        switch (is->dtype) {
        case LTC_F32: max_f32((const float *)x, n, inner, v, ix); break;
        case LTC_F64: max_f64((const double *)x, n, inner, v, ix); break;
        case LTC_I32: max_i32((const int32_t *)x, n, inner, v, ix); break;
        case LTC_I64: max_i64((const int64_t *)x, n, inner, v, ix); break;
        default: max_bool((const unsigned char *)x, n, inner, v, ix); break;
        }
        for (int64_t i = 0; i < inner; i++)
            ix[i] += 1;
    }
    free(scratch);
    return LTC_OK;
}

/* max(Tensor self): the largest element, in self's dtype (NaN if any element is NaN).
 * An empty input is an error. */
ltc_status ltc_cpu_kernel_max(const ltc_kernel_args *a) {
    if (ltc_shape_numel(&a->in_shapes[0]) == 0)
        return ltc_errorf(LTC_ERR_ARG, "max: the input is empty");
    int64_t idx;
    return reduce_max(a, LTC_NONE, a->out[0], &idx, "max");
}

/* max.dim(Tensor self, dim dim, bool keepdim): out[0] the largest values along dim (self's
 * dtype), out[1] their 1-based int64 indices (first on ties; NaN wins). */
ltc_status ltc_cpu_kernel_max_dim(const ltc_kernel_args *a) {
    return reduce_max(a, a->attrs[0].i, a->out[0], a->out[1], "max");
}

/* argmax(Tensor self, dim? dim, bool keepdim): 1-based int64 index of the largest element
 * along dim, or of the flattened tensor (LTC_NONE); first on ties, NaN counts as largest. */
ltc_status ltc_cpu_kernel_argmax(const ltc_kernel_args *a) {
    return reduce_max(a, a->attrs[0].i, NULL, a->out[0], "argmax");
}
