/*
 * lower_more.c - lowering layer_norm and its backward, batch_norm, nll_loss and its backward, gather, scatter,
 * scatter_add, tril, triu, avg_pool2d and its backward, cumsum, cumprod, sort, argsort and
 * topk, kthvalue, median, cummax/cummin, var, std, prod, logsumexp, all, any, flip, repeat,
 * one_hot, eye, linspace, randperm (and dot and outer as CLBlast GEMMs) to the kernels of kernels_more.c (before, each ran on the CPU through the core's
 * eager fallback, with a host round trip).
 *
 * ocl_more_lowers says which nodes these are (dtypes and sizes included): the core's eager
 * fallback runs the others (mem.c's `lowers` slot), so the two must agree. Every size goes to
 * the kernels as an argument: one built program serves every batch size.
 */
#include "lower.h"

/* Lines longer than this sort on the host: the rank kernel is O(n) per element. */
#define SORT_MAX_LINE 8192

static const ltc_shape *opshape(const ltc_node *n, int k) {
    return &n->operands[k].node->shapes[n->operands[k].index];
}

/* A dtype the device computes in (float64 only where it has fp64). */
static bool dtype_ok(ltc_dtype dt) { return dt != LTC_F64 || ocl.info.fp64; }
static bool is_float(ltc_dtype dt) { return dt == LTC_F32 || (dt == LTC_F64 && ocl.info.fp64); }
static bool is_index(ltc_dtype dt) { return dt == LTC_I64 || dt == LTC_I32; }

/* A floating argument in the accumulator type of the kernels (double where there is fp64). */
static void arg_acc(ocl_step *s, double v) {
    s->args[s->n_args++] = (ocl_arg){.kind = ocl.info.fp64 ? 'd' : 'f', .f = v};
}

/* The error-flag arguments of an index-checking kernel; `range` is what the message names. */
static void arg_err(lw *w, ocl_step *s, int64_t range) {
    lw_arg_buf(s, 'e', -1);
    lw_arg_long(s, w->c->n_steps - 1);
    s->checks = true;
    s->k = range;
}

/* s viewed as [outer, n, inner] around dim (a 0-d tensor: one line of one element). */
static void split(const ltc_shape *s, int64_t dim, int64_t *outer, int64_t *n, int64_t *inner) {
    if (s->ndim == 0) {
        *outer = *n = *inner = 1;
        return;
    }
    *outer = lw_prod(s, 0, (int)dim);
    *n = s->dims[dim];
    *inner = lw_prod(s, (int)dim + 1, s->ndim);
}

static void strides_of(const ltc_shape *s, int64_t *st) {
    int64_t acc = 1;
    for (int d = s->ndim - 1; d >= 0; d--) {
        st[d] = acc;
        acc *= s->dims[d];
    }
}

/* ---- normalisation ---------------------------------------------------------------------------- */

static ltc_status lower_layer_norm(lw *w, const ltc_node *n, int out) {
    const ltc_shape *xs = opshape(n, 0);
    int64_t len = ltc_shape_numel(opshape(n, 1)), rows = len ? ltc_shape_numel(xs) / len : 0;
    ocl_sb b = {0};
    ocl_k_layer_norm(&b, KNAME, xs->dtype, ocl.info.fp64);
    ocl_step *s = lw_family_step(w, &b, n->op, out, (size_t)rows);
    if (!s) return lw_nomem();
    lw_arg_buf(s, 'o', out);
    for (int k = 0; k < 3; k++) lw_arg_buf(s, 'b', lw_opslot(w, n, k));
    lw_arg_long(s, rows);
    lw_arg_long(s, len);
    arg_acc(s, n->attrs[1].f);
    return LTC_OK;
}

/* Two steps: the rows' gradient (and their mean and rstd in a temporary), then the columns'
 * sums into the second and third outputs (slots out + 1, out + 2). */
