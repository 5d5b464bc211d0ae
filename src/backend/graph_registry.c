/* graph_registry.c - graph implementations by device type, the vtable wrappers, pool
 * handles. PyTorch: GraphImplRegistry / has_graph_impl / create_graph_impl. */
#include <pthread.h>
#include <string.h>

#include "ltc_graph.h"

#define MAX_GRAPH_IMPLS 8

static struct {
    const char *device;
    ltc_graph_factory factory;
    ltc_pool_stats_fn pool_stats; /* optional */
} impls[MAX_GRAPH_IMPLS];
static int n_impls;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static ltc_status register_locked(const char *device, ltc_graph_factory factory) {
    if (!device || !factory) return ltc_errorf(LTC_ERR_ARG, "graph_impl_register: NULL device or factory");
    for (int i = 0; i < n_impls; i++)
        if (strcmp(impls[i].device, device) == 0)
            return ltc_errorf(LTC_ERR_STATE, "graph_impl_register: '%s' already has one", device);
    if (n_impls == MAX_GRAPH_IMPLS)
        return ltc_errorf(LTC_ERR_STATE, "graph_impl_register: at most %d", MAX_GRAPH_IMPLS);
    impls[n_impls].device = device;
    impls[n_impls++].factory = factory;
    return LTC_OK;
}

ltc_status ltc_graph_impl_register(const char *device, ltc_graph_factory factory) {
    pthread_mutex_lock(&mu);
    ltc_status st = register_locked(device, factory);
    pthread_mutex_unlock(&mu);
    return st;
}

static ltc_graph_factory find(const char *device) {
    ltc_graph_factory f = NULL;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < n_impls && device; i++)
        if (strcmp(impls[i].device, device) == 0) f = impls[i].factory;
    pthread_mutex_unlock(&mu);
    return f;
}

bool ltc_has_graph_impl(const char *device) { return find(device) != NULL; }

ltc_status ltc_graph_impl_register_pool_stats(const char *device, ltc_pool_stats_fn fn) {
    ltc_status st = LTC_OK;
    int i = 0;
    pthread_mutex_lock(&mu);
    while (i < n_impls && device && strcmp(impls[i].device, device) != 0) i++;
    if (i == n_impls || !fn)
        st = ltc_errorf(LTC_ERR_ARG, "graph_impl_register_pool_stats: %s",
                        fn ? "no graph implementation for that device type" : "NULL function");
    else
        impls[i].pool_stats = fn;
    pthread_mutex_unlock(&mu);
    return st;
}

bool ltc_graph_pool_stats(ltc_mempool_id id, ltc_pool_stats *out) {
    ltc_pool_stats_fn fns[MAX_GRAPH_IMPLS];
    int n = 0;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < n_impls; i++)
        if (impls[i].pool_stats) fns[n++] = impls[i].pool_stats;
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < n; i++) {
        *out = (ltc_pool_stats){0};
        if (fns[i](id, out)) return true;
    }
    return false;
}

ltc_graph *ltc_graph_impl_create(const char *device, const ltc_graph_args *args) {
    ltc_graph_args defaults = LTC_GRAPH_ARGS_INIT;
    ltc_graph_factory f = find(device);
    if (!f) {
        ltc_errorf(LTC_ERR_ARG, "no graph implementation for device type '%s'", device ? device : "(null)");
        return NULL;
    }
    return f(args ? args : &defaults);
}

static uint64_t next_pool = 1; /* handles are 1, 2, ... in the order given out */

ltc_mempool_id ltc_graph_pool_handle(void) {
    return __atomic_fetch_add(&next_pool, 1, __ATOMIC_RELAXED);
}

bool ltc_graph_pool_issued(ltc_mempool_id id) {
    return id >= 1 && id < __atomic_load_n(&next_pool, __ATOMIC_RELAXED);
}

/* ---- wrappers ------------------------------------------------------------------------------ */

ltc_status ltc_graph_capture_begin(ltc_graph *g, ltc_mempool_id pool, ltc_capture_mode mode) {
    if (pool && !ltc_graph_pool_issued(pool)) /* a made-up id would collide with a later one */
        return ltc_errorf(LTC_ERR_ARG, "capture_begin: pool %llu was not made by "
                          "ltc.graph_pool_handle() or g:pool()", (unsigned long long)pool);
    return g->iface->capture_begin(g, pool, mode);
}
ltc_status ltc_graph_capture_end(ltc_graph *g) { return g->iface->capture_end(g); }
ltc_status ltc_graph_instantiate(ltc_graph *g) { return g->iface->instantiate(g); }
ltc_status ltc_graph_replay(ltc_graph *g) { return g->iface->replay(g); }
ltc_status ltc_graph_reset(ltc_graph *g) { return g->iface->reset(g); }
ltc_status ltc_graph_pool(ltc_graph *g, ltc_mempool_id *out) { return g->iface->pool(g, out); }
void ltc_graph_enable_debug_mode(ltc_graph *g) { g->iface->enable_debug_mode(g); }
ltc_status ltc_graph_debug_dump(ltc_graph *g, const char *path) {
    return g->iface->debug_dump(g, path);
}
void ltc_graph_free(ltc_graph *g) {
    if (g) g->iface->free(g);
}
