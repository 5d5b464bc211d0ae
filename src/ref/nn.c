/* nn.c - reference kernels of the neural-network functions. */
#include <math.h>

#include "ref.h"

#define AT(o, j, k) (((o) * n + (j)) * inner + (k))

/* softmax or log_softmax along attrs[0]: for each line, the max, then the sum of
 * exp(x - max) in double, then each element. */
static ltc_status softmax_any(const ltc_kernel_args *a, bool logsm) {
    const ltc_shape *is = &a->in_shapes[0];
    int64_t outer, n, inner;
    ltc_ref_split(is, a->attrs[0].i, &outer, &n, &inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            double mx = -INFINITY, s = 0;
            for (int64_t j = 0; j < n; j++) {
                double v = ltc_ref_get(a->in[0], is->dtype, AT(o, j, k));
                if (v > mx || isnan(v)) mx = v;
            }
            for (int64_t j = 0; j < n; j++) s += exp(ltc_ref_get(a->in[0], is->dtype, AT(o, j, k)) - mx);
            for (int64_t j = 0; j < n; j++) {
                double v = ltc_ref_get(a->in[0], is->dtype, AT(o, j, k)) - mx;
                ltc_ref_set(a->out[0], is->dtype, AT(o, j, k), logsm ? v - log(s) : exp(v) / s);
            }
        }
    return LTC_OK;
}

/* softmax(Tensor self, dim dim) */
ltc_status ltc_ref_kernel_softmax(const ltc_kernel_args *a) { return softmax_any(a, false); }

/* log_softmax(Tensor self, dim dim) */
ltc_status ltc_ref_kernel_log_softmax(const ltc_kernel_args *a) { return softmax_any(a, true); }
