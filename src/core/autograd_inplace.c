/*
 * autograd_inplace.c - autograd's rules for views and in-place writes (PyTorch's version
 * counters, CopySlices and rebase_history), over the core's functionalized views (views.c):
 * the value write is views.c's, the history is decided here.
 */
#include <stdlib.h>
#include <string.h>

#include "autograd.h"

/* Ops that keep the elements in row-major order (undone by a reshape). */
static bool reshapes(int op) {
    return op == LTC_OP_VIEW || op == LTC_OP_RESHAPE || op == LTC_OP_UNSQUEEZE ||
           op == LTC_OP_SQUEEZE || op == LTC_OP_SQUEEZE_DIM || op == LTC_OP_FLATTEN;
}

ltc_status ltc_ag_apply_step(ltc_tensor *x, const ltc_view_step *s, ltc_tensor **out) {
    const ltc_attr *a = s->attrs;
    if (reshapes(s->op)) return ltc_reshape(x, s->out_shape.dims, s->out_shape.ndim, out);
    switch (s->op) {
    case LTC_OP_T: return ltc_t(x, out);
    case LTC_OP_TRANSPOSE: return ltc_transpose(x, a[0].i + 1, a[1].i + 1, out);
    case LTC_OP_PERMUTE: return ltc_permute(x, a[0].ints, a[0].n, out);
    case LTC_OP_NARROW: return ltc_narrow(x, a[0].i + 1, a[1].i, a[2].i, out);
    case LTC_OP_SELECT: return ltc_select(x, a[0].i + 1, a[1].i, out);
    case LTC_OP_EXPAND: return ltc_expand(x, a[0].ints, a[0].n, out);
    default:
        return ltc_errorf(LTC_ERR_ARG, "autograd: cannot replay a %s view", ltc_op_name(s->op));
    }
}

static bool scatterable(int op) {
    return reshapes(op) || op == LTC_OP_T || op == LTC_OP_TRANSPOSE || op == LTC_OP_PERMUTE ||
           op == LTC_OP_NARROW || op == LTC_OP_SELECT;
}

ltc_status ltc_ag_scatter_step(ltc_tensor *whole, ltc_tensor *src, const ltc_view_step *s,
                               ltc_tensor **out) {
    const ltc_attr *a = s->attrs;
    if (reshapes(s->op)) return ltc_reshape(src, s->in_shape.dims, s->in_shape.ndim, out);
    switch (s->op) {
    case LTC_OP_T: return ltc_t(src, out);
    case LTC_OP_TRANSPOSE: return ltc_transpose(src, a[0].i + 1, a[1].i + 1, out);
    case LTC_OP_PERMUTE: { /* the inverse permutation */
        int nd = s->in_shape.ndim;
        int64_t inv[LTC_MAX_DIMS];
        for (int i = 0; i < nd; i++) {
            int64_t d = a[0].ints[i];
            inv[d < 0 ? d + nd : d - 1] = i + 1;
        }
        return ltc_permute(src, inv, nd, out);
    }
    case LTC_OP_NARROW: return ltc_narrow_scatter(whole, src, a[0].i + 1, a[1].i, out);
    case LTC_OP_SELECT: return ltc_select_scatter(whole, src, a[0].i + 1, a[1].i, out);
    default:
        return ltc_errorf(LTC_ERR_ARG, "writing through a view made by '%s' is not "
                          "differentiable", ltc_op_name(s->op));
    }
}

/* whole with src written through steps[0..n), which hold an expand and repeat no element:
 * src scattered at the positions the same view of whole's 1-based flat positions names (as
 * views.c writes the value). New reference. */
