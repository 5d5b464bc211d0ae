/* mpi_comm.c - the communicator over Open MPI (ltc_comm.h), and its watchdog.
 *
 * Each collective first exchanges a small descriptor of the call (kind, op, dtype, count,
 * root, its place in the computation) with MPI_Iallgather, unless checks are off: ranks
 * that disagree all get the same error naming the mismatch, before any data moves, and
 * stay in step (the exchange itself matched). A computation with several collectives
 * exchanges once, before its first one: that descriptor carries the hash of all of them
 * (ltc_coll_desc.step_hash), and when every rank has the same, the step's other collectives
 * move their data unchecked. When only the hashes differ, each of them is checked on its
 * own, so the one that differs is named. A rank that leaves (its script ended or
 * raised an error) exchanges a "finalize" descriptor, so the others' next collective
 * fails with an error saying so; it keeps answering until every rank has left, then
 * finalizes MPI.
 *
 * The watchdog: a thread that calls MPI_Abort when one call has waited longer than the
 * timeout (a rank died, hangs, or runs other collectives with the checks off). */
#define _GNU_SOURCE
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "mpi_comm.h"

static struct {
    int rank, size;
    bool check;
    double timeout;     /* seconds */
    int64_t inflight;   /* ns when the running call started; 0: none (atomic) */
    ltc_coll_desc cur;  /* the running call, for the watchdog's message */
    pthread_t watchdog;
    bool watching, stop;
    ltc_dist_stats stats;
    ltc_coll_desc *all; /* size descriptors */
    int verified;       /* n_in_step of the running step when its hash matched on every rank */
} S;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *watchdog_main(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&S.stop, __ATOMIC_ACQUIRE)) {
        usleep(50000);
        int64_t t0 = __atomic_load_n(&S.inflight, __ATOMIC_ACQUIRE);
        if (t0 && (double)(now_ns() - t0) / 1e9 > S.timeout) {
            char which[48] = "";
            if (S.cur.seq) snprintf(which, sizeof which, " (collective #%lld)", (long long)S.cur.seq);
            fprintf(stderr,
                    "ltc.distributed: rank %d: %s%s has waited more than %g s for the other "
                    "ranks (one stopped, hangs, or runs other collectives); aborting the job "
                    "with MPI_Abort\n",
                    S.rank, ltc_coll_kind_name(S.cur.kind), which, S.timeout);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    return NULL;
}

static void enter(const ltc_coll_desc *d) {
    S.cur = *d;
    __atomic_store_n(&S.inflight, now_ns(), __ATOMIC_RELEASE);
}

static void leave(int64_t bytes) {
    int64_t t0 = __atomic_exchange_n(&S.inflight, 0, __ATOMIC_ACQ_REL);
    S.stats.calls++;
    S.stats.bytes += bytes;
    S.stats.seconds += (double)(now_ns() - t0) / 1e9;
}

static ltc_status mpi_fail(int rc, const char *what) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return ltc_errorf(LTC_ERR_BACKEND, "rank %d: %s failed: %s", S.rank, what, msg);
}

/* ---- descriptors ---------------------------------------------------------------------------- */

static void desc_str(const ltc_coll_desc *d, char *buf, size_t n) {
    int k = snprintf(buf, n, "%s", ltc_coll_kind_name(d->kind));
    if (d->kind == LTC_COLL_FINALIZE) {
        snprintf(buf + k, n - (size_t)k, " (its script ended or raised an error)");
        return;
    }
    if (d->kind == LTC_COLL_BARRIER) return;
    if (d->op >= 0) k += snprintf(buf + k, n - (size_t)k, " %s", ltc_reduce_op_name(d->op));
    if (d->root >= 0) k += snprintf(buf + k, n - (size_t)k, " root %d", d->root);
    k += snprintf(buf + k, n - (size_t)k, " of %lld %s", (long long)d->count,
                  ltc_dtype_name((ltc_dtype)d->dtype));
    if (d->n_in_step)
        snprintf(buf + k, n - (size_t)k, " (collective %d of %d in its step)", d->index,
                 d->n_in_step);
    else
        snprintf(buf + k, n - (size_t)k, " (outside a step)");
}

