/* comm_registry.c - the communicator registry, the identity communicator (one process),
 * and the collective calls the op kernels make (descriptor bookkeeping, then the slot). */
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "ltc_comm.h"

static const char *const reduce_names[LTC_REDUCE_COUNT] = {"sum", "avg", "max", "min", "prod"};
static const char *const kind_names[LTC_COLL_COUNT] = {
    "all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "barrier", "finalize"};

const char *ltc_reduce_op_name(int op) {
    return op >= 0 && op < LTC_REDUCE_COUNT ? reduce_names[op] : "?";
}

const char *ltc_coll_kind_name(int kind) {
    return kind >= 0 && kind < LTC_COLL_COUNT ? kind_names[kind] : "?";
}

/* ---- the identity communicator: rank 0 of 1 ------------------------------------------------ */

static int id_rank(ltc_comm *c) { return (void)c, 0; }
static int id_size(ltc_comm *c) { return (void)c, 1; }
static ltc_status id_inplace(ltc_comm *c, const ltc_coll_desc *d, void *buf) {
    return (void)c, (void)d, (void)buf, LTC_OK;
}
static ltc_status id_copy(ltc_comm *c, const ltc_coll_desc *d, const void *send, void *recv) {
    (void)c;
    size_t n = (size_t)d->count * ltc_dtype_size((ltc_dtype)d->dtype);
    if (n && send != recv) memmove(recv, send, n);
    return LTC_OK;
}
static ltc_status id_barrier(ltc_comm *c, const ltc_coll_desc *d) { return (void)c, (void)d, LTC_OK; }

static const struct ltc_comm_i identity_iface = {
    .version = LTC_COMM_IFACE_VERSION,
    .rank = id_rank,
    .size = id_size,
    .all_reduce = id_inplace,
    .broadcast = id_inplace,
    .reduce = id_inplace,
    .all_gather = id_copy,
    .reduce_scatter = id_copy,
    .barrier = id_barrier,
};
static ltc_comm identity = {.name = "identity", .iface = &identity_iface};

/* The registry: one current communicator. Registration is serialised by a mutex and checked
 * (interface version, every slot), as the backend registry's (registry.c); readers (every
 * collective) take no lock: the pointer is published with release order after the
 * communicator was checked. */
static ltc_comm *current = &identity; /* atomic */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* The slots, by name and offset in the vtable: all are required. */
static const struct {
    const char *name;
    size_t offset;
} required[] = {
#define SLOT(s) {#s, offsetof(struct ltc_comm_i, s)}
    SLOT(rank),   SLOT(size),           SLOT(all_reduce),     SLOT(broadcast),
    SLOT(reduce), SLOT(all_gather),     SLOT(reduce_scatter), SLOT(barrier),
#undef SLOT
};

static ltc_status check(const ltc_comm *c) {
    if (!c->name || !c->name[0])
        return ltc_errorf(LTC_ERR_ARG, "comm_register: the communicator has no name");
    if (!c->iface)
        return ltc_errorf(LTC_ERR_ARG, "comm_register: communicator '%s' has no interface",
                          c->name);
    if (c->iface->version != LTC_COMM_IFACE_VERSION)
        return ltc_errorf(LTC_ERR_ARG, "comm_register: communicator '%s' has interface version %d, "
                          "this runtime implements version %d (rebuild it against these headers)",
                          c->name, c->iface->version, LTC_COMM_IFACE_VERSION);
    for (size_t i = 0; i < sizeof required / sizeof *required; i++) {
        void *slot;
        memcpy(&slot, (const char *)c->iface + required[i].offset, sizeof slot);
        if (!slot)
            return ltc_errorf(LTC_ERR_ARG, "comm_register: communicator '%s' leaves the required "
                              "slot '%s' NULL", c->name, required[i].name);
    }
    return LTC_OK;
}

ltc_status ltc_comm_register(ltc_comm *c) {
    ltc_status st = c ? check(c) : LTC_OK;
    if (st) return st;
    pthread_mutex_lock(&mu);
    ltc_comm *cur = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
    if (c && cur != &identity && cur != c)
        st = ltc_errorf(LTC_ERR_STATE, "comm_register: communicator '%s' is registered; '%s' "
                        "cannot replace it until it is unregistered (ltc_comm_register(NULL))",
                        cur->name, c->name);
    else
        __atomic_store_n(&current, c ? c : &identity, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&mu);
    return st;
}

ltc_comm *ltc_comm_get(void) { return __atomic_load_n(&current, __ATOMIC_ACQUIRE); }
int ltc_comm_rank(void) { ltc_comm *c = ltc_comm_get(); return c->iface->rank(c); }
int ltc_comm_size(void) { ltc_comm *c = ltc_comm_get(); return c->iface->size(c); }

/* ---- the calls the kernels make ------------------------------------------------------------- */

static _Thread_local int plan_n, plan_i;
static _Thread_local uint64_t plan_hash;
static int64_t seq; /* atomic: every collective's number, in the order they were issued */

void ltc_comm_plan_begin(int n_collectives, uint64_t step_hash) {
    plan_n = n_collectives;
    plan_i = 0;
    plan_hash = step_hash;
}

static ltc_coll_desc desc_make(int kind, int op, ltc_dtype dt, int root, int64_t count) {
    ltc_coll_desc d = {.kind = kind, .op = op, .dtype = dt, .root = root, .count = count};
    d.seq = __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
    if (plan_n > 0 && plan_i < plan_n) {
        d.index = ++plan_i;
        d.n_in_step = plan_n;
        if (d.index == 1 && plan_n > 1) d.step_hash = plan_hash;
    }
    return d;
}

ltc_status ltc_comm_all_reduce(void *buf, int64_t count, ltc_dtype dt, int op) {
    ltc_comm *c = ltc_comm_get();
    ltc_coll_desc d = desc_make(LTC_COLL_ALL_REDUCE, op, dt, -1, count);
    return c->iface->all_reduce(c, &d, buf);
}

ltc_status ltc_comm_broadcast(void *buf, int64_t count, ltc_dtype dt, int root) {
    ltc_comm *c = ltc_comm_get();
    ltc_coll_desc d = desc_make(LTC_COLL_BROADCAST, -1, dt, root, count);
    return c->iface->broadcast(c, &d, buf);
}

ltc_status ltc_comm_reduce(void *buf, int64_t count, ltc_dtype dt, int op, int root) {
    ltc_comm *c = ltc_comm_get();
    ltc_coll_desc d = desc_make(LTC_COLL_REDUCE, op, dt, root, count);
    return c->iface->reduce(c, &d, buf);
}

ltc_status ltc_comm_all_gather(const void *send, void *recv, int64_t count, ltc_dtype dt) {
    ltc_comm *c = ltc_comm_get();
    ltc_coll_desc d = desc_make(LTC_COLL_ALL_GATHER, -1, dt, -1, count);
    return c->iface->all_gather(c, &d, send, recv);
}

ltc_status ltc_comm_reduce_scatter(const void *send, void *recv, int64_t count, ltc_dtype dt,
                                   int op) {
    ltc_comm *c = ltc_comm_get();
    ltc_coll_desc d = desc_make(LTC_COLL_REDUCE_SCATTER, op, dt, -1, count);
    return c->iface->reduce_scatter(c, &d, send, recv);
}

ltc_status ltc_comm_barrier(void) {
    ltc_comm *c = ltc_comm_get();
    ltc_coll_desc d = desc_make(LTC_COLL_BARRIER, -1, LTC_F32, -1, 0);
    return c->iface->barrier(c, &d);
}

/* ---- the op kernels --------------------------------------------------------------------------- */

#include "ltc_kernel.h"
#include "ltc_ops.h"

bool ltc_op_is_collective(int op) {
    return op == LTC_OP_ALL_REDUCE || op == LTC_OP_BROADCAST || op == LTC_OP_REDUCE ||
           op == LTC_OP_ALL_GATHER || op == LTC_OP_REDUCE_SCATTER;
}

static ltc_status check_root(int64_t root, int size) {
    if (root >= size)
        return ltc_errorf(LTC_ERR_ARG, "root %lld is out of range for %d rank%s (ranks are 0..%d)",
                          (long long)root, size, size == 1 ? "" : "s", size - 1);
    return LTC_OK;
}

static ltc_status check_world(int64_t traced, int size) {
    if (traced != size)
        return ltc_errorf(LTC_ERR_ARG, "traced for world_size %lld, but the communicator has %d "
                          "rank%s", (long long)traced, size, size == 1 ? "" : "s");
    return LTC_OK;
}

/* What the kernel of collective step `a` passes to the communicator: kind, op, dtype, root
 * and count (ltc_comm_kernel and ltc_comm_step_hash both read it from here). */
static ltc_coll_desc kernel_desc(const ltc_kernel_args *a) {
    const ltc_shape *si = &a->in_shapes[0];
    ltc_coll_desc d = {.op = -1, .dtype = si->dtype, .root = -1, .count = ltc_shape_numel(si)};
    switch (a->op) {
    case LTC_OP_ALL_REDUCE: d.kind = LTC_COLL_ALL_REDUCE, d.op = (int)a->attrs[0].i; break;
    case LTC_OP_BROADCAST: d.kind = LTC_COLL_BROADCAST, d.root = (int)a->attrs[0].i; break;
    case LTC_OP_REDUCE:
        d.kind = LTC_COLL_REDUCE, d.op = LTC_REDUCE_SUM, d.root = (int)a->attrs[0].i;
        break;
    case LTC_OP_ALL_GATHER: d.kind = LTC_COLL_ALL_GATHER; break;
    case LTC_OP_REDUCE_SCATTER:
        d.kind = LTC_COLL_REDUCE_SCATTER, d.op = (int)a->attrs[0].i;
        d.count = ltc_shape_numel(&a->out_shapes[0]);
        break;
    default: d.kind = -1;
    }
    return d;
}

/* FNV-1a, 64 bits, over one field */
static void fold(uint64_t *h, int64_t v) {
    for (int i = 0; i < 8; i++, v >>= 8) *h = (*h ^ (uint8_t)v) * 0x100000001b3ull;
}

void ltc_comm_step_hash(const ltc_kernel_args *a, int index, uint64_t *hash) {
    ltc_coll_desc d = kernel_desc(a);
    if (!*hash) *hash = 0xcbf29ce484222325ull;
    fold(hash, d.kind), fold(hash, d.op), fold(hash, d.dtype), fold(hash, d.root);
    fold(hash, d.count), fold(hash, index);
}

ltc_status ltc_comm_kernel(const ltc_kernel_args *a) {
    ltc_coll_desc d = kernel_desc(a);
    ltc_dtype dt = (ltc_dtype)d.dtype;
    int size = ltc_comm_size();
    size_t nb = ltc_shape_nbytes(&a->in_shapes[0]);
    ltc_status st;
    switch (a->op) {
    case LTC_OP_ALL_REDUCE:
        if (nb && a->out[0] != a->in[0]) memmove(a->out[0], a->in[0], nb);
        return ltc_comm_all_reduce(a->out[0], d.count, dt, d.op);
    case LTC_OP_BROADCAST:
        if ((st = check_root(a->attrs[0].i, size))) return st;
        if (nb && a->out[0] != a->in[0]) memmove(a->out[0], a->in[0], nb);
        return ltc_comm_broadcast(a->out[0], d.count, dt, d.root);
    case LTC_OP_REDUCE:
        if ((st = check_root(a->attrs[0].i, size))) return st;
        if (nb && a->out[0] != a->in[0]) memmove(a->out[0], a->in[0], nb);
        if ((st = ltc_comm_reduce(a->out[0], d.count, dt, d.op, d.root))) return st;
        if (nb && ltc_comm_rank() != d.root) memset(a->out[0], 0, nb);
        return LTC_OK;
    case LTC_OP_ALL_GATHER:
        if ((st = check_world(a->attrs[0].i, size))) return st;
        return ltc_comm_all_gather(a->in[0], a->out[0], d.count, dt);
    case LTC_OP_REDUCE_SCATTER:
        if ((st = check_world(a->attrs[1].i, size))) return st;
        return ltc_comm_reduce_scatter(a->in[0], a->out[0], d.count, dt, d.op);
    default:
        return ltc_errorf(LTC_ERR_BACKEND, "op %d is not a collective", a->op);
    }
}
