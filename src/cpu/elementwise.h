/*
 * elementwise.h - the broadcasting driver behind the generated elementwise kernels, and
 * small helpers shared by the hand-written CPU kernels (dtype conversion, dim splitting).
 *
 * A generated kernel supplies an inner loop per op and dtype; the driver walks the output
 * in row-major order and calls it on runs along the innermost (coalesced) dim.
 */
#ifndef LTC_CPU_ELEMENTWISE_H
#define LTC_CPU_ELEMENTWISE_H

#include <stdbool.h>

#include "ltc_kernel.h"
#include "ltc_special.h"

/* Most operands an elementwise kernel may have. */
#define LTC_EW_MAX_IN 8

/* An inner loop: for i in [0, n), out[i] = f(in[0][i * stride[0]], in[1][i * stride[1]],
 * ...). Strides count elements of each input's dtype (0 for a broadcast operand); `out` is
 * contiguous. The pointers are already offset to the run's first element. */
typedef void (*ltc_ew_loop)(int64_t n, void *out, const void *const *in, const int64_t *stride);

/* Generated loops are compiled for several x86-64 levels (the best runs, chosen at load
 * time) and their unit-stride paths are vectorized (LTC_SIMD: OpenMP's simd directive, with
 * -fopenmp-simd). Both fall back to nothing on other compilers and targets. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(LTC_NO_CLONES)
#define LTC_EW_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
/* A kernel written twice, for 64-byte vectors (AVX-512) and for narrower ones: the first
 * compiled for x86-64-v4 alone (LTC_V4_TARGET) and called where ltc_cpu_has_v4(), the
 * second for the other levels (LTC_EW_CLONES_V3). */
#define LTC_EW_CLONES_V3 __attribute__((target_clones("arch=x86-64-v3", "default")))
#define LTC_V4_TARGET __attribute__((target("arch=x86-64-v4")))
#define LTC_HAVE_V4_TARGET 1
#else
#define LTC_EW_CLONES
#define LTC_EW_CLONES_V3
#define LTC_HAVE_V4_TARGET 0
#endif

/* Whether this CPU has x86-64-v4's features (AVX-512 F, BW, CD, DQ, VL): the level whose
 * clone LTC_EW_CLONES runs on it, and where LTC_V4_TARGET code may run. False elsewhere. */
bool ltc_cpu_has_v4(void);
#define LTC_SIMD _Pragma("omp simd")
/* Elements per chunk of a generated loop (a multiple of every vector width). */
#define LTC_EW_CHUNK 16

/* ---- the chunked float32 loop of hand-written elementwise kernels ----------------------
 * The loop codegen/emit_cpu.c writes for every generated op (emit_loop), for a kernel whose
 * per-element function is C rather than an ops.yaml expr (gelu.c): unit strides run body
 * once over the whole chunks; a strided or partial chunk is first gathered into a buffer
 * (padded with its first element) and run as a whole chunk, so body always sees lengths
 * that are multiples of LTC_EW_CHUNK, a vector math function (libmvec's expf) is never mixed
 * with its scalar twin in an epilogue, and equal inputs give equal outputs wherever they sit.
 * body(len, o, x) computes o[i] from x[k][i], i < len, contiguous: an LTC_EW_INLINE function
 * with LTC_SIMD, so that body and loop are compiled into each LTC_EW_CLONES clone of the
 * caller (a body left out of line runs at the default level, unvectorized for AVX2). */
#if defined(__GNUC__)
#define LTC_EW_INLINE static inline __attribute__((always_inline))
#else
#define LTC_EW_INLINE static inline
#endif
typedef void (*ltc_ew_body_f32)(int64_t len, float *o, const float *const *x);

/* Elements [i0, i0 + LTC_EW_CHUNK) of x (stride s; m of them real) as one contiguous chunk:
 * x + i0 itself when whole and unit-stride, else gathered into buf. */
static inline const float *ltc_ew_chunk_f32(const float *x, int64_t s, int64_t i0, int64_t m,
                                            float *buf) {
    if (m == LTC_EW_CHUNK && s == 1) return x + i0;
    for (int64_t j = 0; j < LTC_EW_CHUNK; j++) buf[j] = x[(i0 + (j < m ? j : 0)) * s];
    return buf;
}

