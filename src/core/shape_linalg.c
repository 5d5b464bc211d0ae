/* shape_linalg.c - shape rules of mm, bmm, dot and outer (declared in shape_inference.h):
 * operands of one floating dtype, as the BLAS kernels want. PyTorch's rules otherwise. */
#include "shape_inference.h"

#define SHAPE_STR(s, buf) ltc_shape_str((s), (buf), sizeof(buf))

/* Both operands float32 or float64, the same; each of `nd` dims. */
static ltc_status operands(const ltc_shape *a, const ltc_shape *b, int nd, const char *what) {
    char x[128], y[128];
    if (a->ndim != nd || b->ndim != nd)
        return ltc_errorf(LTC_ERR_ARG, "expected two %s, got %s and %s", what, SHAPE_STR(a, x),
                          SHAPE_STR(b, y));
    if (a->dtype != b->dtype || !ltc_dtype_is_float(a->dtype))
        return ltc_errorf(LTC_ERR_ARG, "expected float32 or float64 operands of one dtype, got "
                          "%s and %s", ltc_dtype_name(a->dtype), ltc_dtype_name(b->dtype));
    return LTC_OK;
}

ltc_status ltc_shape_mm(const ltc_shape *self, const ltc_shape *mat2, ltc_shape *out) {
    char x[128], y[128];
    ltc_status st = operands(self, mat2, 2, "matrices (2-d)");
    if (st) return st;
    if (self->dims[1] != mat2->dims[0])
        return ltc_errorf(LTC_ERR_ARG, "shapes %s and %s cannot be multiplied (%lld != %lld)",
                          SHAPE_STR(self, x), SHAPE_STR(mat2, y), (long long)self->dims[1],
                          (long long)mat2->dims[0]);
    int64_t d[2] = {self->dims[0], mat2->dims[1]};
    return ltc_shape_make(out, self->dtype, 2, d);
}

ltc_status ltc_shape_bmm(const ltc_shape *self, const ltc_shape *mat2, ltc_shape *out) {
    char x[128], y[128];
    ltc_status st = operands(self, mat2, 3, "batches of matrices (3-d)");
    if (st) return st;
    if (self->dims[0] != mat2->dims[0] || self->dims[2] != mat2->dims[1])
        return ltc_errorf(LTC_ERR_ARG, "shapes %s and %s do not fit [b, n, m] x [b, m, p]",
                          SHAPE_STR(self, x), SHAPE_STR(mat2, y));
    int64_t d[3] = {self->dims[0], self->dims[1], mat2->dims[2]};
    return ltc_shape_make(out, self->dtype, 3, d);
}

ltc_status ltc_shape_dot(const ltc_shape *self, const ltc_shape *other, ltc_shape *out) {
    char x[128], y[128];
    ltc_status st = operands(self, other, 1, "vectors (1-d)");
    if (st) return st;
    if (self->dims[0] != other->dims[0])
        return ltc_errorf(LTC_ERR_ARG, "vectors %s and %s differ in length", SHAPE_STR(self, x),
                          SHAPE_STR(other, y));
    return ltc_shape_make(out, self->dtype, 0, NULL);
}

ltc_status ltc_shape_outer(const ltc_shape *self, const ltc_shape *vec2, ltc_shape *out) {
    ltc_status st = operands(self, vec2, 1, "vectors (1-d)");
    if (st) return st;
    int64_t d[2] = {self->dims[0], vec2->dims[0]};
    return ltc_shape_make(out, self->dtype, 2, d);
}

ltc_status ltc_shape_triangle(const ltc_shape *self, int64_t diagonal, ltc_shape *out) {
    char x[128];
    (void)diagonal;
    if (self->ndim < 2)
        return ltc_errorf(LTC_ERR_ARG, "self must have at least 2 dims (matrices), got %s",
                          SHAPE_STR(self, x));
    *out = *self;
    return LTC_OK;
}
