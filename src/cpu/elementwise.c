/* elementwise.c - the broadcasting driver of elementwise kernels, and dtype conversion. */
#include "elementwise.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Element strides of a row-major contiguous shape. */
static void contiguous_strides(const ltc_shape *s, int64_t *st) {
    int64_t acc = 1;
    for (int d = s->ndim - 1; d >= 0; d--) {
        st[d] = acc;
        acc *= s->dims[d];
    }
}

/* Elements per block when stride-0 operands are expanded (EXPAND * 8 bytes per operand, on
 * the stack). */
#define EXPAND 256

/* dst[0..n) = *v, elements of esz bytes (typed stores: a memcpy call per element made a
 * [16,64,128] * [16,64,1] cost 25x a plain mul). */
static void fill_value(void *dst, const void *v, size_t esz, int64_t n) {
    switch (esz) {
#define FILL(T)                                                                              \
    {                                                                                        \
        T x, *d = dst;                                                                       \
        memcpy(&x, v, sizeof x);                                                             \
        for (int64_t j = 0; j < n; j++) d[j] = x;                                            \
        return;                                                                              \
    }
    case 1: FILL(uint8_t)
    case 2: FILL(uint16_t)
    case 4: FILL(uint32_t)
    default: FILL(uint64_t)
#undef FILL
    }
}

/* loop(n, out, in, stride) with every stride 0 or 1. A generated loop vectorizes only when
 * all its strides are 1 (a 0-stride operand takes the gathering path, ~10x slower: a
 * [256,128] > 0 took 39 us against 3.4 us), so each stride-0 operand is copied once into a
 * block of EXPAND equal values and the loop runs block by block with unit strides. */
static void run_unit(ltc_ew_loop loop, int64_t n, char *out, size_t oesz, const void **in,
                     const int64_t *stride, const size_t *esz, int nin) {
    bool any0 = false;
    for (int k = 0; k < nin; k++) any0 |= stride[k] == 0;
    if (!any0 || n < 2 * LTC_EW_CHUNK) {
        loop(n, out, in, stride);
        return;
    }
    _Alignas(64) char buf[LTC_EW_MAX_IN][EXPAND * 8];
    const void *p[LTC_EW_MAX_IN];
    int64_t ones[LTC_EW_MAX_IN];
    int64_t fill = n < EXPAND ? n : EXPAND; /* a short row (a [R, C] * [R, 1] row) fills C */
    for (int k = 0; k < nin; k++) {
        ones[k] = 1;
        p[k] = in[k];
        if (stride[k]) continue;
        fill_value(buf[k], in[k], esz[k], fill);
        p[k] = buf[k];
    }
    for (int64_t lo = 0; lo < n; lo += EXPAND) {
        int64_t m = n - lo < EXPAND ? n - lo : EXPAND;
        const void *q[LTC_EW_MAX_IN];
        for (int k = 0; k < nin; k++)
            q[k] = stride[k] ? (const char *)in[k] + lo * (int64_t)esz[k] : p[k];
        loop(m, out + lo * (int64_t)oesz, q, ones);
    }
}

/* The general path: broadcast strides, coalesced dims, one loop call per innermost run.
 * `in` holds the operand pointers, `esz` their element sizes; n > 0 elements in all. */
