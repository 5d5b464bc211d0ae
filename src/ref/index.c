/* index.c - reference kernels of the indexing ops (index_select, index_add, gather,
 * scatter_add, one_hot): one loop over output (or index) elements through multi-indices.
 * Index data is 1-based; an index out of range is a run-time error. */
#include <string.h>

#include "ref.h"

static ltc_status bad_index(const char *op, int64_t v, int64_t n) {
    return ltc_errorf(LTC_ERR_ARG, "%s: index %lld out of range (1..%lld; indices are 1-based)",
                      op, (long long)v, (long long)n);
}

/* Checks every index value against 1..n, whether or not the output has elements to fill
 * (as the CPU kernels and PyTorch do: index_select of an empty self still checks). */
static ltc_status check_all(const char *op, const void *index, const ltc_shape *is, int64_t n) {
    for (int64_t j = 0; j < ltc_shape_numel(is); j++) {
        int64_t v = ltc_ref_get_i64(index, is->dtype, j);
        if (v < 1 || v > n) return bad_index(op, v, n);
    }
    return LTC_OK;
}

/* Copies in[0] to out[0] (same shape and dtype). */
static void copy_self(const ltc_kernel_args *a) {
    memcpy(a->out[0], a->in[0], ltc_shape_nbytes(&a->in_shapes[0]));
}

/* out[.., j, ..] = self[.., index[j], ..] along dim attrs[0]. */
ltc_status ltc_ref_kernel_index_select(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0], *is = &a->in_shapes[1], *os = &a->out_shapes[0];
    int dim = (int)a->attrs[0].i;
    int64_t idx[LTC_MAX_DIMS];
    ltc_status st = check_all("index_select", a->in[1], is, s->dims[dim]);
    if (st) return st;
    for (int64_t i = 0; i < ltc_shape_numel(os); i++) {
        ltc_ref_unravel(os, i, idx);
        int64_t v = ltc_ref_get_i64(a->in[1], is->dtype, idx[dim]);
        if (v < 1 || v > s->dims[dim]) return bad_index("index_select", v, s->dims[dim]);
        idx[dim] = v - 1;
        ltc_ref_copy(a->out[0], os->dtype, i, a->in[0], s->dtype, ltc_ref_ravel(s, idx));
    }
    return LTC_OK;
}

/* out = self; out[.., index[j], ..] += source[.., j, ..]. */
ltc_status ltc_ref_kernel_index_add(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0], *is = &a->in_shapes[1], *rs = &a->in_shapes[2];
    int dim = (int)a->attrs[0].i;
    int64_t idx[LTC_MAX_DIMS];
    ltc_status st = check_all("index_add", a->in[1], is, s->dims[dim]);
    if (st) return st;
    copy_self(a);
    for (int64_t i = 0; i < ltc_shape_numel(rs); i++) {
        ltc_ref_unravel(rs, i, idx);
        int64_t v = ltc_ref_get_i64(a->in[1], is->dtype, idx[dim]);
        if (v < 1 || v > s->dims[dim]) return bad_index("index_add", v, s->dims[dim]);
        idx[dim] = v - 1;
        int64_t o = ltc_ref_ravel(s, idx);
        if (ltc_dtype_is_float(s->dtype))
            ltc_ref_set(a->out[0], s->dtype, o, ltc_ref_get(a->out[0], s->dtype, o) +
                                                    ltc_ref_get(a->in[2], rs->dtype, i));
        else
            ltc_ref_set_i64(a->out[0], s->dtype, o, (int64_t)((uint64_t)ltc_ref_get_i64(a->out[0], s->dtype, o) +
                                                        (uint64_t)ltc_ref_get_i64(a->in[2], rs->dtype, i)));
    }
    return LTC_OK;
}

/* out[p] = self[p with coordinate dim replaced by index[p]]. */
ltc_status ltc_ref_kernel_gather(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0], *is = &a->in_shapes[1];
    int dim = (int)a->attrs[0].i;
    int64_t idx[LTC_MAX_DIMS], n = s->ndim ? s->dims[dim] : 1;
    for (int64_t i = 0; i < ltc_shape_numel(is); i++) {
        ltc_ref_unravel(is, i, idx);
        int64_t v = ltc_ref_get_i64(a->in[1], is->dtype, i);
        if (v < 1 || v > n) return bad_index("gather", v, n);
        if (s->ndim) idx[dim] = v - 1;
        ltc_ref_copy(a->out[0], s->dtype, i, a->in[0], s->dtype, s->ndim ? ltc_ref_ravel(s, idx) : 0);
    }
    return LTC_OK;
}

