/*
 * ltc_graph.h - graph capture and replay: a backend-agnostic interface (a C vtable), the
 * registry of implementations keyed by device type, memory-pool handles, and the core's
 * recording API that implementations build on.
 *
 * Modelled on PyTorch's GraphImplInterface (aten/src/ATen/core/GraphImplInterface.h): a
 * graph is created for a device type with construction arguments, captures the work of the
 * calling thread between capture_begin and capture_end, and replays it. The concrete
 * semantics of capture are backend-specific; the CPU implementation (src/cpu/capture.c)
 * documents its own.
 *
 * What the core records during a capture (recorder.c): every sync of the capturing thread,
 * as the computation it ran (retained: the compile cache may evict it) and one binding per
 * argument. An argument is
 *   - a static input: the data a tensor held when the capture began (read again from that
 *     tensor at each replay, so `x:copy_(batch)` between replays feeds new data);
 *   - an output of an earlier recorded sync;
 *   - a random-number state made during the capture (a fresh state at each replay);
 *   - a constant: data made during the capture (Lua numbers, ltc.tensor{...}).
 * At capture_end every tensor alive on the thread whose data changed during the capture is
 * recorded with its final binding: a replay installs the new data into those tensors (the
 * static outputs, and static inputs updated in place such as `w:sub_(lr * g)`).
 */
#ifndef LTC_GRAPH_H
#define LTC_GRAPH_H

#include "ltc_backend.h"

/* ---- capture modes and construction arguments ------------------------------------------ */

/* How a capture interacts with other work (PyTorch's GraphCaptureMode). */
typedef enum {
    LTC_CAPTURE_DEFAULT = 0,  /* the backend's choice (CPU: THREAD_LOCAL) */
    LTC_CAPTURE_GLOBAL,       /* a sync on any other thread is an error while this one
                               * captures; reading a value on this thread is an error */
    LTC_CAPTURE_THREAD_LOCAL, /* other threads work freely; reading a value on this thread
                               * is an error (a replay would not repeat the read) */
    LTC_CAPTURE_RELAXED,      /* everything allowed; a value read during the capture sees
                               * the capture's values and is not repeated by replays */
    LTC_CAPTURE_MODE_COUNT
} ltc_capture_mode;

/* "default", "global", "thread_local", "relaxed". */
const char *ltc_capture_mode_name(ltc_capture_mode m);
/* Parses a mode name; LTC_ERR_ARG naming the valid ones otherwise. */
ltc_status ltc_capture_mode_parse(const char *name, ltc_capture_mode *out);

/* Construction arguments. `size` is sizeof(ltc_graph_args) as the caller compiled it, so
 * the struct can grow: an implementation reads a field only if it lies within `size`.
 * Initialise with LTC_GRAPH_ARGS_INIT. */
typedef struct ltc_graph_args {
    size_t size;
    bool keep_graph; /* keep the raw record after capture_end (instantiate is then explicit
                      * or happens on the first replay; debug_dump works without debug mode) */
} ltc_graph_args;
#define LTC_GRAPH_ARGS_INIT {.size = sizeof(ltc_graph_args), .keep_graph = false}

/* A memory-pool handle (PyTorch's MempoolId_t). 0 means "a private pool of the graph's
 * own"; other values come from ltc_graph_pool_handle() or a graph's pool(). */
typedef uint64_t ltc_mempool_id;

/* A new, unique pool handle (no memory yet: a pool is made by the first capture using it). */
ltc_mempool_id ltc_graph_pool_handle(void);
/* Whether ltc_graph_pool_handle() gave out `id`; ltc_graph_capture_begin refuses others
 * (LTC_ERR_ARG), so a made-up id cannot collide with a handle given out later. */
bool ltc_graph_pool_issued(ltc_mempool_id id);

/* ---- the vtable -------------------------------------------------------------------------- */

#define LTC_GRAPH_IFACE_VERSION 1

typedef struct ltc_graph ltc_graph;