static ltc_status scatter_indexed(ltc_tensor *whole, const ltc_view_step *steps, int n,
                                  ltc_tensor *src, ltc_tensor **out) {
    const ltc_shape *ws = &whole->shape;
    int64_t nw = ltc_shape_numel(ws), ns = ltc_shape_numel(&src->shape);
    ltc_tensor *idx = NULL, *x = NULL, *wf = NULL, *sf = NULL, *r = NULL;
    ltc_status st = ltc_arange(1, (double)nw + 1, 1, LTC_I64, &idx);
    if (!st) st = ltc_reshape(idx, ws->dims, ws->ndim, &x);
    for (int i = 0; i < n && !st; i++) {
        ltc_tensor_release(idx);
        idx = x, x = NULL;
        st = ltc_ag_apply_step(idx, &steps[i], &x);
    }
    ltc_tensor_release(idx), idx = NULL;
    if (!st) st = ltc_reshape(x, &ns, 1, &idx);
    if (!st) st = ltc_reshape(whole, &nw, 1, &wf);
    if (!st) st = ltc_reshape(src, &ns, 1, &sf);
    if (!st) st = ltc_scatter(wf, 1, idx, sf, &r);
    if (!st) st = ltc_reshape(r, ws->dims, ws->ndim, out);
    ltc_tensor_release(idx);
    ltc_tensor_release(x);
    ltc_tensor_release(wf);
    ltc_tensor_release(sf);
    ltc_tensor_release(r);
    return st;
}

/* whole with src written through steps[i..n) (new reference). */
static ltc_status scatter_chain(ltc_tensor *whole, const ltc_view_step *steps, int i, int n,
                                ltc_tensor *src, ltc_tensor **out) {
    if (i == n) {
        *out = ltc_tensor_retain(src);
        return LTC_OK;
    }
    for (int k = i; k < n; k++)
        if (steps[k].op == LTC_OP_EXPAND) return scatter_indexed(whole, steps + i, n - i, src, out);
    ltc_tensor *inner = NULL, *written = NULL;
    ltc_status st = ltc_ag_apply_step(whole, &steps[i], &inner);
    if (!st) st = scatter_chain(inner, steps, i + 1, n, src, &written);
    if (!st) st = ltc_ag_scatter_step(whole, written, &steps[i], out);
    ltc_tensor_release(inner);
    ltc_tensor_release(written);
    return st;
}

ltc_status ltc_ag_inplace_backward(ltc_grad_fn *fn, ltc_tensor *grad, ltc_tensor **g) {
    ltc_status st = LTC_OK;
    if (fn->kind == AG_OVERWRITE) {
        const ltc_shape *s = &fn->in_shapes[0];
        return ltc_zeros(s->dims, s->ndim, s->dtype, &g[0]);
    }
    if (fn->needs[0]) {
        ltc_tensor *z = NULL;
        const ltc_shape *vs = fn->view_shape;
        st = ltc_zeros(vs->dims, vs->ndim, vs->dtype, &z);
        if (!st) st = scatter_chain(grad, fn->steps, 0, fn->n_steps, z, &g[0]);
        ltc_tensor_release(z);
    }
    if (!st && fn->needs[1]) {
        ltc_tensor *x = ltc_tensor_retain(grad);
        for (int i = 0; i < fn->n_steps && !st; i++) {
            ltc_tensor *y = NULL;
            st = ltc_ag_apply_step(x, &fn->steps[i], &y);
            ltc_tensor_release(x);
            x = y;
        }
        if (!st) g[1] = x;
        else ltc_tensor_release(x);
    }
    if (st) {
        ltc_tensor_release(g[0]);
        g[0] = NULL;
    }
    return st;
}

/* How a write takes its value: as ltc_tensor_assign_, ltc_tensor_copy_, or a fill (one
 * value for every element, which may go through a view that repeats elements). */
typedef enum { W_ASSIGN, W_COPY, W_FILL } write_kind;

static ltc_status raw_write(ltc_tensor *t, ltc_tensor *v, write_kind k) {
    return k == W_FILL ? ltc_tensor_fill_raw(t, v)
           : k == W_COPY ? ltc_tensor_copy_raw(t, v) : ltc_tensor_assign_raw(t, v);
}

#define LEAF_MSG "%s: a %s that requires grad is used in an in-place operation (use " \
                 "ltc.no_grad, or t.data)"

