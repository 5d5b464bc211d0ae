/* pool.c - CPU kernels of max_pool2d, avg_pool2d and their backward ops: one pass per
 * (image, channel) plane, float32 and float64, the planes shared among the worker threads
 * (each plane written by one thread, so results do not depend on the thread count). Inputs
 * [N, C, H, W] or [C, H, W]. Windows follow PyTorch (aten/src/ATen/native/cpu/
 * MaxPoolKernel.cpp, AvgPoolKernel.cpp). */
#include <math.h>
#include <string.h>

#include "elementwise.h"
#include "threads.h"

/* The geometry of a pooling: planes (N * C), input and output sizes, window. */
typedef struct {
    int64_t planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
} pgeom;

/* attrs: kernel_size, stride, padding, then dilation when `dilated`. */
static void pgeom_of(const ltc_shape *in, const ltc_shape *out, const ltc_attr *attrs,
                     bool dilated, pgeom *g) {
    int b = in->ndim - 2;
    g->planes = 1;
    for (int d = 0; d < b; d++) g->planes *= in->dims[d];
    g->h = in->dims[b], g->w = in->dims[b + 1];
    g->oh = out->dims[b], g->ow = out->dims[b + 1];
    g->kh = attrs[0].ints[0], g->kw = attrs[0].ints[1];
    g->sh = attrs[1].ints[0], g->sw = attrs[1].ints[1];
    g->ph = attrs[2].ints[0], g->pw = attrs[2].ints[1];
    g->dh = dilated ? attrs[3].ints[0] : 1, g->dw = dilated ? attrs[3].ints[1] : 1;
}

/* The input offset (within a plane) of the largest element of window (oy, ox): the first
 * of equal maxima, a NaN wins (and the last NaN is kept, as in PyTorch); -1 for a window
 * wholly in the padding. */
#define DEF_ARGMAX(NAME, T)                                                                   \
    static int64_t NAME(const pgeom *g, const T *p, int64_t oy, int64_t ox) {                 \
        int64_t best = -1;                                                                    \
        T m = 0;                                                                              \
        for (int64_t i = 0; i < g->kh; i++) {                                                 \
            int64_t y = oy * g->sh - g->ph + i * g->dh;                                       \
            if (y < 0 || y >= g->h) continue;                                                 \
            for (int64_t j = 0; j < g->kw; j++) {                                             \
                int64_t x = ox * g->sw - g->pw + j * g->dw;                                   \
                if (x < 0 || x >= g->w) continue;                                             \
                T v = p[y * g->w + x];                                                        \
                if (best < 0 || v > m || isnan(v)) m = v, best = y * g->w + x;                \
            }                                                                                 \
        }                                                                                     \
        return best;                                                                          \
    }
DEF_ARGMAX(argmax_f32, float)
DEF_ARGMAX(argmax_f64, double)

/* As ARGMAX when every window lies inside the input (no padding reaches it, see inside()):
 * no bounds checks, and 2x2 windows (max_pool2d(2), the usual one) unrolled. The generic
 * version spent about 3 ns an input element on its checks (5 ms for a 128x16x28x28 batch). */
/* Element k of p becomes the window's pick when larger than m or NaN: selects rather than
 * branches (on random data a branch mispredicts every other element: 17 ns an output). */
#define TAKE(T, p, k, m, best)                                                                \
    do {                                                                                      \
        int64_t k_ = (k);                                                                     \
        T v_ = (p)[k_];                                                                       \
        bool t_ = (v_ > (m)) | (v_ != v_);                                                    \
        (m) = t_ ? v_ : (m);                                                                  \
        (best) = t_ ? k_ : (best);                                                            \
    } while (0)