/* Every slot returns LTC_OK or an error status with ltc_last_error() set; misuse (replay
 * before a capture, ...) is LTC_ERR_STATE with a message saying what to do. */
struct ltc_graph_i {
    int version; /* LTC_GRAPH_IFACE_VERSION */
    /* Begins capturing the calling thread's syncs. `pool` 0 uses a private pool. */
    ltc_status (*capture_begin)(ltc_graph *g, ltc_mempool_id pool, ltc_capture_mode mode);
    /* Ends the capture (syncing what is still pending, so it is part of the graph). */
    ltc_status (*capture_end)(ltc_graph *g);
    /* Prepares the captured graph for replay. */
    ltc_status (*instantiate)(ltc_graph *g);
    /* Runs the captured graph again. */
    ltc_status (*replay)(ltc_graph *g);
    /* Drops the captured graph (and ends a capture in progress); the graph can capture
     * again. The pool is released once no graph and no data uses it. */
    ltc_status (*reset)(ltc_graph *g);
    /* The pool the graph captured into. */
    ltc_status (*pool)(ltc_graph *g, ltc_mempool_id *out);
    /* Per graph: extra checks on replay, and keeps the record for debug_dump. */
    void (*enable_debug_mode)(ltc_graph *g);
    /* Writes the captured graph to `path` (the CPU backend: Graphviz DOT). */
    ltc_status (*debug_dump)(ltc_graph *g, const char *path);
    /* Frees the graph (resetting it first). */
    void (*free)(ltc_graph *g);
};

struct ltc_graph {
    const struct ltc_graph_i *iface;
    const char *device; /* the device type it was created for (static string) */
    void *impl;         /* the implementation's state */
};

/* Convenience wrappers: g->iface->slot(g, ...). */
ltc_status ltc_graph_capture_begin(ltc_graph *g, ltc_mempool_id pool, ltc_capture_mode mode);
ltc_status ltc_graph_capture_end(ltc_graph *g);
ltc_status ltc_graph_instantiate(ltc_graph *g);
ltc_status ltc_graph_replay(ltc_graph *g);
ltc_status ltc_graph_reset(ltc_graph *g);
ltc_status ltc_graph_pool(ltc_graph *g, ltc_mempool_id *out);
void ltc_graph_enable_debug_mode(ltc_graph *g);
ltc_status ltc_graph_debug_dump(ltc_graph *g, const char *path);
void ltc_graph_free(ltc_graph *g); /* NULL is a no-op */

/* ---- registry ------------------------------------------------------------------------------ */

/* Makes a graph from the arguments; NULL with the error set on failure. */
typedef ltc_graph *(*ltc_graph_factory)(const ltc_graph_args *args);

/* Registers the implementation for a device type ("cpu"). LTC_ERR_STATE if one is already
 * registered for it, LTC_ERR_ARG for a NULL name or factory. At most 8 entries. */
ltc_status ltc_graph_impl_register(const char *device, ltc_graph_factory factory);
/* Whether a device type has a graph implementation (the built-in "cpu" one is registered
 * when the Lua module opens, src/lua/ltc_builtins.c). */
bool ltc_has_graph_impl(const char *device);
/* A new graph for the device type (NULL args: the defaults), or NULL with the error set
 * ("no graph implementation for device type 'x'") for an unknown device. Caller frees it
 * with ltc_graph_free. */
ltc_graph *ltc_graph_impl_create(const char *device, const ltc_graph_args *args);

/* Statistics of a memory pool (ltc.graph_pool_info), as an implementation reports them. */
typedef struct ltc_pool_stats {
    int graphs;           /* graphs using the pool */
    int64_t live;         /* data made by the pool and still held (by tensors or replays) */
    int64_t free_buffers; /* buffers kept for reuse */
    int64_t bytes;        /* bytes the pool holds: live and free buffers, and its arena */
    int64_t mallocs;      /* buffers it had to allocate */
    int64_t reuses;       /* allocations served from its free buffers */
} ltc_pool_stats;
/* An implementation's statistics of pool `id`: false when it has no pool of that id. */
typedef bool (*ltc_pool_stats_fn)(ltc_mempool_id id, ltc_pool_stats *out);
/* Registers how the graph implementation of `device` (registered before) reports its pools
 * (optional). LTC_ERR_ARG for an unknown device or a NULL fn. */
