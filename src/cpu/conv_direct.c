/* conv_direct.c - conv2d forward in float32 at stride 1 as a direct convolution with AVX-512:
 * no column matrix and no GEMM packing. The im2col path (conv.c) writes each input element
 * kh * kw times into a column tile, then OpenBLAS copies the tile once more into its packed
 * layout before multiplying; at 64 channels of 56x56 under a 3x3 kernel those two copies
 * cost about a third of the GEMM's own time. Here the FMAs read a zero-padded copy of the
 * input directly.
 *
 * In the padded image (hp = h + 2 ph rows of wp = w + 2 pw), output position (oy, ox) is
 * q = oy * wp + ox, and its input for channel c and kernel offset (i, j) is padded element
 * c * hp * wp + q + i * dh * wp + j * dw: for a run of consecutive q, a run of consecutive
 * inputs. So a tile of KB output channels by QB consecutive q is, per (c, i, j), three
 * 16-float loads and KB broadcast weights into 3 * KB FMAs. Positions with ox >= ow (the
 * wp - ow columns where a row wraps) are computed and not stored. */
#include <stdlib.h>
#include <string.h>

#include "conv.h"
#include "hostmem.h"
#include "threads.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define KB 8                             /* output channels per tile */
#define QB 48                            /* output positions per tile: three 16-float vectors */
#define CHUNK_TILES 8                    /* tiles of positions per task: a few hundred positions */
#define PAD_MAX_BYTES ((size_t)32 << 20) /* the padded copy holds this much of the batch */
#define TARGET __attribute__((target("avx512f")))

typedef struct {
    const conv_geom *g;
    int64_t hp, wp, plane; /* padded image: rows, row length, hp * wp */
    int64_t kgp;           /* output channels per group, rounded up to KB */
    int64_t nq, chunks;    /* tiles of positions per image (oh * wp positions), tasks */
    int64_t n0, nn;        /* the images in the padded copy: [n0, n0 + nn) */
    int64_t *offs;         /* kh * kw input offsets: i * dh * wp + j * dw */
    float *pad;            /* [nn, c, hp, wp], then slack for the last tile's loads */
    float *wpk;            /* [groups, kgp / KB, cg * kh * kw, KB] weights, zero past kg */
    float *bias;           /* [groups * kgp], zeros past kg or without a bias */
    const float *in;
    float *out;
} direct;

/* Padded rows [lo, hi) of the copy (row r: image r / (c * hp), channel, row). */
static void pad_range(void *p, int64_t lo, int64_t hi, int tid) {
    (void)tid;
    const direct *d = p;
    const conv_geom *g = d->g;
    for (int64_t r = lo; r < hi; r++) {
        int64_t nc = r / d->hp, y = r % d->hp - g->ph;
        float *dst = d->pad + r * d->wp;
        if (y < 0 || y >= g->h) {
            memset(dst, 0, sizeof(float) * (size_t)d->wp);
            continue;
        }
        const float *src = d->in + ((d->n0 * g->c + nc) * g->h + y) * g->w;
        memset(dst, 0, sizeof(float) * (size_t)g->pw);
        memcpy(dst + g->pw, src, sizeof(float) * (size_t)g->w);
        memset(dst + g->pw + g->w, 0, sizeof(float) * (size_t)g->pw);
    }
}

/* Stores lanes [0, 16) of v, positions q .. q + 15, into the output plane `out` [oh, ow]:
 * a vector spans at most two rows (wp >= 16); lanes in the wrap columns or past the last
 * row are dropped. The second row's lanes are compressed down to lane 0 first. */
TARGET static inline void store16(const direct *d, float *out, int64_t q, __m512 v) {
    const conv_geom *g = d->g;
    int64_t oy = q / d->wp, ox = q - oy * d->wp;
    if (oy >= g->oh) return;
    int64_t n1 = g->ow - ox; /* lanes of row oy */
    if (n1 > 0) {
        __mmask16 m = (__mmask16)(n1 >= 16 ? 0xffff : (1u << n1) - 1);
        _mm512_mask_storeu_ps(out + oy * g->ow + ox, m, v);
    }
    int64_t s2 = d->wp - ox; /* the lane where row oy + 1 starts */
    if (s2 >= 16 || oy + 1 >= g->oh) return;
    int64_t n2 = 16 - s2 < g->ow ? 16 - s2 : g->ow;
    __mmask16 m2 = (__mmask16)(((1u << n2) - 1) << s2);
    _mm512_mask_storeu_ps(out + (oy + 1) * g->ow, (__mmask16)((1u << n2) - 1),
                          _mm512_maskz_compress_ps(m2, v));
}

