/* helpers.c - index arithmetic and element access shared by the reference kernels. */
#include <string.h>

#include "ref.h"

int64_t ltc_ref_offset(const ltc_shape *out, const ltc_shape *in, int64_t i) {
    int64_t idx[LTC_MAX_DIMS];
    ltc_ref_unravel(out, i, idx);
    int64_t off = 0, stride = 1;
    for (int d = in->ndim - 1; d >= 0; d--) {
        int od = d + out->ndim - in->ndim; /* the output dim this input dim lines up with */
        int64_t k = in->dims[d] == 1 ? 0 : idx[od];
        off += k * stride;
        stride *= in->dims[d];
    }
    return off;
}

void ltc_ref_unravel(const ltc_shape *s, int64_t flat, int64_t *idx) {
    for (int d = s->ndim - 1; d >= 0; d--) {
        int64_t size = s->dims[d] ? s->dims[d] : 1;
        idx[d] = flat % size;
        flat /= size;
    }
}

int64_t ltc_ref_ravel(const ltc_shape *s, const int64_t *idx) {
    int64_t flat = 0;
    for (int d = 0; d < s->ndim; d++) flat = flat * s->dims[d] + idx[d];
    return flat;
}

/* Element access goes through the core's (dtype.c), which knows every dtype. */
double ltc_ref_get(const void *p, ltc_dtype dt, int64_t i) { return ltc_dtype_load_f64(p, dt, i); }

int64_t ltc_ref_get_i64(const void *p, ltc_dtype dt, int64_t i) {
    return ltc_dtype_load_i64(p, dt, i);
}

void ltc_ref_set(void *p, ltc_dtype dt, int64_t i, double v) { ltc_dtype_store_f64(p, dt, i, v); }

void ltc_ref_set_i64(void *p, ltc_dtype dt, int64_t i, int64_t v) {
    ltc_dtype_store_i64(p, dt, i, v);
}

void ltc_ref_copy(void *dst, ltc_dtype dd, int64_t di, const void *src, ltc_dtype sd, int64_t si) {
    ltc_dtype_convert_elem(dst, dd, di, src, sd, si);
}

void ltc_ref_split(const ltc_shape *s, int64_t dim, int64_t *outer, int64_t *n, int64_t *inner) {
    *outer = 1;
    *inner = 1;
    if (dim == LTC_NONE || s->ndim == 0) {
        *n = ltc_shape_numel(s);
        return;
    }
    for (int d = 0; d < dim; d++) *outer *= s->dims[d];
    *n = s->dims[dim];
    for (int d = (int)dim + 1; d < s->ndim; d++) *inner *= s->dims[d];
}
