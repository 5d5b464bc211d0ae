/* idx.c - reading IDX files (the MNIST / Fashion-MNIST format; gzip-compressed or not)
 * straight into a tensor, without a trip through Lua tables.
 *
 * Format (Y. LeCun, http://yann.lecun.com/exdb/mnist/): a magic number 0x00 0x00 <type>
 * <ndim>, then ndim big-endian uint32 sizes, then the data big-endian in row-major order.
 * Types: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64. */
#include <stdlib.h>
#include <string.h>

#include "ltc.h"

static uint64_t be(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

/* Element i of IDX data of type `type` (at p) as a double. */
static double idx_value(const unsigned char *p, int type, int64_t i) {
    switch (type) {
    case 0x08: return p[i];
    case 0x09: return (int8_t)p[i];
    case 0x0B: return (int16_t)be(p + 2 * i, 2);
    case 0x0C: return (int32_t)be(p + 4 * i, 4);
    case 0x0D: {
        uint32_t u = (uint32_t)be(p + 4 * i, 4);
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    default: {
        uint64_t u = be(p + 8 * i, 8);
        double d;
        memcpy(&d, &u, 8);
        return d;
    }
    }
}

ltc_status ltc_read_idx(const char *path, ltc_dtype dtype, double scale, double offset,
                        ltc_tensor **out) {
    char *raw = NULL;
    size_t len = 0;
    void *host = NULL;
    ltc_status st = ltc_read_file_gz(path, &raw, &len);
    if (st) return st;
    const unsigned char *p = (const unsigned char *)raw;
    int type = len >= 4 ? p[2] : 0, ndim = len >= 4 ? p[3] : 0, esize = 0;
    switch (type) {
    case 0x08: case 0x09: esize = 1; break;
    case 0x0B: esize = 2; break;
    case 0x0C: case 0x0D: esize = 4; break;
    case 0x0E: esize = 8; break;
    }
    if (len < 4 || p[0] || p[1] || !esize) {
        st = ltc_errorf(LTC_ERR_IO, "read_idx: '%s' is not an IDX file (bad magic number)", path);
        goto fail;
    }
    if (ndim > LTC_MAX_DIMS || len < 4 + 4 * (size_t)ndim) {
        st = ltc_errorf(LTC_ERR_IO, "read_idx: '%s': bad header (%d dims)", path, ndim);
        goto fail;
    }
    int64_t dims[LTC_MAX_DIMS];
    for (int d = 0; d < ndim; d++) dims[d] = (int64_t)be(p + 4 + 4 * d, 4);
    ltc_shape s;
    if ((st = ltc_shape_make(&s, dtype, ndim, dims))) {
        st = ltc_errorf(st, "read_idx: '%s': %s", path, ltc_last_error());
        goto fail;
    }
    int64_t n = ltc_shape_numel(&s);
    size_t head = 4 + 4 * (size_t)ndim;
    if ((len - head) / (size_t)esize < (uint64_t)n) { /* no product: it could overflow */
        st = ltc_errorf(LTC_ERR_IO, "read_idx: '%s' is truncated: %zu data bytes for %lld "
                        "elements of %d bytes", path, len - head, (long long)n, esize);
        goto fail;
    }
    host = malloc(ltc_shape_nbytes(&s) + 1);
    if (!host) {
        st = ltc_errorf(LTC_ERR_NOMEM, "read_idx: out of memory for '%s'", path);
        goto fail;
    }
    const unsigned char *d = p + head;
    for (int64_t i = 0; i < n; i++) {
        double v = idx_value(d, type, i) * scale + offset;
        /* a float value that an integer dtype cannot hold is an error, not undefined behaviour */
        if (!ltc_dtype_is_float(dtype) && dtype != LTC_BOOL && !ltc_dtype_fits_f64(v, dtype)) {
            st = ltc_errorf(LTC_ERR_IO, "read_idx: '%s': element %lld (%g) does not fit %s", path,
                            (long long)i, v, ltc_dtype_name(dtype));
            goto fail;
        }
        ltc_dtype_store_f64(host, dtype, i, v);
    }
    st = ltc_tensor_from_host(&s, host, out);
fail:
    free(host);
    free(raw);
    return st;
}
