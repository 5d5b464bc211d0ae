/*
 * views.c - views and in-place writes, by functionalization: a view is recomputed from its
 * base, and a write through a view becomes a new value of the whole base. The graph stays
 * purely functional, so hashing, caching and every backend are unaware of aliasing.
 * PyTorch: FunctionalTensorWrapper / functionalization (aten/src/ATen/FunctionalTensorWrapper.cpp).
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "shape_inference.h"

/* Ops that keep the elements in row-major order (a view back undoes them). */
static bool reshapes(int op) {
    return op == LTC_OP_VIEW || op == LTC_OP_RESHAPE || op == LTC_OP_UNSQUEEZE ||
           op == LTC_OP_SQUEEZE || op == LTC_OP_SQUEEZE_DIM || op == LTC_OP_FLATTEN;
}

/* A narrow step's 0-based start. */
static int64_t narrow_start(const ltc_view_step *s) {
    int64_t size = s->in_shape.dims[s->attrs[0].i], start = s->attrs[1].i;
    return start == size + 1 ? size : ltc_index_wrap(start, size);
}

/* One step doing what a then b do, written into *a; false when they do not compose. So a
 * view's steps do not grow with the views taken before it when those compose: narrows of
 * one dim, reshapes of reshapes, a transpose undone (r07: consuming a buffer with narrow,
 * x = x:t() in a loop). */
static bool compose(ltc_view_step *a, const ltc_view_step *b) {
    ltc_view_step m = *a;
    m.out_shape = b->out_shape;
    bool undo = (a->op == LTC_OP_T && b->op == LTC_OP_T) ||
                (a->op == LTC_OP_TRANSPOSE && b->op == LTC_OP_TRANSPOSE &&
                 ((a->attrs[0].i == b->attrs[0].i && a->attrs[1].i == b->attrs[1].i) ||
                  (a->attrs[0].i == b->attrs[1].i && a->attrs[1].i == b->attrs[0].i)));
    if ((reshapes(a->op) && reshapes(b->op)) || undo) { /* one view to b's sizes */
        m.op = LTC_OP_VIEW;
        m.n_attrs = 1;
        memset(m.attrs, 0, sizeof m.attrs);
        m.attrs[0] = ltc_attr_ints(m.out_shape.dims, m.out_shape.ndim);
    } else if (a->op == LTC_OP_NARROW && b->op == LTC_OP_NARROW && a->attrs[0].i == b->attrs[0].i) {
        m.attrs[1] = ltc_attr_int(narrow_start(a) + narrow_start(b) + 1);
        m.attrs[2] = b->attrs[2];
    } else {
        return false;
    }
    *a = m;
    return true;
}

ltc_status ltc_view_record(ltc_tensor *out, ltc_tensor *src, int op, const ltc_attr *attrs,
                           int n_attrs) {
    if (n_attrs > 4) return ltc_errorf(LTC_ERR_ARG, "%s: too many view attributes", ltc_op_name(op));
    ltc_tensor *base = src->base ? src->base : src;
    ltc_view_step *steps = malloc(sizeof *steps * (size_t)(src->n_steps + 1));
    if (!steps) return ltc_errorf(LTC_ERR_NOMEM, "%s: out of memory", ltc_op_name(op));
    if (src->n_steps) memcpy(steps, src->steps, sizeof *steps * (size_t)src->n_steps);
    ltc_view_step s;
    memset(&s, 0, sizeof s);
    s.op = op;
    s.n_attrs = n_attrs;
    if (n_attrs) memcpy(s.attrs, attrs, sizeof(ltc_attr) * (size_t)n_attrs);
    s.in_shape = src->shape;
    s.out_shape = out->shape;
    int n = src->n_steps;
    if (n == 0 || !compose(&steps[n - 1], &s)) steps[n++] = s;
    while (n >= 2 && compose(&steps[n - 2], &steps[n - 1])) n--; /* t(t(x)) then a view */
    /* a composed view that gives back its input's sizes in order (a transpose undone, a
     * reshape back) is no step at all */
    if (n > 0 && steps[n - 1].op == LTC_OP_VIEW &&
        ltc_shape_equal(&steps[n - 1].in_shape, &steps[n - 1].out_shape))
        n--;
    out->base = ltc_tensor_retain(base);
    out->steps = steps;
    out->n_steps = n;
    out->generation = base->generation;
    out->ag_gen = base->generation;
    return LTC_OK;
}

