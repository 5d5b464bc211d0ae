/* conv.c - CPU kernels of conv2d and its two backward ops: im2col (col2im) plus OpenBLAS
 * gemm, one image and one group at a time. Inputs [N, C, H, W] or unbatched [C, H, W],
 * weights [K, C / groups, kh, kw]; float32 (sgemm) and float64 (dgemm). The column
 * buffer (C / groups * kh * kw rows of OH * OW columns) is scratch of each call; a 1x1
 * kernel with stride 1 and no padding reads the image in place. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "elementwise.h"
#include "threads.h"

/* The geometry of one convolution, from the kernel's shapes and attributes. */
typedef struct {
    int64_t n, c, h, w;      /* input (n = 1 when unbatched) */
    int64_t k, kh, kw;       /* output channels, kernel */
    int64_t oh, ow;          /* output */
    int64_t sh, sw, ph, pw, dh, dw, groups;
    int64_t cg, kg;          /* channels per group: input, output */
    int64_t rows, cols;      /* of the column matrix: cg * kh * kw, oh * ow */
} geom;

static void geom_of(const ltc_shape *in, const ltc_shape *w, const ltc_shape *out,
                    const ltc_attr *stride, const ltc_attr *padding, const ltc_attr *dilation,
                    int64_t groups, geom *g) {
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

/* Row r = (c, i, j) of the column matrix holds image[c][oy * sh - ph + i * dh][ox * sw - pw +
 * j * dw] at column oy * ow + ox, 0 outside the image. */
#define DEF_IM2COL(NAME, T)                                                                   \
    static void NAME(const geom *g, const T *img, T *col, int64_t c0, int64_t c1) {           \
        for (int64_t c = c0; c < c1; c++)                                                     \
            for (int64_t i = 0; i < g->kh; i++)                                               \
                for (int64_t j = 0; j < g->kw; j++) {                                         \
                    T *row = col + ((c * g->kh + i) * g->kw + j) * g->cols;                   \
                    for (int64_t oy = 0; oy < g->oh; oy++) {                                  \
                        int64_t y = oy * g->sh - g->ph + i * g->dh;                           \
                        T *dst = row + oy * g->ow;                                            \
                        if (y < 0 || y >= g->h) {                                             \
                            memset(dst, 0, sizeof(T) * (size_t)g->ow);                        \
                            continue;                                                         \
                        }                                                                     \
                        const T *src = img + (c * g->h + y) * g->w;                           \
                        int64_t x0 = j * g->dw - g->pw;                                       \
                        if (g->sw == 1 && x0 >= 0 && x0 + g->ow <= g->w) {                    \
                            memcpy(dst, src + x0, sizeof(T) * (size_t)g->ow);                 \
                            continue;                                                         \
                        }                                                                     \
                        for (int64_t ox = 0; ox < g->ow; ox++) {                              \
                            int64_t x = ox * g->sw + x0;                                      \
                            dst[ox] = x >= 0 && x < g->w ? src[x] : 0;                        \
                        }                                                                     \
                    }                                                                         \
                }                                                                             \
    }
DEF_IM2COL(im2col_f32, float)
DEF_IM2COL(im2col_f64, double)

/* The adjoint of im2col: each column entry is added into the image element it came from. */
#define DEF_COL2IM(NAME, T)                                                                   \
    static void NAME(const geom *g, const T *col, T *img) {                                   \
        for (int64_t c = 0; c < g->cg; c++)                                                   \
            for (int64_t i = 0; i < g->kh; i++)                                               \
                for (int64_t j = 0; j < g->kw; j++) {                                         \
                    const T *row = col + ((c * g->kh + i) * g->kw + j) * g->cols;             \
                    for (int64_t oy = 0; oy < g->oh; oy++) {                                  \
                        int64_t y = oy * g->sh - g->ph + i * g->dh;                           \
                        if (y < 0 || y >= g->h) continue;                                     \
                        T *dst = img + (c * g->h + y) * g->w;                                 \
                        const T *src = row + oy * g->ow;                                      \
                        for (int64_t ox = 0; ox < g->ow; ox++) {                              \
                            int64_t x = ox * g->sw - g->pw + j * g->dw;                       \
                            if (x >= 0 && x < g->w) dst[x] += src[ox];                        \
                        }                                                                     \
                    }                                                                         \
                }                                                                             \
    }
DEF_COL2IM(col2im_f32, float)
DEF_COL2IM(col2im_f64, double)

typedef struct {
    ltc_dtype dt;
    const geom *g;
    const void *img;
    void *col;
} im2col_ctx;

static void im2col_range(void *p, int64_t lo, int64_t hi, int tid) {
    (void)tid;
    const im2col_ctx *c = p;
    if (c->dt == LTC_F32) im2col_f32(c->g, c->img, c->col, lo, hi);
    else im2col_f64(c->g, c->img, c->col, lo, hi);
}

/* The column matrix of one image and group, its channels shared among the worker threads. */
static void im2col(ltc_dtype dt, const geom *g, const void *img, void *col) {
    im2col_ctx c = {dt, g, img, col};
    int64_t per_channel = g->kh * g->kw * g->cols;
    ltc_cpu_parallel_for(g->cg, 65536 / (per_channel + 1) + 1, im2col_range, &c);
}

static void col2im(ltc_dtype dt, const geom *g, const void *col, void *img) {
    if (dt == LTC_F32) col2im_f32(g, col, img);
    else col2im_f64(g, col, img);
}

/* Row-major C[m,n] = op(A) . op(B) + beta * C, with op(X) = X^T when the flag is set; A is
 * [m,k] (or [k,m] transposed), B is [k,n] (or [n,k]). */
static void gemm(ltc_dtype dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                 const void *A, const void *B, double beta, void *C) {
    CBLAS_TRANSPOSE oa = ta ? CblasTrans : CblasNoTrans, ob = tb ? CblasTrans : CblasNoTrans;
    blasint lda = (blasint)(ta ? m : k), ldb = (blasint)(tb ? k : n);
    if (dt == LTC_F32)
        cblas_sgemm(CblasRowMajor, oa, ob, (blasint)m, (blasint)n, (blasint)k, 1.0f, A, lda, B,
                    ldb, (float)beta, C, (blasint)n);
    else
        cblas_dgemm(CblasRowMajor, oa, ob, (blasint)m, (blasint)n, (blasint)k, 1.0, A, lda, B,
                    ldb, beta, C, (blasint)n);
}

/* A 1x1 kernel with stride 1 and no padding: the image is its own column matrix. */
static bool pointwise(const geom *g) {
    return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}

/* Scratch for one column matrix (NULL when the image serves), or an error. */
static ltc_status col_alloc(const geom *g, size_t es, void **col) {
    *col = NULL;
    if (pointwise(g) || g->rows * g->cols == 0) return LTC_OK;
    if (!(*col = malloc((size_t)(g->rows * g->cols) * es)))
        return ltc_errorf(LTC_ERR_NOMEM, "out of memory for a %lldx%lld column matrix",
                          (long long)g->rows, (long long)g->cols);
    return LTC_OK;
}

/* conv2d: in[0] input, in[1] weight, in[2] bias (when `bias`); attrs stride, padding,
 * dilation, groups. Per image and group: out_g [kg, L] = W_g [kg, rows] . col [rows, L].
 * With a column matrix, the bias rides in the GEMM: W_g gets the bias as an extra column and
 * col an extra row of ones, so no pass over the output adds it. */
static ltc_status conv_forward(const ltc_kernel_args *a, bool bias) {
    geom g;
    ltc_dtype dt = a->out_shapes[0].dtype;
    size_t es = ltc_dtype_size(dt);
    geom_of(&a->in_shapes[0], &a->in_shapes[1], &a->out_shapes[0], &a->attrs[0], &a->attrs[1],
            &a->attrs[2], a->attrs[3].i, &g);
    char *out = a->out[0];
    const char *in = a->in[0], *w = a->in[1];
    int64_t plane = g.oh * g.ow;
    if (ltc_shape_numel(&a->out_shapes[0]) == 0) return LTC_OK;
    bool folded = false;
    if (g.rows == 0) {
        memset(out, 0, ltc_shape_nbytes(&a->out_shapes[0]));
    } else {
        void *col = NULL;
        char *wb = NULL;
        folded = bias && !pointwise(&g);
        int64_t rows = g.rows + folded; /* of the GEMM's inner dim */
        if (!pointwise(&g) && !(col = malloc((size_t)(rows * g.cols) * es)))
            return ltc_errorf(LTC_ERR_NOMEM, "out of memory for a %lldx%lld column matrix",
                              (long long)rows, (long long)g.cols);
        if (folded) {
            if (!(wb = malloc((size_t)(g.k * rows) * es))) {
                free(col);
                return ltc_errorf(LTC_ERR_NOMEM, "out of memory for conv2d's weights");
            }
            for (int64_t k = 0; k < g.k; k++) { /* [K, rows] weights, then bias[k] */
                memcpy(wb + k * rows * (int64_t)es, w + k * g.rows * (int64_t)es,
                       (size_t)g.rows * es);
                memcpy(wb + (k * rows + g.rows) * (int64_t)es, (const char *)a->in[2] + k * (int64_t)es,
                       es);
            }
            char *ones = (char *)col + g.rows * g.cols * (int64_t)es;
            for (int64_t i = 0; i < g.cols; i++) {
                if (dt == LTC_F32) ((float *)ones)[i] = 1;
                else ((double *)ones)[i] = 1;
            }
            w = wb;
        }
        for (int64_t n = 0; n < g.n; n++)
            for (int64_t gr = 0; gr < g.groups; gr++) {
                const char *img = in + ((n * g.c + gr * g.cg) * g.h * g.w) * (int64_t)es;
                const void *cm = img;
                if (col) {
                    im2col(dt, &g, img, col);
                    cm = col;
                }
                gemm(dt, false, false, g.kg, plane, rows, w + gr * g.kg * rows * (int64_t)es,
                     cm, 0.0, out + ((n * g.k + gr * g.kg) * plane) * (int64_t)es);
            }
        free(col);
        free(wb);
    }
    if (bias && !folded)
        for (int64_t n = 0; n < g.n; n++)
            for (int64_t k = 0; k < g.k; k++) {
                int64_t o = (n * g.k + k) * plane;
                if (dt == LTC_F32) {
                    float b = ((const float *)a->in[2])[k], *p = (float *)out + o;
                    for (int64_t i = 0; i < plane; i++) p[i] += b;
                } else {
                    double b = ((const double *)a->in[2])[k], *p = (double *)out + o;
                    for (int64_t i = 0; i < plane; i++) p[i] += b;
                }
            }
    return LTC_OK;
}

/* conv2d(Tensor self, Tensor weight, Tensor bias, int[] stride, int[] padding,
 * int[] dilation, int groups) */
ltc_status ltc_cpu_kernel_conv2d(const ltc_kernel_args *a) { return conv_forward(a, true); }

/* conv2d.nobias(Tensor self, Tensor weight, int[] stride, int[] padding, int[] dilation,
 * int groups) */
ltc_status ltc_cpu_kernel_conv2d_nobias(const ltc_kernel_args *a) { return conv_forward(a, false); }

/* conv2d_backward_input(grad_output, weight, input_size, stride, padding, dilation, groups):
 * per image and group, col [rows, L] = W_g^T . grad_g [kg, L], then col2im into the
 * zeroed gradient. */
ltc_status ltc_cpu_kernel_conv2d_backward_input(const ltc_kernel_args *a) {
    geom g;
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
    geom g;
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
                im2col(dt, &g, img, col);
                cm = col;
            }
            gemm(dt, false, true, g.kg, g.rows, plane,
                 gout + ((n * g.k + gr * g.kg) * plane) * (int64_t)es, cm, 1.0,
                 gw + gr * g.kg * g.rows * (int64_t)es);
        }
    free(col);
    return LTC_OK;
}