static void ew_strided(const ltc_kernel_args *a, ltc_ew_loop loop, const void **in,
                       const size_t *esz) {
    const ltc_shape *os = &a->out_shapes[0];
    int nin = a->n_in;
    int64_t size[LTC_MAX_DIMS];
    int64_t st[LTC_EW_MAX_IN][LTC_MAX_DIMS];
    int64_t cs[LTC_EW_MAX_IN][LTC_MAX_DIMS];
    for (int k = 0; k < nin; k++)
        contiguous_strides(&a->in_shapes[k], cs[k]);

    /* Drop the output's size-1 dims; merge a dim into the previous kept one when every
     * operand steps through both as one (the output, contiguous, always does). */
    int nd = 0;
    for (int d = 0; d < os->ndim; d++) {
        if (os->dims[d] == 1)
            continue;
        int64_t cur[LTC_EW_MAX_IN];
        for (int k = 0; k < nin; k++) {
            const ltc_shape *is = &a->in_shapes[k];
            int id = d - (os->ndim - is->ndim);
            cur[k] = (id < 0 || is->dims[id] == 1) ? 0 : cs[k][id];
        }
        bool merge = nd > 0;
        for (int k = 0; merge && k < nin; k++)
            merge = st[k][nd - 1] == cur[k] * os->dims[d];
        if (merge) {
            size[nd - 1] *= os->dims[d];
            for (int k = 0; k < nin; k++)
                st[k][nd - 1] = cur[k];
        } else {
            size[nd] = os->dims[d];
            for (int k = 0; k < nin; k++)
                st[k][nd] = cur[k];
            nd++;
        }
    }
    if (nd == 0) { /* one element: unreachable from the driver's fast path, kept safe */
        size[0] = 1;
        for (int k = 0; k < nin; k++)
            st[k][0] = 0;
        nd = 1;
    }

    int64_t inner = size[nd - 1];
    int64_t istride[LTC_EW_MAX_IN];
    for (int k = 0; k < nin; k++)
        istride[k] = st[k][nd - 1];
    int64_t outer = 1;
    for (int d = 0; d < nd - 1; d++)
        outer *= size[d];

    size_t oesz = ltc_dtype_size(os->dtype);
    char *out = a->out[0];
    int64_t idx[LTC_MAX_DIMS] = {0};
    int64_t off[LTC_EW_MAX_IN] = {0};
    const void *ptr[LTC_EW_MAX_IN];
    bool unit = true;
    for (int k = 0; k < nin; k++) unit &= istride[k] == 0 || istride[k] == 1;
    for (int64_t o = 0; o < outer; o++) {
        for (int k = 0; k < nin; k++)
            ptr[k] = (const char *)in[k] + off[k] * (int64_t)esz[k];
        if (unit) run_unit(loop, inner, out, oesz, ptr, istride, esz, nin);
        else loop(inner, out, ptr, istride);
        out += inner * (int64_t)oesz;
        /* advance the multi-index over the outer dims, with carry */
        for (int d = nd - 2; d >= 0; d--) {
            idx[d]++;
            for (int k = 0; k < nin; k++)
                off[k] += st[k][d];
            if (idx[d] < size[d])
                break;
            for (int k = 0; k < nin; k++)
                off[k] -= st[k][d] * size[d];
            idx[d] = 0;
        }
    }
}

/* See elementwise.h. */
ltc_status ltc_cpu_elementwise(const ltc_kernel_args *a, ltc_ew_loop loop) {
    int nin = a->n_in;
    if (nin > LTC_EW_MAX_IN)
        return ltc_errorf(LTC_ERR_ARG, "elementwise kernel: %d operands (at most %d)", nin,
                          LTC_EW_MAX_IN);
    int64_t n = ltc_shape_numel(&a->out_shapes[0]);
    if (n == 0)
        return LTC_OK;
    const void *in[LTC_EW_MAX_IN];
    size_t esz[LTC_EW_MAX_IN];
    int64_t stride[LTC_EW_MAX_IN];
    bool simple = true;
    for (int k = 0; k < nin; k++) {
        in[k] = a->in[k];
        esz[k] = ltc_dtype_size(a->in_shapes[k].dtype);
        /* broadcastable onto the output with as many elements means the same sizes */
        int64_t nk = ltc_shape_numel(&a->in_shapes[k]);
        if (nk == n)
            stride[k] = 1;
        else if (nk == 1)
            stride[k] = 0;
        else
            simple = false;
    }
    if (simple)
        run_unit(loop, n, a->out[0], ltc_dtype_size(a->out_shapes[0].dtype), in, stride, esz, nin);
    else
        ew_strided(a, loop, in, esz);
    return LTC_OK;
}

/* See elementwise.h. */
ltc_status ltc_cpu_elementwise_attrs(const ltc_kernel_args *a, ltc_ew_loop loop,
                                     const double *attrs, int n_attrs) {
    if (a->n_in + n_attrs > LTC_EW_MAX_IN)
        return ltc_errorf(LTC_ERR_ARG, "elementwise kernel: %d operands and attributes (at "
                          "most %d)", a->n_in + n_attrs, LTC_EW_MAX_IN);
    const void *in[LTC_EW_MAX_IN];
    ltc_shape shapes[LTC_EW_MAX_IN];
    for (int k = 0; k < a->n_in; k++) {
        in[k] = a->in[k];
        shapes[k] = a->in_shapes[k];
    }
    for (int j = 0; j < n_attrs; j++) {
        in[a->n_in + j] = &attrs[j];
        shapes[a->n_in + j] = (ltc_shape){.dtype = LTC_F64, .ndim = 0};
    }
    ltc_kernel_args b = *a;
    b.n_in = a->n_in + n_attrs;
    b.in = in;
    b.in_shapes = shapes;
    return ltc_cpu_elementwise(&b, loop);
}

/* ---- conversion ------------------------------------------------------------------------ */

/* The ltc_ew_loop converting ST elements (read as x) to DT by EXPR: a C cast, or x != 0 for
 * bool. The unit-stride path is vectorized and compiled per x86-64 level, as the generated
 * loops are: a scalar byte-to-float loop cost about a nanosecond per element. */
