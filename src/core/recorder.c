/*
 * recorder.c - the core's side of graph capture (ltc_graph.h): a per-thread session that
 * records each sync's computation with a binding for every argument, the capture-mode
 * checks, and the tensor helpers replays use.
 *
 * Arguments are classified by their data object (ltc_data *). The session retains every
 * data object it has classified, so an address cannot be reused for something else while
 * the capture runs. A data object held by two live tensors when the capture begins (after
 * `x:copy_(batch)`, x and batch share batch's data) would make "which tensor is this
 * static input" ambiguous: the later tensor gets an alias header of its own over the same
 * bytes, so each static input has a data object of its own.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "ltc_graph.h"

/* ---- modes ------------------------------------------------------------------------------------ */

static const char *const mode_names[LTC_CAPTURE_MODE_COUNT] = {"default", "global", "thread_local",
                                                               "relaxed"};

const char *ltc_capture_mode_name(ltc_capture_mode m) {
    return (unsigned)m < LTC_CAPTURE_MODE_COUNT ? mode_names[m] : "?";
}

ltc_status ltc_capture_mode_parse(const char *name, ltc_capture_mode *out) {
    for (int i = 0; i < LTC_CAPTURE_MODE_COUNT; i++)
        if (strcmp(name, mode_names[i]) == 0) {
            *out = (ltc_capture_mode)i;
            return LTC_OK;
        }
    return ltc_errorf(LTC_ERR_ARG, "unknown capture mode '%s' (expected default, global, "
                      "thread_local or relaxed)", name);
}

/* ---- a pointer-keyed map -------------------------------------------------------------------- */

enum { M_STATIC, M_OUTPUT, M_RNG, M_SEEN };

typedef struct {
    const void *key; /* NULL: empty */
    int kind;
    int step, index;     /* M_OUTPUT */
    ltc_tensor *tensor;  /* M_STATIC (retained) */
    int64_t delta;       /* M_RNG */
} pentry;

typedef struct {
    pentry *e;
    size_t cap, n;
} pmap;

static size_t phash(const void *p, size_t cap) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

static pentry *pmap_find(const pmap *m, const void *key) {
    if (!m->cap) return NULL;
    for (size_t i = phash(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->e[i].key) return NULL;
        if (m->e[i].key == key) return &m->e[i];
    }
}

/* Makes room for `extra` more entries; false on allocation failure. */
static bool pmap_reserve(pmap *m, size_t extra) {
    if ((m->n + extra) * 2 > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 64;
        while ((m->n + extra) * 2 > nc) nc *= 2;
        pentry *ne = calloc(nc, sizeof *ne);
        if (!ne) return false;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->e[i].key) continue;
            size_t k = phash(m->e[i].key, nc);
            while (ne[k].key) k = (k + 1) & (nc - 1);
            ne[k] = m->e[i];
        }
        free(m->e);
        m->e = ne;
        m->cap = nc;
    }
    return true;
}

/* A new entry for key (not present); NULL on allocation failure. */
static pentry *pmap_add(pmap *m, const void *key) {
    if (!pmap_reserve(m, 1)) return NULL;
    size_t i = phash(key, m->cap);
    while (m->e[i].key) i = (i + 1) & (m->cap - 1);
    m->e[i] = (pentry){.key = key};
    m->n++;
    return &m->e[i];
}

/* ---- alias data: a second header over another data object's bytes ---------------------------- */

typedef struct {
    ltc_data d;
    ltc_data *orig; /* retained */
} alias_data;

static void alias_free(ltc_backend *b, ltc_data *d) {
    (void)b;
    ltc_data_release(((alias_data *)d)->orig);
    free(d);
}

static ltc_status alias_to_host(ltc_backend *b, const ltc_data *d, void *host) {
    (void)b;
    const ltc_data *o = ((const alias_data *)d)->orig;
    return o->backend->iface->data_to_host(o->backend, o, host);
}

static const struct ltc_backend_i alias_iface = {
    .version = LTC_BACKEND_IFACE_VERSION,
    .data_to_host = alias_to_host,
    .data_free = alias_free,
};
static ltc_backend alias_backend = {.name = "cpu", .iface = &alias_iface};

static ltc_data *alias_new(ltc_data *orig) {
    alias_data *a = malloc(sizeof *a);
    if (!a) return NULL;
    a->d = *orig;
    a->d.refcount = 1;
    a->d.backend = &alias_backend;
    a->orig = ltc_data_retain(orig);
    return &a->d;
}

/* ---- the session ----------------------------------------------------------------------------- */

