/* shape_sort.c - shape rules of sorting and selection (sort, argsort, topk, kthvalue; median
 * and mode share max's rules), whose kernels are src/cpu/sort.c and src/ref/sort.c, and of
 * the running extremes cummax and cummin (src/cpu/scan.c, src/ref/scan.c). A 0-d self is one
 * line of one element, as in PyTorch. */

#include "shape_inference.h"

#define SHAPE_STR(s, buf) ltc_shape_str((s), (buf), sizeof(buf))

/* The size of the line along dim (1 for a 0-d self). */
static int64_t line(const ltc_shape *self, int64_t dim) { return self->ndim ? self->dims[dim] : 1; }

ltc_status ltc_shape_sort(const ltc_shape *self, int64_t dim, bool descending, ltc_shape *out) {
    (void)dim, (void)descending;
    out[0] = *self;
    out[1] = *self;
    out[1].dtype = LTC_I64;
    return LTC_OK;
}

ltc_status ltc_shape_argsort(const ltc_shape *self, int64_t dim, bool descending, ltc_shape *out) {
    (void)dim, (void)descending;
    *out = *self;
    out->dtype = LTC_I64;
    return LTC_OK;
}

ltc_status ltc_shape_topk(const ltc_shape *self, int64_t k, int64_t dim, bool largest,
                          bool sorted, ltc_shape *out) {
    char s[128];
    (void)largest, (void)sorted;
    if (k < 0 || k > line(self, dim))
        return ltc_errorf(LTC_ERR_ARG, "k (%lld) out of range for dim %lld of %s (0..%lld)",
                          (long long)k, (long long)dim + 1, SHAPE_STR(self, s),
                          (long long)line(self, dim));
    /* PyTorch returns a 0-d result (one element, never written) for k = 0 of a 0-d tensor;
     * ltc refuses it rather than hand back uninitialised values */
    if (!self->ndim && k == 0)
        return ltc_errorf(LTC_ERR_ARG, "k = 0 of a 0-d tensor: the 0-d result would hold no "
                          "value (use k = 1, or a 1-d tensor)");
    out[0] = *self;
    if (self->ndim) out[0].dims[dim] = k;
    out[1] = out[0];
    out[1].dtype = LTC_I64;
    return LTC_OK;
}

ltc_status ltc_shape_kthvalue(const ltc_shape *self, int64_t k, int64_t dim, bool keepdim,
                              ltc_shape *out) {
    char s[128];
    if (k < 1 || k > line(self, dim))
        return ltc_errorf(LTC_ERR_ARG, "k (%lld) out of range for dim %lld of %s (1..%lld)",
                          (long long)k, (long long)dim + 1, SHAPE_STR(self, s),
                          (long long)line(self, dim));
    return ltc_shape_max_dim(self, dim, keepdim, out);
}
