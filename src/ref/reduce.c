/* reduce.c - reference kernels of the reductions (sum mean prod max min argmax argmin var
 * std logsumexp norm all any cumsum). Each views its input as
 * outer x n x inner around the reduced dim (ltc_ref_split) and, for every (outer, inner)
 * pair, walks the n elements of the reduced dim. Floats accumulate in double, integers and
 * bool in int64. */
#include <math.h>

#include "ref.h"

/* The element (o, j, k) of an outer x n x inner view. */
#define AT(o, j, k) (((o) * n + (j)) * inner + (k))

/* sum(Tensor self, dim? dim, bool keepdim): of nothing is 0; integers and bool give int64. */
ltc_status ltc_ref_kernel_sum(const ltc_kernel_args *a) {
    const ltc_shape *is = &a->in_shapes[0], *os = &a->out_shapes[0];
    int64_t outer, n, inner;
    ltc_ref_split(is, a->attrs[0].i, &outer, &n, &inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            if (ltc_dtype_is_float(is->dtype)) {
                double s = 0;
                for (int64_t j = 0; j < n; j++) s += ltc_ref_get(a->in[0], is->dtype, AT(o, j, k));
                ltc_ref_set(a->out[0], os->dtype, o * inner + k, s);
            } else {
                uint64_t s = 0; /* wraps on overflow, as in PyTorch */
                for (int64_t j = 0; j < n; j++)
                    s += (uint64_t)ltc_ref_get_i64(a->in[0], is->dtype, AT(o, j, k));
                ltc_ref_set_i64(a->out[0], os->dtype, o * inner + k, (int64_t)s);
            }
        }
    return LTC_OK;
}

/* mean(Tensor self, dim? dim, bool keepdim): sum / n; of nothing is NaN. */
ltc_status ltc_ref_kernel_mean(const ltc_kernel_args *a) {
    const ltc_shape *is = &a->in_shapes[0], *os = &a->out_shapes[0];
    int64_t outer, n, inner;
    ltc_ref_split(is, a->attrs[0].i, &outer, &n, &inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            double s = 0;
            for (int64_t j = 0; j < n; j++) s += ltc_ref_get(a->in[0], is->dtype, AT(o, j, k));
            ltc_ref_set(a->out[0], os->dtype, o * inner + k, s / (double)n);
        }
    return LTC_OK;
}

/* The 0-based position along the reduced dim of the largest (or, for `smallest`, the
 * smallest) element of line (o, k): the first on ties; the first NaN wins. n >= 1. */
static int64_t arg_extreme(const ltc_kernel_args *a, int64_t o, int64_t k, int64_t n,
                           int64_t inner, bool smallest) {
    const ltc_shape *is = &a->in_shapes[0];
    int64_t best = 0;
    if (ltc_dtype_is_float(is->dtype)) {
        double bv = ltc_ref_get(a->in[0], is->dtype, AT(o, 0, k));
        for (int64_t j = 1; j < n && !isnan(bv); j++) {
            double v = ltc_ref_get(a->in[0], is->dtype, AT(o, j, k));
            if (isnan(v) || (smallest ? v < bv : v > bv)) best = j, bv = v;
        }
    } else {
        int64_t bv = ltc_ref_get_i64(a->in[0], is->dtype, AT(o, 0, k));
        for (int64_t j = 1; j < n; j++) {
            int64_t v = ltc_ref_get_i64(a->in[0], is->dtype, AT(o, j, k));
            if (smallest ? v < bv : v > bv) best = j, bv = v;
        }
    }
    return best;
}

/* Writes the extreme values (out `vals`, NULL to skip) and/or their 1-based int64 indices
 * (`idx`, NULL to skip) along dim (LTC_NONE: the flattened tensor). */
static ltc_status extreme(const ltc_kernel_args *a, int64_t dim, void *vals, int64_t *idx,
                          bool smallest, const char *name) {
    const ltc_shape *is = &a->in_shapes[0];
    int64_t outer, n, inner;
    ltc_ref_split(is, dim, &outer, &n, &inner);
    if (outer * inner == 0) return LTC_OK;
    if (n == 0) return ltc_errorf(LTC_ERR_ARG, "%s: the reduced dim is empty", name);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            int64_t j = arg_extreme(a, o, k, n, inner, smallest);
            if (vals) ltc_ref_copy(vals, is->dtype, o * inner + k, a->in[0], is->dtype, AT(o, j, k));
            if (idx) idx[o * inner + k] = j + 1;
        }
    return LTC_OK;
}

