/* gelu.c - CPU kernels of gelu and gelu_backward (exact form, PyTorch's approximate='none').
 *
 * float32 evaluates Phi from a polynomial and one vector exp per element (see phi_cdf_f32
 * and phi_cdf_exp_f32), so that the loops vectorize: libmvec's erff cost
 * 1.5 ns per element, two thirds of a tiny_gpt step's gelu time. float64 calls erfc
 * (Phi = erfc(-x / sqrt(2)) / 2, no cancellation in the left tail, as the reference backend
 * has it). Same-shape operands run in chunks on the worker threads; other shapes
 * (broadcasting) go through the elementwise driver. */
#include <math.h>

#include "elementwise.h"
#include "threads.h"
#include "vmath.h"

#define GELU_GRAIN 16384 /* elements per chunk handed to a thread */

/* Phi from tail = erfc(|z|) / 2, z = x / sqrt(2): z < 0 gives tail, else 1 - tail, through
 * the sign s (0.5 (1 + s) is 0 or 1 exactly): a comparison here, as ?: or as a number, kept
 * the loops from vectorizing (10x slower). */
static inline float phi_of_tail(float z, float tail) {
    float s = copysignf(1.0f, z);
    return 0.5f * (1.0f + s) - s * tail;
}

/* Phi(x) = erfc(-x / sqrt(2)) / 2 for float32. erfc(|z|) is Numerical Recipes' erfcc
 * (Chebyshev fit: t exp(-z^2 + P(t)), t = 1 / (1 + |z| / 2), fractional error below 1.2e-7),
 * so the left tail keeps its relative precision: 3e-6 at x = -4, 1.8e-5 at -12.4 (the float32
 * rounding of z^2). Abramowitz and Stegun 7.1.26, PyTorch's vectorized erf, is 1.5e-7 off in
 * absolute terms only: 4.7e-4 of gelu(-4) and 3.6e-2 of the tail at |x| = 12.8 (CI fuzz seed
 * 208830: int64 -4 / gelu(-4) differed from the reference by 15 in 31574). */
static inline float phi_cdf_f32(float x) {
    float z = x * 0.70710678118654752440f, az = fabsf(z);
    float t = 1.0f / (1.0f + 0.5f * az);
    float p = -1.26551223f +
              t * (1.00002368f +
                   t * (0.37409196f +
                        t * (0.09678418f +
                             t * (-0.18628806f +
                                  t * (0.27886807f +
                                       t * (-1.13520398f +
                                            t * (1.48851587f + t * (-0.82215223f + t * 0.17087277f))))))));
    return phi_of_tail(z, 0.5f * t * expf(p - az * az));
}

/* Phi(x) for the backward, which also needs the density's exp(-x^2 / 2) (*e): Abramowitz and
 * Stegun 7.1.26 (PyTorch's vectorized erf), erfc(|z|) = poly(t) exp(-z^2), one exp shared by
 * both (NR's form above would need a second: the backward took 1.7x as long). Its error is
 * 1.5e-7 absolute, so relative in the left tail: 6e-5 of gelu_backward at x = -5, 1e-4 at
 * -6 (fuzz seed 1, program 1579, when the tail was still 1 - erf); gelu_backward is in the
 * fuzz's list of rounding-sensitive ops for it. */
static inline float phi_cdf_exp_f32(float x, float *e) {
    float z = x * 0.70710678118654752440f, az = fabsf(z);
    float t = 1.0f / (1.0f + 0.3275911f * az);
    float poly = t * (0.254829592f +
                      t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
    *e = expf(-z * z);
    return phi_of_tail(z, 0.5f * poly * *e);
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
        o[i] = X[i] * phi_cdf_f32(X[i]);
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
        float e, c = phi_cdf_exp_f32(X[i], &e);
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

ltc_ew_loop ltc_cpu_gelu_loop(int op, int n_in, ltc_dtype dt) {
    if (dt != LTC_F32 && dt != LTC_F64) return NULL;
    if (op == LTC_OP_GELU && n_in == 1) return dt == LTC_F32 ? gelu_f32 : gelu_f64;
    if (op == LTC_OP_GELU_BACKWARD && n_in == 2) return dt == LTC_F32 ? gelu_bw_f32 : gelu_bw_f64;
    return NULL;
}
