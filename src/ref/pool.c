/* pool.c - reference kernels of max_pool2d, avg_pool2d and their backward ops: each output
 * element looks at its window. Inputs [N, C, H, W] or [C, H, W] (planes = N * C). */
#include <math.h>

#include "ref.h"

typedef struct {
    int64_t planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
} pool;

/* attrs: kernel_size, stride, padding, then dilation when `dilated`. */
static pool pool_of(const ltc_shape *in, const ltc_shape *out, const ltc_attr *at, bool dilated) {
    int b = in->ndim - 2;
    pool p = {.planes = 1, .h = in->dims[b], .w = in->dims[b + 1], .oh = out->dims[b],
              .ow = out->dims[b + 1], .kh = at[0].ints[0], .kw = at[0].ints[1],
              .sh = at[1].ints[0], .sw = at[1].ints[1], .ph = at[2].ints[0], .pw = at[2].ints[1],
              .dh = dilated ? at[3].ints[0] : 1, .dw = dilated ? at[3].ints[1] : 1};
    for (int d = 0; d < b; d++) p.planes *= in->dims[d];
    return p;
}

/* The flat input index of the maximum of window (q, oy, ox): the first of equal maxima; a
 * NaN wins (the last NaN, as PyTorch). */
static int64_t window_argmax(const pool *p, const void *in, ltc_dtype dt, int64_t q, int64_t oy,
                             int64_t ox) {
    int64_t best = -1;
    double m = 0;
    for (int64_t i = 0; i < p->kh; i++)
        for (int64_t j = 0; j < p->kw; j++) {
            int64_t y = oy * p->sh - p->ph + i * p->dh, x = ox * p->sw - p->pw + j * p->dw;
            if (y < 0 || y >= p->h || x < 0 || x >= p->w) continue;
            int64_t at = (q * p->h + y) * p->w + x;
            double v = ltc_ref_get(in, dt, at);
            if (best < 0 || v > m || isnan(v)) m = v, best = at;
        }
    return best;
}

/* max_pool2d(Tensor self, int[] kernel_size, int[] stride, int[] padding, int[] dilation,
 * bool ceil_mode) */
ltc_status ltc_ref_kernel_max_pool2d(const ltc_kernel_args *a) {
    const ltc_shape *is = &a->in_shapes[0];
    pool p = pool_of(is, &a->out_shapes[0], a->attrs, true);
    for (int64_t q = 0; q < p.planes; q++)
        for (int64_t oy = 0; oy < p.oh; oy++)
            for (int64_t ox = 0; ox < p.ow; ox++) {
                int64_t k = window_argmax(&p, a->in[0], is->dtype, q, oy, ox);
                ltc_ref_set(a->out[0], is->dtype, (q * p.oh + oy) * p.ow + ox,
                            k < 0 ? -INFINITY : ltc_ref_get(a->in[0], is->dtype, k));
            }
    return LTC_OK;
}

/* max_pool2d_backward(Tensor grad_output, Tensor self, ...): the gradient of each output goes
 * to the element its window picked. */
ltc_status ltc_ref_kernel_max_pool2d_backward(const ltc_kernel_args *a) {
    const ltc_shape *gs = &a->in_shapes[0], *is = &a->in_shapes[1];
    pool p = pool_of(is, gs, a->attrs, true);
    int64_t n = ltc_shape_numel(is);
    for (int64_t i = 0; i < n; i++) ltc_ref_set(a->out[0], is->dtype, i, 0);
    for (int64_t q = 0; q < p.planes; q++)
        for (int64_t oy = 0; oy < p.oh; oy++)
            for (int64_t ox = 0; ox < p.ow; ox++) {
                int64_t k = window_argmax(&p, a->in[1], is->dtype, q, oy, ox);
                if (k < 0) continue;
                double g = ltc_ref_get(a->in[0], gs->dtype, (q * p.oh + oy) * p.ow + ox);
                ltc_ref_set(a->out[0], is->dtype, k, ltc_ref_get(a->out[0], is->dtype, k) + g);
            }
    return LTC_OK;
}

/* The window of (oy, ox) clipped to the input, and its divisor: the window clipped to the
 * padded input when count_include_pad, else the number of input elements in it. */
static int64_t avg_window(const pool *p, int64_t oy, int64_t ox, bool count_pad, int64_t *y0,
                          int64_t *y1, int64_t *x0, int64_t *x1) {
    int64_t ys = oy * p->sh - p->ph, xs = ox * p->sw - p->pw;
    int64_t ye = ys + p->kh < p->h + p->ph ? ys + p->kh : p->h + p->ph;
    int64_t xe = xs + p->kw < p->w + p->pw ? xs + p->kw : p->w + p->pw;
    int64_t padded = (ye - ys) * (xe - xs);
    *y0 = ys < 0 ? 0 : ys, *x0 = xs < 0 ? 0 : xs;
    *y1 = ye < p->h ? ye : p->h, *x1 = xe < p->w ? xe : p->w;
    return count_pad ? padded : (*y1 - *y0) * (*x1 - *x0);
}

/* avg_pool2d(Tensor self, int[] kernel_size, int[] stride, int[] padding, bool ceil_mode,
 * bool count_include_pad) */
ltc_status ltc_ref_kernel_avg_pool2d(const ltc_kernel_args *a) {
    const ltc_shape *is = &a->in_shapes[0];
    pool p = pool_of(is, &a->out_shapes[0], a->attrs, false);
    for (int64_t q = 0; q < p.planes; q++)
        for (int64_t oy = 0; oy < p.oh; oy++)
            for (int64_t ox = 0; ox < p.ow; ox++) {
                int64_t y0, y1, x0, x1;
                int64_t div = avg_window(&p, oy, ox, a->attrs[4].i != 0, &y0, &y1, &x0, &x1);
                double s = 0;
                for (int64_t y = y0; y < y1; y++)
                    for (int64_t x = x0; x < x1; x++)
                        s += ltc_ref_get(a->in[0], is->dtype, (q * p.h + y) * p.w + x);
                ltc_ref_set(a->out[0], is->dtype, (q * p.oh + oy) * p.ow + ox, div ? s / div : NAN);
            }
    return LTC_OK;
}

/* avg_pool2d_backward(Tensor grad_output, Tensor self, ...): each input element gets the
 * gradients of the windows that contain it, each divided by its window's divisor. */
ltc_status ltc_ref_kernel_avg_pool2d_backward(const ltc_kernel_args *a) {
    const ltc_shape *gs = &a->in_shapes[0], *is = &a->in_shapes[1];
    pool p = pool_of(is, gs, a->attrs, false);
    int64_t n = ltc_shape_numel(is);
    for (int64_t i = 0; i < n; i++) ltc_ref_set(a->out[0], is->dtype, i, 0);
    for (int64_t q = 0; q < p.planes; q++)
        for (int64_t oy = 0; oy < p.oh; oy++)
            for (int64_t ox = 0; ox < p.ow; ox++) {
                int64_t y0, y1, x0, x1;
                int64_t div = avg_window(&p, oy, ox, a->attrs[4].i != 0, &y0, &y1, &x0, &x1);
                if (!div) continue;
                double g = ltc_ref_get(a->in[0], gs->dtype, (q * p.oh + oy) * p.ow + ox) / div;
                for (int64_t y = y0; y < y1; y++)
                    for (int64_t x = x0; x < x1; x++) {
                        int64_t at = (q * p.h + y) * p.w + x;
                        ltc_ref_set(a->out[0], is->dtype, at, ltc_ref_get(a->out[0], is->dtype, at) + g);
                    }
            }
    return LTC_OK;
}