/* max(Tensor self): the largest element (NaN if any is NaN); empty is an error. */
ltc_status ltc_ref_kernel_max(const ltc_kernel_args *a) {
    if (ltc_shape_numel(&a->in_shapes[0]) == 0) return ltc_errorf(LTC_ERR_ARG, "max: the input is empty");
    return extreme(a, LTC_NONE, a->out[0], NULL, false, "max");
}

/* max.dim(Tensor self, dim dim, bool keepdim): values and 1-based indices along dim. */
ltc_status ltc_ref_kernel_max_dim(const ltc_kernel_args *a) {
    return extreme(a, a->attrs[0].i, a->out[0], a->out[1], false, "max");
}

/* argmax(Tensor self, dim? dim, bool keepdim): 1-based index of the largest element. */
ltc_status ltc_ref_kernel_argmax(const ltc_kernel_args *a) {
    return extreme(a, a->attrs[0].i, NULL, a->out[0], false, "argmax");
}

/* min(Tensor self): the smallest element (NaN if any is NaN); empty is an error. */
ltc_status ltc_ref_kernel_min(const ltc_kernel_args *a) {
    if (ltc_shape_numel(&a->in_shapes[0]) == 0) return ltc_errorf(LTC_ERR_ARG, "min: the input is empty");
    return extreme(a, LTC_NONE, a->out[0], NULL, true, "min");
}

/* min.dim(Tensor self, dim dim, bool keepdim): values and 1-based indices along dim. */
ltc_status ltc_ref_kernel_min_dim(const ltc_kernel_args *a) {
    return extreme(a, a->attrs[0].i, a->out[0], a->out[1], true, "min");
}

/* argmin(Tensor self, dim? dim, bool keepdim): 1-based index of the smallest element. */
ltc_status ltc_ref_kernel_argmin(const ltc_kernel_args *a) {
    return extreme(a, a->attrs[0].i, NULL, a->out[0], true, "argmin");
}

/* prod(Tensor self, dim? dim, bool keepdim): of nothing is 1; integers and bool give int64. */
ltc_status ltc_ref_kernel_prod(const ltc_kernel_args *a) {
    const ltc_shape *is = &a->in_shapes[0], *os = &a->out_shapes[0];
    int64_t outer, n, inner;
    ltc_ref_split(is, a->attrs[0].i, &outer, &n, &inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            if (ltc_dtype_is_float(is->dtype)) {
                double p = 1;
                for (int64_t j = 0; j < n; j++) p *= ltc_ref_get(a->in[0], is->dtype, AT(o, j, k));
                ltc_ref_set(a->out[0], os->dtype, o * inner + k, p);
            } else {
                uint64_t p = 1; /* wraps on overflow, as in PyTorch */
                for (int64_t j = 0; j < n; j++)
                    p *= (uint64_t)ltc_ref_get_i64(a->in[0], is->dtype, AT(o, j, k));
                ltc_ref_set_i64(a->out[0], os->dtype, o * inner + k, (int64_t)p);
            }
        }
    return LTC_OK;
}

/* var or std along attrs[0] (attrs: dim, unbiased, keepdim): two passes, the mean then
 * the sum of squared deviations, divided by n - 1 (unbiased) or n. */
static ltc_status var_std(const ltc_kernel_args *a, bool take_sqrt) {
    const ltc_shape *is = &a->in_shapes[0], *os = &a->out_shapes[0];
    int64_t outer, n, inner;
    ltc_ref_split(is, a->attrs[0].i, &outer, &n, &inner);
    double divisor = (double)n - (a->attrs[1].i ? 1 : 0);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            double mean = 0, ss = 0;
            for (int64_t j = 0; j < n; j++) mean += ltc_ref_get(a->in[0], is->dtype, AT(o, j, k));
            mean /= (double)n;
            for (int64_t j = 0; j < n; j++) {
                double d = ltc_ref_get(a->in[0], is->dtype, AT(o, j, k)) - mean;
                ss += d * d;
            }
            double v = divisor > 0 ? ss / divisor : NAN;
            ltc_ref_set(a->out[0], os->dtype, o * inner + k, take_sqrt ? sqrt(v) : v);
        }
    return LTC_OK;
}

/* var(Tensor self, dim? dim, bool unbiased, bool keepdim) */
ltc_status ltc_ref_kernel_var(const ltc_kernel_args *a) { return var_std(a, false); }

/* std(Tensor self, dim? dim, bool unbiased, bool keepdim) */
ltc_status ltc_ref_kernel_std(const ltc_kernel_args *a) { return var_std(a, true); }