static bool desc_same(const ltc_coll_desc *a, const ltc_coll_desc *b) {
    return a->kind == b->kind && a->op == b->op && a->dtype == b->dtype && a->root == b->root &&
           a->count == b->count && a->index == b->index && a->n_in_step == b->n_in_step;
}

/* What differs between two descriptors, for the message. */
static const char *desc_diff(const ltc_coll_desc *a, const ltc_coll_desc *b) {
    if (a->kind != b->kind) return "different collectives";
    if (a->n_in_step != b->n_in_step) return "a different number of collectives in the step";
    if (a->index != b->index) return "a different place in the step";
    if (a->op != b->op) return "different ops";
    if (a->dtype != b->dtype) return "different dtypes";
    if (a->count != b->count) return "different sizes";
    return "different roots";
}

/* Waits for a request without burning the CPU a slower rank needs: MPI_Test in a spin for
 * 50 us plus the time `bytes` take at 1 GB/s (a transfer under way progresses at full
 * speed), then with sleeps growing from 2 us to 128 us. Open MPI's blocking calls busy-poll,
 * which on a loaded or oversubscribed machine starves the very rank waited for: the
 * Fashion-MNIST epoch over 2 ranks on a loaded 2-core machine took 26 s with blocking
 * calls, 11 s with this. (Yielding with sched_yield for 2 ms before sleeping was tried: the
 * epoch went from 3.6-5.1 s to 3.4-9.2 s on a loaded machine, the yielding rank still
 * taking the CPU from the one it waits for.) */
static int polite_wait(MPI_Request *req, int64_t bytes) {
    int done = 0, rc;
    int64_t t0 = now_ns(), spin = 50000 + bytes;
    long nap = 2000;
    while ((rc = MPI_Test(req, &done, MPI_STATUS_IGNORE)) == MPI_SUCCESS && !done) {
        if (now_ns() - t0 < spin) continue;
        struct timespec ts = {0, nap};
        nanosleep(&ts, NULL);
        if (nap < 128000) nap *= 2;
    }
    return rc;
}

/* Exchanges d with every rank. LTC_OK when all agree; else the error on every rank. A rank
 * that is finalizing sets *others_left = true when every rank is finalizing too. *same_step
 * (may be NULL) says whether every rank's step_hash is d's and not 0. The wait for the
 * slowest rank happens here, politely; the data collective that follows finds every rank
 * there. */
static ltc_status exchange(const ltc_coll_desc *d, bool *all_finalizing, bool *same_step) {
    enter(d);
    S.stats.checks++;
    MPI_Request req;
    int rc = MPI_Iallgather(d, (int)sizeof *d, MPI_BYTE, S.all, (int)sizeof *d, MPI_BYTE,
                            MPI_COMM_WORLD, &req);
    if (rc == MPI_SUCCESS) rc = polite_wait(&req, 0);
    double before = S.stats.seconds;
    leave(0);
    S.stats.wait_seconds += S.stats.seconds - before;
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "the descriptor exchange (MPI_Allgather)");
    bool fin = true, step = d->step_hash != 0;
    int bad = -1;
    for (int r = 0; r < S.size; r++) {
        if (S.all[r].kind != LTC_COLL_FINALIZE) fin = false;
        if (bad < 0 && !desc_same(&S.all[r], &S.all[0])) bad = r;
        if (S.all[r].step_hash != d->step_hash) step = false;
    }
    if (all_finalizing) *all_finalizing = fin;
    if (same_step) *same_step = step;
    if (bad < 0) return LTC_OK;
    /* name this rank's call and the first one that differs from it (or from rank 0) */
    int other = bad;
    if (desc_same(&S.all[S.rank], &S.all[bad])) other = 0;
    char mine[192], theirs[192];
    desc_str(&S.all[S.rank], mine, sizeof mine);
    desc_str(&S.all[other], theirs, sizeof theirs);
    return ltc_errorf(LTC_ERR_ARG,
                      "%s: ranks disagree (%s): rank %d runs %s, rank %d runs %s; every rank "
                      "must run the same collectives in the same order (collective #%lld of "
                      "rank %d)",
                      ltc_coll_kind_name(d->kind), desc_diff(&S.all[S.rank], &S.all[other]),
                      S.rank, mine, other, theirs, (long long)d->seq, S.rank);
}

