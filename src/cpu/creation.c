/* creation.c - CPU kernels of the creation ops: zeros, ones, full, arange, rand, randn, empty,
 * linspace, eye, randint, bernoulli, multinomial, randperm. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "elementwise.h"
#include "ltc_rng.h"

/* Fills n elements of es bytes at out with the value at val (one element, same dtype). */
static void fill_bytes(void *out, const void *val, size_t es, int64_t n) {
    switch (es) {
    case 1: memset(out, *(const unsigned char *)val, (size_t)n); break;
    case 2: {
        uint16_t v, *o = out;
        memcpy(&v, val, 2);
        for (int64_t i = 0; i < n; i++)
            o[i] = v;
        break;
    }
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
 * its own dtype (not promoted); it is converted to the output dtype as Tensor.to does. A
 * value the dtype cannot hold is an error, as in PyTorch (ltc_dtype_check_elem). */
ltc_status ltc_cpu_kernel_full(const ltc_kernel_args *a) {
    const ltc_shape *os = &a->out_shapes[0];
    ltc_status st = ltc_dtype_check_elem(a->in[0], a->in_shapes[0].dtype, os->dtype);
    if (st) return ltc_error_prefix(st, "full");
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
    case LTC_I32: {
        int32_t *o = a->out[0];
        for (int64_t i = 0; i < n; i++) o[i] = (int32_t)ltc_arange_int(start, step, i);
        break;
    }
    case LTC_I64: {
        int64_t *o = a->out[0];
        for (int64_t i = 0; i < n; i++) o[i] = ltc_arange_int(start, step, i);
        break;
    }
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

/* Fills out[0] with draw i = f32(seed, offset, i) or f64(...) (float32 or float64). */
static ltc_status draw(const ltc_kernel_args *a, float (*f32)(uint64_t, uint64_t, int64_t),
                       double (*f64)(uint64_t, uint64_t, int64_t), const char *op) {
    uint64_t seed, offset;
    rng_state(a, &seed, &offset);
    const ltc_shape *os = &a->out_shapes[0];
    int64_t n = ltc_shape_numel(os);
    if (os->dtype == LTC_F32) {
        float *o = a->out[0];
        for (int64_t i = 0; i < n; i++) o[i] = f32(seed, offset, i);
    } else if (os->dtype == LTC_F64) {
        double *o = a->out[0];
        for (int64_t i = 0; i < n; i++) o[i] = f64(seed, offset, i);
    } else {
        return ltc_errorf(LTC_ERR_ARG, "%s: dtype %s is not a floating dtype", op,
                          ltc_dtype_name(os->dtype));
    }
    return LTC_OK;
}

/* rand(int[] size, ScalarType? dtype): uniform [0, 1) draws, element i from
 * ltc_rng_uniform_*(seed, offset, i). float32 and float64 outputs. */
ltc_status ltc_cpu_kernel_rand(const ltc_kernel_args *a) {
    return draw(a, ltc_rng_uniform_f32, ltc_rng_uniform_f64, "rand");
}

/* randn(int[] size, ScalarType? dtype): standard normal draws, element i from
 * ltc_rng_normal_*(seed, offset, i). float32 and float64 outputs. */
ltc_status ltc_cpu_kernel_randn(const ltc_kernel_args *a) {
    return draw(a, ltc_rng_normal_f32, ltc_rng_normal_f64, "randn");
}

/* empty(int[] size, ScalarType? dtype): filled with 0, as zeros (deterministic). */
ltc_status ltc_cpu_kernel_empty(const ltc_kernel_args *a) {
    return ltc_cpu_kernel_zeros(a);
}

/* linspace(float start, float end, int steps, ScalarType? dtype): PyTorch's formula in
 * double (from start in the first half, from end in the second), converted per element. */
ltc_status ltc_cpu_kernel_linspace(const ltc_kernel_args *a) {
    const ltc_shape *os = &a->out_shapes[0];
    double start = a->attrs[0].f, end = a->attrs[1].f;
    int64_t steps = a->attrs[2].i;
    double step = steps > 1 ? (end - start) / (double)(steps - 1) : 0;
    size_t es = ltc_dtype_size(os->dtype);
    for (int64_t i = 0; i < steps; i++) {
        double v = i < steps / 2 || steps == 1 ? start + step * (double)i
                                               : end - step * (double)(steps - 1 - i);
        ltc_cpu_convert((char *)a->out[0] + (size_t)i * es, os->dtype, &v, LTC_F64, 1);
    }
    return LTC_OK;
}

/* eye(int rows, int? cols, ScalarType? dtype): zeros, then 1 on the diagonal. */
ltc_status ltc_cpu_kernel_eye(const ltc_kernel_args *a) {
    const ltc_shape *os = &a->out_shapes[0];
    size_t es = ltc_dtype_size(os->dtype);
    unsigned char one[8];
    double v = 1;
    ltc_cpu_convert(one, os->dtype, &v, LTC_F64, 1);
    memset(a->out[0], 0, ltc_shape_nbytes(os));
    int64_t n = os->dims[0] < os->dims[1] ? os->dims[0] : os->dims[1];
    for (int64_t i = 0; i < n; i++)
        memcpy((char *)a->out[0] + (size_t)(i * os->dims[1] + i) * es, one, es);
    return LTC_OK;
}

/* randint(int low, int high, int[] size, ScalarType? dtype): low + floor(u * (high - low))
 * for the float64 uniform draw u of element i (at most high - 1), in int64, converted. */
ltc_status ltc_cpu_kernel_randint(const ltc_kernel_args *a) {
    uint64_t seed, offset;
    rng_state(a, &seed, &offset);
    const ltc_shape *os = &a->out_shapes[0];
    int64_t low = a->attrs[0].i, high = a->attrs[1].i, n = ltc_shape_numel(os);
    size_t es = ltc_dtype_size(os->dtype);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = low + (int64_t)floor(ltc_rng_uniform_f64(seed, offset, i) * (double)(high - low));
        if (v >= high) v = high - 1;
        if (os->dtype == LTC_I64) ((int64_t *)a->out[0])[i] = v;
        else ltc_cpu_convert((char *)a->out[0] + (size_t)i * es, os->dtype, &v, LTC_I64, 1);
    }
    return LTC_OK;
}

static ltc_status bad_probability(int64_t i, double p, ltc_dtype dt) {
    char t[32];
    return ltc_errorf(LTC_ERR_ARG, "all probabilities (self) should be between 0 and 1: element "
                      "%lld is %s", (long long)i + 1, ltc_value_text(t, p, dt));
}

/* bernoulli(Tensor self): 1 where the uniform draw i (in self's dtype) is below self[i],
 * else 0. A probability outside [0, 1] or NaN is an error (as PyTorch), before any draw. */
ltc_status ltc_cpu_kernel_bernoulli(const ltc_kernel_args *a) {
    uint64_t seed, offset;
    rng_state(a, &seed, &offset);
    const ltc_shape *s = &a->in_shapes[0];
    int64_t n = ltc_shape_numel(s);
    if (s->dtype == LTC_F32) {
        const float *p = a->in[0];
        float *y = a->out[0];
        for (int64_t i = 0; i < n; i++)
            if (!(p[i] >= 0 && p[i] <= 1)) return bad_probability(i, p[i], s->dtype);
        for (int64_t i = 0; i < n; i++)
            y[i] = ltc_rng_uniform_f32(seed, offset, i) < p[i];
    } else {
        const double *p = a->in[0];
        double *y = a->out[0];
        for (int64_t i = 0; i < n; i++)
            if (!(p[i] >= 0 && p[i] <= 1)) return bad_probability(i, p[i], s->dtype);
        for (int64_t i = 0; i < n; i++)
            y[i] = ltc_rng_uniform_f64(seed, offset, i) < p[i];
    }
    return LTC_OK;
}

/* bernoulli.p(Tensor self, float p): 1 where the uniform draw i is below p, in self's dtype
 * (draws in float32 precision for float32, float64 otherwise). */
ltc_status ltc_cpu_kernel_bernoulli_p(const ltc_kernel_args *a) {
    uint64_t seed, offset;
    rng_state(a, &seed, &offset);
    const ltc_shape *os = &a->out_shapes[0];
    int64_t n = ltc_shape_numel(os);
    size_t es = ltc_dtype_size(os->dtype);
    double p = a->attrs[0].f;
    for (int64_t i = 0; i < n; i++) {
        double v = os->dtype == LTC_F32 ? ltc_rng_uniform_f32(seed, offset, i) < (float)p
                                        : ltc_rng_uniform_f64(seed, offset, i) < p;
        if (os->dtype == LTC_F32) ((float *)a->out[0])[i] = (float)v;
        else ltc_cpu_convert((char *)a->out[0] + (size_t)i * es, os->dtype, &v, LTC_F64, 1);
    }
    return LTC_OK;
}

/* ---- multinomial and randperm -------------------------------------------------------------
 * Draw j (0-based) of a random op whose output has `numel` elements lives at counter
 * offset + j % numel of the key seed + (j / numel) * K (K odd): the first numel draws are the
 * ordinary stream, and further ones (multinomial without replacement wants one per
 * category) come from other keys of the op's own counter range, so they overlap no other
 * op's draws. ltc_rng_uniform_f64's key is the seed. */
static double draw_f64(uint64_t seed, uint64_t offset, int64_t numel, int64_t j) {
    return ltc_rng_uniform_f64(seed + (uint64_t)(j / numel) * 0x9E3779B97F4A7C15ull, offset,
                               j % numel);
}

typedef struct {
    double key;
    int64_t cat;
} keyed;

/* Descending key, then ascending category (a total order: the result is deterministic). */
static int by_key_desc(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    if (x->key != y->key) return x->key > y->key ? -1 : 1;
    return (x->cat > y->cat) - (x->cat < y->cat);
}

/* multinomial(Tensor self, int num_samples, bool replacement): per row, with replacement
 * the first c whose cumulative weight exceeds u * total (binary search), without it the
 * num_samples largest keys log(u_c) / w_c (categories of weight 0 never). */
ltc_status ltc_cpu_kernel_multinomial(const ltc_kernel_args *a) {
    uint64_t seed, offset;
    rng_state(a, &seed, &offset);
    const ltc_shape *s = &a->in_shapes[0];
    const int64_t ncat = s->dims[s->ndim - 1], rows = s->ndim == 2 ? s->dims[0] : 1;
    const int64_t ns = a->attrs[0].i, numel = rows * ns;
    const bool repl = a->attrs[1].i != 0;
    if (numel == 0) return LTC_OK;
    double *w = malloc((size_t)ncat * sizeof(double));
    keyed *k = malloc((size_t)ncat * sizeof(keyed));
    ltc_status st = LTC_OK;
    if (!w || !k) {
        st = ltc_errorf(LTC_ERR_NOMEM, "multinomial: out of memory");
        goto done;
    }
    int64_t *out = a->out[0];
    for (int64_t r = 0; r < rows; r++) {
        ltc_cpu_convert(w, LTC_F64, (const char *)a->in[0] + (size_t)(r * ncat) * ltc_dtype_size(s->dtype),
                        s->dtype, ncat);
        double total = 0;
        int64_t positive = 0;
        for (int64_t c = 0; c < ncat; c++) {
            if (!(w[c] >= 0) || isinf(w[c])) {
                st = ltc_errorf(LTC_ERR_ARG, "multinomial: weight %lld of row %lld is %g (must be "
                                "finite and >= 0)", (long long)c + 1, (long long)r + 1, w[c]);
                goto done;
            }
            positive += w[c] > 0;
            total += w[c];
            if (repl) w[c] = total; /* the cumulative sum */
        }
        if (positive == 0 || (!repl && positive < ns)) {
            st = ltc_errorf(LTC_ERR_ARG, "multinomial: row %lld has %lld positive weights, %s",
                            (long long)r + 1, (long long)positive,
                            repl ? "needs at least 1" : "fewer than num_samples without replacement");
            goto done;
        }
        if (repl) {
            for (int64_t j = 0; j < ns; j++) {
                double u = draw_f64(seed, offset, numel, r * ns + j) * total;
                int64_t lo = 0, hi = ncat - 1; /* the first c with w[c] > u */
                while (lo < hi) {
                    int64_t mid = lo + (hi - lo) / 2;
                    if (w[mid] > u) hi = mid;
                    else lo = mid + 1;
                }
                out[r * ns + j] = lo + 1;
            }
        } else {
            for (int64_t c = 0; c < ncat; c++) {
                /* draw (row r, category c): slot r * ns + c % ns, key c / ns */
                double u = draw_f64(seed, offset, numel, (c / ns) * numel + r * ns + c % ns);
                k[c].key = w[c] > 0 ? log(u) / w[c] : -INFINITY;
                k[c].cat = c;
            }
            qsort(k, (size_t)ncat, sizeof(keyed), by_key_desc);
            for (int64_t j = 0; j < ns; j++) out[r * ns + j] = k[j].cat + 1;
        }
    }
done:
    free(w), free(k);
    return st;
}

/* randperm(int n, ScalarType? dtype): the 1-based positions of n uniform draws in
 * ascending order of the draws (ties, which need equal 53-bit draws, by position). */
ltc_status ltc_cpu_kernel_randperm(const ltc_kernel_args *a) {
    uint64_t seed, offset;
    rng_state(a, &seed, &offset);
    const ltc_shape *os = &a->out_shapes[0];
    const int64_t n = ltc_shape_numel(os);
    keyed *k = malloc((size_t)(n > 0 ? n : 1) * sizeof(keyed));
    if (!k) return ltc_errorf(LTC_ERR_NOMEM, "randperm: out of memory for %lld elements", (long long)n);
    for (int64_t i = 0; i < n; i++) {
        k[i].key = -ltc_rng_uniform_f64(seed, offset, i); /* descending -key: ascending draw */
        k[i].cat = i;
    }
    qsort(k, (size_t)n, sizeof(keyed), by_key_desc);
    size_t es = ltc_dtype_size(os->dtype);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = k[i].cat + 1;
        ltc_cpu_convert((char *)a->out[0] + (size_t)i * es, os->dtype, &v, LTC_I64, 1);
    }
    free(k);
    return LTC_OK;
}
