/* shape_inference.c - broadcasting, the rules shared by several families (int, float and
 * probability arguments, one dtype for two operands), and the elementwise ops' shape and
 * dtype rules; declared in shape_inference.h. The other families have a file each, named
 * as their kernels' files in src/cpu/ and src/ref/ (shape_creation.c: creation.c, ...). */
#include <math.h>
#include <string.h>

#include "shape_inference.h"

#define SHAPE_STR(s, buf) ltc_shape_str((s), (buf), sizeof(buf))

ltc_status ltc_shape_need_int(const ltc_shape *s, const char *what) {
    if (s->dtype != LTC_I64 && s->dtype != LTC_I32)
        return ltc_errorf(LTC_ERR_ARG, "%s must be an int64 or int32 tensor, got %s", what,
                          ltc_dtype_name(s->dtype));
    return LTC_OK;
}

ltc_status ltc_shape_same_dtype(const ltc_shape *a, const ltc_shape *b, const char *an,
                                const char *bn) {
    if (a->dtype != b->dtype)
        return ltc_errorf(LTC_ERR_ARG, "%s and %s must have one dtype, got %s and %s", an, bn,
                          ltc_dtype_name(a->dtype), ltc_dtype_name(b->dtype));
    return LTC_OK;
}

ltc_status ltc_shape_need_probability(double p, const char *what) {
    if (!(p >= 0 && p <= 1))
        return ltc_errorf(LTC_ERR_ARG, "%s must be between 0 and 1, got %g", what, p);
    return LTC_OK;
}

/* Broadcasts three shapes into out's sizes. */
static ltc_status broadcast3(const ltc_shape *a, const ltc_shape *b, const ltc_shape *c, ltc_shape *out) {
    ltc_shape ab;
    ltc_status st = ltc_broadcast_shapes(a, b, &ab);
    if (st) return st;
    return ltc_broadcast_shapes(&ab, c, out);
}

ltc_status ltc_broadcast_shapes(const ltc_shape *a, const ltc_shape *b, ltc_shape *out) {
    /* a 0-d operand (a Lua number's scalar, most often) takes the other's size */
    const ltc_shape *only = b->ndim == 0 ? a : a->ndim == 0 ? b : NULL;
    if (only) {
        if (out != only) memcpy(out->dims, only->dims, sizeof(int64_t) * (size_t)only->ndim);
        out->ndim = only->ndim;
        return LTC_OK;
    }
    int n = a->ndim > b->ndim ? a->ndim : b->ndim;
    int64_t dims[LTC_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        int ia = a->ndim - n + i, ib = b->ndim - n + i;
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char sa[128], sb[128];
            return ltc_errorf(LTC_ERR_ARG, "shapes %s and %s are not broadcastable",
                              SHAPE_STR(a, sa), SHAPE_STR(b, sb));
        }
        dims[i] = da == 1 ? db : da;
    }
    out->ndim = n;
    memcpy(out->dims, dims, sizeof(int64_t) * (size_t)n);
    return LTC_OK;
}

ltc_status ltc_shape_binary(const ltc_shape *self, const ltc_shape *other, ltc_shape *out) {
    out->dtype = self->dtype;
    return ltc_broadcast_shapes(self, other, out);
}

ltc_status ltc_shape_sub(const ltc_shape *self, const ltc_shape *other, ltc_shape *out) {
    if (self->dtype == LTC_BOOL || other->dtype == LTC_BOOL)
        return ltc_errorf(LTC_ERR_ARG, "subtraction with a bool tensor is not supported, as in "
                          "PyTorch (use logical_xor for two masks, logical_not to invert one)");
    return ltc_shape_binary(self, other, out);
}

ltc_status ltc_shape_sign(const ltc_shape *self, ltc_shape *out) {
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_compare(const ltc_shape *self, const ltc_shape *other, ltc_shape *out) {
    out->dtype = LTC_BOOL;
    return ltc_broadcast_shapes(self, other, out);
}

ltc_status ltc_shape_unary(const ltc_shape *self, ltc_shape *out) {
    if (self->dtype == LTC_BOOL)
        return ltc_errorf(LTC_ERR_ARG, "not defined for bool tensors (convert with :to() first)");
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_to(const ltc_shape *self, ltc_dtype dtype, ltc_shape *out) {
    *out = *self;
    out->dtype = dtype;
    return LTC_OK;
}

ltc_status ltc_shape_predicate(const ltc_shape *self, ltc_shape *out) {
    *out = *self;
    out->dtype = LTC_BOOL;
    return LTC_OK;
}

ltc_status ltc_shape_leaky_relu(const ltc_shape *self, double negative_slope, ltc_shape *out) {
    (void)negative_slope;
    return ltc_shape_unary(self, out);
}

ltc_status ltc_shape_polygamma(const ltc_shape *self, int64_t order, ltc_shape *out) {
    if (order != 0 && order != 1)
        return ltc_errorf(LTC_ERR_ARG, "order must be 0 (digamma) or 1 (trigamma), got %lld",
                          (long long)order);
    return ltc_shape_unary(self, out);
}

ltc_status ltc_shape_clamp(const ltc_shape *self, double min, double max, ltc_shape *out) {
    if (isnan(min) && isnan(max)) return ltc_errorf(LTC_ERR_ARG, "at least one of min and max must be given");
    return ltc_shape_unary(self, out);
}

ltc_status ltc_shape_where(const ltc_shape *condition, const ltc_shape *self,
                           const ltc_shape *other, ltc_shape *out) {
    if (condition->dtype != LTC_BOOL)
        return ltc_errorf(LTC_ERR_ARG, "condition must be a bool tensor, got %s (compare first, e.g. x:gt(0))",
                          ltc_dtype_name(condition->dtype));
    out->dtype = self->dtype;
    return broadcast3(condition, self, other, out);
}

ltc_status ltc_shape_ternary(const ltc_shape *self, const ltc_shape *a, const ltc_shape *b,
                             ltc_shape *out) {
    out->dtype = self->dtype;
    return broadcast3(self, a, b, out);
}

ltc_status ltc_shape_addcmul(const ltc_shape *self, const ltc_shape *tensor1,
                             const ltc_shape *tensor2, double value, ltc_shape *out) {
    (void)value;
    if (self->dtype == LTC_BOOL) return ltc_errorf(LTC_ERR_ARG, "not defined for bool tensors");
    return ltc_shape_ternary(self, tensor1, tensor2, out);
}

ltc_status ltc_shape_need_float(const ltc_shape *s, const char *what) {
    if (!ltc_dtype_is_float(s->dtype))
        return ltc_errorf(LTC_ERR_ARG, "%s must be of a floating dtype, got %s", what,
                          ltc_dtype_name(s->dtype));
    return LTC_OK;
}

ltc_status ltc_shape_src_covers_index(const ltc_shape *index, const ltc_shape *src) {
    if (src->ndim != index->ndim)
        return ltc_errorf(LTC_ERR_ARG, "src must have index's number of dims (%d), got %d",
                          index->ndim, src->ndim);
    for (int d = 0; d < src->ndim; d++)
        if (index->dims[d] > src->dims[d]) {
            char a[128], b[128];
            return ltc_errorf(LTC_ERR_ARG, "index of size %s is larger than src %s",
                              SHAPE_STR(index, a), SHAPE_STR(src, b));
        }
    return LTC_OK;
}
