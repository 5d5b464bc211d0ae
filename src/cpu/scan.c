/* scan.c - CPU kernels of the running (scan) ops cumprod, cummax and cummin: one pass along
 * dim for each (outer, inner) line, typed loops for float32 and float64 and an int64
 * accumulator for the integer dtypes. (cumsum runs on the reference backend.) */
#include <math.h>
#include <string.h>

#include "elementwise.h"

#define AT(o, j, k) (((o) * n + (j)) * inner + (k))

#define CUMPROD_FLOAT(T)                                                                       \
    do {                                                                                       \
        const T *x = a->in[0];                                                                 \
        T *y = a->out[0];                                                                      \
        for (int64_t o = 0; o < outer; o++)                                                    \
            for (int64_t k = 0; k < inner; k++) {                                              \
                T p = 1;                                                                       \
                for (int64_t j = 0; j < n; j++) y[AT(o, j, k)] = p *= x[AT(o, j, k)];          \
            }                                                                                  \
    } while (0)

/* cumprod(Tensor self, dim dim): floats multiply in their dtype; integers and bool in
 * int64 (wrapping on overflow, as PyTorch). */
ltc_status ltc_cpu_kernel_cumprod(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0];
    int64_t outer, n, inner;
    ltc_cpu_split_dim(s, a->attrs[0].i, &outer, &n, &inner);
    if (s->dtype == LTC_F32) CUMPROD_FLOAT(float);
    else if (s->dtype == LTC_F64) CUMPROD_FLOAT(double);
    else {
        int64_t *y = a->out[0]; /* int64 */
        ltc_cpu_convert(y, LTC_I64, a->in[0], s->dtype, ltc_shape_numel(s));
        for (int64_t o = 0; o < outer; o++)
            for (int64_t k = 0; k < inner; k++) {
                uint64_t p = 1;
                for (int64_t j = 0; j < n; j++) y[AT(o, j, k)] = (int64_t)(p *= (uint64_t)y[AT(o, j, k)]);
            }
    }
    return LTC_OK;
}

/* cummax/cummin along dim: keys as double (floats) or int64 (the rest), the value copied
 * from self, the index 1-based. A new element takes over when it is NaN, or when the
 * running value is not NaN and the element is >= (cummax) or <= (cummin) it. */
static ltc_status running(const ltc_kernel_args *a, bool is_min) {
    const ltc_shape *s = &a->in_shapes[0];
    const size_t es = ltc_dtype_size(s->dtype);
    const bool is_float = ltc_dtype_is_float(s->dtype);
    int64_t outer, n, inner;
    ltc_cpu_split_dim(s, a->attrs[0].i, &outer, &n, &inner);
    const char *x = a->in[0];
    char *y = a->out[0];
    int64_t *idx = a->out[1];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            double bf = 0, vf;
            int64_t bi = 0, vi, at = 0;
            for (int64_t j = 0; j < n; j++) {
                int64_t e = AT(o, j, k);
                bool take;
                if (is_float) {
                    ltc_cpu_convert(&vf, LTC_F64, x + e * (int64_t)es, s->dtype, 1);
                    take = j == 0 || isnan(vf) || (!isnan(bf) && (is_min ? vf <= bf : vf >= bf));
                    if (take) bf = vf;
                } else {
                    ltc_cpu_convert(&vi, LTC_I64, x + e * (int64_t)es, s->dtype, 1);
                    take = j == 0 || (is_min ? vi <= bi : vi >= bi);
                    if (take) bi = vi;
                }
                if (take) at = j;
                memcpy(y + e * (int64_t)es, x + AT(o, at, k) * (int64_t)es, es);
                idx[e] = at + 1;
            }
        }
    return LTC_OK;
}

/* cummax(Tensor self, dim dim) -> (values, indices) */
ltc_status ltc_cpu_kernel_cummax(const ltc_kernel_args *a) { return running(a, false); }
/* cummin(Tensor self, dim dim) -> (values, indices) */
ltc_status ltc_cpu_kernel_cummin(const ltc_kernel_args *a) { return running(a, true); }
