/* shape_more.c - shape and dtype rules of masked_fill, scatter, the nn functions mse_loss,
 * dropout, embedding, layer_norm and batch_norm, and the creation ops linspace, eye, randint
 * bernoulli, multinomial and randperm; declared in shape_inference.h. Index data is 1-based. */
#include <math.h>
#include <string.h>

#include "shape_inference.h"

#define SHAPE_STR(s, buf) ltc_shape_str((s), (buf), sizeof(buf))

static ltc_status need_int(const ltc_shape *s, const char *what) {
    if (s->dtype != LTC_I64 && s->dtype != LTC_I32)
        return ltc_errorf(LTC_ERR_ARG, "%s must be an int64 or int32 tensor, got %s", what,
                          ltc_dtype_name(s->dtype));
    return LTC_OK;
}

/* A 1-d tensor of size [n] and dtype dt named `what`. */
static ltc_status need_vector(const ltc_shape *s, int64_t n, ltc_dtype dt, const char *what) {
    char a[128];
    if (s->ndim != 1 || s->dims[0] != n)
        return ltc_errorf(LTC_ERR_ARG, "%s must have size [%lld], got %s", what, (long long)n,
                          SHAPE_STR(s, a));
    if (s->dtype != dt)
        return ltc_errorf(LTC_ERR_ARG, "%s must be %s (the input's dtype), got %s", what,
                          ltc_dtype_name(dt), ltc_dtype_name(s->dtype));
    return LTC_OK;
}

static ltc_status need_probability(double p, const char *what) {
    if (!(p >= 0 && p <= 1))
        return ltc_errorf(LTC_ERR_ARG, "%s must be between 0 and 1, got %g", what, p);
    return LTC_OK;
}

/* ---- masking and scattering ------------------------------------------------------------- */

ltc_status ltc_shape_masked_fill(const ltc_shape *self, const ltc_shape *mask,
                                 const ltc_shape *value, ltc_shape *out) {
    if (mask->dtype != LTC_BOOL)
        return ltc_errorf(LTC_ERR_ARG, "mask must be a bool tensor, got %s (compare first, e.g. "
                          "x:gt(0))", ltc_dtype_name(mask->dtype));
    if (value->ndim != 0)
        return ltc_errorf(LTC_ERR_ARG, "value must be a number or a 0-d tensor, got %d-d",
                          value->ndim);
    out->dtype = self->dtype;
    return ltc_broadcast_shapes(self, mask, out);
}

ltc_status ltc_shape_scatter(const ltc_shape *self, int64_t dim, const ltc_shape *index,
                             const ltc_shape *src, ltc_shape *out) {
    ltc_shape g;
    ltc_status st = ltc_shape_gather(self, dim, index, &g);
    if (st) return st;
    if (src->ndim == 0 && self->ndim != 0) { /* a value: any dtype, converted */
        *out = *self;
        return LTC_OK;
    }
    if (src->dtype != self->dtype)
        return ltc_errorf(LTC_ERR_ARG, "src must have self's dtype %s, got %s (or be a number)",
                          ltc_dtype_name(self->dtype), ltc_dtype_name(src->dtype));
    if ((st = ltc_shape_src_covers_index(index, src))) return st;
    *out = *self;
    return LTC_OK;
}

/* ---- neural-network functions ------------------------------------------------------------ */

ltc_status ltc_shape_mse_loss(const ltc_shape *self, const ltc_shape *target, int64_t reduction,
                              ltc_shape *out) {
    if (reduction < 0 || reduction > 2)
        return ltc_errorf(LTC_ERR_ARG, "reduction must be 0 (none), 1 (mean) or 2 (sum), got %lld",
                          (long long)reduction);
    ltc_status st = ltc_broadcast_shapes(self, target, out);
    if (st) return st;
    out->dtype = self->dtype;
    if (reduction != 0) out->ndim = 0;
    return LTC_OK;
}

