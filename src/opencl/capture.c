/*
 * capture.c - the `opencl` graph implementation (ltc.Graph{device = "opencl"}, ltc.jit on
 * the opencl backend), on the core's recorder (ltc_graph.h).
 *
 * A capture records the syncs of the calling thread: each computation (its kernels, GEMMs
 * and fallback steps, already lowered and built) with one binding per argument. A replay
 * re-enqueues those steps with the arguments the bindings resolve to (static inputs'
 * current data, earlier steps' outputs, constants, fresh random states) and installs the
 * results into the tensors the capture wrote: no tracing, no hashing, no cache look-up.
 * A computation with nodes the device does not lower (the core's eager-fallback composite)
 * is replayed through its own execute.
 *
 * Pools: the buffers the captured runs and the replays write come from the graph's pool
 * (the shared bookkeeping of src/backend/graph_pool.c over this backend's buffers): a buffer
 * a replay let go serves the next request of its size class, so steady-state replays take
 * nothing from the allocator. Graphs given the same handle share the free buffers and must
 * replay in capture order. ltc.graph_pool_info reports them. Modes: default is
 * thread_local, as on the CPU.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

typedef enum { G_EMPTY, G_CAPTURING, G_CAPTURED } gstate;

typedef struct {
    ltc_graph g;
    bool keep_graph, debug, instantiated;
    gstate state;
    ltc_pool *pool;
    ltc_capture_record *rec;
} ocl_graph;

static ocl_graph *impl_of(ltc_graph *g) { return (ocl_graph *)g; }

static ltc_status g_capture_begin(ltc_graph *g, ltc_mempool_id pool, ltc_capture_mode mode) {
    ocl_graph *og = impl_of(g);
    if (og->state == G_CAPTURING)
        return ltc_errorf(LTC_ERR_STATE, "capture_begin: the graph is already capturing");
    if (og->state == G_CAPTURED)
        return ltc_errorf(LTC_ERR_STATE, "capture_begin: this graph already owns a captured graph "
                          "(call reset() first, or use another Graph)");
    if ((unsigned)mode >= LTC_CAPTURE_MODE_COUNT)
        return ltc_errorf(LTC_ERR_ARG, "capture_begin: bad capture mode %d", (int)mode);
    if (mode == LTC_CAPTURE_DEFAULT) mode = LTC_CAPTURE_THREAD_LOCAL;
    if (ltc_backend_default() != ocl_backend())
        return ltc_errorf(LTC_ERR_STATE, "capture_begin: the opencl graph captures the opencl "
                          "backend, but syncs run on '%s' (ltc.set_backend(\"opencl\"))",
                          ltc_backend_default()->name);
    ltc_pool *p = ltc_pool_acquire("opencl", pool ? pool : ltc_graph_pool_handle(),
                                   &ocl_pool_iface, NULL);
    if (!p) return LTC_ERR_NOMEM;
    ltc_status st = ltc_capture_start(mode, ocl_backend(), p); /* execute allocates from p */
    if (st) {
        ltc_pool_release(p);
        return st;
    }
    og->pool = p;
    og->state = G_CAPTURING;
    return LTC_OK;
}

static void drop(ocl_graph *og) {
    ltc_capture_record_free(og->rec);
    og->rec = NULL;
    ltc_pool_release(og->pool);
    og->pool = NULL;
    og->instantiated = false;
    og->state = G_EMPTY;
}

static ltc_status g_instantiate(ltc_graph *g) {
    ocl_graph *og = impl_of(g);
    if (og->state == G_CAPTURING)
        return ltc_errorf(LTC_ERR_STATE, "instantiate: the capture has not ended (call "
                          "capture_end first)");
    if (og->state == G_EMPTY)
        return ltc_errorf(LTC_ERR_STATE, "instantiate: nothing captured yet (capture_begin, "
                          "then capture_end)");
    if (og->instantiated && !og->keep_graph)
        return ltc_errorf(LTC_ERR_STATE, "instantiate: already instantiated by capture_end, "
                          "which drops the raw graph when keep_graph is false (create the "
                          "Graph with keep_graph = true to instantiate explicitly)");
    og->instantiated = true;
    return LTC_OK;
}