int ltc_tensor_view_steps(const ltc_tensor *t) { return t->base ? t->n_steps : 0; }

/* Applies one view step to v (a new node; the caller owns the returned reference). */
static ltc_node *apply_step(const ltc_view_step *s, ltc_value v) {
    return ltc_node_new(s->op, &v, 1, s->attrs, s->n_attrs, &s->out_shape, 1);
}

#define RESIZED "its base was resized (resize_) after the view was made"

ltc_status ltc_view_refresh(ltc_tensor *t) {
    if (!ltc_view_stale(t)) return LTC_OK;
    if (t->n_steps && !ltc_shape_equal(&t->base->shape, &t->steps[0].in_shape)) {
        /* the base was resized (ltc_tensor_set_): the view has no value any more; using it
         * raises, and syncs of other tensors go on without it */
        if (!t->failed && !(t->failed = strdup(RESIZED)))
            return ltc_errorf(LTC_ERR_NOMEM, "view: out of memory");
        ltc_node_release(t->ir.node);
        t->ir = (ltc_value){NULL, 0};
        ltc_data_release(t->data);
        t->data = NULL;
        t->generation = t->base->generation;
        return LTC_OK;
    }
    ltc_value v;
    ltc_status st = ltc_tensor_value(t->base, &v);
    if (st) return st;
    ltc_node *held = ltc_node_retain(v.node);
    for (int i = 0; i < t->n_steps; i++) {
        ltc_node *n = apply_step(&t->steps[i], v);
        ltc_node_release(held);
        if (!n) return LTC_ERR_NOMEM;
        held = n;
        v = (ltc_value){n, 0};
    }
    ltc_node_release(t->ir.node);
    ltc_tensor_keep_committed(t);
    t->ir = v; /* takes `held` */
    if (held->op == LTC_OP_DEVICE_DATA) { /* no step (an alias): the base's data itself */
        ltc_data_release(t->data);
        t->data = ltc_data_retain(held->data);
    }
    t->generation = t->base->generation;
    return LTC_OK;
}

/* The inverse of view step s: `src` written into `whole` (the step's input). New reference. */
static ltc_node *scatter_step(const ltc_view_step *s, ltc_value whole, ltc_value src) {
    ltc_value two[2] = {whole, src};
    ltc_attr a;
    switch (s->op) {
    case LTC_OP_VIEW:
    case LTC_OP_RESHAPE:
    case LTC_OP_UNSQUEEZE:
    case LTC_OP_SQUEEZE:
    case LTC_OP_SQUEEZE_DIM:
    case LTC_OP_FLATTEN: /* the same elements in the same order: a view back */
        a = ltc_attr_ints(s->in_shape.dims, s->in_shape.ndim);
        return ltc_node_new(LTC_OP_VIEW, &src, 1, &a, 1, &s->in_shape, 1);
    case LTC_OP_TRANSPOSE:
    case LTC_OP_T:
        return ltc_node_new(s->op, &src, 1, s->attrs, s->n_attrs, &s->in_shape, 1);
    case LTC_OP_PERMUTE: { /* the inverse permutation: inv[dims[i]] = i (1-based) */
        int nd = s->in_shape.ndim;
        int64_t inv[LTC_MAX_DIMS];
        for (int i = 0; i < nd; i++) {
            int64_t d = s->attrs[0].ints[i];
            inv[ltc_index_wrap(d, nd)] = i + 1;
        }
        a = ltc_attr_ints(inv, nd);
        return ltc_node_new(LTC_OP_PERMUTE, &src, 1, &a, 1, &s->in_shape, 1);
    }
    case LTC_OP_EXPAND: /* scatter_indexed writes through chains with an expand */
    case LTC_OP_NARROW: /* attrs: dim, start, length */
        return ltc_node_new(LTC_OP_NARROW_SCATTER, two, 2, s->attrs, 2, &s->in_shape, 1);
    case LTC_OP_SELECT: /* attrs: dim, index */
        return ltc_node_new(LTC_OP_SELECT_SCATTER, two, 2, s->attrs, 2, &s->in_shape, 1);
    default:
        ltc_errorf(LTC_ERR_ARG, "cannot write through a %s view", ltc_op_name(s->op));
        return NULL;
    }
}

