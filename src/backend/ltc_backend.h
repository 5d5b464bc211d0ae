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

#define LTC_BACKEND_IFACE_VERSION 1

typedef struct ltc_device {
    const char *type; /* "cpu", "ref" */
    int ordinal;
} ltc_device;

struct ltc_backend_i {
    int version; /* LTC_BACKEND_IFACE_VERSION */

    /* initialization / teardown */
    void (*prepare_to_exit)(ltc_backend *b);                        /* optional */
    /* configuration */
    void (*set_rng_seed)(ltc_backend *b, uint64_t seed);            /* optional */
    /* IR tracing: node kinds of the backend's own, NULL for the core's default builder */
    const void *(*get_ir_builder)(ltc_backend *b);                   /* optional */

    /* data transfer */
    ltc_data *(*data_from_host)(ltc_backend *b, const ltc_shape *shape, const void *host);
    ltc_data *(*data_from_scalar)(ltc_backend *b, const ltc_shape *shape0d, const void *value);
    ltc_data *(*data_placeholder)(ltc_backend *b, const ltc_shape *shape); /* uninitialised */
    ltc_data *(*data_of_node)(ltc_backend *b, const ltc_node *n);  /* borrowed; optional */
    ltc_status (*data_to_host)(ltc_backend *b, const ltc_data *d, void *host);
    void (*data_free)(ltc_backend *b, ltc_data *d);

    /* lowering, compilation, execution. `compile` lowers each context into a computation
     * (fills out[i]->impl and the shapes; the core fills hash and backend). */
    ltc_status (*compile)(ltc_backend *b, const ltc_lowering_ctx *const *ctxs, int n,
                          ltc_computation **out);
    void (*computation_free)(ltc_backend *b, ltc_computation *c);
    /* Runs `c` with args (n_params data, shapes as compiled) and writes n_outputs new data
     * references into outs. */
    ltc_status (*execute)(ltc_backend *b, ltc_computation *c, ltc_data *const *args,
                          ltc_data **outs);

    /* device configuration */
    ltc_device (*default_device)(ltc_backend *b);
    const char *(*eager_fallback_device_type)(ltc_backend *b);      /* optional */
    int (*devices)(ltc_backend *b, ltc_device *out, int max);

    /* debug / metrics: caller frees the returned strings */
    char *(*metric_report)(ltc_backend *b);                          /* optional */
    char *(*computation_text)(ltc_backend *b, const ltc_computation *c); /* optional */
};

struct ltc_backend {
    const char *name;               /* device type: "cpu", "ref" */
    const struct ltc_backend_i *iface;
    void *context;                  /* the backend's own state */
};

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

#endif
