/*
 * threads.h - the CPU backend's worker threads: a pool sized by LTC_NUM_THREADS (default:
 * the number of online cores) that splits large kernels into chunks; small ones stay on the
 * calling thread. OpenBLAS's own thread count is set to the same number.
 */
#ifndef LTC_CPU_THREADS_H
#define LTC_CPU_THREADS_H

#include <stdbool.h>
#include <stdint.h>

/* The number of threads large kernels use (LTC_NUM_THREADS, or the cores when it is 0). */
int ltc_cpu_threads(void);

/* The name of the kernels OpenBLAS uses ("SkylakeX", "Haswell", ...). The first call (or
 * the first of ltc_cpu_blas_threads) replaces the "Prescott" fallback that OpenBLAS takes
 * on a CPU model it does not know by the kernels the CPU's features allow, unless
 * OPENBLAS_CORETYPE is set. */
const char *ltc_cpu_blas_core(void);

/* Sets OpenBLAS's thread count to ltc_cpu_threads() if it changed since the last call
 * (cheap: call it before each BLAS call). */
void ltc_cpu_blas_threads(void);

/* With `single`, OpenBLAS runs each call on the calling thread alone; without, it goes back
 * to ltc_cpu_threads(). For a kernel that splits its work among the pool's threads, each of
 * which calls BLAS on its share: threaded calls from several threads at once would compete
 * for the same cores. Call with true before the parallel_for and with false after it. Other
 * threads' BLAS calls meanwhile run single-threaded too (a slowdown, not an error). */
void ltc_cpu_blas_single(bool single);

/* fn(ctx, lo, hi, tid) computes items [lo, hi) on thread tid (0 <= tid < ltc_cpu_threads();
 * the caller is thread 0). */
typedef void (*ltc_cpu_range_fn)(void *ctx, int64_t lo, int64_t hi, int tid);

/* Runs fn over [0, n) in chunks of `grain` items (the last may be shorter), handed out
 * dynamically to the pool's threads and the caller; returns when all are done. Runs on the
 * caller alone, as one call fn(ctx, 0, n, 0), when n <= grain, when there is one thread,
 * or when the pool is busy (another thread's kernel, or a call from inside fn). */
void ltc_cpu_parallel_for(int64_t n, int64_t grain, ltc_cpu_range_fn fn, void *ctx);

#endif
