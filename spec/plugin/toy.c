/*
 * toy.c - a third backend, "toy", built as its own Lua module against the installed headers
 * and `pkg-config ltc` only (spec/plugin/build.sh): the proof that a backend plugs in from
 * outside the tree. It keeps its values in memory of its own (the ltc_data it hands the core
 * has ptr NULL: the core must go through data_to_host / data_from_host), lowers float32
 * add, sub, mul, neg and relu (a 1-element operand broadcasts), names "cpu" as its eager
 * fallback for every other op, has two devices (toy:0, toy:1), registers a graph
 * implementation, and counts every slot's calls (toy.calls()). toy.register_bad(kind) tries
 * a bad registration and returns the core's error.
 */
#include <lauxlib.h>
#include <stdio.h>
#include <lua.h>
#include <stdlib.h>
#include <string.h>

#include "ltc.h"
#include "ltc_backend.h"
#include "ltc_comm.h"
#include "ltc_graph.h"

/* ---- call counts -------------------------------------------------------------------------- */

enum {
    C_PREPARE_TO_EXIT, C_SET_RNG_SEED, C_FROM_HOST, C_FROM_SCALAR, C_PLACEHOLDER, C_OF_NODE,
    C_TO_HOST, C_FREE, C_COMPILE, C_COMP_FREE, C_EXECUTE, C_DEFAULT_DEVICE, C_FALLBACK_TYPE,
    C_DEVICES, C_METRIC_REPORT, C_COMP_TEXT, C_LOWERS, C_GRAPH_NEW, C_GRAPH_REPLAY, C_COUNT
};
static const char *const call_names[C_COUNT] = {
    "prepare_to_exit", "set_rng_seed", "data_from_host", "data_from_scalar", "data_placeholder",
    "data_of_node", "data_to_host", "data_free", "compile", "computation_free", "execute",
    "default_device", "eager_fallback_device_type", "devices", "metric_report",
    "computation_text", "lowers", "graph_new", "graph_replay",
};
static long calls[C_COUNT];
static long live_bytes; /* toy memory in use */

/* ---- data: memory of its own --------------------------------------------------------------- */

typedef struct {
    ltc_data base; /* base.ptr stays NULL */
    unsigned char *mem;
} toy_data;

static ltc_data *toy_alloc(ltc_backend *b, const ltc_shape *shape) {
    toy_data *d = calloc(1, sizeof *d);
    size_t n = ltc_shape_nbytes(shape);
    if (!d || !(d->mem = malloc(n ? n : 1))) {
        free(d);
        return NULL;
    }
    d->base = (ltc_data){.refcount = 1, .shape = *shape, .ptr = NULL, .nbytes = n, .backend = b};
    live_bytes += (long)n;
    return &d->base;
}

static ltc_data *from_host(ltc_backend *b, const ltc_shape *shape, const void *host) {
    calls[C_FROM_HOST]++;
    ltc_data *d = toy_alloc(b, shape);
    if (d && d->nbytes) memcpy(((toy_data *)d)->mem, host, d->nbytes);
    return d;
}

static ltc_data *from_scalar(ltc_backend *b, const ltc_shape *shape, const void *v) {
    calls[C_FROM_SCALAR]++;
    calls[C_FROM_HOST]--;
    return from_host(b, shape, v);
}

static ltc_data *placeholder(ltc_backend *b, const ltc_shape *shape) {
    calls[C_PLACEHOLDER]++;
    return toy_alloc(b, shape);
}

static ltc_data *of_node(ltc_backend *b, const ltc_node *n) {
    calls[C_OF_NODE]++;
    return n->data && n->data->backend == b ? n->data : NULL;
}

static ltc_status to_host(ltc_backend *b, const ltc_data *d, void *host) {
    (void)b;
    calls[C_TO_HOST]++;
    if (d->nbytes) memcpy(host, ((const toy_data *)d)->mem, d->nbytes);
    return LTC_OK;
}

static void data_free(ltc_backend *b, ltc_data *d) {
    (void)b;
    calls[C_FREE]++;
    live_bytes -= (long)d->nbytes;
    free(((toy_data *)d)->mem);
    free(d);
}

/* ---- lowering: a list of steps over value slots -------------------------------------------- */

typedef struct {
    int op, in[2], n_in, out;
} toy_step;

typedef struct {
    int n_slots, n_steps, n_params;
    int64_t *numel; /* per slot */
    toy_step *steps;
    int *roots;     /* slot of each output */
} toy_prog;

