/*
 * threads.h - the CPU backend's worker threads: a pool sized by LTC_NUM_THREADS (default:
 * the number of online cores) that splits large kernels into chunks; small ones stay on the
 * calling thread. OpenBLAS's own thread count is set per GEMM (ltc_cpu_gemm): one thread for
 * a small product, LTC_NUM_THREADS for a large one, never both pools on the cores at once.
 */
#ifndef LTC_CPU_THREADS_H
#define LTC_CPU_THREADS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* The number of threads large kernels use (LTC_NUM_THREADS, or the cores when it is 0). */
int ltc_cpu_threads(void);

/* The name of the kernels OpenBLAS uses ("SkylakeX", "Haswell", ...). The first call (or
 * the first BLAS call through ltc_cpu_gemm or ltc_cpu_blas_single) replaces the "Prescott" fallback that OpenBLAS takes
 * on a CPU model it does not know by the kernels the CPU's features allow, unless
 * OPENBLAS_CORETYPE is set. */
const char *ltc_cpu_blas_core(void);

/* Row-major C[m,n] = alpha * op(A) . op(B) + beta * C over cblas_sgemm (dt LTC_F32) or
 * cblas_dgemm (LTC_F64), op(X) = X^T when ta/tb; lda, ldb, ldc are the row strides in
 * elements of A, B, C as stored. The one GEMM entry of the CPU kernels: a small product
 * (m*n*k below LTC_GEMM_SMALL) runs on one OpenBLAS thread, a larger one on
 * ltc_cpu_threads() (on one inside ltc_cpu_blas_single(true)). Measured on this 2-core
 * machine, quiet: 256x128x64 (2.1M multiply-adds) takes 33 us on one OpenBLAS thread and
 * 40 us on two; 256x256x64 (4.2M) 65 us and 56 us; 256x256x128 119 us and 88 us. Under load
 * two threads lose more (41-160 us for the first). */
#define LTC_GEMM_SMALL ((int64_t)1 << 22)
/* From this many multiply-adds, linear and linear_backward share a product's row blocks out
 * to the pool's threads, each block on one OpenBLAS thread (see linear.c). Not lower:
 * mlp-step's 256x10x128 forward (327K) took 9-12 us split against 15 on one thread while
 * a core was free, but 34 against 20.5 with both cores loaded, where the timing (below)
 * still chose to split it, and its backward lost either way (22.6 against 17). */
#define LTC_GEMM_SPLIT ((int64_t)1 << 20)
void ltc_cpu_gemm(int dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
                  const void *A, int64_t lda, const void *B, int64_t ldb, double beta, void *C,
                  int64_t ldc);
/* The largest m, n, k or leading dim one BLAS call addresses (blasint: 2^31-1 in a 32-bit
 * OpenBLAS interface). ltc_cpu_gemm splits a larger m into row blocks and computes a larger
 * n, k or leading dim in plain loops instead of truncating it; the 1-d dot product of
 * matmul splits k. A variable only so that kernels_test can lower it. */
extern int64_t ltc_cpu_blas_max;

/* With `single`, OpenBLAS runs each call on the calling thread alone; without, it goes back
 * to ltc_cpu_threads(). For a kernel that splits its work among the pool's threads, each of
 * which calls BLAS on its share: threaded calls from several threads at once would compete
 * for the same cores. Call with true before the parallel_for and with false after it. Other
 * threads' BLAS calls meanwhile run single-threaded too (a slowdown, not an error). */
void ltc_cpu_blas_single(bool single);

/* Before a BLAS call of `macs` multiply-adds (m*n*k for a GEMM): sets OpenBLAS's thread
 * count as ltc_cpu_gemm's comment says, and sends spinning pool workers to sleep when
 * OpenBLAS will use several threads. ltc_cpu_gemm (gemm.c) calls it. */
void ltc_cpu_blas_prepare(int64_t macs);

/* fn(ctx, lo, hi, tid) computes items [lo, hi) on thread tid (0 <= tid < ltc_cpu_threads();
 * the caller is thread 0). */
typedef void (*ltc_cpu_range_fn)(void *ctx, int64_t lo, int64_t hi, int tid);

