/*
 * ltc_backend.h - the backend interface (a C vtable), backend data, lowering contexts,
 * computations, and the backend registry.
 *
 * Responsibilities mirror PyTorch LTC's BackendImplInterface
 * (torch/csrc/lazy/backend/backend_interface.h): exit, RNG seed, IR builder, data
 * transfer, lowering, compile, execute, device configuration, metric report and the text
 * of a compiled computation. Optional slots may be NULL; callers check (ggml style).
 */
#ifndef LTC_BACKEND_H
#define LTC_BACKEND_H

#include <string.h>

#include "ltc_ir.h"

typedef struct ltc_backend ltc_backend;

/* ---- backend data ------------------------------------------------------------------------ */

/* Device memory of one tensor value: contiguous row-major, `shape` describes it.
 * Reference counted; the owning backend frees it (iface.data_free) at refcount 0. */
struct ltc_data {
    int32_t refcount;
    ltc_shape shape;
    void *ptr;     /* host-addressable for the CPU-family backends */
    size_t nbytes;
    ltc_backend *backend;
};

ltc_data *ltc_data_retain(ltc_data *d);
void ltc_data_release(ltc_data *d);

/* ---- lowering context and computations ---------------------------------------------------- */

/* What a backend lowers: one graph in post order. Operand order is node->operands order;
 * node->index is the node's position in `post_order`. Parameters are the DEVICE_DATA nodes,
 * in post order; `roots` are the values the computation returns, in order. */
typedef struct ltc_lowering_ctx {
    const char *name;
    ltc_node *const *post_order;
    int n_nodes;
    const ltc_value *roots;
    int n_roots;
    ltc_node *const *params; /* the DEVICE_DATA nodes of post_order, in order */
    int n_params;
    /* PyTorch's emission map: emitted[i] != 0 once post_order[i] is lowered. Owned by the
     * core, n_nodes entries, zeroed before compile. */
    uint8_t *emitted;
} ltc_lowering_ctx;

/* A compiled computation: the backend's own object behind a common header. It must not
 * keep pointers to IR nodes (they die after the sync); copy what it needs. */
typedef struct ltc_computation {
    ltc_backend *backend;
    ltc_hash hash;          /* the graph hash it was compiled for */
    int n_params;
    ltc_shape *param_shapes; /* n_params, owned */
    int n_outputs;
    ltc_shape *out_shapes;   /* n_outputs, owned */
    void *impl;             /* backend-owned */
    int32_t refcount;       /* references beyond the owner's (0 when only the owner holds
                             * it: zero-initialised headers need no set-up); atomic */
} ltc_computation;

/* Frees a computation: its impl through the backend (iface.computation_free frees only
 * c->impl), then the header the core allocated. With references taken by
 * ltc_computation_retain (a captured graph holds the computations it replays, the compile
 * cache may evict them meanwhile), it drops one reference and frees at the last. */
void ltc_computation_free(ltc_computation *c);
/* Takes a reference (released by ltc_computation_free). Thread-safe. Returns c. */
ltc_computation *ltc_computation_retain(ltc_computation *c);

/* ---- the vtable ----------------------------------------------------------------------------- */

/* 2: the IR-builder slot removed; data_read and lowers added; data_placeholder, data_of_node,
 * prepare_to_exit and metric_report called by the core as documented below.
 * 3: lowers_op added. */
#define LTC_BACKEND_IFACE_VERSION 3

typedef struct ltc_device {
    const char *type; /* "cpu", "ref" */
    int ordinal;
} ltc_device;

/* Each slot and who calls it. Required: data_from_host, data_to_host, data_free, compile,
 * computation_free, execute, default_device, devices (ltc_backend_register checks them).
 *
 * Not here, on purpose: PyTorch's GetIrBuilder (a backend's own node kinds for the nodes the
 * core makes internally: device data, scalars, expand, view, cast). Every node kind comes
 * from ops.yaml (the core's op enum does not depend on any backend, codegen/README.md);
 * the core makes device data and scalars as DEVICE_DATA parameters, expand/view/cast as
 * ordinary ops, and a backend chooses how to lower each kind in compile (or leaves it to
 * the eager fallback with `lowers`). A builder slot would have had no caller. */
struct ltc_backend_i {
    int version; /* LTC_BACKEND_IFACE_VERSION */

