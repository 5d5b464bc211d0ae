/* loss.c - reference kernels of the losses and linear layers: nll_loss, cross_entropy and
 * their backward ops, assert_in_range (written from the definitions: log_softmax through log(sum(exp)) with
 * the max subtracted), linear, its backward and addmm (triple loops). Labels are 1-based;
 * a label of -100 (LTC_LABEL_IGNORED, PyTorch's default ignore_index) is ignored. */
#include <math.h>

#include "ltc_backend.h"
#include "ref.h"

/* Rows and classes of a loss input ([N, C] or [C]). */
static void rows_cols(const ltc_shape *s, int64_t *n, int64_t *c) {
    *n = s->ndim == 2 ? s->dims[0] : 1;
    *c = s->dims[s->ndim - 1];
}

/* log_softmax of row i of x at class j. */
static double log_softmax_at(const void *x, ltc_dtype dt, int64_t i, int64_t c, int64_t j) {
    double mx = -INFINITY, s = 0;
    for (int64_t k = 0; k < c; k++) {
        double v = ltc_ref_get(x, dt, i * c + k);
        if (v > mx || v != v) mx = v;
    }
    for (int64_t k = 0; k < c; k++) s += exp(ltc_ref_get(x, dt, i * c + k) - mx);
    return ltc_ref_get(x, dt, i * c + j) - mx - log(s);
}

/* label()'s value for a row labelled LTC_LABEL_IGNORED (PyTorch's default ignore_index). */
#define IGNORED (-2)

/* The 0-based label of row i from target in[k]; IGNORED; or -1 with the error set if out of
 * range. */
static int64_t label(const ltc_kernel_args *a, int k, int64_t i, int64_t c, const char *op) {
    int64_t v = ltc_ref_get_i64(a->in[k], a->in_shapes[k].dtype, i);
    if (v >= 1 && v <= c) return v - 1;
    if (v == LTC_LABEL_IGNORED) return IGNORED;
    ltc_label_range_error(op, v, c);
    return -1;
}

/* The number of rows of n not ignored (the mean's divisor); -1 with the error set if a label
 * is out of range. */
static int64_t kept_rows(const ltc_kernel_args *a, int k, int64_t n, int64_t c, const char *op) {
    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t t = label(a, k, i, c, op);
        if (t == -1) return -1;
        kept += t != IGNORED;
    }
    return kept;
}

/* Per-row losses, summed (mean: over the rows kept; 0/0 is NaN); an ignored row's is 0. */
static ltc_status forward(const ltc_kernel_args *a, bool ce, const char *op) {
    const ltc_shape *s = &a->in_shapes[0];
    int64_t n, c, red = a->attrs[0].i;
    rows_cols(s, &n, &c);
    int64_t kept = kept_rows(a, 1, n, c, op);
    if (kept < 0) return LTC_ERR_ARG;
    double total = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t t = label(a, 1, i, c, op);
        double lp = t == IGNORED ? -0.0
                    : ce         ? log_softmax_at(a->in[0], s->dtype, i, c, t)
                                 : ltc_ref_get(a->in[0], s->dtype, i * c + t);
        if (red == 0) ltc_ref_set(a->out[0], s->dtype, i, -lp);
        total -= lp;
    }
    if (red) ltc_ref_set(a->out[0], s->dtype, 0, red == 1 ? total / (double)kept : total);
    return LTC_OK;
}

/* The gradient rows g * (softmax(x) - one_hot(t)) (cross entropy) or -g one_hot(t) (nll),
 * g the row's grad_output (mean: over the rows kept); 0 for an ignored row. */
