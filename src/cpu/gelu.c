/* gelu.c - CPU kernels of gelu and gelu_backward (exact form, PyTorch's approximate='none').
 *
 * float32 evaluates erf as PyTorch's vectorized CPU kernel does (Abramowitz and Stegun
 * 7.1.26: 1 - t (a1 + t (a2 + ...)) exp(-z^2) with t = 1 / (1 + p |z|), absolute error below
 * 1.5e-7; the left tail without PyTorch's cancellation, see phi_cdf_f32), so that the loop vectorizes with one exp per element, shared in the backward by
 * the density: libmvec's erff cost 1.5 ns per element, two thirds of a tiny_gpt step's gelu
 * time. float64 calls erfc (Phi = erfc(-x / sqrt(2)) / 2, no cancellation in the left tail,
 * as the reference backend has it). Same-shape operands run in chunks on the worker threads; other
 * shapes (broadcasting) go through the elementwise driver. */
#include <math.h>

#include "elementwise.h"
#include "threads.h"
#include "vmath.h"

#define GELU_GRAIN 16384 /* elements per chunk handed to a thread */

/* Phi(x) = (1 + erf(x / sqrt(2))) / 2 for float32; *e gets exp(-x^2 / 2). The formula gives
 * erfc(|z|) = poly * exp(-z^2); for x < 0, Phi = erfc(|z|) / 2 is taken from it directly, not
 * as (1 - erf(|z|)) / 2, whose float32 subtraction left gelu_backward at x = -5 0.16% off
 * (2.8% at -6; now 6e-5 and 1e-4: fuzz seed 1, program 1579). */
static inline float phi_cdf_f32(float x, float *e) {
    float z = x * 0.70710678118654752440f, az = fabsf(z);
    float t = 1.0f / (1.0f + 0.3275911f * az);
    float poly = t * (0.254829592f +
                      t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
    *e = expf(-z * z);
    float tail = 0.5f * poly * *e; /* erfc(|z|) / 2 */
    /* z < 0: tail; else 1 - tail, through the sign s (0.5 (1 + s) is 0 or 1 exactly): a
     * comparison here, as ?: or as a number, kept the loops from vectorizing (10x slower) */
    float s = copysignf(1.0f, z);
    return 0.5f * (1.0f + s) - s * tail;
}

/* The float32 loops are ltc_ew_chunks_f32 (elementwise.h), the generated loops' chunks:
 * libmvec's vector expf is never mixed with the scalar expf of a compiler epilogue, so equal
 * inputs give equal outputs wherever they sit (the left tail's erfc / 2 carries expf's last
 * bits: gelu(-3) differed between a vector body and its scalar tail, and median's ties with
 * it: fuzz seed 77). */
LTC_EW_INLINE void gelu_body(int64_t len, float *o, const float *const *x) {
    const float *X = x[0];
    LTC_SIMD
    for (int64_t i = 0; i < len; i++) {
        float e;
        o[i] = X[i] * phi_cdf_f32(X[i], &e);
    }
}

LTC_EW_CLONES
static void gelu_f32(int64_t n, void *out, const void *const *in, const int64_t *stride) {
    ltc_ew_chunks_f32(n, out, in, stride, 1, gelu_body);
}

/* grad * (Phi(x) + x phi(x)), phi(x) = exp(-x^2 / 2) / sqrt(2 pi). */
LTC_EW_INLINE void gelu_bw_body(int64_t len, float *o, const float *const *x) {
    const float *G = x[0], *X = x[1];
    LTC_SIMD
    for (int64_t i = 0; i < len; i++) {
        float e, c = phi_cdf_f32(X[i], &e);
        o[i] = G[i] * (c + X[i] * 0.39894228040143267794f * e);
    }
}

LTC_EW_CLONES
static void gelu_bw_f32(int64_t n, void *out, const void *const *in, const int64_t *stride) {
    ltc_ew_chunks_f32(n, out, in, stride, 2, gelu_bw_body);
}

static void gelu_f64(int64_t n, void *out, const void *const *in, const int64_t *stride) {
    double *o = out;
    const double *x = in[0];
    for (int64_t i = 0; i < n; i++) {
        double v = x[i * stride[0]];
        o[i] = v * 0.5 * erfc(v * -0.70710678118654752440);
    }
}

static void gelu_bw_f64(int64_t n, void *out, const void *const *in, const int64_t *stride) {
    double *o = out;
    const double *g = in[0], *x = in[1];
    for (int64_t i = 0; i < n; i++) {
        double v = x[i * stride[1]];
        o[i] = g[i * stride[0]] * (0.5 * erfc(v * -0.70710678118654752440) +
                                   v * 0.39894228040143267794 * exp(-0.5 * v * v));
    }
}

typedef struct {
    ltc_ew_loop loop;
    const ltc_kernel_args *a;
    size_t es;
} gelu_ctx;

static void gelu_range(void *p, int64_t lo, int64_t hi, int tid) {
    (void)tid;
    const gelu_ctx *c = p;
    const void *in[2];
    static const int64_t ones[2] = {1, 1};
    for (int k = 0; k < c->a->n_in; k++) in[k] = (const char *)c->a->in[k] + lo * (int64_t)c->es;
    c->loop(hi - lo, (char *)c->a->out[0] + lo * (int64_t)c->es, in, ones);
}

static ltc_status run(const ltc_kernel_args *a, ltc_ew_loop f32, ltc_ew_loop f64,
                      const char *name) {
    ltc_dtype dt = a->out_shapes[0].dtype;
    for (int k = 0; k < a->n_in; k++)
        if (a->in_shapes[k].dtype != dt || (dt != LTC_F32 && dt != LTC_F64))
            return ltc_errorf(LTC_ERR_ARG, "%s: not implemented for dtype %s", name,
                              ltc_dtype_name(a->in_shapes[k].dtype));
    gelu_ctx c = {dt == LTC_F32 ? f32 : f64, a, ltc_dtype_size(dt)};
    int64_t n = ltc_shape_numel(&a->out_shapes[0]);
    bool same = true;
    for (int k = 0; k < a->n_in; k++) same &= ltc_shape_numel(&a->in_shapes[k]) == n;
    if (!same) return ltc_cpu_elementwise(a, c.loop);
    if (n >= LTC_PAR_MIN_CHUNKS * GELU_GRAIN) ltc_cpu_parallel_for(n, GELU_GRAIN, gelu_range, &c);
    else if (n > 0) gelu_range(&c, 0, n, 0);
    return LTC_OK;
}

/* gelu(Tensor self): float32 or float64. */
ltc_status ltc_cpu_kernel_gelu(const ltc_kernel_args *a) {
    return run(a, gelu_f32, gelu_f64, "gelu");
}

/* gelu_backward(Tensor grad_output, Tensor self): float32 or float64, broadcast. */
ltc_status ltc_cpu_kernel_gelu_backward(const ltc_kernel_args *a) {
    return run(a, gelu_bw_f32, gelu_bw_f64, "gelu_backward");
}
