/* sort.c - reference kernels of sorting and selection (sort argsort topk kthvalue median
 * median.dim mode). Each line along dim is ordered by an insertion sort of its positions:
 * stable by construction, NaN above every number. */
#include <stdlib.h>

#include "ref.h"

/* True if element p of the line goes before element q in ascending (or descending) order;
 * equal elements are never "before" (so the insertion sort keeps them in order). */
static bool before(const ltc_kernel_args *a, int64_t p, int64_t q, bool descending) {
    const ltc_shape *s = &a->in_shapes[0];
    if (ltc_dtype_is_float(s->dtype)) {
        double x = ltc_ref_get(a->in[0], s->dtype, p), y = ltc_ref_get(a->in[0], s->dtype, q);
        if (isnan(x) || isnan(y)) return descending ? isnan(x) && !isnan(y) : !isnan(x) && isnan(y);
        return descending ? x > y : x < y;
    }
    int64_t x = ltc_ref_get_i64(a->in[0], s->dtype, p), y = ltc_ref_get_i64(a->in[0], s->dtype, q);
    return descending ? x > y : x < y;
}

static bool same(const ltc_kernel_args *a, int64_t p, int64_t q) {
    const ltc_shape *s = &a->in_shapes[0];
    if (ltc_dtype_is_float(s->dtype))
        return ltc_ref_get(a->in[0], s->dtype, p) == ltc_ref_get(a->in[0], s->dtype, q);
    return ltc_ref_get_i64(a->in[0], s->dtype, p) == ltc_ref_get_i64(a->in[0], s->dtype, q);
}

enum { RANGE, MEDIAN, MODE };

/* Sorts each line of self along dim (LTC_NONE: the flattened tensor) and writes, for
 * RANGE, `count` elements from sorted position `first` along the output's dim; for MEDIAN
 * and MODE one element per line. values (self's dtype) and indices (1-based) may be NULL. */
static ltc_status sorted(const ltc_kernel_args *a, int64_t dim, bool descending, int what,
                         int64_t first, int64_t count, void *values, void *indices) {
    const ltc_shape *s = &a->in_shapes[0];
    int64_t outer, n, inner;
    ltc_ref_split(s, dim, &outer, &n, &inner);
    int64_t *order = malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (!order) return ltc_errorf(LTC_ERR_NOMEM, "sort: out of memory");
    int64_t width = what == RANGE ? count : 1;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            /* order[] holds flat element offsets of the line, insertion-sorted */
            for (int64_t j = 0; j < n; j++) {
                int64_t e = (o * n + j) * inner + k, i = j;
                while (i > 0 && before(a, e, order[i - 1], descending)) {
                    order[i] = order[i - 1];
                    i--;
                }
                order[i] = e;
            }
            int64_t at = first;
            if (what == MEDIAN) {
                at = (n - 1) / 2;
                if (ltc_dtype_is_float(s->dtype) && isnan(ltc_ref_get(a->in[0], s->dtype, order[n - 1])))
                    for (at = 0; !isnan(ltc_ref_get(a->in[0], s->dtype, order[at]));) at++;
            } else if (what == MODE) {
                int64_t best_len = 0;
                for (int64_t j = 0; j < n;) {
                    int64_t e = j + 1;
                    while (e < n && same(a, order[e], order[j])) e++;
                    if (e - j > best_len) at = e - 1, best_len = e - j;
                    j = e;
                }
            }
            for (int64_t j = 0; j < width; j++) {
                int64_t dst = (o * width + j) * inner + k, src = order[at + j];
                if (values) ltc_ref_copy(values, s->dtype, dst, a->in[0], s->dtype, src);
                if (indices) ltc_ref_set_i64(indices, LTC_I64, dst, (src / inner) % n + 1);
            }
        }
    free(order);
    return LTC_OK;
}

static int64_t line(const ltc_kernel_args *a, int64_t dim) {
    return a->in_shapes[0].ndim ? a->in_shapes[0].dims[dim] : 1;
}

/* sort(Tensor self, dim dim, bool descending) -> (values, indices) */
ltc_status ltc_ref_kernel_sort(const ltc_kernel_args *a) {
    return sorted(a, a->attrs[0].i, a->attrs[1].i, RANGE, 0, line(a, a->attrs[0].i), a->out[0],
                  a->out[1]);
}

/* argsort(Tensor self, dim dim, bool descending) -> indices */
ltc_status ltc_ref_kernel_argsort(const ltc_kernel_args *a) {
    return sorted(a, a->attrs[0].i, a->attrs[1].i, RANGE, 0, line(a, a->attrs[0].i), NULL,
                  a->out[0]);
}

/* topk(Tensor self, int k, dim dim, bool largest, bool sorted) -> (values, indices) */
ltc_status ltc_ref_kernel_topk(const ltc_kernel_args *a) {
    return sorted(a, a->attrs[1].i, a->attrs[2].i, RANGE, 0, a->attrs[0].i, a->out[0], a->out[1]);
}

/* kthvalue(Tensor self, int k, dim dim, bool keepdim) -> (values, indices) */
ltc_status ltc_ref_kernel_kthvalue(const ltc_kernel_args *a) {
    return sorted(a, a->attrs[1].i, false, RANGE, a->attrs[0].i - 1, 1, a->out[0], a->out[1]);
}

/* median(Tensor self): the lower median of every element (NaN if there is one). */
ltc_status ltc_ref_kernel_median(const ltc_kernel_args *a) {
    return sorted(a, LTC_NONE, false, MEDIAN, 0, 1, a->out[0], NULL);
}

/* median.dim(Tensor self, dim dim, bool keepdim) -> (values, indices) */
ltc_status ltc_ref_kernel_median_dim(const ltc_kernel_args *a) {
    return sorted(a, a->attrs[0].i, false, MEDIAN, 0, 1, a->out[0], a->out[1]);
}

/* mode(Tensor self, dim dim, bool keepdim) -> (values, indices) */
ltc_status ltc_ref_kernel_mode(const ltc_kernel_args *a) {
    return sorted(a, a->attrs[0].i, false, MODE, 0, 1, a->out[0], a->out[1]);
}