/* ---- data ----------------------------------------------------------------------------------- */

static MPI_Datatype mpi_type(int dt) {
    switch (dt) {
    case LTC_F32: return MPI_FLOAT;
    case LTC_F64: return MPI_DOUBLE;
    case LTC_I32: return MPI_INT32_T;
    case LTC_I64: return MPI_INT64_T;
    case LTC_BOOL: return MPI_C_BOOL;
    default: return MPI_DATATYPE_NULL;
    }
}

static MPI_Op mpi_op(int op, int dt) {
    bool b = dt == LTC_BOOL;
    switch (op) {
    case LTC_REDUCE_SUM:
    case LTC_REDUCE_AVG: return b ? MPI_LOR : MPI_SUM;
    case LTC_REDUCE_MAX: return b ? MPI_LOR : MPI_MAX;
    case LTC_REDUCE_MIN: return b ? MPI_LAND : MPI_MIN;
    case LTC_REDUCE_PROD: return b ? MPI_LAND : MPI_PROD;
    default: return MPI_OP_NULL;
    }
}

static void divide(void *buf, int64_t n, int dt, int size) {
    if (dt == LTC_F32) {
        float *p = buf;
        for (int64_t i = 0; i < n; i++) p[i] /= (float)size;
    } else if (dt == LTC_F64) {
        double *p = buf;
        for (int64_t i = 0; i < n; i++) p[i] /= (double)size;
    }
}

/* The descriptor check of one collective: its own exchange, or none when it belongs to the
 * step whose hash every rank agreed on in the exchange of its first collective. */
static ltc_status check(const ltc_coll_desc *d) {
    if (!S.check) return LTC_OK;
    if (d->index > 1 && d->index <= S.verified && d->n_in_step == S.verified) return LTC_OK;
    bool same_step = false;
    S.verified = 0;
    ltc_status st = exchange(d, NULL, &same_step);
    if (!st && same_step && d->index == 1) S.verified = d->n_in_step;
    return st;
}

/* The checks every data collective makes: descriptors, arguments MPI can take. */
static ltc_status prologue(const ltc_coll_desc *d) {
    ltc_status st;
    if ((st = check(d))) return st;
    if (mpi_type(d->dtype) == MPI_DATATYPE_NULL)
        return ltc_errorf(LTC_ERR_ARG, "%s: dtype %s has no MPI type", ltc_coll_kind_name(d->kind),
                          ltc_dtype_name((ltc_dtype)d->dtype));
    if (d->count > INT32_MAX)
        return ltc_errorf(LTC_ERR_ARG, "%s: %lld elements is more than one MPI call moves (%d)",
                          ltc_coll_kind_name(d->kind), (long long)d->count, INT32_MAX);
    if (d->op >= 0 && mpi_op(d->op, d->dtype) == MPI_OP_NULL)
        return ltc_errorf(LTC_ERR_ARG, "%s: unknown op %d", ltc_coll_kind_name(d->kind), d->op);
    return LTC_OK;
}

static int m_rank(ltc_comm *c) { return (void)c, S.rank; }
static int m_size(ltc_comm *c) { return (void)c, S.size; }

