/* creation.c - reference kernels of the creation ops. */
#include <math.h>
#include <stdlib.h>

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
 * converted to the output dtype, in every element (an error if it does not fit). */
ltc_status ltc_ref_kernel_full(const ltc_kernel_args *a) {
    const ltc_shape *os = &a->out_shapes[0];
    ltc_status st = ltc_dtype_check_elem(a->in[0], a->in_shapes[0].dtype, os->dtype);
    if (st) return ltc_error_prefix(st, "full");
    for (int64_t i = 0; i < ltc_shape_numel(os); i++)
        ltc_ref_copy(a->out[0], os->dtype, i, a->in[0], a->in_shapes[0].dtype, 0);
    return LTC_OK;
}

/* arange(float start, float end, float step, ScalarType? dtype): start + i * step. */
ltc_status ltc_ref_kernel_arange(const ltc_kernel_args *a) {
    const ltc_shape *os = &a->out_shapes[0];
    double start = a->attrs[0].f, step = a->attrs[2].f;
    for (int64_t i = 0; i < ltc_shape_numel(os); i++) {
        if (os->dtype == LTC_I64) ((int64_t *)a->out[0])[i] = ltc_arange_int(start, step, i);
        else if (os->dtype == LTC_I32) ((int32_t *)a->out[0])[i] = (int32_t)ltc_arange_int(start, step, i);
        else ltc_ref_set(a->out[0], os->dtype, i, start + (double)i * step);
    }
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

/* empty(int[] size, ScalarType? dtype): filled with 0 (deterministic, unlike PyTorch). */
ltc_status ltc_ref_kernel_empty(const ltc_kernel_args *a) { return ltc_ref_kernel_zeros(a); }

/* linspace(float start, float end, int steps, ScalarType? dtype): PyTorch's formula, step
 * (end - start) / (steps - 1), from start for i < steps / 2 and from end after. */
ltc_status ltc_ref_kernel_linspace(const ltc_kernel_args *a) {
    const ltc_shape *os = &a->out_shapes[0];
    double start = a->attrs[0].f, end = a->attrs[1].f;
    int64_t steps = a->attrs[2].i;
    double step = steps > 1 ? (end - start) / (double)(steps - 1) : 0;
    for (int64_t i = 0; i < steps; i++)
        ltc_ref_set(a->out[0], os->dtype, i,
                    i < steps / 2 || steps == 1 ? start + step * (double)i
                                                : end - step * (double)(steps - 1 - i));
    return LTC_OK;
}

/* eye(int rows, int? cols, ScalarType? dtype): 1 where row == column. */
ltc_status ltc_ref_kernel_eye(const ltc_kernel_args *a) {
    const ltc_shape *os = &a->out_shapes[0];
    for (int64_t r = 0; r < os->dims[0]; r++)
        for (int64_t c = 0; c < os->dims[1]; c++)
            ltc_ref_set_i64(a->out[0], os->dtype, r * os->dims[1] + c, r == c);
    return LTC_OK;
}

/* randint(int low, int high, int[] size, ScalarType? dtype): low + floor(u * (high - low))
 * for the float64 uniform draw u of element i (at most high - 1). */
ltc_status ltc_ref_kernel_randint(const ltc_kernel_args *a) {
    const int64_t *st = a->in[a->n_in - 1];
    const ltc_shape *os = &a->out_shapes[0];
    int64_t low = a->attrs[0].i, high = a->attrs[1].i;
    for (int64_t i = 0; i < ltc_shape_numel(os); i++) {
        double u = ltc_rng_uniform_f64((uint64_t)st[0], (uint64_t)st[1], i);
        int64_t v = low + (int64_t)floor(u * (double)(high - low));
        ltc_ref_set_i64(a->out[0], os->dtype, i, v < high ? v : high - 1);
    }
    return LTC_OK;
}

/* The uniform draw i in dtype dt's precision (float32 or float64, as ltc.rand). */
static double uniform_as(ltc_dtype dt, const int64_t *st, int64_t i) {
    return dt == LTC_F32 ? ltc_rng_uniform_f32((uint64_t)st[0], (uint64_t)st[1], i)
                         : ltc_rng_uniform_f64((uint64_t)st[0], (uint64_t)st[1], i);
}

/* bernoulli(Tensor self): 1 where the uniform draw i is below self[i], else 0; a
 * probability outside [0, 1] or NaN is an error (as PyTorch), before any draw. */
ltc_status ltc_ref_kernel_bernoulli(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0];
    const int64_t *st = a->in[a->n_in - 1];
    for (int64_t i = 0; i < ltc_shape_numel(s); i++) {
        double p = ltc_ref_get(a->in[0], s->dtype, i);
        char t[32];
        if (!(p >= 0 && p <= 1))
            return ltc_errorf(LTC_ERR_ARG, "all probabilities (self) should be between 0 and 1: "
                              "element %lld is %s", (long long)i + 1, ltc_value_text(t, p, s->dtype));
    }
    for (int64_t i = 0; i < ltc_shape_numel(s); i++) {
        double p = ltc_ref_get(a->in[0], s->dtype, i);
        ltc_ref_set(a->out[0], s->dtype, i, uniform_as(s->dtype, st, i) < p);
    }
    return LTC_OK;
}