static bool has_expand(const ltc_view_step *steps, int n) {
    for (int i = 0; i < n; i++)
        if (steps[i].op == LTC_OP_EXPAND) return true;
    return false;
}

bool ltc_view_repeats(const ltc_tensor *t) {
    if (!t->base || !has_expand(t->steps, t->n_steps) || ltc_shape_numel(&t->shape) == 0)
        return false;
    int64_t st[LTC_MAX_DIMS], off;
    if (!ltc_tensor_strides(t, st, &off)) return true; /* no strides (PyTorch has no such view) */
    for (int d = 0; d < t->shape.ndim; d++)
        if (t->shape.dims[d] > 1 && st[d] == 0) return true;
    return false;
}

/* v viewed as sizes dims[nd] in dtype (a new node; v is not released). */
static ltc_node *view_node(ltc_value v, const int64_t *dims, int nd, ltc_dtype dtype) {
    if (!v.node) return NULL;
    ltc_shape s = {.dtype = dtype, .ndim = nd};
    memcpy(s.dims, dims, sizeof(int64_t) * (size_t)nd);
    ltc_attr a = ltc_attr_ints(dims, nd);
    return ltc_node_new(LTC_OP_VIEW, &v, 1, &a, 1, &s, 1);
}

/* view_node of n's output 0, releasing n. */
static ltc_node *view_take(ltc_node *n, const int64_t *dims, int nd, ltc_dtype dtype) {
    ltc_node *r = view_node((ltc_value){n, 0}, dims, nd, dtype);
    ltc_node_release(n);
    return r;
}

/* The base's new value after writing `value` through view t whose steps hold an expand:
 * each element of the view is located in the base by the same view of the base's 1-based
 * flat positions (arange, then t's steps), and `value` is scattered there. The view repeats
 * no element, or every element of `value` is the same (fill_), so a repeated position gets
 * one value. New reference in *out. */
static ltc_status scatter_indexed(ltc_tensor *t, ltc_value base, ltc_value value, ltc_node **out) {
    const ltc_shape *bs = &t->steps[0].in_shape;
    int64_t n = ltc_shape_numel(bs), m = ltc_shape_numel(&t->shape);
    ltc_shape flat = {.dtype = LTC_I64, .ndim = 1, .dims = {n}};
    ltc_attr ar[4] = {ltc_attr_float(1), ltc_attr_float((double)n + 1), ltc_attr_float(1),
                      ltc_attr_int(LTC_I64)};
    ltc_node *idx = view_take(ltc_node_new(LTC_OP_ARANGE, NULL, 0, ar, 4, &flat, 1), bs->dims,
                              bs->ndim, LTC_I64);
    for (int i = 0; i < t->n_steps && idx; i++) {
        ltc_view_step s = t->steps[i];
        s.out_shape.dtype = LTC_I64;
        ltc_node *next = apply_step(&s, (ltc_value){idx, 0});
        ltc_node_release(idx);
        idx = next;
    }
    idx = view_take(idx, &m, 1, LTC_I64);
    ltc_node *src = view_node(value, &m, 1, t->shape.dtype);
    ltc_node *whole = view_node(base, &n, 1, bs->dtype);
    ltc_node *r = NULL;
    if (idx && src && whole) {
        ltc_value ops[3] = {{whole, 0}, {idx, 0}, {src, 0}};
        ltc_attr dim = ltc_attr_int(0);
        flat.dtype = bs->dtype;
        r = view_take(ltc_node_new(LTC_OP_SCATTER, ops, 3, &dim, 1, &flat, 1), bs->dims,
                      bs->ndim, bs->dtype);
    }
    ltc_node_release(idx);
    ltc_node_release(src);
    ltc_node_release(whole);
    if (!r) return ltc_errorf(LTC_ERR_NOMEM, "out of memory writing through a view");
    *out = r;
    return LTC_OK;
}