static bool lowers(ltc_backend *b, const ltc_node *n) {
    (void)b;
    calls[C_LOWERS]++;
    if (n->op != LTC_OP_ADD && n->op != LTC_OP_SUB && n->op != LTC_OP_MUL && n->op != LTC_OP_NEG &&
        n->op != LTC_OP_RELU)
        return false;
    if (n->shapes[0].dtype != LTC_F32) return false;
    int64_t numel = ltc_shape_numel(&n->shapes[0]);
    for (int i = 0; i < n->n_operands; i++) {
        const ltc_shape *s = &n->operands[i].node->shapes[n->operands[i].index];
        int64_t k = ltc_shape_numel(s);
        if (s->dtype != LTC_F32 || (k != numel && k != 1)) return false;
    }
    return true;
}

static ltc_status compile(ltc_backend *b, const ltc_lowering_ctx *const *ctxs, int n,
                          ltc_computation **out) {
    (void)b;
    calls[C_COMPILE]++;
    for (int c = 0; c < n; c++) {
        const ltc_lowering_ctx *ctx = ctxs[c];
        toy_prog *p = calloc(1, sizeof *p);
        if (!p) return ltc_errorf(LTC_ERR_NOMEM, "toy: out of memory");
        p->n_slots = ctx->n_nodes;
        p->numel = calloc((size_t)ctx->n_nodes + 1, sizeof *p->numel);
        p->steps = calloc((size_t)ctx->n_nodes + 1, sizeof *p->steps);
        p->roots = calloc((size_t)ctx->n_roots + 1, sizeof *p->roots);
        if (!p->numel || !p->steps || !p->roots) return ltc_errorf(LTC_ERR_NOMEM, "toy: out of memory");
        for (int i = 0; i < ctx->n_nodes; i++) {
            const ltc_node *nd = ctx->post_order[i];
            p->numel[i] = ltc_shape_numel(&nd->shapes[0]);
            if (nd->op == LTC_OP_DEVICE_DATA) {
                p->n_params++;
                ctx->emitted[i] = 1;
                continue;
            }
            if (!lowers(b, nd) || nd->n_outputs != 1)
                return ltc_errorf(LTC_ERR_BACKEND, "toy backend: cannot lower '%s'", ltc_op_name(nd->op));
            toy_step *s = &p->steps[p->n_steps++];
            s->op = nd->op;
            s->n_in = nd->n_operands;
            for (int k = 0; k < nd->n_operands; k++) s->in[k] = nd->operands[k].node->index;
            s->out = i;
            ctx->emitted[i] = 1;
        }
        for (int r = 0; r < ctx->n_roots; r++) p->roots[r] = ctx->roots[r].node->index;
        out[c]->impl = p;
    }
    return LTC_OK;
}

static void comp_free(ltc_backend *b, ltc_computation *c) {
    (void)b;
    calls[C_COMP_FREE]++;
    toy_prog *p = c->impl;
    free(p->numel);
    free(p->steps);
    free(p->roots);
    free(p);
}

static float elem(const float *x, int64_t numel, int64_t i) { return numel == 1 ? x[0] : x[i]; }

static ltc_status execute(ltc_backend *b, ltc_computation *c, ltc_data *const *args,
                          ltc_data **outs) {
    calls[C_EXECUTE]++;
    toy_prog *p = c->impl;
    float **slot = calloc((size_t)p->n_slots + 1, sizeof *slot);
    if (!slot) return ltc_errorf(LTC_ERR_NOMEM, "toy: out of memory");
    int param = 0;
    for (int i = 0, k = 0; i < p->n_slots; i++) {
        if (k < p->n_steps && p->steps[k].out == i) {
            k++;
            continue;
        }
        if (args[param]->backend != b) {
            free(slot);
            return ltc_errorf(LTC_ERR_BACKEND, "toy: argument %d is not toy data", param + 1);
        }
        slot[i] = (float *)((toy_data *)args[param++])->mem;
    }
    float **temps = calloc((size_t)p->n_steps + 1, sizeof *temps);
    for (int k = 0; temps && k < p->n_steps; k++) {
        const toy_step *s = &p->steps[k];
        int64_t n = p->numel[s->out];
        float *o = temps[k] = malloc(sizeof(float) * (size_t)(n ? n : 1));
        if (!o) break;
        const float *x = slot[s->in[0]], *y = s->n_in > 1 ? slot[s->in[1]] : NULL;
        int64_t nx = p->numel[s->in[0]], ny = s->n_in > 1 ? p->numel[s->in[1]] : 0;
        for (int64_t i = 0; i < n; i++) {
            float a = elem(x, nx, i);
            switch (s->op) {
            case LTC_OP_ADD: o[i] = a + elem(y, ny, i); break;
            case LTC_OP_SUB: o[i] = a - elem(y, ny, i); break;
            case LTC_OP_MUL: o[i] = a * elem(y, ny, i); break;
            case LTC_OP_NEG: o[i] = -a; break;
            default: o[i] = a > 0 ? a : 0; break;
            }
        }
        slot[s->out] = o;
    }
    ltc_status st = LTC_OK;
    for (int r = 0; r < c->n_outputs; r++) {
        const float *v = slot[p->roots[r]];
        /* the core hands placeholders to fill; a graph replay passes NULL: make them */
        if (!outs[r] && v) outs[r] = placeholder(b, &c->out_shapes[r]);
        if (!outs[r] || !v) {
            st = ltc_errorf(LTC_ERR_NOMEM, "toy: out of memory");
            break;
        }
        memcpy(((toy_data *)outs[r])->mem, v, outs[r]->nbytes);
    }
    for (int k = 0; temps && k < p->n_steps; k++) free(temps[k]);
    free(temps);
    free(slot);
    return st;
}

