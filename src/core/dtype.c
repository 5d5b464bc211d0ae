/* dtype.c - dtypes, shapes and dim wrapping. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ltc.h"

static const struct {
    const char *name, *short_name;
    size_t size;
} dtypes[LTC_DTYPE_COUNT] = {
    [LTC_F32] = {"float32", "f32", 4}, [LTC_F64] = {"float64", "f64", 8},
    [LTC_I32] = {"int32", "i32", 4},   [LTC_I64] = {"int64", "i64", 8},
    [LTC_BOOL] = {"bool", "bool", 1},  [LTC_U8] = {"uint8", "u8", 1},
    [LTC_I8] = {"int8", "i8", 1},      [LTC_I16] = {"int16", "i16", 2},
    [LTC_F16] = {"float16", "f16", 2}, [LTC_BF16] = {"bfloat16", "bf16", 2},
};

static bool dtype_ok(ltc_dtype dt) { return (unsigned)dt < LTC_DTYPE_COUNT; }

const char *ltc_dtype_name(ltc_dtype dt) { return dtype_ok(dt) ? dtypes[dt].name : "?"; }
const char *ltc_dtype_short(ltc_dtype dt) { return dtype_ok(dt) ? dtypes[dt].short_name : "?"; }
size_t ltc_dtype_size(ltc_dtype dt) { return dtype_ok(dt) ? dtypes[dt].size : 0; }
bool ltc_dtype_is_float(ltc_dtype dt) {
    return dt == LTC_F32 || dt == LTC_F64 || dt == LTC_F16 || dt == LTC_BF16;
}
bool ltc_dtype_is_narrow(ltc_dtype dt) { return dt >= LTC_U8 && dt < LTC_DTYPE_COUNT; }
ltc_dtype ltc_dtype_compute(ltc_dtype dt) {
    switch (dt) {
    case LTC_U8: case LTC_I8: case LTC_I16: return LTC_I32;
    case LTC_F16: case LTC_BF16: return LTC_F32;
    default: return dt;
    }
}

static ltc_dtype default_dtype = LTC_F32;

ltc_dtype ltc_default_dtype(void) { return __atomic_load_n(&default_dtype, __ATOMIC_RELAXED); }

ltc_status ltc_set_default_dtype(ltc_dtype dt) {
    if (!dtype_ok(dt) || !ltc_dtype_is_float(dt))
        return ltc_errorf(LTC_ERR_ARG, "the default dtype must be a floating dtype (float32, "
                          "float64, float16 or bfloat16), got %s", ltc_dtype_name(dt));
    __atomic_store_n(&default_dtype, dt, __ATOMIC_RELAXED);
    return LTC_OK;
}

ltc_status ltc_dtype_parse(const char *name, ltc_dtype *out) {
    static const struct {
        const char *alias;
        ltc_dtype dt;
    } aliases[] = {{"float", LTC_F32}, {"double", LTC_F64}, {"int", LTC_I32}, {"long", LTC_I64},
                  {"byte", LTC_U8},    {"char", LTC_I8},     {"short", LTC_I16},
                  {"half", LTC_F16}};
    for (int i = 0; i < LTC_DTYPE_COUNT; i++)
        if (strcmp(name, dtypes[i].name) == 0) return *out = (ltc_dtype)i, LTC_OK;
    for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
        if (strcmp(name, aliases[i].alias) == 0) return *out = aliases[i].dt, LTC_OK;
    return ltc_errorf(LTC_ERR_ARG,
                      "unknown dtype '%s' (expected float32, float64, int32, int64, bool, uint8, "
                      "int8, int16, float16 or bfloat16)", name);
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
    case LTC_U8: return v >= 0 && v <= 255;
    case LTC_I8: return v >= -128 && v <= 127;
    case LTC_I16: return v >= -32768 && v <= 32767;
    case LTC_F16: return !isfinite(v) || fabs(v) < 65520.0; /* 65520 rounds to inf */
    case LTC_BF16: /* finite values that round to inf do not fit */
        return !isfinite(v) ||
               (fabs(v) <= (double)FLT_MAX && (ltc_f32_to_bf16((float)v) & 0x7fff) != 0x7f80);
    default: return true;
    }
}

bool ltc_dtype_fits_i64(int64_t v, ltc_dtype dt) {
    switch (dt) {
    case LTC_I32: return v >= INT32_MIN && v <= INT32_MAX;
    case LTC_U8: return v >= 0 && v <= 255;
    case LTC_I8: return v >= -128 && v <= 127;
    case LTC_I16: return v >= -32768 && v <= 32767;
    case LTC_F16: return v > -65520 && v < 65520;
    default: return true;
    }
}

ltc_status ltc_dtype_check_f64(double v, ltc_dtype dt) {
    if (ltc_dtype_fits_f64(v, dt)) return LTC_OK;
    return ltc_errorf(LTC_ERR_ARG, "value %.15g cannot be converted to %s without overflow", v,
                      ltc_dtype_name(dt));
}

/* c10's overflow check, which lets an unsigned type take an integer down to -max (uint8: -1
 * is 255, -256 overflows), as PyTorch's fill_, full, masked_fill and t[i] = v do; a float
 * value gets no such leeway (ltc_dtype_check_f64). */
