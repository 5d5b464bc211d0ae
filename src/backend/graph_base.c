/*
 * graph_base.c - the capture lifecycle every graph implementation shares (ltc_graph_base in
 * ltc_graph.h): the states (empty, capturing, captured), the misuse errors, the pool taken
 * at capture_begin, the record, keep_graph and debug mode, lazy instantiation and the
 * GraphCapture/GraphReplay counters. What a capture is instantiated into and how it replays
 * are the implementation's hooks (the CPU's src/cpu/capture.c, the OpenCL module's
 * src/opencl/capture.c).
 */
#include <stddef.h>
#include <stdlib.h>

#include "ltc_graph.h"

enum { G_EMPTY, G_CAPTURING, G_CAPTURED };

static ltc_graph_base *base_of(ltc_graph *g) { return (ltc_graph_base *)g; }

static ltc_status b_capture_begin(ltc_graph *g, ltc_mempool_id pool, ltc_capture_mode mode) {
    ltc_graph_base *gb = base_of(g);
    const ltc_graph_hooks *h = gb->hooks;
    if (gb->state == G_CAPTURING)
        return ltc_errorf(LTC_ERR_STATE, "capture_begin: the graph is already capturing");
    if (gb->state == G_CAPTURED)
        return ltc_errorf(LTC_ERR_STATE, "capture_begin: this graph already owns a captured graph "
                          "(call reset() first, or use another Graph)");
    if ((unsigned)mode >= LTC_CAPTURE_MODE_COUNT)
        return ltc_errorf(LTC_ERR_ARG, "capture_begin: bad capture mode %d", (int)mode);
    if (mode == LTC_CAPTURE_DEFAULT) mode = LTC_CAPTURE_THREAD_LOCAL;
    ltc_status st = h->check_backend ? h->check_backend(gb) : LTC_OK;
    if (st) return st;
    ltc_pool *p = ltc_pool_acquire(h->device, pool ? pool : ltc_graph_pool_handle(),
                                   h->pool_iface, NULL);
    if (!p) return LTC_ERR_NOMEM;
    st = ltc_capture_start(mode, h->capture_backend(), h->exec_ctx ? h->exec_ctx(p) : p);
    if (st) {
        ltc_pool_release(p);
        return st;
    }
    gb->pool = p;
    gb->mode = mode;
    gb->state = G_CAPTURING;
    return LTC_OK;
}

static void drop(ltc_graph_base *gb) {
    if (gb->hooks->drop) gb->hooks->drop(gb);
    ltc_capture_record_free(gb->rec);
    gb->rec = NULL;
    ltc_pool_release(gb->pool);
    gb->pool = NULL;
    gb->instantiations = 0;
    gb->state = G_EMPTY;
}

static ltc_status b_instantiate(ltc_graph *g) {
    ltc_graph_base *gb = base_of(g);
    if (gb->state == G_CAPTURING)
        return ltc_errorf(LTC_ERR_STATE, "instantiate: the capture has not ended (call "
                          "capture_end first)");
    if (gb->state == G_EMPTY)
        return ltc_errorf(LTC_ERR_STATE, "instantiate: nothing captured yet (capture_begin, "
                          "then capture_end)");
    if (gb->instantiations && !gb->keep_graph)
        return ltc_errorf(LTC_ERR_STATE, "instantiate: already instantiated by capture_end, "
                          "which drops the raw graph when keep_graph is false (create the "
                          "Graph with keep_graph = true to instantiate explicitly)");
    ltc_status st = gb->hooks->instantiate ? gb->hooks->instantiate(gb) : LTC_OK;
    if (!st) gb->instantiations++;
    return st;
}

