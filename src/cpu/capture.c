/*
 * capture.c - the CPU backend's graph implementation (ltc_graph.h), registered as "cpu": the
 * shared capture lifecycle (src/backend/graph_base.c) and pool bookkeeping
 * (src/backend/graph_pool.c) with the CPU's hooks.
 *
 * capture_begin syncs pending work, then records the calling thread's syncs (recorder.c)
 * while their outputs come from the graph's pool; capture_end syncs what the capture left
 * pending and ends it. A replay runs the recorded plans again, in order, with no tracing,
 * hashing or cache look-up: arguments are read from the bound tensors (static inputs),
 * earlier steps' outputs, constants and fresh random-number states; at the end the
 * outputs are installed into the tensors the capture wrote (static outputs, parameters
 * updated in place). Works for the "cpu" and "ref" backends (both run CPU plans).
 *
 * Modes: DEFAULT is THREAD_LOCAL on the CPU backend: each thread syncs only the tensors it
 * made, so other threads' work cannot leak into a capture; reading a value on the
 * capturing thread is refused.
 *
 * Pools: output buffers and the temporaries' arena. A buffer released by a replay (its
 * last holder let go) goes back to its pool's free list and serves the next allocation of
 * the same byte size, so steady-state replays do not call malloc. Graphs captured with the
 * same pool handle share the free lists and the arena; they must replay in capture order,
 * never concurrently. A pool is freed once no graph uses it and none of its data is held.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ltc_cpu.h"
#include "fuse.h"
#include "plan.h"

#define ALIGN 64
static size_t align_up(size_t n) { return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1); }

/* ---- pools ------------------------------------------------------------------------------------- */

/* The CPU's part of a pool (ltc_pool's context): the backend copy whose data_free hands
 * buffers back to the pool, and the plans' scratch. The free lists, graph counts and figures
 * are the shared bookkeeping's (src/backend/graph_pool.c). */
typedef struct cpu_pool {
    ltc_pool *gp;
    ltc_backend be; /* the CPU backend's vtable with data_free returning buffers here */
    ltc_backend *cpu; /* the CPU backend: it frees the buffers for good */
    struct ltc_backend_i iface;
    void *arena;
    size_t arena_size;
    void **ptrs;
    int n_ptrs;
} cpu_pool;

static cpu_pool *pool_of(ltc_backend *b) {
    return (cpu_pool *)((char *)b - offsetof(cpu_pool, be));
}

static void pool_data_free(ltc_backend *b, ltc_data *d) {
    cpu_pool *p = pool_of(b);
    ltc_pool_put(p->gp, d, d->nbytes); /* may free p */
}

static void *ctx_new(ltc_pool *gp, void *arg) {
    (void)arg;
    cpu_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    ltc_backend *cpu = ltc_backend_get("cpu");
    p->gp = gp;
    p->iface = *cpu->iface;
    p->iface.data_free = pool_data_free;
    p->be = (ltc_backend){.name = cpu->name, .iface = &p->iface, .context = cpu->context};
    p->cpu = cpu;
    return p;
}

static void ctx_destroy(void *ctx, void *item) {
    cpu_pool *p = ctx;
    ltc_data *d = item;
    d->backend = p->cpu;
    p->cpu->iface->data_free(p->cpu, d);
}

/* The last graph let go: the scratch goes (its bytes leave the pool's figure). */
static int64_t ctx_trim(void *ctx) {
    cpu_pool *p = ctx;
    int64_t freed = (int64_t)p->arena_size;
    free(p->arena);
    p->arena = NULL;
    p->arena_size = 0;
    free(p->ptrs);
    p->ptrs = NULL;
    p->n_ptrs = 0;
    return freed;
}

static const ltc_pool_i cpu_pool_iface = {
    .ctx_new = ctx_new, .destroy = ctx_destroy, .trim = ctx_trim, .finalize = free,
};