static ltc_status backward(const ltc_kernel_args *a, bool ce, const char *op) {
    const ltc_shape *s = &a->in_shapes[1];
    int64_t n, c, red = a->attrs[0].i;
    rows_cols(s, &n, &c);
    int64_t kept = kept_rows(a, 2, n, c, op);
    if (kept < 0) return LTC_ERR_ARG;
    for (int64_t i = 0; i < n; i++) {
        int64_t t = label(a, 2, i, c, op);
        double g = ltc_ref_get(a->in[0], a->in_shapes[0].dtype, red == 0 ? i : 0);
        if (red == 1) g /= (double)kept;
        for (int64_t j = 0; j < c; j++) {
            double d = ce && t != IGNORED ? exp(log_softmax_at(a->in[1], s->dtype, i, c, j)) : 0;
            if (j == t) d -= 1;
            /* nll's gradient is -g at the label and 0 elsewhere, selected (not 0 * g: a
             * NaN gradient stays at the label, as in PyTorch and the CPU kernel) */
            bool zero = t == IGNORED || (!ce && j != t);
            ltc_ref_set(a->out[0], s->dtype, i * c + j, zero ? 0 : g * d);
        }
    }
    return LTC_OK;
}

ltc_status ltc_ref_kernel_nll_loss(const ltc_kernel_args *a) { return forward(a, false, "nll_loss"); }
ltc_status ltc_ref_kernel_cross_entropy(const ltc_kernel_args *a) {
    return forward(a, true, "cross_entropy");
}
ltc_status ltc_ref_kernel_nll_loss_backward(const ltc_kernel_args *a) {
    return backward(a, false, "nll_loss_backward");
}
ltc_status ltc_ref_kernel_cross_entropy_backward(const ltc_kernel_args *a) {
    return backward(a, true, "cross_entropy_backward");
}

/* out[r, o] = sum_p self[r, p] * weight[o, p] (+ bias[o]), self's leading dims as rows r. */
static ltc_status linear(const ltc_kernel_args *a, bool bias) {
    const ltc_shape *w = &a->in_shapes[1], *os = &a->out_shapes[0];
    int64_t k = w->dims[1], n = w->dims[0], m = n ? ltc_shape_numel(os) / n : 0;
    for (int64_t r = 0; r < m; r++)
        for (int64_t o = 0; o < n; o++) {
            double s = bias ? ltc_ref_get(a->in[2], os->dtype, o) : 0;
            for (int64_t p = 0; p < k; p++)
                s += ltc_ref_get(a->in[0], os->dtype, r * k + p) * ltc_ref_get(a->in[1], w->dtype, o * k + p);
            ltc_ref_set(a->out[0], os->dtype, r * n + o, s);
        }
    return LTC_OK;
}

ltc_status ltc_ref_kernel_linear(const ltc_kernel_args *a) { return linear(a, true); }
ltc_status ltc_ref_kernel_linear_nobias(const ltc_kernel_args *a) { return linear(a, false); }

/* linear_backward(grad_output [..., out], self [..., in], weight [out, in]): over the rows r
 * of the leading dims, dX[r, p] = sum_o g[r, o] w[o, p], dW[o, p] = sum_r g[r, o] x[r, p],
 * db[o] = sum_r g[r, o]; in double. */
ltc_status ltc_ref_kernel_linear_backward(const ltc_kernel_args *a) {
    const ltc_shape *w = &a->in_shapes[2];
    ltc_dtype dt = w->dtype;
    int64_t n = w->dims[0], k = w->dims[1], m = n ? ltc_shape_numel(&a->in_shapes[0]) / n : 0;
    for (int64_t r = 0; r < m; r++)
        for (int64_t p = 0; p < k; p++) {
            double s = 0;
            for (int64_t o = 0; o < n; o++)
                s += ltc_ref_get(a->in[0], dt, r * n + o) * ltc_ref_get(a->in[2], dt, o * k + p);
            ltc_ref_set(a->out[0], dt, r * k + p, s);
        }
    for (int64_t o = 0; o < n; o++) {
        for (int64_t p = 0; p < k; p++) {
            double s = 0;
            for (int64_t r = 0; r < m; r++)
                s += ltc_ref_get(a->in[0], dt, r * n + o) * ltc_ref_get(a->in[1], dt, r * k + p);
            ltc_ref_set(a->out[1], dt, o * k + p, s);
        }
        double s = 0;
        for (int64_t r = 0; r < m; r++) s += ltc_ref_get(a->in[0], dt, r * n + o);
        ltc_ref_set(a->out[2], dt, o, s);
    }
    return LTC_OK;
}