ltc_status ltc_shape_dropout(const ltc_shape *self, double p, bool train, ltc_shape *out) {
    (void)train;
    ltc_status st = ltc_shape_need_float(self, "self");
    if (st || (st = need_probability(p, "p"))) return st;
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_embedding(const ltc_shape *weight, const ltc_shape *indices, ltc_shape *out) {
    ltc_status st = need_int(indices, "indices");
    if (st) return st;
    if (weight->ndim != 2) {
        char a[128];
        return ltc_errorf(LTC_ERR_ARG, "weight must be 2-d [num, dim], got %s", SHAPE_STR(weight, a));
    }
    if (indices->ndim == LTC_MAX_DIMS)
        return ltc_errorf(LTC_ERR_ARG, "indices have %d dims, the most a tensor has", indices->ndim);
    *out = *indices;
    out->dims[out->ndim++] = weight->dims[1];
    return ltc_shape_make(out, weight->dtype, out->ndim, out->dims);
}

ltc_status ltc_shape_layer_norm(const ltc_shape *self, const int64_t *normalized_shape,
                                int n_normalized_shape, const ltc_shape *weight,
                                const ltc_shape *bias, double eps, ltc_shape *out) {
    ltc_status st = ltc_shape_need_float(self, "self");
    if (st) return st;
    char a[128], b[128];
    int k = n_normalized_shape, lead = self->ndim - k;
    bool ok = k >= 1 && lead >= 0;
    for (int i = 0; ok && i < k; i++) ok = self->dims[lead + i] == normalized_shape[i];
    if (!ok) {
        ltc_shape ns = {.dtype = self->dtype, .ndim = k < LTC_MAX_DIMS ? k : LTC_MAX_DIMS};
        for (int i = 0; i < ns.ndim; i++) ns.dims[i] = normalized_shape[i];
        return ltc_errorf(LTC_ERR_ARG, "normalized_shape %s must be the last dims of self %s",
                          SHAPE_STR(&ns, a), SHAPE_STR(self, b));
    }
    const ltc_shape *wb[2] = {weight, bias};
    const char *names[2] = {"weight", "bias"};
    for (int j = 0; j < 2; j++) {
        ok = wb[j]->ndim == k && wb[j]->dtype == self->dtype;
        for (int i = 0; ok && i < k; i++) ok = wb[j]->dims[i] == normalized_shape[i];
        if (!ok)
            return ltc_errorf(LTC_ERR_ARG, "%s must be %s of size normalized_shape (the last "
                              "dims of self %s), got %s %s", names[j],
                              ltc_dtype_name(self->dtype), SHAPE_STR(self, a),
                              ltc_dtype_name(wb[j]->dtype), SHAPE_STR(wb[j], b));
    }
    if (!(eps >= 0)) return ltc_errorf(LTC_ERR_ARG, "eps must be >= 0, got %g", eps);
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_batch_norm(const ltc_shape *self, const ltc_shape *running_mean,
                                const ltc_shape *running_var, const ltc_shape *weight,
                                const ltc_shape *bias, bool training, double eps,
                                ltc_shape *out) {
    ltc_status st = ltc_shape_need_float(self, "self");
    if (st) return st;
    char a[128];
    if (self->ndim < 2)
        return ltc_errorf(LTC_ERR_ARG, "self must be [N, C, ...], got %s", SHAPE_STR(self, a));
    int64_t c = self->dims[1];
    if ((st = need_vector(running_mean, c, self->dtype, "running_mean")) ||
        (st = need_vector(running_var, c, self->dtype, "running_var")) ||
        (st = need_vector(weight, c, self->dtype, "weight")) ||
        (st = need_vector(bias, c, self->dtype, "bias")))
        return st;
    if (training && c > 0 && ltc_shape_numel(self) / c <= 1)
        return ltc_errorf(LTC_ERR_ARG, "expected more than 1 value per channel when training, "
                          "got input %s", SHAPE_STR(self, a));
    if (!(eps >= 0)) return ltc_errorf(LTC_ERR_ARG, "eps must be >= 0, got %g", eps);
    *out = *self;
    return LTC_OK;
}

/* ---- creation ---------------------------------------------------------------------------- */

ltc_status ltc_shape_linspace(double start, double end, int64_t steps, ltc_dtype dtype,
                              ltc_shape *out) {
    if (steps < 0) return ltc_errorf(LTC_ERR_ARG, "steps must be >= 0, got %lld", (long long)steps);
    if (!isfinite(start) || !isfinite(end))
        return ltc_errorf(LTC_ERR_ARG, "start and end must be finite (got %g, %g)", start, end);
    return ltc_shape_make(out, dtype == LTC_DTYPE_NONE ? LTC_F32 : dtype, 1, &steps);
}

ltc_status ltc_shape_eye(int64_t rows, int64_t cols, ltc_dtype dtype, ltc_shape *out) {
    if (cols == LTC_NONE) cols = rows;
    if (rows < 0 || cols < 0)
        return ltc_errorf(LTC_ERR_ARG, "rows and cols must be >= 0, got %lld and %lld",
                          (long long)rows, (long long)cols);
    int64_t dims[2] = {rows, cols};
    return ltc_shape_make(out, dtype == LTC_DTYPE_NONE ? LTC_F32 : dtype, 2, dims);
}

ltc_status ltc_shape_randint(int64_t low, int64_t high, const int64_t *size, int n_size,
                             ltc_dtype dtype, ltc_shape *out) {
    if (low >= high)
        return ltc_errorf(LTC_ERR_ARG, "low (%lld) must be less than high (%lld)", (long long)low,
                          (long long)high);
    if (high - 1 > (int64_t)1 << 53 || low < -((int64_t)1 << 53))
        return ltc_errorf(LTC_ERR_ARG, "low and high must lie within +-2^53, got %lld and %lld",
                          (long long)low, (long long)high);
    ltc_dtype dt = dtype == LTC_DTYPE_NONE ? LTC_I64 : dtype;
    /* PyTorch: "from is out of bounds" / "to - 1 is out of bounds for int" */
    if (!ltc_dtype_fits_i64(low, dt) || !ltc_dtype_fits_i64(high - 1, dt) ||
        (dt == LTC_BOOL && (low < 0 || high > 2)))
        return ltc_errorf(LTC_ERR_ARG, "the range [%lld, %lld) does not fit %s (low and high - 1 "
                          "must be values of the dtype)", (long long)low, (long long)high,
                          ltc_dtype_name(dt));
    return ltc_shape_make(out, dt, n_size, size);
}

ltc_status ltc_shape_bernoulli(const ltc_shape *self, ltc_shape *out) {
    ltc_status st = ltc_shape_need_float(self, "self (the probabilities)");
    if (st) return st;
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_bernoulli_p(const ltc_shape *self, double p, ltc_shape *out) {
    ltc_status st = need_probability(p, "p");
    if (st) return st;
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_copy(const ltc_shape *self, ltc_shape *out) {
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_multinomial(const ltc_shape *self, int64_t num_samples, bool replacement,
                                 ltc_shape *out) {
    char s[128];
    if (self->ndim != 1 && self->ndim != 2)
        return ltc_errorf(LTC_ERR_ARG, "self must be weights [C] or [N, C], got %s", SHAPE_STR(self, s));
    if (!ltc_dtype_is_float(self->dtype))
        return ltc_errorf(LTC_ERR_ARG, "weights must be float32 or float64, got %s",
                          ltc_dtype_name(self->dtype));
    int64_t ncat = self->dims[self->ndim - 1];
    if (ncat == 0) return ltc_errorf(LTC_ERR_ARG, "self %s has no categories", SHAPE_STR(self, s));
    if (num_samples < 0)
        return ltc_errorf(LTC_ERR_ARG, "num_samples must be >= 0, got %lld", (long long)num_samples);
    if (!replacement && num_samples > ncat)
        return ltc_errorf(LTC_ERR_ARG, "cannot draw %lld samples from %lld categories without "
                          "replacement", (long long)num_samples, (long long)ncat);
    int64_t d[2] = {self->dims[0], num_samples};
    if (self->ndim == 1) d[0] = num_samples;
    return ltc_shape_make(out, LTC_I64, self->ndim, d);
}

ltc_status ltc_shape_randperm(int64_t size, ltc_dtype dtype, ltc_shape *out) {
    if (size < 0) return ltc_errorf(LTC_ERR_ARG, "size must be >= 0, got %lld", (long long)size);
    if (dtype == LTC_BOOL) return ltc_errorf(LTC_ERR_ARG, "dtype bool cannot hold 1..size");
    return ltc_shape_make(out, dtype == LTC_DTYPE_NONE ? LTC_I64 : dtype, 1, &size);
}
