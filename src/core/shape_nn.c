/* shape_nn.c - shape and dtype rules of the indexing, loss and linear-layer ops
 * (index_select, index_add, gather, scatter_add, one_hot, nll_loss, cross_entropy and their
 * backward ops, linear, addmm); declared in shape_inference.h. Index data is 1-based. */
#include <string.h>

#include "shape_inference.h"

#define SHAPE_STR(s, buf) ltc_shape_str((s), (buf), sizeof(buf))

static bool is_int(ltc_dtype d) { return d == LTC_I64 || d == LTC_I32; }

static ltc_status need_int(const ltc_shape *s, const char *what) {
    if (!is_int(s->dtype))
        return ltc_errorf(LTC_ERR_ARG, "%s must be an int64 or int32 tensor, got %s", what,
                          ltc_dtype_name(s->dtype));
    return LTC_OK;
}

static ltc_status same_dtype(const ltc_shape *a, const ltc_shape *b, const char *an,
                             const char *bn) {
    if (a->dtype != b->dtype)
        return ltc_errorf(LTC_ERR_ARG, "%s and %s must have one dtype, got %s and %s", an, bn,
                          ltc_dtype_name(a->dtype), ltc_dtype_name(b->dtype));
    return LTC_OK;
}

/* ---- indexing -------------------------------------------------------------------------- */

ltc_status ltc_shape_index_select(const ltc_shape *self, int64_t dim, const ltc_shape *index,
                                  ltc_shape *out) {
    ltc_status st = need_int(index, "index");
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
    if (st || (st = same_dtype(self, source, "self", "source"))) return st;
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
    ltc_status st = need_int(index, "index");
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
    if (st || (st = same_dtype(self, src, "self", "src"))) return st;
    if ((st = ltc_shape_src_covers_index(index, src))) return st;
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_one_hot(const ltc_shape *self, int64_t num_classes, ltc_shape *out) {
    ltc_status st = need_int(self, "self");
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

/* ---- losses ------------------------------------------------------------------------------- */

ltc_status ltc_shape_nll_loss(const ltc_shape *self, const ltc_shape *target, int64_t reduction,
                              ltc_shape *out) {
    ltc_status st = ltc_shape_need_float(self, "self");
    if (st || (st = need_int(target, "target"))) return st;
    if (reduction < 0 || reduction > 2)
        return ltc_errorf(LTC_ERR_ARG, "reduction must be 0 (none), 1 (mean) or 2 (sum), got %lld",
                          (long long)reduction);
    char a[128], b[128];
    bool ok = (self->ndim == 2 && target->ndim == 1 && target->dims[0] == self->dims[0]) ||
              (self->ndim == 1 && target->ndim == 0);
    if (!ok)
        return ltc_errorf(LTC_ERR_ARG, "expected input [N, C] and target [N] (or [C] and a 0-d "
                          "target), got %s and %s", SHAPE_STR(self, a), SHAPE_STR(target, b));
    if (self->ndim == 2 && self->dims[1] == 0)
        return ltc_errorf(LTC_ERR_ARG, "input %s has no classes", SHAPE_STR(self, a));
    out->dtype = self->dtype;
    out->ndim = reduction == 0 ? target->ndim : 0;
    if (out->ndim) out->dims[0] = target->dims[0];
    return LTC_OK;
}

ltc_status ltc_shape_nll_loss_backward(const ltc_shape *grad_output, const ltc_shape *self,
                                       const ltc_shape *target, int64_t reduction,
                                       ltc_shape *out) {
    ltc_shape loss;
    ltc_status st = ltc_shape_nll_loss(self, target, reduction, &loss);
    if (st || (st = same_dtype(grad_output, self, "grad_output", "self"))) return st;
    if (reduction == 0 ? !ltc_shape_equal(grad_output, &loss) : ltc_shape_numel(grad_output) != 1) {
        char a[128], b[128];
        return ltc_errorf(LTC_ERR_ARG, "grad_output must have the loss's size %s, got %s",
                          SHAPE_STR(&loss, a), SHAPE_STR(grad_output, b));
    }
    *out = *self;
    return LTC_OK;
}

/* ---- linear layers ------------------------------------------------------------------------ */

ltc_status ltc_shape_linear_nobias(const ltc_shape *self, const ltc_shape *weight, ltc_shape *out) {
    ltc_status st = ltc_shape_need_float(self, "self");
    if (st || (st = same_dtype(self, weight, "self", "weight"))) return st;
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
    if (st || (st = same_dtype(self, bias, "self", "bias"))) return st;
    if (bias->ndim != 1 || bias->dims[0] != weight->dims[0]) {
        char a[128];
        return ltc_errorf(LTC_ERR_ARG, "bias must have size [%lld], got %s",
                          (long long)weight->dims[0], SHAPE_STR(bias, a));
    }
    return LTC_OK;
}

ltc_status ltc_shape_addmm(const ltc_shape *self, const ltc_shape *mat1, const ltc_shape *mat2,
                           double beta, double alpha, ltc_shape *out) {
    (void)beta, (void)alpha;
    ltc_status st = ltc_shape_need_float(mat1, "mat1");
    if (st || (st = same_dtype(mat1, mat2, "mat1", "mat2")) ||
        (st = same_dtype(self, mat1, "self", "mat1")))
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