static ltc_status lower_layer_norm_backward(lw *w, const ltc_node *n, int out) {
    const ltc_shape *xs = opshape(n, 1);
    int64_t len = ltc_shape_numel(opshape(n, 2)), rows = len ? ltc_shape_numel(xs) / len : 0;
    int64_t two_rows = 2 * rows;
    ltc_shape ss;
    ltc_shape_make(&ss, ocl.info.fp64 ? LTC_F64 : LTC_F32, 1, &two_rows);
    int tmp = lw_new_slot(w, &ss);
    if (tmp < 0) return lw_nomem();
    ocl_sb b = {0};
    ocl_k_ln_bwd_rows(&b, KNAME, xs->dtype, ocl.info.fp64);
    ocl_step *s = lw_family_step(w, &b, n->op, out, (size_t)rows);
    if (!s) return lw_nomem();
    lw_arg_buf(s, 'o', out);
    lw_arg_buf(s, 'o', tmp);
    for (int k = 0; k < 3; k++) lw_arg_buf(s, 'b', lw_opslot(w, n, k));
    lw_arg_long(s, rows);
    lw_arg_long(s, len);
    arg_acc(s, n->attrs[1].f);
    ocl_sb c = {0};
    ocl_k_ln_bwd_cols(&c, KNAME, xs->dtype, ocl.info.fp64);
    if (!(s = lw_family_step(w, &c, n->op, out + 1, (size_t)len))) return lw_nomem();
    s->n_out = 2;
    lw_arg_buf(s, 'o', out + 1);
    lw_arg_buf(s, 'o', out + 2);
    lw_arg_buf(s, 'b', tmp);
    for (int k = 0; k < 2; k++) lw_arg_buf(s, 'b', lw_opslot(w, n, k));
    lw_arg_long(s, rows);
    lw_arg_long(s, len);
    return LTC_OK;
}

/* linear_backward: two CLBlast GEMMs (grad_output . weight; grad_output^T . self over the
 * rows of the leading dims) and the bias's column sums (the reduction kernel over [1, rows,
 * out]). */
static ltc_status lower_linear_backward(lw *w, const ltc_node *n, int out) {
    const ltc_shape *ws = opshape(n, 2);
    int64_t o = ws->dims[0], in = ws->dims[1], rows = o ? ltc_shape_numel(opshape(n, 0)) / o : 0;
    ltc_status st;
    int g = lw_opslot(w, n, 0);
    if ((st = lw_gemm_step(w, n->op, out, g, lw_opslot(w, n, 2), false, false, rows, in, o,
                           ws->dtype)) ||
        (st = lw_gemm_step(w, n->op, out + 1, g, lw_opslot(w, n, 1), true, false, o, in, rows,
                           ws->dtype)))
        return st;
    ocl_sb b = {0};
    ocl_k_reduce(&b, KNAME, 's', ws->dtype, ws->dtype, ocl.info.fp64);
    if (!lw_line_step(w, &b, n, out + 2, 1, (size_t)o, 1, rows, o)) return lw_nomem();
    return LTC_OK;
}

static ltc_status lower_batch_norm(lw *w, const ltc_node *n, int out) {
    const ltc_shape *xs = opshape(n, 0);
    int64_t outer, c, inner;
    split(xs, 1, &outer, &c, &inner);
    int64_t two_c = 2 * c;
    ltc_shape ss;
    ltc_shape_make(&ss, ocl.info.fp64 ? LTC_F64 : LTC_F32, 1, &two_c);
    int tmp = lw_new_slot(w, &ss);
    if (tmp < 0) return lw_nomem();
    ocl_sb b = {0};
    ocl_k_bn_stats(&b, KNAME, xs->dtype, ocl.info.fp64);
    ocl_step *s = lw_family_step(w, &b, n->op, tmp, (size_t)c);
    if (!s) return lw_nomem();
    lw_arg_buf(s, 'o', tmp);
    for (int k = 0; k < 5; k++) lw_arg_buf(s, 'b', lw_opslot(w, n, k));
    lw_arg_long(s, outer);
    lw_arg_long(s, c);
    lw_arg_long(s, inner);
    lw_arg_long(s, n->attrs[0].i != 0);
    arg_acc(s, n->attrs[1].f);
    ocl_sb a = {0};
    ocl_k_bn_apply(&a, KNAME, xs->dtype, ocl.info.fp64);
    if (!(s = lw_family_step(w, &a, n->op, out, (size_t)ltc_shape_numel(xs)))) return lw_nomem();
    lw_arg_buf(s, 'o', out);
    lw_arg_buf(s, 'b', lw_opslot(w, n, 0));
    lw_arg_buf(s, 'b', tmp);
    lw_arg_long(s, ltc_shape_numel(xs));
    lw_arg_long(s, c ? c : 1);
    lw_arg_long(s, inner ? inner : 1);
    return LTC_OK;
}

/* ---- nll_loss ------------------------------------------------------------------------------------ */

