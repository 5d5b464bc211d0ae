/*
 * graph_pool.c - the bookkeeping of graph memory pools, shared by the graph implementations
 * (the CPU's src/cpu/capture.c, the OpenCL module's src/opencl/capture.c): pools by device
 * type and handle, the graphs using each, free buffers by byte size, and the figures of
 * ltc.graph_pool_info. What a buffer is, how it is made and freed, is the implementation's
 * (the ltc_pool_i callbacks); see ltc_graph.h.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ltc_graph.h"

typedef struct {
    size_t size;  /* the byte size the implementation keys buffers by */
    size_t unit;  /* bytes one buffer counts for in the pool's figure */
    void **items;
    int n, cap;
} bucket;

struct ltc_pool {
    char device[LTC_DEVICE_TYPE_MAX];
    ltc_mempool_id id;
    const ltc_pool_i *iface;
    void *ctx;
    int graphs;
    int64_t live, mallocs, reuses, bytes;
    bucket *buckets;
    int n_buckets;
    struct ltc_pool *next;
};

/* One mutex for every pool: a few operations per replay, and buffers may be released on any
 * thread. Callbacks run with it held and must not call back into these functions. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static ltc_pool *pools;

static ltc_pool *find(const char *device, ltc_mempool_id id) {
    ltc_pool *p = pools;
    while (p && (p->id != id || strcmp(p->device, device))) p = p->next;
    return p;
}

/* With no graph left, the free buffers go; with no buffer held either, the pool goes. */
static void maybe_free(ltc_pool *p) {
    if (p->graphs > 0) return;
    for (int i = 0; i < p->n_buckets; i++) {
        for (int k = 0; k < p->buckets[i].n; k++) {
            p->bytes -= (int64_t)p->buckets[i].unit;
            p->iface->destroy(p->ctx, p->buckets[i].items[k]);
        }
        p->buckets[i].n = 0;
    }
    if (p->iface->trim) p->bytes -= p->iface->trim(p->ctx);
    if (p->live > 0) return; /* the buffers still held come back through ltc_pool_put */
    for (ltc_pool **pp = &pools; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    if (p->iface->finalize) p->iface->finalize(p->ctx);
    for (int i = 0; i < p->n_buckets; i++) free(p->buckets[i].items);
    free(p->buckets);
    free(p);
}

ltc_pool *ltc_pool_acquire(const char *device, ltc_mempool_id id, const ltc_pool_i *iface,
                           void *arg) {
    ltc_pool *p = NULL;
    if (!device || strlen(device) >= LTC_DEVICE_TYPE_MAX) {
        ltc_errorf(LTC_ERR_ARG, "graph pool: bad device type");
        return NULL;
    }
    pthread_mutex_lock(&mu);
    p = find(device, id);
    if (!p && (p = calloc(1, sizeof *p))) {
        strcpy(p->device, device);
        p->id = id;
        p->iface = iface;
        if (iface->ctx_new && !(p->ctx = iface->ctx_new(p, arg))) {
            free(p);
            p = NULL;
        } else {
            p->next = pools;
            pools = p;
        }
    }
    if (p) p->graphs++;
    pthread_mutex_unlock(&mu);
    if (!p) ltc_errorf(LTC_ERR_NOMEM, "capture_begin: out of memory for a %s pool", device);
    return p;
}

void ltc_pool_release(ltc_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&mu);
    p->graphs--;
    maybe_free(p);
    pthread_mutex_unlock(&mu);
}

void *ltc_pool_ctx(const ltc_pool *p) { return p->ctx; }
ltc_mempool_id ltc_pool_id(const ltc_pool *p) { return p->id; }

static bucket *bucket_of(ltc_pool *p, size_t size) {
    for (int i = 0; i < p->n_buckets; i++)
        if (p->buckets[i].size == size) return &p->buckets[i];
    return NULL;
}

void *ltc_pool_get(ltc_pool *p, size_t size, size_t unit, ltc_status *st) {
    void *item = NULL;
    *st = LTC_OK;
    pthread_mutex_lock(&mu);
    bucket *bk = bucket_of(p, size);
    if (!bk) {
        bucket *nb = realloc(p->buckets, sizeof *nb * (size_t)(p->n_buckets + 1));
        if (!nb) goto nomem;
        p->buckets = nb;
        bk = &p->buckets[p->n_buckets++];
        *bk = (bucket){.size = size, .unit = unit};
    }
    if (bk->n > 0) {
        item = bk->items[--bk->n];
        p->reuses++;
        p->live++;
    } else if (bk->cap <= p->live + 1) { /* room to take back every buffer of this size */
        int nc = bk->cap ? bk->cap * 2 : 8;
        while (nc <= p->live + 1) nc *= 2;
        void **ni = realloc(bk->items, sizeof *ni * (size_t)nc);
        if (!ni) goto nomem;
        bk->items = ni;
        bk->cap = nc;
    }
    pthread_mutex_unlock(&mu);
    return item;
nomem:
    pthread_mutex_unlock(&mu);
    *st = ltc_errorf(LTC_ERR_NOMEM, "graph pool: out of memory for its free lists");
    return NULL;
}

void ltc_pool_count_new(ltc_pool *p, size_t unit) {
    pthread_mutex_lock(&mu);
    p->mallocs++;
    p->live++;
    p->bytes += (int64_t)unit;
    pthread_mutex_unlock(&mu);
}

void ltc_pool_put(ltc_pool *p, void *item, size_t size) {
    pthread_mutex_lock(&mu);
    p->live--;
    bucket *bk = bucket_of(p, size);
    if (p->graphs > 0 && bk && bk->n < bk->cap) {
        bk->items[bk->n++] = item;
    } else {
        p->bytes -= (int64_t)(bk ? bk->unit : 0);
        p->iface->destroy(p->ctx, item);
        maybe_free(p);
    }
    pthread_mutex_unlock(&mu);
}

void ltc_pool_add_bytes(ltc_pool *p, int64_t delta) {
    pthread_mutex_lock(&mu);
    p->bytes += delta;
    pthread_mutex_unlock(&mu);
}

bool ltc_pool_stats_of(const char *device, ltc_mempool_id id, ltc_pool_stats *out) {
    pthread_mutex_lock(&mu);
    ltc_pool *p = find(device, id);
    if (p) {
        *out = (ltc_pool_stats){.graphs = p->graphs, .live = p->live, .bytes = p->bytes,
                                .mallocs = p->mallocs, .reuses = p->reuses};
        for (int i = 0; i < p->n_buckets; i++) out->free_buffers += p->buckets[i].n;
    }
    pthread_mutex_unlock(&mu);
    return p != NULL;
}
