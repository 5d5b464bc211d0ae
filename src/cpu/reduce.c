/* reduce.c - CPU kernels of the reductions: sum, mean, max, max.dim, argmax.
 *
 * Each reduction views its input as outer x n x inner around the reduced dim (see
 * ltc_cpu_split_dim) and is cut into items that the worker threads share. Every item is
 * computed by one thread in a fixed order and partials are combined in a fixed order, so a
 * result does not depend on the number of threads or on which thread ran what:
 * - inner == 1 (the last dim, or all elements): each row of n is cut into blocks of
 *   RED_BLOCK elements; each block's partial (a sum, or a max and its index) has its own
 *   slot, and each row's partials are then combined in block order;
 * - inner > 1: an item is one outer slice's block of RED_COLS columns, swept over the n rows
 *   so the inner dim is read contiguously.
 * Sums accumulate in double (floats) or 64-bit integers (int and bool). */
#include <math.h>
#include <stdlib.h>

#include "elementwise.h"
#include "threads.h"

#define RED_BLOCK 16384    /* elements of a row per partial (inner == 1) */
#define RED_COLS 256       /* columns per item (inner > 1) */
#define RED_GRAIN 65536    /* elements per chunk of work handed to a thread */

/* *acc = the sum of x[0..n), in eight partial sums (which breaks the add latency chain and
 * rounds more evenly; compiled per x86-64 level, the eight in one vector where it fits: the
 * same adds in the same order). */
#define DEF_ACC(NAME, T, A)                                                                    \
    LTC_EW_CLONES static void NAME(const T *x, int64_t n, A *acc) {                            \
        A s[8] = {0};                                                                          \
        int64_t j = 0;                                                                         \
        for (; j + 8 <= n; j += 8)                                                             \
            for (int u = 0; u < 8; u++)                                                        \
                s[u] += (A)x[j + u];                                                           \
        for (; j < n; j++)                                                                     \
            s[0] += (A)x[j];                                                                   \
        *acc = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));              \
    }

/* acc[i] = sum over j < n of x[j * stride + i], for i < cnt: whole rows added into the
 * vector of accumulators, vectorized across the columns (and compiled per x86-64 level);
 * each column is still summed in row order. A scalar loop here cost 0.7 ns per element. */
#define DEF_COLS(NAME, T, A)                                                                   \
    LTC_EW_CLONES static void NAME(const T *x, int64_t n, int64_t stride, int64_t cnt,         \
                                   A *acc) {                                                   \
        for (int64_t i = 0; i < cnt; i++)                                                      \
            acc[i] = 0;                                                                        \
        int64_t j = 0;                                                                         \
        for (; j + 4 <= n; j += 4) { /* four rows per load and store of acc, in order */       \
            const T *r0 = x + j * stride, *r1 = r0 + stride, *r2 = r1 + stride;                \
            const T *r3 = r2 + stride;                                                         \
            LTC_SIMD                                                                           \
            for (int64_t i = 0; i < cnt; i++)                                                  \
                acc[i] = (((acc[i] + (A)r0[i]) + (A)r1[i]) + (A)r2[i]) + (A)r3[i];             \
        }                                                                                      \
        for (; j < n; j++) {                                                                   \
            const T *r = x + j * stride;                                                       \
            LTC_SIMD                                                                           \
            for (int64_t i = 0; i < cnt; i++)                                                  \
                acc[i] += (A)r[i];                                                             \
        }                                                                                      \
    }

DEF_ACC(acc_f32, float, double)
DEF_ACC(acc_f64, double, double)
/* integers wrap on overflow, as in PyTorch: accumulate unsigned (well defined) */
DEF_ACC(acc_i32, int32_t, uint64_t)
DEF_ACC(acc_i64, int64_t, uint64_t)
DEF_ACC(acc_bool, unsigned char, uint64_t)
DEF_COLS(cols_f32, float, double)
DEF_COLS(cols_f64, double, double)
DEF_COLS(cols_i32, int32_t, uint64_t)
DEF_COLS(cols_i64, int64_t, uint64_t)
DEF_COLS(cols_bool, unsigned char, uint64_t)