/* A buffer of shape's byte size: a free one of that size, else a new one. */
static ltc_data *pool_alloc(void *ud, const ltc_shape *shape) {
    cpu_pool *p = ud;
    size_t nbytes = ltc_shape_nbytes(shape);
    ltc_status st;
    ltc_data *d = ltc_pool_get(p->gp, nbytes, align_up(nbytes), &st);
    if (d) {
        d->refcount = 1;
        d->shape = *shape;
        return d;
    }
    if (!st && (d = ltc_cpu_data_new(&p->be, shape))) {
        ltc_pool_count_new(p->gp, align_up(nbytes));
        return d;
    }
    ltc_errorf(LTC_ERR_NOMEM, "graph: out of memory for a %zu-byte output", nbytes);
    return NULL;
}

/* Grows the pool's scratch (pointer table and arena) for a plan. Not during a replay. */
static ltc_status pool_fit(cpu_pool *p, const cpu_plan *plan) {
    if (plan->n_bufs > p->n_ptrs) {
        void **np = realloc(p->ptrs, sizeof *np * (size_t)plan->n_bufs);
        if (!np) goto nomem;
        p->ptrs = np;
        p->n_ptrs = plan->n_bufs;
    }
    if (plan->arena_size > p->arena_size) {
        void *na = aligned_alloc(ALIGN, align_up(plan->arena_size));
        if (!na) goto nomem;
        free(p->arena);
        ltc_pool_add_bytes(p->gp, (int64_t)(align_up(plan->arena_size) - p->arena_size));
        p->arena = na;
        p->arena_size = align_up(plan->arena_size);
    }
    return LTC_OK;
nomem:
    return ltc_errorf(LTC_ERR_NOMEM, "graph: out of memory for a pool's scratch");
}

bool ltc_cpu_pool_stats(ltc_mempool_id id, ltc_pool_stats *out) {
    return ltc_pool_stats_of("cpu", id, out);
}

ltc_status ltc_cpu_capture_execute(void *exec_ctx, cpu_plan *plan, ltc_data *const *args,
                                   ltc_data **outs) {
    cpu_pool *p = exec_ctx;
    ltc_status st = pool_fit(p, plan);
    if (st) return st;
    return ltc_cpu_plan_run_with(plan, args, outs, p->ptrs, p->arena, pool_alloc, p);
}

/* ---- the instantiated graph ------------------------------------------------------------------- */

typedef struct {
    cpu_plan *plan;
    int n_args, n_outs;
    ltc_binding *bind; /* RNG bindings' data: the graph's own state buffer */
    ltc_data **args;   /* scratch */
    ltc_data **outs;   /* this replay's outputs, held until its end */
} xstep;

typedef struct {
    int n_steps;
    xstep *steps;
    ltc_computation **comps; /* retained */
    int n_installs;
    ltc_tensor **inst_t;     /* retained */
    ltc_binding *inst_v;
    ltc_data **inst_d;       /* scratch */
    int n_statics;
    ltc_tensor **statics;    /* borrowed from the bindings: checked for pending IR */
    int n_rng;
    ltc_binding **rng;       /* the RNG bindings */
    uint64_t rng_advance;
    int64_t rebinds; /* the record's: a change since checks the arguments */
} exec;

static void bind_release(ltc_binding *b) {
    if (b->kind == LTC_BIND_TENSOR) ltc_tensor_release(b->tensor);
    if (b->kind == LTC_BIND_CONST || b->kind == LTC_BIND_RNG) ltc_data_release(b->data);
}

static ltc_binding bind_copy(const ltc_binding *b) {
    ltc_binding c = *b;
    if (c.kind == LTC_BIND_TENSOR) ltc_tensor_retain(c.tensor);
    if (c.kind == LTC_BIND_CONST) ltc_data_retain(c.data);
    if (c.kind == LTC_BIND_RNG) c.data = ltc_cpu_data_new(ltc_backend_get("cpu"), &b->data->shape);
    return c;
}

