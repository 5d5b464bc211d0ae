/* norm.c - CPU kernels of the normalisation and regularisation functions: layer_norm,
 * batch_norm and dropout. Floating dtypes; statistics accumulate in double. */
#include <math.h>
#include <string.h>

#include "elementwise.h"
#include "ltc_rng.h"

/* layer_norm over rows of n elements: mean and biased variance of each row (two passes),
 * then (x - mean) * rstd * w + b. */
#define LAYER_NORM(T)                                                                          \
    do {                                                                                       \
        const T *x = a->in[0], *w = a->in[1], *b = a->in[2];                                         \
        T *y = a->out[0];                                                                      \
        for (int64_t r = 0; r < rows; r++) {                                                   \
            const T *xr = x + r * n;                                                           \
            T *yr = y + r * n;                                                                 \
            double mean = 0, var = 0;                                                          \
            for (int64_t j = 0; j < n; j++) mean += xr[j];                                     \
            mean /= (double)n;                                                                 \
            for (int64_t j = 0; j < n; j++) var += (xr[j] - mean) * (xr[j] - mean);            \
            double rstd = 1 / sqrt(var / (double)n + eps);                                     \
            for (int64_t j = 0; j < n; j++) yr[j] = (T)((xr[j] - mean) * rstd * w[j] + b[j]);  \
        }                                                                                      \
    } while (0)

/* layer_norm(self, normalized_shape, weight, bias, eps): attrs normalized_shape, eps. */
ltc_status ltc_cpu_kernel_layer_norm(const ltc_kernel_args *a) {
    int64_t n = ltc_shape_numel(&a->in_shapes[1]);
    int64_t rows = n ? ltc_shape_numel(&a->in_shapes[0]) / n : 0;
    double eps = a->attrs[1].f;
    if (a->in_shapes[0].dtype == LTC_F32) LAYER_NORM(float);
    else LAYER_NORM(double);
    return LTC_OK;
}

/* batch_norm per channel ch over outer x inner elements. */
#define BATCH_NORM(T)                                                                          \
    do {                                                                                       \
        const T *x = a->in[0], *rm = a->in[1], *rv = a->in[2], *w = a->in[3], *b = a->in[4];   \
        T *y = a->out[0];                                                                      \
        for (int64_t ch = 0; ch < c; ch++) {                                                   \
            double mean = rm[ch], var = rv[ch];                                                \
            if (training) {                                                                    \
                double m = (double)(outer * inner);                                            \
                mean = var = 0;                                                                \
                for (int64_t o = 0; o < outer; o++)                                            \
                    for (int64_t k = 0; k < inner; k++) mean += x[(o * c + ch) * inner + k];   \
                mean /= m;                                                                     \
                for (int64_t o = 0; o < outer; o++)                                            \
                    for (int64_t k = 0; k < inner; k++) {                                      \
                        double d = x[(o * c + ch) * inner + k] - mean;                         \
                        var += d * d;                                                          \
                    }                                                                          \
                var /= m;                                                                      \
            }                                                                                  \
            double scale = w[ch] / sqrt(var + eps), shift = b[ch] - mean * scale;              \
            for (int64_t o = 0; o < outer; o++) {                                              \
                const T *xr = x + (o * c + ch) * inner;                                        \
                T *yr = y + (o * c + ch) * inner;                                              \
                for (int64_t k = 0; k < inner; k++) yr[k] = (T)(xr[k] * scale + shift);        \
            }                                                                                  \
        }                                                                                      \
    } while (0)

/* batch_norm(self, running_mean, running_var, weight, bias, training, eps). */
ltc_status ltc_cpu_kernel_batch_norm(const ltc_kernel_args *a) {
    int64_t outer, c, inner;
    ltc_cpu_split_dim(&a->in_shapes[0], 1, &outer, &c, &inner);
    bool training = a->attrs[0].i != 0;
    double eps = a->attrs[1].f;
    if (a->in_shapes[0].dtype == LTC_F32) BATCH_NORM(float);
    else BATCH_NORM(double);
    return LTC_OK;
}

/* dropout(self, p, train): element i kept when the uniform draw i (in self's dtype) is
 * below 1 - p, then x * keep / (1 - p), as ltc.rand(...):lt(1 - p) would give; p = 1 gives
 * x * 0; a copy when not train. The generator state is the last input. */
ltc_status ltc_cpu_kernel_dropout(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0];
    const int64_t *st = a->in[a->n_in - 1];
    uint64_t seed = (uint64_t)st[0], offset = (uint64_t)st[1];
    double p = a->attrs[0].f;
    int64_t n = ltc_shape_numel(s);
    if (!a->attrs[1].i) {
        memcpy(a->out[0], a->in[0], ltc_shape_nbytes(s));
    } else if (s->dtype == LTC_F32) {
        const float *x = a->in[0];
        float *y = a->out[0], q = (float)(1 - p);
        for (int64_t i = 0; i < n; i++)
            y[i] = p == 1 ? x[i] * 0 : x[i] * (float)(ltc_rng_uniform_f32(seed, offset, i) < q) / q;
    } else {
        const double *x = a->in[0];
        double *y = a->out[0], q = 1 - p;
        for (int64_t i = 0; i < n; i++)
            y[i] = p == 1 ? x[i] * 0 : x[i] * (double)(ltc_rng_uniform_f64(seed, offset, i) < q) / q;
    }
    return LTC_OK;
}
