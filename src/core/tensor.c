/* tensor.c - lazy tensors: lifetime, the live-tensor list, values, host transfer. */
#include <pthread.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "core.h"
#include "ltc_graph.h"

/* This thread's live tensors (a list from head to tail, count of them), and the tensors made
 * and freed here and not yet added to the counters: an atomic add per tensor cost more than
 * the rest of making one (flushed before counters are read (metrics.c), at each sync, and
 * every COUNT_BATCH). One struct: one thread-local address look-up per function (a
 * __tls_get_addr call each in a dlopen'ed module) rather than one per variable. */
static _Thread_local struct {
    ltc_tensor *head, *tail;
    int64_t count, created, destroyed;
} live;
static int64_t *c_create, *c_destroy;
#define COUNT_BATCH 1024

ltc_tensor *ltc_live_first(void) { return live.head; }
int64_t ltc_live_count(void) { return live.count; }

void ltc_tensor_counts_flush(void) {
    if (live.created) LTC_COUNT(c_create, "CreateLtcTensor", live.created);
    if (live.destroyed) LTC_COUNT(c_destroy, "DestroyLtcTensor", live.destroyed);
    live.created = live.destroyed = 0;
}

/* A new tensor of `shape` with one reference, linked at the end of the live list. */
static ltc_tensor *tensor_alloc(const ltc_shape *shape) {
    ltc_tensor *t = ltc_slab_alloc(sizeof *t);
    if (!t) {
        ltc_errorf(LTC_ERR_NOMEM, "out of memory for a tensor");
        return NULL;
    }
    /* (ag_meta is cleared when first used, ltc_ag_meta_of) */
    memset(t, 0, offsetof(ltc_tensor, ag_meta));
    t->refcount = 1;
    t->shape = *shape;
    t->backend = ltc_backend_default();
    t->ordinal = !t->backend ? 0
                 : ltc_guard_backend ? ltc_guard_ordinal
                 : ltc_default_dev.type == t->backend->name ? ltc_default_dev.ordinal : 0;
    t->prev = live.tail;
    if (live.tail) live.tail->next = t;
    else live.head = t;
    live.tail = t;
    live.count++;
    if (++live.created == COUNT_BATCH) ltc_tensor_counts_flush();
    return t;
}

ltc_tensor *ltc_tensor_retain(ltc_tensor *t) {
    if (t) t->refcount++;
    return t;
}

void ltc_tensor_release(ltc_tensor *t) {
    if (!t) return;
    if (--t->refcount > 0) {
        t->once = false; /* (a number made for one op call: its caller is done with it) */
        return;
    }
    if (t->prev) t->prev->next = t->next;
    else live.head = t->next;
    if (t->next) t->next->prev = t->prev;
    else live.tail = t->prev;
    live.count--;
    if (++live.destroyed == COUNT_BATCH) ltc_tensor_counts_flush();
    ltc_node_release(t->ir.node);
    ltc_data_release(t->data);
    /* (the rare parts tested first: most tensors have none, and each call costs) */
    if (t->committed) ltc_data_release(t->committed);
    if (t->failed) free(t->failed);
    if (t->n_history) ltc_tensor_history_clear(t);
    if (t->history) free(t->history), free(t->ag_history);
    if (t->ag) ltc_ag_meta_free(t);
    if (t->base) ltc_tensor_release(t->base);
    if (t->steps) free(t->steps);
    ltc_slab_free(t, sizeof *t);
}

/* Wraps new backend data (reference taken over) in a tensor. */
static ltc_status tensor_from_data(ltc_data *d, bool weak, ltc_tensor **out) {
    ltc_tensor *t = tensor_alloc(&d->shape);
    if (!t) {
        ltc_data_release(d);
        return LTC_ERR_NOMEM;
    }
    t->data = d;
    t->weak = weak;
    if (t->backend && !ltc_data_on(d, t->backend)) { /* the registered one, not a copy */
        ltc_backend *rb = ltc_backend_get(d->backend->name);
        if (rb) t->backend = rb, t->ordinal = 0;
    }
    *out = t;
    return LTC_OK;
}

