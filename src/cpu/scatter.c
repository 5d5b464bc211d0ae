/* scatter.c - writing into part of a tensor: broadcast_to, narrow_scatter, select_scatter
 * (the inverses that in-place writes through views lower to). */
#include <string.h>

#include "elementwise.h"
#include "shape_inference.h"

/* out[i] = in[i * stride]: a copy loop per element size. */
#define COPY_LOOP(name, T)                                                                   \
    static void name(int64_t n, void *out, const void *const *in, const int64_t *stride) {   \
        T *o = out;                                                                          \
        const T *x = in[0];                                                                  \
        int64_t s = stride[0];                                                               \
        for (int64_t i = 0; i < n; i++) o[i] = x[i * s];                                     \
    }
COPY_LOOP(copy1, uint8_t)
COPY_LOOP(copy2, uint16_t)
COPY_LOOP(copy4, uint32_t)
COPY_LOOP(copy8, uint64_t)

ltc_status ltc_cpu_kernel_broadcast_to(const ltc_kernel_args *a) {
    size_t es = ltc_dtype_size(a->out_shapes[0].dtype);
    return ltc_cpu_elementwise(a, es == 1 ? copy1 : es == 2 ? copy2 : es == 4 ? copy4 : copy8);
}

/* out = self with src over `len` entries of dim from index `start` (0-based). */
static ltc_status scatter(const ltc_kernel_args *a, int64_t dim, int64_t start, int64_t len) {
    const ltc_shape *s = &a->in_shapes[0];
    size_t es = ltc_dtype_size(s->dtype);
    int64_t outer, n, inner;
    ltc_cpu_split_dim(s, dim, &outer, &n, &inner);
    char *out = a->out[0];
    const char *src = a->in[1];
    memcpy(out, a->in[0], ltc_shape_nbytes(s));
    size_t run = (size_t)(len * inner) * es;
    for (int64_t o = 0; o < outer; o++)
        memcpy(out + (size_t)((o * n + start) * inner) * es, src + (size_t)o * run, run);
    return LTC_OK;
}

/* attrs: dim (0-based), start (1-based or negative) */
ltc_status ltc_cpu_kernel_narrow_scatter(const ltc_kernel_args *a) {
    int64_t dim = a->attrs[0].i, size = a->in_shapes[0].dims[dim];
    int64_t start = a->attrs[1].i == size + 1 ? size : ltc_index_wrap(a->attrs[1].i, size);
    return scatter(a, dim, start, a->in_shapes[1].dims[dim]);
}

/* attrs: dim (0-based), index (1-based or negative) */
ltc_status ltc_cpu_kernel_select_scatter(const ltc_kernel_args *a) {
    int64_t dim = a->attrs[0].i;
    return scatter(a, dim, ltc_index_wrap(a->attrs[1].i, a->in_shapes[0].dims[dim]), 1);
}
