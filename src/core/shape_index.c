/* shape_index.c - shape and dtype rules of the indexing and scattering ops (index_select,
 * index_add, gather, scatter_add, scatter, one_hot, masked_fill, embedding), whose kernels
 * are src/cpu/index.c and src/ref/index.c; declared in shape_inference.h. Index data is
 * 1-based. */

#include "shape_inference.h"

#define SHAPE_STR(s, buf) ltc_shape_str((s), (buf), sizeof(buf))

ltc_status ltc_shape_index_select(const ltc_shape *self, int64_t dim, const ltc_shape *index,
                                  ltc_shape *out) {
    ltc_status st = ltc_shape_need_int(index, "index");
    if (st) return st;
    if (index->ndim > 1)
        return ltc_errorf(LTC_ERR_ARG, "index must be 1-d, got %d-d", index->ndim);
    if (self->ndim == 0) return ltc_errorf(LTC_ERR_ARG, "self must have at least one dim");
    *out = *self;
    out->dims[dim] = ltc_shape_numel(index);
    return LTC_OK;
}

ltc_status ltc_shape_index_add(const ltc_shape *self, int64_t dim, const ltc_shape *index,
                               const ltc_shape *source, ltc_shape *out) {
    ltc_shape want;
    ltc_status st = ltc_shape_index_select(self, dim, index, &want);
    if (st || (st = ltc_shape_same_dtype(self, source, "self", "source"))) return st;
    if (!ltc_shape_equal(&want, source)) {
        char a[128], b[128];
        return ltc_errorf(LTC_ERR_ARG, "source must have size %s, got %s", SHAPE_STR(&want, a),
                          SHAPE_STR(source, b));
    }
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_gather(const ltc_shape *self, int64_t dim, const ltc_shape *index,
                            ltc_shape *out) {
    ltc_status st = ltc_shape_need_int(index, "index");
    if (st) return st;
    if (index->ndim != self->ndim)
        return ltc_errorf(LTC_ERR_ARG, "index must have self's number of dims (%d), got %d",
                          self->ndim, index->ndim);
    for (int d = 0; d < self->ndim; d++)
        if (d != dim && index->dims[d] > self->dims[d]) {
            char a[128], b[128];
            return ltc_errorf(LTC_ERR_ARG, "index of size %s is larger than self %s outside "
                              "dim %d", SHAPE_STR(index, a), SHAPE_STR(self, b), (int)dim + 1);
        }
    *out = *index;
    out->dtype = self->dtype;
    return LTC_OK;
}

ltc_status ltc_shape_scatter_add(const ltc_shape *self, int64_t dim, const ltc_shape *index,
                                 const ltc_shape *src, ltc_shape *out) {
    ltc_shape g;
    ltc_status st = ltc_shape_gather(self, dim, index, &g);
    if (st || (st = ltc_shape_same_dtype(self, src, "self", "src"))) return st;
    if ((st = ltc_shape_src_covers_index(index, src))) return st;
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_one_hot(const ltc_shape *self, int64_t num_classes, ltc_shape *out) {
    ltc_status st = ltc_shape_need_int(self, "self");
    if (st) return st;
    if (num_classes < 1)
        return ltc_errorf(LTC_ERR_ARG, "num_classes must be at least 1, got %lld (it must be "
                          "given: a lazy graph's shapes cannot depend on data)",
                          (long long)num_classes);
    if (self->ndim == LTC_MAX_DIMS)
        return ltc_errorf(LTC_ERR_ARG, "self has %d dims, the most a tensor has", self->ndim);
    *out = *self;
    out->dtype = LTC_I64;
    out->dims[out->ndim++] = num_classes;
    return ltc_shape_make(out, out->dtype, out->ndim, out->dims);
}

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

ltc_status ltc_shape_embedding(const ltc_shape *weight, const ltc_shape *indices, ltc_shape *out) {
    ltc_status st = ltc_shape_need_int(indices, "indices");
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