#define DEF_ARGMAX_IN(NAME, T)                                                                \
    static inline int64_t NAME(const pgeom *g, const T *p, int64_t oy, int64_t ox) {          \
        int64_t k0 = oy * g->sh * g->w + ox * g->sw, best = k0;                               \
        T m = p[k0];                                                                          \
        if (g->kh == 2 && g->kw == 2) {                                                       \
            TAKE(T, p, k0 + g->dw, m, best);                                                  \
            TAKE(T, p, k0 + g->dh * g->w, m, best);                                           \
            TAKE(T, p, k0 + g->dh * g->w + g->dw, m, best);                                   \
            return best;                                                                      \
        }                                                                                     \
        for (int64_t i = 0; i < g->kh; i++)                                                   \
            for (int64_t j = 0; j < g->kw; j++) TAKE(T, p, k0 + i * g->dh * g->w + j * g->dw, m, best); \
        return best;                                                                          \
    }
DEF_ARGMAX_IN(argmax_in_f32, float)
DEF_ARGMAX_IN(argmax_in_f64, double)

/* max_pool2d(2): 2x2 windows at stride 2, no padding or dilation, all inside the input. A row
 * of windows is two input rows; the picks (the first of equal maxima, a NaN wins: PyTorch's
 * order a, b, c, d) are made by selects the compiler vectorizes, not by branches. Forward
 * writes the values; backward writes each window's gradient to its pick and 0 to the other
 * three (the windows do not overlap). */
#define POOL2_PICK(T)                                                                         \
    T a = r0[2 * x], b = r0[2 * x + 1], c = r1[2 * x], d = r1[2 * x + 1];                   \
    int pick = 0;                                                                             \
    T m = a;                                                                                  \
    bool tb = (b > m) | (b != b);                                                             \
    m = tb ? b : m;                                                                           \
    pick = tb ? 1 : pick;                                                                     \
    bool tc = (c > m) | (c != c);                                                             \
    m = tc ? c : m;                                                                           \
    pick = tc ? 2 : pick;                                                                     \
    bool td = (d > m) | (d != d);                                                             \
    m = td ? d : m;                                                                           \
    pick = td ? 3 : pick;
#define DEF_POOL2(FWD, BACK, T)                                                               \
    LTC_EW_CLONES static void FWD(const T *r0, const T *r1, int64_t ow, T *out) {             \
        LTC_SIMD                                                                              \
        for (int64_t x = 0; x < ow; x++) {                                                    \
            POOL2_PICK(T)                                                                     \
            (void)pick;                                                                       \
            out[x] = m;                                                                       \
        }                                                                                     \
    }                                                                                         \
    LTC_EW_CLONES static void BACK(const T *r0, const T *r1, int64_t ow, const T *go, T *g0,  \
                                   T *g1) {                                                   \
        LTC_SIMD                                                                              \
        for (int64_t x = 0; x < ow; x++) {                                                    \
            POOL2_PICK(T)                                                                     \
            (void)m;                                                                          \
            g0[2 * x] = pick == 0 ? go[x] : (T)0;                                             \
            g0[2 * x + 1] = pick == 1 ? go[x] : (T)0;                                         \
            g1[2 * x] = pick == 2 ? go[x] : (T)0;                                             \
            g1[2 * x + 1] = pick == 3 ? go[x] : (T)0;                                         \
        }                                                                                     \
    }
DEF_POOL2(pool2_gen_f32, pool2_back_gen_f32, float)
DEF_POOL2(pool2_f64, pool2_back_f64, double)

/* The float32 rows with AVX-512, 16 windows a step: the generated loops above run rows of
 * 7 or 14 windows (a CNN's 14x14 and 28x28 maps) in their scalar tail. Two masked loads of
 * 32 inputs per row, de-interleaved into even and odd columns; the picks by compare masks in
 * the same order a, b, c, d; backward interleaves the four gradient vectors back. Chosen at
 * run time (the CPU must have AVX-512F), else the generated loops. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define P2_TARGET __attribute__((target("avx512f")))

/* Lanes [0, n) of a 16-lane mask (0 <= n <= 16). */
static inline __mmask16 lanes(int64_t n) {
    return n <= 0 ? 0 : n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1);
}