/* One tile: output channels [k0, k0 + KB) of the group (those below kg stored) at positions
 * [q, q + QB) of image plane `src` (the padded channels of the group) into `out` (the
 * group's first output channel plane). Accumulators start at the bias. */
TARGET static void tile(const direct *d, const float *src, const float *w, const float *bias,
                        float *out, int64_t k0, int64_t q) {
    const conv_geom *g = d->g;
    __m512 acc[KB][3];
#pragma GCC unroll 8
    for (int k = 0; k < KB; k++)
        acc[k][0] = acc[k][1] = acc[k][2] = _mm512_set1_ps(bias[k]);
    int64_t taps = g->kh * g->kw;
    for (int64_t c = 0; c < g->cg; c++) {
        const float *s = src + c * d->plane + q;
        for (int64_t t = 0; t < taps; t++, w += KB) {
            const float *p = s + d->offs[t];
            __m512 x0 = _mm512_loadu_ps(p), x1 = _mm512_loadu_ps(p + 16),
                   x2 = _mm512_loadu_ps(p + 32);
#pragma GCC unroll 8
            for (int k = 0; k < KB; k++) {
                __m512 wk = _mm512_set1_ps(w[k]);
                acc[k][0] = _mm512_fmadd_ps(x0, wk, acc[k][0]);
                acc[k][1] = _mm512_fmadd_ps(x1, wk, acc[k][1]);
                acc[k][2] = _mm512_fmadd_ps(x2, wk, acc[k][2]);
            }
        }
    }
    int64_t plane = g->oh * g->ow, kn = g->kg - k0 < KB ? g->kg - k0 : KB;
    for (int k = 0; k < kn; k++) {
        float *o = out + (k0 + k) * plane;
        store16(d, o, q, acc[k][0]);
        store16(d, o, q + 16, acc[k][1]);
        store16(d, o, q + 32, acc[k][2]);
    }
}

/* Tasks [lo, hi): task t is image (of the copy) and group t / chunks, tiles of positions
 * from (t % chunks) * CHUNK_TILES on; each KB block of output channels runs over the
 * chunk's tiles while its weights stay in L1. */
TARGET static void direct_range(void *p, int64_t lo, int64_t hi, int tid) {
    (void)tid;
    const direct *d = p;
    const conv_geom *g = d->g;
    int64_t rows = g->cg * g->kh * g->kw;
    for (int64_t t = lo; t < hi; t++) {
        int64_t ng = t / d->chunks, q0 = t % d->chunks * CHUNK_TILES;
        int64_t n = ng / g->groups, gr = ng % g->groups;
        int64_t q1 = q0 + CHUNK_TILES < d->nq ? q0 + CHUNK_TILES : d->nq;
        const float *src = d->pad + (n * g->c + gr * g->cg) * d->plane;
        float *out = d->out + ((d->n0 + n) * g->k + gr * g->kg) * g->oh * g->ow;
        for (int64_t k0 = 0; k0 < g->kg; k0 += KB) {
            const float *w = d->wpk + (gr * d->kgp + k0) * rows;
            const float *b = d->bias + gr * d->kgp + k0;
            for (int64_t qt = q0; qt < q1; qt++)
                tile(d, src, w, b, out, k0, qt * QB);
        }
    }
}

/* The weights as [groups, kgp / KB, rows, KB]: a tile reads its KB channels' weights for
 * one (c, i, j) as one contiguous run. */
static void pack_weights(const direct *d, const float *w, const float *bias) {
    const conv_geom *g = d->g;
    int64_t rows = g->cg * g->kh * g->kw;
    for (int64_t gr = 0; gr < g->groups; gr++)
        for (int64_t k = 0; k < d->kgp; k++) {
            float *dst = d->wpk + (gr * d->kgp + k / KB * KB) * rows + k % KB;
            const float *src = w + (gr * g->kg + k) * rows;
            for (int64_t r = 0; r < rows; r++)
                dst[r * KB] = k < g->kg ? src[r] : 0;
            d->bias[gr * d->kgp + k] = k < g->kg && bias ? bias[gr * g->kg + k] : 0;
        }
}

