/* index.c - CPU kernels of the indexing ops: index_select, index_add, gather, scatter_add,
 * one_hot, scatter, embedding. Index data is 1-based (int64 or int32); an index out of range
 * is a run-time error naming the value and the valid range. */
#include <string.h>

#include "elementwise.h"

/* Index element i (int64 or int32 buffer) as a 0-based position; -1 if outside [1, n]. */
static inline int64_t idx_at(const void *p, ltc_dtype dt, int64_t i, int64_t n) {
    int64_t v = dt == LTC_I64 ? ((const int64_t *)p)[i] : ((const int32_t *)p)[i];
    return v >= 1 && v <= n ? v - 1 : -1;
}

static inline int64_t idx_raw(const void *p, ltc_dtype dt, int64_t i) {
    return dt == LTC_I64 ? ((const int64_t *)p)[i] : ((const int32_t *)p)[i];
}

static ltc_status out_of_range(const char *op, const void *p, ltc_dtype dt, int64_t i,
                               int64_t n) {
    return ltc_errorf(LTC_ERR_ARG, "%s: index %lld out of range (1..%lld; indices are 1-based)",
                      op, (long long)idx_raw(p, dt, i), (long long)n);
}

/* index_select(self, dim, index): attrs[0] = dim (0-based). Rows of `inner` elements. */
ltc_status ltc_cpu_kernel_index_select(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0], *is = &a->in_shapes[1];
    int64_t outer, n, inner, k = ltc_shape_numel(is);
    ltc_cpu_split_dim(s, a->attrs[0].i, &outer, &n, &inner);
    size_t row = (size_t)inner * ltc_dtype_size(s->dtype);
    const char *x = a->in[0];
    char *y = a->out[0];
    for (int64_t j = 0; j < k; j++)
        if (idx_at(a->in[1], is->dtype, j, n) < 0)
            return out_of_range("index_select", a->in[1], is->dtype, j, n);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < k; j++) {
            int64_t r = idx_at(a->in[1], is->dtype, j, n);
            memcpy(y + (size_t)(o * k + j) * row, x + (size_t)(o * n + r) * row, row);
        }
    return LTC_OK;
}

/* dst[i] += src[i] for n elements of dtype dt. */
static void add_run(void *dst, const void *src, int64_t n, ltc_dtype dt) {
    switch (dt) {
    case LTC_F32: for (int64_t i = 0; i < n; i++) ((float *)dst)[i] += ((const float *)src)[i]; break;
    case LTC_F64: for (int64_t i = 0; i < n; i++) ((double *)dst)[i] += ((const double *)src)[i]; break;
    /* integers wrap, as in PyTorch: added as unsigned (defined in C) */
    case LTC_I32:
        for (int64_t i = 0; i < n; i++)
            ((int32_t *)dst)[i] = (int32_t)((uint32_t)((int32_t *)dst)[i] + (uint32_t)((const int32_t *)src)[i]);
        break;
    case LTC_I64:
        for (int64_t i = 0; i < n; i++)
            ((int64_t *)dst)[i] = (int64_t)((uint64_t)((int64_t *)dst)[i] + (uint64_t)((const int64_t *)src)[i]);
        break;
    default: for (int64_t i = 0; i < n; i++) ((uint8_t *)dst)[i] |= ((const uint8_t *)src)[i]; break;
    }
}

/* index_add(self, dim, index, source): a copy of self, then source's rows added at the
 * indexed rows (repeated indices accumulate). attrs[0] = dim. */
ltc_status ltc_cpu_kernel_index_add(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0], *is = &a->in_shapes[1];
    int64_t outer, n, inner, k = ltc_shape_numel(is);
    ltc_cpu_split_dim(s, a->attrs[0].i, &outer, &n, &inner);
    size_t es = ltc_dtype_size(s->dtype);
    for (int64_t j = 0; j < k; j++)
        if (idx_at(a->in[1], is->dtype, j, n) < 0)
            return out_of_range("index_add", a->in[1], is->dtype, j, n);
    char *y = a->out[0];
    const char *src = a->in[2];
    memcpy(y, a->in[0], ltc_shape_nbytes(s));
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < k; j++) {
            int64_t r = idx_at(a->in[1], is->dtype, j, n);
            add_run(y + (size_t)((o * n + r) * inner) * es, src + (size_t)((o * k + j) * inner) * es,
                    inner, s->dtype);
        }
    return LTC_OK;
}

/* Row-major element strides of a shape. */
static void strides_of(const ltc_shape *s, int64_t *st) {
    int64_t acc = 1;
    for (int d = s->ndim - 1; d >= 0; d--) {
        st[d] = acc;
        acc *= s->dims[d];
    }
}

/* Walks every element of `index` (shape is), calling back with the index element's flat
 * position, the matching offset in a tensor of strides `sa` (coordinate `dim` replaced by
 * the index value) and the matching offset in a tensor of strides `sb` (coordinates kept).
 * Returns the flat position of the first out-of-range index value, or -1. */