/* Windows [x0, x0 + n) of a row pair (n <= 16): a, b, c, d vectors and the pick per lane. */
P2_TARGET static inline __m512 p2_pick(const float *r0, const float *r1, int64_t x0, int64_t n,
                                       __mmask16 *pb, __mmask16 *pc, __mmask16 *pd) {
    const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i od = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    __mmask16 lo = lanes(2 * n), hi = lanes(2 * n - 16);
    __m512 t0 = _mm512_maskz_loadu_ps(lo, r0 + 2 * x0), t1 = _mm512_maskz_loadu_ps(hi, r0 + 2 * x0 + 16);
    __m512 u0 = _mm512_maskz_loadu_ps(lo, r1 + 2 * x0), u1 = _mm512_maskz_loadu_ps(hi, r1 + 2 * x0 + 16);
    __m512 a = _mm512_permutex2var_ps(t0, ev, t1), b = _mm512_permutex2var_ps(t0, od, t1);
    __m512 c = _mm512_permutex2var_ps(u0, ev, u1), d = _mm512_permutex2var_ps(u0, od, u1);
    __m512 m = a;
    __mmask16 tb = _mm512_cmp_ps_mask(b, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q);
    m = _mm512_mask_blend_ps(tb, m, b);
    __mmask16 tc = _mm512_cmp_ps_mask(c, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(c, c, _CMP_UNORD_Q);
    m = _mm512_mask_blend_ps(tc, m, c);
    __mmask16 td = _mm512_cmp_ps_mask(d, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(d, d, _CMP_UNORD_Q);
    m = _mm512_mask_blend_ps(td, m, d);
    /* the last taker wins: d over c over b over a */
    *pd = td, *pc = (__mmask16)(tc & ~td), *pb = (__mmask16)(tb & ~tc & ~td);
    return m;
}

P2_TARGET static void pool2_avx_f32(const float *r0, const float *r1, int64_t ow, float *out) {
    for (int64_t x0 = 0; x0 < ow; x0 += 16) {
        int64_t n = ow - x0 < 16 ? ow - x0 : 16;
        __mmask16 pb, pc, pd;
        _mm512_mask_storeu_ps(out + x0, lanes(n), p2_pick(r0, r1, x0, n, &pb, &pc, &pd));
    }
}

P2_TARGET static void pool2_back_avx_f32(const float *r0, const float *r1, int64_t ow,
                                         const float *go, float *g0, float *g1) {
    const __m512i lo_i = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i hi_i = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    for (int64_t x0 = 0; x0 < ow; x0 += 16) {
        int64_t n = ow - x0 < 16 ? ow - x0 : 16;
        __mmask16 pb, pc, pd;
        (void)p2_pick(r0, r1, x0, n, &pb, &pc, &pd);
        __mmask16 pa = (__mmask16)~(pb | pc | pd);
        __m512 g = _mm512_maskz_loadu_ps(lanes(n), go + x0);
        __m512 ga = _mm512_maskz_mov_ps(pa, g), gb = _mm512_maskz_mov_ps(pb, g);
        __m512 gc = _mm512_maskz_mov_ps(pc, g), gd = _mm512_maskz_mov_ps(pd, g);
        __mmask16 lo = lanes(2 * n), hi = lanes(2 * n - 16);
        _mm512_mask_storeu_ps(g0 + 2 * x0, lo, _mm512_permutex2var_ps(ga, lo_i, gb));
        _mm512_mask_storeu_ps(g0 + 2 * x0 + 16, hi, _mm512_permutex2var_ps(ga, hi_i, gb));
        _mm512_mask_storeu_ps(g1 + 2 * x0, lo, _mm512_permutex2var_ps(gc, lo_i, gd));
        _mm512_mask_storeu_ps(g1 + 2 * x0 + 16, hi, _mm512_permutex2var_ps(gc, hi_i, gd));
    }
}

static void pool2_f32(const float *r0, const float *r1, int64_t ow, float *out) {
    if (ltc_cpu_has_v4()) pool2_avx_f32(r0, r1, ow, out);
    else pool2_gen_f32(r0, r1, ow, out);
}

static void pool2_back_f32(const float *r0, const float *r1, int64_t ow, const float *go,
                           float *g0, float *g1) {
    if (ltc_cpu_has_v4()) pool2_back_avx_f32(r0, r1, ow, go, g0, g1);
    else pool2_back_gen_f32(r0, r1, ow, go, g0, g1);
}
#else
#define pool2_f32 pool2_gen_f32
#define pool2_back_f32 pool2_back_gen_f32
#endif

/* True when every window of g lies inside the input. */
static bool inside(const pgeom *g);
/* True for 2x2 windows at stride 2 with no dilation (check inside() too). */
static bool pool2(const pgeom *g) {
    return g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->dh == 1 && g->dw == 1;
}

static bool inside(const pgeom *g) {
    return g->ph == 0 && g->pw == 0 && g->kh > 0 && g->kw > 0 &&
           (g->oh - 1) * g->sh + (g->kh - 1) * g->dh < g->h &&
           (g->ow - 1) * g->sw + (g->kw - 1) * g->dw < g->w;
}

#define DEF_MAXPOOL(NAME, ARGMAX, ARGMAX_IN, POOL2, T)                                        \
    static void NAME(const pgeom *g, int64_t lo, int64_t hi, const T *in, T *out) {           \
        bool fast = inside(g);                                                                \
        for (int64_t p = lo; p < hi; p++) {                                                   \
            const T *src = in + p * g->h * g->w;                                              \
            T *dst = out + p * g->oh * g->ow;                                                 \
            if (fast && pool2(g)) {                                                           \
                for (int64_t oy = 0; oy < g->oh; oy++)                                        \
                    POOL2(src + 2 * oy * g->w, src + (2 * oy + 1) * g->w, g->ow, dst + oy * g->ow); \
                continue;                                                                     \
            }                                                                                 \
            for (int64_t oy = 0; oy < g->oh; oy++)                                            \
                for (int64_t ox = 0; ox < g->ow; ox++) {                                      \
                    int64_t k = fast ? ARGMAX_IN(g, src, oy, ox) : ARGMAX(g, src, oy, ox);    \
                    dst[oy * g->ow + ox] = k < 0 ? (T)-INFINITY : src[k];                     \
                }                                                                             \
        }                                                                                     \
    }
DEF_MAXPOOL(maxpool_f32, argmax_f32, argmax_in_f32, pool2_f32, float)
DEF_MAXPOOL(maxpool_f64, argmax_f64, argmax_in_f64, pool2_f64, double)

#define DEF_MAXPOOL_BACK(NAME, ARGMAX, ARGMAX_IN, POOL2_BACK, T)                              \
    static void NAME(const pgeom *g, int64_t lo, int64_t hi, const T *gout, const T *in,      \
                     T *gin) {                                                                 \
        bool fast = inside(g);                                                                \
        memset(gin + lo * g->h * g->w, 0, sizeof(T) * (size_t)((hi - lo) * g->h * g->w));     \
        for (int64_t p = lo; p < hi; p++) {                                                   \
            const T *src = in + p * g->h * g->w, *go = gout + p * g->oh * g->ow;              \
            T *gi = gin + p * g->h * g->w;                                                    \
            if (fast && pool2(g)) {                                                           \
                for (int64_t oy = 0; oy < g->oh; oy++)                                        \
                    POOL2_BACK(src + 2 * oy * g->w, src + (2 * oy + 1) * g->w, g->ow,         \
                               go + oy * g->ow, gi + 2 * oy * g->w, gi + (2 * oy + 1) * g->w); \
                continue;                                                                     \
            }                                                                                 \
            for (int64_t oy = 0; oy < g->oh; oy++)                                            \
                for (int64_t ox = 0; ox < g->ow; ox++) {                                      \
                    int64_t k = fast ? ARGMAX_IN(g, src, oy, ox) : ARGMAX(g, src, oy, ox);    \
                    if (k >= 0) gi[k] += go[oy * g->ow + ox];                                 \
                }                                                                             \
        }                                                                                     \
    }
DEF_MAXPOOL_BACK(maxpool_back_f32, argmax_f32, argmax_in_f32, pool2_back_f32, float)
DEF_MAXPOOL_BACK(maxpool_back_f64, argmax_f64, argmax_in_f64, pool2_back_f64, double)

/* The window of output (oy, ox) clipped to the input: [y0, y1) x [x0, x1), and the divisor:
 * the window clipped to the padded input when count_include_pad, else the clipped count. */
static int64_t avg_window(const pgeom *g, int64_t oy, int64_t ox, bool count_pad, int64_t *y0,
                          int64_t *y1, int64_t *x0, int64_t *x1) {
    int64_t ys = oy * g->sh - g->ph, xs = ox * g->sw - g->pw;
    int64_t ye = ys + g->kh < g->h + g->ph ? ys + g->kh : g->h + g->ph;
    int64_t xe = xs + g->kw < g->w + g->pw ? xs + g->kw : g->w + g->pw;
    int64_t padded = (ye - ys) * (xe - xs);
    *y0 = ys < 0 ? 0 : ys, *x0 = xs < 0 ? 0 : xs;
    *y1 = ye < g->h ? ye : g->h, *x1 = xe < g->w ? xe : g->w;
    return count_pad ? padded : (*y1 - *y0) * (*x1 - *x0);
}

#define DEF_AVGPOOL(NAME, T)                                                                  \
    static void NAME(const pgeom *g, int64_t lo, int64_t hi, bool count_pad, const T *in,     \
                     T *out) {                                                                 \
        for (int64_t p = lo; p < hi; p++) {                                                   \
            const T *src = in + p * g->h * g->w;                                              \
            T *dst = out + p * g->oh * g->ow;                                                 \
            for (int64_t oy = 0; oy < g->oh; oy++)                                            \
                for (int64_t ox = 0; ox < g->ow; ox++) {                                      \
                    int64_t y0, y1, x0, x1;                                                   \
                    int64_t div = avg_window(g, oy, ox, count_pad, &y0, &y1, &x0, &x1);       \
                    T s = 0;                                                                  \
                    for (int64_t y = y0; y < y1; y++)                                         \
                        for (int64_t x = x0; x < x1; x++) s += src[y * g->w + x];             \
                    dst[oy * g->ow + ox] = div ? s / (T)div : (T)NAN;                         \
                }                                                                             \
        }                                                                                     \
    }
DEF_AVGPOOL(avgpool_f32, float)
DEF_AVGPOOL(avgpool_f64, double)

#define DEF_AVGPOOL_BACK(NAME, T)                                                             \
    static void NAME(const pgeom *g, int64_t lo, int64_t hi, bool count_pad, const T *gout,   \
                     T *gin) {                                                                 \
        memset(gin + lo * g->h * g->w, 0, sizeof(T) * (size_t)((hi - lo) * g->h * g->w));     \
        for (int64_t p = lo; p < hi; p++) {                                                   \
            const T *go = gout + p * g->oh * g->ow;                                           \
            T *gi = gin + p * g->h * g->w;                                                    \
            for (int64_t oy = 0; oy < g->oh; oy++)                                            \
                for (int64_t ox = 0; ox < g->ow; ox++) {                                      \
                    int64_t y0, y1, x0, x1;                                                   \
                    int64_t div = avg_window(g, oy, ox, count_pad, &y0, &y1, &x0, &x1);       \
                    if (!div) continue;                                                       \
                    T v = go[oy * g->ow + ox] / (T)div;                                       \
                    for (int64_t y = y0; y < y1; y++)                                         \
                        for (int64_t x = x0; x < x1; x++) gi[y * g->w + x] += v;              \
                }                                                                             \
        }                                                                                     \
    }
DEF_AVGPOOL_BACK(avgpool_back_f32, float)
DEF_AVGPOOL_BACK(avgpool_back_f64, double)

/* A pooling kernel's call, for the worker threads: which one, its geometry and arguments. */
typedef enum { MAXPOOL, MAXPOOL_BACK, AVGPOOL, AVGPOOL_BACK } pool_kind;
typedef struct {
    pool_kind kind;
    pgeom g;
    bool f32, count_pad;
    const ltc_kernel_args *a;
} pool_ctx;

static void pool_range(void *p, int64_t lo, int64_t hi, int tid) {
    (void)tid;
    const pool_ctx *c = p;
    const pgeom *g = &c->g;
    void *const *in = (void *const *)c->a->in, *out = c->a->out[0];
    switch (c->kind) {
    case MAXPOOL:
        if (c->f32) maxpool_f32(g, lo, hi, in[0], out);
        else maxpool_f64(g, lo, hi, in[0], out);
        break;
    case MAXPOOL_BACK:
        if (c->f32) maxpool_back_f32(g, lo, hi, in[0], in[1], out);
        else maxpool_back_f64(g, lo, hi, in[0], in[1], out);
        break;
    case AVGPOOL:
        if (c->f32) avgpool_f32(g, lo, hi, c->count_pad, in[0], out);
        else avgpool_f64(g, lo, hi, c->count_pad, in[0], out);
        break;
    case AVGPOOL_BACK:
        if (c->f32) avgpool_back_f32(g, lo, hi, c->count_pad, in[0], out);
        else avgpool_back_f64(g, lo, hi, c->count_pad, in[0], out);
        break;
    }
}

/* Runs c over its planes on the worker threads, in chunks of about 64K window reads. */
static ltc_status pool_run(pool_ctx *c) {
    const pgeom *g = &c->g;
    int64_t cost = g->oh * g->ow * g->kh * g->kw + g->h * g->w;
    ltc_cpu_parallel_for(g->planes, 65536 / (cost ? cost : 1) + 1, pool_range, c);
    return LTC_OK;
}

/* max_pool2d(Tensor self, int[] kernel_size, int[] stride, int[] padding, int[] dilation,
 * bool ceil_mode) */
ltc_status ltc_cpu_kernel_max_pool2d(const ltc_kernel_args *a) {
    pool_ctx c = {MAXPOOL, {0}, a->in_shapes[0].dtype == LTC_F32, false, a};
    pgeom_of(&a->in_shapes[0], &a->out_shapes[0], a->attrs, true, &c.g);
    return pool_run(&c);
}

/* max_pool2d_backward(Tensor grad_output, Tensor self, ...): each output's gradient goes
 * to the element its window picked (recomputed from self). */
ltc_status ltc_cpu_kernel_max_pool2d_backward(const ltc_kernel_args *a) {
    pool_ctx c = {MAXPOOL_BACK, {0}, a->in_shapes[1].dtype == LTC_F32, false, a};
    pgeom_of(&a->in_shapes[1], &a->in_shapes[0], a->attrs, true, &c.g);
    return pool_run(&c);
}

/* avg_pool2d(Tensor self, int[] kernel_size, int[] stride, int[] padding, bool ceil_mode,
 * bool count_include_pad) */
ltc_status ltc_cpu_kernel_avg_pool2d(const ltc_kernel_args *a) {
    pool_ctx c = {AVGPOOL, {0}, a->in_shapes[0].dtype == LTC_F32, a->attrs[4].i != 0, a};
    pgeom_of(&a->in_shapes[0], &a->out_shapes[0], a->attrs, false, &c.g);
    return pool_run(&c);
}

/* avg_pool2d_backward(Tensor grad_output, Tensor self, ...): each output's gradient spread
 * evenly (by the same divisor) over its window. */
ltc_status ltc_cpu_kernel_avg_pool2d_backward(const ltc_kernel_args *a) {
    pool_ctx c = {AVGPOOL_BACK, {0}, a->in_shapes[1].dtype == LTC_F32, a->attrs[4].i != 0, a};
    pgeom_of(&a->in_shapes[1], &a->in_shapes[0], a->attrs, false, &c.g);
    return pool_run(&c);
}
