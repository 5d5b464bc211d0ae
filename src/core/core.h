/*
 * core.h - private to src/core: the tensor struct, the live-tensor list, counters.
 */
#ifndef LTC_CORE_H
#define LTC_CORE_H

#include "ltc_backend.h"
#include "ltc_ir.h"

/* One view op between a base and a view: enough to replay it and to invert it. */
typedef struct ltc_view_step {
    int op;
    int n_attrs;
    ltc_attr attrs[4];
    ltc_shape in_shape, out_shape;
} ltc_view_step;

/* A lazy tensor: backend data, or a pending IR value, or both (data plus the cached
 * DEVICE_DATA node that feeds it to graphs).
 *
 * Views (functionalization, as PyTorch's FunctionalTensorWrapper): a view keeps its base
 * and the view ops from the base. An in-place write to a base bumps its generation; a
 * write through a view becomes a new base value (the written value scattered back through
 * the inverse view ops). A view whose generation is behind its base's recomputes its value
 * from the base when next read (views.c). */
struct ltc_tensor {
    int32_t refcount;
    bool weak;          /* a wrapped Lua number (type promotion) */
    bool once;          /* a Lua number made for one op call (ltc_tensor_from_float_operand):
                         * while only that caller holds it, promotion converts it in place */
    double num;         /* once: the number (its value without a read through the backend) */
    ltc_shape shape;
    ltc_data *data;     /* retained; NULL while pending */
    ltc_value ir;       /* retained node; pending value, or DEVICE_DATA for `data` */
    ltc_tensor *prev, *next; /* the live-tensor list */
    ltc_tensor *base;   /* views: the base (retained; never itself a view) */
    ltc_view_step *steps; /* views: the ops from base to this tensor (owned) */
    int n_steps;
    uint64_t generation; /* base: in-place writes so far; view: the base's, when computed */
    ltc_data *committed; /* while pending after an in-place write: the data it had (retained),
                          * restored if the sync computing the new value fails */
    char *failed;        /* the error of the failed sync that was to compute it (owned; the
                          * tensor then has no value: reading or using it is that error) */
    ltc_value *history;  /* while pending after in-place writes: the value it held before
                          * each write since it was last computed, oldest first (retained
                          * nodes; a NULL node stands for its data, kept as `committed`). A
                          * failed sync goes back to the newest one that does not depend on
                          * the failure (executor.c). Owned; cleared when data is installed. */
    int n_history, cap_history;
    struct ltc_ag_hist *ag_history; /* beside history: the autograd history t had before each
                                     * of those writes (so a failed write's grad_fn goes too) */
    ltc_backend *backend; /* its device: the backend that holds (or will compute) its data */
    int ordinal;          /* and the device's ordinal */
    bool any_device;      /* joins an op on any device (a generator state, like a Lua
                           * number's weak scalar): the executor moves its data */
    /* autograd (autograd.h): its state, NULL until autograd sees it; for a view, the base's
     * generation when its history was last set (a write to the base since makes the view's
     * history stale); a detach() alias is a view of values but has its own history */
    struct ltc_ag_meta *ag; /* NULL, or &ag_meta */
    uint64_t ag_gen;
    bool ag_detached;
    struct ltc_ag_meta {
        bool requires_grad; /* a leaf marked with requires_grad_, or a tensor with history */
        bool grad_owned;    /* grad was made by backward's accumulation: updated in place */
        int nr;             /* which output of fn it is */
        struct ltc_grad_fn *fn; /* its history (retained), NULL for a leaf */
        ltc_tensor *grad;   /* the accumulated gradient (retained), or NULL */
        bool retains_grad;  /* a tensor with history that keeps its grad (retain_grad) */
        int n_hooks;        /* register_hook: ids of the binding's hook functions (owned) */
        int *hooks;
        /* on a root (a tensor that is no view): the nodes that saved it or one of its views,
         * as (node, saved slot), weak (autograd.c); an in-place write gives them a copy of
         * the old value first, so no node holds a tensor whose history comes to hold it */
        struct ltc_ag_saver { struct ltc_grad_fn *fn; int slot; } *savers;
        int n_savers, cap_savers;
        struct ltc_ag_saver few[2]; /* savers points here until more are needed */
    } ag_meta;
};

typedef struct ltc_ag_meta ltc_ag_meta;
/* t's autograd history as it was before an in-place write (autograd.c). */
typedef struct ltc_ag_hist {
    struct ltc_grad_fn *fn; /* retained */
    int nr;
    bool requires_grad;
} ltc_ag_hist;
/* Keeps t's autograd history as ag_history[i] (history_push), puts entry i back as t's
 * history (a failed sync rewinding t), and releases entries [from, n). */
void ltc_ag_history_save(ltc_tensor *t, int i);
void ltc_ag_history_restore(ltc_tensor *t, int i);
void ltc_ag_history_drop(ltc_tensor *t, int from, int n);
/* The node releases history_drop deferred: run at the end of a sync and when recording. */
void ltc_ag_flush_deferred(void);
/* Frees t's autograd state (tensor.c, when t goes). */
void ltc_ag_meta_free(ltc_tensor *t);
/* Records out, a copy of src on another device (ltc_tensor_to_device), as src moved when grad
 * mode is on and src requires grad: out gets a to_copy node whose backward moves out's gradient
 * to src's device (autograd.c). Nothing otherwise. */
