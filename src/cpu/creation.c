/* creation.c - CPU kernels of the creation ops: zeros, ones, full, arange, rand, randn. */
#include <string.h>

#include "elementwise.h"
#include "ltc_rng.h"

/* Fills n elements of es bytes at out with the value at val (one element, same dtype). */
static void fill_bytes(void *out, const void *val, size_t es, int64_t n) {
    switch (es) {
    case 1: memset(out, *(const unsigned char *)val, (size_t)n); break;
    case 4: {
        uint32_t v, *o = out;
        memcpy(&v, val, 4);
        for (int64_t i = 0; i < n; i++)
            o[i] = v;
        break;
    }
    case 8: {
        uint64_t v, *o = out;
        memcpy(&v, val, 8);
        for (int64_t i = 0; i < n; i++)
            o[i] = v;
        break;
    }
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy((char *)out + i * (int64_t)es, val, es);
    }
}

/* Fills out[0] with one value given as a double, converted to the output dtype. */
static ltc_status fill_value(const ltc_kernel_args *a, double v) {
    const ltc_shape *os = &a->out_shapes[0];
    unsigned char val[8];
    ltc_cpu_convert(val, os->dtype, &v, LTC_F64, 1);
    fill_bytes(a->out[0], val, ltc_dtype_size(os->dtype), ltc_shape_numel(os));
    return LTC_OK;
}

/* zeros(int[] size, ScalarType? dtype): out[0] (any dtype) filled with 0. */
ltc_status ltc_cpu_kernel_zeros(const ltc_kernel_args *a) {
    memset(a->out[0], 0, ltc_shape_nbytes(&a->out_shapes[0]));
    return LTC_OK;
}

/* ones(int[] size, ScalarType? dtype): out[0] (any dtype) filled with 1. */
ltc_status ltc_cpu_kernel_ones(const ltc_kernel_args *a) {
    return fill_value(a, 1.0);
}

/* full(int[] size, Scalar fill_value, ScalarType? dtype): in[0] is the 0-d fill value in
 * its own dtype (not promoted); it is converted to the output dtype as Tensor.to does. */
ltc_status ltc_cpu_kernel_full(const ltc_kernel_args *a) {
    const ltc_shape *os = &a->out_shapes[0];
    unsigned char val[8];
    ltc_cpu_convert(val, os->dtype, a->in[0], a->in_shapes[0].dtype, 1);
    fill_bytes(a->out[0], val, ltc_dtype_size(os->dtype), ltc_shape_numel(os));
    return LTC_OK;
}

/* Writes start + i * step (computed in double) for i < n, converted to the C type T. */
#define ARANGE_LOOP(T)                                                                         \
    do {                                                                                       \
        T *o_ = a->out[0];                                                                     \
        for (int64_t i = 0; i < n; i++)                                                        \
            o_[i] = (T)(start + (double)i * step);                                             \
    } while (0)

/* arange(float start, float end, float step, ScalarType? dtype): attrs start, end, step
 * (floats) then dtype; the output size was computed at trace time. */
ltc_status ltc_cpu_kernel_arange(const ltc_kernel_args *a) {
    double start = a->attrs[0].f, step = a->attrs[2].f;
    int64_t n = ltc_shape_numel(&a->out_shapes[0]);
    switch (a->out_shapes[0].dtype) {
    case LTC_F32: ARANGE_LOOP(float); break;
    case LTC_F64: ARANGE_LOOP(double); break;
    case LTC_I32: ARANGE_LOOP(int32_t); break;
    case LTC_I64: ARANGE_LOOP(int64_t); break;
    case LTC_BOOL: {
        unsigned char *o = a->out[0];
        for (int64_t i = 0; i < n; i++)
            o[i] = start + (double)i * step != 0;
        break;
    }
    default: return ltc_errorf(LTC_ERR_ARG, "arange: unsupported dtype");
    }
    return LTC_OK;
}

/* Reads the {seed, offset} operand of a random op (its last input). */
static void rng_state(const ltc_kernel_args *a, uint64_t *seed, uint64_t *offset) {
    const int64_t *st = a->in[a->n_in - 1];
    *seed = (uint64_t)st[0];
    *offset = (uint64_t)st[1];
}

/* rand(int[] size, ScalarType? dtype): uniform [0, 1) draws, element i from
 * ltc_rng_uniform_*(seed, offset, i). float32 and float64 outputs. */
ltc_status ltc_cpu_kernel_rand(const ltc_kernel_args *a) {
    uint64_t seed, offset;
    rng_state(a, &seed, &offset);
    const ltc_shape *os = &a->out_shapes[0];
    int64_t n = ltc_shape_numel(os);
    if (os->dtype == LTC_F32) {
        float *o = a->out[0];
        for (int64_t i = 0; i < n; i++)
            o[i] = ltc_rng_uniform_f32(seed, offset, i);
    } else if (os->dtype == LTC_F64) {
        double *o = a->out[0];
        for (int64_t i = 0; i < n; i++)
            o[i] = ltc_rng_uniform_f64(seed, offset, i);
    } else {
        return ltc_errorf(LTC_ERR_ARG, "rand: dtype %s is not a floating dtype",
                          ltc_dtype_name(os->dtype));
    }
    return LTC_OK;
}

/* randn(int[] size, ScalarType? dtype): standard normal draws, element i from
 * ltc_rng_normal_*(seed, offset, i). float32 and float64 outputs. */
ltc_status ltc_cpu_kernel_randn(const ltc_kernel_args *a) {
    uint64_t seed, offset;
    rng_state(a, &seed, &offset);
    const ltc_shape *os = &a->out_shapes[0];
    int64_t n = ltc_shape_numel(os);
    if (os->dtype == LTC_F32) {
        float *o = a->out[0];
        for (int64_t i = 0; i < n; i++)
            o[i] = ltc_rng_normal_f32(seed, offset, i);
    } else if (os->dtype == LTC_F64) {
        double *o = a->out[0];
        for (int64_t i = 0; i < n; i++)
            o[i] = ltc_rng_normal_f64(seed, offset, i);
    } else {
        return ltc_errorf(LTC_ERR_ARG, "randn: dtype %s is not a floating dtype",
                          ltc_dtype_name(os->dtype));
    }
    return LTC_OK;
}
