/* conv.c - reference kernels of conv2d and its backward ops: the defining sums, one output
 * element at a time, accumulated in double. Inputs [N, C, H, W] or [C, H, W], weights
 * [K, C / groups, kh, kw]; attrs stride, padding, dilation (pairs) and groups. */
#include "ref.h"

/* The sizes of one convolution. */
typedef struct {
    int64_t n, c, h, w, k, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw, cg, kg;
} conv;

/* attrs[first..first+3]: stride, padding, dilation, groups. */
static conv conv_of(const ltc_shape *in, const ltc_shape *w, const ltc_shape *out,
                    const ltc_attr *attrs) {
    int b = in->ndim - 3;
    conv c = {
        .n = b ? in->dims[0] : 1, .c = in->dims[b], .h = in->dims[b + 1], .w = in->dims[b + 2],
        .k = w->dims[0], .kh = w->dims[2], .kw = w->dims[3],
        .oh = out->dims[b + 1], .ow = out->dims[b + 2],
        .sh = attrs[0].ints[0], .sw = attrs[0].ints[1], .ph = attrs[1].ints[0],
        .pw = attrs[1].ints[1], .dh = attrs[2].ints[0], .dw = attrs[2].ints[1],
    };
    c.cg = w->dims[1];
    c.kg = c.k / attrs[3].i;
    return c;
}

#define IN(n, ch, y, x) ((((n) * c.c + (ch)) * c.h + (y)) * c.w + (x))
#define OUT(n, k, y, x) ((((n) * c.k + (k)) * c.oh + (y)) * c.ow + (x))
#define WT(k, ch, i, j) ((((k) * c.cg + (ch)) * c.kh + (i)) * c.kw + (j))

/* out[n][k][oy][ox] = bias[k] + sum over the group's channels ch and window (i, j) of
 * in[n][ch][oy * sh - ph + i * dh][ox * sw - pw + j * dw] * w[k][ch - first][i][j]. */
static ltc_status forward(const ltc_kernel_args *a, bool bias) {
    const ltc_shape *is = &a->in_shapes[0], *ws = &a->in_shapes[1], *os = &a->out_shapes[0];
    conv c = conv_of(is, ws, os, &a->attrs[0]);
    for (int64_t n = 0; n < c.n; n++)
        for (int64_t k = 0; k < c.k; k++)
            for (int64_t oy = 0; oy < c.oh; oy++)
                for (int64_t ox = 0; ox < c.ow; ox++) {
                    double s = bias ? ltc_ref_get(a->in[2], is->dtype, k) : 0;
                    int64_t first = k / c.kg * c.cg;
                    for (int64_t ch = 0; ch < c.cg; ch++)
                        for (int64_t i = 0; i < c.kh; i++)
                            for (int64_t j = 0; j < c.kw; j++) {
                                int64_t y = oy * c.sh - c.ph + i * c.dh;
                                int64_t x = ox * c.sw - c.pw + j * c.dw;
                                /* zero padding is a real zero times the weight, as in
                                 * PyTorch: 0 * inf is NaN */
                                bool in = y >= 0 && y < c.h && x >= 0 && x < c.w;
                                double v = in ? ltc_ref_get(a->in[0], is->dtype,
                                                            IN(n, first + ch, y, x)) : 0.0;
                                s += v * ltc_ref_get(a->in[1], ws->dtype, WT(k, ch, i, j));
                            }
                    ltc_ref_set(a->out[0], os->dtype, OUT(n, k, oy, ox), s);
                }
    return LTC_OK;
}

/* conv2d(Tensor self, Tensor weight, Tensor bias, int[] stride, int[] padding,
 * int[] dilation, int groups) */
ltc_status ltc_ref_kernel_conv2d(const ltc_kernel_args *a) { return forward(a, true); }

/* conv2d.nobias(Tensor self, Tensor weight, int[] stride, int[] padding, int[] dilation,
 * int groups) */
ltc_status ltc_ref_kernel_conv2d_nobias(const ltc_kernel_args *a) { return forward(a, false); }

/* conv2d_backward_input(grad_output, weight, input_size, ...): for each input element, the
 * sum of grad_output[n][k][oy][ox] * w[k][ch][i][j] over the outputs whose window reads it
 * (oy * sh - ph + i * dh == y, and likewise for x). */
ltc_status ltc_ref_kernel_conv2d_backward_input(const ltc_kernel_args *a) {
    const ltc_shape *gs = &a->in_shapes[0], *ws = &a->in_shapes[1], *os = &a->out_shapes[0];
    conv c = conv_of(os, ws, gs, &a->attrs[1]);
    for (int64_t n = 0; n < c.n; n++)
        for (int64_t ch = 0; ch < c.c; ch++)
            for (int64_t y = 0; y < c.h; y++)
                for (int64_t x = 0; x < c.w; x++) {
                    double s = 0;
                    int64_t grp = ch / c.cg;
                    for (int64_t k = grp * c.kg; k < (grp + 1) * c.kg; k++)
                        for (int64_t i = 0; i < c.kh; i++)
                            for (int64_t j = 0; j < c.kw; j++) {
                                int64_t ty = y + c.ph - i * c.dh, tx = x + c.pw - j * c.dw;
                                if (ty < 0 || tx < 0 || ty % c.sh || tx % c.sw) continue;
                                int64_t oy = ty / c.sh, ox = tx / c.sw;
                                if (oy >= c.oh || ox >= c.ow) continue;
                                s += ltc_ref_get(a->in[0], gs->dtype, OUT(n, k, oy, ox)) *
                                     ltc_ref_get(a->in[1], ws->dtype, WT(k, ch - grp * c.cg, i, j));
                            }
                    ltc_ref_set(a->out[0], os->dtype, IN(n, ch, y, x), s);
                }
    return LTC_OK;
}

/* conv2d_backward_weight(grad_output, self, weight_size, ...): dw[k][ch][i][j] = the sum over
 * images and outputs of grad_output[n][k][oy][ox] * self[n][first + ch][y][x] with (y, x)
 * the element that weight position reads for that output. */
ltc_status ltc_ref_kernel_conv2d_backward_weight(const ltc_kernel_args *a) {
    const ltc_shape *gs = &a->in_shapes[0], *is = &a->in_shapes[1], *os = &a->out_shapes[0];
    conv c = conv_of(is, os, gs, &a->attrs[1]);
    for (int64_t k = 0; k < c.k; k++)
        for (int64_t ch = 0; ch < c.cg; ch++)
            for (int64_t i = 0; i < c.kh; i++)
                for (int64_t j = 0; j < c.kw; j++) {
                    double s = 0;
                    int64_t first = k / c.kg * c.cg;
                    for (int64_t n = 0; n < c.n; n++)
                        for (int64_t oy = 0; oy < c.oh; oy++)
                            for (int64_t ox = 0; ox < c.ow; ox++) {
                                int64_t y = oy * c.sh - c.ph + i * c.dh;
                                int64_t x = ox * c.sw - c.pw + j * c.dw;
                                bool in = y >= 0 && y < c.h && x >= 0 && x < c.w;
                                double v = in ? ltc_ref_get(a->in[1], is->dtype,
                                                            IN(n, first + ch, y, x)) : 0.0;
                                s += ltc_ref_get(a->in[0], gs->dtype, OUT(n, k, oy, ox)) * v;
                            }
                    ltc_ref_set(a->out[0], os->dtype, WT(k, ch, i, j), s);
                }
    return LTC_OK;
}
