/* registry.c - the backend registry, and the helpers on backend data and computations. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ltc_backend.h"

#define MAX_BACKENDS 8

static ltc_backend *backends[MAX_BACKENDS];
static int n_backends;
static ltc_backend *default_backend;

ltc_status ltc_backend_register(ltc_backend *b) {
    if (!b || !b->iface || b->iface->version != LTC_BACKEND_IFACE_VERSION)
        return ltc_errorf(LTC_ERR_ARG, "backend_register: missing or incompatible interface");
    if (ltc_has_backend(b->name))
        return ltc_errorf(LTC_ERR_STATE, "backend_register: '%s' is already registered", b->name);
    if (n_backends == MAX_BACKENDS)
        return ltc_errorf(LTC_ERR_STATE, "backend_register: at most %d backends", MAX_BACKENDS);
    backends[n_backends++] = b;
    if (!default_backend) default_backend = b;
    return LTC_OK;
}

ltc_backend *ltc_backend_get(const char *name) {
    for (int i = 0; i < n_backends; i++)
        if (strcmp(backends[i]->name, name) == 0) return backends[i];
    return NULL;
}

bool ltc_has_backend(const char *name) { return ltc_backend_get(name) != NULL; }

ltc_backend *ltc_backend_get_index(int i) { return i >= 0 && i < n_backends ? backends[i] : NULL; }

ltc_backend *ltc_backend_default(void) {
    if (!default_backend) ltc_backends_init();
    return default_backend;
}

ltc_status ltc_backend_set_default(const char *name) {
    ltc_backend *b = ltc_backend_get(name);
    if (!b) return ltc_errorf(LTC_ERR_ARG, "no backend named '%s'", name);
    /* the compile cache is keyed by graph hash only: drop the other backend's programs */
    if (default_backend && b != default_backend) ltc_shutdown();
    default_backend = b;
    return LTC_OK;
}

ltc_data *ltc_data_retain(ltc_data *d) {
    if (d) d->refcount++;
    return d;
}

void ltc_data_release(ltc_data *d) {
    if (!d || --d->refcount > 0) return;
    d->backend->iface->data_free(d->backend, d);
}

ltc_computation *ltc_computation_retain(ltc_computation *c) {
    if (c) __atomic_fetch_add(&c->refcount, 1, __ATOMIC_RELAXED);
    return c;
}

void ltc_computation_free(ltc_computation *c) {
    if (!c) return;
    /* another holder remains: drop one reference (refcount counts the extra ones) */
    int32_t n = __atomic_load_n(&c->refcount, __ATOMIC_ACQUIRE);
    while (n > 0)
        if (__atomic_compare_exchange_n(&c->refcount, &n, n - 1, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            return;
    if (c->impl) c->backend->iface->computation_free(c->backend, c);
    free(c->param_shapes);
    free(c->out_shapes);
    free(c);
}

extern ltc_backend *ltc_cpu_backend(void);
extern ltc_backend *ltc_ref_backend(void);

static void backends_init_once(void) {
    ltc_config_init();
    ltc_backend_register(ltc_cpu_backend());
    ltc_backend_register(ltc_ref_backend());
}

/* Once per process, whichever thread (Lua state) opens the module first. */
void ltc_backends_init(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, backends_init_once);
}