static ltc_status b_capture_end(ltc_graph *g) {
    ltc_graph_base *gb = base_of(g);
    if (gb->state != G_CAPTURING)
        return ltc_errorf(LTC_ERR_STATE, "capture_end: the graph is not capturing (call "
                          "capture_begin first)");
    ltc_capture_record *r = NULL;
    ltc_status st = ltc_capture_finish(&r);
    if (st) {
        drop(gb);
        return st;
    }
    gb->rec = r;
    gb->state = G_CAPTURED;
    ltc_counter_add("GraphCapture", 1);
    if (gb->keep_graph) return LTC_OK;
    if ((st = b_instantiate(g))) {
        drop(gb);
        return st;
    }
    if (!gb->debug && !gb->hooks->replays_record) { /* keep_graph = false: the raw record goes */
        ltc_capture_record_free(gb->rec);
        gb->rec = NULL;
    }
    return LTC_OK;
}

static ltc_status b_replay(ltc_graph *g) {
    ltc_graph_base *gb = base_of(g);
    if (gb->state == G_CAPTURING)
        return ltc_errorf(LTC_ERR_STATE, "replay: the graph is still capturing (call capture_end "
                          "first)");
    if (gb->state == G_EMPTY)
        return ltc_errorf(LTC_ERR_STATE, "replay: nothing captured yet (capture_begin, then "
                          "capture_end)");
    if (ltc_capture_active())
        return ltc_errorf(LTC_ERR_STATE, "replay: this thread is capturing a graph");
    ltc_status st = ltc_capture_check_sync();
    if (st) return ltc_error_prefix(st, "replay");
    if (!gb->instantiations && (st = b_instantiate(g))) return st; /* keep_graph: on the first */
    if ((st = gb->hooks->replay(gb))) return st;
    ltc_counter_add("GraphReplay", 1);
    return LTC_OK;
}

static ltc_status b_reset(ltc_graph *g) {
    ltc_graph_base *gb = base_of(g);
    if (gb->state == G_CAPTURING) ltc_capture_abort();
    drop(gb);
    return LTC_OK;
}

static ltc_status b_pool(ltc_graph *g, ltc_mempool_id *out) {
    ltc_graph_base *gb = base_of(g);
    if (!gb->pool)
        return ltc_errorf(LTC_ERR_STATE, "pool: nothing captured yet (the pool is chosen at "
                          "capture_begin)");
    *out = ltc_pool_id(gb->pool);
    return LTC_OK;
}

static void b_enable_debug_mode(ltc_graph *g) { base_of(g)->debug = true; }

static ltc_status b_debug_dump(ltc_graph *g, const char *path) {
    ltc_graph_base *gb = base_of(g);
    if (gb->state == G_CAPTURING)
        return ltc_errorf(LTC_ERR_STATE, "debug_dump: the graph is still capturing");
    if (gb->state == G_EMPTY)
        return ltc_errorf(LTC_ERR_STATE, "debug_dump: nothing captured yet");
    if (!gb->rec)
        return ltc_errorf(LTC_ERR_STATE, "debug_dump: the graph kept no record to dump: call "
                          "enable_debug_mode() before capture_end, or create the Graph with "
                          "keep_graph = true");
    if (!gb->hooks->debug_dump)
        return ltc_errorf(LTC_ERR_STATE, "debug_dump: the %s graph cannot dump", gb->hooks->device);
    return gb->hooks->debug_dump(gb, path);
}

static void b_free(ltc_graph *g) {
    b_reset(g);
    free(g); /* the implementation's struct starts with its base */
}

static const struct ltc_graph_i base_iface = {
    .version = LTC_GRAPH_IFACE_VERSION,
    .capture_begin = b_capture_begin,
    .capture_end = b_capture_end,
    .instantiate = b_instantiate,
    .replay = b_replay,
    .reset = b_reset,
    .pool = b_pool,
    .enable_debug_mode = b_enable_debug_mode,
    .debug_dump = b_debug_dump,
    .free = b_free,
};

void ltc_graph_base_init(ltc_graph_base *gb, const ltc_graph_hooks *hooks,
                         const ltc_graph_args *args) {
    gb->g = (ltc_graph){.iface = &base_iface, .device = hooks->device, .impl = gb};
    gb->hooks = hooks;
    /* a field is read only if the caller's struct has it */
    if (args && args->size >= offsetof(ltc_graph_args, keep_graph) + sizeof args->keep_graph)
        gb->keep_graph = args->keep_graph;
}