ltc_status ltc_graph_impl_register_pool_stats(const char *device, ltc_pool_stats_fn fn);
/* The statistics of pool `id` from the implementation that holds it; false when none does
 * (never made, or released). */
bool ltc_graph_pool_stats(ltc_mempool_id id, ltc_pool_stats *out);

/* ---- pool bookkeeping, for implementations -------------------------------------------------
 *
 * What every graph implementation's memory pool keeps the same way (graph_pool.c): pools by
 * device type and handle, how many graphs use each, free buffers by byte size (a buffer a
 * replay let go serves the next request of that size, so steady-state replays allocate
 * nothing), and the figures ltc.graph_pool_info reports. A buffer is the implementation's
 * own (`void *`): it makes them, and the callbacks free them. Graphs sharing a handle share
 * the free lists; they must replay in capture order, never concurrently. Thread-safe: one
 * lock over every pool; the callbacks run under it and must not call these functions. */
typedef struct ltc_pool ltc_pool;
typedef struct ltc_pool_i {
    /* At creation (under the lock): the implementation's context for the pool, from `arg`
     * of ltc_pool_acquire; NULL fails the acquire. Optional (ctx NULL). */
    void *(*ctx_new)(ltc_pool *p, void *arg);
    /* Frees one buffer for good (a free one when the last graph goes, a released one the
     * free lists do not keep). Required. */
    void (*destroy)(void *ctx, void *item);
    /* The last graph let go: free the scratch the context keeps (buffers may still be held
     * by tensors); returns the bytes it counted with ltc_pool_add_bytes. Optional. */
    int64_t (*trim)(void *ctx);
    /* The pool goes (no graph, no buffer held): free the context. Optional. */
    void (*finalize)(void *ctx);
} ltc_pool_i;

/* The pool of `device` with handle `id` (made with iface, arg if new), with one more graph
 * using it. NULL with the error set when out of memory. */
ltc_pool *ltc_pool_acquire(const char *device, ltc_mempool_id id, const ltc_pool_i *iface,
                           void *arg);
/* A graph stops using p; with none left its free buffers are destroyed, and once no buffer
 * is held either the pool is freed. NULL is a no-op. */
void ltc_pool_release(ltc_pool *p);
void *ltc_pool_ctx(const ltc_pool *p);
ltc_mempool_id ltc_pool_id(const ltc_pool *p);
/* A free buffer of byte size `size` (counted as a reuse and live), or NULL: then the caller
 * makes one and calls ltc_pool_count_new (room for taking it back is already reserved).
 * `unit` is what one buffer of that size counts for in the pool's bytes. *st is set when
 * the free lists cannot grow (LTC_ERR_NOMEM). */
void *ltc_pool_get(ltc_pool *p, size_t size, size_t unit, ltc_status *st);
void ltc_pool_count_new(ltc_pool *p, size_t unit);
/* A buffer of the pool was let go: kept for reuse while a graph uses the pool, else
 * destroyed (which may free the pool). */
void ltc_pool_put(ltc_pool *p, void *item, size_t size);
/* Bytes the implementation holds for the pool beyond its buffers (the CPU's arena). */
void ltc_pool_add_bytes(ltc_pool *p, int64_t delta);
/* The figures of `device`'s pool `id`; false when it has none (an ltc_pool_stats_fn's body). */
bool ltc_pool_stats_of(const char *device, ltc_mempool_id id, ltc_pool_stats *out);

/* ---- the core's recording API, for implementations ----------------------------------------- */