static void exec_free(exec *x) {
    if (!x) return;
    for (int i = 0; i < x->n_steps; i++) {
        xstep *s = &x->steps[i];
        if (s->bind)
            for (int k = 0; k < s->n_args; k++) bind_release(&s->bind[k]);
        free(s->bind);
        free(s->args);
        free(s->outs);
        ltc_computation_free(x->comps ? x->comps[i] : NULL);
    }
    for (int i = 0; i < x->n_installs; i++) {
        ltc_tensor_release(x->inst_t[i]);
        bind_release(&x->inst_v[i]);
    }
    free(x->steps);
    free(x->comps);
    free(x->inst_t);
    free(x->inst_v);
    free(x->inst_d);
    free(x->statics);
    free(x->rng);
    free(x);
}

static bool is_cpu_plan(const ltc_computation *c) {
    return c->backend->iface->computation_free == ltc_cpu_plan_computation_free;
}

static ltc_status exec_build(const ltc_capture_record *r, cpu_pool *pool, exec **out) {
    exec *x = calloc(1, sizeof *x);
    ltc_status st = LTC_OK;
    if (!x) goto nomem;
    x->rng_advance = r->rng_advance;
    x->rebinds = r->rebinds;
    x->steps = calloc((size_t)r->n_steps + 1, sizeof *x->steps);
    x->comps = calloc((size_t)r->n_steps + 1, sizeof *x->comps);
    x->inst_t = calloc((size_t)r->n_installs + 1, sizeof *x->inst_t);
    x->inst_v = calloc((size_t)r->n_installs + 1, sizeof *x->inst_v);
    x->inst_d = calloc((size_t)r->n_installs + 1, sizeof *x->inst_d);
    if (!x->steps || !x->comps || !x->inst_t || !x->inst_v || !x->inst_d) goto nomem;
    int n_bind = 0;
    for (int i = 0; i < r->n_steps; i++) n_bind += r->steps[i].n_args;
    x->statics = calloc((size_t)(n_bind + r->n_installs) + 1, sizeof *x->statics);
    x->rng = calloc((size_t)n_bind + 1, sizeof *x->rng);
    if (!x->statics || !x->rng) goto nomem;
    for (int i = 0; i < r->n_steps; i++, x->n_steps++) {
        const ltc_capture_step *rs = &r->steps[i];
        xstep *s = &x->steps[i];
        x->comps[i] = ltc_computation_retain(rs->comp);
        /* a plan runs from the pool; another computation (the core's eager-fallback
         * composite) through its own execute, outputs allocated afresh */
        s->plan = is_cpu_plan(rs->comp) ? rs->comp->impl : NULL;
        s->n_args = rs->n_args;
        s->n_outs = rs->comp->n_outputs;
        s->bind = calloc((size_t)s->n_args + 1, sizeof *s->bind);
        s->args = calloc((size_t)s->n_args + 1, sizeof *s->args);
        s->outs = calloc((size_t)s->n_outs + 1, sizeof *s->outs);
        if (!s->bind || !s->args || !s->outs) goto nomem;
        for (int k = 0; k < s->n_args; k++) {
            s->bind[k] = bind_copy(&rs->args[k]);
            if (s->bind[k].kind == LTC_BIND_RNG) {
                if (!s->bind[k].data) {
                    s->bind[k].kind = LTC_BIND_CONST; /* nothing to release */
                    goto nomem;
                }
                x->rng[x->n_rng++] = &s->bind[k];
            }
            if (s->bind[k].kind == LTC_BIND_TENSOR) {
                bool seen = false;
                for (int j = 0; j < x->n_statics && !seen; j++) seen = x->statics[j] == s->bind[k].tensor;
                if (!seen) x->statics[x->n_statics++] = s->bind[k].tensor;
            }
        }
        if (s->plan && (st = pool_fit(pool, s->plan))) goto fail; /* a composite has no plan */
    }
    for (int i = 0; i < r->n_installs; i++, x->n_installs++) {
        x->inst_t[i] = ltc_tensor_retain(r->installs[i].tensor);
        x->inst_v[i] = bind_copy(&r->installs[i].value);
        if (x->inst_v[i].kind == LTC_BIND_TENSOR) { /* buf:copy_(x) shared x's data: x is read */
            bool seen = false;
            for (int j = 0; j < x->n_statics && !seen; j++) seen = x->statics[j] == x->inst_v[i].tensor;
            if (!seen) x->statics[x->n_statics++] = x->inst_v[i].tensor;
        }
        if (x->inst_v[i].kind == LTC_BIND_RNG) { /* not expected: a constant then */
            ltc_data_release(x->inst_v[i].data);
            x->inst_v[i].kind = LTC_BIND_CONST;
            x->inst_v[i].data = ltc_data_retain(r->installs[i].value.data);
        }
    }
    *out = x;
    return LTC_OK;
nomem:
    st = ltc_errorf(LTC_ERR_NOMEM, "instantiate: out of memory");
fail:
    exec_free(x);
    return st;
}

