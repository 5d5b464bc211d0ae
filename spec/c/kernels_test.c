/*
 * kernels_test.c - a self-test of the hand-written CPU kernels in src/cpu, calling them
 * with ltc_kernel_args built by hand and checking values worked out by hand. TAP-like
 * output: "ok N - name" / "not ok N - name", then "P passed, F failed"; exits 1 on failure.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elementwise.h"
#include "gemm_small.h"
#include "ltc_rng.h"
#include "threads.h"

/* the kernels under test (the generated gen/cpu_ops.c declares them in the real build) */
#define K(name) ltc_status ltc_cpu_kernel_##name(const ltc_kernel_args *a);
K(zeros) K(ones) K(full) K(arange) K(rand) K(randn) K(sum) K(mean) K(max) K(max_dim) K(argmax)
K(matmul) K(transpose) K(t) K(view) K(reshape) K(narrow) K(select) K(to) K(softmax)
K(log_softmax)
#undef K

/* ---- harness --------------------------------------------------------------------------- */

static int n_pass, n_fail, n_test;
static bool cur_ok;

#define CHECK(c)                                                                               \
    do {                                                                                       \
        if (!(c)) {                                                                            \
            printf("#   %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c);                   \
            cur_ok = false;                                                                    \
        }                                                                                      \
    } while (0)
#define NEAR(x, y, tol) CHECK(fabs((double)(x) - (double)(y)) <= (tol))

/* Runs one test function and prints its line. */
static void run(const char *name, void (*fn)(void)) {
    cur_ok = true;
    fn();
    n_test++;
    printf("%sok %d - %s\n", cur_ok ? "" : "not ", n_test, name);
    cur_ok ? n_pass++ : n_fail++;
}

/* A shape of dtype dt with nd sizes. */
static ltc_shape S(ltc_dtype dt, int nd, const int64_t *dims) {
    ltc_shape s = {.dtype = dt, .ndim = nd};
    for (int d = 0; d < nd; d++)
        s.dims[d] = dims[d];
    return s;
}
#define SH(dt, ...) S(dt, sizeof((int64_t[]){__VA_ARGS__}) / 8, (int64_t[]){__VA_ARGS__})
#define S0(dt) S(dt, 0, NULL)

/* Calls kernel fn with up to 3 inputs, 2 outputs and 3 attrs. */
static ltc_status call(ltc_kernel_fn fn, int nin, const ltc_shape *is, const void *const *in,
                       int nout, const ltc_shape *os, void *const *out, int nattr,
                       const ltc_attr *attrs) {
    ltc_kernel_args a = {.attrs = attrs, .n_attrs = nattr, .n_in = nin, .in_shapes = is,
                         .in = in, .n_out = nout, .out_shapes = os, .out = out};
    return fn(&a);
}
/* One input, one output. */
static ltc_status call1(ltc_kernel_fn fn, ltc_shape is, const void *in, ltc_shape os, void *out,
                        int nattr, const ltc_attr *attrs) {
    return call(fn, 1, &is, &in, 1, &os, &out, nattr, attrs);
}
/* No input, one output. */
static ltc_status call0(ltc_kernel_fn fn, ltc_shape os, void *out, int nattr,
                        const ltc_attr *attrs) {
    return call(fn, 0, NULL, NULL, 1, &os, &out, nattr, attrs);
}
/* Two inputs, one output. */
static ltc_status call2(ltc_kernel_fn fn, ltc_shape s0, const void *i0, ltc_shape s1,
                        const void *i1, ltc_shape os, void *out) {
    ltc_shape is[2] = {s0, s1};
    const void *in[2] = {i0, i1};
    return call(fn, 2, is, in, 1, &os, &out, 0, NULL);
}
#define I(v) ltc_attr_int(v)
#define F(v) ltc_attr_float(v)

/* ---- elementwise ----------------------------------------------------------------------- */

/* What the code generator emits for add (float32), lt (float64 -> bool) and x * y + z. */
static void add_f32(int64_t n, void *out, const void *const *in, const int64_t *st) {
    float *o = out;
    const float *x = in[0], *y = in[1];
    for (int64_t i = 0; i < n; i++)
        o[i] = x[i * st[0]] + y[i * st[1]];
}
static void lt_f64(int64_t n, void *out, const void *const *in, const int64_t *st) {
    unsigned char *o = out;
    const double *x = in[0], *y = in[1];
    for (int64_t i = 0; i < n; i++)
        o[i] = x[i * st[0]] < y[i * st[1]];
}
static void fma_f32(int64_t n, void *out, const void *const *in, const int64_t *st) {
    float *o = out;
    const float *x = in[0], *y = in[1], *z = in[2];
    for (int64_t i = 0; i < n; i++)
        o[i] = x[i * st[0]] * y[i * st[1]] + z[i * st[2]];
}
static ltc_status ew(ltc_ew_loop loop, int nin, const ltc_shape *is, const void *const *in,
                     ltc_shape os, void *out) {
    ltc_kernel_args a = {.n_in = nin, .in_shapes = is, .in = in, .n_out = 1,
                         .out_shapes = &os, .out = &out};
    return ltc_cpu_elementwise(&a, loop);
}

static void t_ew_scalar(void) {
    float m[6] = {1, 2, 3, 4, 5, 6}, s = 10, o[6];
    ltc_shape is[2] = {SH(LTC_F32, 2, 3), S0(LTC_F32)};
    CHECK(ew(add_f32, 2, is, (const void *[]){m, &s}, SH(LTC_F32, 2, 3), o) == LTC_OK);
    for (int i = 0; i < 6; i++)
        NEAR(o[i], m[i] + 10, 0);
    ltc_shape is2[2] = {S0(LTC_F32), SH(LTC_F32, 2, 3)}; /* scalar on the left */
    CHECK(ew(add_f32, 2, is2, (const void *[]){&s, m}, SH(LTC_F32, 2, 3), o) == LTC_OK);
    NEAR(o[5], 16, 0);
}
static void t_ew_row_col(void) {
    float m[6] = {1, 2, 3, 4, 5, 6}, r[3] = {10, 20, 30}, c[2] = {100, 200}, o[6];
    ltc_shape is[2] = {SH(LTC_F32, 2, 3), SH(LTC_F32, 3)};
    CHECK(ew(add_f32, 2, is, (const void *[]){m, r}, SH(LTC_F32, 2, 3), o) == LTC_OK);
    float e1[6] = {11, 22, 33, 14, 25, 36};
    CHECK(memcmp(o, e1, sizeof o) == 0);
    ltc_shape is2[2] = {SH(LTC_F32, 2, 1), SH(LTC_F32, 2, 3)};
    CHECK(ew(add_f32, 2, is2, (const void *[]){c, m}, SH(LTC_F32, 2, 3), o) == LTC_OK);
    float e2[6] = {101, 102, 103, 204, 205, 206};
    CHECK(memcmp(o, e2, sizeof o) == 0);
    ltc_shape is3[2] = {SH(LTC_F32, 2, 1), SH(LTC_F32, 1, 3)}; /* outer sum */
    CHECK(ew(add_f32, 2, is3, (const void *[]){c, r}, SH(LTC_F32, 2, 3), o) == LTC_OK);
    float e3[6] = {110, 120, 130, 210, 220, 230};
    CHECK(memcmp(o, e3, sizeof o) == 0);
}
static void t_ew_3d_three_inputs(void) {
    /* x [2,1,4] * y [3,1] + z 0-d, out [2,3,4]; and a bool output over float64 */
    float x[8], y[3] = {1, 2, 3}, z = 0.5f, o[24];
    for (int i = 0; i < 8; i++)
        x[i] = (float)i;
    ltc_shape is[3] = {SH(LTC_F32, 2, 1, 4), SH(LTC_F32, 3, 1), S0(LTC_F32)};
    CHECK(ew(fma_f32, 3, is, (const void *[]){x, y, &z}, SH(LTC_F32, 2, 3, 4), o) == LTC_OK);
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 4; c++)
                NEAR(o[(a * 3 + b) * 4 + c], x[a * 4 + c] * y[b] + 0.5f, 0);
    double p[6] = {1, 5, 3, 7, 2, 0}, q[3] = {2, 2, 9};
    unsigned char ob[6];
    ltc_shape is2[2] = {SH(LTC_F64, 2, 3), SH(LTC_F64, 1, 3)};
    CHECK(ew(lt_f64, 2, is2, (const void *[]){p, q}, SH(LTC_BOOL, 2, 3), ob) == LTC_OK);
    unsigned char e[6] = {1, 0, 1, 0, 0, 1};
    CHECK(memcmp(ob, e, 6) == 0);
    ltc_shape is3[2] = {SH(LTC_F32, 0, 3), SH(LTC_F32, 3)}; /* 0-size: nothing happens */
    o[0] = -1;
    CHECK(ew(add_f32, 2, is3, (const void *[]){x, y}, SH(LTC_F32, 0, 3), o) == LTC_OK);
    CHECK(o[0] == -1);
}

/* ---- creation -------------------------------------------------------------------------- */

static void t_creation(void) {
    int32_t z[4] = {7, 7, 7, 7};
    CHECK(call0(ltc_cpu_kernel_zeros, SH(LTC_I32, 4), z, 0, NULL) == LTC_OK);
    CHECK(z[0] == 0 && z[3] == 0);
    double one[3];
    CHECK(call0(ltc_cpu_kernel_ones, SH(LTC_F64, 3), one, 0, NULL) == LTC_OK);
    CHECK(one[0] == 1 && one[2] == 1);
    int64_t fi = 7;
    float ff[4];
    CHECK(call1(ltc_cpu_kernel_full, S0(LTC_I64), &fi, SH(LTC_F32, 2, 2), ff, 0, NULL) == 0);
    CHECK(ff[0] == 7.0f && ff[3] == 7.0f);
    double fd = -2.7;
    int32_t fo[2];
    CHECK(call1(ltc_cpu_kernel_full, S0(LTC_F64), &fd, SH(LTC_I32, 2), fo, 0, NULL) == 0);
    CHECK(fo[0] == -2 && fo[1] == -2);
    unsigned char fb[3];
    CHECK(call1(ltc_cpu_kernel_full, S0(LTC_F64), &fd, SH(LTC_BOOL, 3), fb, 0, NULL) == 0);
    CHECK(fb[0] == 1 && fb[2] == 1);
}
static void t_arange(void) {
    int64_t ai[5];
    ltc_attr at[4] = {F(0), F(5), F(1), I(LTC_I64)};
    CHECK(call0(ltc_cpu_kernel_arange, SH(LTC_I64, 5), ai, 4, at) == LTC_OK);
    for (int i = 0; i < 5; i++)
        CHECK(ai[i] == i);
    float af[4];
    ltc_attr at2[4] = {F(1), F(2), F(0.25), I(LTC_F32)};
    CHECK(call0(ltc_cpu_kernel_arange, SH(LTC_F32, 4), af, 4, at2) == LTC_OK);
    CHECK(af[0] == 1.0f && af[1] == 1.25f && af[2] == 1.5f && af[3] == 1.75f);
    double ad[3];
    ltc_attr at3[4] = {F(3), F(0), F(-1.5), I(LTC_F64)};
    CHECK(call0(ltc_cpu_kernel_arange, SH(LTC_F64, 2), ad, 4, at3) == LTC_OK);
    CHECK(ad[0] == 3 && ad[1] == 1.5);
}
static float rbuf[10000];
static double rbufd[10000];
static void t_rand(void) {
    int64_t st[2] = {42, 1000};
    CHECK(call1(ltc_cpu_kernel_rand, SH(LTC_I64, 2), st, SH(LTC_F32, 10000), rbuf, 0, NULL) == 0);
    double s = 0;
    bool in01 = true;
    for (int i = 0; i < 10000; i++) {
        in01 = in01 && rbuf[i] >= 0 && rbuf[i] < 1;
        s += rbuf[i];
    }
    CHECK(in01);
    NEAR(s / 10000, 0.5, 0.02);
    CHECK(rbuf[17] == ltc_rng_uniform_f32(42, 1000, 17));
    CHECK(call1(ltc_cpu_kernel_rand, SH(LTC_I64, 2), st, SH(LTC_F64, 100), rbufd, 0, NULL) == 0);
    CHECK(rbufd[99] == ltc_rng_uniform_f64(42, 1000, 99) && rbufd[0] < 1 && rbufd[0] >= 0);
}
static void t_randn(void) {
    int64_t st[2] = {7, 0};
    CHECK(call1(ltc_cpu_kernel_randn, SH(LTC_I64, 2), st, SH(LTC_F64, 10000), rbufd, 0,
                NULL) == 0);
    double s = 0, s2 = 0;
    for (int i = 0; i < 10000; i++) {
        s += rbufd[i];
        s2 += rbufd[i] * rbufd[i];
    }
    NEAR(s / 10000, 0, 0.05);
    NEAR(s2 / 10000, 1, 0.05);
    CHECK(rbufd[5] == ltc_rng_normal_f64(7, 0, 5));
    CHECK(call1(ltc_cpu_kernel_randn, SH(LTC_I64, 2), st, SH(LTC_F32, 10), rbuf, 0, NULL) == 0);
    CHECK(rbuf[3] == ltc_rng_normal_f32(7, 0, 3));
}

/* ---- reductions ------------------------------------------------------------------------ */

static const float M23[6] = {1, 2, 3, 4, 5, 6};

static void t_sum(void) {
    float o[3];
    ltc_attr all[2] = {I(LTC_NONE), I(0)}, d0[2] = {I(0), I(0)}, d1[2] = {I(1), I(1)};
    CHECK(call1(ltc_cpu_kernel_sum, SH(LTC_F32, 2, 3), M23, S0(LTC_F32), o, 2, all) == 0);
    CHECK(o[0] == 21);
    CHECK(call1(ltc_cpu_kernel_sum, SH(LTC_F32, 2, 3), M23, SH(LTC_F32, 3), o, 2, d0) == 0);
    CHECK(o[0] == 5 && o[1] == 7 && o[2] == 9);
    CHECK(call1(ltc_cpu_kernel_sum, SH(LTC_F32, 2, 3), M23, SH(LTC_F32, 2, 1), o, 2, d1) == 0);
    CHECK(o[0] == 6 && o[1] == 15);
    int32_t xi[4] = {2000000000, 2000000000, -1, 5};
    int64_t oi[2];
    CHECK(call1(ltc_cpu_kernel_sum, SH(LTC_I32, 4), xi, S0(LTC_I64), oi, 2, all) == 0);
    CHECK(oi[0] == 4000000004LL);
    unsigned char b[5] = {1, 0, 1, 1, 0};
    CHECK(call1(ltc_cpu_kernel_sum, SH(LTC_BOOL, 5), b, S0(LTC_I64), oi, 2, all) == 0);
    CHECK(oi[0] == 3);
    /* a 3-d sum along the middle dim, and the sum of nothing */
    double x3[24], o3[8];
    for (int i = 0; i < 24; i++)
        x3[i] = i;
    CHECK(call1(ltc_cpu_kernel_sum, SH(LTC_F64, 2, 3, 4), x3, SH(LTC_F64, 2, 4), o3, 2, d1) == 0);
    CHECK(o3[0] == 0 + 4 + 8 && o3[7] == 15 + 19 + 23);
    CHECK(call1(ltc_cpu_kernel_sum, SH(LTC_F32, 0), M23, S0(LTC_F32), o, 2, all) == 0);
    CHECK(o[0] == 0);
    CHECK(call1(ltc_cpu_kernel_sum, SH(LTC_F32, 3, 0), M23, SH(LTC_F32, 3), o, 2, d1) == 0);
    CHECK(o[0] == 0 && o[2] == 0);
}
static void t_mean(void) {
    float o[2];
    ltc_attr all[2] = {I(LTC_NONE), I(0)}, d1[2] = {I(1), I(0)};
    CHECK(call1(ltc_cpu_kernel_mean, SH(LTC_F32, 2, 3), M23, S0(LTC_F32), o, 2, all) == 0);
    CHECK(o[0] == 3.5f);
    CHECK(call1(ltc_cpu_kernel_mean, SH(LTC_F32, 2, 3), M23, SH(LTC_F32, 2), o, 2, d1) == 0);
    CHECK(o[0] == 2 && o[1] == 5);
    CHECK(call1(ltc_cpu_kernel_mean, SH(LTC_F32, 0), M23, S0(LTC_F32), o, 2, all) == 0);
    CHECK(isnan(o[0]));
}
static void t_max(void) {
    float o;
    float x[5] = {3, -1, 9, 2, 9};
    CHECK(call1(ltc_cpu_kernel_max, SH(LTC_F32, 5), x, S0(LTC_F32), &o, 0, NULL) == 0);
    CHECK(o == 9);
    float xn[4] = {3, NAN, 9, 2};
    CHECK(call1(ltc_cpu_kernel_max, SH(LTC_F32, 4), xn, S0(LTC_F32), &o, 0, NULL) == 0);
    CHECK(isnan(o));
    int64_t xi[3] = {-5, -2, -9}, oi;
    CHECK(call1(ltc_cpu_kernel_max, SH(LTC_I64, 3), xi, S0(LTC_I64), &oi, 0, NULL) == 0);
    CHECK(oi == -2);
    CHECK(call1(ltc_cpu_kernel_max, SH(LTC_F32, 0), x, S0(LTC_F32), &o, 0, NULL) != 0);
}
static void t_max_dim(void) {
    /* [[1, 7, 7], [NaN, 2, NaN], [4, 0, 4]] along dim 1 (rows) and dim 0 (columns) */
    float x[9] = {1, 7, 7, NAN, 2, NAN, 4, 0, 4}, v[3];
    int64_t ix[3];
    ltc_shape is = SH(LTC_F32, 3, 3), os[2] = {SH(LTC_F32, 3), SH(LTC_I64, 3)};
    ltc_attr d1[2] = {I(1), I(0)}, d0[2] = {I(0), I(1)};
    CHECK(call(ltc_cpu_kernel_max_dim, 1, &is, (const void *[]){x}, 2, os, (void *[]){v, ix},
               2, d1) == 0);
    CHECK(v[0] == 7 && ix[0] == 2 && isnan(v[1]) && ix[1] == 1 && v[2] == 4 && ix[2] == 1);
    CHECK(call(ltc_cpu_kernel_max_dim, 1, &is, (const void *[]){x}, 2, os, (void *[]){v, ix},
               2, d0) == 0);
    CHECK(isnan(v[0]) && ix[0] == 2 && v[1] == 7 && ix[1] == 1 && isnan(v[2]) && ix[2] == 2);
}
static void t_argmax(void) {
    int64_t o[3];
    ltc_attr all[2] = {I(LTC_NONE), I(0)}, d0[2] = {I(0), I(0)}, d1[2] = {I(1), I(1)};
    CHECK(call1(ltc_cpu_kernel_argmax, SH(LTC_F32, 2, 3), M23, S0(LTC_I64), o, 2, all) == 0);
    CHECK(o[0] == 6);
    float x[6] = {5, 1, 5, 2, 8, 0};
    CHECK(call1(ltc_cpu_kernel_argmax, SH(LTC_F32, 2, 3), x, SH(LTC_I64, 3), o, 2, d0) == 0);
    CHECK(o[0] == 1 && o[1] == 2 && o[2] == 1);
    CHECK(call1(ltc_cpu_kernel_argmax, SH(LTC_F32, 2, 3), x, SH(LTC_I64, 2, 1), o, 2, d1) == 0);
    CHECK(o[0] == 1 && o[1] == 2);
    double xn[4] = {1, 1e300, NAN, INFINITY};
    CHECK(call1(ltc_cpu_kernel_argmax, SH(LTC_F64, 4), xn, S0(LTC_I64), o, 2, all) == 0);
    CHECK(o[0] == 3);
    int32_t xi[4] = {-3, 4, 4, 1};
    CHECK(call1(ltc_cpu_kernel_argmax, SH(LTC_I32, 4), xi, S0(LTC_I64), o, 2, all) == 0);
    CHECK(o[0] == 2);
}

/* ---- matmul ---------------------------------------------------------------------------- */

/* Naive row-major C[m,n] = A[m,k] B[k,n] in double. */
static void naive(const float *A, const float *B, double *C, int m, int n, int k) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            C[i * n + j] = 0;
            for (int p = 0; p < k; p++)
                C[i * n + j] += (double)A[i * k + p] * B[p * n + j];
        }
}
static void t_matmul_2d(void) {
    float A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {7, 8, 9, 10, 11, 12}, C[4];
    CHECK(call2(ltc_cpu_kernel_matmul, SH(LTC_F32, 2, 3), A, SH(LTC_F32, 3, 2), B,
                SH(LTC_F32, 2, 2), C) == 0);
    CHECK(C[0] == 58 && C[1] == 64 && C[2] == 139 && C[3] == 154);
    double Ad[6] = {1, 2, 3, 4, 5, 6}, v[3] = {1, 0, -1}, w[2] = {1, 1}, o[3];
    CHECK(call2(ltc_cpu_kernel_matmul, SH(LTC_F64, 3), v, SH(LTC_F64, 3), Ad, S0(LTC_F64),
                o) == 0);
    CHECK(o[0] == -2);
    CHECK(call2(ltc_cpu_kernel_matmul, SH(LTC_F64, 2, 3), Ad, SH(LTC_F64, 3), v,
                SH(LTC_F64, 2), o) == 0);
    CHECK(o[0] == -2 && o[1] == -2);
    CHECK(call2(ltc_cpu_kernel_matmul, SH(LTC_F64, 2), w, SH(LTC_F64, 2, 3), Ad,
                SH(LTC_F64, 3), o) == 0);
    CHECK(o[0] == 5 && o[1] == 7 && o[2] == 9);
    float Z[6] = {9, 9, 9, 9, 9, 9};
    CHECK(call2(ltc_cpu_kernel_matmul, SH(LTC_F32, 2, 0), A, SH(LTC_F32, 0, 3), B,
                SH(LTC_F32, 2, 3), Z) == 0);
    CHECK(Z[0] == 0 && Z[5] == 0);
}
/* ltc_cpu_gemm with the BLAS limit lowered to 2: m is split into row blocks, and n, k and
 * the leading dims beyond the limit run in loops; all four transpose combinations must give
 * naive's values (a 5x3 = [5x4][4x3] product, alpha 2, beta 0 and beta 1). */
