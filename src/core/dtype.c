/* dtype.c - dtypes, shapes and dim wrapping. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ltc.h"

static const struct {
    const char *name, *short_name;
    size_t size;
} dtypes[LTC_DTYPE_COUNT] = {
    [LTC_F32] = {"float32", "f32", 4}, [LTC_F64] = {"float64", "f64", 8},
    [LTC_I32] = {"int32", "i32", 4},   [LTC_I64] = {"int64", "i64", 8},
    [LTC_BOOL] = {"bool", "bool", 1},
};

static bool dtype_ok(ltc_dtype dt) { return (unsigned)dt < LTC_DTYPE_COUNT; }

const char *ltc_dtype_name(ltc_dtype dt) { return dtype_ok(dt) ? dtypes[dt].name : "?"; }
const char *ltc_dtype_short(ltc_dtype dt) { return dtype_ok(dt) ? dtypes[dt].short_name : "?"; }
size_t ltc_dtype_size(ltc_dtype dt) { return dtype_ok(dt) ? dtypes[dt].size : 0; }
bool ltc_dtype_is_float(ltc_dtype dt) { return dt == LTC_F32 || dt == LTC_F64; }

ltc_status ltc_dtype_parse(const char *name, ltc_dtype *out) {
    static const struct {
        const char *alias;
        ltc_dtype dt;
    } aliases[] = {{"float", LTC_F32}, {"double", LTC_F64}, {"int", LTC_I32}, {"long", LTC_I64}};
    for (int i = 0; i < LTC_DTYPE_COUNT; i++)
        if (strcmp(name, dtypes[i].name) == 0) return *out = (ltc_dtype)i, LTC_OK;
    for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
        if (strcmp(name, aliases[i].alias) == 0) return *out = aliases[i].dt, LTC_OK;
    return ltc_errorf(LTC_ERR_ARG,
                      "unknown dtype '%s' (expected float32, float64, int32, int64 or bool)", name);
}

ltc_status ltc_shape_make(ltc_shape *out, ltc_dtype dt, int ndim, const int64_t *dims) {
    if (!dtype_ok(dt)) return ltc_errorf(LTC_ERR_ARG, "invalid dtype %d", (int)dt);
    if (ndim < 0 || ndim > LTC_MAX_DIMS)
        return ltc_errorf(LTC_ERR_ARG, "%d dims given, at most %d supported", ndim, LTC_MAX_DIMS);
    int64_t src[LTC_MAX_DIMS]; /* dims may point into *out */
    if (ndim) memcpy(src, dims, sizeof(int64_t) * (size_t)ndim);
    dims = src;
    memset(out, 0, sizeof *out);
    out->dtype = dt;
    out->ndim = ndim;
    /* the byte count must fit in a signed 64-bit value */
    int64_t limit = INT64_MAX / (int64_t)dtypes[dt].size, numel = 1;
    bool zero = false;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] < 0) return ltc_errorf(LTC_ERR_ARG, "negative size %lld", (long long)dims[i]);
        out->dims[i] = dims[i];
        if (dims[i] == 0) zero = true;
        else if (!zero && numel > limit / dims[i])
            return ltc_errorf(LTC_ERR_ARG, "a tensor of these sizes has too many bytes");
        else if (!zero) numel *= dims[i];
    }
    return LTC_OK;
}

int64_t ltc_shape_numel(const ltc_shape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++) n *= s->dims[i];
    return n;
}

size_t ltc_shape_nbytes(const ltc_shape *s) {
    return (size_t)ltc_shape_numel(s) * ltc_dtype_size(s->dtype);
}

bool ltc_shape_equal(const ltc_shape *a, const ltc_shape *b) {
    if (a->dtype != b->dtype || a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

char *ltc_shape_str(const ltc_shape *s, char *buf, size_t n) {
    size_t k = 0;
    k += (size_t)snprintf(buf + k, n - k, "[");
    for (int i = 0; i < s->ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, i ? ",%lld" : "%lld", (long long)s->dims[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
    return buf;
}

ltc_status ltc_dim_wrap(int64_t dim, int ndim, int *out) {
    int64_t n = ndim > 0 ? ndim : 1;
    if (dim >= 1 && dim <= n) return *out = (int)(dim - 1), LTC_OK;
    if (dim < 0 && dim >= -n) return *out = (int)(n + dim), LTC_OK;
    if (dim == 0) return ltc_errorf(LTC_ERR_ARG, "dim 0 is invalid (dims are 1-based)");
    return ltc_errorf(LTC_ERR_ARG, "dim %lld out of range for a %d-d tensor (expected 1..%lld or -%lld..-1)",
                      (long long)dim, ndim, (long long)n, (long long)n);
}

bool ltc_dtype_fits_f64(double v, ltc_dtype dt) {
    switch (dt) {
    case LTC_F32: return !isfinite(v) || fabs(v) <= (double)FLT_MAX;
    case LTC_I32: return v >= -2147483648.0 && v < 2147483648.0; /* false for NaN */
    case LTC_I64: return v >= -9223372036854775808.0 && v < 9223372036854775808.0;
    default: return true;
    }
}

bool ltc_dtype_fits_i64(int64_t v, ltc_dtype dt) {
    return dt != LTC_I32 || (v >= INT32_MIN && v <= INT32_MAX);
}

ltc_status ltc_dtype_check_f64(double v, ltc_dtype dt) {
    if (ltc_dtype_fits_f64(v, dt)) return LTC_OK;
    return ltc_errorf(LTC_ERR_ARG, "value %.15g cannot be converted to %s without overflow", v,
                      ltc_dtype_name(dt));
}

ltc_status ltc_dtype_check_i64(int64_t v, ltc_dtype dt) {
    if (ltc_dtype_fits_i64(v, dt)) return LTC_OK;
    return ltc_errorf(LTC_ERR_ARG, "value %lld cannot be converted to %s without overflow",
                      (long long)v, ltc_dtype_name(dt));
}

ltc_status ltc_dtype_check_elem(const void *p, ltc_dtype src, ltc_dtype dst) {
    switch (src) {
    case LTC_F32: return ltc_dtype_check_f64((double)*(const float *)p, dst);
    case LTC_F64: return ltc_dtype_check_f64(*(const double *)p, dst);
    case LTC_I32: return ltc_dtype_check_i64(*(const int32_t *)p, dst);
    case LTC_I64: return ltc_dtype_check_i64(*(const int64_t *)p, dst);
    default: return LTC_OK;
    }
}
