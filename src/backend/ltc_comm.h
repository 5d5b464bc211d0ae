/*
 * ltc_comm.h - the communicator interface (a C vtable) and its registry: the collectives
 * that distributed data-parallel training needs, modelled on c10d's ProcessGroup
 * (torch/csrc/distributed/c10d/ProcessGroup.hpp): rank, size, all_reduce, broadcast,
 * reduce, all_gather, reduce_scatter, barrier.
 *
 * Collectives work on host memory: the backend data of the CPU-family backends
 * (ltc_data.ptr), contiguous row-major buffers of `count` elements of one dtype. A device
 * backend moves its data through the host. Every collective is blocking and must be
 * called by every rank of the communicator in the same order with matching arguments.
 *
 * Ranks are numbered from 0 to size-1, as MPI numbers its processes: a rank is a process
 * id, not a Lua index. Without a registered communicator (no module loaded, or a single
 * process) the default one has rank 0 and size 1, and every collective is the identity.
 *
 * The core does not link any transport: an implementation (src/distributed/, over Open
 * MPI) lives in its own module and registers itself with ltc_comm_register.
 */
#ifndef LTC_COMM_H
#define LTC_COMM_H

#include "ltc.h"

typedef struct ltc_comm ltc_comm;

/* Reduction operators, in the order of the ops' `op` attribute (ops.yaml). avg is sum
 * divided by the size, floating dtypes only. On bool data sum and max are logical or,
 * min and prod logical and. */
typedef enum {
    LTC_REDUCE_SUM = 0,
    LTC_REDUCE_AVG,
    LTC_REDUCE_MAX,
    LTC_REDUCE_MIN,
    LTC_REDUCE_PROD,
    LTC_REDUCE_COUNT
} ltc_reduce_op;

/* The name of op ("sum", "avg", "max", "min", "prod"), or "?" out of range. */
const char *ltc_reduce_op_name(int op);

/* The kinds of collectives, as named in descriptors and errors. */
typedef enum {
    LTC_COLL_ALL_REDUCE = 0,
    LTC_COLL_BROADCAST,
    LTC_COLL_REDUCE,
    LTC_COLL_ALL_GATHER,
    LTC_COLL_REDUCE_SCATTER,
    LTC_COLL_BARRIER,
    LTC_COLL_FINALIZE, /* a rank leaving: its script ended or raised an error */
    LTC_COLL_COUNT
} ltc_coll_kind;

const char *ltc_coll_kind_name(int kind);

/* What one collective call is, on one rank: exchanged before the data moves (when the
 * implementation checks), so that ranks that disagree get an error naming the mismatch
 * instead of a hang or garbage. `index`/`n_in_step` place the call in its computation
 * (1-based; 0 when called outside a compiled plan). The first collective of a computation
 * that holds several also carries `step_hash`, a hash of the descriptors of all of them
 * (ltc_comm_step_hash): ranks that agree on it and on that first descriptor agree on the
 * whole step, so one exchange can check every collective of the step. */
typedef struct ltc_coll_desc {
    int32_t kind;       /* ltc_coll_kind */
    int32_t op;         /* ltc_reduce_op, or -1 */
    int32_t dtype;      /* ltc_dtype */
    int32_t root;       /* broadcast/reduce: the root rank, else -1 */
    int64_t count;      /* elements each rank sends */
    int64_t seq;        /* this rank's count of collectives so far */
    int32_t index;      /* position in the running computation, 1-based (0: outside one) */
    int32_t n_in_step;  /* collectives in the running computation (0: outside one) */
    uint64_t step_hash; /* index 1 of n_in_step >= 2: the step's hash; else 0 */
} ltc_coll_desc;

/* ---- the vtable ----------------------------------------------------------------------------- */

#define LTC_COMM_IFACE_VERSION 2

/* Each collective returns LTC_OK, or an error status with the thread's message set (a
 * mismatch between ranks names both sides; a transport failure says what failed). `desc`
 * describes the call (for the implementation's checks and messages); buffers follow it:
 *   all_reduce:     buf (count elements) is reduced in place across ranks with desc->op.
 *   broadcast:      buf of rank desc->root is copied into every rank's buf.
 *   reduce:         buf of rank desc->root receives the reduction; the others' buf is
 *                   left as it was (the op kernel zeroes it).
 *   all_gather:     send (count) of rank r lands at recv + r*count (recv: size*count).
 *   reduce_scatter: send (size*count) is reduced across ranks; rank r receives the r-th
 *                   block of count elements in recv.
 * Zero counts are legal (the call still synchronises and checks). */