static ltc_status m_all_reduce(ltc_comm *c, const ltc_coll_desc *d, void *buf) {
    (void)c;
    ltc_status st = prologue(d);
    if (st) return st;
    enter(d);
    /* Open MPI's blocking call, as a program calling MPI_Allreduce itself would: its tuned
     * algorithms beat the non-blocking ones (libnbc: an extra copy of the buffer and progress
     * only when tested; 1 MB over 2 ranks took 1.5-2x as long). The wait for a late rank
     * happened politely in the descriptor exchange (checks on); with the checks off it is
     * Open MPI's own busy wait. */
    int rc = MPI_Allreduce(MPI_IN_PLACE, buf, (int)d->count, mpi_type(d->dtype),
                           mpi_op(d->op, d->dtype), MPI_COMM_WORLD);
    leave(d->count * (int64_t)ltc_dtype_size((ltc_dtype)d->dtype));
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "all_reduce (MPI_Allreduce)");
    if (d->op == LTC_REDUCE_AVG) divide(buf, d->count, d->dtype, S.size);
    return LTC_OK;
}

static ltc_status m_broadcast(ltc_comm *c, const ltc_coll_desc *d, void *buf) {
    (void)c;
    ltc_status st = prologue(d);
    if (st) return st;
    enter(d);
    int rc = MPI_Bcast(buf, (int)d->count, mpi_type(d->dtype), d->root, MPI_COMM_WORLD);
    leave(d->count * (int64_t)ltc_dtype_size((ltc_dtype)d->dtype));
    return rc == MPI_SUCCESS ? LTC_OK : mpi_fail(rc, "broadcast (MPI_Bcast)");
}

static ltc_status m_reduce(ltc_comm *c, const ltc_coll_desc *d, void *buf) {
    (void)c;
    ltc_status st = prologue(d);
    if (st) return st;
    enter(d);
    bool root = S.rank == d->root;
    int rc = MPI_Reduce(root ? MPI_IN_PLACE : buf, root ? buf : NULL, (int)d->count,
                        mpi_type(d->dtype), mpi_op(d->op, d->dtype), d->root, MPI_COMM_WORLD);
    leave(d->count * (int64_t)ltc_dtype_size((ltc_dtype)d->dtype));
    return rc == MPI_SUCCESS ? LTC_OK : mpi_fail(rc, "reduce (MPI_Reduce)");
}

static ltc_status m_all_gather(ltc_comm *c, const ltc_coll_desc *d, const void *send, void *recv) {
    (void)c;
    ltc_status st = prologue(d);
    if (st) return st;
    enter(d);
    MPI_Datatype t = mpi_type(d->dtype);
    int rc = MPI_Allgather(send, (int)d->count, t, recv, (int)d->count, t, MPI_COMM_WORLD);
    leave(d->count * S.size * (int64_t)ltc_dtype_size((ltc_dtype)d->dtype));
    return rc == MPI_SUCCESS ? LTC_OK : mpi_fail(rc, "all_gather (MPI_Allgather)");
}

static ltc_status m_reduce_scatter(ltc_comm *c, const ltc_coll_desc *d, const void *send,
                                   void *recv) {
    (void)c;
    ltc_status st = prologue(d);
    if (st) return st;
    enter(d);
    int rc = MPI_Reduce_scatter_block(send, recv, (int)d->count, mpi_type(d->dtype),
                                      mpi_op(d->op, d->dtype), MPI_COMM_WORLD);
    leave(d->count * S.size * (int64_t)ltc_dtype_size((ltc_dtype)d->dtype));
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "reduce_scatter (MPI_Reduce_scatter_block)");
    if (d->op == LTC_REDUCE_AVG) divide(recv, d->count, d->dtype, S.size);
    return LTC_OK;
}

static ltc_status m_barrier(ltc_comm *c, const ltc_coll_desc *d) {
    (void)c;
    ltc_status st;
    if ((st = check(d))) return st;
    enter(d);
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    leave(0);
    return rc == MPI_SUCCESS ? LTC_OK : mpi_fail(rc, "barrier (MPI_Barrier)");
}