LTC_EW_INLINE void ltc_ew_chunks_f32(int64_t n, void *out, const void *const *in,
                                     const int64_t *stride, int n_in, ltc_ew_body_f32 body) {
    float *o = out;
    const float *x[LTC_EW_MAX_IN];
    bool unit = true;
    for (int k = 0; k < n_in; k++) x[k] = in[k], unit &= stride[k] == 1;
    int64_t i0 = 0;
    if (unit) {
        i0 = n - n % LTC_EW_CHUNK;
        body(i0, o, x);
    }
    for (; i0 < n; i0 += LTC_EW_CHUNK) {
        int64_t m = n - i0 < LTC_EW_CHUNK ? n - i0 : LTC_EW_CHUNK;
        float buf[LTC_EW_MAX_IN][LTC_EW_CHUNK], ob[LTC_EW_CHUNK];
        const float *X[LTC_EW_MAX_IN];
        for (int k = 0; k < n_in; k++) X[k] = ltc_ew_chunk_f32(x[k], stride[k], i0, m, buf[k]);
        body(LTC_EW_CHUNK, m == LTC_EW_CHUNK ? o + i0 : ob, X);
        if (m < LTC_EW_CHUNK)
            for (int64_t j = 0; j < m; j++) o[i0 + j] = ob[j];
    }
}

/* How the plan's fused steps call an op's generated loop (gen/cpu_ops.c, ltc_cpu_ew_info):
 * the loop for the dtype of operand `dispatch`, with the operands first and then n_attrs
 * attribute values as 0-d float64 inputs (node attribute attr[j], its .f when
 * attr_float[j], else its .i). Ops that are not generated elementwise ops have no loops. */
typedef struct ltc_ew_info {
    ltc_ew_loop loops[LTC_DTYPE_COUNT];
    int8_t dispatch;
    int8_t n_attrs;
    int8_t attr[4];
    bool attr_float[4];
} ltc_ew_info;
extern const ltc_ew_info ltc_cpu_ew_info[]; /* indexed by ltc_op */

/* Runs `loop` over out[0] = f(in...) with PyTorch broadcasting of the inputs (trailing
 * dims aligned) onto out_shapes[0]. Each input keeps its own dtype's element size; the
 * output's element size comes from out_shapes[0]. Same-shape and 0-d/one-element operands
 * give a single call over the whole tensor; a 0-size output calls nothing. Fails only when
 * there are more than LTC_EW_MAX_IN inputs. */
ltc_status ltc_cpu_elementwise(const ltc_kernel_args *a, ltc_ew_loop loop);

/* As ltc_cpu_elementwise, for ops whose expr names attributes: the n_attrs values (as
 * doubles) follow the operands as 0-d float64 inputs (stride 0), so a loop reads attribute
 * j as *(const double *)in[a->n_in + j]. */
ltc_status ltc_cpu_elementwise_attrs(const ltc_kernel_args *a, ltc_ew_loop loop,
                                     const double *attrs, int n_attrs);

/* ---- helpers for the hand-written kernels --------------------------------------------- */

/* Converts n elements from src (dtype sd) into dst (dtype dd), as Tensor.to: float to
 * integer truncates toward zero; anything to bool is x != 0 (stored as 0/1 bytes).
 * dst and src must not overlap unless they are the same pointer with the same dtype. */
void ltc_cpu_convert(void *dst, ltc_dtype dd, const void *src, ltc_dtype sd, int64_t n);

/* The elementwise loop (ltc_ew_loop, one input) converting dtype sd to dd as
 * ltc_cpu_convert does, for the kernel of `to` and for fused steps; a dd == sd loop copies
 * (to bool: normalizes to 0/1). NULL for a dtype out of range. */
ltc_ew_loop ltc_cpu_convert_loop(ltc_dtype dd, ltc_dtype sd);
/* The loop of gelu (n_in 1) or gelu_backward (n_in 2: grad_output, self) over operands of
 * dtype dt, unit strides or any, as the kernels run it (gelu.c), for fused steps; NULL for
 * another op, count or dtype. */
ltc_ew_loop ltc_cpu_gelu_loop(int op, int n_in, ltc_dtype dt);

/* Splits a contiguous shape around dim (0-based) into outer x n x inner, so that element
 * (o, j, i) is at (o * n + j) * inner + i. dim == LTC_NONE, or a 0-d shape, gives
 * outer = inner = 1 and n = numel (the flattened tensor). */
void ltc_cpu_split_dim(const ltc_shape *s, int64_t dim, int64_t *outer, int64_t *n,
                       int64_t *inner);

#endif