static ltc_status lower_nll(lw *w, const ltc_node *n, int out) {
    bool bwd = n->op == LTC_OP_NLL_LOSS_BACKWARD;
    const ltc_shape *xs = opshape(n, bwd ? 1 : 0), *ts = opshape(n, bwd ? 2 : 1);
    int64_t rows = xs->ndim == 2 ? xs->dims[0] : 1, c = xs->dims[xs->ndim - 1];
    int red = (int)n->attrs[0].i;
    ocl_sb b = {0};
    ocl_step *s;
    if (bwd) {
        int kept = red == 1 ? lw_label_count(w, n->op, lw_opslot(w, n, 2), ts->dtype, rows) : 0;
        if (kept < 0) return lw_nomem();
        ocl_k_nll_backward(&b, KNAME, xs->dtype, ts->dtype, red == 0 && opshape(n, 0)->ndim > 0,
                           red == 1, ocl.info.fp64);
        if (!(s = lw_family_step(w, &b, n->op, out, (size_t)rows))) return lw_nomem();
        lw_arg_buf(s, 'o', out);
        lw_arg_buf(s, 'b', lw_opslot(w, n, 0));
        lw_arg_buf(s, 'b', lw_opslot(w, n, 2));
        lw_arg_long(s, rows);
        lw_arg_long(s, c);
        if (red == 1) lw_arg_buf(s, 'b', kept);
        arg_err(w, s, c);
        return LTC_OK;
    }
    ltc_shape rs;
    ltc_shape_make(&rs, xs->dtype, 1, &rows);
    int tmp = red == 0 ? out : lw_new_slot(w, &rs);
    if (tmp < 0) return lw_nomem();
    ocl_k_nll_rows(&b, KNAME, xs->dtype, ts->dtype);
    if (!(s = lw_family_step(w, &b, n->op, tmp, (size_t)rows))) return lw_nomem();
    lw_arg_buf(s, 'o', tmp);
    lw_arg_buf(s, 'b', lw_opslot(w, n, 0));
    lw_arg_buf(s, 'b', lw_opslot(w, n, 1));
    lw_arg_long(s, rows);
    lw_arg_long(s, c);
    arg_err(w, s, c);
    return lw_reduce_rows(w, n->op, out, tmp, lw_opslot(w, n, 1), ts->dtype, rows, red,
                          xs->dtype);
}

/* ---- gather and scatter ------------------------------------------------------------------------- */

static ltc_status lower_gather(lw *w, const ltc_node *n, int out) {
    const ltc_shape *ss = opshape(n, 0), *is = opshape(n, 1);
    int dim = (int)n->attrs[0].i, r = ss->ndim;
    int64_t sst[LTC_MAX_DIMS];
    strides_of(ss, sst);
    ocl_sb b = {0};
    ocl_k_gather(&b, KNAME, ss->dtype, is->dtype, r);
    ocl_step *s = lw_family_step(w, &b, n->op, out, (size_t)ltc_shape_numel(is));
    if (!s) return lw_nomem();
    lw_arg_buf(s, 'o', out);
    lw_arg_buf(s, 'b', lw_opslot(w, n, 0));
    lw_arg_buf(s, 'b', lw_opslot(w, n, 1));
    lw_arg_long(s, ltc_shape_numel(is));
    lw_arg_long(s, dim);
    lw_arg_long(s, ss->dims[dim]);
    for (int d = 0; d < r; d++) lw_arg_long(s, is->dims[d]);
    for (int d = 0; d < r; d++) lw_arg_long(s, sst[d]);
    arg_err(w, s, ss->dims[dim]);
    return LTC_OK;
}

static ltc_status lower_scatter(lw *w, const ltc_node *n, int out) {
    const ltc_shape *ss = opshape(n, 0), *is = opshape(n, 1), *rs = opshape(n, 2);
    int dim = (int)n->attrs[0].i, r = ss->ndim;
    bool value = rs->ndim == 0;
    int64_t ist[LTC_MAX_DIMS], rst[LTC_MAX_DIMS] = {0};
    strides_of(is, ist);
    if (!value) strides_of(rs, rst);
    ocl_sb b = {0};
    ocl_k_scatter(&b, KNAME, ss->dtype, is->dtype, rs->dtype, r, n->op == LTC_OP_SCATTER_ADD,
                  value);
    ocl_step *s = lw_family_step(w, &b, n->op, out, (size_t)ltc_shape_numel(ss));
    if (!s) return lw_nomem();
    lw_arg_buf(s, 'o', out);
    for (int k = 0; k < 3; k++) lw_arg_buf(s, 'b', lw_opslot(w, n, k));
    lw_arg_long(s, ltc_shape_numel(ss));
    lw_arg_long(s, dim);
    lw_arg_long(s, is->dims[dim]);
    lw_arg_long(s, ss->dims[dim]);
    for (int d = 0; d < r; d++) lw_arg_long(s, ss->dims[d]);
    for (int d = 0; d < r; d++) lw_arg_long(s, is->dims[d]);
    for (int d = 0; d < r; d++) lw_arg_long(s, ist[d]);
    for (int d = 0; d < r; d++) lw_arg_long(s, rst[d]);
    arg_err(w, s, ss->dims[dim]);
    return LTC_OK;
}

