/* sort.c - CPU kernels of sorting and selection: sort, argsort, topk, kthvalue, median,
 * median.dim, mode. Each line along dim (outer x n x inner) is read into (key, position)
 * items, ordered by qsort with the position as the last key (so the order is stable and
 * total), and the op takes what it needs from the sorted line. Keys are doubles for
 * floating dtypes (NaN above everything) and int64 for the others. */
#include <stdlib.h>
#include <string.h>

#include "elementwise.h"

typedef struct {
    union {
        double f;
        int64_t i;
    } v;
    int64_t pos; /* 0-based along the line */
} item;

static int by_pos(const item *x, const item *y) { return (x->pos > y->pos) - (x->pos < y->pos); }

static int f_asc(const void *a, const void *b) {
    const item *x = a, *y = b;
    bool nx = x->v.f != x->v.f, ny = y->v.f != y->v.f;
    if (nx != ny) return nx ? 1 : -1;
    if (!nx && x->v.f != y->v.f) return x->v.f < y->v.f ? -1 : 1;
    return by_pos(x, y);
}

static int f_desc(const void *a, const void *b) {
    const item *x = a, *y = b;
    bool nx = x->v.f != x->v.f, ny = y->v.f != y->v.f;
    if (nx != ny) return nx ? -1 : 1;
    if (!nx && x->v.f != y->v.f) return x->v.f > y->v.f ? -1 : 1;
    return by_pos(x, y);
}

static int i_asc(const void *a, const void *b) {
    const item *x = a, *y = b;
    if (x->v.i != y->v.i) return x->v.i < y->v.i ? -1 : 1;
    return by_pos(x, y);
}

static int i_desc(const void *a, const void *b) {
    const item *x = a, *y = b;
    if (x->v.i != y->v.i) return x->v.i > y->v.i ? -1 : 1;
    return by_pos(x, y);
}

/* What an op keeps of each sorted line: `count` items from `first` written along the
 * output's dim (values and/or indices), or, for mode and median, one picked item. */
typedef enum { TAKE_RANGE, TAKE_MEDIAN, TAKE_MODE } take_kind;

typedef struct {
    int64_t dim;        /* 0-based, LTC_NONE for the flattened tensor */
    bool descending;
    take_kind take;
    int64_t first, count; /* TAKE_RANGE */
    void *values;       /* self's dtype, or NULL */
    int64_t *indices;   /* 1-based, or NULL */
} sort_job;

/* The item a one-result op picks from a sorted ascending line of n >= 1 items. */
static const item *pick(const item *it, int64_t n, take_kind take, bool is_float) {
    if (take == TAKE_MEDIAN) {
        if (is_float && it[n - 1].v.f != it[n - 1].v.f) { /* NaN: the first NaN */
            int64_t j = n - 1;
            while (j > 0 && it[j - 1].v.f != it[j - 1].v.f) j--;
            return &it[j];
        }
        return &it[(n - 1) / 2];
    }
    /* mode: the longest run of equal keys (the first of equally long ones), its last item */
    int64_t best = 0, best_len = 0;
    for (int64_t j = 0; j < n;) {
        int64_t e = j + 1;
        while (e < n && (is_float ? it[e].v.f == it[j].v.f : it[e].v.i == it[j].v.i)) e++;
        if (e - j > best_len) best = e - 1, best_len = e - j;
        j = e;
    }
    return &it[best];
}