static ltc_status g_capture_end(ltc_graph *g) {
    ocl_graph *og = impl_of(g);
    if (og->state != G_CAPTURING)
        return ltc_errorf(LTC_ERR_STATE, "capture_end: the graph is not capturing (call "
                          "capture_begin first)");
    ltc_capture_record *r = NULL;
    ltc_status st = ltc_capture_finish(&r);
    if (st) {
        drop(og);
        return st;
    }
    og->rec = r;
    og->state = G_CAPTURED;
    ltc_counter_add("GraphCapture", 1);
    if (!og->keep_graph && (st = g_instantiate(g))) drop(og);
    return st;
}

/* The data a binding resolves to (a new reference). */
static ltc_data *resolve(const ltc_binding *b, ltc_data ***outs, uint64_t seed, uint64_t base) {
    switch (b->kind) {
    case LTC_BIND_TENSOR: return ltc_data_retain(ltc_tensor_data(b->tensor));
    case LTC_BIND_OUTPUT: return ltc_data_retain(outs[b->step][b->index]);
    case LTC_BIND_RNG: {
        int64_t state[2] = {(int64_t)seed, (int64_t)(base + (uint64_t)b->rng_delta)};
        return ocl_backend()->iface->data_from_host(ocl_backend(), &b->data->shape, state);
    }
    default: return ltc_data_retain(b->data);
    }
}

static ltc_status g_replay(ltc_graph *g) {
    ocl_graph *og = impl_of(g);
    if (og->state == G_CAPTURING)
        return ltc_errorf(LTC_ERR_STATE, "replay: the graph is still capturing (call capture_end "
                          "first)");
    if (og->state == G_EMPTY)
        return ltc_errorf(LTC_ERR_STATE, "replay: nothing captured yet (capture_begin, then "
                          "capture_end)");
    if (ltc_capture_active())
        return ltc_errorf(LTC_ERR_STATE, "replay: this thread is capturing a graph");
    ltc_status st = ltc_capture_check_sync();
    if (st) return ltc_error_prefix(st, "replay");
    if (!og->instantiated && (st = g_instantiate(g))) return st;
    ltc_capture_record *r = og->rec;
    /* static inputs still pending (x:copy_(batch)) are synced first */
    for (int i = 0; i < r->n_steps; i++)
        for (int k = 0; k < r->steps[i].n_args; k++)
            if (r->steps[i].args[k].kind == LTC_BIND_TENSOR &&
                !ltc_tensor_data(r->steps[i].args[k].tensor)) {
                if ((st = ltc_sync())) return st;
                i = r->n_steps;
                break;
            }
    uint64_t seed = 0, unused, base = ltc_rng_advance(r->rng_advance);
    ltc_rng_state_get(&seed, &unused);
    ltc_data ***outs = calloc((size_t)r->n_steps + 1, sizeof *outs);
    ltc_data **inst = calloc((size_t)r->n_installs + 1, sizeof *inst);
    ltc_tensor **inst_t = calloc((size_t)r->n_installs + 1, sizeof *inst_t);
    if (!outs || !inst || !inst_t) {
        st = ltc_errorf(LTC_ERR_NOMEM, "replay: out of memory");
        goto done;
    }
    for (int i = 0; i < r->n_steps && !st; i++) {
        ltc_capture_step *s = &r->steps[i];
        ltc_data **args = calloc((size_t)s->n_args + 1, sizeof *args);
        outs[i] = calloc((size_t)s->comp->n_outputs + 1, sizeof **outs);
        if (!args || !outs[i]) {
            free(args);
            st = ltc_errorf(LTC_ERR_NOMEM, "replay: out of memory");
            break;
        }
        for (int k = 0; k < s->n_args && !st; k++) {
            args[k] = resolve(&s->args[k], outs, seed, base);
            if (!args[k]) st = ltc_errorf(LTC_ERR_STATE, "replay: step %d argument %d has no "
                                          "data", i + 1, k + 1);
            else if (og->debug && !ltc_shape_equal(&args[k]->shape, &s->comp->param_shapes[k]))
                st = ltc_errorf(LTC_ERR_STATE, "replay (debug): step %d argument %d does not "
                                "have the captured shape", i + 1, k + 1);
        }
        ltc_computation *c = s->comp;
        if (!st) /* the device's own steps from the pool; a fallback composite as it runs */
            st = c->backend == ocl_backend() ? ocl_run(c->impl, args, outs[i], og->pool)
                                             : c->backend->iface->execute(c->backend, c, args,
                                                                          outs[i]);
        for (int k = 0; k < s->n_args; k++) ltc_data_release(args[k]);
        free(args);
    }
    if (!st) {
        for (int i = 0; i < r->n_installs; i++) {
            inst_t[i] = r->installs[i].tensor;
            inst[i] = resolve(&r->installs[i].value, outs, seed, base);
        }
        ltc_tensor_install(inst_t, inst, r->n_installs);
        ltc_counter_add("GraphReplay", 1);
    }
done:
    if (inst)
        for (int i = 0; i < r->n_installs; i++) ltc_data_release(inst[i]);
    if (outs)
        for (int i = 0; i < r->n_steps; i++) {
            if (!outs[i]) continue;
            for (int k = 0; k < r->steps[i].comp->n_outputs; k++) ltc_data_release(outs[i][k]);
            free(outs[i]);
        }
    free(outs);
    free(inst);
    free(inst_t);
    return st;
}