/* ---- tril, triu, avg_pool2d ---------------------------------------------------------------------- */

static ltc_status lower_triangle(lw *w, const ltc_node *n, int out) {
    const ltc_shape *xs = opshape(n, 0);
    int64_t total = ltc_shape_numel(xs);
    ocl_sb b = {0};
    ocl_k_triangle(&b, KNAME, xs->dtype, n->op == LTC_OP_TRIU);
    ocl_step *s = lw_family_step(w, &b, n->op, out, (size_t)total);
    if (!s) return lw_nomem();
    lw_arg_buf(s, 'o', out);
    lw_arg_buf(s, 'b', lw_opslot(w, n, 0));
    lw_arg_long(s, total);
    lw_arg_long(s, xs->dims[xs->ndim - 2] ? xs->dims[xs->ndim - 2] : 1);
    lw_arg_long(s, xs->dims[xs->ndim - 1] ? xs->dims[xs->ndim - 1] : 1);
    lw_arg_long(s, n->attrs[0].i);
    return LTC_OK;
}

static ltc_status lower_avg_pool(lw *w, const ltc_node *n, int out) {
    bool bwd = n->op == LTC_OP_AVG_POOL2D_BACKWARD;
    const ltc_shape *is = opshape(n, bwd ? 1 : 0), *ps = bwd ? opshape(n, 0) : &n->shapes[0];
    const ltc_attr *at = n->attrs;
    int b0 = is->ndim - 2;
    ocl_sb b = {0};
    if (bwd) ocl_k_avg_pool2d_bwd(&b, KNAME, is->dtype);
    else ocl_k_avg_pool2d(&b, KNAME, is->dtype);
    ocl_step *s = lw_family_step(w, &b, n->op, out, (size_t)ltc_shape_numel(&n->shapes[0]));
    if (!s) return lw_nomem();
    lw_arg_buf(s, 'o', out);
    lw_arg_buf(s, 'b', lw_opslot(w, n, 0));
    int64_t v[12] = {lw_prod(is, 0, b0), is->dims[b0], is->dims[b0 + 1], ps->dims[b0],
                     ps->dims[b0 + 1], at[0].ints[0], at[0].ints[1], at[1].ints[0],
                     at[1].ints[1], at[2].ints[0], at[2].ints[1], at[4].i != 0};
    for (int i = 0; i < 12; i++) lw_arg_long(s, v[i]);
    return LTC_OK;
}

/* ---- scans and sorting ----------------------------------------------------------------------------- */

static ltc_status lower_cumulative(lw *w, const ltc_node *n, int out) {
    const ltc_shape *xs = opshape(n, 0);
    int64_t outer, len, inner;
    split(xs, n->attrs[0].i, &outer, &len, &inner);
    ocl_sb b = {0};
    ocl_k_cumulative(&b, KNAME, xs->dtype, n->shapes[0].dtype, n->op == LTC_OP_CUMPROD,
                     ocl.info.fp64);
    if (!lw_line_step(w, &b, n, out, 1, (size_t)(outer * inner), outer, len, inner))
        return lw_nomem();
    return LTC_OK;
}

/* sort, argsort, topk, kthvalue, median, median.dim: the rank kernel. */
static ltc_status lower_sort(lw *w, const ltc_node *n, int out) {
    const ltc_shape *xs = opshape(n, 0);
    int op = n->op;
    bool values = op != LTC_OP_ARGSORT, indices = op != LTC_OP_MEDIAN;
    bool median = op == LTC_OP_MEDIAN || op == LTC_OP_MEDIAN_DIM;
    int64_t dim = op == LTC_OP_TOPK || op == LTC_OP_KTHVALUE ? n->attrs[1].i
                  : op == LTC_OP_MEDIAN ? LTC_NONE : n->attrs[0].i;
    bool desc = op == LTC_OP_TOPK ? n->attrs[2].i != 0
                : op == LTC_OP_SORT || op == LTC_OP_ARGSORT ? n->attrs[1].i != 0 : false;
    int64_t outer = 1, len = ltc_shape_numel(xs), inner = 1;
    if (dim != LTC_NONE) split(xs, dim, &outer, &len, &inner);
    int64_t first = op == LTC_OP_KTHVALUE ? n->attrs[0].i - 1 : 0;
    int64_t count = op == LTC_OP_TOPK ? n->attrs[0].i : op == LTC_OP_SORT || op == LTC_OP_ARGSORT ? len : 1;
    ocl_sb b = {0};
    ocl_k_sort(&b, KNAME, xs->dtype, desc, values, indices, median);
    ocl_step *s = lw_line_step(w, &b, n, out, values && indices ? 2 : 1,
                               (size_t)ltc_shape_numel(xs), outer, len, inner);
    if (!s) return lw_nomem();
    lw_arg_long(s, first);
    lw_arg_long(s, count);
    return LTC_OK;
}

