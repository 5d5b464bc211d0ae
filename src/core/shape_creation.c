/* shape_creation.c - shape and dtype rules of the creation and random ops (zeros, ones,
 * full, arange, rand, randn, empty, linspace, scalar_tensor, eye, randint, bernoulli,
 * multinomial, randperm, clone, contiguous), whose kernels are src/cpu/creation.c and
 * src/ref/creation.c; declared in shape_inference.h. */
#include <math.h>

#include "shape_inference.h"

#define SHAPE_STR(s, buf) ltc_shape_str((s), (buf), sizeof(buf))

ltc_status ltc_shape_creation(const int64_t *size, int n_size, ltc_dtype dtype, ltc_shape *out) {
    return ltc_shape_make(out, dtype == LTC_DTYPE_NONE ? ltc_default_dtype() : dtype, n_size, size);
}

ltc_status ltc_shape_rand(const int64_t *size, int n_size, ltc_dtype dtype, ltc_shape *out) {
    if (dtype != LTC_DTYPE_NONE && !ltc_dtype_is_float(dtype))
        return ltc_errorf(LTC_ERR_ARG, "dtype %s is not a floating dtype (random samples are "
                          "float16, bfloat16, float32 or float64)", ltc_dtype_name(dtype));
    return ltc_shape_creation(size, n_size, dtype, out);
}

ltc_status ltc_shape_scalar_tensor(double value, ltc_dtype dtype, ltc_shape *out) {
    ltc_status st = ltc_dtype_check_f64(value, dtype == LTC_DTYPE_NONE ? ltc_default_dtype() : dtype);
    if (st) return st;
    return ltc_shape_creation(NULL, 0, dtype, out);
}

ltc_status ltc_shape_full(const int64_t *size, int n_size, const ltc_shape *fill_value,
                          ltc_dtype dtype, ltc_shape *out) {
    if (fill_value->ndim != 0)
        return ltc_errorf(LTC_ERR_ARG, "fill_value must be a number or a 0-d tensor, got %d-d",
                          fill_value->ndim);
    return ltc_shape_creation(size, n_size, dtype, out);
}

ltc_status ltc_shape_arange(double start, double end, double step, ltc_dtype dtype,
                            ltc_shape *out) {
    if (!isfinite(start) || !isfinite(end) || !isfinite(step))
        return ltc_errorf(LTC_ERR_ARG, "start, end and step must be finite (got %g, %g, %g)",
                          start, end, step);
    if (step == 0) return ltc_errorf(LTC_ERR_ARG, "step must be nonzero");
    if ((step > 0 && end < start) || (step < 0 && end > start))
        return ltc_errorf(LTC_ERR_ARG, "upper bound and step sign are inconsistent (start %g, end %g, step %g)",
                          start, end, step);
    double n = ceil((end - start) / step);
    if (n > 1e15) return ltc_errorf(LTC_ERR_ARG, "too many elements (%g)", n);
    int64_t len = (int64_t)n;
    return ltc_shape_make(out, dtype == LTC_DTYPE_NONE ? ltc_default_dtype() : dtype, 1, &len);
}

ltc_status ltc_shape_linspace(double start, double end, int64_t steps, ltc_dtype dtype,
                              ltc_shape *out) {
    if (steps < 0) return ltc_errorf(LTC_ERR_ARG, "steps must be >= 0, got %lld", (long long)steps);
    if (!isfinite(start) || !isfinite(end))
        return ltc_errorf(LTC_ERR_ARG, "start and end must be finite (got %g, %g)", start, end);
    return ltc_shape_make(out, dtype == LTC_DTYPE_NONE ? ltc_default_dtype() : dtype, 1, &steps);
}

ltc_status ltc_shape_eye(int64_t rows, int64_t cols, ltc_dtype dtype, ltc_shape *out) {
    if (cols == LTC_NONE) cols = rows;
    if (rows < 0 || cols < 0)
        return ltc_errorf(LTC_ERR_ARG, "rows and cols must be >= 0, got %lld and %lld",
                          (long long)rows, (long long)cols);
    int64_t dims[2] = {rows, cols};
    return ltc_shape_make(out, dtype == LTC_DTYPE_NONE ? ltc_default_dtype() : dtype, 2, dims);
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
    ltc_status st = ltc_shape_need_probability(p, "p");
    if (st) return st;
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_multinomial(const ltc_shape *self, int64_t num_samples, bool replacement,
                                 ltc_shape *out) {
    char s[128];
    if (self->ndim != 1 && self->ndim != 2)
        return ltc_errorf(LTC_ERR_ARG, "self must be weights [C] or [N, C], got %s", SHAPE_STR(self, s));
    if (!ltc_dtype_is_float(self->dtype))
        return ltc_errorf(LTC_ERR_ARG, "weights must be of a floating dtype, got %s",
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

ltc_status ltc_shape_copy(const ltc_shape *self, ltc_shape *out) {
    *out = *self;
    return LTC_OK;
}
