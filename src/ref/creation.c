/* creation.c - reference kernels of the creation ops. */
#include "ltc_rng.h"
#include "ref.h"

/* zeros(int[] size, ScalarType? dtype): every element 0. */
ltc_status ltc_ref_kernel_zeros(const ltc_kernel_args *a) {
    const ltc_shape *os = &a->out_shapes[0];
    for (int64_t i = 0; i < ltc_shape_numel(os); i++) ltc_ref_set_i64(a->out[0], os->dtype, i, 0);
    return LTC_OK;
}

/* ones(int[] size, ScalarType? dtype): every element 1. */
ltc_status ltc_ref_kernel_ones(const ltc_kernel_args *a) {
    const ltc_shape *os = &a->out_shapes[0];
    for (int64_t i = 0; i < ltc_shape_numel(os); i++) ltc_ref_set_i64(a->out[0], os->dtype, i, 1);
    return LTC_OK;
}

/* full(int[] size, Scalar fill_value, ScalarType? dtype): in[0] (0-d, its own dtype)
 * converted to the output dtype, in every element. */
ltc_status ltc_ref_kernel_full(const ltc_kernel_args *a) {
    const ltc_shape *os = &a->out_shapes[0];
    for (int64_t i = 0; i < ltc_shape_numel(os); i++)
        ltc_ref_copy(a->out[0], os->dtype, i, a->in[0], a->in_shapes[0].dtype, 0);
    return LTC_OK;
}

/* arange(float start, float end, float step, ScalarType? dtype): start + i * step. */
ltc_status ltc_ref_kernel_arange(const ltc_kernel_args *a) {
    const ltc_shape *os = &a->out_shapes[0];
    double start = a->attrs[0].f, step = a->attrs[2].f;
    for (int64_t i = 0; i < ltc_shape_numel(os); i++)
        ltc_ref_set(a->out[0], os->dtype, i, start + (double)i * step);
    return LTC_OK;
}

/* rand / randn: element i from the shared Philox generator at the {seed, offset} operand
 * (the last input), so both backends draw the same numbers. */
static ltc_status draw(const ltc_kernel_args *a, bool normal, const char *name) {
    const int64_t *st = a->in[a->n_in - 1];
    uint64_t seed = (uint64_t)st[0], offset = (uint64_t)st[1];
    const ltc_shape *os = &a->out_shapes[0];
    for (int64_t i = 0; i < ltc_shape_numel(os); i++) {
        if (os->dtype == LTC_F32)
            ((float *)a->out[0])[i] = normal ? ltc_rng_normal_f32(seed, offset, i)
                                             : ltc_rng_uniform_f32(seed, offset, i);
        else if (os->dtype == LTC_F64)
            ((double *)a->out[0])[i] = normal ? ltc_rng_normal_f64(seed, offset, i)
                                              : ltc_rng_uniform_f64(seed, offset, i);
        else
            return ltc_errorf(LTC_ERR_ARG, "%s: dtype %s is not a floating dtype", name,
                              ltc_dtype_name(os->dtype));
    }
    return LTC_OK;
}

/* rand(int[] size, ScalarType? dtype): uniform [0, 1). */
ltc_status ltc_ref_kernel_rand(const ltc_kernel_args *a) { return draw(a, false, "rand"); }

/* randn(int[] size, ScalarType? dtype): standard normal. */
ltc_status ltc_ref_kernel_randn(const ltc_kernel_args *a) { return draw(a, true, "randn"); }