/* v as t's size and dtype, recorded (a leaf v becomes a recorded copy), new reference. */
static ltc_status fit_value(ltc_tensor *t, ltc_tensor *v, ltc_tensor **out) {
    ltc_tensor *nv = ltc_tensor_retain(v), *x = NULL;
    ltc_status st = LTC_OK;
    const ltc_shape *ts = &t->shape, *vs = &v->shape;
    if (ts->ndim != vs->ndim || memcmp(ts->dims, vs->dims, sizeof(int64_t) * (size_t)ts->ndim)) {
        if ((st = ltc_broadcast_to(nv, ts->dims, ts->ndim, &x))) goto done;
        ltc_tensor_release(nv);
        nv = x;
    }
    if (nv->shape.dtype != ts->dtype || !(nv->ag && nv->ag->fn)) {
        if ((st = ltc_to(nv, ts->dtype, &x))) goto done;
        ltc_tensor_release(nv);
        nv = x;
    }
done:
    if (st) ltc_tensor_release(nv);
    else *out = nv;
    return st;
}

/* A node of kind with edges e (n of them, borrowed) into inputs of shapes in_shapes. */
static ltc_grad_fn *inplace_node(ag_kind kind, const char *name, const ltc_edge *e,
                                 const ltc_shape *in_shapes, int n, const ltc_shape *out) {
    ltc_grad_fn *fn = ltc_grad_fn_new(kind, n, n, 1);
    if (!fn) return NULL;
    fn->name = name;
    fn->out_shapes[0] = *out;
    for (int i = 0; i < n; i++) {
        fn->edges[i] = e[i];
        ltc_grad_fn_retain(e[i].fn);
        ltc_tensor_retain(e[i].leaf);
        fn->in_shapes[i] = in_shapes[i];
        fn->needs[i] = e[i].fn || e[i].leaf;
    }
    fn->freed = true; /* saves no values */
    return fn;
}

/* The write into a tensor that is no view (or a detach() alias, which has its own history). */
static ltc_status write_plain(ltc_tensor *t, ltc_tensor *v, write_kind copy, const char *op,
                              bool vreq) {
    ltc_ag_meta *m = t->ag;
    if (m && m->requires_grad && !m->fn) return ltc_errorf(LTC_ERR_ARG, LEAF_MSG, op, "leaf tensor");
    ltc_tensor *nv = NULL;
    ltc_status st = LTC_OK;
    if (vreq && (st = fit_value(t, v, &nv))) return st;
    ltc_edge old = {0};
    bool overwrite = !vreq && m && m->requires_grad && m->fn;
    if (overwrite) old.fn = m->fn, old.nr = m->nr;
    ltc_shape before = t->shape;
    ltc_grad_fn *keep = ltc_grad_fn_retain(old.fn);
    if ((st = raw_write(t, v, copy))) goto done;
    if (vreq) {
        st = ltc_ag_set_history(t, nv->ag->fn, nv->ag->nr, true);
    } else if (overwrite) {
        /* overwritten by a value that needs no grad: t still requires grad (PyTorch: sticky),
         * and its old history gets zeros */
        ltc_grad_fn *fn = inplace_node(AG_OVERWRITE, "overwrite", &old, &before, 1, &before);
        if (!fn) st = LTC_ERR_NOMEM;
        else st = ltc_ag_set_history(t, fn, 0, true);
        ltc_grad_fn_release(fn);
    } else {
        st = ltc_ag_set_history(t, NULL, 0, false);
    }
done:
    ltc_grad_fn_release(keep);
    ltc_tensor_release(nv);
    return st;
}