#define CONV_DEF(NAME, DT, ST, EXPR)                                                           \
    LTC_EW_CLONES static void NAME(int64_t n, void *out, const void *const *in,                \
                                   const int64_t *stride) {                                    \
        DT *d = out;                                                                           \
        const ST *s = in[0];                                                                   \
        int64_t st = stride[0];                                                                \
        if (st == 1) {                                                                         \
            LTC_SIMD                                                                           \
            for (int64_t i = 0; i < n; i++) {                                                  \
                ST x = s[i];                                                                   \
                d[i] = EXPR;                                                                   \
            }                                                                                  \
        } else {                                                                               \
            for (int64_t i = 0; i < n; i++) {                                                  \
                ST x = s[i * st];                                                              \
                d[i] = EXPR;                                                                   \
            }                                                                                  \
        }                                                                                      \
    }

/* Each dtype's storage type, how an element reads as a C arithmetic value (RD) and how a
 * value is stored (WR): float16 and bfloat16 through float32 (as PyTorch converts; float16
 * by the compiler's _Float16 where it has one, F16C in the x86-64-v3 clone, else ltc.h's bit
 * code), a value into uint8/int8/int16 through int32 and wrapping to the width (PyTorch on
 * x86: 300.0 to uint8 is 44, -1 is 255, 1e10 is 0: x86's conversion of a float out of
 * int32's range gives INT32_MIN, as for the int32 loops). */
#ifdef __FLT16_MANT_DIG__
typedef _Float16 f16_t;
#define RD_f16(x) ((float)(x))
#define WR_f16(v) ((_Float16)(float)(v))
#else
typedef uint16_t f16_t;
#define RD_f16(x) ltc_f16_to_f32(x)
#define WR_f16(v) ltc_f32_to_f16((float)(v))
#endif
#define RD_f32(x) (x)
#define RD_f64(x) (x)
#define RD_i32(x) (x)
#define RD_i64(x) (x)
#define RD_b8(x) (x)
#define RD_u8(x) (x)
#define RD_i8(x) (x)
#define RD_i16(x) (x)
#define RD_bf16(x) ltc_bf16_to_f32(x)
#define WR_f32(v) ((float)(v))
#define WR_f64(v) ((double)(v))
#define WR_i32(v) ((int32_t)(v))
#define WR_i64(v) ((int64_t)(v))
#define WR_b8(v) ((v) != 0)
#define WR_u8(v) ((uint8_t)(int32_t)(v))
#define WR_i8(v) ((int8_t)(int32_t)(v))
#define WR_i16(v) ((int16_t)(int32_t)(v))
#define WR_bf16(v) ltc_f32_to_bf16((float)(v))

