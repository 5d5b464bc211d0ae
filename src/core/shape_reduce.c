/* shape_reduce.c - shape and dtype rules of the reductions (sum, mean, max, min, argmax,
 * argmin, prod, var, std, logsumexp, norm, all, any) and the scans (cumsum, cumprod,
 * cummax, cummin), whose kernels are src/cpu/reduce.c and scan.c (src/ref alike); declared
 * in shape_inference.h. dim is 0-based here (LTC_NONE: every element). */
#include <math.h>
#include <string.h>

#include "shape_inference.h"

#define SHAPE_STR(s, buf) ltc_shape_str((s), (buf), sizeof(buf))

/* The shape left after reducing `dim` (LTC_NONE: every dim). */
static void reduced(const ltc_shape *self, int64_t dim, bool keepdim, ltc_dtype dt,
                    ltc_shape *out) {
    memset(out, 0, sizeof *out);
    out->dtype = dt;
    if (dim == LTC_NONE) {
        out->ndim = keepdim ? self->ndim : 0;
        for (int i = 0; i < out->ndim; i++) out->dims[i] = 1;
        return;
    }
    for (int i = 0; i < self->ndim; i++) {
        if (i == dim && !keepdim) continue;
        out->dims[out->ndim++] = i == dim ? 1 : self->dims[i];
    }
}

static ltc_status check_nonempty_dim(const ltc_shape *self, int64_t dim) {
    char s[128];
    if (dim == LTC_NONE ? ltc_shape_numel(self) == 0 : (self->ndim > 0 && self->dims[dim] == 0))
        return ltc_errorf(LTC_ERR_ARG, "cannot reduce an empty tensor %s (no identity)",
                          SHAPE_STR(self, s));
    return LTC_OK;
}

ltc_status ltc_shape_sum(const ltc_shape *self, int64_t dim, bool keepdim, ltc_shape *out) {
    reduced(self, dim, keepdim, ltc_dtype_is_float(self->dtype) ? self->dtype : LTC_I64, out);
    return LTC_OK;
}

ltc_status ltc_shape_mean(const ltc_shape *self, int64_t dim, bool keepdim, ltc_shape *out) {
    if (!ltc_dtype_is_float(self->dtype))
        return ltc_errorf(LTC_ERR_ARG, "needs a floating dtype, got %s (convert with :to(\"float32\"))",
                          ltc_dtype_name(self->dtype));
    reduced(self, dim, keepdim, self->dtype, out);
    return LTC_OK;
}

ltc_status ltc_shape_max(const ltc_shape *self, ltc_shape *out) {
    ltc_status st = check_nonempty_dim(self, LTC_NONE);
    if (st) return st;
    reduced(self, LTC_NONE, false, self->dtype, out);
    return LTC_OK;
}

ltc_status ltc_shape_max_dim(const ltc_shape *self, int64_t dim, bool keepdim, ltc_shape *out) {
    ltc_status st = check_nonempty_dim(self, self->ndim ? dim : LTC_NONE);
    if (st) return st;
    reduced(self, self->ndim ? dim : LTC_NONE, keepdim, self->dtype, &out[0]);
    reduced(self, self->ndim ? dim : LTC_NONE, keepdim, LTC_I64, &out[1]);
    return LTC_OK;
}

ltc_status ltc_shape_argmax(const ltc_shape *self, int64_t dim, bool keepdim, ltc_shape *out) {
    if (self->ndim == 0) dim = LTC_NONE;
    ltc_status st = check_nonempty_dim(self, dim);
    if (st) return st;
    reduced(self, dim, keepdim, LTC_I64, out);
    return LTC_OK;
}

ltc_status ltc_shape_var(const ltc_shape *self, int64_t dim, bool unbiased, bool keepdim,
                         ltc_shape *out) {
    (void)unbiased;
    return ltc_shape_mean(self, dim, keepdim, out);
}

ltc_status ltc_shape_norm(const ltc_shape *self, double p, int64_t dim, bool keepdim,
                          ltc_shape *out) {
    if (isnan(p)) return ltc_errorf(LTC_ERR_ARG, "p must be a number, got NaN");
    return ltc_shape_mean(self, dim, keepdim, out);
}

ltc_status ltc_shape_all(const ltc_shape *self, int64_t dim, bool keepdim, ltc_shape *out) {
    reduced(self, self->ndim ? dim : LTC_NONE, keepdim, LTC_BOOL, out);
    return LTC_OK;
}

ltc_status ltc_shape_cumsum(const ltc_shape *self, int64_t dim, ltc_shape *out) {
    (void)dim;
    *out = *self;
    if (!ltc_dtype_is_float(self->dtype)) out->dtype = LTC_I64;
    return LTC_OK;
}

ltc_status ltc_shape_cummax(const ltc_shape *self, int64_t dim, ltc_shape *out) {
    (void)dim;
    out[0] = *self;
    out[1] = *self;
    out[1].dtype = LTC_I64;
    return LTC_OK;
}