static void t_gemm_beyond_blasint(void) {
    float A[20], At[20], B[12], Bt[12], C[15];
    double want[15];
    for (int i = 0; i < 20; i++) A[i] = (float)(i % 7) - 3;
    for (int i = 0; i < 12; i++) B[i] = (float)(i % 5) - 2;
    for (int i = 0; i < 5; i++)
        for (int p = 0; p < 4; p++) At[p * 5 + i] = A[i * 4 + p];
    for (int p = 0; p < 4; p++)
        for (int j = 0; j < 3; j++) Bt[j * 4 + p] = B[p * 3 + j];
    naive(A, B, want, 5, 3, 4);
    int64_t saved = ltc_cpu_blas_max;
    ltc_cpu_blas_max = 2;
    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = t & 2;
        for (int i = 0; i < 15; i++) C[i] = 1;
        ltc_cpu_gemm(LTC_F32, ta, tb, 5, 3, 4, 2.0, ta ? At : A, ta ? 5 : 4, tb ? Bt : B,
                     tb ? 4 : 3, 1.0, C, 3);
        for (int i = 0; i < 15; i++) CHECK(C[i] == (float)(2 * want[i] + 1));
        ltc_cpu_gemm(LTC_F32, ta, tb, 5, 3, 4, 1.0, ta ? At : A, ta ? 5 : 4, tb ? Bt : B,
                     tb ? 4 : 3, 0.0, C, 3);
        for (int i = 0; i < 15; i++) CHECK(C[i] == (float)want[i]);
    }
    float v[5] = {1, 2, 3, 4, 5}, w[5] = {1, 1, 1, 1, -1}, o = 0;
    CHECK(call2(ltc_cpu_kernel_matmul, SH(LTC_F32, 5), v, SH(LTC_F32, 5), w, S0(LTC_F32),
                &o) == 0);
    CHECK(o == 5);
    ltc_cpu_blas_max = saved;
}
static void t_matmul_batched(void) {
    /* [2,1,2,3] @ [3,3,2] -> [2,3,2,2]; and [2,2,3] @ [3,2] (one stacked gemm) */
    float A[12], B[18], C[24];
    for (int i = 0; i < 12; i++)
        A[i] = (float)(i % 5) - 2;
    for (int i = 0; i < 18; i++)
        B[i] = (float)(i % 7) * 0.5f;
    CHECK(call2(ltc_cpu_kernel_matmul, SH(LTC_F32, 2, 1, 2, 3), A, SH(LTC_F32, 3, 3, 2), B,
                SH(LTC_F32, 2, 3, 2, 2), C) == 0);
    double e[4];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            naive(A + i * 6, B + j * 6, e, 2, 2, 3);
            for (int q = 0; q < 4; q++)
                NEAR(C[(i * 3 + j) * 4 + q], e[q], 1e-4);
        }
    CHECK(call2(ltc_cpu_kernel_matmul, SH(LTC_F32, 2, 2, 3), A, SH(LTC_F32, 3, 2), B,
                SH(LTC_F32, 2, 2, 2), C) == 0);
    double e2[8];
    naive(A, B, e2, 4, 2, 3);
    for (int q = 0; q < 8; q++)
        NEAR(C[q], e2[q], 1e-4);
    /* a 1-d self against a batch: [3] @ [3,3,2] -> [3,2] */
    CHECK(call2(ltc_cpu_kernel_matmul, SH(LTC_F32, 3), A, SH(LTC_F32, 3, 3, 2), B,
                SH(LTC_F32, 3, 2), C) == 0);
    for (int j = 0; j < 3; j++) {
        naive(A, B + j * 6, e, 1, 2, 3);
        NEAR(C[j * 2], e[0], 1e-4);
        NEAR(C[j * 2 + 1], e[1], 1e-4);
    }
}

