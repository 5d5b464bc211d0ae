/* scan.c - reference kernels of the running ops cumprod, cummax and cummin: for each output
 * element, a loop over the elements before it along dim. */
#include "ref.h"

/* cumprod(Tensor self, dim dim): out[.., j, ..] = the product of self[.., 0..j, ..], in
 * double for floats and int64 (wrapping) for the rest. */
ltc_status ltc_ref_kernel_cumprod(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0], *os = &a->out_shapes[0];
    int64_t outer, n, inner;
    ltc_ref_split(s, a->attrs[0].i, &outer, &n, &inner);
    for (int64_t e = 0; e < ltc_shape_numel(s); e++) {
        int64_t j = e / inner % n, first = e - j * inner;
        if (ltc_dtype_is_float(s->dtype)) {
            double p = 1;
            for (int64_t q = 0; q <= j; q++) p *= ltc_ref_get(a->in[0], s->dtype, first + q * inner);
            ltc_ref_set(a->out[0], os->dtype, e, p);
        } else {
            uint64_t p = 1;
            for (int64_t q = 0; q <= j; q++)
                p *= (uint64_t)ltc_ref_get_i64(a->in[0], s->dtype, first + q * inner);
            ltc_ref_set_i64(a->out[0], os->dtype, e, (int64_t)p);
        }
    }
    return LTC_OK;
}

/* cummax/cummin: out[.., j, ..] = the extreme of self[.., 0..j, ..] and its 1-based index:
 * walking q = 0..j, element q takes over when it is NaN, or when the extreme so far is not
 * NaN and element q is >= (max) or <= (min) it. */
static ltc_status running(const ltc_kernel_args *a, bool is_min) {
    const ltc_shape *s = &a->in_shapes[0];
    int64_t outer, n, inner;
    ltc_ref_split(s, a->attrs[0].i, &outer, &n, &inner);
    for (int64_t e = 0; e < ltc_shape_numel(s); e++) {
        int64_t j = e / inner % n, first = e - j * inner, at = 0;
        for (int64_t q = 1; q <= j; q++) {
            bool take;
            if (ltc_dtype_is_float(s->dtype)) {
                double v = ltc_ref_get(a->in[0], s->dtype, first + q * inner);
                double b = ltc_ref_get(a->in[0], s->dtype, first + at * inner);
                take = isnan(v) || (!isnan(b) && (is_min ? v <= b : v >= b));
            } else {
                int64_t v = ltc_ref_get_i64(a->in[0], s->dtype, first + q * inner);
                int64_t b = ltc_ref_get_i64(a->in[0], s->dtype, first + at * inner);
                take = is_min ? v <= b : v >= b;
            }
            if (take) at = q;
        }
        ltc_ref_copy(a->out[0], s->dtype, e, a->in[0], s->dtype, first + at * inner);
        ltc_ref_set_i64(a->out[1], LTC_I64, e, at + 1);
    }
    return LTC_OK;
}

ltc_status ltc_ref_kernel_cummax(const ltc_kernel_args *a) { return running(a, false); }
ltc_status ltc_ref_kernel_cummin(const ltc_kernel_args *a) { return running(a, true); }