/* logsumexp(Tensor self, dim? dim, bool keepdim): max + log(sum(exp(x - max))); a line
 * whose max is infinite gives that max (or NaN), an empty line -inf. */
ltc_status ltc_ref_kernel_logsumexp(const ltc_kernel_args *a) {
    const ltc_shape *is = &a->in_shapes[0], *os = &a->out_shapes[0];
    int64_t outer, n, inner;
    ltc_ref_split(is, a->attrs[0].i, &outer, &n, &inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            double mx = -INFINITY, s = 0;
            for (int64_t j = 0; j < n; j++) {
                double v = ltc_ref_get(a->in[0], is->dtype, AT(o, j, k));
                if (v > mx || isnan(v)) mx = v;
            }
            if (isinf(mx)) {
                ltc_ref_set(a->out[0], os->dtype, o * inner + k, mx);
                continue;
            }
            for (int64_t j = 0; j < n; j++) s += exp(ltc_ref_get(a->in[0], is->dtype, AT(o, j, k)) - mx);
            ltc_ref_set(a->out[0], os->dtype, o * inner + k, mx + log(s));
        }
    return LTC_OK;
}

/* norm(Tensor self, float p, dim? dim, bool keepdim): attrs p, dim, keepdim. */
ltc_status ltc_ref_kernel_norm(const ltc_kernel_args *a) {
    const ltc_shape *is = &a->in_shapes[0], *os = &a->out_shapes[0];
    double p = a->attrs[0].f;
    int64_t outer, n, inner;
    ltc_ref_split(is, a->attrs[1].i, &outer, &n, &inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            double r = p == -INFINITY ? INFINITY : 0;
            for (int64_t j = 0; j < n; j++) {
                double v = fabs(ltc_ref_get(a->in[0], is->dtype, AT(o, j, k)));
                if (p == 0) r += v != 0; /* NaN is nonzero: counted, as PyTorch */
                else if (isnan(v)) r = v;
                else if (isnan(r)) continue;
                else if (p == INFINITY) r = v > r ? v : r;
                else if (p == -INFINITY) r = v < r ? v : r;
                else if (p == 0) r += v != 0;
                else r += pow(v, p);
            }
            if (!isinf(p) && p != 0 && !isnan(r)) r = pow(r, 1 / p);
            ltc_ref_set(a->out[0], os->dtype, o * inner + k, r);
        }
    return LTC_OK;
}

/* all / any along attrs[0]: whether every / some element is nonzero (NaN is nonzero). */
static ltc_status all_any(const ltc_kernel_args *a, bool all) {
    const ltc_shape *is = &a->in_shapes[0];
    int64_t outer, n, inner;
    ltc_ref_split(is, a->attrs[0].i, &outer, &n, &inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            bool r = all;
            for (int64_t j = 0; j < n; j++) {
                bool nz = ltc_dtype_is_float(is->dtype)
                              ? ltc_ref_get(a->in[0], is->dtype, AT(o, j, k)) != 0
                              : ltc_ref_get_i64(a->in[0], is->dtype, AT(o, j, k)) != 0;
                r = all ? r && nz : r || nz;
            }
            ((uint8_t *)a->out[0])[o * inner + k] = r;
        }
    return LTC_OK;
}

/* all(Tensor self, dim? dim, bool keepdim) */
ltc_status ltc_ref_kernel_all(const ltc_kernel_args *a) { return all_any(a, true); }

/* any(Tensor self, dim? dim, bool keepdim) */
ltc_status ltc_ref_kernel_any(const ltc_kernel_args *a) { return all_any(a, false); }

/* cumsum(Tensor self, dim dim): out[.., j, ..] = sum of in[.., 0..j, ..]. */
ltc_status ltc_ref_kernel_cumsum(const ltc_kernel_args *a) {
    const ltc_shape *is = &a->in_shapes[0], *os = &a->out_shapes[0];
    int64_t outer, n, inner;
    ltc_ref_split(is, a->attrs[0].i, &outer, &n, &inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            double s = 0;
            uint64_t si = 0;
            for (int64_t j = 0; j < n; j++) {
                if (ltc_dtype_is_float(is->dtype)) {
                    s += ltc_ref_get(a->in[0], is->dtype, AT(o, j, k));
                    ltc_ref_set(a->out[0], os->dtype, AT(o, j, k), s);
                } else {
                    si += (uint64_t)ltc_ref_get_i64(a->in[0], is->dtype, AT(o, j, k));
                    ltc_ref_set_i64(a->out[0], os->dtype, AT(o, j, k), (int64_t)si);
                }
            }
        }
    return LTC_OK;
}