/* ---- shape ops ------------------------------------------------------------------------- */

static void t_transpose(void) {
    float o[6];
    ltc_attr d01[2] = {I(0), I(1)};
    CHECK(call1(ltc_cpu_kernel_transpose, SH(LTC_F32, 2, 3), M23, SH(LTC_F32, 3, 2), o, 2,
                d01) == 0);
    float e[6] = {1, 4, 2, 5, 3, 6};
    CHECK(memcmp(o, e, sizeof e) == 0);
    CHECK(call1(ltc_cpu_kernel_t, SH(LTC_F32, 2, 3), M23, SH(LTC_F32, 3, 2), o, 0, NULL) == 0);
    CHECK(memcmp(o, e, sizeof e) == 0);
    CHECK(call1(ltc_cpu_kernel_t, SH(LTC_F32, 6), M23, SH(LTC_F32, 6), o, 0, NULL) == 0);
    CHECK(memcmp(o, M23, sizeof o) == 0);
    /* a 3-d transpose of dims 0 and 2, large enough for several tiles, int64 */
    static int64_t x[3 * 40 * 70], y[70 * 40 * 3];
    for (int i = 0; i < 3 * 40 * 70; i++)
        x[i] = i;
    ltc_attr d02[2] = {I(0), I(2)};
    CHECK(call1(ltc_cpu_kernel_transpose, SH(LTC_I64, 3, 40, 70), x, SH(LTC_I64, 70, 40, 3), y,
                2, d02) == 0);
    bool ok = true;
    for (int a = 0; a < 70; a++)
        for (int b = 0; b < 40; b++)
            for (int c = 0; c < 3; c++)
                ok = ok && y[(a * 40 + b) * 3 + c] == x[(c * 40 + b) * 70 + a];
    CHECK(ok);
}
static void t_view(void) {
    float o[6];
    CHECK(call1(ltc_cpu_kernel_view, SH(LTC_F32, 2, 3), M23, SH(LTC_F32, 6), o, 0, NULL) == 0);
    CHECK(memcmp(o, M23, sizeof o) == 0);
    memset(o, 0, sizeof o);
    CHECK(call1(ltc_cpu_kernel_reshape, SH(LTC_F32, 2, 3), M23, SH(LTC_F32, 3, 2), o, 0,
                NULL) == 0);
    CHECK(memcmp(o, M23, sizeof o) == 0);
}
static void t_narrow_select(void) {
    float o[4];
    ltc_attr n1[3] = {I(1), I(-2), I(2)}; /* columns 2..3 */
    CHECK(call1(ltc_cpu_kernel_narrow, SH(LTC_F32, 2, 3), M23, SH(LTC_F32, 2, 2), o, 3, n1) == 0);
    CHECK(o[0] == 2 && o[1] == 3 && o[2] == 5 && o[3] == 6);
    ltc_attr n0[3] = {I(0), I(2), I(1)}; /* row 2 */
    CHECK(call1(ltc_cpu_kernel_narrow, SH(LTC_F32, 2, 3), M23, SH(LTC_F32, 1, 3), o, 3, n0) == 0);
    CHECK(o[0] == 4 && o[2] == 6);
    ltc_attr s0[2] = {I(0), I(-1)}, s1[2] = {I(1), I(2)};
    CHECK(call1(ltc_cpu_kernel_select, SH(LTC_F32, 2, 3), M23, SH(LTC_F32, 3), o, 2, s0) == 0);
    CHECK(o[0] == 4 && o[1] == 5 && o[2] == 6);
    CHECK(call1(ltc_cpu_kernel_select, SH(LTC_F32, 2, 3), M23, SH(LTC_F32, 2), o, 2, s1) == 0);
    CHECK(o[0] == 2 && o[1] == 5);
    CHECK(call1(ltc_cpu_kernel_select, SH(LTC_F32, 3), M23, S0(LTC_F32), o, 2, s0) == 0);
    CHECK(o[0] == 3);
}
static void t_to(void) {
    float x[6] = {2.7f, -2.7f, 0.0f, -0.0f, 0.5f, NAN};
    int32_t oi[5];
    ltc_attr to_i32 = I(LTC_I32), to_bool = I(LTC_BOOL), to_f64 = I(LTC_F64);
    CHECK(call1(ltc_cpu_kernel_to, SH(LTC_F32, 5), x, SH(LTC_I32, 5), oi, 1, &to_i32) == 0);
    CHECK(oi[0] == 2 && oi[1] == -2 && oi[2] == 0 && oi[4] == 0);
    unsigned char ob[6];
    CHECK(call1(ltc_cpu_kernel_to, SH(LTC_F32, 6), x, SH(LTC_BOOL, 6), ob, 1, &to_bool) == 0);
    unsigned char e[6] = {1, 1, 0, 0, 1, 1};
    CHECK(memcmp(ob, e, 6) == 0);
    double od[6];
    CHECK(call1(ltc_cpu_kernel_to, SH(LTC_BOOL, 6), e, SH(LTC_F64, 6), od, 1, &to_f64) == 0);
    CHECK(od[0] == 1 && od[2] == 0);
    int64_t big[2] = {-5, 3000000000LL};
    unsigned char ob2[2];
    CHECK(call1(ltc_cpu_kernel_to, SH(LTC_I64, 2), big, SH(LTC_BOOL, 2), ob2, 1,
                &to_bool) == 0);
    CHECK(ob2[0] == 1 && ob2[1] == 1);
}

