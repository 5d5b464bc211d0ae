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

/* Installs a backend (PyTorch: BackendRegistrar). The first one registered becomes the
 * default unless ltc_backend_set_default names another. At most 8 backends. */
ltc_status ltc_backend_register(ltc_backend *b);
bool ltc_has_backend(const char *name);
ltc_backend *ltc_backend_get(const char *name);       /* NULL if none */
ltc_backend *ltc_backend_default(void);               /* the one syncs compile for */
/* Makes the named backend the one syncs compile for and new data is made on; data made on
 * the other stays usable (host memory). Switching clears the compile cache. */
ltc_status ltc_backend_set_default(const char *name);
ltc_backend *ltc_backend_get_index(int i);            /* i-th registered, NULL past the end */

/* Registers the built-in backends: "cpu" first (the default), then "ref" (the reference
 * backend: the oracle of the specs and the CPU backend's eager fallback). Idempotent. */
void ltc_backends_init(void);

#endif
