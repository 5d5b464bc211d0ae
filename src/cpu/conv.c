/* conv.c - CPU kernels of conv2d and its two backward ops: im2col (col2im) plus OpenBLAS
 * gemm, one image and one group at a time. Inputs [N, C, H, W] or unbatched [C, H, W],
 * weights [K, C / groups, kh, kw]; float32 (sgemm) and float64 (dgemm). The column
 * buffer (C / groups * kh * kw rows of OH * OW columns) is scratch of each call; a 1x1
 * kernel with stride 1 and no padding reads the image in place. */
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

/* The adjoint of im2col: each column entry is added into the image element it came from. */
#define DEF_COL2IM(NAME, T)                                                                        \
    static void NAME(const conv_geom *g, const T *col, T *img) {                                   \
        for (int64_t c = 0; c < g->cg; c++)                                                        \
            for (int64_t i = 0; i < g->kh; i++)                                                    \
                for (int64_t j = 0; j < g->kw; j++) {                                              \
                    const T *row = col + ((c * g->kh + i) * g->kw + j) * g->cols;                  \
                    for (int64_t oy = 0; oy < g->oh; oy++) {                                       \
                        int64_t y = oy * g->sh - g->ph + i * g->dh;                                \
                        if (y < 0 || y >= g->h) continue;                                          \
                        T *dst = img + (c * g->h + y) * g->w;                                      \
                        const T *src = row + oy * g->ow;                                           \
                        for (int64_t ox = 0; ox < g->ow; ox++) {                                   \
                            int64_t x = ox * g->sw - g->pw + j * g->dw;                            \
                            if (x >= 0 && x < g->w) dst[x] += src[ox];                             \
                        }                                                                          \
                    }                                                                              \
                }                                                                                  \
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

typedef struct {
    ltc_dtype dt;
    const conv_geom *g;
    const void *img;
    void *col;
} im2col_ctx;

static void im2col_range(void *p, int64_t lo, int64_t hi, int tid) {
    (void)tid;
    const im2col_ctx *c = p;
    im2col(c->dt, c->g, c->img, (char *)c->col + lo * (int64_t)ltc_dtype_size(c->dt), c->g->cols,
           lo, hi);
}

/* One image's (and group's) whole column matrix [rows, oh * ow], its output positions
 * shared among the worker threads. */
static void im2col_image(ltc_dtype dt, const conv_geom *g, const void *img, void *col) {
    im2col_ctx c = {dt, g, img, col};
    ltc_cpu_parallel_for(g->cols, 65536 / (g->rows + 1) + 16, im2col_range, &c);
}

static void col2im(ltc_dtype dt, const conv_geom *g, const void *col, void *img) {
    if (dt == LTC_F32)
        col2im_f32(g, col, img);
    else
        col2im_f64(g, col, img);
}

/* Row-major C[m,n] = op(A) . op(B) + beta * C with leading dimensions (row lengths) lda,
 * ldb, ldc; op(X) = X^T when the flag is set; A is [m,k] (or [k,m] transposed), B is [k,n]
 * (or [n,k]). */
static void gemm_ld(ltc_dtype dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void *A,
                    int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc) {
    ltc_cpu_gemm(dt, ta, tb, m, n, k, 1.0, A, lda, B, ldb, beta, C, ldc);
}

/* gemm_ld with packed operands: lda, ldb, ldc are the row lengths of A, B and C as given. */
static void gemm(ltc_dtype dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void *A,
                 const void *B, double beta, void *C) {
    gemm_ld(dt, ta, tb, m, n, k, A, ta ? m : k, B, tb ? k : n, beta, C, n);
}

/* A 1x1 kernel with stride 1 and no padding: the image is its own column matrix. */
static bool pointwise(const conv_geom *g) {
    return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}

/* Scratch for one column matrix (NULL when the image serves), or an error. */
static ltc_status col_alloc(const conv_geom *g, size_t es, void **col) {
    *col = NULL;
    if (pointwise(g) || g->rows * g->cols == 0) return LTC_OK;
    if (!(*col = malloc((size_t)(g->rows * g->cols) * es)))
        return ltc_errorf(LTC_ERR_NOMEM, "out of memory for a %lldx%lld column matrix",
                          (long long)g->rows, (long long)g->cols);
    return LTC_OK;
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

/* conv2d_backward_input(grad_output, weight, input_size, stride, padding, dilation, groups):
 * per image and group, col [rows, L] = W_g^T . grad_g [kg, L], then col2im into the
 * zeroed gradient. */
ltc_status ltc_cpu_kernel_conv2d_backward_input(const ltc_kernel_args *a) {
    conv_geom g;
    ltc_dtype dt = a->out_shapes[0].dtype;
    size_t es = ltc_dtype_size(dt);
    geom_of(&a->out_shapes[0], &a->in_shapes[1], &a->in_shapes[0], &a->attrs[1], &a->attrs[2],
            &a->attrs[3], a->attrs[4].i, &g);
    char *gin = a->out[0];
    const char *gout = a->in[0], *w = a->in[1];
    int64_t plane = g.oh * g.ow;
    memset(gin, 0, ltc_shape_nbytes(&a->out_shapes[0]));
    if (g.rows == 0 || plane == 0 || g.kg == 0 || ltc_shape_numel(&a->out_shapes[0]) == 0)
        return LTC_OK;
    void *col = NULL;
    if (!(col = malloc((size_t)(g.rows * g.cols) * es)))
        return ltc_errorf(LTC_ERR_NOMEM, "out of memory for a %lldx%lld column matrix",
                          (long long)g.rows, (long long)g.cols);
    for (int64_t n = 0; n < g.n; n++)
        for (int64_t gr = 0; gr < g.groups; gr++) {
            char *img = gin + ((n * g.c + gr * g.cg) * g.h * g.w) * (int64_t)es;
            gemm(dt, true, false, g.rows, plane, g.kg, w + gr * g.kg * g.rows * (int64_t)es,
                 gout + ((n * g.k + gr * g.kg) * plane) * (int64_t)es, 0.0, col);
            col2im(dt, &g, col, img);
        }
    free(col);
    return LTC_OK;
}

/* conv2d_backward_weight(grad_output, self, weight_size, stride, padding, dilation, groups):
 * per group, dW_g [kg, rows] = sum over images of grad_g [kg, L] . col^T [L, rows]. */
ltc_status ltc_cpu_kernel_conv2d_backward_weight(const ltc_kernel_args *a) {
    conv_geom g;
    ltc_dtype dt = a->out_shapes[0].dtype;
    size_t es = ltc_dtype_size(dt);
    geom_of(&a->in_shapes[1], &a->out_shapes[0], &a->in_shapes[0], &a->attrs[1], &a->attrs[2],
            &a->attrs[3], a->attrs[4].i, &g);
    char *gw = a->out[0];
    const char *gout = a->in[0], *in = a->in[1];
    int64_t plane = g.oh * g.ow;
    memset(gw, 0, ltc_shape_nbytes(&a->out_shapes[0]));
    if (g.rows == 0 || g.kg == 0 || plane == 0 || g.n == 0) return LTC_OK;
    void *col;
    ltc_status st = col_alloc(&g, es, &col);
    if (st) return st;
    for (int64_t n = 0; n < g.n; n++)
        for (int64_t gr = 0; gr < g.groups; gr++) {
            const char *img = in + ((n * g.c + gr * g.cg) * g.h * g.w) * (int64_t)es;
            const void *cm = img;
            if (col) {
                im2col_image(dt, &g, img, col);
                cm = col;
            }
            gemm(dt, false, true, g.kg, g.rows, plane,
                 gout + ((n * g.k + gr * g.kg) * plane) * (int64_t)es, cm, 1.0,
                 gw + gr * g.kg * g.rows * (int64_t)es);
        }
    free(col);
    return LTC_OK;
}