static ltc_status lower_cumext(lw *w, const ltc_node *n, int out) {
    const ltc_shape *xs = opshape(n, 0);
    int64_t outer, len, inner;
    split(xs, n->attrs[0].i, &outer, &len, &inner);
    ocl_sb b = {0};
    ocl_k_cumext(&b, KNAME, xs->dtype, n->op == LTC_OP_CUMMIN);
    if (!lw_line_step(w, &b, n, out, 2, (size_t)(outer * inner), outer, len, inner))
        return lw_nomem();
    return LTC_OK;
}

/* flip and repeat: the tile kernel (kernels_more.c). */
static ltc_status lower_tile(lw *w, const ltc_node *n, int out) {
    const ltc_shape *xs = opshape(n, 0), *os = &n->shapes[0];
    int r = os->ndim, lead = os->ndim - xs->ndim;
    int64_t in[LTC_MAX_DIMS], st[LTC_MAX_DIMS] = {0}, xst[LTC_MAX_DIMS], base = 0;
    strides_of(xs, xst);
    for (int d = 0; d < r; d++) {
        in[d] = d < lead ? 1 : xs->dims[d - lead];
        st[d] = d < lead ? 0 : xst[d - lead];
    }
    if (n->op == LTC_OP_FLIP)
        for (int i = 0; i < n->attrs[0].n && r > 0; i++) { /* int[] dims as written */
            int64_t v = n->attrs[0].ints[i];
            int d = (int)(v > 0 ? v - 1 : v + r);
            if (d < 0 || d >= r || st[d] < 0 || xs->dims[d] == 0) continue;
            base += (xs->dims[d] - 1) * st[d];
            st[d] = -st[d];
        }
    ocl_sb b = {0};
    ocl_k_tile(&b, KNAME, os->dtype, r);
    ocl_step *s = lw_family_step(w, &b, n->op, out, (size_t)ltc_shape_numel(os));
    if (!s) return lw_nomem();
    lw_arg_buf(s, 'o', out);
    lw_arg_buf(s, 'b', lw_opslot(w, n, 0));
    lw_arg_long(s, ltc_shape_numel(os));
    lw_arg_long(s, base);
    for (int d = 0; d < r; d++) lw_arg_long(s, os->dims[d] ? os->dims[d] : 1);
    for (int d = 0; d < r; d++) lw_arg_long(s, in[d] ? in[d] : 1);
    for (int d = 0; d < r; d++) lw_arg_long(s, st[d]);
    return LTC_OK;
}

/* one_hot, eye, linspace, randperm, dot, outer. */
static ltc_status lower_creation(lw *w, const ltc_node *n, int out) {
    const ltc_shape *os = &n->shapes[0];
    int64_t total = ltc_shape_numel(os);
    ocl_sb b = {0};
    ocl_step *s;
    switch (n->op) {
    case LTC_OP_DOT:
        return lw_gemm_step(w, n->op, out, lw_opslot(w, n, 0), lw_opslot(w, n, 1), false, false, 1,
                            1, opshape(n, 0)->dims[0], os->dtype);
    case LTC_OP_OUTER:
        return lw_gemm_step(w, n->op, out, lw_opslot(w, n, 0), lw_opslot(w, n, 1), false, false,
                            opshape(n, 0)->dims[0], opshape(n, 1)->dims[0], 1, os->dtype);
    case LTC_OP_ONE_HOT:
        ocl_k_one_hot(&b, KNAME, opshape(n, 0)->dtype);
        if (!(s = lw_family_step(w, &b, n->op, out, (size_t)total))) return lw_nomem();
        lw_arg_buf(s, 'o', out);
        lw_arg_buf(s, 'b', lw_opslot(w, n, 0));
        lw_arg_long(s, total);
        lw_arg_long(s, n->attrs[0].i > 0 ? n->attrs[0].i : 1);
        arg_err(w, s, n->attrs[0].i);
        return LTC_OK;
    case LTC_OP_EYE:
        ocl_k_eye(&b, KNAME, os->dtype);
        if (!(s = lw_family_step(w, &b, n->op, out, (size_t)total))) return lw_nomem();
        lw_arg_buf(s, 'o', out);
        lw_arg_long(s, total);
        lw_arg_long(s, os->dims[1] ? os->dims[1] : 1);
        return LTC_OK;
    case LTC_OP_LINSPACE:
        ocl_k_linspace(&b, KNAME, os->dtype);
        if (!(s = lw_family_step(w, &b, n->op, out, (size_t)total))) return lw_nomem();
        lw_arg_buf(s, 'o', out);
        lw_arg_long(s, total);
        s->args[s->n_args++] = (ocl_arg){.kind = 'd', .f = n->attrs[0].f};
        s->args[s->n_args++] = (ocl_arg){.kind = 'd', .f = n->attrs[1].f};
        return LTC_OK;
    default: /* RANDPERM */
        ocl_k_randperm(&b, KNAME, os->dtype);
        if (!(s = lw_family_step(w, &b, n->op, out, (size_t)total))) return lw_nomem();
        w->rng = true;
        lw_arg_buf(s, 'o', out);
        lw_arg_buf(s, 'b', lw_opslot(w, n, n->n_operands - 1));
        lw_arg_long(s, total);
        return LTC_OK;
    }
}