ltc_status ltc_ag_record_move(ltc_tensor *src, ltc_tensor *out);

/* Before an in-place write replaces t's value: appends the value it holds to t->history
 * (nothing for a tensor with no value; an allocation failure only shortens the history). */
void ltc_tensor_history_push(ltc_tensor *t);
void ltc_tensor_history_clear(ltc_tensor *t);

/* device.c: the default device (what new tensors are made on), and moving data between
 * backends through the host (data_to_host, then data_from_host). */
extern ltc_device ltc_default_dev;
/* The calling thread's device guard (ltc_device_guard): its backend (NULL: none, registry.c)
 * and ordinal. ltc_backend_default() answers the guard's backend while one is set. */
extern _Thread_local ltc_backend *ltc_guard_backend;
extern _Thread_local int ltc_guard_ordinal;
/* Copies bytes [offset, offset + n) of d's value to host: the backend's data_read slot, or
 * its data_to_host of the whole value into a scratch buffer. */
ltc_status ltc_data_read(const ltc_data *d, size_t offset, size_t n, void *host);
/* *out: new data on b (a new reference) holding `host`, the value of `shape`: b's
 * data_from_scalar when `scalar` (and b has one), else its data_from_host. When the slot
 * fails, the message it left is kept as it is (a device backend names the bytes asked for and
 * the device there); a slot that left none gets "out of memory for N bytes on <backend>".
 * Every core path that makes backend data from host bytes goes through here, so no caller
 * overwrites the backend's message with a vaguer one. */
ltc_status ltc_data_from_host(ltc_backend *b, const ltc_shape *shape, const void *host,
                              bool scalar, ltc_data **out);
/* The same for b's data_placeholder (the executor's outputs). */
ltc_status ltc_data_placeholder(ltc_backend *b, const ltc_shape *shape, ltc_data **out);
/* How many errors this thread has set (error.c): a call that fails without changing it left
 * no message of its own. */
unsigned ltc_error_serial(void);
/* *out: new data on `to` holding d's value (a new reference). Counted as DeviceTransfer. */
ltc_status ltc_data_transfer(ltc_data *d, ltc_backend *to, ltc_data **out);
/* A new tensor holding d (the reference is taken over, released on failure), on d's
 * backend. */
ltc_status ltc_tensor_from_data(ltc_data *d, ltc_tensor **out);

/* t's value is about to become pending IR: its data, if any, is kept as t->committed (unless
 * an older value is kept already) instead of released, for a failed sync to restore. */
void ltc_tensor_keep_committed(ltc_tensor *t);
/* The error for using a tensor whose sync failed (t->failed set). */
ltc_status ltc_tensor_failed_error(const ltc_tensor *t);

/* views.c */
/* ltc_tensor_assign_ and ltc_tensor_copy_ without autograd: the value write alone. */
ltc_status ltc_tensor_assign_raw(ltc_tensor *t, ltc_tensor *value);
ltc_status ltc_tensor_copy_raw(ltc_tensor *t, ltc_tensor *src);
/* ltc_tensor_copy_raw of a one-element value: allowed through a view that repeats elements
 * (an expand), since every element gets the same value (PyTorch's fill_). */
ltc_status ltc_tensor_fill_raw(ltc_tensor *t, ltc_tensor *value);
/* True when view t shows an element of its base more than once (an expand that its later
 * steps keep): only a fill can be written through it (PyTorch: "more than one element of the
 * written-to tensor refers to a single memory location"). */
bool ltc_view_repeats(const ltc_tensor *t);
/* Records that `out` = op(src, attrs) is a view of src. */
ltc_status ltc_view_record(ltc_tensor *out, ltc_tensor *src, int op, const ltc_attr *attrs,
                           int n_attrs);
/* Brings a view whose base was written since up to date (new pending IR). */
ltc_status ltc_view_refresh(ltc_tensor *t);
static inline bool ltc_view_stale(const ltc_tensor *t) {
    return t->base && t->generation != t->base->generation;
}

/* The live-tensor list, in creation order (the executor's roots come from it). One list per
 * thread: a thread's syncs compute the tensors it made (each Lua state stays on one thread;
 * a tensor must be released on the thread that made it). */
ltc_tensor *ltc_live_first(void); /* the oldest live tensor (follow t->next), or NULL */
int64_t ltc_live_count(void);

/* A weak 0-d tensor of dtype dt holding the ltc_dtype_size(dt) bytes at v (a wrapped Lua
 * number after promotion); its data may be shared with other weak scalars of the same value
 * (a per-thread cache, tensor.c). ltc_scalar_cache_clear empties this thread's cache. */