static ltc_data *resolve(exec *x, const ltc_binding *b) {
    switch (b->kind) {
    case LTC_BIND_TENSOR: return ltc_tensor_data(b->tensor);
    case LTC_BIND_OUTPUT: return x->steps[b->step].outs[b->index];
    default: return b->data;
    }
}

static void release_outs(exec *x, int upto) {
    for (int i = 0; i < upto; i++)
        for (int k = 0; k < x->steps[i].n_outs; k++) {
            ltc_data_release(x->steps[i].outs[k]);
            x->steps[i].outs[k] = NULL;
        }
}

static ltc_status exec_run(exec *x, cpu_pool *pool, bool debug) {
    ltc_status st;
    for (int i = 0; i < x->n_statics; i++) /* new input data still pending (x:copy_(batch)) */
        if (!ltc_tensor_data(x->statics[i])) {
            if ((st = ltc_sync())) return st;
            break;
        }
    if (x->n_rng) { /* fresh numbers, as the same ops traced now would draw */
        uint64_t seed, unused, base = ltc_rng_advance(x->rng_advance);
        ltc_rng_state_get(&seed, &unused);
        for (int i = 0; i < x->n_rng; i++) {
            int64_t *state = x->rng[i]->data->ptr;
            state[0] = (int64_t)seed;
            state[1] = (int64_t)(base + (uint64_t)x->rng[i]->rng_delta);
        }
    }
    bool rebound = x->rebinds != ltc_tensor_rebinds();
    for (int i = 0; i < x->n_steps; i++) {
        xstep *s = &x->steps[i];
        for (int k = 0; k < s->n_args; k++) s->args[k] = resolve(x, &s->bind[k]);
        if (debug || rebound) {
            const ltc_shape *ps = x->comps[i]->param_shapes;
            for (int k = 0; k < s->n_args; k++)
                if (!s->args[k] || !ltc_shape_equal(&s->args[k]->shape, &ps[k]) ||
                    (s->plan && s->args[k]->backend != x->comps[i]->backend)) {
                    release_outs(x, i);
                    return ltc_errorf(LTC_ERR_STATE, "replay: step %d argument %d does not have "
                                      "the captured shape, dtype or device (a static input "
                                      "converted or moved in place since the capture: "
                                      "Module:to, resize_; capture again)", i + 1, k + 1);
                }
        }
        ltc_computation *c = x->comps[i];
        if ((st = s->plan ? ltc_cpu_plan_run_with(s->plan, s->args, s->outs, pool->ptrs,
                                                  pool->arena, pool_alloc, pool)
                          : c->backend->iface->execute(c->backend, c, s->args, s->outs))) {
            release_outs(x, i);
            return st;
        }
    }
    for (int i = 0; i < x->n_installs; i++) x->inst_d[i] = resolve(x, &x->inst_v[i]);
    ltc_tensor_install(x->inst_t, x->inst_d, x->n_installs);
    release_outs(x, x->n_steps);
    return LTC_OK;
}

/* ---- the graph: the shared lifecycle (src/backend/graph_base.c) with these hooks ------------ */

static ltc_status check_backend(ltc_graph_base *gb) {
    (void)gb;
    ltc_backend *b = ltc_backend_default();
    if (strcmp(b->name, "cpu") && strcmp(b->name, "ref"))
        return ltc_errorf(LTC_ERR_STATE, "capture_begin: the CPU graph cannot capture the '%s' "
                          "backend", b->name);
    return LTC_OK;
}