ltc_status ltc_tensor_from_data(ltc_data *d, ltc_tensor **out) {
    return tensor_from_data(d, false, out);
}

ltc_status ltc_tensor_from_host(const ltc_shape *shape, const void *host, ltc_tensor **out) {
    ltc_backend *b = ltc_backend_default();
    if (!b) return ltc_errorf(LTC_ERR_STATE, "tensor: no backend is registered");
    ltc_data *d;
    ltc_status st = ltc_data_from_host(b, shape, host, false, &d);
    return st ? st : tensor_from_data(d, false, out);
}

/* The data of weak scalars, by backend, dtype and value: one per thread, direct-mapped. A
 * loop that multiplies by the same Lua numbers makes their data once (PyTorch LTC keeps
 * such a cache of scalar device data too). Every use still gets its own tensor and
 * DEVICE_DATA node, so graphs and their hashes are as without the cache. Backend data of
 * parameters is never written, so sharing it is safe; not while the thread captures a graph
 * (a capture tells its inputs apart by their data). Data refcounts are not atomic: the
 * cache is per thread like the tensors that hold its data. */
#define SCALAR_SLOTS 64
typedef struct {
    ltc_data *data;
    ltc_backend *backend;
    ltc_dtype dtype;
    uint64_t bits;
} scalar_slot;
/* (on the heap, made at first use: thread-local storage stays small enough for the loader
 * to place it statically, where each access is a load rather than a __tls_get_addr call) */
static _Thread_local scalar_slot *scalar_cache;
static pthread_key_t scalar_key;
static pthread_once_t scalar_once = PTHREAD_ONCE_INIT;

static void scalar_cache_clear_at(scalar_slot *c) {
    for (int i = 0; c && i < SCALAR_SLOTS; i++) {
        ltc_data_release(c[i].data);
        c[i].data = NULL;
    }
}
static void scalar_cache_exit(void *p) {
    scalar_cache_clear_at(p);
    free(p);
}
static void scalar_make_key(void) { (void)pthread_key_create(&scalar_key, scalar_cache_exit); }

void ltc_scalar_cache_clear(void) { scalar_cache_clear_at(scalar_cache); }

/* This thread's cache, made at first use (NULL when that fails: no caching). */
static scalar_slot *scalar_cache_get(void) {
    if (scalar_cache) return scalar_cache;
    pthread_once(&scalar_once, scalar_make_key);
    scalar_slot *c = calloc(SCALAR_SLOTS, sizeof *c);
    if (c && pthread_setspecific(scalar_key, c)) {
        free(c);
        return NULL;
    }
    return scalar_cache = c;
}

/* data_from_scalar is optional: a 0-d value is also host data of its dtype. NULL on
 * failure, with the backend's message kept (ltc_data_from_host). */
static ltc_data *from_scalar(ltc_backend *b, const ltc_shape *s, const void *v) {
    ltc_data *d;
    return ltc_data_from_host(b, s, v, true, &d) ? NULL : d;
}

