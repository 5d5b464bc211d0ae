/* loss.c - CPU kernels of the classification losses: nll_loss, cross_entropy (log_softmax
 * and nll_loss in one pass) and their backward ops; assert_in_range, the run-time check of
 * loss inputs. Input [N, C] (or [C] with a 0-d
 * target), float32 or float64, 1-based int64/int32 class labels; reduction 0 none, 1 mean,
 * 2 sum (attrs[0]). A label of -100 (LTC_LABEL_IGNORED, PyTorch's default ignore_index) is
 * ignored: its row's loss and gradient are 0 and the mean divides by the rows not ignored
 * (NaN when all are). Another label outside 1..C is a run-time error.
 *
 * Each dtype has its own loops (one macro instance per float type): a row's max, its exps
 * and their sum are vectorized passes (libmvec's expf/exp through vmath.h, several x86-64
 * levels through LTC_EW_CLONES), computing each exp once. The exp sums and the reduction
 * over rows accumulate in double. A NaN in a row reaches its loss (and its gradient row)
 * through the exp sum. */
#include <math.h>
#include <string.h>

#include "elementwise.h"
#include "ltc_backend.h"
#include "vmath.h"

/* Rows N and classes C of the input. */
static void rows_cols(const ltc_shape *s, int64_t *n, int64_t *c) {
    *n = s->ndim == 2 ? s->dims[0] : 1;
    *c = s->dims[s->ndim - 1];
}

/* The 0-based class of row i from target in[k], unchecked. */
static inline int64_t target_at(const ltc_kernel_args *a, int k, int64_t i) {
    ltc_dtype dt = a->in_shapes[k].dtype;
    int64_t v = dt == LTC_I64 ? ((const int64_t *)a->in[k])[i] : ((const int32_t *)a->in[k])[i];
    return (int64_t)((uint64_t)v - 1); /* INT64_MIN wraps (defined); kept_rows rejects it */
}

/* target_at's value for a row labelled LTC_LABEL_IGNORED. */
#define IGNORED ((int64_t)LTC_LABEL_IGNORED - 1)

/* The rows of n whose labels in[k] are not ignored (the mean's divisor), or -1 with the
 * error set if a label is out of range: one compare for a label in range. Checked before
 * any row is read: an input of no classes ([0] with a 0-d target) has no elements to read,
 * and its label is ignored or an error. */
static int64_t kept_rows(const ltc_kernel_args *a, int k, int64_t n, int64_t c, const char *op) {
    int64_t ignored = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t t = target_at(a, k, i);
        if ((uint64_t)t >= (uint64_t)c) {
            if (t != IGNORED) {
                ltc_label_range_error(op, (int64_t)((uint64_t)t + 1), c);
                return -1;
            }
            ignored++;
        }
    }
    return n - ignored;
}

/* Rows of a block whose exps one vectorized pass computes: a row of 10 classes is shorter
 * than an AVX-512 vector, so exps row by row would all run in the loops' scalar tails. */
#define EXP_BLOCK 1024
/* Rows shorter than this take scalar max and sum loops (four partials each, to shorten the
 * chain of dependent adds): a vectorized reduction's set-up and final combine of the lanes
 * cost more than such a row. */
#define SIMD_ROW 64

/* Rows per block for c classes (one when a row alone fills the block, or has no classes). */
static int64_t block_rows(int64_t c) {
    return c >= 1 && c <= EXP_BLOCK ? EXP_BLOCK / c : 1;
}

/* s[i] = log(s[i]) for i < n: the log-sum-exps of a block of rows, in one vectorized pass. */
LTC_EW_CLONES static void log_all(double *s, int64_t n) {
    LTC_SIMD
    for (int64_t i = 0; i < n; i++)
        s[i] = log(s[i]);
}

/* Per float type T (suffix SUF, EXP its exp), for rows of c >= 1 classes:
 * - lse_SUF: one row's max in *mx and sum(exp(x - max)) in double (rows longer than
 *   EXP_BLOCK, where the row itself fills the vectors);
 * - max_SUF, sum_SUF: a row's max and its sum in double;
 * - exps_SUF: for `rows` rows at x, y = exp(x - the row's max) (rows * c elements) and
 *   s[i] = row i's sum of them in double, mx[i] its max: the shifts row by row, then one
 *   exp pass over the whole block.
 * The max ignores NaN (a NaN element makes the exp sum NaN, which is what propagates). */
