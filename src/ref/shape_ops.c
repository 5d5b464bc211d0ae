/* shape_ops.c - reference kernels of the shape ops. Each walks the output's elements in
 * row-major order, maps the output multi-index to the input's, and copies one element. */
#include "ref.h"
#include "shape_inference.h"

/* Copies element `src_flat` of in[0] to element `dst_flat` of out[0]. */
static void move(const ltc_kernel_args *a, int64_t dst_flat, int64_t src_flat) {
    ltc_ref_copy(a->out[0], a->out_shapes[0].dtype, dst_flat, a->in[0], a->in_shapes[0].dtype,
                 src_flat);
}

/* out[0] = in[0] with dims d0 and d1 swapped: out[.., i, .., j, ..] = in[.., j, .., i, ..]. */
static ltc_status swap(const ltc_kernel_args *a, int d0, int d1) {
    const ltc_shape *os = &a->out_shapes[0];
    int64_t idx[LTC_MAX_DIMS];
    for (int64_t i = 0; i < ltc_shape_numel(os); i++) {
        ltc_ref_unravel(os, i, idx);
        int64_t t = idx[d0];
        idx[d0] = idx[d1];
        idx[d1] = t;
        move(a, i, ltc_ref_ravel(&a->in_shapes[0], idx));
    }
    return LTC_OK;
}

/* A copy of every element in order (view, reshape, and transposes of < 2 dims). */
static ltc_status same_order(const ltc_kernel_args *a) {
    for (int64_t i = 0; i < ltc_shape_numel(&a->out_shapes[0]); i++) move(a, i, i);
    return LTC_OK;
}

/* transpose(Tensor self, dim dim0, dim dim1) */
ltc_status ltc_ref_kernel_transpose(const ltc_kernel_args *a) {
    if (a->in_shapes[0].ndim < 2) return same_order(a);
    return swap(a, (int)a->attrs[0].i, (int)a->attrs[1].i);
}

/* t(Tensor self) */
ltc_status ltc_ref_kernel_t(const ltc_kernel_args *a) {
    if (a->in_shapes[0].ndim < 2) return same_order(a);
    return swap(a, 0, 1);
}

/* view(Tensor self, int[] size): the same elements in the same order. */
ltc_status ltc_ref_kernel_view(const ltc_kernel_args *a) { return same_order(a); }

/* reshape(Tensor self, int[] size) */
ltc_status ltc_ref_kernel_reshape(const ltc_kernel_args *a) { return same_order(a); }

/* to(Tensor self, ScalarType dtype): each element converted. */
ltc_status ltc_ref_kernel_to(const ltc_kernel_args *a) { return same_order(a); }

/* narrow(Tensor self, dim dim, index start, int length): out[.., i, ..] = in[.., start + i, ..]. */
ltc_status ltc_ref_kernel_narrow(const ltc_kernel_args *a) {
    const ltc_shape *is = &a->in_shapes[0], *os = &a->out_shapes[0];
    int dim = (int)a->attrs[0].i;
    int64_t start = ltc_index_wrap(a->attrs[1].i, is->dims[dim]);
    int64_t idx[LTC_MAX_DIMS];
    for (int64_t i = 0; i < ltc_shape_numel(os); i++) {
        ltc_ref_unravel(os, i, idx);
        idx[dim] += start;
        move(a, i, ltc_ref_ravel(is, idx));
    }
    return LTC_OK;
}

/* select(Tensor self, dim dim, index index): out[a.., b..] = in[a.., index, b..]. */
ltc_status ltc_ref_kernel_select(const ltc_kernel_args *a) {
    const ltc_shape *is = &a->in_shapes[0], *os = &a->out_shapes[0];
    int dim = (int)a->attrs[0].i;
    int64_t index = ltc_index_wrap(a->attrs[1].i, is->dims[dim]);
    int64_t oidx[LTC_MAX_DIMS], iidx[LTC_MAX_DIMS];
    for (int64_t i = 0; i < ltc_shape_numel(os); i++) {
        ltc_ref_unravel(os, i, oidx);
        for (int d = 0, k = 0; d < is->ndim; d++) iidx[d] = d == dim ? index : oidx[k++];
        move(a, i, ltc_ref_ravel(is, iidx));
    }
    return LTC_OK;
}

/* Wraps a 1-based or negative dim of an int[] attribute. */
static int dim_of(int64_t d, int ndim) { return (int)ltc_index_wrap(d, ndim > 0 ? ndim : 1); }

/* permute(Tensor self, int[] dims): out[i0, i1, ..] = in[j] with j[dims[k]] = i_k. */
ltc_status ltc_ref_kernel_permute(const ltc_kernel_args *a) {
    const ltc_shape *is = &a->in_shapes[0], *os = &a->out_shapes[0];
    int64_t oidx[LTC_MAX_DIMS], iidx[LTC_MAX_DIMS];
    for (int64_t i = 0; i < ltc_shape_numel(os); i++) {
        ltc_ref_unravel(os, i, oidx);
        for (int k = 0; k < is->ndim; k++) iidx[dim_of(a->attrs[0].ints[k], is->ndim)] = oidx[k];
        move(a, i, ltc_ref_ravel(is, iidx));
    }
    return LTC_OK;
}

/* unsqueeze(Tensor self, int dim), squeeze(Tensor self), squeeze.dim(Tensor self, dim dim),
 * flatten(Tensor self, dim start_dim, dim end_dim): the same elements in the same order. */
ltc_status ltc_ref_kernel_unsqueeze(const ltc_kernel_args *a) { return same_order(a); }
ltc_status ltc_ref_kernel_squeeze(const ltc_kernel_args *a) { return same_order(a); }
ltc_status ltc_ref_kernel_squeeze_dim(const ltc_kernel_args *a) { return same_order(a); }
ltc_status ltc_ref_kernel_flatten(const ltc_kernel_args *a) { return same_order(a); }

/* expand(Tensor self, int[] size): each output element reads the input element that
 * broadcasts onto it. */
ltc_status ltc_ref_kernel_expand(const ltc_kernel_args *a) {
    const ltc_shape *os = &a->out_shapes[0];
    for (int64_t i = 0; i < ltc_shape_numel(os); i++)
        move(a, i, ltc_ref_offset(os, &a->in_shapes[0], i));
    return LTC_OK;
}

/* flip(Tensor self, int[] dims): out[.., i, ..] = in[.., size - 1 - i, ..] along each dim. */
ltc_status ltc_ref_kernel_flip(const ltc_kernel_args *a) {
    const ltc_shape *is = &a->in_shapes[0];
    int64_t idx[LTC_MAX_DIMS];
    for (int64_t i = 0; i < ltc_shape_numel(is); i++) {
        ltc_ref_unravel(is, i, idx);
        for (int k = 0; k < a->attrs[0].n && is->ndim > 0; k++) {
            int d = dim_of(a->attrs[0].ints[k], is->ndim);
            idx[d] = is->dims[d] - 1 - idx[d];
        }
        move(a, i, ltc_ref_ravel(is, idx));
    }
    return LTC_OK;
}