/* Sums x (dtype dt) into 8-byte accumulators (double or uint64_t): the n contiguous
 * elements into acc[0] when cnt == 1 and stride == 1, else cnt columns of n rows. */
static void acc_any(ltc_dtype dt, const void *x, int64_t n, int64_t stride, int64_t cnt,
                    void *acc) {
    if (stride == 1 && cnt == 1) {
        switch (dt) {
        case LTC_F32: acc_f32(x, n, acc); break;
        case LTC_F64: acc_f64(x, n, acc); break;
        case LTC_I32: acc_i32(x, n, acc); break;
        case LTC_I64: acc_i64(x, n, acc); break;
        default: acc_bool(x, n, acc); break;
        }
        return;
    }
    switch (dt) {
    case LTC_F32: cols_f32(x, n, stride, cnt, acc); break;
    case LTC_F64: cols_f64(x, n, stride, cnt, acc); break;
    case LTC_I32: cols_i32(x, n, stride, cnt, acc); break;
    case LTC_I64: cols_i64(x, n, stride, cnt, acc); break;
    default: cols_bool(x, n, stride, cnt, acc); break;
    }
}

/* A reduction's input split for the items (see the top of the file). */
typedef struct {
    const ltc_kernel_args *a;
    const char *x;
    ltc_dtype dt;
    size_t es;
    int64_t outer, n, inner;
    int64_t blocks; /* inner == 1: blocks per row; inner > 1: column blocks per slice */
    bool mean, is_float;
    void *part;     /* inner == 1: outer * blocks partials */
    int64_t *pidx;  /* max, inner == 1: the partials' 0-based indices */
    void *vals;     /* max: the values' output, or NULL */
    int64_t *idx;   /* max: the indices' output */
} red_ctx;

static void red_init(red_ctx *c, const ltc_kernel_args *a, int64_t dim) {
    *c = (red_ctx){.a = a, .x = a->in[0], .dt = a->in_shapes[0].dtype};
    c->es = ltc_dtype_size(c->dt);
    ltc_cpu_split_dim(&a->in_shapes[0], dim, &c->outer, &c->n, &c->inner);
    c->is_float = c->dt == LTC_F32 || c->dt == LTC_F64;
    if (c->inner == 1)
        c->blocks = c->n ? (c->n + RED_BLOCK - 1) / RED_BLOCK : 1;
    else
        c->blocks = (c->inner + RED_COLS - 1) / RED_COLS;
}

/* Runs fn over the items of c on the worker threads. */
static void red_run(red_ctx *c, ltc_cpu_range_fn fn) {
    int64_t cost = c->inner == 1 ? (c->n < RED_BLOCK ? c->n : RED_BLOCK) : c->n * RED_COLS;
    int64_t grain = RED_GRAIN / (cost ? cost : 1);
    ltc_cpu_parallel_for(c->outer * c->blocks, grain < 1 ? 1 : grain, fn, c);
}

/* Item k: the partial sum of block k % blocks of row k / blocks (inner == 1), or the sums
 * (means) of a column block written to out[0] (inner > 1). */
static void sum_range(void *p, int64_t lo, int64_t hi, int tid) {
    (void)tid;
    const red_ctx *c = p;
    for (int64_t k = lo; k < hi; k++) {
        int64_t o = k / c->blocks, b = k % c->blocks;
        if (c->inner == 1) {
            int64_t j0 = b * RED_BLOCK, j1 = j0 + RED_BLOCK < c->n ? j0 + RED_BLOCK : c->n;
            acc_any(c->dt, c->x + (o * c->n + j0) * (int64_t)c->es, j1 - j0, 1, 1,
                    (char *)c->part + k * 8);
            continue;
        }
        int64_t i0 = b * RED_COLS, cnt = i0 + RED_COLS < c->inner ? RED_COLS : c->inner - i0;
        union { double d[RED_COLS]; uint64_t u[RED_COLS]; } acc;
        acc_any(c->dt, c->x + (o * c->n * c->inner + i0) * (int64_t)c->es, c->n, c->inner, cnt,
                &acc);
        if (c->mean)
            for (int64_t i = 0; i < cnt; i++)
                acc.d[i] /= (double)c->n;
        const ltc_shape *os = &c->a->out_shapes[0];
        char *y = (char *)c->a->out[0] + (o * c->inner + i0) * (int64_t)ltc_dtype_size(os->dtype);
        ltc_cpu_convert(y, os->dtype, &acc, c->is_float ? LTC_F64 : LTC_I64, cnt);
    }
}

