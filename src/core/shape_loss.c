/* shape_loss.c - shape and dtype rules of the losses (nll_loss, cross_entropy and their
 * backward ops, mse_loss), whose kernels are src/cpu/loss.c and src/ref/loss.c; declared in
 * shape_inference.h. Class indices are 1-based. */

#include "shape_inference.h"

#define SHAPE_STR(s, buf) ltc_shape_str((s), (buf), sizeof(buf))

ltc_status ltc_shape_nll_loss(const ltc_shape *self, const ltc_shape *target, int64_t reduction,
                              ltc_shape *out) {
    ltc_status st = ltc_shape_need_float(self, "self");
    if (st || (st = ltc_shape_need_int(target, "target"))) return st;
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
    if (st || (st = ltc_shape_same_dtype(grad_output, self, "grad_output", "self"))) return st;
    if (reduction == 0 ? !ltc_shape_equal(grad_output, &loss) : ltc_shape_numel(grad_output) != 1) {
        char a[128], b[128];
        return ltc_errorf(LTC_ERR_ARG, "grad_output must have the loss's size %s, got %s",
                          SHAPE_STR(&loss, a), SHAPE_STR(grad_output, b));
    }
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_mse_loss(const ltc_shape *self, const ltc_shape *target, int64_t reduction,
                              ltc_shape *out) {
    if (reduction < 0 || reduction > 2)
        return ltc_errorf(LTC_ERR_ARG, "reduction must be 0 (none), 1 (mean) or 2 (sum), got %lld",
                          (long long)reduction);
    ltc_status st = ltc_broadcast_shapes(self, target, out);
    if (st) return st;
    out->dtype = self->dtype;
    if (reduction != 0) out->ndim = 0;
    return LTC_OK;
}

ltc_status ltc_shape_assert_in_range(const ltc_shape *self, double low, double high, ltc_shape *out) {
    if (!(low <= high))
        return ltc_errorf(LTC_ERR_ARG, "low (%g) must be <= high (%g), neither NaN", low, high);
    if (self->dtype == LTC_BOOL)
        return ltc_errorf(LTC_ERR_ARG, "self must be a numeric tensor, got bool");
    *out = *self;
    return LTC_OK;
}
