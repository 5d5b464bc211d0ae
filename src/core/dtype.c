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
    if (ndim < 0 || ndim > LTC_MAX_DIMS)
        return ltc_errorf(LTC_ERR_ARG, "%d dims given, at most %d supported", ndim, LTC_MAX_DIMS);
    ltc_shape s; /* dims may point into *out */
    memset(&s, 0, sizeof s);
    s.dtype = dt;
    s.ndim = ndim;
    if (ndim) memcpy(s.dims, dims, sizeof(int64_t) * (size_t)ndim);
    ltc_status st = ltc_shape_check(&s);
    if (st == LTC_OK) *out = s;
    return st;
}

ltc_status ltc_shape_check(const ltc_shape *s) {
    if (!dtype_ok(s->dtype)) return ltc_errorf(LTC_ERR_ARG, "invalid dtype %d", (int)s->dtype);
    if (s->ndim < 0 || s->ndim > LTC_MAX_DIMS)
        return ltc_errorf(LTC_ERR_ARG, "%d dims given, at most %d supported", s->ndim,
                          LTC_MAX_DIMS);
    /* The product of the non-zero sizes times the element size must fit in int64, so that
     * every element count, byte count and stride a kernel derives from the shape (even of
     * an empty tensor) is representable. Division instead of multiplication: no overflow. */
    int64_t limit = INT64_MAX / (int64_t)dtypes[s->dtype].size, prod = 1;
    for (int i = 0; i < s->ndim; i++) {
        int64_t d = s->dims[i];
        if (d < 0) {
            char b[256];
            return ltc_errorf(LTC_ERR_ARG, "negative size %lld in %s", (long long)d,
                              ltc_shape_str(s, b, sizeof b));
        }
        if (d == 0) continue;
        if (prod > limit / d) {
            char b[256];
            return ltc_errorf(LTC_ERR_ARG,
                              "a %s tensor of sizes %s has too many bytes (more than 2^63-1)",
                              dtypes[s->dtype].name, ltc_shape_str(s, b, sizeof b));
        }
        prod *= d;
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
