/* threads.c - the worker pool behind ltc_cpu_parallel_for, and OpenBLAS's thread count. */
#include "threads.h"

#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#include "ltc.h"

#define MAX_THREADS 256

int ltc_cpu_threads(void) {
    static int cores;
    int64_t n = ltc_config_get_int("LTC_NUM_THREADS");
    if (n > 0) return n > MAX_THREADS ? MAX_THREADS : (int)n;
    if (!cores) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        cores = c < 1 ? 1 : c > MAX_THREADS ? MAX_THREADS : (int)c;
    }
    return cores;
}

/* OpenBLAS's DYNAMIC_ARCH builds choose their kernels by CPU model; a model they do not know
 * (a newer CPU, or a virtual machine's generic one) falls back to "Prescott" (SSE3): a GEMM
 * four times slower than the AVX-512 kernels on a machine that has them. Then the kernels
 * are chosen again by the CPU's features, as OPENBLAS_CORETYPE would (which, when set,
 * is left alone). Runs once, before ltc's first BLAS call. */
char *openblas_get_corename(void);
void gotoblas_dynamic_init(void);
void gotoblas_dynamic_quit(void);

static void blas_pick_core(void) {
    const char *name = openblas_get_corename();
    if (getenv("OPENBLAS_CORETYPE") || !name || strcasecmp(name, "prescott") != 0) return;
    __builtin_cpu_init();
    const char *want = NULL;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        want = "SkylakeX";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        want = "Haswell";
    else if (__builtin_cpu_supports("avx"))
        want = "Sandybridge";
    if (!want || setenv("OPENBLAS_CORETYPE", want, 0)) return;
    gotoblas_dynamic_quit();
    gotoblas_dynamic_init(); /* reads OPENBLAS_CORETYPE */
    unsetenv("OPENBLAS_CORETYPE");
}

const char *ltc_cpu_blas_core(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, blas_pick_core);
    return openblas_get_corename();
}

static _Atomic int blas_set; /* the thread count last given to OpenBLAS (0: none yet) */

static void blas_set_threads(int n) {
    ltc_cpu_blas_core();
    if (atomic_load_explicit(&blas_set, memory_order_relaxed) == n) return;
    atomic_store(&blas_set, n);
    openblas_set_num_threads(n);
}

void ltc_cpu_blas_threads(void) { blas_set_threads(ltc_cpu_threads()); }

void ltc_cpu_blas_single(bool single) { blas_set_threads(single ? 1 : ltc_cpu_threads()); }

/* ---- the pool ------------------------------------------------------------------------------ */

/* One parallel_for at a time owns the pool (`busy`); its job is published under `mu` with a
 * new generation, workers take chunks from `next` and report on `done_cv` when finished. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv;
    int n_workers;           /* threads started (they never exit) */
    uint64_t generation;
    int active;              /* workers taking part in the current job */
    int finished;            /* of those, how many are done */
    ltc_cpu_range_fn fn;
    void *ctx;
    int64_t n, grain;
    _Atomic int64_t next;    /* the next chunk's first item */
    _Atomic bool busy;
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .work_cv = PTHREAD_COND_INITIALIZER,
          .done_cv = PTHREAD_COND_INITIALIZER};

static void run_chunks(int tid) {
    for (;;) {
        int64_t lo = atomic_fetch_add_explicit(&pool.next, pool.grain, memory_order_relaxed);
        if (lo >= pool.n) break;
        int64_t hi = lo + pool.grain < pool.n ? lo + pool.grain : pool.n;
        pool.fn(pool.ctx, lo, hi, tid);
    }
}

static void *worker(void *arg) {
    int tid = (int)(intptr_t)arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        while (pool.generation == seen) pthread_cond_wait(&pool.work_cv, &pool.mu);
        seen = pool.generation;
        if (tid > pool.active) continue; /* not needed for this job */
        pthread_mutex_unlock(&pool.mu);
        run_chunks(tid);
        pthread_mutex_lock(&pool.mu);
        if (++pool.finished == pool.active) pthread_cond_signal(&pool.done_cv);
    }
    return NULL;
}

/* Starts workers up to `want` (1-based thread ids); returns how many exist. */
static int grow(int want) {
    while (pool.n_workers < want) {
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&t, &at, worker, (void *)(intptr_t)(pool.n_workers + 1));
        pthread_attr_destroy(&at);
        if (rc) break;
        pool.n_workers++;
    }
    return pool.n_workers;
}

void ltc_cpu_parallel_for(int64_t n, int64_t grain, ltc_cpu_range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    int threads = n > grain ? ltc_cpu_threads() : 1;
    bool expected = false;
    if (threads <= 1 || !atomic_compare_exchange_strong(&pool.busy, &expected, true)) {
        fn(ctx, 0, n, 0);
        return;
    }
    int64_t chunks = (n + grain - 1) / grain;
    int want = (int)(chunks < threads ? chunks : threads) - 1;
    pthread_mutex_lock(&pool.mu);
    if (grow(want) < want) want = pool.n_workers;
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    pool.grain = grain;
    atomic_store(&pool.next, 0);
    pool.active = want;
    pool.finished = 0;
    if (want > 0) {
        pool.generation++;
        pthread_cond_broadcast(&pool.work_cv);
    }
    pthread_mutex_unlock(&pool.mu);
    run_chunks(0);
    pthread_mutex_lock(&pool.mu);
    while (pool.finished < pool.active) pthread_cond_wait(&pool.done_cv, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
    atomic_store(&pool.busy, false);
}
