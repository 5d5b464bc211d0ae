/* shape_ops.c - CPU kernels of the shape ops: transpose, t, view, reshape, narrow, select,
 * to. Every result is a fresh contiguous buffer: views are copies at this level. */
#include <string.h>

#include "elementwise.h"
#include "shape_inference.h"

/* Copies the n x m block of src whose element (i, j) is src[i * ss + j * cs] into the
 * row-major n x m dst, in 32 x 32 tiles so that both sides stay in cache. */
#define DEF_TILE(NAME, T)                                                                      \
    static void NAME(T *dst, const T *src, int64_t n, int64_t m, int64_t ss, int64_t cs) {     \
        enum { B = 32 };                                                                       \
        for (int64_t i0 = 0; i0 < n; i0 += B)                                                  \
            for (int64_t j0 = 0; j0 < m; j0 += B) {                                            \
                int64_t i1 = i0 + B < n ? i0 + B : n, j1 = j0 + B < m ? j0 + B : m;            \
                for (int64_t i = i0; i < i1; i++)                                              \
                    for (int64_t j = j0; j < j1; j++)                                          \
                        dst[i * m + j] = src[i * ss + j * cs];                                 \
            }                                                                                  \
    }
DEF_TILE(tile1, unsigned char)
DEF_TILE(tile2, uint16_t)
DEF_TILE(tile4, uint32_t)
DEF_TILE(tile8, uint64_t)

/* Copies the 2-d block (n rows of stride ss, m columns of stride cs) of es-byte elements. */
static void copy_block(char *dst, const char *src, int64_t n, int64_t m, int64_t ss, int64_t cs,
                       size_t es) {
    if (cs == 1) {
        for (int64_t i = 0; i < n; i++)
            memcpy(dst + i * m * (int64_t)es, src + i * ss * (int64_t)es, (size_t)m * es);
        return;
    }
    switch (es) {
    case 1: tile1((void *)dst, (const void *)src, n, m, ss, cs); break;
    case 2: tile2((void *)dst, (const void *)src, n, m, ss, cs); break;
    case 4: tile4((void *)dst, (const void *)src, n, m, ss, cs); break;
    case 8: tile8((void *)dst, (const void *)src, n, m, ss, cs); break;
    default:
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < m; j++)
                memcpy(dst + (i * m + j) * (int64_t)es, src + (i * ss + j * cs) * (int64_t)es,
                       es);
    }
}

/* The general strided copy: dst (contiguous, sizes `size`) gets the elements of src at
 * element offset `off` + sum(index[d] * stride[d]). Dims of size 1 are dropped and dims
 * that step as one are merged; the innermost two form tiled 2-d blocks. */
static void copy_strided(void *dst, const void *src, int ndim, const int64_t *size,
                         const int64_t *stride, int64_t off, size_t es) {
    int64_t sz[LTC_MAX_DIMS + 1], st[LTC_MAX_DIMS + 1];
    int nd = 0;
    for (int d = 0; d < ndim; d++) {
        if (size[d] == 0)
            return;
        if (size[d] == 1)
            continue;
        if (nd > 0 && st[nd - 1] == stride[d] * size[d]) {
            sz[nd - 1] *= size[d];
            st[nd - 1] = stride[d];
        } else {
            sz[nd] = size[d];
            st[nd] = stride[d];
            nd++;
        }
    }
    const char *s = (const char *)src + off * (int64_t)es;
    if (nd == 0 || (nd == 1 && st[0] == 1)) {
        memcpy(dst, s, (size_t)(nd ? sz[0] : 1) * es);
        return;
    }
    if (nd == 1) { /* a single strided run: a block of one column */
        sz[1] = sz[0];
        st[1] = st[0];
        sz[0] = 1;
        st[0] = 0;
        nd = 2;
    }
    int64_t n = sz[nd - 2], m = sz[nd - 1], block = n * m;
    int64_t outer = 1;
    for (int d = 0; d < nd - 2; d++)
        outer *= sz[d];
    int64_t idx[LTC_MAX_DIMS] = {0}, o = 0;
    char *out = dst;
    for (int64_t b = 0; b < outer; b++) {
        copy_block(out + b * block * (int64_t)es, s + o * (int64_t)es, n, m, st[nd - 2],
                   st[nd - 1], es);
        for (int d = nd - 3; d >= 0; d--) {
            idx[d]++;
            o += st[d];
            if (idx[d] < sz[d])
                break;
            o -= st[d] * sz[d];
            idx[d] = 0;
        }
    }
}