static const struct ltc_comm_i mpi_iface = {
    .version = LTC_COMM_IFACE_VERSION,
    .rank = m_rank,
    .size = m_size,
    .all_reduce = m_all_reduce,
    .broadcast = m_broadcast,
    .reduce = m_reduce,
    .all_gather = m_all_gather,
    .reduce_scatter = m_reduce_scatter,
    .barrier = m_barrier,
};
static ltc_comm mpi_comm = {.name = "mpi", .iface = &mpi_iface};

/* ---- life cycle ----------------------------------------------------------------------------- */

bool ltc_dist_initialized(void) {
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    return init && !fin && S.all;
}

ltc_status ltc_dist_init(bool check, double timeout) {
    if (ltc_dist_initialized()) {
        S.check = check;
        S.timeout = timeout;
        return LTC_OK;
    }
    int fin = 0;
    MPI_Finalized(&fin);
    if (fin) return ltc_errorf(LTC_ERR_STATE, "init: MPI was finalized; it cannot start again");
    int init = 0, provided = 0;
    MPI_Initialized(&init);
    if (!init && MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        return ltc_errorf(LTC_ERR_BACKEND, "init: MPI_Init_thread failed");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &S.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &S.size);
    S.check = check;
    S.timeout = timeout;
    /* the polite wait's naps as asked (2 us and up), not stretched by the default 50 us of
     * timer slack: a rank waiting 60 us for the other would otherwise wake up 50 us late */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
    if (!(S.all = calloc((size_t)S.size, sizeof *S.all)))
        return ltc_errorf(LTC_ERR_NOMEM, "init: out of memory");
    S.stop = false;
    S.watching = pthread_create(&S.watchdog, NULL, watchdog_main, NULL) == 0;
    return ltc_comm_register(&mpi_comm);
}

void ltc_dist_set(bool check, double timeout) {
    S.check = check;
    S.timeout = timeout;
}

ltc_status ltc_dist_raw_all_reduce(void *buf, int64_t count, ltc_dtype dt, int op) {
    if (!ltc_dist_initialized()) return ltc_errorf(LTC_ERR_STATE, "call init() first");
    if (mpi_type(dt) == MPI_DATATYPE_NULL || mpi_op(op, dt) == MPI_OP_NULL || count > INT32_MAX)
        return ltc_errorf(LTC_ERR_ARG, "no MPI call for %lld %s with op %s", (long long)count,
                          ltc_dtype_name(dt), ltc_reduce_op_name(op));
    int rc = MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, mpi_type(dt), mpi_op(op, dt),
                           MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? LTC_OK : mpi_fail(rc, "MPI_Allreduce");
}

ltc_dist_stats ltc_dist_get_stats(void) { return S.stats; }
void ltc_dist_reset_stats(void) { memset(&S.stats, 0, sizeof S.stats); }
int ltc_dist_rank(void) { return S.rank; }
int ltc_dist_size(void) { return S.size; }

ltc_status ltc_dist_finalize(void) {
    if (!ltc_dist_initialized()) return LTC_OK;
    /* answer every other rank's collective with "finalize" until all are leaving */
    ltc_coll_desc d = {.kind = LTC_COLL_FINALIZE, .op = -1, .root = -1};
    if (S.check) {
        /* another rank still running collectives gets an error naming this rank; keep
         * answering until every rank leaves (the watchdog ends a wait past the timeout) */
        for (;;) {
            bool all = false;
            ltc_status st = exchange(&d, &all, NULL);
            if (all || st == LTC_ERR_BACKEND) break;
        }
    } else {
        enter(&d);
        MPI_Barrier(MPI_COMM_WORLD);
        leave(0);
    }
    __atomic_store_n(&S.stop, true, __ATOMIC_RELEASE);
    if (S.watching) pthread_join(S.watchdog, NULL);
    S.watching = false;
    ltc_comm_register(NULL);
    MPI_Finalize();
    free(S.all);
    S.all = NULL;
    return LTC_OK;
}

void ltc_dist_abort(int code) {
    int init = 0;
    MPI_Initialized(&init);
    if (init) MPI_Abort(MPI_COMM_WORLD, code);
    _exit(code);
}
