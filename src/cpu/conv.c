/* conv.c - CPU kernels of conv2d and its two backward ops: im2col (col2im) plus OpenBLAS
 * gemm on tiles of the column matrix. Inputs [N, C, H, W] or unbatched [C, H, W], weights
 * [K, C / groups, kh, kw]; float32 (sgemm) and float64 (dgemm). Column tiles (a few hundred
 * output positions, all C / groups * kh * kw rows) are scratch of each call, one per
 * thread; a 1x1 kernel with stride 1 and no padding reads the image in place. Where they
 * fit, float32 convolutions go to the direct AVX-512 kernels instead: conv_direct.c for the
 * forward and the input gradient at stride 1, conv_wgrad.c for the weight gradient of 3x3
 * kernels at stride 1. */
#include <stdlib.h>
#include <string.h>

#include "conv.h"
#include "elementwise.h"
#include "threads.h"

static void geom_of(const ltc_shape *in, const ltc_shape *w, const ltc_shape *out,
                    const ltc_attr *stride, const ltc_attr *padding, const ltc_attr *dilation,
                    int64_t groups, conv_geom *g) {
    int b = in->ndim - 3;
    g->n = b ? in->dims[0] : 1;
    g->c = in->dims[b], g->h = in->dims[b + 1], g->w = in->dims[b + 2];
    g->k = w->dims[0], g->kh = w->dims[2], g->kw = w->dims[3];
    g->oh = out->dims[b + 1], g->ow = out->dims[b + 2];
    g->sh = stride->ints[0], g->sw = stride->ints[1];
    g->ph = padding->ints[0], g->pw = padding->ints[1];
    g->dh = dilation->ints[0], g->dw = dilation->ints[1];
    g->groups = groups;
    g->cg = g->c / groups, g->kg = g->k / groups;
    g->rows = g->cg * g->kh * g->kw, g->cols = g->oh * g->ow;
}

/* The outputs [lo, hi) of a line of n_out whose input index o * stride + x0 lies in
 * [0, n_in): along a row for kernel column j (x0 = j * dw - pw), or down the image for
 * kernel row i (x0 = i * dh - ph). */
static void valid_range(int64_t n_in, int64_t n_out, int64_t stride, int64_t x0, int64_t *lo,
                        int64_t *hi) {
    int64_t l = x0 >= 0 ? 0 : (-x0 + stride - 1) / stride;
    int64_t h = n_in - x0 <= 0 ? 0 : (n_in - x0 + stride - 1) / stride;
    *lo = l < n_out ? l : n_out;
    *hi = h < *lo ? *lo : h < n_out ? h : n_out;
}

/* The columns [p0, p1) of one image's (and group's) column matrix, as a [rows, p1 - p0]
 * tile with rows ld apart: row r = (c, i, j) holds image[c][oy * sh - ph + i * dh][ox * sw - pw + j
 * * dw] at the column of output position p = oy * ow + ox, 0 outside the image.
 *
 * Output rows whose input row is outside the image are zero runs. Within the others, at
 * stride 1 with ow == w (the usual "same" padding), position p reads input p + offset
 * throughout: the band is one copy, then the few columns that fall outside the image
 * (padding) are zeroed row by row. Otherwise each output row is a zero run, a copy
 * (contiguous at stride 1) and a zero run. Either way padding costs no per-element test. */
