/* loss.c - CPU kernels of the classification losses: nll_loss, cross_entropy (log_softmax
 * and nll_loss in one pass) and their backward ops. Input [N, C] (or [C] with a 0-d
 * target), 1-based int64/int32 class labels; reduction 0 none, 1 mean, 2 sum (attrs[0]).
 * Sums accumulate in double. A label outside 1..C is a run-time error. */
#include <math.h>
#include <string.h>

#include "elementwise.h"

/* Rows N and classes C of the input. */
static void rows_cols(const ltc_shape *s, int64_t *n, int64_t *c) {
    *n = s->ndim == 2 ? s->dims[0] : 1;
    *c = s->dims[s->ndim - 1];
}

/* The 0-based class of row i, or a negative value (with the error set) if out of range. */
static int64_t label(const ltc_kernel_args *a, int k, int64_t i, int64_t c, const char *op) {
    ltc_dtype dt = a->in_shapes[k].dtype;
    int64_t v = dt == LTC_I64 ? ((const int64_t *)a->in[k])[i] : ((const int32_t *)a->in[k])[i];
    if (v < 1 || v > c) {
        ltc_errorf(LTC_ERR_ARG, "%s: target %lld out of range for %lld classes (labels are "
                   "1-based)", op, (long long)v, (long long)c);
        return -1;
    }
    return v - 1;
}

static inline double get(const void *p, ltc_dtype dt, int64_t i) {
    return dt == LTC_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static inline void put(void *p, ltc_dtype dt, int64_t i, double v) {
    if (dt == LTC_F32) ((float *)p)[i] = (float)v;
    else ((double *)p)[i] = v;
}

/* Forward: per-row loss -x[t] (nll) or logsumexp(x) - x[t] (cross entropy), reduced. */
static ltc_status loss_forward(const ltc_kernel_args *a, bool ce, const char *op) {
    const ltc_shape *s = &a->in_shapes[0];
    ltc_dtype dt = s->dtype;
    int64_t n, c, red = a->attrs[0].i;
    rows_cols(s, &n, &c);
    double total = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t t = label(a, 1, i, c, op);
        if (t < 0) return LTC_ERR_ARG;
        double l = -get(a->in[0], dt, i * c + t);
        if (ce) {
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < c; j++) {
                double v = get(a->in[0], dt, i * c + j);
                if (v > mx || v != v) mx = v;
            }
            for (int64_t j = 0; j < c; j++) sum += exp(get(a->in[0], dt, i * c + j) - mx);
            /* (max - x[t]) first: max + log(sum) would round log(sum) away for large x */
            l = (l + mx) + log(sum);
        }
        if (red == 0) put(a->out[0], dt, i, l);
        else total += l;
    }
    if (red != 0) put(a->out[0], dt, 0, red == 1 ? total / (double)n : total);
    return LTC_OK;
}

/* Backward: d loss / d input, scaled by grad_output (in[0]); input in[1], target in[2]. */
static ltc_status loss_backward(const ltc_kernel_args *a, bool ce, const char *op) {
    const ltc_shape *s = &a->in_shapes[1];
    ltc_dtype dt = s->dtype;
    int64_t n, c, red = a->attrs[0].i;
    rows_cols(s, &n, &c);
    if (!ce) memset(a->out[0], 0, ltc_shape_nbytes(s));
    for (int64_t i = 0; i < n; i++) {
        int64_t t = label(a, 2, i, c, op);
        if (t < 0) return LTC_ERR_ARG;
        double g = get(a->in[0], dt, red == 0 ? i : 0);
        if (red == 1) g /= (double)n;
        if (ce) {
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < c; j++) {
                double v = get(a->in[1], dt, i * c + j);
                if (v > mx || v != v) mx = v;
            }
            for (int64_t j = 0; j < c; j++) sum += exp(get(a->in[1], dt, i * c + j) - mx);
            double inv = g / sum;
            for (int64_t j = 0; j < c; j++)
                put(a->out[0], dt, i * c + j, exp(get(a->in[1], dt, i * c + j) - mx) * inv);
            put(a->out[0], dt, i * c + t, get(a->out[0], dt, i * c + t) - g);
        } else {
            put(a->out[0], dt, i * c + t, -g);
        }
    }
    return LTC_OK;
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