static ltc_status g_reset(ltc_graph *g) {
    ocl_graph *og = impl_of(g);
    if (og->state == G_CAPTURING) ltc_capture_abort();
    drop(og);
    return LTC_OK;
}

static ltc_status g_pool(ltc_graph *g, ltc_mempool_id *out) {
    ocl_graph *og = impl_of(g);
    if (!og->pool)
        return ltc_errorf(LTC_ERR_STATE, "pool: nothing captured yet (the pool is chosen at "
                          "capture_begin)");
    *out = ltc_pool_id(og->pool);
    return LTC_OK;
}

static void g_enable_debug_mode(ltc_graph *g) { impl_of(g)->debug = true; }

static ltc_status g_debug_dump(ltc_graph *g, const char *path) {
    ocl_graph *og = impl_of(g);
    if (!og->rec)
        return ltc_errorf(LTC_ERR_STATE, "debug_dump: nothing captured yet");
    FILE *f = fopen(path, "w");
    if (!f) return ltc_errorf(LTC_ERR_IO, "debug_dump: cannot write %s", path);
    fprintf(f, "digraph opencl_capture {\n");
    for (int i = 0; i < og->rec->n_steps; i++) {
        const ltc_capture_step *s = &og->rec->steps[i];
        if (s->comp->backend != ocl_backend()) {
            fprintf(f, "  s%d [shape=box label=\"step %d: %s computation\"];\n", i, i + 1,
                    s->comp->backend->name);
        } else {
            const ocl_comp *c = s->comp->impl;
            fprintf(f, "  s%d [shape=box label=\"step %d: %d kernels, %d device steps\"];\n",
                    i, i + 1, c->n_kernels, c->n_steps);
        }
        for (int k = 0; k < s->n_args; k++)
            if (s->args[k].kind == LTC_BIND_OUTPUT)
                fprintf(f, "  s%d -> s%d [label=\"out %d -> arg %d\"];\n", s->args[k].step, i,
                        s->args[k].index, k);
    }
    fprintf(f, "}\n");
    return fclose(f) == 0 ? LTC_OK : ltc_errorf(LTC_ERR_IO, "debug_dump: cannot write %s", path);
}

static void g_free(ltc_graph *g) {
    g_reset(g);
    free(impl_of(g));
}

static const struct ltc_graph_i ocl_graph_iface = {
    .version = LTC_GRAPH_IFACE_VERSION,
    .capture_begin = g_capture_begin,
    .capture_end = g_capture_end,
    .instantiate = g_instantiate,
    .replay = g_replay,
    .reset = g_reset,
    .pool = g_pool,
    .enable_debug_mode = g_enable_debug_mode,
    .debug_dump = g_debug_dump,
    .free = g_free,
};

ltc_graph *ocl_graph_new(const ltc_graph_args *args) {
    ocl_graph *og = calloc(1, sizeof *og);
    if (!og) {
        ltc_errorf(LTC_ERR_NOMEM, "Graph: out of memory");
        return NULL;
    }
    og->g.iface = &ocl_graph_iface;
    og->g.device = "opencl";
    og->g.impl = og;
    if (args && args->size >= offsetof(ltc_graph_args, keep_graph) + sizeof(bool))
        og->keep_graph = args->keep_graph;
    return &og->g;
}