static ltc_backend *capture_backend(void) { return ltc_backend_get("cpu"); }

/* The CPU backend's execute allocates a capture's outputs from the pool's cpu_pool. */
static void *exec_ctx(ltc_pool *gp) { return ltc_pool_ctx(gp); }

static ltc_status h_instantiate(ltc_graph_base *gb) {
    exec *x = NULL;
    ltc_status st = exec_build(gb->rec, ltc_pool_ctx(gb->pool), &x);
    if (st) return st;
    exec_free(gb->inst);
    gb->inst = x;
    return LTC_OK;
}

static ltc_status h_replay(ltc_graph_base *gb) {
    return exec_run(gb->inst, ltc_pool_ctx(gb->pool), gb->debug);
}

static void h_drop(ltc_graph_base *gb) {
    exec_free(gb->inst);
    gb->inst = NULL;
}

/* ---- debug_dump: Graphviz DOT ------------------------------------------------------------------ */

static void dot_binding(FILE *f, const ltc_capture_record *r, const ltc_binding *b,
                        const char *to) {
    char sb[128];
    switch (b->kind) {
    case LTC_BIND_TENSOR: {
        const ltc_shape *s = ltc_tensor_shape(b->tensor);
        fprintf(f, "  \"t%p\" [shape=ellipse, style=filled, fillcolor=lightblue, "
                "label=\"static input\\n%s%s\"];\n  \"t%p\" -> %s;\n", (void *)b->tensor,
                ltc_dtype_short(s->dtype), ltc_shape_str(s, sb, sizeof sb), (void *)b->tensor, to);
        break;
    }
    case LTC_BIND_OUTPUT: {
        const ltc_computation *c = r->steps[b->step].comp;
        if (is_cpu_plan(c))
            fprintf(f, "  s%d_b%d -> %s [style=dashed];\n", b->step,
                    ((const cpu_plan *)c->impl)->outputs[b->index], to);
        else
            fprintf(f, "  s%d_o%d -> %s [style=dashed];\n", b->step, b->index, to);
        break;
    }
    case LTC_BIND_CONST:
        fprintf(f, "  \"d%p\" [shape=note, label=\"constant\\n%s%s\"];\n  \"d%p\" -> %s;\n",
                (void *)b->data, ltc_dtype_short(b->data->shape.dtype),
                ltc_shape_str(&b->data->shape, sb, sizeof sb), (void *)b->data, to);
        break;
    case LTC_BIND_RNG:
        fprintf(f, "  \"d%p\" [shape=diamond, label=\"rng state\\noffset +%lld\"];\n"
                "  \"d%p\" -> %s;\n", (void *)b->data, (long long)b->rng_delta, (void *)b->data, to);
        break;
    }
}

