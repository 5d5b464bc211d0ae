/* shape_nn.c - shape and dtype rules of the neural-network functions (softmax,
 * log_softmax, dropout, layer_norm, batch_norm), whose kernels are src/cpu/nn.c and norm.c
 * (src/ref/nn.c); declared in shape_inference.h. */

#include "shape_inference.h"

#define SHAPE_STR(s, buf) ltc_shape_str((s), (buf), sizeof(buf))

/* A 1-d tensor of size [n] and dtype dt named `what`. */
static ltc_status need_vector(const ltc_shape *s, int64_t n, ltc_dtype dt, const char *what) {
    char a[128];
    if (s->ndim != 1 || s->dims[0] != n)
        return ltc_errorf(LTC_ERR_ARG, "%s must have size [%lld], got %s", what, (long long)n,
                          SHAPE_STR(s, a));
    if (s->dtype != dt)
        return ltc_errorf(LTC_ERR_ARG, "%s must be %s (the input's dtype), got %s", what,
                          ltc_dtype_name(dt), ltc_dtype_name(s->dtype));
    return LTC_OK;
}

ltc_status ltc_shape_softmax(const ltc_shape *self, int64_t dim, ltc_shape *out) {
    (void)dim;
    if (!ltc_dtype_is_float(self->dtype))
        return ltc_errorf(LTC_ERR_ARG, "needs a floating dtype, got %s", ltc_dtype_name(self->dtype));
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_dropout(const ltc_shape *self, double p, bool train, ltc_shape *out) {
    (void)train;
    ltc_status st = ltc_shape_need_float(self, "self");
    if (st || (st = ltc_shape_need_probability(p, "p"))) return st;
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_layer_norm(const ltc_shape *self, const int64_t *normalized_shape,
                                int n_normalized_shape, const ltc_shape *weight,
                                const ltc_shape *bias, double eps, ltc_shape *out) {
    ltc_status st = ltc_shape_need_float(self, "self");
    if (st) return st;
    char a[128], b[128];
    int k = n_normalized_shape, lead = self->ndim - k;
    bool ok = k >= 1 && lead >= 0;
    for (int i = 0; ok && i < k; i++) ok = self->dims[lead + i] == normalized_shape[i];
    if (!ok) {
        ltc_shape ns = {.dtype = self->dtype, .ndim = k < LTC_MAX_DIMS ? k : LTC_MAX_DIMS};
        for (int i = 0; i < ns.ndim; i++) ns.dims[i] = normalized_shape[i];
        return ltc_errorf(LTC_ERR_ARG, "normalized_shape %s must be the last dims of self %s",
                          SHAPE_STR(&ns, a), SHAPE_STR(self, b));
    }
    const ltc_shape *wb[2] = {weight, bias};
    const char *names[2] = {"weight", "bias"};
    for (int j = 0; j < 2; j++) {
        ok = wb[j]->ndim == k && wb[j]->dtype == self->dtype;
        for (int i = 0; ok && i < k; i++) ok = wb[j]->dims[i] == normalized_shape[i];
        if (!ok)
            return ltc_errorf(LTC_ERR_ARG, "%s must be %s of size normalized_shape (the last "
                              "dims of self %s), got %s %s", names[j],
                              ltc_dtype_name(self->dtype), SHAPE_STR(self, a),
                              ltc_dtype_name(wb[j]->dtype), SHAPE_STR(wb[j], b));
    }
    if (!(eps >= 0)) return ltc_errorf(LTC_ERR_ARG, "eps must be >= 0, got %g", eps);
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_layer_norm_backward(const ltc_shape *grad_output, const ltc_shape *self,
                                         const int64_t *normalized_shape, int n_normalized_shape,
                                         const ltc_shape *weight, double eps, ltc_shape *out) {
    ltc_status st = ltc_shape_layer_norm(self, normalized_shape, n_normalized_shape, weight,
                                         weight, eps, out);
    if (st) return st;
    char a[128], b[128];
    if (!ltc_shape_equal(grad_output, self))
        return ltc_errorf(LTC_ERR_ARG, "grad_output %s %s must be self's size and dtype, %s %s",
                          ltc_dtype_name(grad_output->dtype), SHAPE_STR(grad_output, a),
                          ltc_dtype_name(self->dtype), SHAPE_STR(self, b));
    out[1] = out[2] = *weight;
    return LTC_OK;
}

ltc_status ltc_shape_batch_norm(const ltc_shape *self, const ltc_shape *running_mean,
                                const ltc_shape *running_var, const ltc_shape *weight,
                                const ltc_shape *bias, bool training, double eps,
                                ltc_shape *out) {
    ltc_status st = ltc_shape_need_float(self, "self");
    if (st) return st;
    char a[128];
    if (self->ndim < 2)
        return ltc_errorf(LTC_ERR_ARG, "self must be [N, C, ...], got %s", SHAPE_STR(self, a));
    int64_t c = self->dims[1];
    if ((st = need_vector(running_mean, c, self->dtype, "running_mean")) ||
        (st = need_vector(running_var, c, self->dtype, "running_var")) ||
        (st = need_vector(weight, c, self->dtype, "weight")) ||
        (st = need_vector(bias, c, self->dtype, "bias")))
        return st;
    if (training && c > 0 && ltc_shape_numel(self) / c <= 1)
        return ltc_errorf(LTC_ERR_ARG, "expected more than 1 value per channel when training, "
                          "got input %s", SHAPE_STR(self, a));
    if (!(eps >= 0)) return ltc_errorf(LTC_ERR_ARG, "eps must be >= 0, got %g", eps);
    *out = *self;
    return LTC_OK;
}