/* ---- nn -------------------------------------------------------------------------------- */

static void t_softmax(void) {
    float x[6] = {1, 2, 3, 1000, 1001, 1002}, o[6], lo[6];
    ltc_attr d1 = I(1), d0 = I(0);
    CHECK(call1(ltc_cpu_kernel_softmax, SH(LTC_F32, 2, 3), x, SH(LTC_F32, 2, 3), o, 1, &d1) == 0);
    double e0 = 1 / (1 + exp(1) + exp(2));
    for (int r = 0; r < 2; r++) {
        NEAR(o[r * 3] + o[r * 3 + 1] + o[r * 3 + 2], 1, 1e-6);
        NEAR(o[r * 3], e0, 1e-6);
        NEAR(o[r * 3 + 2], e0 * exp(2), 1e-6);
    }
    CHECK(call1(ltc_cpu_kernel_log_softmax, SH(LTC_F32, 2, 3), x, SH(LTC_F32, 2, 3), lo, 1,
                &d1) == 0);
    for (int i = 0; i < 6; i++)
        NEAR(lo[i], log(o[i]), 1e-5);
    double xd[6] = {0, 1, 0, 3, 0, 5}, od[6]; /* along dim 0 of [3,2]: columns */
    CHECK(call1(ltc_cpu_kernel_softmax, SH(LTC_F64, 3, 2), xd, SH(LTC_F64, 3, 2), od, 1,
                &d0) == 0);
    NEAR(od[0], 1.0 / 3, 1e-12);
    NEAR(od[1] + od[3] + od[5], 1, 1e-12);
    NEAR(od[5], exp(5) / (exp(1) + exp(3) + exp(5)), 1e-12);
    CHECK(call1(ltc_cpu_kernel_log_softmax, SH(LTC_F64, 3, 2), xd, SH(LTC_F64, 3, 2), od, 1,
                &d0) == 0);
    NEAR(od[4], -log(3), 1e-12);
    NEAR(od[1], 1 - log(exp(1) + exp(3) + exp(5)), 1e-12);
}