bool ltc_cpu_conv2d_direct_fits(const conv_geom *g, ltc_dtype dt) {
    static int avx512 = -1;
    if (avx512 < 0) {
        __builtin_cpu_init();
        avx512 = __builtin_cpu_supports("avx512f");
    }
    return avx512 && dt == LTC_F32 && g->sh == 1 && g->sw == 1 && g->w + 2 * g->pw >= 16 &&
           g->rows > 0 && g->kg > 0 && g->n > 0 && g->oh > 0 && g->ow > 0;
}

ltc_status ltc_cpu_conv2d_direct(const conv_geom *g, const float *in, const float *w,
                                 const float *bias, float *out) {
    direct d = {.g = g, .in = in, .out = out};
    d.hp = g->h + 2 * g->ph, d.wp = g->w + 2 * g->pw, d.plane = d.hp * d.wp;
    d.kgp = (g->kg + KB - 1) / KB * KB;
    d.nq = (g->oh * d.wp + QB - 1) / QB;
    d.chunks = (d.nq + CHUNK_TILES - 1) / CHUNK_TILES;
    size_t image = (size_t)(g->c * d.plane) * sizeof(float);
    int64_t per = (int64_t)(PAD_MAX_BYTES / image); /* images per padded copy */
    if (per < 1) per = 1;
    if (per > g->n) per = g->n;
    /* The last tile reads up to QB positions past oh * wp, plus the largest offset: slack
     * past the last channel's plane keeps those (unstored) loads inside the buffer. */
    int64_t slack = QB + (g->kh - 1) * g->dh * d.wp + (g->kw - 1) * g->dw + 16;
    int64_t rows = g->cg * g->kh * g->kw;
    /* From the backend's block cache, as the outputs are: a fresh mapping each run would
     * fault in (and zero) every page of the copy before writing it. */
    size_t pad_bytes = image * (size_t)per + sizeof(float) * (size_t)slack;
    d.pad = ltc_cpu_mem_alloc(pad_bytes);
    d.wpk = malloc(sizeof(float) * (size_t)(g->groups * d.kgp * rows));
    d.bias = malloc(sizeof(float) * (size_t)(g->groups * d.kgp));
    d.offs = malloc(sizeof(int64_t) * (size_t)(g->kh * g->kw));
    if (!d.pad || !d.wpk || !d.bias || !d.offs) goto nomem;
    for (int64_t i = 0; i < g->kh; i++)
        for (int64_t j = 0; j < g->kw; j++)
            d.offs[i * g->kw + j] = i * g->dh * d.wp + j * g->dw;
    pack_weights(&d, w, bias);
    memset(d.pad + (size_t)per * (size_t)(g->c * d.plane), 0, sizeof(float) * (size_t)slack);
    for (d.n0 = 0; d.n0 < g->n; d.n0 += per) {
        d.nn = g->n - d.n0 < per ? g->n - d.n0 : per;
        ltc_cpu_parallel_for(d.nn * g->c * d.hp, 256, pad_range, &d);
        ltc_cpu_parallel_for(d.nn * g->groups * d.chunks, 1, direct_range, &d);
    }
    ltc_cpu_mem_free(d.pad, pad_bytes);
    free(d.wpk), free(d.bias), free(d.offs);
    return LTC_OK;
nomem:
    ltc_cpu_mem_free(d.pad, pad_bytes);
    free(d.wpk), free(d.bias), free(d.offs);
    return ltc_errorf(LTC_ERR_NOMEM, "out of memory for conv2d's padded input");
}

#else /* no AVX-512 build: the im2col path takes every convolution */

bool ltc_cpu_conv2d_direct_fits(const conv_geom *g, ltc_dtype dt) {
    (void)g, (void)dt;
    return false;
}

ltc_status ltc_cpu_conv2d_direct(const conv_geom *g, const float *in, const float *w,
                                 const float *bias, float *out) {
    (void)g, (void)in, (void)w, (void)bias, (void)out;
    return ltc_errorf(LTC_ERR_BACKEND, "conv2d: no direct kernel in this build");
}
#endif