/* out = self; out[p with coordinate dim replaced by index[p]] += src[p]. */
ltc_status ltc_ref_kernel_scatter_add(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0], *is = &a->in_shapes[1], *rs = &a->in_shapes[2];
    int dim = (int)a->attrs[0].i;
    int64_t idx[LTC_MAX_DIMS], n = s->ndim ? s->dims[dim] : 1;
    copy_self(a);
    for (int64_t i = 0; i < ltc_shape_numel(is); i++) {
        ltc_ref_unravel(is, i, idx);
        int64_t v = ltc_ref_get_i64(a->in[1], is->dtype, i);
        if (v < 1 || v > n) return bad_index("scatter_add", v, n);
        int64_t si = rs->ndim ? ltc_ref_ravel(rs, idx) : 0;
        if (s->ndim) idx[dim] = v - 1;
        int64_t o = s->ndim ? ltc_ref_ravel(s, idx) : 0;
        if (ltc_dtype_is_float(s->dtype))
            ltc_ref_set(a->out[0], s->dtype, o, ltc_ref_get(a->out[0], s->dtype, o) +
                                                    ltc_ref_get(a->in[2], rs->dtype, si));
        else
            ltc_ref_set_i64(a->out[0], s->dtype, o, (int64_t)((uint64_t)ltc_ref_get_i64(a->out[0], s->dtype, o) +
                                                        (uint64_t)ltc_ref_get_i64(a->in[2], rs->dtype, si)));
    }
    return LTC_OK;
}

/* out[..., c] = 1 where c + 1 == self[...], else 0 (int64). */
ltc_status ltc_ref_kernel_one_hot(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0];
    int64_t c = a->attrs[0].i;
    for (int64_t i = 0; i < ltc_shape_numel(s); i++) {
        int64_t v = ltc_ref_get_i64(a->in[0], s->dtype, i);
        if (v < 1 || v > c) return bad_index("one_hot", v, c);
        for (int64_t j = 0; j < c; j++) ((int64_t *)a->out[0])[i * c + j] = j + 1 == v;
    }
    return LTC_OK;
}

/* scatter: out = self; out[p with coordinate dim replaced by index[p]] = src[p] (src 0-d
 * while self is not: that value everywhere), converted to self's dtype; the last write
 * wins. */
ltc_status ltc_ref_kernel_scatter(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0], *is = &a->in_shapes[1], *rs = &a->in_shapes[2];
    int dim = (int)a->attrs[0].i;
    int64_t idx[LTC_MAX_DIMS], n = s->ndim ? s->dims[dim] : 1;
    bool value = rs->ndim == 0;
    ltc_status st = check_all("scatter", a->in[1], is, n);
    if (st) return st;
    copy_self(a);
    for (int64_t i = 0; i < ltc_shape_numel(is); i++) {
        ltc_ref_unravel(is, i, idx);
        int64_t v = ltc_ref_get_i64(a->in[1], is->dtype, i);
        int64_t si = value ? 0 : ltc_ref_ravel(rs, idx);
        if (s->ndim) idx[dim] = v - 1;
        int64_t o = s->ndim ? ltc_ref_ravel(s, idx) : 0;
        ltc_ref_copy(a->out[0], s->dtype, o, a->in[2], rs->dtype, si);
    }
    return LTC_OK;
}

/* embedding(weight [num, dim], indices): out[..., k] = weight[indices[...] - 1][k]. */
ltc_status ltc_ref_kernel_embedding(const ltc_kernel_args *a) {
    const ltc_shape *w = &a->in_shapes[0], *is = &a->in_shapes[1];
    int64_t num = w->dims[0], dim = w->dims[1];
    ltc_status st = check_all("embedding", a->in[1], is, num);
    if (st) return st;
    for (int64_t i = 0; i < ltc_shape_numel(is); i++) {
        int64_t row = ltc_ref_get_i64(a->in[1], is->dtype, i) - 1;
        for (int64_t k = 0; k < dim; k++)
            ltc_ref_copy(a->out[0], w->dtype, i * dim + k, a->in[0], w->dtype, row * dim + k);
    }
    return LTC_OK;
}