/* ---- the thin A . B^T kernel (gemm_small.c) ------------------------------------------ */

static uint64_t lcg = 12345;
static double urand(void) { /* in [-1, 1) */
    lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(lcg >> 11) / (double)(1ULL << 52) - 1;
}

/* C = alpha A . B^T + beta C by ltc_cpu_gemm_nt (or ltc_cpu_gemm when `entry`) against a
 * double sum, for A [m,k] and B [n,k] with padded row strides; beta 0 with NaN in C. */
static bool check_nt(int dt, bool entry, int64_t m, int64_t n, int64_t k, double alpha,
                     double beta) {
    int64_t lda = k + 3, ldb = k + 1, ldc = n + 2;
    size_t es = dt == LTC_F32 ? 4 : 8;
    double *A = malloc(sizeof(double) * (size_t)(m * lda + 1));
    double *B = malloc(sizeof(double) * (size_t)(n * ldb + 1));
    double *C = malloc(sizeof(double) * (size_t)(m * ldc + 1));
    char *a = malloc(es * (size_t)(m * lda + 1)), *b = malloc(es * (size_t)(n * ldb + 1));
    char *c = malloc(es * (size_t)(m * ldc + 1));
    for (int64_t i = 0; i < m * lda; i++) A[i] = urand();
    for (int64_t i = 0; i < n * ldb; i++) B[i] = urand();
    for (int64_t i = 0; i < m * ldc; i++) C[i] = beta == 0 ? NAN : urand();
    for (int64_t i = 0; i < m * lda; i++)
        dt == LTC_F32 ? (void)(((float *)a)[i] = (float)A[i]) : (void)(((double *)a)[i] = A[i]);
    for (int64_t i = 0; i < n * ldb; i++)
        dt == LTC_F32 ? (void)(((float *)b)[i] = (float)B[i]) : (void)(((double *)b)[i] = B[i]);
    for (int64_t i = 0; i < m * ldc; i++)
        dt == LTC_F32 ? (void)(((float *)c)[i] = (float)C[i]) : (void)(((double *)c)[i] = C[i]);
    if (entry)
        ltc_cpu_gemm(dt, false, true, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    else
        ltc_cpu_gemm_nt(dt, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    double eps = dt == LTC_F32 ? 1.2e-7 : 2.3e-16;
    bool ok = true;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < ldc; j++) {
            double got = dt == LTC_F32 ? ((float *)c)[i * ldc + j] : ((double *)c)[i * ldc + j];
            if (j >= n) { /* the padding is not written */
                double was = dt == LTC_F32 ? (float)C[i * ldc + j] : C[i * ldc + j];
                ok &= isnan(was) ? isnan(got) : got == was;
                continue;
            }
            double s = 0, mag = 0;
            for (int64_t p = 0; p < k; p++) {
                double x = dt == LTC_F32 ? ((float *)a)[i * lda + p] : A[i * lda + p];
                double y = dt == LTC_F32 ? ((float *)b)[j * ldb + p] : B[j * ldb + p];
                s += x * y, mag += fabs(x * y);
            }
            double cv = beta == 0 ? 0 : dt == LTC_F32 ? (float)C[i * ldc + j] : C[i * ldc + j];
            double want = alpha * s + (beta == 0 ? 0 : beta * cv);
            double tol = 4 * eps * ((double)k * fabs(alpha) * mag + fabs(beta * cv) + fabs(want));
            if (!(fabs(got - want) <= tol)) {
                if (ok)
                    printf("#   %s %s m %ld n %ld k %ld: C[%ld,%ld] = %.9g, want %.9g\n",
                           dt == LTC_F32 ? "f32" : "f64", entry ? "gemm" : "nt", (long)m,
                           (long)n, (long)k, (long)i, (long)j, got, want);
                ok = false;
            }
        }
    free(A), free(B), free(C), free(a), free(b), free(c);
    return ok;
}

static void t_gemm_nt(void) {
    static const int64_t ms[] = {0, 1, 2, 3, 4, 5, 7, 10, 12, 13, 17};
    static const int64_t ks[] = {0, 1, 7, 15, 16, 17, 33, 128, 130};
    for (int dt = 0; dt < 2; dt++)
        for (size_t i = 0; i < sizeof ms / 8; i++)
            for (size_t j = 0; j < sizeof ms / 8; j++)
                for (size_t p = 0; p < sizeof ks / 8; p++) {
                    double alpha = p % 3 ? 1.0 : -0.75;
                    double beta = (i + j + p) % 3 == 0 ? 0 : (i + p) % 2 ? 1.0 : 0.5;
                    CHECK(check_nt(dt ? LTC_F64 : LTC_F32, false, ms[i], ms[j], ks[p], alpha,
                                   beta));
                }
    /* the shapes the rule sends here, through the entry, and some it does not */
    bool v4 = ltc_cpu_gemm_thin_nt(256, 10, 128); /* only with AVX-512 */
    CHECK(v4 == ltc_cpu_gemm_thin_nt(10, 256, 128) && v4 == ltc_cpu_gemm_thin_nt(1024, 3, 208));
    CHECK(!ltc_cpu_gemm_thin_nt(256, 3, 128));
    CHECK(!ltc_cpu_gemm_thin_nt(1024, 3, 200) && !ltc_cpu_gemm_thin_nt(256, 10, 129));
    CHECK(!ltc_cpu_gemm_thin_nt(256, 1, 128) && !ltc_cpu_gemm_thin_nt(64, 10, 128));
    CHECK(!ltc_cpu_gemm_thin_nt(256, 10, 64) && !ltc_cpu_gemm_thin_nt(256, 16, 128));
    CHECK(!ltc_cpu_gemm_thin_nt(4096, 12, 128));
    static const int64_t big[][3] = {{256, 10, 128}, {10, 256, 131}, {1025, 3, 129},
                                     {257, 7, 512}, {255, 6, 128}, {256, 1, 128},
                                     {10, 255, 144}, {257, 7, 500}};
    for (int dt = 0; dt < 2; dt++)
        for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
            CHECK(check_nt(dt ? LTC_F64 : LTC_F32, true, big[i][0], big[i][1], big[i][2], 1, 0));
            CHECK(check_nt(dt ? LTC_F64 : LTC_F32, true, big[i][0], big[i][1], big[i][2], 0.5, 1));
        }
}