/* Element strides of a row-major contiguous shape. */
static void strides_of(const ltc_shape *s, int64_t *st) {
    int64_t acc = 1;
    for (int d = s->ndim - 1; d >= 0; d--) {
        st[d] = acc;
        acc *= s->dims[d];
    }
}

/* out[0] = in[0] with dims d0 and d1 (0-based) swapped. */
static ltc_status swap_dims(const ltc_kernel_args *a, int64_t d0, int64_t d1) {
    const ltc_shape *is = &a->in_shapes[0];
    int64_t st[LTC_MAX_DIMS], size[LTC_MAX_DIMS];
    strides_of(is, st);
    for (int d = 0; d < is->ndim; d++)
        size[d] = is->dims[d];
    int64_t t = st[d0];
    st[d0] = st[d1];
    st[d1] = t;
    t = size[d0];
    size[d0] = size[d1];
    size[d1] = t;
    copy_strided(a->out[0], a->in[0], is->ndim, size, st, 0, ltc_dtype_size(is->dtype));
    return LTC_OK;
}

/* Copies in[0] to out[0] byte for byte (same number of elements and dtype). */
static ltc_status copy_all(const ltc_kernel_args *a) {
    memcpy(a->out[0], a->in[0], ltc_shape_nbytes(&a->out_shapes[0]));
    return LTC_OK;
}

/* transpose(Tensor self, dim dim0, dim dim1): attrs dim0, dim1 (0-based). */
ltc_status ltc_cpu_kernel_transpose(const ltc_kernel_args *a) {
    if (a->in_shapes[0].ndim < 2 || a->attrs[0].i == a->attrs[1].i)
        return copy_all(a);
    return swap_dims(a, a->attrs[0].i, a->attrs[1].i);
}

/* t(Tensor self): a 2-d transpose; 0-d and 1-d tensors are copied as they are. */
ltc_status ltc_cpu_kernel_t(const ltc_kernel_args *a) {
    if (a->in_shapes[0].ndim < 2)
        return copy_all(a);
    return swap_dims(a, 0, 1);
}

/* view(Tensor self, int[] size): the same bytes under the output's sizes. */
ltc_status ltc_cpu_kernel_view(const ltc_kernel_args *a) {
    return copy_all(a);
}

/* reshape(Tensor self, int[] size): as view. */
ltc_status ltc_cpu_kernel_reshape(const ltc_kernel_args *a) {
    return copy_all(a);
}

/* narrow(Tensor self, dim dim, index start, int length): attrs dim (0-based), start
 * (1-based or negative), length; out_shapes[0] has the narrowed size. */
ltc_status ltc_cpu_kernel_narrow(const ltc_kernel_args *a) {
    const ltc_shape *is = &a->in_shapes[0];
    int64_t dim = a->attrs[0].i;
    int64_t start = ltc_index_wrap(a->attrs[1].i, is->dims[dim]);
    int64_t st[LTC_MAX_DIMS];
    strides_of(is, st);
    copy_strided(a->out[0], a->in[0], is->ndim, a->out_shapes[0].dims, st, start * st[dim],
                 ltc_dtype_size(is->dtype));
    return LTC_OK;
}

/* select(Tensor self, dim dim, index index): attrs dim (0-based), index (1-based or
 * negative); the result drops dim. */