    /* At shutdown (the last Lua state using the module closes, ltc_shutdown): free what the
     * backend caches (the CPU backend: its host-memory cache). Optional. */
    void (*prepare_to_exit)(ltc_backend *b);
    /* ltc.manual_seed(seed) calls it on every backend. Optional. */
    void (*set_rng_seed)(ltc_backend *b, uint64_t seed);

    /* data transfer. The core never dereferences d->ptr of a backend's data: it reads values
     * with data_to_host (or data_read) and makes them with data_from_host; ptr is the
     * backend's own business (the CPU family keeps host memory there, others may not). */
    ltc_data *(*data_from_host)(ltc_backend *b, const ltc_shape *shape, const void *host);
    /* A 0-d value (Lua numbers); optional: without it data_from_host makes it. */
    ltc_data *(*data_from_scalar)(ltc_backend *b, const ltc_shape *shape0d, const void *value);
    /* Uninitialised data of a shape. Optional. With LTC_BACKEND_FILLS_PLACEHOLDERS in
     * `flags`, the core hands execute its outputs as such placeholders to fill in place
     * (PyTorch's placeholder data for a computation's results); otherwise execute makes its
     * outputs itself (the CPU backend: from its pools) and the slot is the backend's own. */
    ltc_data *(*data_placeholder)(ltc_backend *b, const ltc_shape *shape);
    /* The data the executor passes for a DEVICE_DATA node (a graph parameter), borrowed, as
     * it is (a backend that reads another backend's data, host memory say, may return it);
     * NULL when the node holds none it takes: the core then moves the node's data to b with
     * the transfer slots when it is another backend's. Optional: without it, as NULL. */
    ltc_data *(*data_of_node)(ltc_backend *b, const ltc_node *n);
    ltc_status (*data_to_host)(ltc_backend *b, const ltc_data *d, void *host);
    void (*data_free)(ltc_backend *b, ltc_data *d);

    /* lowering, compilation, execution. `compile` lowers each context into a computation
     * (fills out[i]->impl and the shapes; the core fills hash and backend). */
    ltc_status (*compile)(ltc_backend *b, const ltc_lowering_ctx *const *ctxs, int n,
                          ltc_computation **out);
    void (*computation_free)(ltc_backend *b, ltc_computation *c);
    /* Runs `c` with args (n_params data, shapes as compiled; all b's data) and fills outs
     * with n_outputs data references: the core's placeholders to fill in place with
     * LTC_BACKEND_FILLS_PLACEHOLDERS (a graph implementation may still pass NULL entries:
     * make those), else new data it makes. */
    ltc_status (*execute)(ltc_backend *b, ltc_computation *c, ltc_data *const *args,
                          ltc_data **outs);

    /* device configuration: the devices (ltc.devices(), device ordinals are checked against
     * the count), the one ltc.default_device() names for the backend, and the backend the
     * core's eager fallback runs unlowered nodes on (`lowers`). */
    ltc_device (*default_device)(ltc_backend *b);
    const char *(*eager_fallback_device_type)(ltc_backend *b);      /* optional */
    int (*devices)(ltc_backend *b, ltc_device *out, int max);

    /* debug / metrics: caller frees the returned strings. metric_report's text (LTC's
     * "Counter: X\n  Value: n\n" format) is appended to ltc.metrics.report(). */
    char *(*metric_report)(ltc_backend *b);                          /* optional */
    char *(*computation_text)(ltc_backend *b, const ltc_computation *c); /* optional */

    /* Bytes [offset, offset + n) of d's value into host (t[i], item, weak-scalar values);
     * optional: without it the core reads the whole value with data_to_host. */
    ltc_status (*data_read)(ltc_backend *b, const ltc_data *d, size_t offset, size_t n,
                            void *host);
    /* Whether the backend lowers node n; optional (NULL: every node). A graph with nodes it
     * does not lower runs those on the backend its eager_fallback_device_type names, the
     * core moving values between the two and counting EagerFallback::<op> (fallback.c). */
    bool (*lowers)(ltc_backend *b, const ltc_node *n);
    /* Whether the backend lowers nodes of kind `op` (an LTC_OP_* value) whose operands and
     * results are of `dtype`: a question about the kind, answered without a node, for code
     * that chooses between a fused op and a composite of ops before tracing either
     * (ltc_device_lowers_op). The answer must not change while the backend is registered
     * (callers cache it); `lowers` keeps the last word on each node. Optional: without it,
     * a backend with a `lowers` slot is taken to lower no kind, one without every kind. */
    bool (*lowers_op)(ltc_backend *b, int op, ltc_dtype dtype);
    /* LTC_BACKEND_* bits. */
    unsigned flags;
};
#define LTC_BACKEND_FILLS_PLACEHOLDERS 1u /* execute fills outputs made by data_placeholder */

