/* registry.c - the backend registry, and the helpers on backend data and computations.
 *
 * Registration is serialised by a mutex and checked (interface version, every required
 * slot). Readers take no lock: the table only grows, and an entry is published (the count
 * stored with release order) after it is written, so a reader that sees the count sees the
 * entry. The registry names no concrete backend: whoever opens the runtime (the Lua module,
 * src/lua/ltc_builtins.c) registers the built-in ones, outside modules their own. */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ltc_backend.h"

static ltc_backend *backends[LTC_MAX_BACKENDS];
static int n_backends;              /* published with release order */
static ltc_backend *default_backend; /* atomic */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* The required slots, by name and offset in the vtable. */
static const struct {
    const char *name;
    size_t offset;
} required[] = {
#define SLOT(s) {#s, offsetof(struct ltc_backend_i, s)}
    SLOT(data_from_host), SLOT(data_to_host), SLOT(data_free),    SLOT(compile),
    SLOT(computation_free), SLOT(execute),    SLOT(default_device), SLOT(devices),
#undef SLOT
};

static ltc_status check(const ltc_backend *b) {
    if (!b) return ltc_errorf(LTC_ERR_ARG, "backend_register: NULL backend");
    if (!b->name || !b->name[0])
        return ltc_errorf(LTC_ERR_ARG, "backend_register: the backend has no name (device type)");
    if (strlen(b->name) >= LTC_DEVICE_TYPE_MAX || strchr(b->name, ':'))
        return ltc_errorf(LTC_ERR_ARG, "backend_register: bad device type '%s' (at most %d "
                          "characters, no ':')", b->name, LTC_DEVICE_TYPE_MAX - 1);
    if (!b->iface)
        return ltc_errorf(LTC_ERR_ARG, "backend_register: backend '%s' has no interface", b->name);
    if (b->iface->version != LTC_BACKEND_IFACE_VERSION)
        return ltc_errorf(LTC_ERR_ARG, "backend_register: backend '%s' has interface version %d, "
                          "this runtime implements version %d (rebuild it against these headers)",
                          b->name, b->iface->version, LTC_BACKEND_IFACE_VERSION);
    for (size_t i = 0; i < sizeof required / sizeof *required; i++) {
        void *slot;
        memcpy(&slot, (const char *)b->iface + required[i].offset, sizeof slot);
        if (!slot)
            return ltc_errorf(LTC_ERR_ARG, "backend_register: backend '%s' leaves the required "
                              "slot '%s' NULL", b->name, required[i].name);
    }
    return LTC_OK;
}

ltc_status ltc_backend_register(ltc_backend *b) {
    ltc_status st = check(b);
    if (st) return st;
    pthread_mutex_lock(&mu);
    if (ltc_has_backend(b->name)) {
        st = ltc_errorf(LTC_ERR_STATE, "backend_register: '%s' is already registered", b->name);
    } else if (n_backends == LTC_MAX_BACKENDS) {
        st = ltc_errorf(LTC_ERR_STATE, "backend_register: at most %d backends", LTC_MAX_BACKENDS);
    } else {
        backends[n_backends] = b;
        __atomic_store_n(&n_backends, n_backends + 1, __ATOMIC_RELEASE);
        if (!default_backend) __atomic_store_n(&default_backend, b, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&mu);
    return st;
}

ltc_backend *ltc_backend_get(const char *name) {
    int n = __atomic_load_n(&n_backends, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n && name; i++)
        if (strcmp(backends[i]->name, name) == 0) return backends[i];
    return NULL;
}

bool ltc_has_backend(const char *name) { return ltc_backend_get(name) != NULL; }

ltc_backend *ltc_backend_get_index(int i) {
    return i >= 0 && i < __atomic_load_n(&n_backends, __ATOMIC_ACQUIRE) ? backends[i] : NULL;
}

int ltc_backend_count(void) { return __atomic_load_n(&n_backends, __ATOMIC_ACQUIRE); }

/* The thread's device guard (device.c sets it): its backend, or NULL. */
_Thread_local ltc_backend *ltc_guard_backend;

ltc_backend *ltc_backend_default(void) {
    if (ltc_guard_backend) return ltc_guard_backend;
    return __atomic_load_n(&default_backend, __ATOMIC_ACQUIRE);
}

ltc_status ltc_backend_set_default(const char *name) {
    ltc_backend *b = ltc_backend_get(name);
    if (!b) return ltc_errorf(LTC_ERR_ARG, "no backend named '%s'", name ? name : "(null)");
    /* no cache to clear: the graph hash covers the backend it compiles for (executor.c) */
    __atomic_store_n(&default_backend, b, __ATOMIC_RELEASE);
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
