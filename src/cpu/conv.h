/*
 * conv.h - what the two conv2d forward paths share: the geometry of one convolution
 * (conv.c: im2col tiles and OpenBLAS, any case), the direct kernel (conv_direct.c:
 * float32 at stride 1 on AVX-512 machines, no column matrix) and the direct weight gradient
 * (conv_wgrad.c: float32 3x3 at stride 1).
 */
#ifndef LTC_CPU_CONV_H
#define LTC_CPU_CONV_H

#include <stdbool.h>

#include "ltc_kernel.h"

/* The geometry of one convolution, from the kernel's shapes and attributes. */
typedef struct {
    int64_t n, c, h, w; /* input (n = 1 when unbatched) */
    int64_t k, kh, kw;  /* output channels, kernel */
    int64_t oh, ow;     /* output */
    int64_t sh, sw, ph, pw, dh, dw, groups;
    int64_t cg, kg;     /* channels per group: input, output */
    int64_t rows, cols; /* of the column matrix: cg * kh * kw, oh * ow */
} conv_geom;

/* Whether ltc_cpu_conv2d_direct takes this convolution: float32, stride 1, an image row
 * (with its padding) at least 16 wide, and a CPU with AVX-512F. */
bool ltc_cpu_conv2d_direct_fits(const conv_geom *g, ltc_dtype dt);

/* out [n, k, oh, ow] = conv2d(in [n, c, h, w], w [k, cg, kh, kw]) + bias [k] (bias may be
 * NULL), for a geometry that ltc_cpu_conv2d_direct_fits. Uses the worker pool; allocates
 * scratch (a zero-padded copy of at most a few tens of MB of the input, the weights
 * repacked), so it may fail with LTC_ERR_NOMEM. */
ltc_status ltc_cpu_conv2d_direct(const conv_geom *g, const float *in, const float *w,
                                 const float *bias, float *out);

/* Whether ltc_cpu_conv2d_wgrad takes this convolution: float32, a 3x3 kernel at stride 1
 * (any padding and dilation), and a CPU with AVX-512F. */
bool ltc_cpu_conv2d_wgrad_fits(const conv_geom *g, ltc_dtype dt);

/* gw [k, cg, 3, 3] = conv2d_backward_weight(gout [n, k, oh, ow], in [n, c, h, w]) for a
 * geometry that ltc_cpu_conv2d_wgrad_fits (conv_wgrad.c). Uses the worker pool; the result
 * does not depend on the thread count. Allocates a little scratch (LTC_ERR_NOMEM). */
ltc_status ltc_cpu_conv2d_wgrad(const conv_geom *g, const float *gout, const float *in,
                                float *gw);

#endif