struct ltc_backend {
    const char *name;               /* device type: "cpu", "ref" */
    const struct ltc_backend_i *iface;
    void *context;                  /* the backend's own state */
};

/* Whether d is b's data. A backend may hand out data whose `backend` is a private copy of
 * itself with the same name (the CPU graph pools: their own data_free); such data counts as
 * b's: the name decides. */
static inline bool ltc_data_on(const ltc_data *d, const ltc_backend *b) {
    return d->backend == b || (d->backend->name == b->name) ||
           strcmp(d->backend->name, b->name) == 0;
}

/* ---- registry --------------------------------------------------------------------------------- */

#define LTC_MAX_BACKENDS 8
#define LTC_DEVICE_TYPE_MAX 32 /* a device type's length limit, with its terminating NUL */

/* Installs a backend (PyTorch: BackendRegistrar). Thread-safe. `b` and its interface must
 * outlive the process (static storage): the runtime keeps the pointer. Checks, each an
 * LTC_ERR_ARG naming the backend and what is wrong, nothing registered:
 *   - a name (the device type, "cpu"): non-empty, under LTC_DEVICE_TYPE_MAX, no ':';
 *   - iface->version == LTC_BACKEND_IFACE_VERSION (a module built against other headers);
 *   - every required slot set: data_from_host, data_to_host, data_free, compile,
 *     computation_free, execute, default_device, devices ("leaves the required slot 'x'
 *     NULL").
 * LTC_ERR_STATE when the name is taken or LTC_MAX_BACKENDS are registered. The first one
 * registered becomes the default (the Lua module registers "cpu" first). */
ltc_status ltc_backend_register(ltc_backend *b);
bool ltc_has_backend(const char *name);
ltc_backend *ltc_backend_get(const char *name);       /* NULL if none */
/* The one syncs compile for and new data is made on; NULL before any registration. */
ltc_backend *ltc_backend_default(void);
/* Makes the named backend the default. Compiled graphs stay cached (the graph hash covers
 * the backend). LTC_ERR_ARG for an unknown name. */
ltc_status ltc_backend_set_default(const char *name);
ltc_backend *ltc_backend_get_index(int i);            /* i-th registered, NULL past the end */
int ltc_backend_count(void);                          /* how many are registered */

/* ---- devices ----------------------------------------------------------------------------------- */

/* A device is a registered backend's device type and an ordinal below the count its
 * `devices` slot reports ("cpu:0"). PyTorch: c10::Device, torch.set_default_device. */

/* The default device: where new tensors are made (the default backend, ordinal 0 unless
 * set). {NULL, 0} before any registration. */
ltc_device ltc_device_default(void);
/* Makes `dev` the default device (and its backend the default backend). LTC_ERR_ARG for an
 * unknown type or an ordinal the backend does not have. Process-wide. */
ltc_status ltc_device_set_default(ltc_device dev);
/* A device guard (PyTorch's c10::DeviceGuard): for the calling thread only, new tensors are
 * made on `dev` (its backend and ordinal) instead of the default device until the guard is
 * set back. ltc_device_guard sets it and returns the previous guard in *prev ({NULL, 0}: no
 * guard); passing {NULL, 0} removes it. LTC_ERR_ARG as ltc_device_set_default. The
 * creation functions' `device` option (ltc.zeros(2, {device = "toy:0"})) use it, so another
 * thread's tensors are never placed by it. */
ltc_status ltc_device_guard(ltc_device dev, ltc_device *prev);
/* Device following (PyTorch makes what an op creates from nothing on its input's device):
 * when new tensors would not be made on t's device (no guard for it, and t is off the
 * default device), sets the calling thread's guard to t's device, puts the guard it replaces
 * in *prev ({NULL, 0}: none) and returns true; ltc_device_guard(*prev, NULL) restores it.
 * False (nothing changed) when they already would be, or t is NULL. */
bool ltc_device_follow(const ltc_tensor *t, ltc_device *prev);
/* Parses "type" or "type:N" (a registered type; N below its device count). The type string
 * in *out is the backend's own name (static). LTC_ERR_ARG naming the problem otherwise. */