typedef enum {
    LTC_BIND_TENSOR, /* static input: the bound tensor's data when the replay runs */
    LTC_BIND_OUTPUT, /* output `index` of recorded step `step` */
    LTC_BIND_CONST,  /* constant data */
    LTC_BIND_RNG,    /* a generator state {seed, offset + rng_delta} made at replay */
} ltc_bind_kind;

typedef struct ltc_binding {
    ltc_bind_kind kind;
    int step, index;    /* LTC_BIND_OUTPUT */
    ltc_tensor *tensor; /* LTC_BIND_TENSOR: retained by the record */
    ltc_data *data;     /* LTC_BIND_CONST, LTC_BIND_RNG (the capture's state): retained */
    int64_t rng_delta;  /* LTC_BIND_RNG: the state's offset minus the generator's offset
                         * when the capture began */
} ltc_binding;

/* One recorded sync. */
typedef struct ltc_capture_step {
    ltc_computation *comp; /* retained */
    int n_args;
    ltc_binding *args;     /* one per computation parameter */
} ltc_capture_step;

/* A tensor the replay writes: `tensor` (retained) gets `value` at the end of a replay. */
typedef struct ltc_capture_install {
    ltc_tensor *tensor;
    ltc_binding value;
} ltc_capture_install;

typedef struct ltc_capture_record {
    ltc_capture_mode mode;
    int n_steps;
    ltc_capture_step *steps;
    int n_installs;
    ltc_capture_install *installs;
    uint64_t rng_advance; /* how far the capture advanced the default generator */
    int64_t rebinds;      /* ltc_tensor_rebinds() at capture_end: when it changed, a replay
                           * checks that each static input still has the captured shape,
                           * dtype and device (Module:to converts parameters in place) */
} ltc_capture_record;

/* Starts recording the calling thread's syncs. Syncs pending work first (it is not part of
 * the capture). `backend`/`exec_ctx` are handed back by ltc_capture_exec_ctx to that
 * backend's execute while the capture runs (the CPU backend: the pool to allocate outputs
 * from). `mode` must not be DEFAULT (the implementation resolves it). LTC_ERR_STATE if the
 * thread already captures. */
ltc_status ltc_capture_start(ltc_capture_mode mode, ltc_backend *backend, void *exec_ctx);
/* Syncs what is pending, stops recording and hands over the record (caller frees it with
 * ltc_capture_record_free). On failure the capture is aborted. */
ltc_status ltc_capture_finish(ltc_capture_record **out);
/* Stops recording and drops what was recorded (no-op when the thread does not capture). */
void ltc_capture_abort(void);
void ltc_capture_record_free(ltc_capture_record *r);
/* Whether the calling thread captures. */
bool ltc_capture_active(void);
/* Whether t is a static input of the calling thread's capture (it existed when the capture
 * began); false when the thread does not capture. */
bool ltc_capture_is_static(const ltc_tensor *t);
/* The exec_ctx given to ltc_capture_start when the calling thread captures and `b` is the
 * capture's backend; NULL otherwise. */
void *ltc_capture_exec_ctx(ltc_backend *b);

/* Called by the core. ltc_capture_check_sync: LTC_ERR_STATE when another thread captures in
 * global mode. ltc_capture_check_read: LTC_ERR_STATE when this thread captures in global or
 * thread_local mode (a value read would not be repeated by a replay). */
ltc_status ltc_capture_check_sync(void);
/* LTC_ERR_STATE naming both when this thread captures for one backend and a sync would run
 * on another (a replay of the capture's implementation would not repeat it). */
ltc_status ltc_capture_check_backend(const ltc_backend *b);
ltc_status ltc_capture_check_read(void);
/* The executor ran `c` with `args` (c->n_params) giving `outs` (c->n_outputs). */
ltc_status ltc_capture_note_sync(ltc_computation *c, ltc_data *const *args, ltc_data *const *outs);
/* ltc_rng_state_tensor made a state tensor for offset `offset` (trace.c). */
void ltc_capture_note_rng(ltc_tensor *state, uint64_t offset);