/* var, std, prod, logsumexp, all, any over one dim (or everything). */
static ltc_status lower_reduce_more(lw *w, const ltc_node *n, int out) {
    const ltc_shape *xs = opshape(n, 0);
    int64_t dim = n->attrs[0].i, outer = 1, len = ltc_shape_numel(xs), inner = 1;
    if (dim != LTC_NONE && xs->ndim > 0) split(xs, dim, &outer, &len, &inner);
    char kind;
    switch (n->op) {
    case LTC_OP_VAR: kind = 'v'; break;
    case LTC_OP_STD: kind = 's'; break;
    case LTC_OP_PROD: kind = 'p'; break;
    case LTC_OP_LOGSUMEXP: kind = 'l'; break;
    case LTC_OP_ALL: kind = 'A'; break;
    default: kind = 'Y'; break;
    }
    ocl_sb b = {0};
    ocl_k_reduce_more(&b, KNAME, kind, xs->dtype, n->shapes[0].dtype, ocl.info.fp64);
    ocl_step *s = lw_line_step(w, &b, n, out, 1, (size_t)(outer * inner), outer, len, inner);
    if (!s) return lw_nomem();
    lw_arg_long(s, (kind == 'v' || kind == 's') && n->attrs[1].i ? 1 : 0);
    return LTC_OK;
}

/* mse_loss: the squared differences (the output itself for reduction none, else a
 * float64 scratch where the device has it), then a mean or sum kernel. */
static ltc_status lower_mse(lw *w, const ltc_node *n, int out) {
    const ltc_shape *xs = opshape(n, 0), *ys = opshape(n, 1);
    int red = (int)n->attrs[0].i, r = xs->ndim > ys->ndim ? xs->ndim : ys->ndim;
    ltc_shape bs = {.dtype = ocl.info.fp64 ? LTC_F64 : xs->dtype, .ndim = r};
    int64_t sx[LTC_MAX_DIMS], sy[LTC_MAX_DIMS], xst[LTC_MAX_DIMS], yst[LTC_MAX_DIMS];
    strides_of(xs, xst);
    strides_of(ys, yst);
    for (int d = 0; d < r; d++) {
        int dx = d - (r - xs->ndim), dy = d - (r - ys->ndim);
        int64_t nx = dx >= 0 ? xs->dims[dx] : 1, ny = dy >= 0 ? ys->dims[dy] : 1;
        bs.dims[d] = nx == 1 ? ny : nx;
        sx[d] = nx == 1 ? 0 : xst[dx];
        sy[d] = ny == 1 ? 0 : yst[dy];
    }
    int64_t total = ltc_shape_numel(&bs);
    int tmp = red == 0 ? out : lw_new_slot(w, &bs);
    if (tmp < 0) return lw_nomem();
    ocl_sb b = {0};
    ocl_k_sqdiff(&b, KNAME, xs->dtype, red == 0 ? xs->dtype : bs.dtype, r, ocl.info.fp64);
    ocl_step *s = lw_family_step(w, &b, n->op, tmp, (size_t)total);
    if (!s) return lw_nomem();
    lw_arg_buf(s, 'o', tmp);
    lw_arg_buf(s, 'b', lw_opslot(w, n, 0));
    lw_arg_buf(s, 'b', lw_opslot(w, n, 1));
    lw_arg_long(s, total);
    for (int d = 0; d < r; d++) lw_arg_long(s, bs.dims[d] ? bs.dims[d] : 1);
    for (int d = 0; d < r; d++) lw_arg_long(s, sx[d]);
    for (int d = 0; d < r; d++) lw_arg_long(s, sy[d]);
    if (red == 0) return LTC_OK;
    ocl_sb m = {0};
    ocl_k_reduce(&m, KNAME, red == 1 ? 'm' : 's', bs.dtype, xs->dtype, ocl.info.fp64);
    if (!(s = lw_family_step(w, &m, n->op, out, 1))) return lw_nomem();
    lw_arg_buf(s, 'o', out);
    lw_arg_buf(s, 'b', tmp);
    lw_arg_long(s, 1);
    lw_arg_long(s, total);
    lw_arg_long(s, 1);
    return LTC_OK;
}

