/* shape_cnn.c - shape and dtype rules of the convolution and pooling ops (conv2d and its
 * two backward ops, max_pool2d, avg_pool2d and their backward ops); declared in
 * shape_inference.h. Inputs are [N, C, H, W] or unbatched [C, H, W]; the sizes follow
 * PyTorch (aten/src/ATen/native/Pool.h pooling_output_shape, ConvUtils.h). */
#include <string.h>

#include "shape_inference.h"

#define SHAPE_STR(s, buf) ltc_shape_str((s), (buf), sizeof(buf))

/* An image batch: 4-d [N, C, H, W] or 3-d [C, H, W], of a floating dtype. */
static ltc_status need_image(const ltc_shape *s, const char *what) {
    char b[128];
    if (s->ndim != 3 && s->ndim != 4)
        return ltc_errorf(LTC_ERR_ARG, "%s must be 4-d [N, C, H, W] or 3-d [C, H, W], got %s",
                          what, SHAPE_STR(s, b));
    return ltc_shape_need_float(s, what);
}

/* The largest stride, padding, dilation or kernel size (so that sizes computed from them
 * cannot overflow). */
#define PAIR_MAX INT32_MAX

/* A pair argument (int[] of 2 entries), each in [lo, PAIR_MAX]. */
static ltc_status need_pair(const int64_t *v, int n, int64_t lo, const char *what) {
    if (n != 2)
        return ltc_errorf(LTC_ERR_ARG, "%s must have 2 entries (height, width), got %d", what, n);
    if (v[0] < lo || v[1] < lo || v[0] > PAIR_MAX || v[1] > PAIR_MAX)
        return ltc_errorf(LTC_ERR_ARG, "%s must be in [%lld, %lld], got {%lld, %lld}", what,
                          (long long)lo, (long long)PAIR_MAX, (long long)v[0], (long long)v[1]);
    return LTC_OK;
}

/* A batch image of `like`'s rank with C channels and spatial sizes h, w. */
static void image(const ltc_shape *like, int64_t c, int64_t h, int64_t w, ltc_shape *out) {
    *out = *like;
    int k = like->ndim - 3;
    out->dims[k] = c;
    out->dims[k + 1] = h;
    out->dims[k + 2] = w;
}

/* ---- conv2d --------------------------------------------------------------------------- */

/* The output size of a convolution along one dim, or -1 (with the error set) if < 1. */
static int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, const char *dim) {
    if (k - 1 > INT64_MAX / 4 / d) {
        ltc_errorf(LTC_ERR_ARG, "the dilated kernel %s is too large", dim);
        return -1;
    }
    int64_t span = d * (k - 1) + 1;
    if (in + 2 * p < span) {
        ltc_errorf(LTC_ERR_ARG, "the padded input %s (%lld) is smaller than the dilated kernel "
                   "(%lld)", dim, (long long)(in + 2 * p), (long long)span);
        return -1;
    }
    return (in + 2 * p - span) / s + 1;
}

/* Checks self [N, C, H, W], weight [K, C / groups, kh, kw] and the pairs; writes the output. */
static ltc_status conv_check(const ltc_shape *self, const ltc_shape *weight,
                             const int64_t *stride, int n_stride, const int64_t *padding,
                             int n_padding, const int64_t *dilation, int n_dilation,
                             int64_t groups, ltc_shape *out) {
    char a[128], b[128];
    ltc_status st;
    if ((st = need_image(self, "input")) || (st = ltc_shape_need_float(weight, "weight")) ||
        (st = need_pair(stride, n_stride, 1, "stride")) ||
        (st = need_pair(padding, n_padding, 0, "padding")) ||
        (st = need_pair(dilation, n_dilation, 1, "dilation")))
        return st;
    if (weight->dtype != self->dtype)
        return ltc_errorf(LTC_ERR_ARG, "input and weight must have one dtype, got %s and %s",
                          ltc_dtype_name(self->dtype), ltc_dtype_name(weight->dtype));
    if (weight->ndim != 4)
        return ltc_errorf(LTC_ERR_ARG, "weight must be 4-d [out, in / groups, kh, kw], got %s",
                          SHAPE_STR(weight, a));
    if (groups < 1) return ltc_errorf(LTC_ERR_ARG, "groups must be positive, got %lld", (long long)groups);
    int k = self->ndim - 3;
    int64_t c = self->dims[k], kout = weight->dims[0];
    if (weight->dims[1] * groups != c || kout % groups)
        return ltc_errorf(LTC_ERR_ARG, "weight %s does not fit input %s with groups %lld (needs "
                          "[out, in / groups, kh, kw], out divisible by groups)",
                          SHAPE_STR(weight, a), SHAPE_STR(self, b), (long long)groups);
    if (weight->dims[2] < 1 || weight->dims[3] < 1)
        return ltc_errorf(LTC_ERR_ARG, "weight %s has an empty kernel", SHAPE_STR(weight, a));
    int64_t oh = conv_out(self->dims[k + 1], weight->dims[2], stride[0], padding[0], dilation[0], "height");
    if (oh < 0) return LTC_ERR_ARG;
    int64_t ow = conv_out(self->dims[k + 2], weight->dims[3], stride[1], padding[1], dilation[1], "width");
    if (ow < 0) return LTC_ERR_ARG;
    image(self, kout, oh, ow, out);
    return LTC_OK;
}