int main(void) {
    run("elementwise adds a 0-d scalar on either side", t_ew_scalar);
    run("elementwise broadcasts a row, a column and an outer sum", t_ew_row_col);
    run("elementwise: 3-d, three inputs, bool output, 0-size", t_ew_3d_three_inputs);
    run("zeros, ones, full (unpromoted fill value converted)", t_creation);
    run("arange values", t_arange);
    run("rand lies in [0, 1) with mean near 0.5", t_rand);
    run("randn has mean near 0 and variance near 1", t_randn);
    run("sum over all, along dims, of ints and bools, of nothing", t_sum);
    run("mean over all, along a dim, of nothing (NaN)", t_mean);
    run("max propagates NaN; int max; empty is an error", t_max);
    run("max.dim: first index on ties, NaN wins", t_max_dim);
    run("argmax flattened and along dims, 1-based, NaN largest", t_argmax);
    run("matmul 2x3 by 3x2, dot, 1-d cases, zero k", t_matmul_2d);
    run("matmul batched with broadcast batch dims", t_matmul_batched);
    run("transpose of a 2x3, t, 3-d tiled transpose", t_transpose);
    run("view and reshape copy the bytes", t_view);
    run("narrow and select with negative indices", t_narrow_select);
    run("gemm splits rows and loops over what 32-bit blasint cannot address",
        t_gemm_beyond_blasint);
    run("thin A . B^T kernel against a double sum: sizes 0..17, strides, alpha, beta",
        t_gemm_nt);
    run("to truncates toward zero, ->bool is x != 0", t_to);
    run("softmax rows sum to 1; log_softmax; along dim 0", t_softmax);
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