static ltc_status run(const ltc_kernel_args *a, const sort_job *job) {
    const ltc_shape *s = &a->in_shapes[0];
    const bool is_float = ltc_dtype_is_float(s->dtype);
    const size_t es = ltc_dtype_size(s->dtype);
    int64_t outer, n, inner;
    ltc_cpu_split_dim(s, job->dim, &outer, &n, &inner);
    if (outer * inner == 0 || n == 0) return LTC_OK;
    const int64_t numel = outer * n * inner;
    /* every element as a key: double or int64 */
    void *keys = malloc((size_t)numel * 8);
    item *it = malloc((size_t)n * sizeof(item));
    if (!keys || !it) {
        free(keys), free(it);
        return ltc_errorf(LTC_ERR_NOMEM, "sort: out of memory for %lld elements", (long long)numel);
    }
    ltc_cpu_convert(keys, is_float ? LTC_F64 : LTC_I64, a->in[0], s->dtype, numel);
    int (*cmp)(const void *, const void *) =
        is_float ? (job->descending ? f_desc : f_asc) : (job->descending ? i_desc : i_asc);
    const int64_t width = job->take == TAKE_RANGE ? job->count : 1; /* output line length */
    const char *in = a->in[0];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            for (int64_t j = 0; j < n; j++) {
                int64_t at = (o * n + j) * inner + k;
                if (is_float) it[j].v.f = ((const double *)keys)[at];
                else it[j].v.i = ((const int64_t *)keys)[at];
                it[j].pos = j;
            }
            qsort(it, (size_t)n, sizeof(item), cmp);
            const item *from = it + job->first;
            if (job->take != TAKE_RANGE) from = pick(it, n, job->take, is_float);
            for (int64_t j = 0; j < width; j++) {
                int64_t dst = (o * width + j) * inner + k, src = (o * n + from[j].pos) * inner + k;
                if (job->values) memcpy((char *)job->values + dst * es, in + src * es, es);
                if (job->indices) job->indices[dst] = from[j].pos + 1;
            }
        }
    free(keys), free(it);
    return LTC_OK;
}

/* sort(Tensor self, dim dim, bool descending) -> (values, indices) */
ltc_status ltc_cpu_kernel_sort(const ltc_kernel_args *a) {
    int64_t n = a->in_shapes[0].ndim ? a->in_shapes[0].dims[a->attrs[0].i] : 1;
    sort_job job = {a->attrs[0].i, a->attrs[1].i != 0, TAKE_RANGE, 0, n, a->out[0], a->out[1]};
    return run(a, &job);
}

/* argsort(Tensor self, dim dim, bool descending) -> indices */
ltc_status ltc_cpu_kernel_argsort(const ltc_kernel_args *a) {
    int64_t n = a->in_shapes[0].ndim ? a->in_shapes[0].dims[a->attrs[0].i] : 1;
    sort_job job = {a->attrs[0].i, a->attrs[1].i != 0, TAKE_RANGE, 0, n, NULL, a->out[0]};
    return run(a, &job);
}

/* topk(Tensor self, int k, dim dim, bool largest, bool sorted) -> (values, indices): the
 * first k of the line sorted descending (largest) or ascending. */
ltc_status ltc_cpu_kernel_topk(const ltc_kernel_args *a) {
    sort_job job = {a->attrs[1].i, a->attrs[2].i != 0, TAKE_RANGE, 0, a->attrs[0].i, a->out[0],
                    a->out[1]};
    return run(a, &job);
}

/* kthvalue(Tensor self, int k, dim dim, bool keepdim) -> (values, indices) */
ltc_status ltc_cpu_kernel_kthvalue(const ltc_kernel_args *a) {
    sort_job job = {a->attrs[1].i, false, TAKE_RANGE, a->attrs[0].i - 1, 1, a->out[0], a->out[1]};
    return run(a, &job);
}

/* median(Tensor self) -> the lower median of the flattened tensor */
ltc_status ltc_cpu_kernel_median(const ltc_kernel_args *a) {
    sort_job job = {LTC_NONE, false, TAKE_MEDIAN, 0, 1, a->out[0], NULL};
    return run(a, &job);
}

/* median.dim(Tensor self, dim dim, bool keepdim) -> (values, indices) */
ltc_status ltc_cpu_kernel_median_dim(const ltc_kernel_args *a) {
    sort_job job = {a->attrs[0].i, false, TAKE_MEDIAN, 0, 1, a->out[0], a->out[1]};
    return run(a, &job);
}

/* mode(Tensor self, dim dim, bool keepdim) -> (values, indices) */
ltc_status ltc_cpu_kernel_mode(const ltc_kernel_args *a) {
    sort_job job = {a->attrs[0].i, false, TAKE_MODE, 0, 1, a->out[0], a->out[1]};
    return run(a, &job);
}
