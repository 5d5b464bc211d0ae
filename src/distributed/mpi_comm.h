/*
 * mpi_comm.h - the Open MPI communicator of the ltc.distributed module (mpi_comm.c): its
 * life cycle, options and statistics, as the Lua binding (distributed_lua.c) uses them.
 * Ranks are MPI_COMM_WORLD's, numbered from 0.
 */
#ifndef LTC_MPI_COMM_H
#define LTC_MPI_COMM_H

#include "ltc_comm.h"

/* Time and bytes spent in collectives since the last reset (descriptor exchanges count
 * as calls and time, not bytes). */
typedef struct ltc_dist_stats {
    int64_t calls;
    int64_t bytes;
    double seconds;
    double wait_seconds; /* of seconds: in descriptor exchanges (waiting for the slowest rank) */
    int64_t checks;      /* descriptor exchanges (of calls): one a collective, or one a step */
} ltc_dist_stats;

/* Initialises MPI (MPI_Init_thread, from the environment mpirun sets; a lone process is
 * rank 0 of 1), starts the watchdog and registers the communicator. `check`: exchange a
 * descriptor before each collective (one for all the collectives of a computation, by their
 * hash); `timeout`: seconds one call may wait before the
 * watchdog calls MPI_Abort. Called again, it only updates the options. */
ltc_status ltc_dist_init(bool check, double timeout);
bool ltc_dist_initialized(void);
void ltc_dist_set(bool check, double timeout);
int ltc_dist_rank(void);
int ltc_dist_size(void);
ltc_dist_stats ltc_dist_get_stats(void);
void ltc_dist_reset_stats(void);
/* MPI_Allreduce in place on buf, nothing else (no descriptor, watchdog or statistics): the
 * peer that bench/dist_allreduce.lua measures ltc's all_reduce against on the same buffer. */
ltc_status ltc_dist_raw_all_reduce(void *buf, int64_t count, ltc_dtype dt, int op);
/* Leaves: with checks on, answers the other ranks' collectives with "finalize" (they get
 * an error naming this rank) until every rank leaves; then MPI_Finalize. Idempotent. */
ltc_status ltc_dist_finalize(void);
/* MPI_Abort(MPI_COMM_WORLD, code): ends every rank of the job. Does not return. */
void ltc_dist_abort(int code) __attribute__((noreturn));

#endif