static ltc_status write_on_device(ltc_tensor *t, ltc_tensor *v, write_kind copy, const char *op) {
    if (!ltc_grad_mode) return raw_write(t, v, copy);
    ltc_status st;
    /* integer and bool tensors never require grad, whatever is written into them. v's edge
     * first: a stale view of t's own root (t:copy_(t:squeeze())) gets its history now, and
     * the node that replays the view saves that root; preserved below with the others, it
     * keeps the old value in a tensor of its own rather than t, whose history it becomes
     * (a cycle t -> node -> t that was never freed: fuzz seed 44 program 1396) */
    ltc_edge ve = {0};
    if (ltc_dtype_is_float(t->shape.dtype) && (st = ltc_ag_edge_of(v, &ve))) return st;
    /* the nodes that saved t's root or its views keep the old value, in tensors of their own */
    if ((st = ltc_ag_preserve(t->base ? t->base : t))) return st;
    if (ltc_ag_stale(t) && (st = ltc_ag_refresh(t))) return st;
    bool vreq = ve.fn || ve.leaf;
    bool view = t->base && !t->ag_detached;
    if (!view) return write_plain(t, v, copy, op, vreq);
    ltc_tensor *base = t->base;
    ltc_ag_meta *bm = base->ag;
    bool breq = bm && bm->requires_grad;
    if (!vreq && !breq) return raw_write(t, v, copy);
    if (breq && !bm->fn) return ltc_errorf(LTC_ERR_ARG, LEAF_MSG, op, "view of a leaf tensor");
    if (ltc_view_repeats(t)) /* PyTorch raises at the backward */
        return ltc_errorf(LTC_ERR_ARG, "%s: writing through an expand view that repeats "
                          "elements is not differentiable (clone() it first)", op);
    for (int i = 0; i < t->n_steps; i++)
        if (!scatterable(t->steps[i].op) && t->steps[i].op != LTC_OP_EXPAND)
            return ltc_errorf(LTC_ERR_ARG, "%s: writing through a view made by '%s' is not "
                              "differentiable", op, ltc_op_name(t->steps[i].op));
    ltc_edge e[2] = {{0}, ve};
    if (breq) e[0].fn = bm->fn, e[0].nr = bm->nr;
    ltc_shape shapes[2] = {base->shape, vreq ? v->shape : t->shape};
    ltc_shape view_shape = t->shape;
    ltc_grad_fn *fn = inplace_node(AG_COPY_SLICES, "copy_slices", e, shapes, 2, &base->shape);
    if (!fn) return LTC_ERR_NOMEM;
    fn->view_shape = malloc(sizeof *fn->view_shape);
    if (fn->view_shape) *fn->view_shape = view_shape;
    if (!fn->view_shape ||
        (t->n_steps && !(fn->steps = malloc(sizeof *fn->steps * (size_t)t->n_steps)))) {
        ltc_grad_fn_release(fn);
        return ltc_errorf(LTC_ERR_NOMEM, "%s: out of memory", op);
    }
    if (t->n_steps) memcpy(fn->steps, t->steps, sizeof *fn->steps * (size_t)t->n_steps);
    fn->n_steps = t->n_steps;
    if (!(st = raw_write(t, v, copy))) st = ltc_ag_set_history(base, fn, 0, true);
    ltc_grad_fn_release(fn);
    return st;
}

/* A write whose value lives on another device (PyTorch's cross-device copy_): the value is
 * moved to t's device first (ltc_tensor_to_device: a sync of the value, recorded for autograd
 * so that its gradient goes back to its own device); t keeps its device. Without the move the
 * other backend's data would become t's value and reach t's backend as its own. */
static ltc_status write(ltc_tensor *t, ltc_tensor *v, write_kind copy, const char *op) {
    if (v->weak || v->any_device || (v->backend == t->backend && v->ordinal == t->ordinal))
        return write_on_device(t, v, copy, op);
    ltc_tensor *moved = NULL;
    ltc_status st = ltc_tensor_to_device(v, ltc_tensor_device(t), &moved);
    if (st) return st;
    st = write_on_device(t, moved, copy, op);
    ltc_tensor_release(moved);
    return st;
}

ltc_status ltc_tensor_write_(ltc_tensor *t, ltc_tensor *v, bool copy, const char *op) {
    return write(t, v, copy ? W_COPY : W_ASSIGN, op);
}

ltc_status ltc_tensor_fill_(ltc_tensor *t, ltc_tensor *value, const char *op) {
    return write(t, value, W_FILL, op);
}

ltc_status ltc_tensor_assign_(ltc_tensor *t, ltc_tensor *value) {
    return write(t, value, W_ASSIGN, "assign_");
}

ltc_status ltc_tensor_copy_(ltc_tensor *t, ltc_tensor *src) {
    return write(t, src, W_COPY, "copy_");
}