struct ltc_comm_i {
    int version; /* LTC_COMM_IFACE_VERSION */
    int (*rank)(ltc_comm *c);
    int (*size)(ltc_comm *c);
    ltc_status (*all_reduce)(ltc_comm *c, const ltc_coll_desc *desc, void *buf);
    ltc_status (*broadcast)(ltc_comm *c, const ltc_coll_desc *desc, void *buf);
    ltc_status (*reduce)(ltc_comm *c, const ltc_coll_desc *desc, void *buf);
    ltc_status (*all_gather)(ltc_comm *c, const ltc_coll_desc *desc, const void *send,
                             void *recv);
    ltc_status (*reduce_scatter)(ltc_comm *c, const ltc_coll_desc *desc, const void *send,
                                 void *recv);
    ltc_status (*barrier)(ltc_comm *c, const ltc_coll_desc *desc);
};

struct ltc_comm {
    const char *name;               /* "identity", "mpi" */
    const struct ltc_comm_i *iface;
    void *context;                  /* the implementation's own state */
};

/* ---- registry --------------------------------------------------------------------------------- */

/* Installs `c` as the communicator collectives run on. The caller keeps ownership and must
 * keep it alive until ltc_comm_register(NULL) puts the identity back. Checked, under the
 * registry's mutex (as ltc_backend_register): LTC_ERR_ARG naming the communicator and the
 * problem for a missing name or interface, an interface version other than
 * LTC_COMM_IFACE_VERSION, or a NULL slot (every slot is required); LTC_ERR_STATE when another
 * communicator is registered (unregister it first). Registering the current one again is a
 * no-op. Not to be called while collectives run on another thread (they read the current
 * communicator without a lock). */
ltc_status ltc_comm_register(ltc_comm *c);
/* The current communicator: the registered one, else the identity (rank 0, size 1). */
ltc_comm *ltc_comm_get(void);
int ltc_comm_rank(void);
int ltc_comm_size(void);

/* ---- collectives over the current communicator (what the op kernels call) ------------------ */

/* Called by a plan before it runs: the number of collective steps in it and the hash of
 * their descriptors (ltc_comm_step_hash; 0 when unknown), so that each collective's
 * descriptor carries its place in the computation and the first one the step's hash (per
 * thread). */
void ltc_comm_plan_begin(int n_collectives, uint64_t step_hash);

/* Fills the descriptor's seq/index/n_in_step from this thread's counters and calls the
 * current communicator's slot. The identity communicator only copies what must be
 * copied (all_gather and reduce_scatter with size 1) and divides nothing (avg of one). */
ltc_status ltc_comm_all_reduce(void *buf, int64_t count, ltc_dtype dt, int op);
ltc_status ltc_comm_broadcast(void *buf, int64_t count, ltc_dtype dt, int root);
ltc_status ltc_comm_reduce(void *buf, int64_t count, ltc_dtype dt, int op, int root);
ltc_status ltc_comm_all_gather(const void *send, void *recv, int64_t count, ltc_dtype dt);
ltc_status ltc_comm_reduce_scatter(const void *send, void *recv, int64_t count, ltc_dtype dt,
                                   int op);
ltc_status ltc_comm_barrier(void);

/* ---- the op kernels ------------------------------------------------------------------------- */

struct ltc_kernel_args;

/* True for the collective ops of ops.yaml (all_reduce, broadcast, reduce, all_gather,
 * reduce_scatter). */
bool ltc_op_is_collective(int op);
/* Folds the descriptor of the collective step `a` (a collective op's kernel arguments; the
 * buffers are not read), the `index`-th (1-based) of the computation, into *hash (start at
 * 0): the fields two ranks must agree on (kind, op, dtype, root, count and place), as the
 * kernel below passes them to the communicator. */
void ltc_comm_step_hash(const struct ltc_kernel_args *a, int index, uint64_t *hash);
/* The kernel of every collective op, shared by the CPU and reference backends: copies the
 * input to the output buffer and runs the collective there (ltc_kernel.h's convention).
 * Checks a root and a traced world_size against the communicator (LTC_ERR_ARG naming
 * both). */
ltc_status ltc_comm_kernel(const struct ltc_kernel_args *a);

#endif