/* The default generator's state, and advancing it (what ltc_rng_state_tensor does). */
void ltc_rng_state_get(uint64_t *seed, uint64_t *offset);
/* Returns the offset before the advance. */
uint64_t ltc_rng_advance(uint64_t delta);

/* Tensor helpers for replays. ltc_tensor_data: the data a tensor holds, borrowed (NULL while
 * it is pending). ltc_tensor_install: each ts[i] takes ds[i] (retained) as its new value, as
 * an in-place write would (views of a written base see the change). ltc_tensor_share: a new
 * tensor holding t's data (t must hold data), so a later install into t leaves it alone. */
ltc_data *ltc_tensor_data(ltc_tensor *t);
/* Whether t holds its value as data that nothing else uses, so that an in-place write may go
 * straight into that buffer: t is no view, has no pending or failed value, and is the only
 * holder of its data (its DEVICE_DATA node, if one was made, is held by t alone: no graph,
 * saved value or other tensor refers to it). Makes no node. */
bool ltc_tensor_owns_data(ltc_tensor *t);
void ltc_tensor_install(ltc_tensor *const *ts, ltc_data *const *ds, int n);
ltc_status ltc_tensor_share(ltc_tensor *t, ltc_tensor **out);

/* ---- the capture lifecycle, for implementations -------------------------------------------
 *
 * What every graph implementation does the same way (graph_base.c): the states (empty,
 * capturing, captured), the misuse errors, the pool taken at capture_begin (ltc_pool, above),
 * the record, keep_graph and debug mode, instantiation (by capture_end, or explicitly with
 * keep_graph, or lazily by the first replay), and the GraphCapture/GraphReplay counters. An
 * implementation's struct starts with an ltc_graph_base, is malloc'd (free() frees it after
 * a reset), and is set up by ltc_graph_base_init with its hooks. */
typedef struct ltc_graph_base ltc_graph_base;
typedef struct ltc_graph_hooks {
    const char *device;           /* the device type (static string) */
    const ltc_pool_i *pool_iface; /* its pools' callbacks */
    /* capture_begin: refuse when syncs run on a backend it cannot capture. Optional. */
    ltc_status (*check_backend)(ltc_graph_base *gb);
    /* The backend the capture records, and the exec_ctx its execute gets during the capture
     * (ltc_capture_start) from the pool (exec_ctx NULL: the ltc_pool itself). */
    ltc_backend *(*capture_backend)(void);
    void *(*exec_ctx)(ltc_pool *p);
    /* Builds what replays run from gb->rec (a second call replaces the first's). Optional. */
    ltc_status (*instantiate)(ltc_graph_base *gb);
    /* Runs the captured graph (instantiated; the record if replays_record). Required. */
    ltc_status (*replay)(ltc_graph_base *gb);
    /* Frees what instantiate built. Optional. */
    void (*drop)(ltc_graph_base *gb);
    /* Writes gb->rec to path. Optional. */
    ltc_status (*debug_dump)(ltc_graph_base *gb, const char *path);
    bool replays_record; /* replay reads gb->rec: keep it after instantiating */
} ltc_graph_hooks;

struct ltc_graph_base {
    ltc_graph g;
    const ltc_graph_hooks *hooks;
    bool keep_graph, debug;
    int state, instantiations;
    ltc_capture_mode mode;
    ltc_pool *pool;          /* from capture_begin until reset */
    ltc_capture_record *rec; /* NULL once instantiated without keep_graph, debug or
                              * replays_record */
    void *inst;              /* the implementation's instantiated graph */
};

/* Sets up gb (zeroed before) as a graph of hooks->device with the construction arguments. */
void ltc_graph_base_init(ltc_graph_base *gb, const ltc_graph_hooks *hooks,
                         const ltc_graph_args *args);

#endif