#define DEF_ROWS(SUF, T, EXP)                                                                  \
    static inline T max_##SUF(const T *x, int64_t c) {                                         \
        T mx = x[0];                                                                           \
        if (c < SIMD_ROW) {                                                                    \
            T m[4] = {mx, mx, mx, mx};                                                         \
            int64_t j = 1;                                                                     \
            for (; j + 4 <= c; j += 4)                                                         \
                for (int u = 0; u < 4; u++)                                                    \
                    m[u] = x[j + u] > m[u] ? x[j + u] : m[u];                                  \
            for (; j < c; j++)                                                                 \
                m[0] = x[j] > m[0] ? x[j] : m[0];                                              \
            m[0] = m[1] > m[0] ? m[1] : m[0];                                                  \
            m[2] = m[3] > m[2] ? m[3] : m[2];                                                  \
            return m[2] > m[0] ? m[2] : m[0];                                                  \
        }                                                                                      \
        _Pragma("omp simd reduction(max:mx)")                                                  \
        for (int64_t j = 1; j < c; j++)                                                        \
            mx = x[j] > mx ? x[j] : mx;                                                        \
        return mx;                                                                             \
    }                                                                                          \
    static inline double sum_##SUF(const T *x, int64_t c) {                                    \
        double s = 0;                                                                          \
        if (c < SIMD_ROW) {                                                                    \
            double p[4] = {0, 0, 0, 0};                                                        \
            int64_t j = 0;                                                                     \
            for (; j + 4 <= c; j += 4)                                                         \
                for (int u = 0; u < 4; u++)                                                    \
                    p[u] += (double)x[j + u];                                                  \
            for (; j < c; j++)                                                                 \
                p[0] += (double)x[j];                                                          \
            return (p[0] + p[1]) + (p[2] + p[3]);                                              \
        }                                                                                      \
        _Pragma("omp simd reduction(+:s)")                                                     \
        for (int64_t j = 0; j < c; j++)                                                        \
            s += (double)x[j];                                                                 \
        return s;                                                                              \
    }                                                                                          \
    LTC_EW_CLONES static double lse_##SUF(const T *x, int64_t c, T *mxp) {                     \
        T mx = max_##SUF(x, c);                                                                \
        double s = 0;                                                                          \
        _Pragma("omp simd reduction(+:s)")                                                     \
        for (int64_t j = 0; j < c; j++)                                                        \
            s += (double)EXP(x[j] - mx);                                                       \
        *mxp = mx;                                                                             \
        return s;                                                                              \
    }                                                                                          \
    LTC_EW_CLONES static void exps_##SUF(const T *x, int64_t rows, int64_t c, T *y, double *s, \
                                         T *mx) {                                              \
        for (int64_t i = 0; i < rows; i++) {                                                   \
            const T *r = x + i * c, m = max_##SUF(r, c);                                       \
            T *d = y + i * c;                                                                  \
            mx[i] = m;                                                                         \
            LTC_SIMD                                                                           \
            for (int64_t j = 0; j < c; j++)                                                    \
                d[j] = r[j] - m;                                                               \
        }                                                                                      \
        LTC_SIMD                                                                               \
        for (int64_t k = 0; k < rows * c; k++)                                                 \
            y[k] = EXP(y[k]);                                                                  \
        for (int64_t i = 0; i < rows; i++)                                                     \
            s[i] = sum_##SUF(y + i * c, c);                                                    \
    }

DEF_ROWS(f32, float, expf)
DEF_ROWS(f64, double, exp)

/* The forward and backward kernels of one float type T: per-row loss -x[t] (nll) or
 * logsumexp(x) - x[t] (cross entropy), reduced; and d loss / d input scaled by grad_output
 * (in[0], input in[1], target in[2]): g * softmax(x) with g taken off at the target, the
 * exps computed straight into the output. A cross_entropy backward step with a second
 * output writes the forward's loss there too, the same values from the same max and exp sum
 * (a plan pairs the two steps: fold.c). Rows go in blocks of at most EXP_BLOCK elements
 * (or one longer row). An ignored row's exps are computed with its block's (and its
 * gradient row then zeroed); an input of no classes computes none. */
