/* nn.c - reference kernels of the neural-network functions. */
#include <math.h>
#include <stdlib.h>

#include "ltc_rng.h"
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

/* dropout(self, p, train): with train, element i kept when the uniform draw i (in self's
 * dtype, as ltc.rand) is below 1 - p, then x * keep / (1 - p) in self's dtype (p = 1: x * 0);
 * without, a copy. The generator state is the last input. */
ltc_status ltc_ref_kernel_dropout(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0];
    const int64_t *st = a->in[a->n_in - 1];
    uint64_t seed = (uint64_t)st[0], offset = (uint64_t)st[1];
    double p = a->attrs[0].f;
    bool train = a->attrs[1].i != 0;
    for (int64_t i = 0; i < ltc_shape_numel(s); i++) {
        double x = ltc_ref_get(a->in[0], s->dtype, i), y;
        if (!train) {
            y = x;
        } else if (p == 1) {
            y = x * 0;
        } else if (s->dtype == LTC_F32) {
            float keep = ltc_rng_uniform_f32(seed, offset, i) < (float)(1 - p);
            y = (float)((float)x * keep) / (float)(1 - p);
        } else {
            double keep = ltc_rng_uniform_f64(seed, offset, i) < 1 - p;
            y = x * keep / (1 - p);
        }
        ltc_ref_set(a->out[0], s->dtype, i, y);
    }
    return LTC_OK;
}

/* layer_norm(self, normalized_shape, weight, bias, eps): each run of the last
 * numel(weight) elements normalised by its mean and biased variance (two passes, in
 * double), then scaled by weight and shifted by bias. */
ltc_status ltc_ref_kernel_layer_norm(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0];
    ltc_dtype dt = s->dtype;
    int64_t n = ltc_shape_numel(&a->in_shapes[1]), rows = n ? ltc_shape_numel(s) / n : 0;
    double eps = a->attrs[1].f;
    for (int64_t r = 0; r < rows; r++) {
        double mean = 0, var = 0;
        for (int64_t j = 0; j < n; j++) mean += ltc_ref_get(a->in[0], dt, r * n + j);
        mean /= (double)n;
        for (int64_t j = 0; j < n; j++) {
            double d = ltc_ref_get(a->in[0], dt, r * n + j) - mean;
            var += d * d;
        }
        var /= (double)n;
        for (int64_t j = 0; j < n; j++) {
            double y = (ltc_ref_get(a->in[0], dt, r * n + j) - mean) / sqrt(var + eps);
            y = y * ltc_ref_get(a->in[1], dt, j) + ltc_ref_get(a->in[2], dt, j);
            ltc_ref_set(a->out[0], dt, r * n + j, y);
        }
    }
    return LTC_OK;
}

/* layer_norm_backward(grad_output, self, normalized_shape, weight, eps) -> (grad_input,
 * grad_weight, grad_bias): per row of n = numel(weight) elements, x^ = (x - mean) / sqrt(var
 * + eps) and dx^ = g * weight, grad_input = (dx^ - mean(dx^) - x^ mean(dx^ x^)) / sqrt(var +
 * eps); grad_weight and grad_bias the sums over rows of g * x^ and g. All in double. */
ltc_status ltc_ref_kernel_layer_norm_backward(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[1];
    ltc_dtype dt = s->dtype;
    int64_t n = ltc_shape_numel(&a->in_shapes[2]), rows = n ? ltc_shape_numel(s) / n : 0;
    double eps = a->attrs[1].f;
    double *gw = calloc((size_t)(2 * n) + 1, sizeof *gw), *gb = gw + n;
    if (!gw) return ltc_errorf(LTC_ERR_NOMEM, "out of memory for %lld sums", (long long)(2 * n));
    for (int64_t r = 0; r < rows; r++) {
        double mean = 0, var = 0, sa = 0, sb = 0;
        for (int64_t j = 0; j < n; j++) mean += ltc_ref_get(a->in[1], dt, r * n + j);
        mean /= (double)n;
        for (int64_t j = 0; j < n; j++) {
            double d = ltc_ref_get(a->in[1], dt, r * n + j) - mean;
            var += d * d;
        }
        double rstd = 1 / sqrt(var / (double)n + eps);
        for (int64_t j = 0; j < n; j++) {
            double xh = (ltc_ref_get(a->in[1], dt, r * n + j) - mean) * rstd;
            double g = ltc_ref_get(a->in[0], dt, r * n + j);
            double dxh = g * ltc_ref_get(a->in[2], dt, j);
            sa += dxh;
            sb += dxh * xh;
            gw[j] += g * xh;
            gb[j] += g;
        }
        sa /= (double)n, sb /= (double)n;
        for (int64_t j = 0; j < n; j++) {
            double xh = (ltc_ref_get(a->in[1], dt, r * n + j) - mean) * rstd;
            double dxh = ltc_ref_get(a->in[0], dt, r * n + j) * ltc_ref_get(a->in[2], dt, j);
            ltc_ref_set(a->out[0], dt, r * n + j, rstd * (dxh - sa - xh * sb));
        }
    }
    for (int64_t j = 0; j < n; j++) {
        ltc_ref_set(a->out[1], dt, j, gw[j]);
        ltc_ref_set(a->out[2], dt, j, gb[j]);
    }
    free(gw);
    return LTC_OK;
}

/* batch_norm(self [N, C, ...], running_mean, running_var, weight, bias, training, eps): per
 * channel c, (x - mean) / sqrt(var + eps) * weight[c] + bias[c], with the running statistics
 * or, when training, the batch's mean and biased variance over N and the trailing dims. */
ltc_status ltc_ref_kernel_batch_norm(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0];
    ltc_dtype dt = s->dtype;
    int64_t outer, c, inner;
    ltc_ref_split(s, 1, &outer, &c, &inner);
    bool training = a->attrs[0].i != 0;
    double eps = a->attrs[1].f;
    for (int64_t ch = 0; ch < c; ch++) {
        double mean = ltc_ref_get(a->in[1], dt, ch), var = ltc_ref_get(a->in[2], dt, ch);
        if (training) {
            double m = (double)(outer * inner);
            mean = var = 0;
            for (int64_t o = 0; o < outer; o++)
                for (int64_t k = 0; k < inner; k++)
                    mean += ltc_ref_get(a->in[0], dt, (o * c + ch) * inner + k);
            mean /= m;
            for (int64_t o = 0; o < outer; o++)
                for (int64_t k = 0; k < inner; k++) {
                    double d = ltc_ref_get(a->in[0], dt, (o * c + ch) * inner + k) - mean;
                    var += d * d;
                }
            var /= m;
        }
        double w = ltc_ref_get(a->in[3], dt, ch), b = ltc_ref_get(a->in[4], dt, ch);
        for (int64_t o = 0; o < outer; o++)
            for (int64_t k = 0; k < inner; k++) {
                int64_t i = (o * c + ch) * inner + k;
                double y = (ltc_ref_get(a->in[0], dt, i) - mean) / sqrt(var + eps);
                ltc_ref_set(a->out[0], dt, i, y * w + b);
            }
    }
    return LTC_OK;
}
