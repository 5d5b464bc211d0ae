/* threads.c - the worker pool behind ltc_cpu_parallel_for, and OpenBLAS's thread count. */
#include "threads.h"

#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "ltc.h"

#define MAX_THREADS 256

int ltc_cpu_threads(void) {
    static int cores;
    static int64_t *slot;
    if (!slot) slot = ltc_config_slot("LTC_NUM_THREADS");
    int64_t n = *slot;
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

/* OpenBLAS's thread count as last set by ltc (0: not yet); setting it costs ~4 ns. */
static _Atomic int blas_set;

static void blas_use(int n) {
    if (atomic_load_explicit(&blas_set, memory_order_relaxed) == n) return;
    atomic_store(&blas_set, n);
    openblas_set_num_threads(n);
}

static _Atomic bool blas_single; /* inside ltc_cpu_blas_single(true) ... (false) */

void ltc_cpu_blas_single(bool single) {
    ltc_cpu_blas_core();
    atomic_store(&blas_single, single);
    blas_use(single ? 1 : ltc_cpu_threads());
}

/* ---- the pool ------------------------------------------------------------------------------ */

/* One parallel_for at a time owns the pool (`busy`). The caller publishes the job's fields,
 * then bumps `generation` under `mu`; workers take chunks from `next` and count themselves
 * in `finished`. Waking a sleeping thread costs 10-25 us here (a futex round trip, more when
 * the other core is busy), as much as a whole small kernel, so a worker that finished a job
 * first spins for SPIN_NS watching `generation` (the next kernel of a plan usually follows
 * within microseconds) and only then sleeps on `work_cv`; the caller likewise spins before
 * sleeping on `done_cv`. */
#define SPIN_NS 50000

static struct {
    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv;
    int n_workers;           /* threads started (they never exit); under mu */
    int sleepers;            /* workers waiting on work_cv; under mu */
    _Atomic uint64_t generation;
    int active;              /* workers taking part in the current job */
    _Atomic int finished;    /* of those, how many are done */
    ltc_cpu_range_fn fn;
    void *ctx;
    int64_t n, grain;
    _Atomic int64_t next;    /* the next chunk's first item */
    _Atomic bool busy;
    _Atomic bool quiet;      /* spinning workers go to sleep now: OpenBLAS's threads need
                              * the cores (a multi-threaded GEMM is about to run) */
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .work_cv = PTHREAD_COND_INITIALIZER,
          .done_cv = PTHREAD_COND_INITIALIZER};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Spins up to SPIN_NS until done(arg) holds; false if it still does not, or at once when
 * the pool is told to be quiet. */
static bool spin_until(bool (*done)(void *), void *arg) {
    uint64_t t0 = 0;
    for (unsigned i = 0;; i++) {
        if (done(arg)) return true;
        if (atomic_load_explicit(&pool.quiet, memory_order_relaxed)) return false;
        cpu_relax();
        if ((i & 63) == 63) {
            uint64_t t = now_ns();
            if (!t0) t0 = t;
            else if (t - t0 > SPIN_NS) return false;
        }
    }
}

static void run_chunks(int tid) {
    for (;;) {
        int64_t lo = atomic_fetch_add_explicit(&pool.next, pool.grain, memory_order_relaxed);
        if (lo >= pool.n) break;
        int64_t hi = lo + pool.grain < pool.n ? lo + pool.grain : pool.n;
        pool.fn(pool.ctx, lo, hi, tid);
    }
}

static bool new_generation(void *seen) {
    if (atomic_load_explicit(&pool.quiet, memory_order_relaxed)) return false;
    return atomic_load_explicit(&pool.generation, memory_order_acquire) != *(uint64_t *)seen;
}

static bool all_finished(void *unused) {
    (void)unused;
    return atomic_load_explicit(&pool.finished, memory_order_acquire) >= pool.active;
}

static void *worker(void *arg) {
    int tid = (int)(intptr_t)arg;
    uint64_t seen = 0;
    for (;;) {
        if (!spin_until(new_generation, &seen)) {
            pthread_mutex_lock(&pool.mu);
            pool.sleepers++;
            while (atomic_load(&pool.generation) == seen) pthread_cond_wait(&pool.work_cv, &pool.mu);
            pool.sleepers--;
            pthread_mutex_unlock(&pool.mu);
        }
        seen = atomic_load_explicit(&pool.generation, memory_order_acquire);
        if (tid > pool.active) continue; /* not needed for this job */
        run_chunks(tid);
        if (atomic_fetch_add_explicit(&pool.finished, 1, memory_order_acq_rel) + 1 == pool.active) {
            pthread_mutex_lock(&pool.mu);
            pthread_cond_signal(&pool.done_cv);
            pthread_mutex_unlock(&pool.mu);
        }
    }
    return NULL;
}

/* Starts workers up to `want` (1-based thread ids); returns how many exist. Under mu. */
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
    int threads = n >= LTC_PAR_MIN_CHUNKS * grain ? ltc_cpu_threads() : 1;
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
    atomic_store(&pool.finished, 0);
    atomic_store(&pool.quiet, false);
    if (want > 0) {
        atomic_fetch_add_explicit(&pool.generation, 1, memory_order_release);
        if (pool.sleepers) pthread_cond_broadcast(&pool.work_cv);
    }
    pthread_mutex_unlock(&pool.mu);
    run_chunks(0);
    if (!spin_until(all_finished, NULL)) {
        pthread_mutex_lock(&pool.mu);
        while (atomic_load(&pool.finished) < pool.active) pthread_cond_wait(&pool.done_cv, &pool.mu);
        pthread_mutex_unlock(&pool.mu);
    }
    atomic_store(&pool.busy, false);
}

/* ---- BLAS calls ------------------------------------------------------------------------------ */

void ltc_cpu_blas_prepare(int64_t macs) {
    ltc_cpu_blas_core();
    static int64_t *deterministic;
    if (!deterministic) deterministic = ltc_config_slot("LTC_DETERMINISTIC");
    /* LTC_DETERMINISTIC: one OpenBLAS thread, so the bits do not depend on the thread count
     * (OpenBLAS splits a GEMM's sums differently by thread count) */
    int threads = macs < LTC_GEMM_SMALL || atomic_load(&blas_single) || *deterministic
                      ? 1 : ltc_cpu_threads();
    if (threads > 1) atomic_store(&pool.quiet, true); /* our spinning workers make way */
    blas_use(threads);
}
