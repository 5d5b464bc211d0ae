/* shape_linalg.c - shape rules of the linear algebra ops (matmul, mm, bmm, dot, outer,
 * tril, triu, linear, addmm; kernels src/cpu/gemm.c, linalg.c, linear.c), declared in
 * shape_inference.h: operands of one floating dtype, as the BLAS kernels want. PyTorch's
 * rules otherwise. */
#include <string.h>

#include "shape_inference.h"

#define SHAPE_STR(s, buf) ltc_shape_str((s), (buf), sizeof(buf))

/* Both operands float32 or float64, the same; each of `nd` dims. */
static ltc_status operands(const ltc_shape *a, const ltc_shape *b, int nd, const char *what) {
    char x[128], y[128];
    if (a->ndim != nd || b->ndim != nd)
        return ltc_errorf(LTC_ERR_ARG, "expected two %s, got %s and %s", what, SHAPE_STR(a, x),
                          SHAPE_STR(b, y));
    if (a->dtype != b->dtype || !ltc_dtype_is_float(a->dtype))
        return ltc_errorf(LTC_ERR_ARG, "expected floating operands of one dtype, got "
                          "%s and %s", ltc_dtype_name(a->dtype), ltc_dtype_name(b->dtype));
    return LTC_OK;
}

ltc_status ltc_shape_matmul(const ltc_shape *a, const ltc_shape *b, ltc_shape *out) {
    char sa[128], sb[128];
    if (a->dtype != b->dtype || !ltc_dtype_is_float(a->dtype))
        return ltc_errorf(LTC_ERR_ARG, "needs two tensors of the same floating dtype, got %s and %s",
                          ltc_dtype_name(a->dtype), ltc_dtype_name(b->dtype));
    if (a->ndim == 0 || b->ndim == 0)
        return ltc_errorf(LTC_ERR_ARG, "both arguments need at least 1 dim, got shapes %s and %s",
                          SHAPE_STR(a, sa), SHAPE_STR(b, sb));
    int64_t ka = a->dims[a->ndim - 1];
    int64_t kb = b->ndim == 1 ? b->dims[0] : b->dims[b->ndim - 2];
    if (ka != kb)
        return ltc_errorf(LTC_ERR_ARG, "shapes %s and %s cannot be multiplied (%lld != %lld)",
                          SHAPE_STR(a, sa), SHAPE_STR(b, sb), (long long)ka, (long long)kb);
    /* batch dims: all but the last two (a 1-d operand has none) */
    ltc_shape ba = {.ndim = a->ndim > 2 ? a->ndim - 2 : 0};
    ltc_shape bb = {.ndim = b->ndim > 2 ? b->ndim - 2 : 0};
    memcpy(ba.dims, a->dims, sizeof(int64_t) * (size_t)ba.ndim);
    memcpy(bb.dims, b->dims, sizeof(int64_t) * (size_t)bb.ndim);
    ltc_shape batch;
    if (ltc_broadcast_shapes(&ba, &bb, &batch))
        return ltc_errorf(LTC_ERR_ARG, "batch dims of shapes %s and %s are not broadcastable",
                          SHAPE_STR(a, sa), SHAPE_STR(b, sb));
    int64_t dims[LTC_MAX_DIMS + 2];
    int n = 0;
    for (int i = 0; i < batch.ndim; i++) dims[n++] = batch.dims[i];
    if (a->ndim >= 2) dims[n++] = a->dims[a->ndim - 2];
    if (b->ndim >= 2) dims[n++] = b->dims[b->ndim - 1];
    return ltc_shape_make(out, a->dtype, n, dims);
}

ltc_status ltc_shape_linear_nobias(const ltc_shape *self, const ltc_shape *weight, ltc_shape *out) {
    ltc_status st = ltc_shape_need_float(self, "self");
    if (st || (st = ltc_shape_same_dtype(self, weight, "self", "weight"))) return st;
    char a[128], b[128];
    if (self->ndim < 1 || weight->ndim != 2 || weight->dims[1] != self->dims[self->ndim - 1])
        return ltc_errorf(LTC_ERR_ARG, "expected self [..., in] and weight [out, in], got %s "
                          "and %s", SHAPE_STR(self, a), SHAPE_STR(weight, b));
    *out = *self;
    out->dims[out->ndim - 1] = weight->dims[0];
    return LTC_OK;
}

ltc_status ltc_shape_linear(const ltc_shape *self, const ltc_shape *weight, const ltc_shape *bias,
                            ltc_shape *out) {
    ltc_status st = ltc_shape_linear_nobias(self, weight, out);
    if (st || (st = ltc_shape_same_dtype(self, bias, "self", "bias"))) return st;
    if (bias->ndim != 1 || bias->dims[0] != weight->dims[0]) {
        char a[128];
        return ltc_errorf(LTC_ERR_ARG, "bias must have size [%lld], got %s",
                          (long long)weight->dims[0], SHAPE_STR(bias, a));
    }
    return LTC_OK;
}

ltc_status ltc_shape_linear_backward(const ltc_shape *grad_output, const ltc_shape *self,
                                     const ltc_shape *weight, ltc_shape *out) {
    ltc_shape y;
    ltc_status st = ltc_shape_linear_nobias(self, weight, &y);
    if (st) return st;
    if (!ltc_shape_equal(grad_output, &y)) {
        char a[128], b[128];
        return ltc_errorf(LTC_ERR_ARG, "grad_output %s %s must be the output's size and dtype, %s "
                          "%s", ltc_dtype_name(grad_output->dtype), SHAPE_STR(grad_output, a),
                          ltc_dtype_name(y.dtype), SHAPE_STR(&y, b));
    }
    out[0] = *self, out[1] = *weight;
    ltc_shape_make(&out[2], weight->dtype, 1, weight->dims);
    return LTC_OK;
}

ltc_status ltc_shape_addmm(const ltc_shape *self, const ltc_shape *mat1, const ltc_shape *mat2,
                           double beta, double alpha, ltc_shape *out) {
    (void)beta, (void)alpha;
    ltc_status st = ltc_shape_need_float(mat1, "mat1");
    if (st || (st = ltc_shape_same_dtype(mat1, mat2, "mat1", "mat2")) ||
        (st = ltc_shape_same_dtype(self, mat1, "self", "mat1")))
        return st;
    char a[128], b[128];
    if (mat1->ndim != 2 || mat2->ndim != 2 || mat1->dims[1] != mat2->dims[0])
        return ltc_errorf(LTC_ERR_ARG, "mat1 %s and mat2 %s cannot be multiplied",
                          SHAPE_STR(mat1, a), SHAPE_STR(mat2, b));
    ltc_shape prod = {.dtype = mat1->dtype, .ndim = 2, .dims = {mat1->dims[0], mat2->dims[1]}};
    ltc_shape bc;
    if (self->ndim > 2 || ltc_broadcast_shapes(self, &prod, &bc) != LTC_OK || bc.ndim != 2 ||
        bc.dims[0] != prod.dims[0] || bc.dims[1] != prod.dims[1])
        return ltc_errorf(LTC_ERR_ARG, "self %s does not broadcast to the product's size %s",
                          SHAPE_STR(self, a), SHAPE_STR(&prod, b));
    *out = prod;
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