ltc_status ltc_cpu_kernel_select(const ltc_kernel_args *a) {
    const ltc_shape *is = &a->in_shapes[0];
    int64_t dim = a->attrs[0].i;
    int64_t index = ltc_index_wrap(a->attrs[1].i, is->dims[dim]);
    int64_t st[LTC_MAX_DIMS], rst[LTC_MAX_DIMS], size[LTC_MAX_DIMS];
    strides_of(is, st);
    int nd = 0;
    for (int d = 0; d < is->ndim; d++) {
        if (d == dim)
            continue;
        size[nd] = is->dims[d];
        rst[nd++] = st[d];
    }
    copy_strided(a->out[0], a->in[0], nd, size, rst, index * st[dim],
                 ltc_dtype_size(is->dtype));
    return LTC_OK;
}

/* to(Tensor self, ScalarType dtype): every element converted to the output dtype (float to
 * integer truncates toward zero; to bool is x != 0). A copy even when dtypes agree. */
ltc_status ltc_cpu_kernel_to(const ltc_kernel_args *a) {
    ltc_cpu_convert(a->out[0], a->out_shapes[0].dtype, a->in[0], a->in_shapes[0].dtype,
                    ltc_shape_numel(&a->in_shapes[0]));
    return LTC_OK;
}

/* Wraps a 1-based or negative dim of an int[] attribute (checked at trace time). */
static int dim_of(int64_t d, int ndim) { return (int)ltc_index_wrap(d, ndim > 0 ? ndim : 1); }

/* permute(Tensor self, int[] dims): out dim i is in dim dims[i]. */
ltc_status ltc_cpu_kernel_permute(const ltc_kernel_args *a) {
    const ltc_shape *is = &a->in_shapes[0];
    int64_t st[LTC_MAX_DIMS], pst[LTC_MAX_DIMS];
    strides_of(is, st);
    for (int i = 0; i < is->ndim; i++) pst[i] = st[dim_of(a->attrs[0].ints[i], is->ndim)];
    copy_strided(a->out[0], a->in[0], is->ndim, a->out_shapes[0].dims, pst, 0,
                 ltc_dtype_size(is->dtype));
    return LTC_OK;
}

/* unsqueeze, squeeze, squeeze.dim, flatten: the same bytes under new sizes. */
ltc_status ltc_cpu_kernel_unsqueeze(const ltc_kernel_args *a) { return copy_all(a); }
ltc_status ltc_cpu_kernel_squeeze(const ltc_kernel_args *a) { return copy_all(a); }
ltc_status ltc_cpu_kernel_squeeze_dim(const ltc_kernel_args *a) { return copy_all(a); }
ltc_status ltc_cpu_kernel_flatten(const ltc_kernel_args *a) { return copy_all(a); }

ltc_status ltc_cpu_kernel_broadcast_to(const ltc_kernel_args *a); /* scatter.c */

/* expand(Tensor self, int[] size): broadcast_to's copy. */
ltc_status ltc_cpu_kernel_expand(const ltc_kernel_args *a) { return ltc_cpu_kernel_broadcast_to(a); }

/* flip(Tensor self, int[] dims): a strided copy that walks each flipped dim backward. */
ltc_status ltc_cpu_kernel_flip(const ltc_kernel_args *a) {
    const ltc_shape *is = &a->in_shapes[0];
    int64_t st[LTC_MAX_DIMS], off = 0;
    bool flipped[LTC_MAX_DIMS] = {false};
    strides_of(is, st);
    for (int i = 0; i < a->attrs[0].n && is->ndim > 0; i++)
        flipped[dim_of(a->attrs[0].ints[i], is->ndim)] = true;
    for (int d = 0; d < is->ndim; d++)
        if (flipped[d] && is->dims[d] > 0) {
            off += (is->dims[d] - 1) * st[d];
            st[d] = -st[d];
        }
    copy_strided(a->out[0], a->in[0], is->ndim, is->dims, st, off, ltc_dtype_size(is->dtype));
    return LTC_OK;
}