#define WALK(is, dim, n, sa, sb, idx, dt, BODY)                                                \
    do {                                                                                       \
        int64_t c_[LTC_MAX_DIMS] = {0}, total_ = ltc_shape_numel(is);                          \
        for (int64_t f_ = 0; f_ < total_; f_++) {                                              \
            int64_t r_ = idx_at(idx, dt, f_, n);                                               \
            if (r_ < 0) {                                                                      \
                bad = f_;                                                                      \
                break;                                                                         \
            }                                                                                  \
            int64_t oa = 0, ob = 0;                                                            \
            for (int d_ = 0; d_ < (is)->ndim; d_++) {                                          \
                oa += (d_ == (dim) ? r_ : c_[d_]) * (sa)[d_];                                  \
                ob += c_[d_] * (sb)[d_];                                                       \
            }                                                                                  \
            BODY;                                                                              \
            for (int d_ = (is)->ndim - 1; d_ >= 0; d_--) {                                     \
                if (++c_[d_] < (is)->dims[d_]) break;                                          \
                c_[d_] = 0;                                                                    \
            }                                                                                  \
        }                                                                                      \
    } while (0)

/* gather(self, dim, index): out[p] = self[p with coordinate dim = index[p]]. */
ltc_status ltc_cpu_kernel_gather(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0], *is = &a->in_shapes[1];
    int dim = (int)a->attrs[0].i;
    int64_t ss[LTC_MAX_DIMS], os[LTC_MAX_DIMS], bad = -1, n = s->ndim ? s->dims[dim] : 1;
    strides_of(s, ss);
    strides_of(is, os);
    size_t es = ltc_dtype_size(s->dtype);
    const char *x = a->in[0];
    char *y = a->out[0];
    WALK(is, dim, n, ss, os, a->in[1], is->dtype,
         memcpy(y + (size_t)ob * es, x + (size_t)oa * es, es));
    if (bad >= 0) return out_of_range("gather", a->in[1], is->dtype, bad, n);
    return LTC_OK;
}

/* scatter_add(self, dim, index, src): a copy of self, then out[p with coordinate dim =
 * index[p]] += src[p] for every element p of index. */
ltc_status ltc_cpu_kernel_scatter_add(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0], *is = &a->in_shapes[1], *rs = &a->in_shapes[2];
    int dim = (int)a->attrs[0].i;
    int64_t ss[LTC_MAX_DIMS], rst[LTC_MAX_DIMS], bad = -1, n = s->ndim ? s->dims[dim] : 1;
    strides_of(s, ss);
    strides_of(rs, rst);
    size_t es = ltc_dtype_size(s->dtype);
    char *y = a->out[0];
    const char *src = a->in[2];
    memcpy(y, a->in[0], ltc_shape_nbytes(s));
    WALK(is, dim, n, ss, rst, a->in[1], is->dtype,
         add_run(y + (size_t)oa * es, src + (size_t)ob * es, 1, s->dtype));
    if (bad >= 0) return out_of_range("scatter_add", a->in[1], is->dtype, bad, n);
    return LTC_OK;
}

/* one_hot(self, num_classes): int64 [..., C], 1 at the 1-based class. attrs[0] = C. */
ltc_status ltc_cpu_kernel_one_hot(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0];
    int64_t c = a->attrs[0].i, m = ltc_shape_numel(s);
    int64_t *y = a->out[0];
    memset(y, 0, (size_t)(m * c) * sizeof *y);
    for (int64_t i = 0; i < m; i++) {
        int64_t r = idx_at(a->in[0], s->dtype, i, c);
        if (r < 0) return out_of_range("one_hot", a->in[0], s->dtype, i, c);
        y[i * c + r] = 1;
    }
    return LTC_OK;
}

/* scatter(self, dim, index, src): a copy of self, then out[p with coordinate dim =
 * index[p]] = src[p] for every element p of index (the last write wins); a 0-d src while
 * self is not is a value (converted to self's dtype) written at every indexed position. */
ltc_status ltc_cpu_kernel_scatter(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0], *is = &a->in_shapes[1], *rs = &a->in_shapes[2];
    int dim = (int)a->attrs[0].i;
    int64_t ss[LTC_MAX_DIMS], rst[LTC_MAX_DIMS], bad = -1, n = s->ndim ? s->dims[dim] : 1;
    strides_of(s, ss);
    strides_of(rs, rst);
    size_t es = ltc_dtype_size(s->dtype);
    char *y = a->out[0];
    memcpy(y, a->in[0], ltc_shape_nbytes(s));
    if (rs->ndim == 0) {
        unsigned char v[8];
        ltc_cpu_convert(v, s->dtype, a->in[2], rs->dtype, 1);
        WALK(is, dim, n, ss, rst, a->in[1], is->dtype, memcpy(y + (size_t)oa * es, v, es); (void)ob);
    } else {
        const char *src = a->in[2];
        WALK(is, dim, n, ss, rst, a->in[1], is->dtype,
             memcpy(y + (size_t)oa * es, src + (size_t)ob * es, es));
    }
    if (bad >= 0) return out_of_range("scatter", a->in[1], is->dtype, bad, n);
    return LTC_OK;
}

/* embedding(weight [num, dim], indices): row indices[i] of weight copied to row i of out;
 * every index is checked before anything is copied. */
ltc_status ltc_cpu_kernel_embedding(const ltc_kernel_args *a) {
    const ltc_shape *w = &a->in_shapes[0], *is = &a->in_shapes[1];
    int64_t num = w->dims[0], k = ltc_shape_numel(is);
    size_t row = (size_t)w->dims[1] * ltc_dtype_size(w->dtype);
    for (int64_t j = 0; j < k; j++)
        if (idx_at(a->in[1], is->dtype, j, num) < 0)
            return out_of_range("embedding", a->in[1], is->dtype, j, num);
    const char *x = a->in[0];
    char *y = a->out[0];
    for (int64_t j = 0; j < k; j++)
        memcpy(y + (size_t)j * row, x + (size_t)idx_at(a->in[1], is->dtype, j, num) * row, row);
    return LTC_OK;
}