ltc_status ltc_dtype_check_i64(int64_t v, ltc_dtype dt) {
    if (ltc_dtype_fits_i64(v, dt) || (dt == LTC_U8 && v >= -255 && v < 0)) return LTC_OK;
    return ltc_errorf(LTC_ERR_ARG, "value %lld cannot be converted to %s without overflow",
                      (long long)v, ltc_dtype_name(dt));
}

ltc_status ltc_dtype_check_elem(const void *p, ltc_dtype src, ltc_dtype dst) {
    if (src == LTC_BOOL) return LTC_OK;
    if (ltc_dtype_is_float(src)) return ltc_dtype_check_f64(ltc_dtype_load_f64(p, src, 0), dst);
    return ltc_dtype_check_i64(ltc_dtype_load_i64(p, src, 0), dst);
}

/* ---- element access -------------------------------------------------------------------- */

double ltc_dtype_load_f64(const void *p, ltc_dtype dt, int64_t i) {
    switch (dt) {
    case LTC_F32: return ((const float *)p)[i];
    case LTC_F64: return ((const double *)p)[i];
    case LTC_I32: return ((const int32_t *)p)[i];
    case LTC_I64: return (double)((const int64_t *)p)[i];
    case LTC_U8: return ((const uint8_t *)p)[i];
    case LTC_I8: return ((const int8_t *)p)[i];
    case LTC_I16: return ((const int16_t *)p)[i];
    case LTC_F16: return ltc_f16_to_f32(((const uint16_t *)p)[i]);
    case LTC_BF16: return ltc_bf16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const uint8_t *)p)[i] != 0;
    }
}

int64_t ltc_dtype_load_i64(const void *p, ltc_dtype dt, int64_t i) {
    switch (dt) {
    case LTC_I32: return ((const int32_t *)p)[i];
    case LTC_I64: return ((const int64_t *)p)[i];
    case LTC_U8: return ((const uint8_t *)p)[i];
    case LTC_I8: return ((const int8_t *)p)[i];
    case LTC_I16: return ((const int16_t *)p)[i];
    case LTC_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: return (int64_t)ltc_dtype_load_f64(p, dt, i);
    }
}

void ltc_dtype_store_i64(void *p, ltc_dtype dt, int64_t i, int64_t v) {
    switch (dt) {
    case LTC_F32: ((float *)p)[i] = (float)v; break;
    case LTC_F64: ((double *)p)[i] = (double)v; break;
    case LTC_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
    case LTC_I64: ((int64_t *)p)[i] = v; break;
    case LTC_U8: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v; break;
    case LTC_I8: ((int8_t *)p)[i] = (int8_t)(uint8_t)(uint64_t)v; break;
    case LTC_I16: ((int16_t *)p)[i] = (int16_t)(uint16_t)(uint64_t)v; break;
    case LTC_F16: ((uint16_t *)p)[i] = ltc_f32_to_f16((float)v); break;
    case LTC_BF16: ((uint16_t *)p)[i] = ltc_f32_to_bf16((float)v); break;
    default: ((uint8_t *)p)[i] = v != 0; break;
    }
}

/* A double to int32 as x86's cvttsd2si does (what PyTorch's casts to int32 and narrower
 * compile to): out of range and NaN give INT32_MIN; C leaves those undefined. */
static int32_t f64_to_i32(double v) {
    return v > -2147483649.0 && v < 2147483648.0 ? (int32_t)v : INT32_MIN;
}

void ltc_dtype_store_f64(void *p, ltc_dtype dt, int64_t i, double v) {
    switch (dt) {
    case LTC_F32: ((float *)p)[i] = (float)v; break;
    case LTC_F64: ((double *)p)[i] = v; break;
    case LTC_I32: ((int32_t *)p)[i] = f64_to_i32(v); break;
    case LTC_I64: ((int64_t *)p)[i] = (int64_t)v; break;
    case LTC_F16: ((uint16_t *)p)[i] = ltc_f32_to_f16((float)v); break;
    case LTC_BF16: ((uint16_t *)p)[i] = ltc_f32_to_bf16((float)v); break;
    case LTC_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: ltc_dtype_store_i64(p, dt, i, f64_to_i32(v)); break; /* then wraps to the width */
    }
}

void ltc_dtype_convert_elem(void *dst, ltc_dtype dd, int64_t di, const void *src, ltc_dtype sd,
                            int64_t si) {
    if (dd == sd) {
        size_t es = ltc_dtype_size(dd);
        memcpy((char *)dst + di * (int64_t)es, (const char *)src + si * (int64_t)es, es);
    } else if (ltc_dtype_is_float(sd)) {
        ltc_dtype_store_f64(dst, dd, di, ltc_dtype_load_f64(src, sd, si));
    } else {
        ltc_dtype_store_i64(dst, dd, di, ltc_dtype_load_i64(src, sd, si));
    }
}

const char *ltc_value_text(char buf[32], double v, ltc_dtype dt) {
    if (v != v) return strcpy(buf, "nan");
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, v);
        double r = strtod(buf, NULL);
        if (dt == LTC_F32 ? (float)r == (float)v : r == v) break;
    }
    return buf;
}