/* Sums in[0] along dim (or all of it) and writes the sums, or the means when `mean`, to
 * out[0] in its dtype. attrs: dim (0-based or LTC_NONE), keepdim (shape only). */
static ltc_status reduce_sum(const ltc_kernel_args *a, bool mean, const char *name) {
    red_ctx c;
    red_init(&c, a, a->attrs[0].i);
    c.mean = mean;
    if (c.outer * c.inner == 0)
        return LTC_OK;
    if (mean && !c.is_float)
        return ltc_errorf(LTC_ERR_ARG, "%s: dtype %s is not a floating dtype", name,
                          ltc_dtype_name(c.dt));
    if (c.inner > 1) {
        red_run(&c, sum_range);
        return LTC_OK;
    }
    c.part = malloc((size_t)(c.outer * c.blocks) * 8);
    if (!c.part)
        return ltc_errorf(LTC_ERR_NOMEM, "%s: out of memory", name);
    red_run(&c, sum_range);
    /* row o's partials, in block order, into slot o (o <= o * blocks: read before written) */
    for (int64_t o = 0; o < c.outer; o++) {
        if (c.is_float) {
            double *d = c.part, s = d[o * c.blocks];
            for (int64_t b = 1; b < c.blocks; b++)
                s += d[o * c.blocks + b];
            d[o] = mean ? s / (double)c.n : s; /* 0 / 0 is NaN: the mean of nothing */
        } else {
            uint64_t *u = c.part, s = u[o * c.blocks];
            for (int64_t b = 1; b < c.blocks; b++)
                s += u[o * c.blocks + b];
            u[o] = s;
        }
    }
    ltc_cpu_convert(a->out[0], a->out_shapes[0].dtype, c.part, c.is_float ? LTC_F64 : LTC_I64,
                    c.outer);
    free(c.part);
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

/* For i < cnt: vals[i] = max over j < n of x[j * stride + i], idx[i] = its 0-based j (the
 * first on ties; a NaN wins and keeps its place). n >= 1. PICK combines nb partials (values
 * pv, indices pi) in order by the same rule. */
#define DEF_MAX(NAME, PICK, T, ISNAN)                                                          \
    static void NAME(const T *x, int64_t n, int64_t stride, int64_t cnt, T *vals,             \
                     int64_t *idx) {                                                           \
        for (int64_t i = 0; i < cnt; i++) {                                                    \
            vals[i] = x[i];                                                                    \
            idx[i] = 0;                                                                        \
        }                                                                                      \
        for (int64_t j = 1; j < n; j++) {                                                      \
            const T *r = x + j * stride;                                                       \
            for (int64_t i = 0; i < cnt; i++) {                                                \
                T v = r[i], b = vals[i];                                                       \
                if (v > b || (ISNAN(v) && !ISNAN(b))) {                                        \
                    vals[i] = v;                                                               \
                    idx[i] = j;                                                                \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    static void PICK(const T *pv, const int64_t *pi, int64_t nb, T *val, int64_t *idx) {      \
        T b = pv[0];                                                                           \
        int64_t k = pi[0];                                                                     \
        for (int64_t m = 1; m < nb; m++)                                                       \
            if (pv[m] > b || (ISNAN(pv[m]) && !ISNAN(b)))                                      \
                b = pv[m], k = pi[m];                                                          \
        if (val)                                                                               \
            *val = b;                                                                          \
        *idx = k;                                                                              \
    }
#define NEVER_NAN(v) ((void)(v), 0)

DEF_MAX(max_f32, pick_f32, float, isnan)
DEF_MAX(max_f64, pick_f64, double, isnan)
DEF_MAX(max_i32, pick_i32, int32_t, NEVER_NAN)
DEF_MAX(max_i64, pick_i64, int64_t, NEVER_NAN)
DEF_MAX(max_bool, pick_bool, unsigned char, NEVER_NAN)

static void max_any(ltc_dtype dt, const void *x, int64_t n, int64_t stride, int64_t cnt,
                    void *vals, int64_t *idx) {
    switch (dt) {
    case LTC_F32: max_f32(x, n, stride, cnt, vals, idx); break;
    case LTC_F64: max_f64(x, n, stride, cnt, vals, idx); break;
    case LTC_I32: max_i32(x, n, stride, cnt, vals, idx); break;
    case LTC_I64: max_i64(x, n, stride, cnt, vals, idx); break;
    default: max_bool(x, n, stride, cnt, vals, idx); break;
    }
}

static void pick_any(ltc_dtype dt, const void *pv, const int64_t *pi, int64_t nb, void *val,
                     int64_t *idx) {
    switch (dt) {
    case LTC_F32: pick_f32(pv, pi, nb, val, idx); break;
    case LTC_F64: pick_f64(pv, pi, nb, val, idx); break;
    case LTC_I32: pick_i32(pv, pi, nb, val, idx); break;
    case LTC_I64: pick_i64(pv, pi, nb, val, idx); break;
    default: pick_bool(pv, pi, nb, val, idx); break;
    }
}

/* Item k: the max of block k % blocks of row k / blocks into the partials (inner == 1), or
 * of a column block into vals (or a scratch) and 1-based idx (inner > 1). */
static void max_range(void *p, int64_t lo, int64_t hi, int tid) {
    (void)tid;
    const red_ctx *c = p;
    int64_t es = (int64_t)c->es;
    for (int64_t k = lo; k < hi; k++) {
        int64_t o = k / c->blocks, b = k % c->blocks;
        if (c->inner == 1) {
            int64_t j0 = b * RED_BLOCK, j1 = j0 + RED_BLOCK < c->n ? j0 + RED_BLOCK : c->n;
            max_any(c->dt, c->x + (o * c->n + j0) * es, j1 - j0, 1, 1,
                    (char *)c->part + k * es, c->pidx + k);
            c->pidx[k] += j0;
            continue;
        }
        int64_t i0 = b * RED_COLS, cnt = i0 + RED_COLS < c->inner ? RED_COLS : c->inner - i0;
        double scratch[RED_COLS];
        int64_t *ix = c->idx + o * c->inner + i0;
        void *v = c->vals ? (char *)c->vals + (o * c->inner + i0) * es : (void *)scratch;
        max_any(c->dt, c->x + (o * c->n * c->inner + i0) * es, c->n, c->inner, cnt, v, ix);
        for (int64_t i = 0; i < cnt; i++)
            ix[i] += 1;
    }
}

/* Runs the max sweep over in[0] (outer x n x inner) writing vals (outer * inner elements of
 * the input dtype, or NULL) and 1-based idx. */
static ltc_status reduce_max(const ltc_kernel_args *a, int64_t dim, void *vals, int64_t *idx,
                             const char *name) {
    red_ctx c;
    red_init(&c, a, dim);
    c.vals = vals;
    c.idx = idx;
    if (c.outer * c.inner == 0)
        return LTC_OK;
    if (c.n == 0)
        return ltc_errorf(LTC_ERR_ARG, "%s: the reduced dim is empty", name);
    if (c.inner > 1) {
        red_run(&c, max_range);
        return LTC_OK;
    }
    c.part = malloc((size_t)(c.outer * c.blocks) * 16); /* values in 8-byte slots, indices */
    if (!c.part)
        return ltc_errorf(LTC_ERR_NOMEM, "%s: out of memory", name);
    c.pidx = (int64_t *)c.part + c.outer * c.blocks;
    red_run(&c, max_range);
    for (int64_t o = 0; o < c.outer; o++) {
        int64_t at = o * c.blocks;
        pick_any(c.dt, (char *)c.part + at * (int64_t)c.es, c.pidx + at, c.blocks,
                 vals ? (char *)vals + o * (int64_t)c.es : NULL, idx + o);
        idx[o] += 1;
    }
    free(c.part);
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