ltc_status ltc_device_parse(const char *s, ltc_device *out);
/* Whether device dev's backend lowers op kind `op` (an LTC_OP_* value) for operands and
 * results of `dtype`: its lowers_op slot's answer (see there for a backend without one); false
 * for an unregistered type or an op out of range. Makes no node, traces nothing. For
 * ltc.nn's LSTM and GRU (the fused layer op or the step-by-step ops) and
 * ltc.debug.lowers_op. */
bool ltc_device_lowers_op(ltc_device dev, int op, ltc_dtype dtype);
/* "type:N" into buf (size bytes, truncated). */
void ltc_device_format(ltc_device d, char *buf, size_t size);
/* The device a tensor lives on: that of its data, or, pending, that of its operands (an op
 * runs on its operands' device; one with none, on the default device). */
ltc_device ltc_tensor_device(const ltc_tensor *t);
/* *out: t on device `dev` (a new reference): t itself when it is there already, else a new
 * tensor with a copy of its value, moved through the host by the two backends' transfer
 * slots (syncs t first; counted as DeviceTransfer). With grad mode on and t requiring grad,
 * the copy has history (a "to_copy" node, PyTorch's ToCopyBackward0): its gradient is moved
 * back to t's device by the same call. LTC_ERR_STATE during a capture in global or
 * thread_local mode (a replay would not repeat the move). */
ltc_status ltc_tensor_to_device(ltc_tensor *t, ltc_device dev, ltc_tensor **out);

/* ---- how an outside module registers a backend ----------------------------------------------
 *
 * A backend is its own Lua C module (say ltc/toy.so, `require "ltc.toy"`), compiled against
 * the installed headers and linked against the runtime's module:
 *
 *     cc -shared -fPIC $(pkg-config --cflags ltc) toy.c -o toy.so $(pkg-config --libs ltc)
 *
 * (ltc.pc, installed by `make install`, gives -I<prefix>/include/ltc and links
 * <prefix>/lib/lua/5.4/ltc/core.so with an rpath, so the module uses the same core.so that
 * `require "ltc"` loaded.) Its luaopen function fills a static vtable with designated
 * initialisers, registers it, and raises the core's message when registration fails:
 *
 *     static const struct ltc_backend_i toy_iface = {
 *         .version = LTC_BACKEND_IFACE_VERSION,
 *         .data_from_host = toy_from_host, .data_to_host = toy_to_host,
 *         .data_free = toy_free, .compile = toy_compile,
 *         .computation_free = toy_comp_free, .execute = toy_execute,
 *         .default_device = toy_default_device, .devices = toy_devices,
 *         .eager_fallback_device_type = toy_fallback, // "cpu": ops it does not lower
 *     };
 *     static ltc_backend toy = {.name = "toy", .iface = &toy_iface};
 *
 *     int luaopen_ltc_toy(lua_State *L) {
 *         lua_getglobal(L, "require"); lua_pushstring(L, "ltc"); lua_call(L, 1, 0);
 *         if (!ltc_has_backend("toy") && ltc_backend_register(&toy))
 *             return luaL_error(L, "ltc.toy: %s", ltc_last_error());
 *         ... ltc_graph_impl_register("toy", toy_graph_new) if it captures ...
 *         lua_newtable(L); return 1;
 *     }
 *
 * Registration is once per process (a second Lua state that requires the module finds the
 * backend registered). Data a backend makes is its own: the core never dereferences
 * ltc_data.ptr, it reads and writes values through data_to_host and data_from_host. */

/* The class label the loss kernels (cross_entropy, nll_loss and their backward ops) ignore:
 * PyTorch's default ignore_index. A row labelled so adds nothing to the loss, the mean
 * divides by the rows not ignored (0/0, NaN, when all are), and its gradient row is 0. Labels
 * are 1-based, the sentinel is not shifted. */
#define LTC_LABEL_IGNORED (-100)

/* The error of a loss kernel (as above) whose target label v is outside 1..c and is not
 * LTC_LABEL_IGNORED, the same on every backend. */
static inline ltc_status ltc_label_range_error(const char *op, int64_t v, int64_t c) {
    return ltc_errorf(LTC_ERR_ARG, "%s: target %lld out of range for %lld classes (labels are "
                      "1-based)", op, (long long)v, (long long)c);
}

#endif