ltc_status ltc_shape_conv2d(const ltc_shape *self, const ltc_shape *weight, const ltc_shape *bias,
                            const int64_t *stride, int n_stride, const int64_t *padding,
                            int n_padding, const int64_t *dilation, int n_dilation,
                            int64_t groups, ltc_shape *out) {
    char a[128];
    ltc_status st = conv_check(self, weight, stride, n_stride, padding, n_padding, dilation,
                               n_dilation, groups, out);
    if (st) return st;
    if (bias->dtype != self->dtype || bias->ndim != 1 || bias->dims[0] != weight->dims[0])
        return ltc_errorf(LTC_ERR_ARG, "bias must be 1-d [%lld] of %s, got %s %s",
                          (long long)weight->dims[0], ltc_dtype_name(self->dtype),
                          ltc_dtype_name(bias->dtype), SHAPE_STR(bias, a));
    return LTC_OK;
}

ltc_status ltc_shape_conv2d_nobias(const ltc_shape *self, const ltc_shape *weight,
                                   const int64_t *stride, int n_stride, const int64_t *padding,
                                   int n_padding, const int64_t *dilation, int n_dilation,
                                   int64_t groups, ltc_shape *out) {
    return conv_check(self, weight, stride, n_stride, padding, n_padding, dilation, n_dilation,
                      groups, out);
}

/* grad_output must be what conv2d gives for an input of input_size and weight. */
static ltc_status conv_grad_check(const ltc_shape *grad_output, const ltc_shape *input,
                                  const ltc_shape *weight, const int64_t *stride, int n_stride,
                                  const int64_t *padding, int n_padding, const int64_t *dilation,
                                  int n_dilation, int64_t groups) {
    ltc_shape want;
    char a[128], b[128];
    ltc_status st = conv_check(input, weight, stride, n_stride, padding, n_padding, dilation,
                               n_dilation, groups, &want);
    if (st) return st;
    want.dtype = grad_output->dtype;
    if (!ltc_shape_equal(&want, grad_output))
        return ltc_errorf(LTC_ERR_ARG, "grad_output must have the output size %s, got %s",
                          SHAPE_STR(&want, a), SHAPE_STR(grad_output, b));
    if (grad_output->dtype != input->dtype)
        return ltc_errorf(LTC_ERR_ARG, "grad_output must be %s, got %s",
                          ltc_dtype_name(input->dtype), ltc_dtype_name(grad_output->dtype));
    return LTC_OK;
}

/* A shape of `dtype` from an int[] of sizes. */
static ltc_status sized(const int64_t *size, int n_size, ltc_dtype dtype, ltc_shape *out) {
    return ltc_shape_make(out, dtype, n_size, size);
}

ltc_status ltc_shape_conv2d_backward_input(const ltc_shape *grad_output, const ltc_shape *weight,
                                           const int64_t *input_size, int n_input_size,
                                           const int64_t *stride, int n_stride,
                                           const int64_t *padding, int n_padding,
                                           const int64_t *dilation, int n_dilation,
                                           int64_t groups, ltc_shape *out) {
    ltc_status st = sized(input_size, n_input_size, weight->dtype, out);
    if (st) return st;
    return conv_grad_check(grad_output, out, weight, stride, n_stride, padding, n_padding,
                           dilation, n_dilation, groups);
}

ltc_status ltc_shape_conv2d_backward_weight(const ltc_shape *grad_output, const ltc_shape *self,
                                            const int64_t *weight_size, int n_weight_size,
                                            const int64_t *stride, int n_stride,
                                            const int64_t *padding, int n_padding,
                                            const int64_t *dilation, int n_dilation,
                                            int64_t groups, ltc_shape *out) {
    ltc_status st = sized(weight_size, n_weight_size, self->dtype, out);
    if (st) return st;
    return conv_grad_check(grad_output, self, out, stride, n_stride, padding, n_padding,
                           dilation, n_dilation, groups);
}

