/* threads.c - the worker pool behind ltc_cpu_parallel_for, and OpenBLAS's thread count. */
#include "threads.h"

#include <cblas.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/resource.h>
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
 * then the job's word (below) and bumps `generation` under `mu`; workers claim chunks by
 * compare-and-swap on the word and count the chunks they finish in `done`. The caller runs
 * chunks too and then waits only for the chunks claimed by others: a worker that has not
 * woken up by the time the caller ran out of chunks is not waited for (on a loaded machine
 * it may not run for milliseconds) and finds the job over when it does wake.
 * Waking a sleeping thread costs 10-25 us here (a futex round trip, more when the other
 * core is busy), as much as a whole small kernel, so a worker that finished a job first
 * spins for SPIN_NS watching `generation` (the next kernel of a plan usually follows
 * within microseconds) and only then sleeps on `work_cv`; the caller likewise spins before
 * sleeping on `done_cv`.
 *
 * The job's word packs its generation tag (JOB_GEN bits), the next chunk to claim
 * (JOB_IDX bits), the job's chunk count (JOB_IDX bits) and its largest worker id (8 bits):
 * a claim succeeds only on the current job, and reads the job's fields after a claim, while
 * the caller waits for that chunk, so a late worker never runs a chunk of another job. */
#define SPIN_NS 50000
#define JOB_IDX 20
#define JOB_GEN (64 - 2 * JOB_IDX - 8)
#define JOB_MAX_CHUNKS (((int64_t)1 << JOB_IDX) - 1)
#define JOB_MASK(bits) (((uint64_t)1 << (bits)) - 1)

static uint64_t job_word(uint64_t gen, int64_t next, int64_t chunks, int active) {
    return (gen & JOB_MASK(JOB_GEN)) << (2 * JOB_IDX + 8) | (uint64_t)next << (JOB_IDX + 8) |
           (uint64_t)chunks << 8 | (uint64_t)active;
}
#define WORD_GEN(w) ((w) >> (2 * JOB_IDX + 8))
#define WORD_NEXT(w) ((int64_t)(((w) >> (JOB_IDX + 8)) & JOB_MASK(JOB_IDX)))
#define WORD_CHUNKS(w) ((int64_t)(((w) >> 8) & JOB_MASK(JOB_IDX)))
#define WORD_ACTIVE(w) ((int)((w) & 0xff))