/* ---- which nodes ------------------------------------------------------------------------------------ */

bool ocl_more_lowers(const ltc_node *n) {
    const ltc_shape *os = &n->shapes[0], *s0 = n->n_operands ? opshape(n, 0) : NULL;
    switch (n->op) {
    case LTC_OP_LAYER_NORM:
        return n->n_attrs >= 2 && n->n_operands == 3 && is_float(s0->dtype) &&
               opshape(n, 1)->dtype == s0->dtype && opshape(n, 2)->dtype == s0->dtype &&
               ltc_shape_numel(opshape(n, 2)) == ltc_shape_numel(opshape(n, 1));
    case LTC_OP_LINEAR_BACKWARD: {
        const ltc_shape *xs = opshape(n, 1), *ws = opshape(n, 2);
        return n->n_operands == 3 && n->n_outputs == 3 && is_float(ws->dtype) &&
               s0->dtype == ws->dtype && xs->dtype == ws->dtype && ws->ndim == 2 &&
               ltc_shape_numel(s0) > 0 && ltc_shape_numel(xs) > 0 && ws->dims[1] > 0;
    }
    case LTC_OP_LAYER_NORM_BACKWARD: {
        const ltc_shape *xs = opshape(n, 1), *ws = opshape(n, 2);
        return n->n_attrs >= 2 && n->n_operands == 3 && n->n_outputs == 3 &&
               is_float(xs->dtype) && s0->dtype == xs->dtype && ws->dtype == xs->dtype &&
               ltc_shape_numel(s0) == ltc_shape_numel(xs);
    }
    case LTC_OP_BATCH_NORM:
        if (n->n_attrs < 2 || n->n_operands != 5 || !is_float(s0->dtype) || s0->ndim < 2)
            return false;
        for (int k = 1; k < 5; k++)
            if (opshape(n, k)->dtype != s0->dtype || ltc_shape_numel(opshape(n, k)) != s0->dims[1])
                return false;
        return true;
    case LTC_OP_NLL_LOSS:
        return n->n_attrs >= 1 && is_float(s0->dtype) && s0->ndim >= 1 && s0->ndim <= 2 &&
               is_index(opshape(n, 1)->dtype);
    case LTC_OP_NLL_LOSS_BACKWARD: {
        const ltc_shape *xs = opshape(n, 1);
        return n->n_attrs >= 1 && is_float(xs->dtype) && s0->dtype == xs->dtype &&
               xs->ndim >= 1 && xs->ndim <= 2 && is_index(opshape(n, 2)->dtype);
    }
    case LTC_OP_GATHER:
        return n->n_attrs >= 1 && s0->ndim >= 1 && dtype_ok(s0->dtype) &&
               is_index(opshape(n, 1)->dtype) && opshape(n, 1)->ndim == s0->ndim;
    case LTC_OP_SCATTER:
    case LTC_OP_SCATTER_ADD: {
        const ltc_shape *is = opshape(n, 1), *rs = opshape(n, 2);
        if (n->n_attrs < 1 || s0->ndim == 0 || !dtype_ok(s0->dtype) || !dtype_ok(rs->dtype) ||
            !is_index(is->dtype) || is->ndim != s0->ndim || os->dtype != s0->dtype)
            return false;
        if (rs->ndim == 0 ? n->op == LTC_OP_SCATTER_ADD
                          : rs->ndim != s0->ndim || rs->dtype != s0->dtype)
            return false;
        /* an empty self checks no index on the device: the host raises as the CPU does */
        return ltc_shape_numel(s0) > 0 || ltc_shape_numel(is) == 0;
    }
    case LTC_OP_TRIL:
    case LTC_OP_TRIU: return n->n_attrs >= 1 && s0->ndim >= 2 && dtype_ok(s0->dtype);
    case LTC_OP_AVG_POOL2D:
    case LTC_OP_AVG_POOL2D_BACKWARD: {
        const ltc_shape *is = opshape(n, n->op == LTC_OP_AVG_POOL2D ? 0 : 1);
        return n->n_attrs >= 5 && is_float(is->dtype) && is->ndim >= 2 &&
               (n->op == LTC_OP_AVG_POOL2D || s0->dtype == is->dtype);
    }
    case LTC_OP_CUMSUM:
    case LTC_OP_CUMPROD: return n->n_attrs >= 1 && dtype_ok(s0->dtype) && dtype_ok(os->dtype);
    case LTC_OP_SORT:
    case LTC_OP_ARGSORT:
    case LTC_OP_TOPK:
    case LTC_OP_KTHVALUE:
    case LTC_OP_MEDIAN_DIM: {
        int at = n->op == LTC_OP_TOPK || n->op == LTC_OP_KTHVALUE ? 1 : 0;
        if (n->n_attrs < at + 1 || !dtype_ok(s0->dtype)) return false;
        int64_t dim = n->attrs[at].i, len = s0->ndim ? s0->dims[dim] : 1;
        return len <= SORT_MAX_LINE;
    }
    case LTC_OP_MEDIAN: return dtype_ok(s0->dtype) && ltc_shape_numel(s0) <= SORT_MAX_LINE;
    case LTC_OP_CUMMAX:
    case LTC_OP_CUMMIN: return n->n_attrs >= 1 && dtype_ok(s0->dtype) && s0->dtype != LTC_BOOL;
    case LTC_OP_FLIP:
    case LTC_OP_REPEAT: return n->n_attrs >= 1 && dtype_ok(os->dtype) && os->ndim >= s0->ndim;
    case LTC_OP_ONE_HOT: return n->n_attrs >= 1 && is_index(s0->dtype) && os->dtype == LTC_I64;
    case LTC_OP_EYE: return os->ndim == 2 && dtype_ok(os->dtype);
    case LTC_OP_LINSPACE: return ocl.info.fp64 && n->n_attrs >= 3;
    case LTC_OP_RANDPERM:
        return ocl.info.fp64 && os->ndim == 1 && os->dims[0] <= SORT_MAX_LINE && os->dtype != LTC_BOOL;
    case LTC_OP_MSE_LOSS:
        return n->n_attrs >= 1 && is_float(os->dtype) && s0->dtype == os->dtype &&
               opshape(n, 1)->dtype == os->dtype;
    case LTC_OP_DOT:
    case LTC_OP_OUTER:
        return (os->dtype == LTC_F32 || (os->dtype == LTC_F64 && ocl.info.fp64)) &&
               s0->dtype == os->dtype && opshape(n, 1)->dtype == os->dtype;
    case LTC_OP_VAR:
    case LTC_OP_STD:
    case LTC_OP_PROD:
    case LTC_OP_LOGSUMEXP:
    case LTC_OP_ALL:
    case LTC_OP_ANY:
        return n->n_attrs >= 1 && n->n_outputs == 1 && dtype_ok(s0->dtype) && dtype_ok(os->dtype);
    default: return false;
    }
}