/* Runs fn over [0, n) in chunks of `grain` items (the last may be shorter), handed out
 * dynamically to the pool's threads and the caller; returns when all are done. Runs on the
 * caller alone, as one call fn(ctx, 0, n, 0), when there are fewer than LTC_PAR_MIN_CHUNKS
 * chunks, when there is one thread, or when the pool is busy (another thread's kernel, or a
 * call from inside fn). Callers size a chunk at about 64K elements of work, so a kernel
 * goes parallel from about 256K elements: below that, waking a worker (10-25 us on this
 * 2-core machine, more when the other core is busy) costs as much as it saves (a
 * 256x128 float32 relu: 6 us on one thread, 17-43 us on two). */
#define LTC_PAR_MIN_CHUNKS 4

/* A timed choice between running a kernel on the calling thread and sharing it out among
 * the pool's threads, for kernels whose values are the same either way (in bits, or within
 * rounding for a GEMM as row blocks: linear.c). Two cores run two halves of a GEMM in
 * 55-60% of one's time when both are free, but when other processes hold the cores a worker
 * may not run for milliseconds, and splitting took 1.3-1.8x one thread's time (measured on
 * this shared 2-core machine). So each kind of call (`key`: the kernel and its sizes) is
 * timed both ways as it runs and takes the faster on average, trying the other way again
 * every LTC_SPLIT_PROBE calls (every 4 x LTC_SPLIT_PROBE when it was more than 1.5x slower). Begin returns whether this call splits; end records its
 * time. After a split on a quiet machine the workers linger (spin) for the next one, and a
 * split that had to wake them is timed again on the next call (threads.c). LTC_GEMM_SPLIT
 * 0 or 1 fixes the answer (never, always). */
#define LTC_SPLIT_PROBE 16
typedef struct {
    void *slot;
    bool split, retried;
    unsigned wakes;
    uint64_t t0;
} ltc_cpu_split_t;
bool ltc_cpu_split_begin(ltc_cpu_split_t *s, uint64_t key);
void ltc_cpu_split_end(ltc_cpu_split_t *s);

/* The same choice for a whole computation, made per run of it: its timed calls either each
 * choose as above (way 0) or all split (way 1), and each way's run time is timed as for one
 * call (a running mean, the losing way tried every LTC_SPLIT_PROBE runs). One call's time
 * misses what it does to the next: a call that does not split lets the workers go to sleep,
 * and the next split pays for waking them. tiny_gpt's step took 50.8-53.8 ms with every
 * split forced and 56.7-63.3 ms with each call timed alone, alternated on a quiet machine.
 * Begin before a computation's first kernel, end after its last (ok: it ran to the end);
 * a computation that made no timed call in its first run is left alone after it. The
 * struct starts zeroed and lives with the computation; races between threads running the
 * same computation only blur its figures. */
typedef struct {
    _Atomic uint64_t ns[2]; /* each way's running mean time (ns): threads.c's mean_add */
    _Atomic uint32_t n[2];  /* and its samples */
} ltc_cpu_split_ways;
typedef struct {
    ltc_cpu_split_ways ways;
    _Atomic uint32_t runs;
    _Atomic bool off;
} ltc_cpu_split_plan;
typedef struct {
    int way, saved; /* way -1: untimed */
    unsigned calls;
    uint64_t t0;
} ltc_cpu_split_run;
void ltc_cpu_split_plan_begin(ltc_cpu_split_plan *p, ltc_cpu_split_run *r);
void ltc_cpu_split_plan_end(ltc_cpu_split_plan *p, ltc_cpu_split_run *r, bool ok);
void ltc_cpu_parallel_for(int64_t n, int64_t grain, ltc_cpu_range_fn fn, void *ctx);

/* Runs n independent tasks fn(ctx, t, t + 1, tid), t in [0, n), handed out one at a time
 * to the pool's threads and the caller, going parallel from 2 tasks (not
 * LTC_PAR_MIN_CHUNKS): for a few big tasks, such as a GEMM's row blocks, one per thread
 * (linear.c), where more and smaller blocks would each pay OpenBLAS's packing again. As
 * ltc_cpu_parallel_for otherwise: a task may see (ctx, lo, hi) with several tasks when the
 * caller runs them alone. */
void ltc_cpu_parallel_tasks(int64_t n, ltc_cpu_range_fn fn, void *ctx);

#endif