static struct {
    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv;
    int n_workers;           /* threads started (they never exit); under mu */
    int sleepers;            /* workers waiting on work_cv; under mu */
    bool waiting;            /* the caller sleeps on done_cv; under mu */
    _Atomic uint64_t generation;
    _Atomic uint64_t word;   /* the current job: see above */
    _Atomic int64_t done;    /* chunks of the current job finished by workers */
    ltc_cpu_range_fn fn;
    void *ctx;
    int64_t n, grain;
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

/* Until when workers keep spinning past SPIN_NS (ns, now_ns): a timed split chose the
 * threads (ltc_cpu_split_begin), so another split call is likely soon, and waking a
 * sleeping worker costs the caller 10-15 us in the futex call and the worker 13-25 us more
 * before it runs (measured on this 2-core VM): a 2M multiply-add linear split over two
 * cores took 36 us with the worker spinning and 62 us when it had to be woken, against 52
 * on one thread. A lingering worker yields the core now and then (sched_yield), so a
 * thread that shares its core (ours or another process's) runs meanwhile. */
#define LINGER_NS 500000
static _Atomic uint64_t linger_until;
/* Workers linger only on a quiet machine: on the loaded one (other processes using 1.3
 * cores) a spinning worker took time from other work, our own caller included:
 * mlp-step's median went from about 200 to 340-410 us a step. Quiet: other processes used
 * less than a quarter of a core over the last QUIET_NS or more (/proc/stat's busy time
 * less this process's, from getrusage), read at most once per QUIET_NS by the thread that
 * splits. Where that cannot be read, workers never linger. */
#define QUIET_NS 200000000
static pthread_mutex_t quiet_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t quiet_next; /* when to read again */
static _Atomic bool machine_quiet;

/* The machine's busy and total jiffies (first line of /proc/stat); false if unreadable. */
static bool read_stat(uint64_t *busy, uint64_t *total) {
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return false;
    unsigned long long v[8] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                   &v[3], &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (n < 5) return false;
    *total = 0;
    for (int i = 0; i < 8; i++) *total += v[i];
    *busy = *total - v[3] - v[4]; /* less idle and iowait; steal counts as busy */
    return true;
}

static bool quiet_now(uint64_t now) {
    if (now < atomic_load_explicit(&quiet_next, memory_order_relaxed) ||
        pthread_mutex_trylock(&quiet_mu))
        return atomic_load_explicit(&machine_quiet, memory_order_relaxed);
    static uint64_t last_busy, last_total, last_self, last_at;
    static long tick_ns;
    if (!tick_ns) {
        long hz = sysconf(_SC_CLK_TCK);
        tick_ns = hz > 0 ? 1000000000 / hz : 10000000;
    }
    uint64_t busy, total, self;
    struct rusage ru;
    bool ok = read_stat(&busy, &total) && !getrusage(RUSAGE_SELF, &ru);
    self = ok ? ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
                    ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u
              : 0;
    bool quiet = false;
    if (ok && last_at) {
        double others = (double)(busy - last_busy) * (double)tick_ns - (double)(self - last_self);
        quiet = total > last_total && others < 0.25 * (double)(now - last_at);
    }
    if (ok) last_busy = busy, last_total = total, last_self = self, last_at = now;
    atomic_store_explicit(&machine_quiet, quiet, memory_order_relaxed);
    atomic_store_explicit(&quiet_next, now + QUIET_NS, memory_order_relaxed);
    pthread_mutex_unlock(&quiet_mu);
    return quiet;
}

/* And a lingering worker that the OS takes off its core (between two of its clock reads
 * more than PREEMPTED_NS pass, where 64 pauses take a microsecond or two) shares its core
 * with other work: workers do not linger for CONTENDED_NS after that. */
#define PREEMPTED_NS 100000
#define CONTENDED_NS 50000000
static _Atomic uint64_t contended_until;

/* Spins up to SPIN_NS (a worker with `linger`: up to linger_until if later) until
 * done(arg) holds; false if it still does not, or at once when the pool is told to be
 * quiet. */
static bool spin_until(bool (*done)(void *), void *arg, bool linger) {
    uint64_t t0 = 0, last = 0;
    for (unsigned i = 0;; i++) {
        if (done(arg)) return true;
        if (atomic_load_explicit(&pool.quiet, memory_order_relaxed)) return false;
        cpu_relax();
        if ((i & 63) == 63) {
            uint64_t t = now_ns();
            if (linger && last && t - last > PREEMPTED_NS)
                atomic_store_explicit(&contended_until, t + CONTENDED_NS, memory_order_relaxed);
            last = t;
            if (!t0) {
                t0 = t;
            } else if (t - t0 > SPIN_NS) {
                if (!linger || t > atomic_load_explicit(&linger_until, memory_order_relaxed) ||
                    t < atomic_load_explicit(&contended_until, memory_order_relaxed))
                    return false;
                if ((i & 1023) == 1023) sched_yield();
            }
        }
    }
}

/* Claims the next chunk of job `gen` for thread `tid`: its index, or -1 when the job is
 * over, out of chunks or not for tid. */
static int64_t claim(uint64_t gen, int tid) {
    uint64_t w = atomic_load_explicit(&pool.word, memory_order_acquire);
    for (;;) {
        int64_t next = WORD_NEXT(w);
        if (WORD_GEN(w) != (gen & JOB_MASK(JOB_GEN)) || next >= WORD_CHUNKS(w) ||
            tid > WORD_ACTIVE(w))
            return -1;
        uint64_t nw = w + ((uint64_t)1 << (JOB_IDX + 8));
        if (atomic_compare_exchange_weak_explicit(&pool.word, &w, nw, memory_order_acq_rel,
                                                  memory_order_acquire))
            return next;
    }
}

/* Runs the chunks of job `gen` that thread tid claims; returns how many. */
static int64_t run_chunks(uint64_t gen, int tid) {
    int64_t ran = 0;
    for (int64_t c; (c = claim(gen, tid)) >= 0; ran++) {
        int64_t lo = c * pool.grain;
        int64_t hi = lo + pool.grain < pool.n ? lo + pool.grain : pool.n;
        pool.fn(pool.ctx, lo, hi, tid);
    }
    return ran;
}

static bool new_generation(void *seen) {
    if (atomic_load_explicit(&pool.quiet, memory_order_relaxed)) return false;
    return atomic_load_explicit(&pool.generation, memory_order_acquire) != *(uint64_t *)seen;
}

static void *worker(void *arg) {
    int tid = (int)(intptr_t)arg;
    uint64_t seen = 0;
    for (;;) {
        if (!spin_until(new_generation, &seen, true)) {
            pthread_mutex_lock(&pool.mu);
            pool.sleepers++;
            while (atomic_load(&pool.generation) == seen) pthread_cond_wait(&pool.work_cv, &pool.mu);
            pool.sleepers--;
            pthread_mutex_unlock(&pool.mu);
        }
        seen = atomic_load_explicit(&pool.generation, memory_order_acquire);
        int64_t ran = run_chunks(seen, tid);
        if (ran) {
            /* after the add the job may be over and its caller gone: only the lock and the
             * flag are touched, both outlive jobs */
            atomic_fetch_add_explicit(&pool.done, ran, memory_order_acq_rel);
            pthread_mutex_lock(&pool.mu);
            if (pool.waiting) pthread_cond_signal(&pool.done_cv);
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

/* The caller's wait: every chunk claimed is finished (the caller's own count `mine`). */
static int64_t job_chunks, job_mine;
static _Thread_local unsigned split_wakes; /* parallel_for calls that woke sleeping workers */
static bool all_done(void *unused) {
    (void)unused;
    uint64_t w = atomic_load_explicit(&pool.word, memory_order_acquire);
    int64_t claimed = WORD_NEXT(w) < job_chunks ? WORD_NEXT(w) : job_chunks;
    return atomic_load_explicit(&pool.done, memory_order_acquire) + job_mine >= claimed;
}

/* ltc_cpu_parallel_for, going parallel from min_chunks chunks */
static void parallel_run(int64_t n, int64_t grain, int64_t min_chunks, ltc_cpu_range_fn fn,
                         void *ctx) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    int threads = n >= min_chunks * grain ? ltc_cpu_threads() : 1;
    bool expected = false;
    if (threads <= 1 || !atomic_compare_exchange_strong(&pool.busy, &expected, true)) {
        fn(ctx, 0, n, 0);
        return;
    }
    if ((n + grain - 1) / grain > JOB_MAX_CHUNKS) grain = (n + JOB_MAX_CHUNKS - 1) / JOB_MAX_CHUNKS;
    int64_t chunks = (n + grain - 1) / grain;
    int want = (int)(chunks < threads ? chunks : threads) - 1;
    pthread_mutex_lock(&pool.mu);
    if (grow(want) < want) want = pool.n_workers;
    uint64_t gen = atomic_load(&pool.generation) + 1;
    /* the old job's word ends first: no claim on it runs the new fields */
    atomic_store(&pool.word, job_word(gen, chunks, chunks, 0));
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    pool.grain = grain;
    atomic_store(&pool.done, 0);
    atomic_store(&pool.quiet, false);
    job_chunks = chunks;
    atomic_store(&pool.word, job_word(gen, 0, chunks, want));
    atomic_store_explicit(&pool.generation, gen, memory_order_release);
    if (want > 0 && pool.sleepers) {
        pthread_cond_broadcast(&pool.work_cv);
        split_wakes++;
    }
    pthread_mutex_unlock(&pool.mu);
    job_mine = 0;
    job_mine = run_chunks(gen, 0);
    if (!spin_until(all_done, NULL, false)) {
        pthread_mutex_lock(&pool.mu);
        pool.waiting = true;
        while (!all_done(NULL)) pthread_cond_wait(&pool.done_cv, &pool.mu);
        pool.waiting = false;
        pthread_mutex_unlock(&pool.mu);
    }
    atomic_store(&pool.busy, false);
}

void ltc_cpu_parallel_for(int64_t n, int64_t grain, ltc_cpu_range_fn fn, void *ctx) {
    parallel_run(n, grain, LTC_PAR_MIN_CHUNKS, fn, ctx);
}

void ltc_cpu_parallel_tasks(int64_t n, ltc_cpu_range_fn fn, void *ctx) {
    parallel_run(n, 1, 2, fn, ctx);
}

/* ---- split or not (threads.h) ---------------------------------------------------------------- */

/* One kind of call's figures: mean nanoseconds of each way (a running mean over the last
 * ~4 calls of that way, each sample capped at 2x the mean: one late worker or preempted
 * call moves it by a quarter at most, a lasting change in a few calls). Slots are
 * direct-mapped by key; a new key takes the slot over. Races between threads only blur
 * the figures. A step has tens of keys (tiny_gpt: about 30, its GEMMs' sizes and AdamW's
 * update of each weight): with 64 slots two of its GEMM kinds shared slots with two AdamW
 * updates, took them over from each other every step, so that each call was a first call
 * again (which splits) and was never timed; with SPLIT_SLOTS_LOG 10 a clash is rare. */
#define SPLIT_SLOTS_LOG 10
#define SPLIT_SLOTS (1 << SPLIT_SLOTS_LOG)
typedef struct {
    _Atomic uint64_t key;
    _Atomic uint32_t calls;
    ltc_cpu_split_ways ways;
    _Atomic bool retry; /* the last split call woke the workers: the next one splits too */
} split_slot;
static split_slot split_slots[SPLIT_SLOTS];
static _Thread_local unsigned char plan_way; /* the running computation's way (threads.h) */
static _Thread_local unsigned timed_calls;     /* ltc_cpu_split_begin calls on this thread */

/* Way w's running mean of its last ~4 samples, each capped at 2x the mean (see above). */
static void mean_add(ltc_cpu_split_ways *ws, int w, uint64_t dt) {
    _Atomic uint64_t *ns = &ws->ns[w];
    _Atomic uint32_t *n = &ws->n[w];
    uint32_t k = atomic_load_explicit(n, memory_order_relaxed);
    uint64_t mean = atomic_load_explicit(ns, memory_order_relaxed);
    if (k == 0) {
        mean = dt;
    } else {
        if (dt > 2 * mean) dt = 2 * mean;
        mean = mean - mean / 4 + dt / 4;
    }
    atomic_store_explicit(ns, mean, memory_order_relaxed);
    atomic_store_explicit(n, k + 1, memory_order_relaxed);
}

/* Which of two timed ways call (or run) number c takes: each in turn (the first: way 1)
 * until both have 2 samples, then the faster mean, the other every LTC_SPLIT_PROBE calls
 * (every 4 x LTC_SPLIT_PROBE when it lost by more than half). */
static int way_choose(ltc_cpu_split_ways *ws, uint32_t c) {
    if (atomic_load_explicit(&ws->n[0], memory_order_relaxed) < 2 ||
        atomic_load_explicit(&ws->n[1], memory_order_relaxed) < 2)
        return c % 2 == 0;
    uint64_t t0 = atomic_load_explicit(&ws->ns[0], memory_order_relaxed);
    uint64_t t1 = atomic_load_explicit(&ws->ns[1], memory_order_relaxed);
    int best = t1 < t0;
    uint64_t lo = best ? t1 : t0, hi = best ? t0 : t1;
    uint32_t probe = 2 * hi > 3 * lo ? 4 * LTC_SPLIT_PROBE : LTC_SPLIT_PROBE;
    return c % probe == 0 ? !best : best;
}

bool ltc_cpu_split_begin(ltc_cpu_split_t *s, uint64_t key) {
    static int64_t *mode;
    if (!mode) mode = ltc_config_slot("LTC_GEMM_SPLIT");
    bool split;
    split_slot *sl = NULL; /* untimed when the mode or the computation's way decides */
    s->retried = false;
    timed_calls++;
    if (*mode != 2 || plan_way == 1) {
        split = *mode != 0;
    } else {
        key |= 1; /* 0 marks an unused slot */
        sl = &split_slots[(key * 0x9E3779B97F4A7C15u) >> (64 - SPLIT_SLOTS_LOG)];
        if (atomic_load_explicit(&sl->key, memory_order_relaxed) != key) {
            atomic_store_explicit(&sl->calls, 0, memory_order_relaxed);
            for (int i = 0; i < 2; i++) {
                atomic_store_explicit(&sl->ways.ns[i], 0, memory_order_relaxed);
                atomic_store_explicit(&sl->ways.n[i], 0, memory_order_relaxed);
            }
            atomic_store_explicit(&sl->key, key, memory_order_relaxed);
        }
        uint32_t c = atomic_fetch_add_explicit(&sl->calls, 1, memory_order_relaxed);
        if (atomic_exchange_explicit(&sl->retry, false, memory_order_relaxed))
            split = s->retried = true;
        else /* the first call of a size tries the threads */
            split = way_choose(&sl->ways, c);
    }
    s->slot = sl;
    s->split = split;
    s->wakes = split_wakes;
    s->t0 = now_ns();
    if (split && quiet_now(s->t0))
        atomic_store_explicit(&linger_until, s->t0 + LINGER_NS, memory_order_relaxed);
    return split;
}

void ltc_cpu_split_end(ltc_cpu_split_t *s) {
    split_slot *sl = s->slot;
    if (!sl) return;
    uint64_t dt = now_ns() - s->t0;
    int w = s->split;
    /* a split that had to wake the workers measured the wake-up, which the next split
     * (within LINGER_NS, the workers spinning) does not pay: that one is measured instead,
     * unless it is that retry already */
    if (w && split_wakes != s->wakes && !s->retried) {
        atomic_store_explicit(&sl->retry, true, memory_order_relaxed);
        return;
    }
    mean_add(&sl->ways, w, dt);
}

void ltc_cpu_split_plan_begin(ltc_cpu_split_plan *p, ltc_cpu_split_run *r) {
    static int64_t *mode;
    if (!mode) mode = ltc_config_slot("LTC_GEMM_SPLIT");
    r->saved = plan_way;
    r->way = -1;
    plan_way = 0;
    if (*mode != 2 || atomic_load_explicit(&p->off, memory_order_relaxed) ||
        ltc_cpu_threads() <= 1)
        return;
    uint32_t c = atomic_fetch_add_explicit(&p->runs, 1, memory_order_relaxed);
    r->way = plan_way = way_choose(&p->ways, c);
    r->calls = timed_calls;
    r->t0 = now_ns();
}

void ltc_cpu_split_plan_end(ltc_cpu_split_plan *p, ltc_cpu_split_run *r, bool ok) {
    plan_way = r->saved;
    if (r->way < 0) return;
    uint64_t dt = now_ns() - r->t0;
    bool first = atomic_load_explicit(&p->runs, memory_order_relaxed) == 1;
    if (timed_calls == r->calls) { /* nothing to choose */
        if (first && ok) atomic_store_explicit(&p->off, true, memory_order_relaxed);
        return;
    }
    /* the first run pays for first touches (arena, caches): it is not timed */
    if (ok && !first) mean_add(&p->ways, r->way, dt);
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
