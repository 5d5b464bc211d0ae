/*
 * core.h - private to src/core: the tensor struct, the live-tensor list, counters.
 */
#ifndef LTC_CORE_H
#define LTC_CORE_H

#include "ltc_backend.h"
#include "ltc_ir.h"

/* A lazy tensor: backend data, or a pending IR value, or both (data plus the cached
 * DEVICE_DATA node that feeds it to graphs). */
struct ltc_tensor {
    int32_t refcount;
    bool weak;          /* a wrapped Lua number (type promotion) */
    ltc_shape shape;
    ltc_data *data;     /* retained; NULL while pending */
    ltc_value ir;       /* retained node; pending value, or DEVICE_DATA for `data` */
    ltc_tensor *prev, *next; /* the live-tensor list */
};

/* The live-tensor list, in creation order (the executor's roots come from it). */
extern ltc_tensor *ltc_live_head;
extern int64_t ltc_live_count;

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
        if (slot) *(slot) += (n);                                                           \
    } while (0)

/* Timers as metrics with samples (CompileTime, ExecuteTime), nanoseconds. */
void ltc_metric_add_sample(const char *name, double ns);
double ltc_now_ns(void);

/* The compile cache (cache.c). */
ltc_computation *ltc_cache_get(ltc_hash h);               /* borrowed, NULL on a miss */
/* Takes ownership and may evict; false if it could not (the caller keeps ownership). */
bool ltc_cache_put(ltc_hash h, ltc_computation *c);
void ltc_cache_clear(void);
int64_t ltc_cache_size(void);

#endif