/* bernoulli.p(Tensor self, float p): 1 where the uniform draw i is below p, in self's dtype
 * (draws in float32 precision for float32, float64 otherwise). */
ltc_status ltc_ref_kernel_bernoulli_p(const ltc_kernel_args *a) {
    const ltc_shape *os = &a->out_shapes[0];
    const int64_t *st = a->in[a->n_in - 1];
    ltc_dtype udt = os->dtype == LTC_F32 ? LTC_F32 : LTC_F64;
    double p = udt == LTC_F32 ? (float)a->attrs[0].f : a->attrs[0].f;
    for (int64_t i = 0; i < ltc_shape_numel(os); i++)
        ltc_ref_set_i64(a->out[0], os->dtype, i, uniform_as(udt, st, i) < p);
    return LTC_OK;
}

/* Draw j of a random op whose output has numel elements (src/cpu/creation.c says why):
 * counter offset + j % numel, key seed + (j / numel) * K. */
static double draw_f64(const int64_t *st, int64_t numel, int64_t j) {
    return ltc_rng_uniform_f64((uint64_t)st[0] + (uint64_t)(j / numel) * 0x9E3779B97F4A7C15ull,
                               (uint64_t)st[1], j % numel);
}

/* multinomial(Tensor self, int num_samples, bool replacement): for each row and sample,
 * with replacement the first category whose running sum of weights exceeds u * total;
 * without, the categories in decreasing order of log(u_c) / w_c (weight 0: never), picked
 * one by one (the first of equal keys). */
ltc_status ltc_ref_kernel_multinomial(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0];
    const int64_t *st = a->in[a->n_in - 1];
    const int64_t ncat = s->dims[s->ndim - 1], rows = s->ndim == 2 ? s->dims[0] : 1;
    const int64_t ns = a->attrs[0].i, numel = rows * ns;
    if (numel == 0) return LTC_OK;
    double *key = malloc((size_t)ncat * sizeof(double));
    if (!key) return ltc_errorf(LTC_ERR_NOMEM, "multinomial: out of memory");
    for (int64_t r = 0; r < rows; r++) {
        double total = 0;
        int64_t positive = 0;
        for (int64_t c = 0; c < ncat; c++) {
            double w = ltc_ref_get(a->in[0], s->dtype, r * ncat + c);
            if (!(w >= 0) || isinf(w)) {
                free(key);
                return ltc_errorf(LTC_ERR_ARG, "multinomial: weight %lld of row %lld is %g (must "
                                  "be finite and >= 0)", (long long)c + 1, (long long)r + 1, w);
            }
            total += w;
            positive += w > 0;
        }
        if (positive == 0 || (a->attrs[1].i == 0 && positive < ns)) {
            free(key);
            return ltc_errorf(LTC_ERR_ARG, "multinomial: row %lld has %lld positive weights, %s",
                              (long long)r + 1, (long long)positive,
                              a->attrs[1].i ? "needs at least 1"
                                            : "fewer than num_samples without replacement");
        }
        for (int64_t j = 0; j < ns; j++) {
            int64_t pick = 0;
            if (a->attrs[1].i) {
                double u = draw_f64(st, numel, r * ns + j) * total, run = 0;
                for (pick = 0; pick < ncat - 1; pick++) {
                    run += ltc_ref_get(a->in[0], s->dtype, r * ncat + pick);
                    if (run > u) break;
                }
            } else {
                if (j == 0)
                    for (int64_t c = 0; c < ncat; c++) {
                        double w = ltc_ref_get(a->in[0], s->dtype, r * ncat + c);
                        double u = draw_f64(st, numel, (c / ns) * numel + r * ns + c % ns);
                        key[c] = w > 0 ? log(u) / w : -INFINITY;
                    }
                pick = -1;
                for (int64_t c = 0; c < ncat; c++)
                    if (!isnan(key[c]) && (pick < 0 || key[c] > key[pick])) pick = c;
                key[pick] = NAN; /* taken */
            }
            ltc_ref_set_i64(a->out[0], LTC_I64, r * ns + j, pick + 1);
        }
    }
    free(key);
    return LTC_OK;
}

/* randperm(int n, ScalarType? dtype): position i (1-based) of the permutation is the
 * position of the i-th smallest of n uniform draws (the first of equal ones). */
ltc_status ltc_ref_kernel_randperm(const ltc_kernel_args *a) {
    const ltc_shape *os = &a->out_shapes[0];
    const int64_t *st = a->in[a->n_in - 1];
    const int64_t n = ltc_shape_numel(os);
    double *u = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    if (!u) return ltc_errorf(LTC_ERR_NOMEM, "randperm: out of memory");
    for (int64_t i = 0; i < n; i++) u[i] = ltc_rng_uniform_f64((uint64_t)st[0], (uint64_t)st[1], i);
    for (int64_t i = 0; i < n; i++) {
        int64_t best = -1;
        for (int64_t j = 0; j < n; j++)
            if (!isnan(u[j]) && (best < 0 || u[j] < u[best])) best = j;
        u[best] = NAN; /* taken */
        ltc_ref_set_i64(a->out[0], os->dtype, i, best + 1);
    }
    free(u);
    return LTC_OK;
}