/* ---- devices, metrics, text ---------------------------------------------------------------- */

static ltc_device default_device(ltc_backend *b) {
    calls[C_DEFAULT_DEVICE]++;
    return (ltc_device){b->name, 0};
}

static int devices(ltc_backend *b, ltc_device *out, int max) {
    calls[C_DEVICES]++;
    for (int i = 0; i < 2 && i < max; i++) out[i] = (ltc_device){b->name, i};
    return 2;
}

static const char *fallback_type(ltc_backend *b) {
    (void)b;
    calls[C_FALLBACK_TYPE]++;
    return "cpu";
}

static void prepare_to_exit(ltc_backend *b) {
    (void)b;
    calls[C_PREPARE_TO_EXIT]++;
}

static void set_rng_seed(ltc_backend *b, uint64_t seed) {
    (void)b, (void)seed;
    calls[C_SET_RNG_SEED]++;
}

static char *metric_report(ltc_backend *b) {
    (void)b;
    calls[C_METRIC_REPORT]++;
    char *s = malloc(64);
    if (s) snprintf(s, 64, "Counter: ToyLiveBytes\n  Value: %ld\n", live_bytes);
    return s;
}

static char *comp_text(ltc_backend *b, const ltc_computation *c) {
    (void)b;
    calls[C_COMP_TEXT]++;
    const toy_prog *p = c->impl;
    char *s = malloc(64);
    if (s) snprintf(s, 64, "toy program: %d steps\n", p->n_steps);
    return s;
}

static const struct ltc_backend_i toy_iface = {
    .version = LTC_BACKEND_IFACE_VERSION,
    .prepare_to_exit = prepare_to_exit,
    .set_rng_seed = set_rng_seed,
    .data_from_host = from_host,
    .data_from_scalar = from_scalar,
    .data_placeholder = placeholder,
    .data_of_node = of_node,
    .data_to_host = to_host,
    .data_free = data_free,
    .compile = compile,
    .computation_free = comp_free,
    .execute = execute,
    .default_device = default_device,
    .eager_fallback_device_type = fallback_type,
    .devices = devices,
    .metric_report = metric_report,
    .computation_text = comp_text,
    .lowers = lowers,
    .flags = LTC_BACKEND_FILLS_PLACEHOLDERS,
};
static ltc_backend toy = {.name = "toy", .iface = &toy_iface};

/* ---- a graph implementation: the core's recorder, replayed step by step -------------------- */

typedef struct {
    ltc_graph g;
    ltc_capture_record *rec;
    bool capturing;
} toy_graph;

static ltc_status g_begin(ltc_graph *g, ltc_mempool_id pool, ltc_capture_mode mode) {
    (void)pool;
    toy_graph *t = (toy_graph *)g;
    if (t->capturing || t->rec) return ltc_errorf(LTC_ERR_STATE, "toy graph: already captured");
    ltc_status st = ltc_capture_start(mode == LTC_CAPTURE_DEFAULT ? LTC_CAPTURE_THREAD_LOCAL : mode,
                                      &toy, NULL);
    if (!st) t->capturing = true;
    return st;
}

static ltc_status g_end(ltc_graph *g) {
    toy_graph *t = (toy_graph *)g;
    if (!t->capturing) return ltc_errorf(LTC_ERR_STATE, "toy graph: not capturing");
    t->capturing = false;
    return ltc_capture_finish(&t->rec);
}

static ltc_status g_instantiate(ltc_graph *g) {
    return ((toy_graph *)g)->rec ? LTC_OK : ltc_errorf(LTC_ERR_STATE, "toy graph: nothing captured");
}