typedef struct session {
    ltc_capture_mode mode;
    ltc_backend *backend;
    void *exec_ctx;
    uint64_t rng_begin;
    pmap data;    /* data object -> what it is (retained) */
    pmap statics; /* the tensors alive when the capture began (M_SEEN) */
    ltc_capture_record *rec;
    int cap_steps;
} session;

static _Thread_local session *cur;
static int global_captures; /* threads capturing in global mode (atomic) */

bool ltc_capture_active(void) { return cur != NULL; }

bool ltc_capture_is_static(const ltc_tensor *t) {
    return cur && pmap_find(&cur->statics, t) != NULL;
}

void *ltc_capture_exec_ctx(ltc_backend *b) {
    return cur && cur->backend == b ? cur->exec_ctx : NULL;
}

static void binding_release(ltc_binding *bd) {
    if (bd->kind == LTC_BIND_TENSOR) ltc_tensor_release(bd->tensor);
    if (bd->kind == LTC_BIND_CONST || bd->kind == LTC_BIND_RNG) ltc_data_release(bd->data);
}

void ltc_capture_record_free(ltc_capture_record *r) {
    if (!r) return;
    for (int i = 0; i < r->n_steps; i++) {
        ltc_capture_step *s = &r->steps[i];
        for (int k = 0; k < s->n_args; k++) binding_release(&s->args[k]);
        free(s->args);
        ltc_computation_free(s->comp);
    }
    for (int i = 0; i < r->n_installs; i++) {
        ltc_tensor_release(r->installs[i].tensor);
        binding_release(&r->installs[i].value);
    }
    free(r->steps);
    free(r->installs);
    free(r);
}

static void session_free(session *s) {
    if (!s) return;
    for (size_t i = 0; i < s->data.cap; i++) {
        pentry *e = &s->data.e[i];
        if (!e->key) continue;
        ltc_data_release((ltc_data *)e->key);
        if (e->kind == M_STATIC) ltc_tensor_release(e->tensor);
    }
    free(s->data.e);
    free(s->statics.e);
    ltc_capture_record_free(s->rec);
    free(s);
}

static void session_end(void) {
    session *s = cur;
    cur = NULL;
    if (s && s->mode == LTC_CAPTURE_GLOBAL) __atomic_fetch_sub(&global_captures, 1, __ATOMIC_ACQ_REL);
    session_free(s);
}

ltc_status ltc_capture_start(ltc_capture_mode mode, ltc_backend *backend, void *exec_ctx) {
    if (cur) return ltc_errorf(LTC_ERR_STATE, "capture_begin: this thread already captures a graph");
    if (mode <= LTC_CAPTURE_DEFAULT || mode >= LTC_CAPTURE_MODE_COUNT)
        return ltc_errorf(LTC_ERR_ARG, "capture_begin: the implementation must resolve mode %s",
                          ltc_capture_mode_name(mode));
    ltc_status st = ltc_sync(); /* work traced before the capture is not part of it */
    if (st) return st;
    session *s = calloc(1, sizeof *s);
    if (!s || !(s->rec = calloc(1, sizeof *s->rec))) goto nomem;
    s->mode = s->rec->mode = mode;
    s->backend = backend;
    s->exec_ctx = exec_ctx;
    uint64_t seed;
    ltc_rng_state_get(&seed, &s->rng_begin);
    for (ltc_tensor *t = ltc_live_first(); t; t = t->next) {
        if (!t->data) continue;
        if (pmap_find(&s->data, t->data)) { /* shared with an earlier tensor: an alias */
            ltc_data *a = alias_new(t->data);
            if (!a) goto nomem;
            ltc_tensor_set_data(t, a);
            ltc_data_release(a);
        }
        pentry *e = pmap_add(&s->data, t->data), *seen;
        if (!e) goto nomem;
        e->kind = M_STATIC;
        e->tensor = ltc_tensor_retain(t);
        ltc_data_retain(t->data);
        if (!(seen = pmap_add(&s->statics, t))) goto nomem;
        seen->kind = M_SEEN;
    }
    cur = s;
    if (mode == LTC_CAPTURE_GLOBAL) __atomic_fetch_add(&global_captures, 1, __ATOMIC_ACQ_REL);
    return LTC_OK;
nomem:
    session_free(s);
    return ltc_errorf(LTC_ERR_NOMEM, "capture_begin: out of memory");
}