/* out[i, j] = beta * self[i, j] (broadcast; not read when beta == 0) + alpha * sum_p
 * mat1[i, p] * mat2[p, j]. */
ltc_status ltc_ref_kernel_addmm(const ltc_kernel_args *a) {
    const ltc_shape *os = &a->out_shapes[0];
    double beta = a->attrs[0].f, alpha = a->attrs[1].f;
    int64_t m = os->dims[0], n = os->dims[1], k = a->in_shapes[1].dims[1];
    for (int64_t i = 0; i < m * n; i++) {
        double s = 0;
        for (int64_t p = 0; p < k; p++)
            s += ltc_ref_get(a->in[1], os->dtype, (i / n) * k + p) *
                 ltc_ref_get(a->in[2], os->dtype, p * n + i % n);
        double self = beta == 0 ? 0 : ltc_ref_get(a->in[0], os->dtype, ltc_ref_offset(os, &a->in_shapes[0], i));
        ltc_ref_set(a->out[0], os->dtype, i, beta * self + alpha * s);
    }
    return LTC_OK;
}

/* mse_loss(self, target, reduction): (x - t)^2 over the broadcast of the two (in[0], in[1]),
 * kept (0), averaged (1) or summed (2) in double. */
ltc_status ltc_ref_kernel_mse_loss(const ltc_kernel_args *a) {
    const ltc_shape *xs = &a->in_shapes[0], *ts = &a->in_shapes[1];
    int64_t red = a->attrs[0].i;
    ltc_shape b = {.dtype = xs->dtype, .ndim = xs->ndim > ts->ndim ? xs->ndim : ts->ndim};
    for (int d = 0; d < b.ndim; d++) {
        int dx = d - (b.ndim - xs->ndim), dt = d - (b.ndim - ts->ndim);
        int64_t nx = dx >= 0 ? xs->dims[dx] : 1, nt = dt >= 0 ? ts->dims[dt] : 1;
        b.dims[d] = nx == 1 ? nt : nx;
    }
    double total = 0;
    int64_t n = ltc_shape_numel(&b);
    for (int64_t i = 0; i < n; i++) {
        double d = ltc_ref_get(a->in[0], xs->dtype, ltc_ref_offset(&b, xs, i)) -
                   ltc_ref_get(a->in[1], ts->dtype, ltc_ref_offset(&b, ts, i));
        if (red == 0) ltc_ref_set(a->out[0], xs->dtype, i, d * d);
        total += d * d;
    }
    if (red) ltc_ref_set(a->out[0], xs->dtype, 0, red == 1 ? total / (double)n : total);
    return LTC_OK;
}

/* assert_in_range(self, low, high): a copy of self once every element is in [attrs[0],
 * attrs[1]] (NaN is not); the first element outside is the error. */
ltc_status ltc_ref_kernel_assert_in_range(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0];
    double lo = a->attrs[0].f, hi = a->attrs[1].f;
    for (int64_t i = 0; i < ltc_shape_numel(s); i++) {
        double v = ltc_ref_get(a->in[0], s->dtype, i);
        char t[32];
        if (!(v >= lo && v <= hi))
            return ltc_errorf(LTC_ERR_ARG, "element %lld is %s, not in [%g, %g]", (long long)i + 1,
                              ltc_value_text(t, v, s->dtype), lo, hi);
        ltc_ref_copy(a->out[0], s->dtype, i, a->in[0], s->dtype, i);
    }
    return LTC_OK;
}
