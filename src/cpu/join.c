/* join.c - CPU kernels that join or tile tensors: cat, stack (cat along a new dim) and
 * repeat. Contiguous blocks are moved with memcpy. */
#include <string.h>

#include "elementwise.h"

/* cat and stack: out is `outer` rows; row o is, for each input i in turn, input i's o-th
 * block of numel_i / outer elements. `dim` is the (0-based) joined dim of the output. */
static ltc_status join(const ltc_kernel_args *a, int dim) {
    const ltc_shape *os = &a->out_shapes[0];
    size_t es = ltc_dtype_size(os->dtype);
    int64_t outer = 1;
    for (int d = 0; d < dim; d++) outer *= os->dims[d];
    if (ltc_shape_numel(os) == 0) return LTC_OK;
    char *out = a->out[0];
    for (int64_t o = 0; o < outer; o++)
        for (int i = 0; i < a->n_in; i++) {
            size_t block = (size_t)(ltc_shape_numel(&a->in_shapes[i]) / outer) * es;
            memcpy(out, (const char *)a->in[i] + (size_t)o * block, block);
            out += block;
        }
    return LTC_OK;
}

/* cat(Tensor[] tensors, dim dim): attrs dim (0-based). */
ltc_status ltc_cpu_kernel_cat(const ltc_kernel_args *a) {
    return join(a, (int)a->attrs[0].i);
}

/* stack(Tensor[] tensors, int dim): attrs dim (1-based or negative over ndim + 1). */
ltc_status ltc_cpu_kernel_stack(const ltc_kernel_args *a) {
    int64_t d = a->attrs[0].i, nd = a->out_shapes[0].ndim;
    return join(a, (int)(d > 0 ? d - 1 : nd + d));
}

/* Copies the tiling of src (sizes in[k..]) into dst (sizes out[k..]) from dim k on:
 * out[k] = in[k] * r; each of the r copies of a slice is the same block. */
static char *tile(char *dst, const char *src, const int64_t *in, const int64_t *out, int nd,
                  int k, size_t es) {
    size_t slice = es;
    for (int d = k + 1; d < nd; d++) slice *= (size_t)in[d];
    char *start = dst;
    if (k == nd - 1) { /* the innermost dim: one contiguous run */
        memcpy(dst, src, (size_t)in[k] * es);
        dst += (size_t)in[k] * es;
    } else {
        for (int64_t i = 0; i < in[k]; i++)
            dst = tile(dst, src + (size_t)i * slice, in, out, nd, k + 1, es);
    }
    size_t once = (size_t)(dst - start);
    int64_t r = in[k] ? out[k] / in[k] : 0;
    for (int64_t j = 1; j < r; j++) {
        memcpy(dst, start, once);
        dst += once;
    }
    return dst;
}

/* repeat(Tensor self, int[] repeats): self (its sizes aligned to the right) tiled
 * repeats[d] times along each dim d. */
ltc_status ltc_cpu_kernel_repeat(const ltc_kernel_args *a) {
    const ltc_shape *is = &a->in_shapes[0], *os = &a->out_shapes[0];
    if (ltc_shape_numel(os) == 0) return LTC_OK;
    if (os->ndim == 0) return memcpy(a->out[0], a->in[0], ltc_dtype_size(os->dtype)), LTC_OK;
    int64_t in[LTC_MAX_DIMS];
    int nd = os->ndim, lead = os->ndim - is->ndim;
    for (int d = 0; d < nd; d++) in[d] = d < lead ? 1 : is->dims[d - lead];
    tile(a->out[0], a->in[0], in, os->dims, nd, 0, ltc_dtype_size(os->dtype));
    return LTC_OK;
}