#define DEF_LOSS(SUF, T)                                                                       \
    /* rows [0, nr) of c elements at y scaled by inv[i] in double: one call per block */       \
    LTC_EW_CLONES static void scale_##SUF(T *y, int64_t nr, int64_t c, const double *inv) {    \
        for (int64_t i = 0; i < nr; i++) {                                                     \
            T *d = y + i * c;                                                                  \
            double v = inv[i];                                                                 \
            LTC_SIMD                                                                           \
            for (int64_t j = 0; j < c; j++)                                                    \
                d[j] = (T)((double)d[j] * v);                                                  \
        }                                                                                      \
    }                                                                                          \
    static ltc_status forward_##SUF(const ltc_kernel_args *a, bool ce, const char *op) {       \
        int64_t n, c, red = a->attrs[0].i;                                                     \
        rows_cols(&a->in_shapes[0], &n, &c);                                                   \
        const T *x = a->in[0];                                                                 \
        T *y = a->out[0];                                                                      \
        T buf[EXP_BLOCK], mx[EXP_BLOCK];                                                       \
        double s[EXP_BLOCK], total = 0;                                                        \
        bool big = c > EXP_BLOCK;                                                              \
        int64_t rows = block_rows(c), kept = kept_rows(a, 1, n, c, op);                        \
        if (kept < 0)                                                                          \
            return LTC_ERR_ARG;                                                                \
        for (int64_t i0 = 0; i0 < n; i0 += rows) {                                             \
            int64_t nr = n - i0 < rows ? n - i0 : rows;                                        \
            if (ce && !big && c > 0) {                                                         \
                exps_##SUF(x + i0 * c, nr, c, buf, s, mx);                                     \
                log_all(s, nr);                                                                \
            }                                                                                  \
            for (int64_t i = i0; i < i0 + nr; i++) {                                           \
                int64_t t = target_at(a, 1, i); /* checked by kept_rows */                     \
                if (t == IGNORED) {                                                            \
                    if (red == 0)                                                              \
                        y[i] = 0;                                                              \
                    continue;                                                                  \
                }                                                                              \
                const T *r = x + i * c;                                                        \
                double l = -(double)r[t];                                                      \
                if (ce) {                                                                      \
                    if (big)                                                                   \
                        s[0] = log(lse_##SUF(r, c, &mx[0]));                                   \
                    int64_t k = big ? 0 : i - i0;                                              \
                    /* (max - x[t]) first: max + log(sum) rounds log(sum) away for large x */  \
                    l = (l + (double)mx[k]) + s[k];                                            \
                }                                                                              \
                if (red == 0)                                                                  \
                    y[i] = (T)l;                                                               \
                else                                                                           \
                    total += l;                                                                \
            }                                                                                  \
        }                                                                                      \
        if (red != 0) /* the mean over the rows kept: 0/0 (NaN) when none is */               \
            y[0] = (T)(red == 1 ? total / (double)kept : total);                               \
        return LTC_OK;                                                                         \
    }                                                                                          \
    /* row i's upstream gradient (a mean's over the `kept` rows not ignored) */                \
    static inline double grad_at_##SUF(const T *go, int64_t red, int64_t i, int64_t kept) {    \
        double g = (double)go[red == 0 ? i : 0];                                               \
        return red == 1 ? g / (double)kept : g;                                                \
    }                                                                                          \
    static ltc_status backward_##SUF(const ltc_kernel_args *a, bool ce, const char *op) {      \
        int64_t n, c, red = a->attrs[0].i;                                                     \
        rows_cols(&a->in_shapes[1], &n, &c);                                                   \
        const T *go = a->in[0], *x = a->in[1];                                                 \
        T *y = a->out[0], mx[EXP_BLOCK];                                                       \
        T *lo = ce && a->n_out > 1 ? a->out[1] : NULL; /* the loss too (fold.c) */             \
        double s[EXP_BLOCK], ls[EXP_BLOCK], total = 0;                                         \
        int64_t rows = block_rows(c), kept = kept_rows(a, 2, n, c, op);                        \
        bool exps = ce && c > 0; /* no classes: no exps (the one label is ignored) */          \
        if (kept < 0)                                                                          \
            return LTC_ERR_ARG;                                                                \
        if (!ce)                                                                               \
            memset(y, 0, ltc_shape_nbytes(&a->in_shapes[1]));                                  \
        for (int64_t i0 = 0; i0 < n; i0 += rows) {                                             \
            int64_t nr = n - i0 < rows ? n - i0 : rows;                                        \
            if (exps)                                                                          \
                exps_##SUF(x + i0 * c, nr, c, y + i0 * c, s, mx);                              \
            if (lo && exps) { /* the forward's per-row loss from the same max and exp sum */   \
                memcpy(ls, s, sizeof(double) * (size_t)nr);                                    \
                log_all(ls, nr);                                                               \
            }                                                                                  \
            if (exps) { /* g * softmax: the exps over their sums, scaled by g */               \
                for (int64_t i = i0; i < i0 + nr; i++)                                         \
                    s[i - i0] = grad_at_##SUF(go, red, i, kept) / s[i - i0];                   \
                scale_##SUF(y + i0 * c, nr, c, s);                                             \
            }                                                                                  \
            for (int64_t i = i0; i < i0 + nr; i++) {                                           \
                int64_t t = target_at(a, 2, i); /* checked by kept_rows */                     \
                if (t == IGNORED) { /* nll's rows are zeroed already */                        \
                    if (ce)                                                                    \
                        memset(y + i * c, 0, sizeof(T) * (size_t)c);                           \
                    if (lo && red == 0)                                                        \
                        lo[i] = 0;                                                             \
                    continue;                                                                  \
                }                                                                              \
                if (lo) {                                                                      \
                    double l = (-(double)x[i * c + t] + (double)mx[i - i0]) + ls[i - i0];      \
                    if (red == 0)                                                              \
                        lo[i] = (T)l;                                                          \
                    else                                                                       \
                        total += l;                                                            \
                }                                                                              \
                double g = grad_at_##SUF(go, red, i, kept);                                    \
                T *d = y + i * c;                                                              \
                if (ce) {                                                                      \
                    d[t] = (T)((double)d[t] - g);                                              \
                } else {                                                                       \
                    d[t] = (T)-g;                                                              \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
        if (lo && red != 0)                                                                    \
            lo[0] = (T)(red == 1 ? total / (double)kept : total);                              \
        return LTC_OK;                                                                         \
    }

DEF_LOSS(f32, float)
DEF_LOSS(f64, double)

/* The dtype is float32 or float64 (checked at trace time). */
static ltc_status loss_forward(const ltc_kernel_args *a, bool ce, const char *op) {
    return a->in_shapes[0].dtype == LTC_F32 ? forward_f32(a, ce, op) : forward_f64(a, ce, op);
}

static ltc_status loss_backward(const ltc_kernel_args *a, bool ce, const char *op) {
    return a->in_shapes[1].dtype == LTC_F32 ? backward_f32(a, ce, op) : backward_f64(a, ce, op);
}

ltc_status ltc_cpu_kernel_nll_loss(const ltc_kernel_args *a) {
    return loss_forward(a, false, "nll_loss");
}

ltc_status ltc_cpu_kernel_cross_entropy(const ltc_kernel_args *a) {
    return loss_forward(a, true, "cross_entropy");
}

ltc_status ltc_cpu_kernel_nll_loss_backward(const ltc_kernel_args *a) {
    return loss_backward(a, false, "nll_loss_backward");
}

ltc_status ltc_cpu_kernel_cross_entropy_backward(const ltc_kernel_args *a) {
    return loss_backward(a, true, "cross_entropy_backward");
}

/* ---- assert_in_range ------------------------------------------------------------------ */

static ltc_status not_in_range(int64_t i, double v, ltc_dtype dt, double lo, double hi) {
    char t[32];
    return ltc_errorf(LTC_ERR_ARG, "element %lld is %s, not in [%g, %g]", (long long)i + 1,
                      ltc_value_text(t, v, dt), lo, hi);
}

/* assert_in_range(self, low, high): out = self once every element is in [low, high]
 * (attrs[0], attrs[1]); NaN fails. The first element outside is the error. */
ltc_status ltc_cpu_kernel_assert_in_range(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0];
    int64_t n = ltc_shape_numel(s);
    double lo = a->attrs[0].f, hi = a->attrs[1].f;
    if (s->dtype == LTC_F32) {
        const float *x = a->in[0];
        for (int64_t i = 0; i < n; i++)
            if (!(x[i] >= lo && x[i] <= hi)) return not_in_range(i, x[i], s->dtype, lo, hi);
    } else if (s->dtype == LTC_F64) {
        const double *x = a->in[0];
        for (int64_t i = 0; i < n; i++)
            if (!(x[i] >= lo && x[i] <= hi)) return not_in_range(i, x[i], s->dtype, lo, hi);
    } else {
        size_t es = ltc_dtype_size(s->dtype);
        for (int64_t i = 0; i < n; i++) {
            double v;
            ltc_cpu_convert(&v, LTC_F64, (const char *)a->in[0] + (size_t)i * es, s->dtype, 1);
            if (!(v >= lo && v <= hi)) return not_in_range(i, v, s->dtype, lo, hi);
        }
    }
    if (a->out[0] != a->in[0]) memcpy(a->out[0], a->in[0], ltc_shape_nbytes(s));
    return LTC_OK;
}
