/* gemm_small.c - the products OpenBLAS computes slowly: A . B^T (A [m,k] and B [n,k] both
 * contiguous along k, as in linear's self . weight^T) when m or n is thin (2..12). OpenBLAS
 * (0.3.21, Cooperlake kernels) reaches 18-50 GFLOP/s on such a product, against 80-100 for
 * the same shapes untransposed (see gemm_small.h for the rule and the figures).
 * Here each element of C is a dot product along k: 4 rows x 4 columns of C at once, 16
 * vector accumulators (64-byte GCC vectors: one zmm on x86-64-v4, two ymm on v3) that
 * reduce as a fixed tree, compiled per x86-64 level (LTC_EW_CLONES). Every element is the
 * same sum wherever its block starts and runs on the calling thread, so the bits do not
 * depend on the thread count (they do depend on the x86-64 level, as the other kernels'). */
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
/* -std=c11 turns off a * b + c contraction into FMA; these loops want it */
#pragma GCC optimize("fp-contract=fast")
/* the vector helpers below are always inlined: no vector crosses a call */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

#include "elementwise.h"
#include "gemm_small.h"
#include "threads.h"

/* C(r, c) at C[r * cr + c * cc] = alpha * acc + beta * C(r, c); beta 0 never reads C. */
#define STORE(T, C, cr, cc, r, c, acc)                                                         \
    do {                                                                                       \
        T *c_ = (C) + (r) * (cr) + (c) * (cc);                                                 \
        *c_ = beta == 0 ? alpha * (acc) : alpha * (acc) + beta * *c_;                          \
    } while (0)

typedef float vf32 __attribute__((vector_size(64)));
typedef float vf32h __attribute__((vector_size(32)));
typedef float vf32q __attribute__((vector_size(16)));
typedef double vf64 __attribute__((vector_size(64)));
typedef double vf64h __attribute__((vector_size(32)));

#define SH __builtin_shufflevector
/* The lanes of each of a0..a3 summed (a tree, the same for every block), as lanes 0..3. */
static inline __attribute__((always_inline)) vf32q hsum4_f32(const vf32 *a) {
    vf32 a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    vf32h h0 = SH(a0, a0, 0, 1, 2, 3, 4, 5, 6, 7) + SH(a0, a0, 8, 9, 10, 11, 12, 13, 14, 15);
    vf32h h1 = SH(a1, a1, 0, 1, 2, 3, 4, 5, 6, 7) + SH(a1, a1, 8, 9, 10, 11, 12, 13, 14, 15);
    vf32h h2 = SH(a2, a2, 0, 1, 2, 3, 4, 5, 6, 7) + SH(a2, a2, 8, 9, 10, 11, 12, 13, 14, 15);
    vf32h h3 = SH(a3, a3, 0, 1, 2, 3, 4, 5, 6, 7) + SH(a3, a3, 8, 9, 10, 11, 12, 13, 14, 15);
    vf32h u01 = SH(h0, h1, 0, 1, 2, 3, 8, 9, 10, 11) + SH(h0, h1, 4, 5, 6, 7, 12, 13, 14, 15);
    vf32h u23 = SH(h2, h3, 0, 1, 2, 3, 8, 9, 10, 11) + SH(h2, h3, 4, 5, 6, 7, 12, 13, 14, 15);
    vf32h v = SH(u01, u23, 0, 1, 8, 9, 4, 5, 12, 13) + SH(u01, u23, 2, 3, 10, 11, 6, 7, 14, 15);
    return SH(v, v, 0, 4, 2, 6) + SH(v, v, 1, 5, 3, 7);
}
static inline __attribute__((always_inline)) vf64h hsum4_f64(const vf64 *a) {
    vf64 a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    vf64h h0 = SH(a0, a0, 0, 1, 2, 3) + SH(a0, a0, 4, 5, 6, 7);
    vf64h h1 = SH(a1, a1, 0, 1, 2, 3) + SH(a1, a1, 4, 5, 6, 7);
    vf64h h2 = SH(a2, a2, 0, 1, 2, 3) + SH(a2, a2, 4, 5, 6, 7);
    vf64h h3 = SH(a3, a3, 0, 1, 2, 3) + SH(a3, a3, 4, 5, 6, 7);
    vf64h u01 = SH(h0, h1, 0, 1, 4, 5) + SH(h0, h1, 2, 3, 6, 7);
    vf64h u23 = SH(h2, h3, 0, 1, 4, 5) + SH(h2, h3, 2, 3, 6, 7);
    return SH(u01, u23, 0, 2, 4, 6) + SH(u01, u23, 1, 3, 5, 7);
}