ltc_status ltc_tensor_weak_scalar(ltc_dtype dt, const void *v, ltc_tensor **out);
void ltc_scalar_cache_clear(void);
/* Converts t, a weak float64 scalar with data and no IR made by
 * ltc_tensor_from_float_operand (its value in t->num), to a weak scalar of float dtype dt in place (its data
 * replaced by that of the converted value). */
ltc_status ltc_tensor_weak_convert(ltc_tensor *t, ltc_dtype dt);
/* Adds this thread's pending CreateLtcTensor/DestroyLtcTensor counts to the counters. */
void ltc_tensor_counts_flush(void);

/* Installs computed data as a tensor's value, dropping its pending IR. Retains d. */
void ltc_tensor_set_data(ltc_tensor *t, ltc_data *d);

/* The executor's bookkeeping (executor.c). */
void ltc_trace_tick(void);       /* a node was traced */
void ltc_trace_sync_reset(void); /* a sync started */
int64_t ltc_pending_node_count(void);

/* Counters with a cached slot, for hot paths: `static int64_t *c; LTC_COUNT(c, "X", 1);` */
int64_t *ltc_counter_slot(const char *name);
#define LTC_COUNT(slot, name, n)                                                            \
    do {                                                                                    \
        if (!(slot)) (slot) = ltc_counter_slot(name);                                       \
        if (slot) __atomic_fetch_add((slot), (n), __ATOMIC_RELAXED);                        \
    } while (0)

/* Timers as metrics with samples (CompileTime, ExecuteTime), nanoseconds. */
void ltc_metric_add_sample(const char *name, double ns);
double ltc_now_ns(void);

/* The executor's graph walk and compile step, for debug.c. ltc_graph_visit builds the graph
 * of `ts` (n tensors; every live pending tensor when ts is NULL), hashes it as a sync would
 * and calls fn with its lowering context; fn's status is returned. ltc_graph_compile lowers
 * and compiles one context on b (the core allocates the header; caller owns *out). */
typedef ltc_status (*ltc_graph_fn)(const ltc_lowering_ctx *ctx, ltc_hash h, void *ud);
ltc_status ltc_graph_visit(ltc_tensor *const *ts, int n, ltc_graph_fn fn, void *ud);
ltc_status ltc_graph_compile(const ltc_lowering_ctx *ctx, ltc_backend *b, ltc_hash h,
                             ltc_computation **out);
/* Runs c on its backend (execute slot): outs get c->n_outputs new references. When the
 * backend has LTC_BACKEND_FILLS_PLACEHOLDERS, outs arrive filled with its placeholders of the
 * output shapes, which execute fills in place (PyTorch's placeholder data); without, execute
 * makes them. On failure outs are released and NULL. */
ltc_status ltc_execute(ltc_computation *c, ltc_data *const *args, ltc_data **outs);
/* fallback.c: whether b leaves a node of ctx unlowered (its `lowers` slot), and compiling
 * such a graph as a composite of pieces on b and on its eager-fallback backend (*out's
 * header made by ltc_graph_compile; this fills impl and backend). */
bool ltc_fallback_needed(const ltc_lowering_ctx *ctx, ltc_backend *b);
ltc_status ltc_fallback_compile(const ltc_lowering_ctx *ctx, ltc_backend *b, ltc_hash h,
                                ltc_computation **out);
/* debug.c: a sync compiled a graph (a cache miss): explain it, save it (LTC_SAVE_GRAPHS). */
void ltc_debug_note_compile(const ltc_lowering_ctx *ctx, ltc_hash h);
/* debug_explain.c: metrics were reset: compile numbers restart at 1. */
void ltc_debug_metrics_reset(void);
/* debug.c: the interned source location for a new node of `op`, or NULL (LTC_IR_DEBUG off). */
const char *ltc_debug_source(int op);
/* debug.c: one process-lifetime copy of s (equal strings, one pointer); NULL out of memory. */
const char *ltc_debug_intern(const char *s);

/* Small blocks from per-thread free lists (slab.c): tensors and IR nodes. ltc_slab_alloc
 * returns n bytes (uninitialised; NULL when out of memory), ltc_slab_free takes them back
 * with the same n (any thread). Blocks over LTC_SLAB_MAX bytes are plain malloc/free.
 * ltc_slab_trim frees the calling thread's kept blocks. */
#define LTC_SLAB_MAX 1024
void *ltc_slab_alloc(size_t n);
void ltc_slab_free(void *p, size_t n);
void ltc_slab_trim(void);

/* The compile cache (cache.c). */
ltc_computation *ltc_cache_get(ltc_hash h);               /* borrowed, NULL on a miss */
/* Takes ownership and may evict; false if it could not (the caller keeps ownership). */
bool ltc_cache_put(ltc_hash h, ltc_computation *c);
void ltc_cache_clear(void);
int64_t ltc_cache_size(void);
/* The cache's mutex: ltc_sync holds it from look-up to insert (so compiles are serialised
 * and debug.c's compile notes are never concurrent); get/put/clear take it themselves
 * unless the caller holds it (it is recursive). */
void ltc_cache_lock(void);
void ltc_cache_unlock(void);

#endif
