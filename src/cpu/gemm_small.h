/* gemm_small.h - ltc_cpu_gemm's own kernel for the thin products OpenBLAS computes slowly
 * (gemm_small.c). */
#ifndef LTC_CPU_GEMM_SMALL_H
#define LTC_CPU_GEMM_SMALL_H

#include <stdbool.h>
#include <stdint.h>

/* Whether C[m,n] = A[m,k] . B[n,k]^T goes to ltc_cpu_gemm_nt rather than OpenBLAS: on a
 * CPU with AVX-512 only (x86-64-v4: on AVX2 the kernel loses 3-6x); the smaller of m and n
 * in 2..12; k >= 128 and a multiple of 16 (whole vectors: the scalar
 * tail of k is slow, 256x10x136 takes 42 us here and 20 us in OpenBLAS); the larger of m
 * and n >= 1024, or >= 256 when the smaller is >= 6; fewer than LTC_GEMM_SMALL
 * multiply-adds (OpenBLAS goes multi-threaded from there).
 * Measured on this machine (AMD EPYC with AVX-512, OpenBLAS 0.3.21 Cooperlake kernels, one
 * thread, CPU time, best of 5), cblas_sgemm against this kernel: 256x10x128 13.5-14.5 us
 * and 11.4-12.9 us; 256x6x128 13.2 and 10.4; 256x8x512 43 and 22; 1024x3x128 38 and 18;
 * 10x256x512 56 and 33; 12x2048x128 140 and 131. float64 against cblas_dgemm: 256x10x128
 * 34 and 21 us, 1024x3x128 100 and 31. Outside the rule OpenBLAS wins or ties: n = 1
 * (0.3-0.6x here), m and n both small (64x10x128: 0.67x), k = 64 (0.6-1.0x), a side of 16
 * (0.64-1.2x), and every untransposed or A-transposed layout (OpenBLAS at 75-100 GFLOP/s,
 * which plain loops matched at best). */
bool ltc_cpu_gemm_thin_nt(int64_t m, int64_t n, int64_t k);

/* Row-major C[m,n] = alpha * A . B^T + beta * C, A [m,k] and B [n,k] with row strides lda
 * and ldb, float32 when dt is LTC_F32, else float64, on the calling thread; beta 0 never
 * reads C. Any m, n, k >= 0. */
void ltc_cpu_gemm_nt(int dt, int64_t m, int64_t n, int64_t k, double alpha, const void *A,
                     int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc);

#endif