/* New data (one reference) of a 0-d `dt` holding the bytes at v (ltc_dtype_size(dt)). */
static ltc_data *scalar_data(ltc_backend *b, ltc_dtype dt, const void *v) {
    ltc_shape s = {.dtype = dt, .ndim = 0};
    uint64_t bits = 0;
    memcpy(&bits, v, ltc_dtype_size(dt));
    if (ltc_capture_active()) return from_scalar(b, &s, v);
    uint64_t h = (bits ^ (bits >> 29) ^ (uint64_t)dt * 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
    scalar_slot *cache = scalar_cache_get();
    if (!cache) return from_scalar(b, &s, v);
    scalar_slot *e = &cache[h >> 58];
    if (e->data && e->bits == bits && e->dtype == dt && e->backend == b)
        return ltc_data_retain(e->data);
    ltc_data *d = from_scalar(b, &s, v);
    if (!d) return NULL;
    ltc_data_release(e->data);
    *e = (scalar_slot){ltc_data_retain(d), b, dt, bits};
    return d;
}

static ltc_status scalar(ltc_dtype dt, const void *v, bool weak, ltc_tensor **out) {
    ltc_backend *b = ltc_backend_default();
    if (!b) return ltc_errorf(LTC_ERR_STATE, "tensor: no backend is registered");
    ltc_data *d = weak ? scalar_data(b, dt, v) : NULL;
    if (!weak) {
        ltc_shape s = {.dtype = dt, .ndim = 0};
        d = from_scalar(b, &s, v);
    }
    if (!d) return LTC_ERR_NOMEM; /* from_scalar left the message (bytes and device) */
    return tensor_from_data(d, weak, out);
}

ltc_status ltc_tensor_weak_scalar(ltc_dtype dt, const void *v, ltc_tensor **out) {
    return scalar(dt, v, true, out);
}

ltc_status ltc_tensor_from_int(int64_t v, bool weak, ltc_tensor **out) {
    return scalar(LTC_I64, &v, weak, out);
}

ltc_status ltc_tensor_from_float(double v, bool weak, ltc_tensor **out) {
    return scalar(LTC_F64, &v, weak, out);
}

ltc_status ltc_tensor_from_float_operand(double v, ltc_tensor **out) {
    ltc_status st = scalar(LTC_F64, &v, true, out);
    if (!st) (*out)->once = true, (*out)->num = v;
    return st;
}

ltc_status ltc_tensor_weak_convert(ltc_tensor *t, ltc_dtype dt) {
    uint64_t v[1];
    ltc_dtype_store_f64(v, dt, 0, t->num);
    ltc_backend *b = ltc_backend_default();
    if (!b) return ltc_errorf(LTC_ERR_STATE, "tensor: no backend is registered");
    ltc_data *d = scalar_data(b, dt, v);
    if (!d) return LTC_ERR_NOMEM;
    ltc_data_release(t->data);
    t->data = d;
    t->shape.dtype = dt;
    return LTC_OK;
}

ltc_status ltc_tensor_from_bool(bool v, bool weak, ltc_tensor **out) {
    uint8_t b = v;
    return scalar(LTC_BOOL, &b, weak, out);
}

const ltc_shape *ltc_tensor_shape(const ltc_tensor *t) { return &t->shape; }
bool ltc_tensor_is_weak(const ltc_tensor *t) { return t->weak; }

bool ltc_tensor_has_value(const ltc_tensor *t) { return !t->failed; }

bool ltc_tensor_is_pending(const ltc_tensor *t) {
    return ltc_view_stale(t) || (t->ir.node && t->ir.node->op != LTC_OP_DEVICE_DATA);
}

void ltc_tensor_keep_committed(ltc_tensor *t) {
    if (t->data && !t->committed) t->committed = t->data;
    else ltc_data_release(t->data);
    t->data = NULL;
}

ltc_status ltc_tensor_failed_error(const ltc_tensor *t) {
    return ltc_errorf(LTC_ERR_STATE, "this tensor has no value: the sync that was to compute it "
                      "failed (%s)", t->failed);
}

ltc_status ltc_tensor_value(ltc_tensor *t, ltc_value *out) {
    if (t->failed) return ltc_tensor_failed_error(t);
    if (ltc_view_stale(t)) {
        ltc_status st = ltc_view_refresh(t);
        if (st) return st;
    }
    if (!t->ir.node) { /* data only: make its DEVICE_DATA node once */
        ltc_node *n = ltc_node_new(LTC_OP_DEVICE_DATA, NULL, 0, NULL, 0, &t->shape, 1);
        if (!n) return LTC_ERR_NOMEM;
        n->data = ltc_data_retain(t->data);
        t->ir = (ltc_value){n, 0};
    }
    *out = t->ir;
    return LTC_OK;
}

ltc_status ltc_tensor_from_value(ltc_value v, ltc_tensor **out) {
    ltc_tensor *t = tensor_alloc(&v.node->shapes[v.index]);
    if (!t) return LTC_ERR_NOMEM;
    t->ir = v;
    ltc_node_retain(v.node);
    t->data = ltc_node_held_data(v.node);
    *out = t;
    return LTC_OK;
}

ltc_data *ltc_node_held_data(const ltc_node *n) {
    /* a computed value: the tensor holds its data as any computed tensor does */
    return n->op == LTC_OP_DEVICE_DATA ? ltc_data_retain(n->data) : NULL;
}

void ltc_tensor_history_push(ltc_tensor *t) {
    ltc_value v = t->ir;
    if (!v.node && !t->data) return; /* no value (failed) */
    if (v.node && v.node->op == LTC_OP_DEVICE_DATA) v = (ltc_value){NULL, 0}; /* its data */
    if (t->n_history == t->cap_history) {
        int nc = t->cap_history ? t->cap_history * 2 : 4;
        ltc_value *h = realloc(t->history, sizeof *h * (size_t)nc);
        if (!h) return;
        t->history = h;
        ltc_ag_hist *a = realloc(t->ag_history, sizeof *a * (size_t)nc);
        if (!a) return; /* (history keeps its larger block; the capacity stays) */
        t->ag_history = a;
        t->cap_history = nc;
    }
    ltc_ag_history_save(t, t->n_history);
    t->history[t->n_history++] = (ltc_value){ltc_node_retain(v.node), v.index};
}

void ltc_tensor_history_clear(ltc_tensor *t) {
    for (int i = 0; i < t->n_history; i++) ltc_node_release(t->history[i].node);
    ltc_ag_history_drop(t, 0, t->n_history);
    t->n_history = 0;
}

void ltc_tensor_set_data(ltc_tensor *t, ltc_data *d) {
    ltc_tensor_history_clear(t);
    ltc_data_retain(d);
    ltc_data_release(t->data);
    t->data = d;
    ltc_data_release(t->committed);
    t->committed = NULL;
    free(t->failed);
    t->failed = NULL;
    ltc_node_release(t->ir.node);
    t->ir = (ltc_value){NULL, 0};
}

ltc_status ltc_tensor_to_host(ltc_tensor *t, void *host) {
    ltc_status st = ltc_capture_check_read(); /* a capture cannot repeat a host read */
    if (st) return st;
    if (t->failed) return ltc_tensor_failed_error(t);
    if (ltc_tensor_is_pending(t)) {
        st = ltc_sync();
        if (st) return st;
    }
    if (!t->data) return ltc_errorf(LTC_ERR_STATE, "tensor has no data after sync");
    return t->data->backend->iface->data_to_host(t->data->backend, t->data, host);
}

/* Reads element `flat` into a double and an int64 (whichever the caller wants). */
static ltc_status read_elem(ltc_tensor *t, int64_t flat, double *f, int64_t *i) {
    uint64_t elem[1];
    if (flat < 0 || flat >= ltc_shape_numel(&t->shape))
        return ltc_errorf(LTC_ERR_ARG, "element %lld out of range", (long long)flat);
    ltc_status cst = ltc_capture_check_read();
    if (cst) return cst;
    if (t->failed) return ltc_tensor_failed_error(t);
    if (ltc_tensor_is_pending(t)) {
        ltc_status st = ltc_sync();
        if (st) return st;
    }
    if (!t->data) return ltc_errorf(LTC_ERR_STATE, "tensor has no data after sync");
    ltc_status st = ltc_data_read(t->data, (size_t)flat * ltc_dtype_size(t->shape.dtype),
                                  ltc_dtype_size(t->shape.dtype), elem);
    if (st) return st;
    *f = ltc_dtype_load_f64(elem, t->shape.dtype, 0);
    *i = ltc_dtype_load_i64(elem, t->shape.dtype, 0);
    return LTC_OK;
}

ltc_status ltc_tensor_read_f64(ltc_tensor *t, int64_t flat, double *out) {
    int64_t unused;
    return read_elem(t, flat, out, &unused);
}

ltc_status ltc_tensor_read_i64(ltc_tensor *t, int64_t flat, int64_t *out) {
    double unused;
    return read_elem(t, flat, &unused, out);
}

void ltc_live_info_get(ltc_live_info *out) {
    ltc_ag_flush_deferred(); /* nodes waiting to go: what they hold is not live */
    memset(out, 0, sizeof *out);
    out->live_tensors = live.count;
    for (ltc_tensor *t = live.head; t; t = t->next)
        if (ltc_tensor_is_pending(t)) out->pending_tensors++;
    out->pending_nodes = ltc_pending_node_count();
}