/* ---- pooling ---------------------------------------------------------------------------- */

/* PyTorch's pooling_output_shape: floor or ceil division, and in ceil mode the last window
 * must start inside the input or its left padding. */
static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
    int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
    if (ceil_mode && (out - 1) * s >= in + p) out--;
    return out;
}

ltc_status ltc_shape_pool2d(const ltc_shape *self, const int64_t *kernel_size, int n_kernel_size,
                            const int64_t *stride, int n_stride, const int64_t *padding,
                            int n_padding, const int64_t *dilation, int n_dilation,
                            bool ceil_mode, ltc_shape *out) {
    char a[128];
    ltc_status st;
    if ((st = need_image(self, "input")) ||
        (st = need_pair(kernel_size, n_kernel_size, 1, "kernel_size")) ||
        (st = need_pair(stride, n_stride, 1, "stride")) ||
        (st = need_pair(padding, n_padding, 0, "padding")) ||
        (st = need_pair(dilation, n_dilation, 1, "dilation")))
        return st;
    for (int d = self->ndim - 3; d < self->ndim; d++) /* PyTorch: only the batch may be 0 */
        if (self->dims[d] == 0)
            return ltc_errorf(LTC_ERR_ARG, "input must have nonzero channels, height and width "
                              "(only the batch may be 0, as in PyTorch), got %s", SHAPE_STR(self, a));
    for (int i = 0; i < 2; i++)
        if (2 * padding[i] > kernel_size[i])
            return ltc_errorf(LTC_ERR_ARG, "padding {%lld, %lld} must be at most half of "
                              "kernel_size {%lld, %lld}", (long long)padding[0],
                              (long long)padding[1], (long long)kernel_size[0],
                              (long long)kernel_size[1]);
    int k = self->ndim - 3;
    int64_t oh = pool_out(self->dims[k + 1], kernel_size[0], stride[0], padding[0], dilation[0], ceil_mode);
    int64_t ow = pool_out(self->dims[k + 2], kernel_size[1], stride[1], padding[1], dilation[1], ceil_mode);
    if (oh < 1 || ow < 1)
        return ltc_errorf(LTC_ERR_ARG, "input %s is too small for the window (output %lldx%lld)",
                          SHAPE_STR(self, a), (long long)oh, (long long)ow);
    image(self, self->dims[k], oh, ow, out);
    return LTC_OK;
}

ltc_status ltc_shape_pool2d_backward(const ltc_shape *grad_output, const ltc_shape *self,
                                     const int64_t *kernel_size, int n_kernel_size,
                                     const int64_t *stride, int n_stride, const int64_t *padding,
                                     int n_padding, const int64_t *dilation, int n_dilation,
                                     bool ceil_mode, ltc_shape *out) {
    ltc_shape want;
    char a[128], b[128];
    ltc_status st = ltc_shape_pool2d(self, kernel_size, n_kernel_size, stride, n_stride, padding,
                                     n_padding, dilation, n_dilation, ceil_mode, &want);
    if (st) return st;
    if (!ltc_shape_equal(&want, grad_output))
        return ltc_errorf(LTC_ERR_ARG, "grad_output must be %s %s, got %s %s",
                          ltc_dtype_name(want.dtype), SHAPE_STR(&want, a),
                          ltc_dtype_name(grad_output->dtype), SHAPE_STR(grad_output, b));
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_avg_pool2d(const ltc_shape *self, const int64_t *kernel_size,
                                int n_kernel_size, const int64_t *stride, int n_stride,
                                const int64_t *padding, int n_padding, bool ceil_mode,
                                bool count_include_pad, ltc_shape *out) {
    (void)count_include_pad;
    static const int64_t one[2] = {1, 1};
    return ltc_shape_pool2d(self, kernel_size, n_kernel_size, stride, n_stride, padding,
                            n_padding, one, 2, ceil_mode, out);
}

ltc_status ltc_shape_avg_pool2d_backward(const ltc_shape *grad_output, const ltc_shape *self,
                                         const int64_t *kernel_size, int n_kernel_size,
                                         const int64_t *stride, int n_stride,
                                         const int64_t *padding, int n_padding, bool ceil_mode,
                                         bool count_include_pad, ltc_shape *out) {
    (void)count_include_pad;
    static const int64_t one[2] = {1, 1};
    return ltc_shape_pool2d_backward(grad_output, self, kernel_size, n_kernel_size, stride,
                                     n_stride, padding, n_padding, one, 2, ceil_mode, out);
}