/* The binding of data object d as the session knows it (a new reference inside). */
static ltc_binding classify(session *s, ltc_data *d) {
    pentry *e = pmap_find(&s->data, d);
    ltc_binding b = {.kind = LTC_BIND_CONST};
    if (!e) {
        b.data = ltc_data_retain(d);
        return b;
    }
    switch (e->kind) {
    case M_STATIC:
        b.kind = LTC_BIND_TENSOR;
        b.tensor = ltc_tensor_retain(e->tensor);
        break;
    case M_OUTPUT:
        b.kind = LTC_BIND_OUTPUT;
        b.step = e->step;
        b.index = e->index;
        break;
    default:
        b.kind = LTC_BIND_RNG;
        b.data = ltc_data_retain(d);
        b.rng_delta = e->delta;
        break;
    }
    return b;
}

ltc_status ltc_capture_note_sync(ltc_computation *c, ltc_data *const *args, ltc_data *const *outs) {
    session *s = cur;
    if (!s) return LTC_OK;
    ltc_capture_record *r = s->rec;
    if (r->n_steps == s->cap_steps) {
        int nc = s->cap_steps ? s->cap_steps * 2 : 16;
        ltc_capture_step *ns = realloc(r->steps, sizeof *ns * (size_t)nc);
        if (!ns) goto nomem;
        r->steps = ns;
        s->cap_steps = nc;
    }
    ltc_capture_step *step = &r->steps[r->n_steps];
    step->args = calloc((size_t)c->n_params + 1, sizeof *step->args);
    if (!step->args) goto nomem;
    if (!pmap_reserve(&s->data, (size_t)c->n_outputs)) { /* no failure after the bindings */
        free(step->args);
        goto nomem;
    }
    step->n_args = c->n_params;
    for (int i = 0; i < c->n_params; i++) step->args[i] = classify(s, args[i]);
    step->comp = ltc_computation_retain(c);
    for (int i = 0; i < c->n_outputs; i++) {
        pentry *e = pmap_add(&s->data, outs[i]);
        e->kind = M_OUTPUT;
        e->step = r->n_steps;
        e->index = i;
        ltc_data_retain(outs[i]);
    }
    r->n_steps++;
    return LTC_OK;
nomem:
    return ltc_errorf(LTC_ERR_NOMEM, "graph capture: out of memory recording a sync");
}

void ltc_capture_note_rng(ltc_tensor *state, uint64_t offset) {
    session *s = cur;
    if (!s || !state->data || pmap_find(&s->data, state->data)) return;
    pentry *e = pmap_add(&s->data, state->data);
    if (!e) return; /* then a constant: replays repeat the capture's numbers */
    e->kind = M_RNG;
    e->delta = (int64_t)(offset - s->rng_begin);
    ltc_data_retain(state->data);
}

/* One more holder of t in m, if m has t (pentry.step counts them). */
static void count_holder(pmap *m, const ltc_tensor *t) {
    pentry *e = pmap_find(m, t);
    if (e) e->step++;
}

/* Static inputs the record reads that nothing but the session and the record holds any
 * more: no later copy_ can reach them, so every replay reads their capture-time values.
 * Usually state that the captured code replaced instead of updating it in place
 * (`st.buf = st.buf * m + g` rather than `st.buf:mul_(m):add_(g)`); counted as
 * GraphFrozenInput. */
static int64_t count_frozen(session *s, const ltc_capture_record *r) {
    pmap m = {0};
    int64_t n = 0;
    for (int i = 0; i < r->n_steps; i++)
        for (int k = 0; k < r->steps[i].n_args; k++) {
            const ltc_binding *b = &r->steps[i].args[k];
            if (b->kind != LTC_BIND_TENSOR) continue;
            pentry *e = pmap_find(&m, b->tensor);
            if (!e && !(e = pmap_add(&m, b->tensor))) goto done; /* out of memory: no count */
            e->step++;
        }
    for (size_t i = 0; i < s->data.cap; i++) /* the session's references */
        if (s->data.e[i].key && s->data.e[i].kind == M_STATIC) count_holder(&m, s->data.e[i].tensor);
    for (int k = 0; k < r->n_installs; k++) count_holder(&m, r->installs[k].tensor);
    for (size_t i = 0; i < m.cap; i++)
        if (m.e[i].key && ((const ltc_tensor *)m.e[i].key)->refcount <= m.e[i].step) n++;
done:
    free(m.e);
    return n;
}