#define DEF_IM2COL(NAME, T)                                                                        \
    static void NAME(const conv_geom *g, const T *img, T *col, int64_t ld, int64_t p0,             \
                     int64_t p1) {                                                                 \
        int64_t ow = g->ow;                                                                        \
        bool flat = g->sh == 1 && g->sw == 1 && ow == g->w;                                        \
        for (int64_t c = 0; c < g->cg; c++)                                                        \
            for (int64_t i = 0; i < g->kh; i++) {                                                  \
                int64_t y0 = i * g->dh - g->ph, ylo, yhi;                                          \
                valid_range(g->h, g->oh, g->sh, y0, &ylo, &yhi);                                   \
                int64_t b0 = ylo * ow; /* the band [b0, b1), inside [p0, p1) */                    \
                b0 = b0 < p0 ? p0 : b0 > p1 ? p1 : b0;                                             \
                int64_t b1 = yhi * ow;                                                             \
                b1 = b1 < b0 ? b0 : b1 > p1 ? p1 : b1;                                             \
                for (int64_t j = 0; j < g->kw; j++) {                                              \
                    T *row = col + ((c * g->kh + i) * g->kw + j) * ld; /* row[p - p0] */           \
                    const T *src = img + c * g->h * g->w;                                          \
                    int64_t x0 = j * g->dw - g->pw, xlo, xhi;                                      \
                    valid_range(g->w, ow, g->sw, x0, &xlo, &xhi);                                  \
                    memset(row, 0, sizeof(T) * (size_t)(b0 - p0));                                 \
                    memset(row + (b1 - p0), 0, sizeof(T) * (size_t)(p1 - b1));                     \
                    if (b0 == b1) continue;                                                        \
                    if (flat) { /* input p + off, clipped to the channel's plane */                \
                        int64_t off = y0 * g->w + x0, s = b0, e = b1;                              \
                        if (s + off < 0) s = -off;                                                 \
                        if (e + off > g->h * g->w) e = g->h * g->w - off;                          \
                        if (e > s)                                                                 \
                            memcpy(row + (s - p0), src + s + off, sizeof(T) * (size_t)(e - s));    \
                    }                                                                              \
                    for (int64_t oy = b0 / ow; oy * ow < b1; oy++) {                               \
                        int64_t base = oy * ow; /* output columns [a, b) of this row */            \
                        int64_t a = b0 > base ? b0 - base : 0;                                     \
                        int64_t b = b1 - base < ow ? b1 - base : ow;                               \
                        int64_t lo = xlo < a ? a : xlo > b ? b : xlo;                              \
                        int64_t hi = xhi < lo ? lo : xhi > b ? b : xhi;                            \
                        T *d = row + (base + a - p0); /* d[ox - a]: output column ox */            \
                        for (int64_t ox = a; ox < lo; ox++)                                        \
                            d[ox - a] = 0;                                                         \
                        for (int64_t ox = hi; ox < b; ox++)                                        \
                            d[ox - a] = 0;                                                         \
                        if (flat) continue;                                                        \
                        const T *s = src + (oy * g->sh + y0) * g->w; /* s[ox * sw + x0] */         \
                        if (g->sw == 1)                                                            \
                            memcpy(d + (lo - a), s + lo + x0, sizeof(T) * (size_t)(hi - lo));      \
                        else                                                                       \
                            for (int64_t ox = lo; ox < hi; ox++)                                   \
                                d[ox - a] = s[ox * g->sw + x0];                                    \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
    }
DEF_IM2COL(im2col_f32, float)
DEF_IM2COL(im2col_f64, double)

/* The adjoint of im2col on the tile of columns [p0, p1) (rows ld apart): each entry is
 * added into the image element it came from. Per kernel row and output row, the valid
 * output columns come from valid_range, so the inner loop has no bounds test and, at
 * stride 1, is a contiguous add the compiler vectorizes. Each image element receives its
 * entries in a fixed order (rows, then positions), whatever the threads. */
#define DEF_COL2IM(NAME, T)                                                                        \
    static void NAME(const conv_geom *g, const T *col, int64_t ld, int64_t p0, int64_t p1,         \
                     T *img) {                                                                     \
        int64_t ow = g->ow;                                                                        \
        for (int64_t c = 0; c < g->cg; c++)                                                        \
            for (int64_t i = 0; i < g->kh; i++) {                                                  \
                int64_t y0 = i * g->dh - g->ph, ylo, yhi;                                          \
                valid_range(g->h, g->oh, g->sh, y0, &ylo, &yhi);                                   \
                int64_t o0 = p0 / ow > ylo ? p0 / ow : ylo; /* output rows [o0, o1) */             \
                int64_t o1 = (p1 + ow - 1) / ow < yhi ? (p1 + ow - 1) / ow : yhi;                  \
                for (int64_t j = 0; j < g->kw; j++) {                                              \
                    const T *row = col + ((c * g->kh + i) * g->kw + j) * ld - p0; /* row[p] */     \
                    int64_t x0 = j * g->dw - g->pw, xlo, xhi;                                      \
                    valid_range(g->w, ow, g->sw, x0, &xlo, &xhi);                                  \
                    for (int64_t oy = o0; oy < o1; oy++) {                                         \
                        int64_t base = oy * ow;                                                    \
                        int64_t lo = p0 - base > xlo ? p0 - base : xlo;                            \
                        int64_t hi = p1 - base < xhi ? p1 - base : xhi;                            \
                        T *d = img + (c * g->h + oy * g->sh + y0) * g->w; /* d[ox * sw + x0] */    \
                        const T *s = row + base;                                                   \
                        if (g->sw == 1) {                                                          \
                            _Pragma("omp simd") for (int64_t ox = lo; ox < hi; ox++)               \
                                d[ox + x0] += s[ox];                                               \
                        } else {                                                                   \
                            for (int64_t ox = lo; ox < hi; ox++)                                   \
                                d[ox * g->sw + x0] += s[ox];                                       \
                        }                                                                          \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
    }
DEF_COL2IM(col2im_f32, float)
DEF_COL2IM(col2im_f64, double)

/* The tile of columns [p0, p1) of one image's (and group's) column matrix, rows ld apart. */
static void im2col(ltc_dtype dt, const conv_geom *g, const void *img, void *col, int64_t ld,
                   int64_t p0, int64_t p1) {
    if (dt == LTC_F32)
        im2col_f32(g, img, col, ld, p0, p1);
    else
        im2col_f64(g, img, col, ld, p0, p1);
}

/* The tile of columns [p0, p1) (rows ld apart) added into one image's (and group's)
 * gradient. */
static void col2im(ltc_dtype dt, const conv_geom *g, const void *col, int64_t ld, int64_t p0,
                   int64_t p1, void *img) {
    if (dt == LTC_F32)
        col2im_f32(g, col, ld, p0, p1, img);
    else
        col2im_f64(g, col, ld, p0, p1, img);
}

/* Row-major C[m,n] = op(A) . op(B) + beta * C with leading dimensions (row lengths) lda,
 * ldb, ldc; op(X) = X^T when the flag is set; A is [m,k] (or [k,m] transposed), B is [k,n]
 * (or [n,k]). */
static void gemm_ld(ltc_dtype dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void *A,
                    int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc) {
    ltc_cpu_gemm(dt, ta, tb, m, n, k, 1.0, A, lda, B, ldb, beta, C, ldc);
}

/* A 1x1 kernel with stride 1 and no padding: the image is its own column matrix. */
static bool pointwise(const conv_geom *g) {
    return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}

/* ---- forward ------------------------------------------------------------------------------ */

/* The forward pass works on tiles of the column matrix: a few hundred output positions of
 * one image and group, all rows. A tile this size stays in the core's L2 cache between
 * im2col writing it and the GEMM reading it, where a whole image's column matrix (7 MB for
 * 64 channels of 56x56 under a 3x3 kernel) went out to memory and back; and the scratch is
 * one tile per thread whatever the batch. */
#define TILE_BYTES ((size_t)1 << 20)
#define TILE_MIN_COLS 64 /* narrower GEMMs waste the kernel's width */

/* Output positions per tile: TILE_BYTES of rows-long columns, a multiple of 16 (whole
 * cache lines), at least TILE_MIN_COLS, at most the image's plane. */
static int64_t tile_cols(const conv_geom *g, size_t es) {
    int64_t t = (int64_t)(TILE_BYTES / es) / (g->rows ? g->rows : 1) / 16 * 16;
    if (t < TILE_MIN_COLS) t = TILE_MIN_COLS;
    return t < g->cols ? t : g->cols;
}

typedef struct {
    ltc_dtype dt;
    size_t es;
    const conv_geom *g;
    const char *in, *w, *bias; /* bias NULL when none */
    char *out;
    int64_t tile, tiles; /* columns per tile, tiles per image and group */
    char *col;           /* one tile of scratch per thread (NULL for pointwise) */
} fwd_ctx;

/* Sets the n columns of kg output rows (row length oh * ow) from output channel k0 on to
 * their channel's bias, or 0 when there is none: the GEMM then adds into them (beta 1),
 * which costs it no more than the zeroing it does for beta 0. */
static void fill_bias(const fwd_ctx *c, char *out, int64_t k0, int64_t n) {
    const conv_geom *g = c->g;
    for (int64_t k = 0; k < g->kg; k++) {
        char *row = out + k * g->cols * (int64_t)c->es;
        if (!c->bias) {
            memset(row, 0, (size_t)n * c->es);
        } else if (c->dt == LTC_F32) {
            float b = ((const float *)c->bias)[k0 + k], *r = (float *)row;
            for (int64_t i = 0; i < n; i++)
                r[i] = b;
        } else {
            double b = ((const double *)c->bias)[k0 + k], *r = (double *)row;
            for (int64_t i = 0; i < n; i++)
                r[i] = b;
        }
    }
}

/* Tiles [lo, hi) on thread tid: tile t is image and group t / tiles, output positions from
 * (t % tiles) * tile on. Per tile: im2col into the thread's scratch, the bias into the
 * output, then out [kg, cols] += W_g [kg, rows] . col [rows, cols]. */
static void fwd_range(void *p, int64_t lo, int64_t hi, int tid) {
    const fwd_ctx *c = p;
    const conv_geom *g = c->g;
    int64_t es = (int64_t)c->es;
    char *col = c->col ? c->col + tid * g->rows * c->tile * es : NULL;
    for (int64_t t = lo; t < hi; t++) {
        int64_t ng = t / c->tiles, p0 = t % c->tiles * c->tile;
        int64_t n = ng / g->groups, gr = ng % g->groups;
        int64_t p1 = p0 + c->tile < g->cols ? p0 + c->tile : g->cols;
        const char *img = c->in + (n * g->c + gr * g->cg) * g->h * g->w * es;
        char *out = c->out + ((n * g->k + gr * g->kg) * g->cols + p0) * es;
        const void *B = img + p0 * es; /* pointwise: the image's own columns */
        int64_t ldb = g->cols;
        if (col) {
            im2col(c->dt, g, img, col, p1 - p0, p0, p1);
            B = col, ldb = p1 - p0;
        }
        fill_bias(c, out, gr * g->kg, p1 - p0);
        gemm_ld(c->dt, false, false, g->kg, p1 - p0, g->rows, c->w + gr * g->kg * g->rows * es,
                g->rows, B, ldb, 1.0, out, g->cols);
    }
}

/* conv2d: in[0] input, in[1] weight, in[2] bias (when `bias`); attrs stride, padding,
 * dilation, groups. Tiles of output positions are shared among the pool's threads, each
 * one's GEMM on its own thread. With fewer tiles than two per thread, the tiles run one
 * after the other on the caller and OpenBLAS threads each GEMM instead. */
static ltc_status conv_forward(const ltc_kernel_args *a, bool bias) {
    conv_geom g;
    ltc_dtype dt = a->out_shapes[0].dtype;
    size_t es = ltc_dtype_size(dt);
    geom_of(&a->in_shapes[0], &a->in_shapes[1], &a->out_shapes[0], &a->attrs[0], &a->attrs[1],
            &a->attrs[2], a->attrs[3].i, &g);
    if (ltc_shape_numel(&a->out_shapes[0]) == 0) return LTC_OK;
    if (!pointwise(&g) && ltc_config_get_int("LTC_CONV_DIRECT") &&
        ltc_cpu_conv2d_direct_fits(&g, dt))
        return ltc_cpu_conv2d_direct(&g, a->in[0], a->in[1], bias ? a->in[2] : NULL, a->out[0]);
    fwd_ctx c = {dt, es, &g, a->in[0], a->in[1], bias ? a->in[2] : NULL, a->out[0], 0, 0, NULL};
    c.tile = tile_cols(&g, es);
    c.tiles = (g.cols + c.tile - 1) / c.tile;
    int64_t tasks = g.n * g.groups * c.tiles;
    int threads = ltc_cpu_threads();
    bool split = threads > 1 && tasks >= 2 * threads;
    if (g.rows == 0) { /* no input channels: the bias alone */
        for (int64_t ng = 0; ng < g.n * g.groups; ng++)
            fill_bias(&c, c.out + ng * g.kg * g.cols * (int64_t)es, ng % g.groups * g.kg, g.cols);
        return LTC_OK;
    }
    if (!pointwise(&g)) {
        size_t tile_bytes = (size_t)(g.rows * c.tile) * es;
        if (!(c.col = malloc(tile_bytes * (size_t)(split ? threads : 1))))
            return ltc_errorf(LTC_ERR_NOMEM, "out of memory for conv2d's %lldx%lld column tiles",
                              (long long)g.rows, (long long)c.tile);
    }
    if (split) {
        ltc_cpu_blas_single(true);
        ltc_cpu_parallel_for(tasks, 1, fwd_range, &c);
        ltc_cpu_blas_single(false);
    } else {
        fwd_range(&c, 0, tasks, 0);
    }
    free(c.col);
    return LTC_OK;
}

/* conv2d(Tensor self, Tensor weight, Tensor bias, int[] stride, int[] padding,
 * int[] dilation, int groups) */
ltc_status ltc_cpu_kernel_conv2d(const ltc_kernel_args *a) {
    return conv_forward(a, true);
}

/* conv2d.nobias(Tensor self, Tensor weight, int[] stride, int[] padding, int[] dilation,
 * int groups) */
ltc_status ltc_cpu_kernel_conv2d_nobias(const ltc_kernel_args *a) {
    return conv_forward(a, false);
}

/* ---- backward ----------------------------------------------------------------------------- */

/* Column tiles of `tile` columns for `threads` threads, or NULL for a pointwise kernel (the
 * image or gradient serves as its own column matrix). */
static ltc_status tiles_alloc(const conv_geom *g, size_t es, int64_t tile, int threads,
                              const char *op, char **col) {
    *col = NULL;
    if (pointwise(g)) return LTC_OK;
    if (!(*col = malloc((size_t)(g->rows * tile) * es * (size_t)threads)))
        return ltc_errorf(LTC_ERR_NOMEM, "out of memory for %s's %lldx%lld column tiles", op,
                          (long long)g->rows, (long long)tile);
    return LTC_OK;
}

typedef struct {
    ltc_dtype dt;
    size_t es;
    const conv_geom *g;
    const char *gout, *w; /* grad_output [n, k, oh, ow], weight [k, cg, kh, kw] */
    char *gin;            /* grad_input [n, c, h, w] */
    int64_t tile, tiles;  /* columns per tile, tiles per image */
    char *col;            /* one tile of scratch per thread (NULL for pointwise) */
} bwd_input_ctx;

/* Images and groups [lo, hi) of the input gradient on thread tid, each one's tiles in
 * order: col [rows, tile] = W_g^T [rows, kg] . grad_g [kg, tile], then col2im of the tile
 * into the zeroed image. One thread writes each image, so no sums cross threads. */
static void bwd_input_range(void *p, int64_t lo, int64_t hi, int tid) {
    const bwd_input_ctx *c = p;
    const conv_geom *g = c->g;
    int64_t es = (int64_t)c->es;
    char *col = c->col ? c->col + tid * g->rows * c->tile * es : NULL;
    for (int64_t ng = lo; ng < hi; ng++) {
        int64_t n = ng / g->groups, gr = ng % g->groups;
        char *img = c->gin + (n * g->c + gr * g->cg) * g->h * g->w * es;
        const char *go = c->gout + (n * g->k + gr * g->kg) * g->cols * es;
        const char *w = c->w + gr * g->kg * g->rows * es;
        if (!col) { /* pointwise: the image is the column matrix */
            gemm_ld(c->dt, true, false, g->rows, g->cols, g->kg, w, g->rows, go, g->cols, 0.0,
                    img, g->cols);
            continue;
        }
        memset(img, 0, (size_t)(g->cg * g->h * g->w * es));
        for (int64_t p0 = 0; p0 < g->cols; p0 += c->tile) {
            int64_t p1 = p0 + c->tile < g->cols ? p0 + c->tile : g->cols;
            gemm_ld(c->dt, true, false, g->rows, p1 - p0, g->kg, w, g->rows, go + p0 * es,
                    g->cols, 0.0, col, p1 - p0);
            col2im(c->dt, g, col, p1 - p0, p0, p1, img);
        }
    }
}

/* At stride 1 the input gradient is itself a convolution: of grad_output (padded by
 * d * (kernel - 1) - padding) with the weights flipped in both kernel dims and transposed
 * per group, [c, kg, kh, kw]. Sets t to that convolution's geometry; false when it does not
 * apply (stride above 1, or padding past the kernel's reach). */
static bool bwd_input_as_conv(const conv_geom *g, conv_geom *t) {
    if (g->sh != 1 || g->sw != 1) return false;
    *t = (conv_geom){.n = g->n, .c = g->k, .h = g->oh, .w = g->ow, .k = g->c, .kh = g->kh,
                     .kw = g->kw, .oh = g->h, .ow = g->w, .sh = 1, .sw = 1,
                     .ph = g->dh * (g->kh - 1) - g->ph, .pw = g->dw * (g->kw - 1) - g->pw,
                     .dh = g->dh, .dw = g->dw, .groups = g->groups, .cg = g->kg, .kg = g->cg};
    t->rows = t->cg * t->kh * t->kw, t->cols = t->oh * t->ow;
    return t->ph >= 0 && t->pw >= 0;
}

/* The input gradient by the forward's direct kernel (conv_direct.c), as bwd_input_as_conv
 * says: about the forward's time, where the GEMM and col2im take twice that. */
static ltc_status bwd_input_direct(const conv_geom *g, const conv_geom *t, const float *gout,
                                   const float *w, float *gin) {
    float *wt = malloc(sizeof(float) * (size_t)(g->k * g->rows));
    if (!wt) return ltc_errorf(LTC_ERR_NOMEM, "out of memory for conv2d_backward_input's weights");
    int64_t ksz = g->kh * g->kw;
    for (int64_t gr = 0; gr < g->groups; gr++)
        for (int64_t k = 0; k < g->kg; k++)
            for (int64_t c = 0; c < g->cg; c++) {
                const float *src = w + ((gr * g->kg + k) * g->cg + c) * ksz;
                float *dst = wt + ((gr * g->cg + c) * g->kg + k) * ksz;
                for (int64_t e = 0; e < ksz; e++)
                    dst[e] = src[ksz - 1 - e]; /* (i, j) from (kh - 1 - i, kw - 1 - j) */
            }
    ltc_status st = ltc_cpu_conv2d_direct(t, gout, wt, NULL, gin);
    free(wt);
    return st;
}

/* conv2d_backward_input(grad_output, weight, input_size, stride, padding, dilation, groups):
 * at stride 1 by the direct kernel where it fits and its tiles of 8 output channels are
 * filled (at least 8 input channels per group); otherwise images (and groups) shared
 * among the pool's threads, each one's GEMMs on its own thread;
 * with fewer than two per thread, they run on the caller and OpenBLAS threads each GEMM. */
ltc_status ltc_cpu_kernel_conv2d_backward_input(const ltc_kernel_args *a) {
    conv_geom g;
    ltc_dtype dt = a->out_shapes[0].dtype;
    size_t es = ltc_dtype_size(dt);
    geom_of(&a->out_shapes[0], &a->in_shapes[1], &a->in_shapes[0], &a->attrs[1], &a->attrs[2],
            &a->attrs[3], a->attrs[4].i, &g);
    if (ltc_shape_numel(&a->out_shapes[0]) == 0) return LTC_OK;
    if (g.rows == 0 || g.cols == 0 || g.kg == 0) {
        memset(a->out[0], 0, ltc_shape_nbytes(&a->out_shapes[0]));
        return LTC_OK;
    }
    if (ltc_config_get_int("LTC_CONV_DIRECT")) {
        conv_geom t;
        if (bwd_input_as_conv(&g, &t) && t.kg >= 8 && ltc_cpu_conv2d_direct_fits(&t, dt))
            return bwd_input_direct(&g, &t, a->in[0], a->in[1], a->out[0]);
    }
    bwd_input_ctx c = {dt, es, &g, a->in[0], a->in[1], a->out[0], 0, 0, NULL};
    c.tile = tile_cols(&g, es);
    c.tiles = (g.cols + c.tile - 1) / c.tile;
    int64_t tasks = g.n * g.groups;
    int threads = ltc_cpu_threads();
    bool split = threads > 1 && tasks >= 2 * threads;
    ltc_status st = tiles_alloc(&g, es, c.tile, split ? threads : 1, "conv2d_backward_input",
                                &c.col);
    if (st) return st;
    if (split) {
        ltc_cpu_blas_single(true);
        ltc_cpu_parallel_for(tasks, 1, bwd_input_range, &c);
        ltc_cpu_blas_single(false);
    } else {
        bwd_input_range(&c, 0, tasks, 0);
    }
    free(c.col);
    return LTC_OK;
}

/* The weight gradient is a sum over all images' tiles. So that the result does not depend
 * on the thread count, the tiles are cut into a fixed number of parts (WGRAD_PARTS, fewer
 * when the parts' gradients would pass WGRAD_PART_BYTES), each summed in order into its
 * own [k, rows] buffer (part 0 into the output), then the parts added in order. */
#define WGRAD_PARTS 8
#define WGRAD_PART_BYTES ((size_t)4 << 20)

typedef struct {
    ltc_dtype dt;
    size_t es;
    const conv_geom *g;
    const char *gout, *in; /* grad_output [n, k, oh, ow], input [n, c, h, w] */
    char *gw;              /* grad_weight [k, cg, kh, kw] */
    char *part;            /* parts 1.. : parts - 1 buffers of k * rows */
    int64_t tile, tiles;   /* columns per tile, tiles per image */
    int64_t units, parts;  /* tiles of all images and groups; parts of them */
    char *col;             /* one tile of scratch per thread (NULL for pointwise) */
} bwd_weight_ctx;

/* Parts [lo, hi) on thread tid. Part q sums the units [q * units / parts, (q + 1) * units /
 * parts), unit u being tile u % tiles of image and group u / tiles: per unit, im2col of the
 * tile, then dW_g [kg, rows] += grad_g [kg, tile] . col^T [tile, rows]. */
static void bwd_weight_range(void *p, int64_t lo, int64_t hi, int tid) {
    const bwd_weight_ctx *c = p;
    const conv_geom *g = c->g;
    int64_t es = (int64_t)c->es;
    char *col = c->col ? c->col + tid * g->rows * c->tile * es : NULL;
    for (int64_t q = lo; q < hi; q++) {
        char *dw = q ? c->part + (q - 1) * g->k * g->rows * es : c->gw;
        memset(dw, 0, (size_t)(g->k * g->rows * es));
        for (int64_t u = q * c->units / c->parts; u < (q + 1) * c->units / c->parts; u++) {
            int64_t ng = u / c->tiles, p0 = u % c->tiles * c->tile;
            int64_t n = ng / g->groups, gr = ng % g->groups;
            int64_t p1 = p0 + c->tile < g->cols ? p0 + c->tile : g->cols;
            const char *img = c->in + (n * g->c + gr * g->cg) * g->h * g->w * es;
            const char *go = c->gout + (n * g->k + gr * g->kg) * g->cols * es;
            const void *B = img + p0 * es; /* pointwise: the image's own columns */
            int64_t ldb = g->cols;
            if (col) {
                im2col(c->dt, g, img, col, p1 - p0, p0, p1);
                B = col, ldb = p1 - p0;
            }
            gemm_ld(c->dt, false, true, g->kg, g->rows, p1 - p0, go + p0 * es, g->cols, B, ldb,
                    1.0, dw + gr * g->kg * g->rows * es, g->rows);
        }
    }
}

/* Elements [lo, hi) of the weight gradient: part 0 (the output) plus parts 1.. in order. */
static void bwd_weight_reduce(void *p, int64_t lo, int64_t hi, int tid) {
    (void)tid;
    const bwd_weight_ctx *c = p;
    int64_t size = c->g->k * c->g->rows;
    for (int64_t q = 1; q < c->parts; q++) {
        if (c->dt == LTC_F32) {
            float *d = (float *)c->gw;
            const float *s = (const float *)c->part + (q - 1) * size;
            _Pragma("omp simd") for (int64_t i = lo; i < hi; i++) d[i] += s[i];
        } else {
            double *d = (double *)c->gw;
            const double *s = (const double *)c->part + (q - 1) * size;
            _Pragma("omp simd") for (int64_t i = lo; i < hi; i++) d[i] += s[i];
        }
    }
}

/* conv2d_backward_weight(grad_output, self, weight_size, stride, padding, dilation, groups):
 * float32 3x3 at stride 1 by the direct kernel (conv_wgrad.c); otherwise the parts shared
 * among the pool's threads, each one's GEMMs on its own thread; a single
 * part runs on the caller and OpenBLAS threads each GEMM. */
ltc_status ltc_cpu_kernel_conv2d_backward_weight(const ltc_kernel_args *a) {
    conv_geom g;
    ltc_dtype dt = a->out_shapes[0].dtype;
    size_t es = ltc_dtype_size(dt);
    geom_of(&a->in_shapes[1], &a->out_shapes[0], &a->in_shapes[0], &a->attrs[1], &a->attrs[2],
            &a->attrs[3], a->attrs[4].i, &g);
    if (ltc_shape_numel(&a->out_shapes[0]) == 0) return LTC_OK;
    if (g.rows == 0 || g.kg == 0 || g.cols == 0 || g.n == 0) {
        memset(a->out[0], 0, ltc_shape_nbytes(&a->out_shapes[0]));
        return LTC_OK;
    }
    if (ltc_config_get_int("LTC_CONV_DIRECT") && ltc_cpu_conv2d_wgrad_fits(&g, dt))
        return ltc_cpu_conv2d_wgrad(&g, a->in[0], a->in[1], a->out[0]);
    bwd_weight_ctx c = {dt, es, &g, a->in[0], a->in[1], a->out[0], NULL, 0, 0, 0, 0, NULL};
    c.tile = tile_cols(&g, es);
    c.tiles = (g.cols + c.tile - 1) / c.tile;
    c.units = g.n * g.groups * c.tiles;
    size_t wbytes = (size_t)(g.k * g.rows) * es;
    int64_t fit = (int64_t)(WGRAD_PART_BYTES / wbytes) + 1; /* part 0 is the output */
    c.parts = WGRAD_PARTS < fit ? WGRAD_PARTS : fit;
    c.parts = c.parts < c.units ? c.parts : c.units;
    int threads = ltc_cpu_threads();
    bool split = threads > 1 && c.parts > 1;
    ltc_status st = tiles_alloc(&g, es, c.tile, split ? threads : 1, "conv2d_backward_weight",
                                &c.col);
    if (st) return st;
    if (c.parts > 1 && !(c.part = malloc(wbytes * (size_t)(c.parts - 1)))) {
        free(c.col);
        return ltc_errorf(LTC_ERR_NOMEM, "out of memory for conv2d_backward_weight's partial "
                          "sums");
    }
    if (split) {
        ltc_cpu_blas_single(true);
        ltc_cpu_parallel_for(c.parts, 1, bwd_weight_range, &c);
        ltc_cpu_blas_single(false);
        ltc_cpu_parallel_for(g.k * g.rows, 65536, bwd_weight_reduce, &c);
    } else {
        bwd_weight_range(&c, 0, c.parts, 0);
        bwd_weight_reduce(&c, 0, g.k * g.rows, 0);
    }
    free(c.part);
    free(c.col);
    return LTC_OK;
}