/* The ten loops from source type ST (suffix S) to every dtype. */
#define CONV_FROM(S, ST)                                                                       \
    CONV_DEF(conv_##S##_f32, float, ST, WR_f32(RD_##S(x)))                                     \
    CONV_DEF(conv_##S##_f64, double, ST, WR_f64(RD_##S(x)))                                    \
    CONV_DEF(conv_##S##_i32, int32_t, ST, WR_i32(RD_##S(x)))                                   \
    CONV_DEF(conv_##S##_i64, int64_t, ST, WR_i64(RD_##S(x)))                                   \
    CONV_DEF(conv_##S##_b8, unsigned char, ST, WR_b8(RD_##S(x)))                               \
    CONV_DEF(conv_##S##_u8, uint8_t, ST, WR_u8(RD_##S(x)))                                     \
    CONV_DEF(conv_##S##_i8, int8_t, ST, WR_i8(RD_##S(x)))                                      \
    CONV_DEF(conv_##S##_i16, int16_t, ST, WR_i16(RD_##S(x)))                                   \
    CONV_DEF(conv_##S##_f16, f16_t, ST, WR_f16(RD_##S(x)))                                     \
    CONV_DEF(conv_##S##_bf16, uint16_t, ST, WR_bf16(RD_##S(x)))

CONV_FROM(f32, float)
CONV_FROM(f64, double)
CONV_FROM(i32, int32_t)
CONV_FROM(i64, int64_t)
CONV_FROM(b8, unsigned char)
CONV_FROM(u8, uint8_t)
CONV_FROM(i8, int8_t)
CONV_FROM(i16, int16_t)
CONV_FROM(f16, f16_t)
CONV_FROM(bf16, uint16_t)

#define CONV_ROW(S)                                                                            \
    {[LTC_F32] = conv_##S##_f32, [LTC_F64] = conv_##S##_f64, [LTC_I32] = conv_##S##_i32,       \
     [LTC_I64] = conv_##S##_i64, [LTC_BOOL] = conv_##S##_b8, [LTC_U8] = conv_##S##_u8,        \
     [LTC_I8] = conv_##S##_i8,   [LTC_I16] = conv_##S##_i16, [LTC_F16] = conv_##S##_f16,      \
     [LTC_BF16] = conv_##S##_bf16}

/* Indexed [source][destination]. */
static const ltc_ew_loop conv_loops[LTC_DTYPE_COUNT][LTC_DTYPE_COUNT] = {
    [LTC_F32] = CONV_ROW(f32), [LTC_F64] = CONV_ROW(f64), [LTC_I32] = CONV_ROW(i32),
    [LTC_I64] = CONV_ROW(i64), [LTC_BOOL] = CONV_ROW(b8), [LTC_U8] = CONV_ROW(u8),
    [LTC_I8] = CONV_ROW(i8),   [LTC_I16] = CONV_ROW(i16), [LTC_F16] = CONV_ROW(f16),
    [LTC_BF16] = CONV_ROW(bf16),
};

/* float16 from and to float32 with F16C's 8-wide instructions: GCC 12 does not vectorize
 * _Float16 conversions (one vcvtph2ps per element ran at half bfloat16's speed). The same
 * rounding (to nearest even) and NaN (quieted, payload truncated) as ltc.h's bit code, which
 * takes the tail and the strided case. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(LTC_NO_CLONES)
#include <immintrin.h>
#define HAVE_F16C_LOOPS 1
__attribute__((target("avx,f16c"))) static void conv_f16_f32_x8(int64_t n, void *out,
                                                                 const void *const *in,
                                                                 const int64_t *stride) {
    float *d = out;
    const uint16_t *s = in[0];
    int64_t st = stride[0], i = 0;
    if (st == 1)
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
    for (; i < n; i++) d[i] = ltc_f16_to_f32(s[i * st]);
}
__attribute__((target("avx,f16c"))) static void conv_f32_f16_x8(int64_t n, void *out,
                                                                 const void *const *in,
                                                                 const int64_t *stride) {
    uint16_t *d = out;
    const float *s = in[0];
    int64_t st = stride[0], i = 0;
    if (st == 1)
        for (; i + 8 <= n; i += 8)
            _mm_storeu_si128((__m128i *)(d + i),
                             _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) d[i] = ltc_f32_to_f16(s[i * st]);
}
#endif

/* See elementwise.h. */
bool ltc_cpu_has_v4(void) {
#if defined(__GNUC__) && defined(__x86_64__)
    static int have = -1;
    if (have < 0) {
        __builtin_cpu_init();
        have = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512vl");
    }
    return have;
#else
    return false;
#endif
}

/* See elementwise.h. */
ltc_ew_loop ltc_cpu_convert_loop(ltc_dtype dd, ltc_dtype sd) {
    if ((unsigned)dd >= LTC_DTYPE_COUNT || (unsigned)sd >= LTC_DTYPE_COUNT)
        return NULL;
#ifdef HAVE_F16C_LOOPS
    static int f16c = -1; /* every AVX2 CPU has F16C */
    if (f16c < 0) f16c = __builtin_cpu_supports("avx2") ? 1 : 0;
    if (f16c && sd == LTC_F16 && dd == LTC_F32) return conv_f16_f32_x8;
    if (f16c && sd == LTC_F32 && dd == LTC_F16) return conv_f32_f16_x8;
#endif
    return conv_loops[sd][dd];
}

/* See elementwise.h. */
void ltc_cpu_convert(void *dst, ltc_dtype dd, const void *src, ltc_dtype sd, int64_t n) {
    if (dd == sd) {
        if (dst != src)
            memcpy(dst, src, (size_t)n * ltc_dtype_size(dd));
        return;
    }
    ltc_ew_loop loop = ltc_cpu_convert_loop(dd, sd);
    const void *in[1] = {src};
    const int64_t unit[1] = {1};
    if (loop && n > 0)
        loop(n, dst, in, unit);
}

/* See elementwise.h. */
void ltc_cpu_split_dim(const ltc_shape *s, int64_t dim, int64_t *outer, int64_t *n,
                       int64_t *inner) {
    *outer = 1;
    *inner = 1;
    if (dim == LTC_NONE || s->ndim == 0) {
        *n = ltc_shape_numel(s);
        return;
    }
    for (int d = 0; d < dim; d++)
        *outer *= s->dims[d];
    *n = s->dims[dim];
    for (int d = (int)dim + 1; d < s->ndim; d++)
        *inner *= s->dims[d];
}