/* The base's new value after writing `value` (the view's new value) through view t. */
static ltc_status scatter_to_base(ltc_tensor *t, ltc_value value, bool uniform, ltc_node **out) {
    if (has_expand(t->steps, t->n_steps)) {
        if (!uniform && ltc_view_repeats(t))
            return ltc_errorf(LTC_ERR_ARG, "cannot write through an expand view that repeats "
                              "elements (several elements share one memory location; clone() "
                              "it first; fill_ and zero_ are allowed)");
        ltc_value b;
        ltc_status st = ltc_tensor_value(t->base, &b);
        return st ? st : scatter_indexed(t, b, value, out);
    }
    ltc_value *vals = malloc(sizeof *vals * (size_t)(t->n_steps + 1));
    ltc_node **made = calloc((size_t)t->n_steps + 1, sizeof *made);
    ltc_status st = LTC_OK;
    if (!vals || !made) {
        st = ltc_errorf(LTC_ERR_NOMEM, "out of memory writing through a view");
        goto done;
    }
    if ((st = ltc_tensor_value(t->base, &vals[0]))) goto done;
    for (int i = 0; i + 1 < t->n_steps; i++) { /* the inputs of each step */
        if (!(made[i] = apply_step(&t->steps[i], vals[i]))) {
            st = LTC_ERR_NOMEM;
            goto done;
        }
        vals[i + 1] = (ltc_value){made[i], 0};
    }
    ltc_node *cur = ltc_node_retain(value.node);
    ltc_value v = value;
    for (int i = t->n_steps - 1; i >= 0; i--) {
        ltc_node *n = scatter_step(&t->steps[i], vals[i], v);
        ltc_node_release(cur);
        if (!n) {
            st = ltc_last_error()[0] ? LTC_ERR_ARG : LTC_ERR_NOMEM;
            goto done;
        }
        cur = n;
        v = (ltc_value){n, 0};
    }
    *out = cur;
done:
    if (made)
        for (int i = 0; i <= t->n_steps; i++) ltc_node_release(made[i]);
    free(made);
    free(vals);
    return st;
}

/* Installs node n (a reference taken over) as t's value: pending, or the data of a
 * DEVICE_DATA node. */
static void set_value(ltc_tensor *t, ltc_node *n) {
    ltc_tensor_history_push(t);
    ltc_data *d = ltc_node_held_data(n);
    ltc_node_release(t->ir.node);
    if (d) { /* a computed value: nothing older to go back to */
        ltc_data_release(t->data);
        ltc_data_release(t->committed);
        t->committed = NULL;
        ltc_tensor_history_clear(t);
    } else {
        ltc_tensor_keep_committed(t);
    }
    t->data = d;
    t->ir = (ltc_value){n, 0};
}

static int64_t rebinds; /* ltc_tensor_set_ and ltc_tensor_rebind so far (atomic) */

int64_t ltc_tensor_rebinds(void) { return __atomic_load_n(&rebinds, __ATOMIC_RELAXED); }

/* A captured graph reading the tensor must not replay as is (ltc_tensor_rebinds). */
static void note_rebind(void) {
    __atomic_fetch_add(&rebinds, 1, __ATOMIC_RELAXED);
    ltc_counter_add("TensorRebind", 1);
}

ltc_status ltc_tensor_set_(ltc_tensor *t, ltc_tensor *value) {
    if (t->base)
        return ltc_errorf(LTC_ERR_ARG, "resize_: cannot resize a view (resize its base, or a clone)");
    if (value->shape.dtype != t->shape.dtype)
        return ltc_errorf(LTC_ERR_ARG, "resize_: the value is %s, the tensor %s",
                          ltc_dtype_name(value->shape.dtype), ltc_dtype_name(t->shape.dtype));
    ltc_value v;
    ltc_status st = ltc_tensor_value(value, &v);
    if (st) return st;
    set_value(t, ltc_node_retain(v.node));
    if (v.index) t->ir.index = v.index;
    if (t->committed) { /* the old data has the old sizes: nothing to restore into t */
        ltc_data_release(t->committed);
        t->committed = NULL;
    }
    t->shape = value->shape;
    t->generation++;
    note_rebind();
    return LTC_OK;
}

ltc_status ltc_tensor_rebind(ltc_tensor *t, ltc_tensor *value) {
    if (t->base) return ltc_errorf(LTC_ERR_ARG, "data: cannot rebind a view (set its base's)");
    if (value->failed) return ltc_tensor_failed_error(value);
    if (ltc_tensor_is_pending(value))
        return ltc_errorf(LTC_ERR_ARG, "data: the new value is pending (sync it first)");
    ltc_value v;
    ltc_status st = ltc_tensor_value(value, &v);
    if (st) return st;
    set_value(t, ltc_node_retain(v.node)); /* computed: no history or committed data stays */
    if (v.index) t->ir.index = v.index;
    t->shape = value->shape;
    t->backend = value->backend;
    t->ordinal = value->ordinal;
    t->any_device = value->any_device;
    t->generation++;
    note_rebind();
    return LTC_OK;
}