ltc_status ocl_lower_more(lw *w, const ltc_node *n, int out, bool *done) {
    *done = ocl_more_lowers(n);
    if (!*done) return LTC_OK;
    switch (n->op) {
    case LTC_OP_LAYER_NORM: return lower_layer_norm(w, n, out);
    case LTC_OP_LAYER_NORM_BACKWARD: return lower_layer_norm_backward(w, n, out);
    case LTC_OP_LINEAR_BACKWARD: return lower_linear_backward(w, n, out);
    case LTC_OP_BATCH_NORM: return lower_batch_norm(w, n, out);
    case LTC_OP_NLL_LOSS:
    case LTC_OP_NLL_LOSS_BACKWARD: return lower_nll(w, n, out);
    case LTC_OP_GATHER: return lower_gather(w, n, out);
    case LTC_OP_SCATTER:
    case LTC_OP_SCATTER_ADD: return lower_scatter(w, n, out);
    case LTC_OP_TRIL:
    case LTC_OP_TRIU: return lower_triangle(w, n, out);
    case LTC_OP_AVG_POOL2D:
    case LTC_OP_AVG_POOL2D_BACKWARD: return lower_avg_pool(w, n, out);
    case LTC_OP_CUMSUM:
    case LTC_OP_CUMPROD: return lower_cumulative(w, n, out);
    case LTC_OP_SORT:
    case LTC_OP_ARGSORT:
    case LTC_OP_TOPK:
    case LTC_OP_KTHVALUE:
    case LTC_OP_MEDIAN:
    case LTC_OP_MEDIAN_DIM: return lower_sort(w, n, out);
    case LTC_OP_CUMMAX:
    case LTC_OP_CUMMIN: return lower_cumext(w, n, out);
    case LTC_OP_FLIP:
    case LTC_OP_REPEAT: return lower_tile(w, n, out);
    case LTC_OP_ONE_HOT:
    case LTC_OP_EYE:
    case LTC_OP_LINSPACE:
    case LTC_OP_RANDPERM:
    case LTC_OP_DOT:
    case LTC_OP_OUTER: return lower_creation(w, n, out);
    case LTC_OP_MSE_LOSS: return lower_mse(w, n, out);
    default: return lower_reduce_more(w, n, out);
    }
}