static ltc_data *resolve(ltc_data ***outs, const ltc_binding *b) {
    switch (b->kind) {
    case LTC_BIND_TENSOR: return ltc_tensor_data(b->tensor);
    case LTC_BIND_OUTPUT: return outs[b->step][b->index];
    default: return b->data;
    }
}

static ltc_status g_replay(ltc_graph *g) {
    toy_graph *t = (toy_graph *)g;
    calls[C_GRAPH_REPLAY]++;
    if (!t->rec) return ltc_errorf(LTC_ERR_STATE, "toy graph: replay before capture");
    const ltc_capture_record *r = t->rec;
    ltc_status st = LTC_OK;
    ltc_data ***outs = calloc((size_t)r->n_steps + 1, sizeof *outs);
    for (int i = 0; outs && i < r->n_steps && !st; i++) {
        ltc_computation *c = r->steps[i].comp;
        ltc_data *args[64];
        for (int k = 0; k < r->steps[i].n_args && k < 64; k++) args[k] = resolve(outs, &r->steps[i].args[k]);
        outs[i] = calloc((size_t)c->n_outputs + 1, sizeof **outs);
        st = outs[i] ? c->backend->iface->execute(c->backend, c, args, outs[i])
                     : ltc_errorf(LTC_ERR_NOMEM, "toy graph: out of memory");
    }
    if (!st && outs) {
        for (int i = 0; i < r->n_installs; i++) {
            ltc_tensor *tt = r->installs[i].tensor;
            ltc_data *d = resolve(outs, &r->installs[i].value);
            ltc_tensor_install(&tt, &d, 1);
        }
    }
    for (int i = 0; outs && i < r->n_steps; i++) {
        for (int k = 0; outs[i] && k < r->steps[i].comp->n_outputs; k++) ltc_data_release(outs[i][k]);
        free(outs[i]);
    }
    free(outs);
    return st;
}

static ltc_status g_reset(ltc_graph *g) {
    toy_graph *t = (toy_graph *)g;
    if (t->capturing) ltc_capture_abort();
    t->capturing = false;
    ltc_capture_record_free(t->rec);
    t->rec = NULL;
    return LTC_OK;
}

static ltc_status g_pool(ltc_graph *g, ltc_mempool_id *out) {
    (void)g;
    *out = 0;
    return LTC_OK;
}

static void g_debug(ltc_graph *g) { (void)g; }

static ltc_status g_dump(ltc_graph *g, const char *path) {
    (void)g, (void)path;
    return ltc_errorf(LTC_ERR_STATE, "toy graph: no debug dump");
}

static void g_free(ltc_graph *g) {
    g_reset(g);
    free(g);
}

static const struct ltc_graph_i toy_graph_iface = {
    .version = LTC_GRAPH_IFACE_VERSION, .capture_begin = g_begin, .capture_end = g_end,
    .instantiate = g_instantiate, .replay = g_replay, .reset = g_reset, .pool = g_pool,
    .enable_debug_mode = g_debug, .debug_dump = g_dump, .free = g_free,
};

static ltc_graph *graph_new(const ltc_graph_args *args) {
    (void)args;
    calls[C_GRAPH_NEW]++;
    toy_graph *t = calloc(1, sizeof *t);
    if (!t) {
        ltc_errorf(LTC_ERR_NOMEM, "toy graph: out of memory");
        return NULL;
    }
    t->g = (ltc_graph){.iface = &toy_graph_iface, .device = "toy", .impl = t};
    return &t->g;
}

/* ---- the Lua module ------------------------------------------------------------------------ */

/* toy.calls(): {slot = number of calls} since the module was loaded. */
static int l_calls(lua_State *L) {
    lua_createtable(L, 0, C_COUNT);
    for (int i = 0; i < C_COUNT; i++) {
        lua_pushinteger(L, calls[i]);
        lua_setfield(L, -2, call_names[i]);
    }
    return 1;
}

/* toy.live_bytes(): bytes of toy memory in use. */
static int l_live_bytes(lua_State *L) {
    lua_pushinteger(L, live_bytes);
    return 1;
}

