/*
 * capture.c - the `opencl` graph implementation (ltc.Graph{device = "opencl"}, ltc.jit on
 * the opencl backend), on the core's recorder and the shared capture lifecycle (ltc_graph.h,
 * src/backend/graph_base.c: states, misuse errors, pools, keep_graph, debug mode): the
 * hooks below are what is OpenCL's.
 *
 * A capture records the syncs of the calling thread: each computation (its kernels and GEMMs,
 * already lowered and built) with one binding per argument. A replay
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

/* capture_begin: only syncs on this backend can be captured. */
static ltc_status check_backend(ltc_graph_base *gb) {
    (void)gb;
    if (ltc_backend_default() != ocl_backend())
        return ltc_errorf(LTC_ERR_STATE, "capture_begin: the opencl graph captures the opencl "
                          "backend, but syncs run on '%s' (ltc.set_backend(\"opencl\"))",
                          ltc_backend_default()->name);
    return LTC_OK;
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

/* Re-enqueues the record's computations (the shared lifecycle has checked the state). */
static ltc_status h_replay(ltc_graph_base *gb) {
    ltc_status st = LTC_OK;
    ltc_capture_record *r = gb->rec;
    /* static inputs still pending (x:copy_(batch)) are synced first */
    for (int i = 0; i < r->n_steps; i++)
        for (int k = 0; k < r->steps[i].n_args; k++)
            if (r->steps[i].args[k].kind == LTC_BIND_TENSOR &&
                !ltc_tensor_data(r->steps[i].args[k].tensor)) {
                if ((st = ltc_sync())) return st;
                i = r->n_steps;
                break;
            }
    if (r->rebinds != ltc_tensor_rebinds()) /* a static input converted in place since? */
        for (int i = 0; i < r->n_steps; i++)
            for (int k = 0; k < r->steps[i].n_args; k++) {
                const ltc_binding *b = &r->steps[i].args[k];
                if (b->kind != LTC_BIND_TENSOR) continue;
                const ltc_tensor *t = b->tensor;
                if (!ltc_shape_equal(ltc_tensor_shape(t), &r->steps[i].comp->param_shapes[k]) ||
                    ltc_tensor_device(t).type != r->steps[i].comp->backend->name)
                    return ltc_errorf(LTC_ERR_STATE, "replay: step %d argument %d does not have "
                                      "the captured shape, dtype or device (a static input "
                                      "converted or moved in place since the capture: "
                                      "Module:to, resize_; capture again)", i + 1, k + 1);
            }
    for (int i = 0; i < r->n_installs; i++) /* and those an install reads (buf:copy_(x)) */
        if (r->installs[i].value.kind == LTC_BIND_TENSOR &&
            !ltc_tensor_data(r->installs[i].value.tensor)) {
            if ((st = ltc_sync())) return st;
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
            if (!args[k] && s->args[k].kind == LTC_BIND_RNG)
                st = LTC_ERR_NOMEM; /* ocl_buf_new's message names the bytes and the device */
            else if (!args[k])
                st = ltc_errorf(LTC_ERR_STATE, "replay: step %d argument %d has no data", i + 1,
                                k + 1);
            else if (gb->debug && !ltc_shape_equal(&args[k]->shape, &s->comp->param_shapes[k]))
                st = ltc_errorf(LTC_ERR_STATE, "replay (debug): step %d argument %d does not "
                                "have the captured shape", i + 1, k + 1);
        }
        ltc_computation *c = s->comp;
        if (!st) /* the device's own steps from the pool; a fallback composite as it runs */
            st = c->backend == ocl_backend() ? ocl_run(c->impl, args, outs[i], gb->pool)
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

static ltc_status h_debug_dump(ltc_graph_base *gb, const char *path) {
    const ltc_capture_record *rec = gb->rec;
    FILE *f = fopen(path, "w");
    if (!f) return ltc_errorf(LTC_ERR_IO, "debug_dump: cannot write %s", path);
    fprintf(f, "digraph opencl_capture {\n");
    for (int i = 0; i < rec->n_steps; i++) {
        const ltc_capture_step *s = &rec->steps[i];
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

static const ltc_graph_hooks ocl_graph_hooks = {
    .device = "opencl",
    .pool_iface = &ocl_pool_iface,
    .check_backend = check_backend,
    .capture_backend = ocl_backend,
    .replay = h_replay,
    .debug_dump = h_debug_dump,
    .replays_record = true,
};

ltc_graph *ocl_graph_new(const ltc_graph_args *args) {
    ltc_graph_base *gb = calloc(1, sizeof *gb);
    if (!gb) {
        ltc_errorf(LTC_ERR_NOMEM, "Graph: out of memory");
        return NULL;
    }
    ltc_graph_base_init(gb, &ocl_graph_hooks, args);
    return &gb->g;
}
