/* scatter.c - reference kernels of the ops that write one tensor into (a copy of) another:
 * broadcast_to, narrow_scatter, select_scatter (what in-place writes through views lower
 * to). Each walks output or source indices and copies one element at a time. */
#include "ref.h"
#include "shape_inference.h"

/* broadcast_to(Tensor self, int[] size): out[i] = self at the index that broadcasts to i. */
ltc_status ltc_ref_kernel_broadcast_to(const ltc_kernel_args *a) {
    const ltc_shape *is = &a->in_shapes[0], *os = &a->out_shapes[0];
    for (int64_t i = 0; i < ltc_shape_numel(os); i++)
        ltc_ref_copy(a->out[0], os->dtype, i, a->in[0], is->dtype, ltc_ref_offset(os, is, i));
    return LTC_OK;
}

/* Copies self (in[0]) to the output, then each element of src (in[1]) to its output index:
 * src's index with `at` inserted at dim (select) or added along dim (narrow). */
static void scatter(const ltc_kernel_args *a, int dim, int64_t at, bool insert_dim) {
    const ltc_shape *os = &a->out_shapes[0], *ss = &a->in_shapes[1];
    for (int64_t i = 0; i < ltc_shape_numel(os); i++)
        ltc_ref_copy(a->out[0], os->dtype, i, a->in[0], a->in_shapes[0].dtype, i);
    int64_t sidx[LTC_MAX_DIMS], oidx[LTC_MAX_DIMS];
    for (int64_t i = 0; i < ltc_shape_numel(ss); i++) {
        ltc_ref_unravel(ss, i, sidx);
        if (insert_dim) { /* select: src lacks dim */
            for (int d = 0, k = 0; d < os->ndim; d++) oidx[d] = d == dim ? at : sidx[k++];
        } else { /* narrow: src's dim is offset by start */
            for (int d = 0; d < os->ndim; d++) oidx[d] = sidx[d] + (d == dim ? at : 0);
        }
        ltc_ref_copy(a->out[0], os->dtype, ltc_ref_ravel(os, oidx), a->in[1], ss->dtype, i);
    }
}

/* narrow_scatter(Tensor self, Tensor src, dim dim, index start) */
ltc_status ltc_ref_kernel_narrow_scatter(const ltc_kernel_args *a) {
    int dim = (int)a->attrs[0].i;
    int64_t size = a->in_shapes[0].dims[dim]; /* start may be one past the end (length 0) */
    scatter(a, dim, a->attrs[1].i == size + 1 ? size : ltc_index_wrap(a->attrs[1].i, size), false);
    return LTC_OK;
}

/* select_scatter(Tensor self, Tensor src, dim dim, index index) */
ltc_status ltc_ref_kernel_select_scatter(const ltc_kernel_args *a) {
    int dim = (int)a->attrs[0].i;
    scatter(a, dim, ltc_index_wrap(a->attrs[1].i, a->in_shapes[0].dims[dim]), true);
    return LTC_OK;
}