#define DEF_DOTS(NAME, T, VEC, VW, SUMS, HSUM4)                                                \
    LTC_EW_CLONES static void NAME(int64_t rows, int64_t cols, int64_t k, T alpha,             \
                                   const T *X, int64_t ldx, const T *Y, int64_t ldy,           \
                                   T beta, T *C, int64_t ldc) {                                \
        int64_t kv = k - k % VW, nr = (rows + 3) / 4, nc = (cols + 3) / 4;                     \
        /* blocks along the longer side inner: the shorter side's rows stay in cache */        \
        for (int64_t blk = 0; blk < nr * nc; blk++) {                                          \
            int64_t r = 4 * (rows <= cols ? blk % nr : blk / nc);                              \
            int64_t c = 4 * (rows <= cols ? blk / nr : blk % nc);                              \
            int64_t rb = rows - r < 4 ? rows - r : 4, cb = cols - c < 4 ? cols - c : 4;        \
            const T *x[4];                                                                     \
            for (int i = 0; i < 4; i++)                                                        \
                x[i] = X + (r + (i < rb ? i : 0)) * ldx;                                       \
            {                                                                                  \
                const T *y[4];                                                                 \
                for (int q = 0; q < 4; q++)                                                    \
                    y[q] = Y + (c + (q < cb ? q : 0)) * ldy;                                   \
                VEC z = {0}, a0 = z, a1 = z, a2 = z, a3 = z, b0 = z, b1 = z, b2 = z, b3 = z;   \
                VEC c0 = z, c1 = z, c2 = z, c3 = z, d0 = z, d1 = z, d2 = z, d3 = z;            \
                for (int64_t p = 0; p < kv; p += VW) {                                         \
                    VEC u0, u1, u2, u3, v0, v1, v2, v3;                                        \
                    memcpy(&u0, x[0] + p, sizeof u0), memcpy(&u1, x[1] + p, sizeof u1);        \
                    memcpy(&u2, x[2] + p, sizeof u2), memcpy(&u3, x[3] + p, sizeof u3);        \
                    memcpy(&v0, y[0] + p, sizeof v0), memcpy(&v1, y[1] + p, sizeof v1);        \
                    memcpy(&v2, y[2] + p, sizeof v2), memcpy(&v3, y[3] + p, sizeof v3);        \
                    a0 += u0 * v0, a1 += u0 * v1, a2 += u0 * v2, a3 += u0 * v3;                \
                    b0 += u1 * v0, b1 += u1 * v1, b2 += u1 * v2, b3 += u1 * v3;                \
                    c0 += u2 * v0, c1 += u2 * v1, c2 += u2 * v2, c3 += u2 * v3;                \
                    d0 += u3 * v0, d1 += u3 * v1, d2 += u3 * v2, d3 += u3 * v3;                \
                }                                                                              \
                VEC acc[4][4] = {{a0, a1, a2, a3}, {b0, b1, b2, b3}, {c0, c1, c2, c3},         \
                                 {d0, d1, d2, d3}};                                            \
                SUMS sv[4] = {HSUM4(acc[0]), HSUM4(acc[1]), HSUM4(acc[2]), HSUM4(acc[3])};     \
                T s[4][4];                                                                     \
                memcpy(s, sv, sizeof s);                                                       \
                for (int64_t p = kv; p < k; p++)                                               \
                    for (int i = 0; i < 4; i++)                                                \
                        for (int q = 0; q < 4; q++)                                            \
                            s[i][q] += x[i][p] * y[q][p];                                      \
                for (int64_t i = 0; i < rb; i++)                                               \
                    for (int64_t q = 0; q < cb; q++)                                           \
                        STORE(T, C, ldc, 1, r + i, c + q, s[i][q]);                            \
            }                                                                                  \
        }                                                                                      \
    }

DEF_DOTS(dots_f32, float, vf32, 16, vf32q, hsum4_f32)
DEF_DOTS(dots_f64, double, vf64, 8, vf64h, hsum4_f64)

/* The 16 accumulators fit the 32 vector registers of AVX-512 only: on AVX2 (16 registers)
 * they spill and the kernel took 3-6x OpenBLAS's time (x86-64-v3 build, Haswell kernels). */
bool ltc_cpu_gemm_thin_nt(int64_t m, int64_t n, int64_t k) {
    int64_t s = m < n ? m : n, l = m < n ? n : m;
    return ltc_cpu_has_v4() && k >= 128 && k % 16 == 0 && s >= 2 && s <= 12 &&
           (l >= 1024 || (s >= 6 && l >= 256)) && m * n * k < LTC_GEMM_SMALL;
}

void ltc_cpu_gemm_nt(int dt, int64_t m, int64_t n, int64_t k, double alpha, const void *A,
                     int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc) {
    if (dt == LTC_F32)
        dots_f32(m, n, k, (float)alpha, A, lda, B, ldb, (float)beta, C, ldc);
    else
        dots_f64(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