/* toy.register_bad(kind): registers a bad backend; returns the core's error (nil if none). */
static int l_register_bad(lua_State *L) {
    static struct ltc_backend_i bad_iface;
    static ltc_backend bad;
    const char *kind = luaL_checkstring(L, 1);
    bad_iface = toy_iface;
    bad = (ltc_backend){.name = "toybad", .iface = &bad_iface};
    if (!strcmp(kind, "version")) bad_iface.version = LTC_BACKEND_IFACE_VERSION + 41;
    else if (!strcmp(kind, "execute")) bad_iface.execute = NULL;
    else if (!strcmp(kind, "data_to_host")) bad_iface.data_to_host = NULL;
    else if (!strcmp(kind, "name")) bad.name = "";
    else if (!strcmp(kind, "colon")) bad.name = "toy:9";
    else if (!strcmp(kind, "taken")) bad.name = "cpu";
    else if (!strcmp(kind, "iface")) bad.iface = NULL;
    else return luaL_error(L, "register_bad: unknown kind '%s'", kind);
    if (ltc_backend_register(&bad) == LTC_OK) return 0;
    lua_pushstring(L, ltc_last_error());
    return 1;
}

/* ---- communicators: the registry's checks, from outside ------------------------------------- */

static int tc_rank(ltc_comm *c) { return (void)c, 0; }
static int tc_size(ltc_comm *c) { return (void)c, 1; }
static ltc_status tc_inplace(ltc_comm *c, const ltc_coll_desc *d, void *buf) {
    return (void)c, (void)d, (void)buf, LTC_OK;
}
static ltc_status tc_copy(ltc_comm *c, const ltc_coll_desc *d, const void *s, void *r) {
    if (s != r) memmove(r, s, (size_t)d->count * ltc_dtype_size((ltc_dtype)d->dtype));
    return (void)c, LTC_OK;
}
static ltc_status tc_barrier(ltc_comm *c, const ltc_coll_desc *d) {
    return (void)c, (void)d, LTC_OK;
}
static const struct ltc_comm_i toycomm_iface = {
    .version = LTC_COMM_IFACE_VERSION, .rank = tc_rank, .size = tc_size,
    .all_reduce = tc_inplace, .broadcast = tc_inplace, .reduce = tc_inplace,
    .all_gather = tc_copy, .reduce_scatter = tc_copy, .barrier = tc_barrier,
};
static ltc_comm toycomm = {.name = "toycomm", .iface = &toycomm_iface};

/* toy.register_comm(kind): registers a communicator: "good" (toycomm), "other" (a second good
 * one), "none" (NULL: the identity again), or a bad one ("version", "all_reduce" or
 * "barrier" left NULL, "name", "iface"); returns the core's error (nil if none) and the
 * name of the communicator registered afterwards. */
static int l_register_comm(lua_State *L) {
    static struct ltc_comm_i bad_iface;
    static ltc_comm bad, other;
    const char *kind = luaL_checkstring(L, 1);
    bad_iface = toycomm_iface;
    bad = (ltc_comm){.name = "toybadcomm", .iface = &bad_iface};
    other = (ltc_comm){.name = "othercomm", .iface = &toycomm_iface};
    ltc_comm *c = &bad;
    if (!strcmp(kind, "good")) c = &toycomm;
    else if (!strcmp(kind, "other")) c = &other;
    else if (!strcmp(kind, "none")) c = NULL;
    else if (!strcmp(kind, "version")) bad_iface.version = LTC_COMM_IFACE_VERSION + 41;
    else if (!strcmp(kind, "all_reduce")) bad_iface.all_reduce = NULL;
    else if (!strcmp(kind, "barrier")) bad_iface.barrier = NULL;
    else if (!strcmp(kind, "name")) bad.name = NULL;
    else if (!strcmp(kind, "iface")) bad.iface = NULL;
    else return luaL_error(L, "register_comm: unknown kind '%s'", kind);
    if (ltc_comm_register(c) == LTC_OK) lua_pushnil(L);
    else lua_pushstring(L, ltc_last_error());
    lua_pushstring(L, ltc_comm_get()->name);
    return 2;
}

int luaopen_toy(lua_State *L) {
    lua_getglobal(L, "require");
    lua_pushstring(L, "ltc");
    lua_call(L, 1, 0);
    if (!ltc_has_backend("toy")) {
        if (ltc_backend_register(&toy)) return luaL_error(L, "toy: %s", ltc_last_error());
        if (ltc_graph_impl_register("toy", graph_new))
            return luaL_error(L, "toy: %s", ltc_last_error());
    }
    lua_newtable(L);
    lua_pushcfunction(L, l_calls);
    lua_setfield(L, -2, "calls");
    lua_pushcfunction(L, l_live_bytes);
    lua_setfield(L, -2, "live_bytes");
    lua_pushcfunction(L, l_register_bad);
    lua_setfield(L, -2, "register_bad");
    lua_pushcfunction(L, l_register_comm);
    lua_setfield(L, -2, "register_comm");
    return 1;
}