/* ltc_tensor_assign_raw; uniform: every element of value is the same (fill_), so a view
 * that repeats elements can be written. */
static ltc_status assign_raw(ltc_tensor *t, ltc_tensor *value, bool uniform) {
    char a[128], b[128];
    const ltc_shape *ts = &t->shape, *vs = &value->shape;
    if (ts->ndim != vs->ndim || memcmp(ts->dims, vs->dims, sizeof(int64_t) * (size_t)ts->ndim))
        return ltc_errorf(LTC_ERR_ARG, "in-place result of shape %s does not fit a tensor of shape %s",
                          ltc_shape_str(vs, a, sizeof a), ltc_shape_str(ts, b, sizeof b));
    int cat_t = ltc_dtype_is_float(ts->dtype) ? 2 : ts->dtype != LTC_BOOL;
    int cat_v = ltc_dtype_is_float(vs->dtype) ? 2 : vs->dtype != LTC_BOOL;
    if (cat_v > cat_t)
        return ltc_errorf(LTC_ERR_ARG, "result type %s can't be cast to the tensor's dtype %s in place",
                          ltc_dtype_name(vs->dtype), ltc_dtype_name(ts->dtype));
    ltc_tensor *cast = NULL;
    ltc_status st;
    if (vs->dtype != ts->dtype) {
        ltc_attr at = ltc_attr_int(ts->dtype);
        if ((st = ltc_trace(LTC_OP_TO, &value, 1, &at, 1, ts, 1, &cast))) return st;
        value = cast;
    }
    ltc_value v;
    if ((st = ltc_tensor_value(value, &v))) goto done;
    if (!t->base) {
        set_value(t, ltc_node_retain(v.node));
        if (v.index) t->ir.index = v.index;
        t->generation++;
        goto done;
    }
    if (!ltc_shape_equal(&t->base->shape, &t->steps[0].in_shape)) {
        st = ltc_errorf(LTC_ERR_STATE, "in-place write through a view: %s", RESIZED);
        goto done;
    }
    if ((st = ltc_view_refresh(t))) goto done;
    ltc_node *nb = NULL;
    if ((st = scatter_to_base(t, v, uniform, &nb))) goto done;
    set_value(t->base, nb);
    t->base->generation++;
    set_value(t, ltc_node_retain(v.node));
    t->ir.index = v.index;
    t->generation = t->base->generation;
done:
    ltc_tensor_release(cast);
    return st;
}

ltc_status ltc_tensor_assign_raw(ltc_tensor *t, ltc_tensor *value) {
    return assign_raw(t, value, false);
}

static ltc_status copy_raw(ltc_tensor *t, ltc_tensor *src, bool uniform) {
    ltc_tensor *b = NULL;
    ltc_status st;
    const ltc_shape *ss = &src->shape;
    /* broadcast to t's sizes in t's dtype: one broadcast_to node (none when they match) */
    bool same = ss->ndim == t->shape.ndim &&
                !memcmp(ss->dims, t->shape.dims, sizeof(int64_t) * (size_t)ss->ndim);
    if (same && ss->dtype == t->shape.dtype) return assign_raw(t, src, uniform);
    if ((st = ltc_broadcast_to(src, t->shape.dims, t->shape.ndim, &b))) return st;
    if (b->shape.dtype != t->shape.dtype) {
        ltc_tensor *c;
        ltc_attr at = ltc_attr_int(t->shape.dtype);
        st = ltc_trace(LTC_OP_TO, &b, 1, &at, 1, &t->shape, 1, &c);
        ltc_tensor_release(b);
        if (st) return st;
        b = c;
    }
    st = assign_raw(t, b, uniform);
    ltc_tensor_release(b);
    return st;
}

ltc_status ltc_tensor_copy_raw(ltc_tensor *t, ltc_tensor *src) { return copy_raw(t, src, false); }

ltc_status ltc_tensor_fill_raw(ltc_tensor *t, ltc_tensor *value) {
    if (ltc_shape_numel(&value->shape) != 1)
        return ltc_errorf(LTC_ERR_ARG, "the value must have one element (a number or a 0-d "
                          "tensor), got a tensor of %lld",
                          (long long)ltc_shape_numel(&value->shape));
    return copy_raw(t, value, true);
}
