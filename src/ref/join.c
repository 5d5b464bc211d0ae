/* join.c - reference kernels of cat, stack and repeat: each output element finds the input
 * element it comes from. */
#include "ref.h"
#include "shape_inference.h"

/* cat (stack: a new dim) along output dim `dim`: the input whose range along dim holds the
 * output index, and the index within it. */
static ltc_status join(const ltc_kernel_args *a, int dim, bool stack) {
    const ltc_shape *os = &a->out_shapes[0];
    int64_t oidx[LTC_MAX_DIMS], iidx[LTC_MAX_DIMS];
    for (int64_t i = 0; i < ltc_shape_numel(os); i++) {
        ltc_ref_unravel(os, i, oidx);
        int64_t at = oidx[dim];
        int k = 0;
        for (;; k++) { /* the input that holds position `at` */
            const ltc_shape *s = &a->in_shapes[k];
            int64_t len = stack ? 1 : s->ndim != os->ndim ? 0 : s->dims[dim]; /* 0: a skipped [0] */
            if (at < len) break;
            at -= len;
        }
        const ltc_shape *s = &a->in_shapes[k];
        for (int d = 0, j = 0; d < os->ndim; d++) {
            if (stack && d == dim) continue;
            iidx[j++] = d == dim ? at : oidx[d];
        }
        ltc_ref_copy(a->out[0], os->dtype, i, a->in[k], s->dtype, ltc_ref_ravel(s, iidx));
    }
    return LTC_OK;
}

/* cat(Tensor[] tensors, dim dim) */
ltc_status ltc_ref_kernel_cat(const ltc_kernel_args *a) { return join(a, (int)a->attrs[0].i, false); }

/* stack(Tensor[] tensors, int dim): dim 1-based or negative over the output's dims. */
ltc_status ltc_ref_kernel_stack(const ltc_kernel_args *a) {
    return join(a, (int)ltc_index_wrap(a->attrs[0].i, a->out_shapes[0].ndim), true);
}

/* repeat(Tensor self, int[] repeats): out[i] = in[i mod size] per dim, sizes aligned right. */
ltc_status ltc_ref_kernel_repeat(const ltc_kernel_args *a) {
    const ltc_shape *is = &a->in_shapes[0], *os = &a->out_shapes[0];
    int64_t oidx[LTC_MAX_DIMS], iidx[LTC_MAX_DIMS];
    int lead = os->ndim - is->ndim;
    for (int64_t i = 0; i < ltc_shape_numel(os); i++) {
        ltc_ref_unravel(os, i, oidx);
        for (int d = 0; d < is->ndim; d++) iidx[d] = oidx[d + lead] % is->dims[d];
        ltc_ref_copy(a->out[0], os->dtype, i, a->in[0], is->dtype, ltc_ref_ravel(is, iidx));
    }
    return LTC_OK;
}