static ltc_status dump_dot(const ltc_capture_record *r, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return ltc_errorf(LTC_ERR_IO, "debug_dump: cannot write %s", path);
    char sb[128], to[64];
    fprintf(f, "digraph ltc_graph {\n  rankdir=TB;\n  node [fontname=\"monospace\"];\n"
            "  label=\"captured graph: %d syncs, %d installs, mode %s, rng advance %llu\";\n",
            r->n_steps, r->n_installs, ltc_capture_mode_name(r->mode),
            (unsigned long long)r->rng_advance);
    for (int i = 0; i < r->n_steps; i++) {
        const ltc_computation *c = r->steps[i].comp;
        if (!is_cpu_plan(c)) { /* one box: the computation of another backend */
            fprintf(f, "  subgraph cluster_s%d {\n    label=\"sync %d on %s\";\n    s%d_k "
                    "[shape=box, label=\"%s computation\"];\n", i, i + 1, c->backend->name, i,
                    c->backend->name);
            for (int k = 0; k < c->n_outputs; k++)
                fprintf(f, "    s%d_o%d [shape=ellipse, label=\"output #%d\"];\n    s%d_k -> "
                        "s%d_o%d;\n", i, k, k + 1, i, i, k);
            fprintf(f, "  }\n");
            for (int a = 0; a < r->steps[i].n_args; a++) {
                snprintf(to, sizeof to, "s%d_k", i);
                dot_binding(f, r, &r->steps[i].args[a], to);
            }
            continue;
        }
        const cpu_plan *p = c->impl;
        fprintf(f, "  subgraph cluster_s%d {\n    label=\"sync %d: %d kernels, arena %zu bytes\";\n",
                i, i + 1, p->n_steps, p->arena_size);
        for (int b = 0; b < p->n_bufs; b++) {
            const plan_buf *bf = &p->bufs[b];
            const char *kind = bf->kind == BUF_PARAM    ? "param"
                               : bf->kind == BUF_OUTPUT ? "output"
                               : bf->kind == BUF_UNREAD ? "unread"
                                                        : "temp";
            fprintf(f, "    s%d_b%d [shape=ellipse, label=\"b%d %s #%d\\n%s%s\"];\n", i, b, b, kind,
                    bf->kind == BUF_TEMP || bf->kind == BUF_UNREAD ? b : bf->index + 1, ltc_dtype_short(bf->shape.dtype),
                    ltc_shape_str(&bf->shape, sb, sizeof sb));
        }
        for (int k = 0; k < p->n_steps; k++) {
            const plan_step *sp = &p->steps[k];
            char fname[64]; /* a fused step is named as backend_text names it */
            fprintf(f, "    s%d_k%d [shape=box, style=filled, fillcolor=lightyellow, label=\"%s\"];\n",
                    i, k, sp->fused ? ltc_cpu_fused_text(sp->fused, fname, sizeof fname)
                                    : ltc_op_name(sp->op));
            for (int j = 0; j < sp->n_in; j++) fprintf(f, "    s%d_b%d -> s%d_k%d;\n", i, sp->in[j], i, k);
            for (int j = 0; j < sp->n_out; j++) fprintf(f, "    s%d_k%d -> s%d_b%d;\n", i, k, i, sp->out[j]);
        }
        fprintf(f, "  }\n");
        for (int a = 0; a < r->steps[i].n_args; a++) {
            int b = 0;
            while (b < p->n_bufs && !(p->bufs[b].kind == BUF_PARAM && p->bufs[b].index == a)) b++;
            snprintf(to, sizeof to, "s%d_b%d", i, b);
            dot_binding(f, r, &r->steps[i].args[a], to);
        }
    }
    for (int i = 0; i < r->n_installs; i++) {
        const ltc_capture_install *in = &r->installs[i];
        const ltc_shape *s = ltc_tensor_shape(in->tensor);
        snprintf(to, sizeof to, "\"i%d\"", i);
        fprintf(f, "  \"i%d\" [shape=ellipse, style=filled, fillcolor=lightgreen, "
                "label=\"install into tensor\\n%s%s\"];\n", i, ltc_dtype_short(s->dtype),
                ltc_shape_str(s, sb, sizeof sb));
        dot_binding(f, r, &in->value, to);
    }
    fprintf(f, "}\n");
    bool bad = ferror(f) != 0;
    if (fclose(f) || bad) return ltc_errorf(LTC_ERR_IO, "debug_dump: error writing %s", path);
    return LTC_OK;
}

static ltc_status h_debug_dump(ltc_graph_base *gb, const char *path) {
    return dump_dot(gb->rec, path);
}

static const ltc_graph_hooks cpu_graph_hooks = {
    .device = "cpu",
    .pool_iface = &cpu_pool_iface,
    .check_backend = check_backend,
    .capture_backend = capture_backend,
    .exec_ctx = exec_ctx,
    .instantiate = h_instantiate,
    .replay = h_replay,
    .drop = h_drop,
    .debug_dump = h_debug_dump,
};

ltc_graph *ltc_cpu_graph_new(const ltc_graph_args *args) {
    ltc_graph_base *gb = calloc(1, sizeof *gb);
    if (!gb) {
        ltc_errorf(LTC_ERR_NOMEM, "Graph: out of memory");
        return NULL;
    }
    ltc_graph_base_init(gb, &cpu_graph_hooks, args);
    return &gb->g;
}