ltc_status ltc_capture_finish(ltc_capture_record **out) {
    session *s = cur;
    if (!s) return ltc_errorf(LTC_ERR_STATE, "capture_end: no capture in progress on this thread");
    ltc_status st = ltc_sync(); /* pending work traced during the capture is part of it */
    if (st) {
        session_end();
        return st;
    }
    ltc_capture_record *r = s->rec;
    int cap = 0;
    for (ltc_tensor *t = ltc_live_first(); t; t = t->next) {
        bool is_static = pmap_find(&s->statics, t) != NULL;
        if (!t->data || (is_static && t->refcount == 1)) continue; /* only the session holds it */
        pentry *e = pmap_find(&s->data, t->data);
        if (e ? e->kind == M_RNG || (e->kind == M_STATIC && e->tensor == t) : !is_static)
            continue; /* unchanged, or a constant made during the capture */
        if (r->n_installs == cap) {
            cap = cap ? cap * 2 : 16;
            ltc_capture_install *ni = realloc(r->installs, sizeof *ni * (size_t)cap);
            if (!ni) {
                session_end();
                return ltc_errorf(LTC_ERR_NOMEM, "capture_end: out of memory");
            }
            r->installs = ni;
        }
        r->installs[r->n_installs++] =
            (ltc_capture_install){ltc_tensor_retain(t), classify(s, t->data)};
    }
    int64_t frozen = count_frozen(s, r);
    if (frozen) ltc_counter_add("GraphFrozenInput", frozen);
    uint64_t seed, now;
    ltc_rng_state_get(&seed, &now);
    r->rng_advance = now - s->rng_begin;
    r->rebinds = ltc_tensor_rebinds();
    s->rec = NULL;
    session_end();
    *out = r;
    return LTC_OK;
}

void ltc_capture_abort(void) { session_end(); }

ltc_status ltc_capture_check_sync(void) {
    int g = __atomic_load_n(&global_captures, __ATOMIC_ACQUIRE);
    if (g == 0) return LTC_OK;
    if (g - (cur && cur->mode == LTC_CAPTURE_GLOBAL) > 0)
        return ltc_errorf(LTC_ERR_STATE, "sync while another thread captures a graph in global "
                          "mode (capture in thread_local or relaxed mode to allow it)");
    return LTC_OK;
}

ltc_status ltc_capture_check_backend(const ltc_backend *b) {
    if (!cur || !cur->backend || cur->backend == b || !strcmp(cur->backend->name, b->name))
        return LTC_OK;
    return ltc_errorf(LTC_ERR_STATE, "sync on backend '%s' while this thread captures a graph "
                      "on '%s': a replay would not repeat it (move the tensors with t:to(\"%s\") "
                      "or capture with ltc.Graph{device = \"%s\"})", b->name, cur->backend->name,
                      cur->backend->name, b->name);
}

ltc_status ltc_capture_check_read(void) {
    if (!cur || cur->mode == LTC_CAPTURE_RELAXED) return LTC_OK;
    return ltc_errorf(LTC_ERR_STATE, "cannot read a tensor's value while this thread captures a "
                      "graph in %s mode: the read would happen once, during the capture, and "
                      "never on replay (read after capture_end, or capture in relaxed mode)",
                      ltc_capture_mode_name(cur->mode));
}

/* ---- tensor helpers for replays ---------------------------------------------------------------- */

ltc_data *ltc_tensor_data(ltc_tensor *t) { return ltc_tensor_is_pending(t) ? NULL : t->data; }

bool ltc_tensor_owns_data(ltc_tensor *t) {
    ltc_data *d = t->data;
    const ltc_node *n = t->ir.node;
    if (!d || t->base || t->failed || ltc_tensor_is_pending(t)) return false;
    if (!n) return d->refcount == 1;
    return n->op == LTC_OP_DEVICE_DATA && n->data == d && n->refcount == 1 && d->refcount == 2;
}

void ltc_tensor_install(ltc_tensor *const *ts, ltc_data *const *ds, int n) {
    for (int i = 0; i < n; i++) {
        ltc_tensor_set_data(ts[i], ds[i]);
        if (!ts[i]->base) ts[i]->generation++; /* an in-place write: views recompute */
    }
    for (int i = 0; i < n; i++) { /* a view installed with its base is up to date */
        ltc_tensor *t = ts[i];
        if (!t->base) continue;
        for (int k = 0; k < n; k++)
            if (ts[k] == t->base) {
                t->generation = t->base->generation;
                break;
            }
    }
}

ltc_status ltc_tensor_share(ltc_tensor *t, ltc_tensor **out) {
    ltc_value v;
    ltc_status st;
    if (!t->data || ltc_tensor_is_pending(t))
        return ltc_errorf(LTC_ERR_STATE, "share: the tensor holds no data");
    if ((st = ltc_tensor_value(t, &v)) || (st = ltc_tensor_from_value(v, out))) return st;
    (*out)->backend = t->backend, (*out)->ordinal = t->ordinal;
    (*out)->weak = t->weak; /* (its data came with the DEVICE_DATA value) */
    return LTC_OK;
}
