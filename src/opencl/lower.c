/*
 * lower.c - lowering one graph (post order) into an OpenCL computation: value slots, steps
 * and the program's source.
 *
 *  - Elementwise ops (those with an `expr` in ops.yaml, casts and fills) are fused by
 *    lower_ew.c: plan_fusion below marks a node used once, by an elementwise node of the same
 *    size, as inlined into its consumer's expression, so a chain becomes one kernel.
 *  - Views of contiguous data (view, reshape, flatten, squeeze, unsqueeze, clone, a cast
 *    to the same dtype) alias their operand's buffer; permute/transpose/t/expand copy
 *    through a strided kernel, and a 2-d transpose feeding a matrix product is folded into
 *    CLBlast's transpose flag instead.
 *  - Matrix products (mm, matmul, bmm, linear, addmm) are CLBlast GEMM steps (batched for
 *    bmm); reductions, softmax, cross_entropy and index ops have kernels of kernels.c.
 *  - Every other node is refused by ocl_node_lowered (the backend's `lowers` slot): the
 *    core's eager fallback (src/core/fallback.c) cuts the graph there and runs those nodes
 *    on the CPU backend, moving values through the transfer slots, counted as
 *    EagerFallback::<op>.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower.h"



ltc_status lw_nomem(void) { return ltc_errorf(LTC_ERR_NOMEM, "opencl: out of memory lowering"); }

int lw_new_slot(lw *w, const ltc_shape *s) {
    ocl_comp *c = w->c;
    if (c->n_slots == w->cap_slots) {
        int cap = w->cap_slots ? w->cap_slots * 2 : 64;
        ocl_slot *p = realloc(c->slots, sizeof *p * (size_t)cap);
        if (!p) return -1;
        c->slots = p;
        w->cap_slots = cap;
    }
    c->slots[c->n_slots] = (ocl_slot){.shape = *s, .param = -1};
    return c->n_slots++;
}

ocl_step *lw_new_step(lw *w, ocl_step_kind kind, int op, int out) {
    ocl_comp *c = w->c;
    if (c->n_steps == w->cap_steps) {
        int cap = w->cap_steps ? w->cap_steps * 2 : 32;
        ocl_step *p = realloc(c->steps, sizeof *p * (size_t)cap);
        if (!p) return NULL;
        c->steps = p;
        w->cap_steps = cap;
    }
    ocl_step *s = &c->steps[c->n_steps++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->op = op;
    s->out = out;
    s->n_out = 1;
    s->bias = -1;
    s->node = w->cur_node;
    return s;
}

/* The index of kernel `body` (with KNAME as its name) in the program, added if new. */
int lw_add_kernel(lw *w, ocl_sb *body) {
    if (body->oom || !body->s) return -1;
    ocl_comp *c = w->c;
    for (int i = 0; i < c->n_kernels; i++)
        if (!strcmp(w->bodies[i], body->s)) {
            free(body->s);
            return i;
        }
    if (c->n_kernels == w->cap_kernels) {
        int cap = w->cap_kernels ? w->cap_kernels * 2 : 16;
        char **p = realloc(w->bodies, sizeof *p * (size_t)cap);
        if (!p) return -1;
        w->bodies = p;
        w->cap_kernels = cap;
    }
    w->bodies[c->n_kernels] = body->s;
    return c->n_kernels++;
}

void lw_arg_buf(ocl_step *s, char kind, int slot) {
    s->args[s->n_args++] = (ocl_arg){.kind = kind, .slot = slot};
}
void lw_arg_long(ocl_step *s, int64_t v) {
    s->args[s->n_args++] = (ocl_arg){.kind = 'l', .l = v};
}

int64_t lw_prod(const ltc_shape *s, int from, int to) {
    int64_t p = 1;
    for (int d = from; d < to; d++) p *= s->dims[d];
    return p;
}

ltc_status lw_reduce_rows(lw *w, int op, int out, int tmp, int target, ltc_dtype it,
                          int64_t rows, int red, ltc_dtype dt) {
    if (red == 0) return LTC_OK;
    ocl_sb r = {0};
    if (red == 1)
        ocl_k_label_mean(&r, KNAME, dt, it, ocl.info.fp64);
    else
        ocl_k_reduce(&r, KNAME, 's', dt, dt, ocl.info.fp64);
    ocl_step *s = lw_family_step(w, &r, op, out, 1);
    if (!s) return lw_nomem();
    lw_arg_buf(s, 'o', out);
    lw_arg_buf(s, 'b', tmp);
    if (red == 1) {
        lw_arg_buf(s, 'b', target);
        lw_arg_long(s, rows);
        return LTC_OK;
    }
    lw_arg_long(s, 1);
    lw_arg_long(s, rows);
    lw_arg_long(s, 1);
    return LTC_OK;
}

int lw_label_count(lw *w, int op, int target, ltc_dtype it, int64_t rows) {
    ltc_shape ks;
    int64_t one = 1;
    ltc_shape_make(&ks, LTC_I64, 1, &one);
    int kept = lw_new_slot(w, &ks);
    if (kept < 0) return -1;
    ocl_sb b = {0};
    ocl_k_label_count(&b, KNAME, it);
    ocl_step *s = lw_family_step(w, &b, op, kept, 1);
    if (!s) return -1;
    lw_arg_buf(s, 'o', kept);
    lw_arg_buf(s, 'b', target);
    lw_arg_long(s, rows);
    return kept;
}

/* ---- the other families -------------------------------------------------------------------- */

/* A strided copy from slot in (shape is) to slot out: out coordinate d reads input dim
 * src_dim[d] (-1: broadcast, stride 0). */
static ltc_status lower_strided(lw *w, int op, int in, int out, const int *src_dim) {
    const ltc_shape *os = &w->c->slots[out].shape, *is = &w->c->slots[in].shape;
    int r = os->ndim;
    ocl_sb b = {0};
    ocl_sb_printf(&b, "%s", ""); /* keep b.s non-NULL */
    ocl_k_strided(&b, KNAME, os->dtype, r);
    int k = lw_add_kernel(w, &b);
    ocl_step *s = k < 0 ? NULL : lw_new_step(w, OCL_STEP_KERNEL, op, out);
    if (!s) return lw_nomem();
    s->kernel = k;
    s->global = (size_t)ltc_shape_numel(os);
    lw_arg_buf(s, 'o', out);
    lw_arg_buf(s, 'b', in);
    lw_arg_long(s, (int64_t)s->global);
    int64_t istr[LTC_MAX_DIMS], st = 1;
    for (int d = is->ndim - 1; d >= 0; d--) {
        istr[d] = st;
        st *= is->dims[d];
    }
    for (int d = 0; d < r; d++) lw_arg_long(s, os->dims[d]);
    for (int d = 0; d < r; d++)
        lw_arg_long(s, src_dim[d] < 0 || is->dims[src_dim[d]] == 1 ? 0 : istr[src_dim[d]]);
    return LTC_OK;
}

/* Fills slot out with slot in broadcast (PyTorch rules: trailing dims aligned). */
static ltc_status lower_broadcast(lw *w, int op, int in, int out) {
    const ltc_shape *os = &w->c->slots[out].shape, *is = &w->c->slots[in].shape;
    int map[LTC_MAX_DIMS];
    for (int d = 0; d < os->ndim; d++) {
        int id = d - (os->ndim - is->ndim);
        map[d] = id < 0 ? -1 : id;
    }
    return lower_strided(w, op, in, out, map);
}

static bool is_t2d(const ltc_node *n) {
    if (n->op == LTC_OP_T) return n->shapes[0].ndim == 2;
    if (n->op == LTC_OP_TRANSPOSE) return n->shapes[0].ndim == 2;
    return false;
}

/* Which operands of node n a GEMM reads with a folded transpose (bit k: operand k). */
static unsigned gemm_peel_mask(const ltc_node *n) {
    if (!ltc_dtype_is_float(n->shapes[0].dtype) || n->n_outputs != 1) return 0;
    switch (n->op) {
    case LTC_OP_MM: return 3;
    case LTC_OP_MATMUL:
        return n->operands[0].node->shapes[n->operands[0].index].ndim == 2 &&
                       n->operands[1].node->shapes[n->operands[1].index].ndim == 2
                   ? 3 : 0;
    case LTC_OP_LINEAR:
    case LTC_OP_LINEAR_NOBIAS: return 2;
    case LTC_OP_ADDMM: return 6;
    default: return 0;
    }
}

/* Operand k of n as a GEMM input: its slot, with a 2-d transpose folded into *trans. */
static int gemm_operand(lw *w, const ltc_node *n, int k, bool *trans) {
    const ltc_node *o = n->operands[k].node;
    if (((gemm_peel_mask(n) >> k) & 1u) && n->operands[k].index == 0 && is_t2d(o) &&
        w->skip[o->index]) {
        *trans = !*trans;
        return w->slot_of[o->operands[0].node->index] + o->operands[0].index;
    }
    return w->slot_of[o->index] + n->operands[k].index;
}

static ltc_status lower_gemm(lw *w, const ltc_node *n, int out) {
    bool ta = false, tb = false;
    int a, b, fill = -1;
    int64_t m, nn, k, batch = 1;
    double alpha = 1, beta = 0;
    const ltc_shape *os = &n->shapes[0];
    const ltc_shape *as = &n->operands[0].node->shapes[n->operands[0].index];
    const ltc_shape *bs = &n->operands[1].node->shapes[n->operands[1].index];
    switch (n->op) {
    case LTC_OP_LINEAR:
    case LTC_OP_LINEAR_NOBIAS:
        tb = true;
        a = gemm_operand(w, n, 0, &ta);
        b = gemm_operand(w, n, 1, &tb);
        k = bs->dims[1];
        nn = bs->dims[0];
        m = lw_prod(as, 0, as->ndim - 1); /* the rows of x, also when k is 0 */
        if (n->op == LTC_OP_LINEAR) fill = w->slot_of[n->operands[2].node->index] + n->operands[2].index;
        break;
    case LTC_OP_ADDMM: {
        a = gemm_operand(w, n, 1, &ta);
        b = gemm_operand(w, n, 2, &tb);
        const ltc_shape *m1 = &n->operands[1].node->shapes[n->operands[1].index];
        m = m1->dims[0];
        k = m1->dims[1];
        nn = os->dims[1];
        fill = w->slot_of[n->operands[0].node->index] + n->operands[0].index;
        beta = n->n_attrs > 0 ? n->attrs[0].f : 1;
        alpha = n->n_attrs > 1 ? n->attrs[1].f : 1;
        break;
    }
    default: /* mm, matmul, bmm */
        a = gemm_operand(w, n, 0, &ta);
        b = gemm_operand(w, n, 1, &tb);
        k = as->dims[as->ndim - 1];
        nn = bs->dims[bs->ndim - 1];
        if (bs->ndim == 2) {
            m = lw_prod(as, 0, as->ndim - 1);
        } else {
            m = as->dims[as->ndim - 2];
            batch = lw_prod(os, 0, os->ndim - 2);
        }
        break;
    }
    if (fill >= 0) {
        ltc_status st = lower_broadcast(w, n->op, fill, out);
        if (st) return st;
        if (n->op != LTC_OP_ADDMM) beta = 1;
    }
    ocl_step *s = lw_new_step(w, OCL_STEP_GEMM, n->op, out);
    if (!s) return lw_nomem();
    s->a = a;
    s->bslot = b;
    s->bias = fill >= 0 ? fill : -1;
    s->ta = ta;
    s->tb = tb;
    s->m = m;
    s->n = nn;
    s->k = k;
    s->batch = batch;
    s->dtype = os->dtype;
    s->args[0] = (ocl_arg){.kind = 'd', .f = alpha};
    s->args[1] = (ocl_arg){.kind = 'd', .f = beta};
    return LTC_OK;
}

static bool gemm_lowerable(const ltc_node *n) {
    if (n->n_outputs != 1) return false;
    ltc_dtype dt = n->shapes[0].dtype;
    if (dt != LTC_F32 && dt != LTC_F64) return false;
    for (int i = 0; i < n->n_operands; i++)
        if (n->operands[i].node->shapes[n->operands[i].index].dtype != dt) return false;
    const ltc_shape *as = n->n_operands > 1 ? &n->operands[0].node->shapes[n->operands[0].index] : NULL;
    const ltc_shape *bs = n->n_operands > 1 ? &n->operands[1].node->shapes[n->operands[1].index] : NULL;
    switch (n->op) {
    case LTC_OP_MM: return true;
    case LTC_OP_BMM: return true;
    case LTC_OP_MATMUL:
        if (as->ndim >= 2 && bs->ndim == 2) return true;
        if (as->ndim >= 3 && bs->ndim == as->ndim) { /* batches of one size (no broadcast) */
            for (int d = 0; d < as->ndim - 2; d++)
                if (as->dims[d] != bs->dims[d]) return false;
            return true;
        }
        return false;
    case LTC_OP_LINEAR:
    case LTC_OP_LINEAR_NOBIAS: return as->ndim >= 1 && bs->ndim == 2;
    case LTC_OP_ADDMM: return n->n_attrs >= 2;
    default: return false;
    }
}

/* A kernel step of a hand-written family; `body` already holds the kernel source. */
ocl_step *lw_family_step(lw *w, ocl_sb *b, int op, int out, size_t global) {
    int k = lw_add_kernel(w, b);
    ocl_step *s = k < 0 ? NULL : lw_new_step(w, OCL_STEP_KERNEL, op, out);
    if (!s) return NULL;
    s->kernel = k;
    s->global = global;
    return s;
}

ocl_step *lw_line_step(lw *w, ocl_sb *b, const ltc_node *n, int out, int n_out, size_t global,
                       int64_t outer, int64_t len, int64_t inner) {
    ocl_step *s = lw_family_step(w, b, n->op, out, global);
    if (!s) return NULL;
    lw_arg_buf(s, 'o', out);
    if (n_out == 2) {
        lw_arg_buf(s, 'o', out + 1);
        s->n_out = 2;
    }
    lw_arg_buf(s, 'b', lw_opslot(w, n, 0));
    lw_arg_long(s, outer);
    lw_arg_long(s, len);
    lw_arg_long(s, inner);
    return s;
}

int lw_opslot(lw *w, const ltc_node *n, int k) {
    return w->slot_of[n->operands[k].node->index] + n->operands[k].index;
}

static ltc_status lower_reduce(lw *w, const ltc_node *n, int out, char kind, int64_t dim) {
    const ltc_shape *is = &n->operands[0].node->shapes[n->operands[0].index];
    int64_t outer = 1, len = ltc_shape_numel(is), inner = 1;
    if (dim != LTC_NONE && is->ndim > 0) {
        outer = lw_prod(is, 0, (int)dim);
        len = is->dims[dim];
        inner = lw_prod(is, (int)dim + 1, is->ndim);
    }
    ocl_sb b = {0};
    ocl_k_reduce(&b, KNAME, kind, is->dtype, n->shapes[0].dtype, ocl.info.fp64);
    int n_out = kind == 'D' || kind == 'E' ? 2 : 1;
    if (!lw_line_step(w, &b, n, out, n_out, (size_t)(outer * inner), outer, len, inner))
        return lw_nomem();
    return LTC_OK;
}

static ltc_status lower_family(lw *w, const ltc_node *n, int out, bool *done) {
    *done = true;
    ocl_sb b = {0};
    ocl_step *s;
    const ltc_shape *s0 = n->n_operands ? &n->operands[0].node->shapes[n->operands[0].index] : NULL;
    int64_t dim = n->n_attrs > 0 && n->attrs[0].kind == LTC_ATTR_INT ? n->attrs[0].i : LTC_NONE;
    switch (n->op) {
    case LTC_OP_SUM: return lower_reduce(w, n, out, 's', dim);
    case LTC_OP_MEAN:
        if (!ltc_dtype_is_float(n->shapes[0].dtype)) break;
        return lower_reduce(w, n, out, 'm', dim);
    case LTC_OP_MAX: return lower_reduce(w, n, out, 'M', LTC_NONE);
    case LTC_OP_MIN: return lower_reduce(w, n, out, 'N', LTC_NONE);
    case LTC_OP_ARGMAX: return lower_reduce(w, n, out, 'a', dim);
    case LTC_OP_ARGMIN: return lower_reduce(w, n, out, 'i', dim);
    case LTC_OP_MAX_DIM: return lower_reduce(w, n, out, 'D', dim);
    case LTC_OP_MIN_DIM: return lower_reduce(w, n, out, 'E', dim);
    case LTC_OP_SOFTMAX:
    case LTC_OP_LOG_SOFTMAX: {
        if (!ltc_dtype_is_float(s0->dtype) || s0->ndim == 0) break;
        ocl_k_softmax(&b, KNAME, s0->dtype, n->op == LTC_OP_LOG_SOFTMAX);
        int64_t outer = lw_prod(s0, 0, (int)dim), inner = lw_prod(s0, (int)dim + 1, s0->ndim);
        if (!(s = lw_line_step(w, &b, n, out, 1, (size_t)(outer * inner), outer, s0->dims[dim],
                               inner)))
            return lw_nomem();
        return LTC_OK;
    }
    case LTC_OP_CROSS_ENTROPY: {
        const ltc_shape *ts = &n->operands[1].node->shapes[n->operands[1].index];
        if (!ltc_dtype_is_float(s0->dtype) || s0->ndim < 1 || s0->ndim > 2) break;
        int64_t rows = s0->ndim == 2 ? s0->dims[0] : 1, c = s0->dims[s0->ndim - 1];
        int red = (int)n->attrs[0].i;
        ltc_shape rs;
        int64_t rd[1] = {rows};
        ltc_shape_make(&rs, s0->dtype, 1, rd);
        int tmp = red == 0 ? out : lw_new_slot(w, &rs);
        if (tmp < 0) return lw_nomem();
        ocl_k_ce_rows(&b, KNAME, s0->dtype, ts->dtype);
        if (!(s = lw_family_step(w, &b, n->op, tmp, (size_t)rows))) return lw_nomem();
        lw_arg_buf(s, 'o', tmp);
        lw_arg_buf(s, 'b', lw_opslot(w, n, 0));
        lw_arg_buf(s, 'b', lw_opslot(w, n, 1));
        lw_arg_long(s, rows);
        lw_arg_long(s, c);
        lw_arg_buf(s, 'e', -1);
        lw_arg_long(s, w->c->n_steps - 1);
        s->checks = true;
        s->k = c;
        return lw_reduce_rows(w, n->op, out, tmp, lw_opslot(w, n, 1), ts->dtype, rows, red,
                              s0->dtype);
    }
    case LTC_OP_CROSS_ENTROPY_BACKWARD: {
        const ltc_shape *xs = &n->operands[1].node->shapes[n->operands[1].index];
        const ltc_shape *ts = &n->operands[2].node->shapes[n->operands[2].index];
        if (!ltc_dtype_is_float(xs->dtype) || xs->ndim < 1 || xs->ndim > 2 ||
            s0->dtype != xs->dtype)
            break;
        int64_t rows = xs->ndim == 2 ? xs->dims[0] : 1, c = xs->dims[xs->ndim - 1];
        int red = (int)n->attrs[0].i;
        int kept = red == 1 ? lw_label_count(w, n->op, lw_opslot(w, n, 2), ts->dtype, rows) : 0;
        if (kept < 0) return lw_nomem();
        ocl_k_ce_backward(&b, KNAME, xs->dtype, ts->dtype, red == 0 && s0->ndim > 0, red == 1);
        if (!(s = lw_family_step(w, &b, n->op, out, (size_t)rows))) return lw_nomem();
        lw_arg_buf(s, 'o', out);
        lw_arg_buf(s, 'b', lw_opslot(w, n, 0));
        lw_arg_buf(s, 'b', lw_opslot(w, n, 1));
        lw_arg_buf(s, 'b', lw_opslot(w, n, 2));
        lw_arg_long(s, rows);
        lw_arg_long(s, c);
        if (red == 1) lw_arg_buf(s, 'b', kept);
        lw_arg_buf(s, 'e', -1);
        lw_arg_long(s, w->c->n_steps - 1);
        s->checks = true;
        s->k = c;
        return LTC_OK;
    }
    case LTC_OP_INDEX_SELECT:
    case LTC_OP_EMBEDDING: {
        int src = n->op == LTC_OP_EMBEDDING ? 0 : 0, idx = 1;
        const ltc_shape *is = &n->operands[idx].node->shapes[n->operands[idx].index];
        if (is->dtype != LTC_I64 && is->dtype != LTC_I32) break;
        int64_t d = n->op == LTC_OP_EMBEDDING ? 0 : dim;
        if (s0->ndim == 0) break;
        int64_t outer = lw_prod(s0, 0, (int)d), len = s0->dims[d], inner = lw_prod(s0, (int)d + 1, s0->ndim);
        int64_t m = ltc_shape_numel(is);
        ocl_k_index_select(&b, KNAME, s0->dtype, is->dtype);
        if (!(s = lw_family_step(w, &b, n->op, out, (size_t)(outer * m * inner)))) return lw_nomem();
        lw_arg_buf(s, 'o', out);
        lw_arg_buf(s, 'b', lw_opslot(w, n, src));
        lw_arg_buf(s, 'b', lw_opslot(w, n, idx));
        lw_arg_long(s, outer);
        lw_arg_long(s, len);
        lw_arg_long(s, m);
        lw_arg_long(s, inner);
        lw_arg_buf(s, 'e', -1);
        lw_arg_long(s, w->c->n_steps - 1);
        s->checks = true;
        s->k = len;
        return LTC_OK;
    }
    case LTC_OP_PERMUTE:
    case LTC_OP_TRANSPOSE:
    case LTC_OP_T: {
        int r = n->shapes[0].ndim, map[LTC_MAX_DIMS];
        for (int d = 0; d < r; d++) map[d] = d;
        if (n->op == LTC_OP_PERMUTE) {
            for (int d = 0; d < r; d++) { /* int[] dims are stored as written: 1-based or negative */
                int64_t v = n->attrs[0].ints[d];
                map[d] = (int)(v > 0 ? v - 1 : v + r);
                if (map[d] < 0 || map[d] >= r) map[d] = d;
            }
        } else if (n->op == LTC_OP_TRANSPOSE) {
            int d0 = (int)n->attrs[0].i, d1 = (int)n->attrs[1].i;
            map[d0] = d1;
            map[d1] = d0;
        } else if (r == 2) {
            map[0] = 1;
            map[1] = 0;
        }
        return lower_strided(w, n->op, lw_opslot(w, n, 0), out, map);
    }
    case LTC_OP_EXPAND:
    case LTC_OP_BROADCAST_TO: return lower_broadcast(w, n->op, lw_opslot(w, n, 0), out);
    default: break;
    }
    *done = false;
    return LTC_OK;
}

static bool is_alias(const ltc_node *n) {
    switch (n->op) {
    case LTC_OP_VIEW:
    case LTC_OP_RESHAPE:
    case LTC_OP_FLATTEN:
    case LTC_OP_SQUEEZE:
    case LTC_OP_SQUEEZE_DIM:
    case LTC_OP_UNSQUEEZE:
    case LTC_OP_CLONE:
    case LTC_OP_CONTIGUOUS: return n->n_operands == 1;
    case LTC_OP_TO:
        return n->n_operands == 1 &&
               n->operands[0].node->shapes[n->operands[0].index].dtype == n->shapes[0].dtype;
    default: return false;
    }
}

/* Whether lower_family lowers node n (its breaks, as conditions). */
static bool family_ok(const ltc_node *n) {
    const ltc_shape *s0 = n->n_operands ? &n->operands[0].node->shapes[n->operands[0].index] : NULL;
    switch (n->op) {
    case LTC_OP_SUM: case LTC_OP_MAX: case LTC_OP_MIN: case LTC_OP_ARGMAX: case LTC_OP_ARGMIN:
    case LTC_OP_MAX_DIM: case LTC_OP_MIN_DIM: case LTC_OP_PERMUTE: case LTC_OP_TRANSPOSE:
    case LTC_OP_T: case LTC_OP_EXPAND: case LTC_OP_BROADCAST_TO: return true;
    case LTC_OP_MEAN: return ltc_dtype_is_float(n->shapes[0].dtype);
    case LTC_OP_SOFTMAX:
    case LTC_OP_LOG_SOFTMAX: return ltc_dtype_is_float(s0->dtype) && s0->ndim > 0;
    case LTC_OP_CROSS_ENTROPY:
        return ltc_dtype_is_float(s0->dtype) && s0->ndim >= 1 && s0->ndim <= 2;
    case LTC_OP_CROSS_ENTROPY_BACKWARD: {
        const ltc_shape *xs = &n->operands[1].node->shapes[n->operands[1].index];
        return ltc_dtype_is_float(xs->dtype) && xs->ndim >= 1 && xs->ndim <= 2 &&
               s0->dtype == xs->dtype;
    }
    case LTC_OP_INDEX_SELECT:
    case LTC_OP_EMBEDDING: {
        const ltc_shape *is = &n->operands[1].node->shapes[n->operands[1].index];
        return (is->dtype == LTC_I64 || is->dtype == LTC_I32) && s0->ndim > 0;
    }
    default: return false;
    }
}

/* The narrow dtypes (uint8, int8, int16, float16, bfloat16) have no kernels here: a node
 * with one among its operands or results runs on the host (the CPU backend, as every node
 * this backend does not lower), its data moved by the core. Device data keeps them (bytes). */
static bool has_narrow(const ltc_node *n) {
    for (int i = 0; i < n->n_outputs; i++)
        if (ltc_dtype_is_narrow(n->shapes[i].dtype)) return true;
    for (int i = 0; i < n->n_operands; i++) {
        const ltc_value *v = &n->operands[i];
        if (ltc_dtype_is_narrow(v->node->shapes[v->index].dtype)) return true;
    }
    return false;
}

bool ocl_node_lowered(const ltc_node *n) {
    if (n->op != LTC_OP_DEVICE_DATA && has_narrow(n)) return false;
    return n->op == LTC_OP_DEVICE_DATA || is_alias(n) || lw_ew_expr(n) || gemm_lowerable(n) ||
           family_ok(n) || ocl_nn_lowers(n) || ocl_more_lowers(n);
}

bool ocl_op_lowered(int op) {
    switch (op) {
    case LTC_OP_TO: case LTC_OP_ONES: case LTC_OP_ZEROS: case LTC_OP_FULL:
    case LTC_OP_SCALAR_TENSOR: case LTC_OP_VIEW: case LTC_OP_RESHAPE: case LTC_OP_FLATTEN:
    case LTC_OP_SQUEEZE: case LTC_OP_SQUEEZE_DIM: case LTC_OP_UNSQUEEZE: case LTC_OP_CLONE:
    case LTC_OP_CONTIGUOUS: case LTC_OP_MM: case LTC_OP_BMM: case LTC_OP_MATMUL:
    case LTC_OP_LINEAR: case LTC_OP_LINEAR_NOBIAS: case LTC_OP_ADDMM: case LTC_OP_SUM:
    case LTC_OP_MEAN: case LTC_OP_MAX: case LTC_OP_MIN: case LTC_OP_ARGMAX: case LTC_OP_ARGMIN:
    case LTC_OP_MAX_DIM: case LTC_OP_MIN_DIM: case LTC_OP_SOFTMAX: case LTC_OP_LOG_SOFTMAX:
    case LTC_OP_CROSS_ENTROPY: case LTC_OP_CROSS_ENTROPY_BACKWARD: case LTC_OP_INDEX_SELECT:
    case LTC_OP_EMBEDDING: case LTC_OP_PERMUTE: case LTC_OP_TRANSPOSE: case LTC_OP_T:
    case LTC_OP_EXPAND: case LTC_OP_BROADCAST_TO: case LTC_OP_DEVICE_DATA:
    /* lower_nn.c's (float32 operands) */
    case LTC_OP_CONV2D: case LTC_OP_CONV2D_NOBIAS: case LTC_OP_CONV2D_BACKWARD_INPUT:
    case LTC_OP_CONV2D_BACKWARD_WEIGHT: case LTC_OP_MAX_POOL2D: case LTC_OP_MAX_POOL2D_BACKWARD:
    case LTC_OP_CAT: case LTC_OP_STACK: case LTC_OP_NARROW: case LTC_OP_SELECT:
    case LTC_OP_NARROW_SCATTER: case LTC_OP_SELECT_SCATTER: case LTC_OP_INDEX_ADD:
    case LTC_OP_SCATTER_ADD: case LTC_OP_ARANGE: case LTC_OP_RAND: case LTC_OP_RANDN:
    case LTC_OP_RANDINT: case LTC_OP_BERNOULLI: case LTC_OP_BERNOULLI_P: case LTC_OP_DROPOUT:
    case LTC_OP_NORM:
    /* lower_more.c's */
    case LTC_OP_LAYER_NORM: case LTC_OP_LAYER_NORM_BACKWARD: case LTC_OP_LINEAR_BACKWARD:
    case LTC_OP_BATCH_NORM:
    case LTC_OP_NLL_LOSS:
    case LTC_OP_NLL_LOSS_BACKWARD: case LTC_OP_GATHER: case LTC_OP_SCATTER: case LTC_OP_TRIL:
    case LTC_OP_TRIU: case LTC_OP_AVG_POOL2D: case LTC_OP_AVG_POOL2D_BACKWARD:
    case LTC_OP_CUMSUM: case LTC_OP_CUMPROD: case LTC_OP_SORT: case LTC_OP_ARGSORT:
    case LTC_OP_TOPK: case LTC_OP_VAR: case LTC_OP_STD: case LTC_OP_PROD:
    case LTC_OP_LOGSUMEXP: case LTC_OP_ALL: case LTC_OP_ANY: case LTC_OP_KTHVALUE:
    case LTC_OP_MEDIAN: case LTC_OP_MEDIAN_DIM: case LTC_OP_CUMMAX: case LTC_OP_CUMMIN:
    case LTC_OP_FLIP: case LTC_OP_REPEAT: case LTC_OP_ONE_HOT: case LTC_OP_EYE:
    case LTC_OP_LINSPACE: case LTC_OP_RANDPERM: case LTC_OP_DOT: case LTC_OP_OUTER:
    case LTC_OP_MSE_LOSS:
        return true;
    default: break;
    }
    /* an elementwise op whose float expr calls only OpenCL builtins */
    ltc_node probe = {.op = (uint16_t)op, .n_outputs = 1};
    ltc_shape f32 = {.dtype = LTC_F32};
    probe.shapes = &f32;
    return lw_ew_expr(&probe) != NULL;
}

/* ---- the graph ------------------------------------------------------------------------------ */

static ltc_status lower_node(lw *w, int ni) {
    const ltc_node *n = w->ctx->post_order[ni];
    int out = w->slot_of[ni];
    if (n->op == LTC_OP_DEVICE_DATA || w->inlined[ni] || w->skip[ni]) return LTC_OK;
    if (is_alias(n)) {
        ocl_step *s = lw_new_step(w, OCL_STEP_ALIAS, n->op, out);
        if (!s) return lw_nomem();
        s->in[0] = lw_opslot(w, n, 0);
        s->n_in = 1;
        return LTC_OK;
    }
    if (lw_ew_expr(n)) return lw_lower_ew(w, ni, out);
    if (gemm_lowerable(n)) return lower_gemm(w, n, out);
    bool done;
    ltc_status st = lower_family(w, n, out, &done);
    if (st || done) return st;
    if ((st = ocl_lower_nn(w, n, out, &done)) || done) return st;
    if ((st = ocl_lower_more(w, n, out, &done)) || done) return st;
    /* the core's eager fallback runs what ocl_node_lowered refuses: never here */
    return ltc_errorf(LTC_ERR_BACKEND, "opencl: %s reached the device's lowering but is not "
                      "lowered (ocl_node_lowered and the lowering disagree)", ltc_op_name(n->op));
}

/* At most this many buffers a fused kernel reads (its operands outside the group). */
#define MAX_LEAVES 8

/* Marks elementwise nodes to inline and transposes to fold into GEMMs. A node is inlined
 * into its consumer when it is elementwise, used once, by an elementwise node of the same
 * size; if a group would read more than MAX_LEAVES buffers, its largest candidates become
 * kernels of their own. */
static void plan_fusion(lw *w) {
    const ltc_lowering_ctx *ctx = w->ctx;
    int *leaves = calloc((size_t)ctx->n_nodes + 1, sizeof *leaves);
    for (int i = 0; i < ctx->n_nodes && leaves; i++) { /* no memory: no fusion */
        const ltc_node *c = ctx->post_order[i];
        leaves[i] = 1;
        if (!lw_ew_expr(c) || is_alias(c)) continue;
        bool cand[16] = {false};
        int cnt = 0;
        for (int k = 0; k < c->n_operands && k < 16; k++) {
            const ltc_node *n = c->operands[k].node;
            int ni = n->index;
            cand[k] = c->operands[k].index == 0 && n->op != LTC_OP_DEVICE_DATA &&
                      !w->is_root[ni] && w->uses[ni] == 1 && w->consumer[ni] == i &&
                      lw_ew_expr(n) && n->n_outputs == 1 && !is_alias(n) &&
                      lw_same_dims(&n->shapes[0], &c->shapes[0]) && leaves[ni] < MAX_LEAVES;
            cnt += cand[k] ? leaves[ni] : 1;
        }
        while (cnt > MAX_LEAVES) { /* give up the candidate reading the most */
            int best = -1;
            for (int k = 0; k < c->n_operands && k < 16; k++)
                if (cand[k] && (best < 0 || leaves[c->operands[k].node->index] >
                                                leaves[c->operands[best].node->index]))
                    best = k;
            if (best < 0) break;
            cand[best] = false;
            cnt -= leaves[c->operands[best].node->index] - 1;
        }
        for (int k = 0; k < c->n_operands && k < 16; k++)
            if (cand[k]) w->inlined[c->operands[k].node->index] = true;
        leaves[i] = cnt;
    }
    free(leaves);
    /* a 2-d transpose whose every use is a GEMM operand with a folded transpose */
    for (int i = 0; i < ctx->n_nodes; i++) {
        const ltc_node *n = ctx->post_order[i];
        if (!is_t2d(n) || w->is_root[i]) continue;
        bool all = w->uses[i] > 0;
        for (int j = i + 1; j < ctx->n_nodes && all; j++) {
            const ltc_node *c = ctx->post_order[j];
            for (int k = 0; k < c->n_operands; k++) {
                if (c->operands[k].node != n) continue;
                if (!gemm_lowerable(c) || !((gemm_peel_mask(c) >> k) & 1u) || is_alias(c))
                    all = false;
            }
        }
        w->skip[i] = all;
    }
}

static bool is_root_slot(const ocl_comp *c, int slot) {
    for (int r = 0; r < c->n_roots; r++)
        if (c->root_slots[r] == slot) return true;
    return false;
}

ltc_status ocl_lower(const ltc_lowering_ctx *ctx, ocl_comp **out) {
    ltc_status st = LTC_OK;
    int nn = ctx->n_nodes;
    lw w = {.ctx = ctx};
    ocl_comp *c = calloc(1, sizeof *c);
    w.c = c;
    w.slot_of = calloc((size_t)nn + 1, sizeof *w.slot_of);
    w.uses = calloc((size_t)nn + 1, sizeof *w.uses);
    w.consumer = malloc(sizeof *w.consumer * ((size_t)nn + 1));
    w.is_root = calloc((size_t)nn + 1, 1);
    w.inlined = calloc((size_t)nn + 1, 1);
    w.skip = calloc((size_t)nn + 1, 1);
    w.ew_stamp = calloc((size_t)nn + 1, sizeof *w.ew_stamp);
    if (!c || !w.slot_of || !w.uses || !w.consumer || !w.is_root || !w.inlined || !w.skip ||
        !w.ew_stamp) {
        st = lw_nomem();
        goto fail;
    }
    for (int i = 0; i < nn; i++) {
        const ltc_node *n = ctx->post_order[i];
        w.consumer[i] = -1;
        w.slot_of[i] = c->n_slots;
        for (int k = 0; k < n->n_outputs; k++) {
            if (lw_new_slot(&w, &n->shapes[k]) < 0) {
                st = lw_nomem();
                goto fail;
            }
            if (ltc_dtype_is_float(n->shapes[k].dtype) && n->shapes[k].dtype == LTC_F64) w.fp64 = true;
        }
        for (int k = 0; k < n->n_operands; k++) {
            int oi = n->operands[k].node->index;
            if (n->operands[k].index == 0) w.uses[oi]++;
            w.consumer[oi] = i;
        }
    }
    for (int p = 0; p < ctx->n_params; p++) c->slots[w.slot_of[ctx->params[p]->index]].param = p;
    c->n_roots = ctx->n_roots;
    c->root_slots = malloc(sizeof(int) * ((size_t)ctx->n_roots + 1));
    if (!c->root_slots) {
        st = lw_nomem();
        goto fail;
    }
    for (int r = 0; r < ctx->n_roots; r++) {
        int ni = ctx->roots[r].node->index;
        w.is_root[ni] = true;
        w.uses[ni]++;
        c->root_slots[r] = w.slot_of[ni] + ctx->roots[r].index;
    }
    plan_fusion(&w);
    for (int i = 0; i < nn && !st; i++) w.cur_node = i, st = lower_node(&w, i);
    if (st) goto fail;
    /* the program: the preamble then every kernel under its name */
    if (c->n_kernels) {
        ocl_sb src = {0};
        ocl_src_preamble(&src, w.fp64 || ocl.info.fp64);
        if (w.rng) ocl_src_philox(&src, ocl.info.fp64);
        c->kernel_names = calloc((size_t)c->n_kernels, sizeof *c->kernel_names);
        if (!c->kernel_names) {
            st = lw_nomem();
            goto fail;
        }
        for (int k = 0; k < c->n_kernels; k++) {
            char name[32];
            snprintf(name, sizeof name, "k%d", k);
            c->kernel_names[k] = strdup(name);
            const char *body = w.bodies[k], *at;
            if (!strstr(body, KNAME) || !c->kernel_names[k]) {
                st = lw_nomem();
                goto fail;
            }
            while ((at = strstr(body, KNAME))) { /* every occurrence: helpers carry the name */
                ocl_sb_printf(&src, "%.*s%s", (int)(at - body), body, name);
                body = at + strlen(KNAME);
            }
            ocl_sb_printf(&src, "%s", body);
        }
        if (src.oom) {
            free(src.s);
            st = lw_nomem();
            goto fail;
        }
        c->source = src.s;
        if ((st = ocl_program_get(c->source, &c->program))) goto fail;
        c->kernels = calloc((size_t)c->n_kernels, sizeof *c->kernels);
        if (!c->kernels) {
            st = lw_nomem();
            goto fail;
        }
        for (int k = 0; k < c->n_kernels; k++) {
            cl_int e;
            c->kernels[k] = clCreateKernel(c->program, c->kernel_names[k], &e);
            if (e != CL_SUCCESS) {
                st = ltc_errorf(LTC_ERR_BACKEND, "opencl: clCreateKernel(%s) failed: %s",
                                c->kernel_names[k], ocl_err(e));
                goto fail;
            }
        }
    }
    /* last reads of each slot, so a run frees intermediates early */
    c->last_use = malloc(sizeof(int) * ((size_t)c->n_slots + 1));
    if (!c->last_use) {
        st = lw_nomem();
        goto fail;
    }
    for (int i = 0; i < c->n_slots; i++) c->last_use[i] = -1;
    for (int i = 0; i < c->n_steps; i++) {
        ocl_step *s = &c->steps[i];
        c->checks |= s->checks;
        for (int a = 0; a < s->n_args && s->kind == OCL_STEP_KERNEL; a++)
            if (s->args[a].kind == 'b') c->last_use[s->args[a].slot] = i;
        for (int k = 0; k < s->n_in && s->kind != OCL_STEP_KERNEL; k++) c->last_use[s->in[k]] = i;
        if (s->kind == OCL_STEP_GEMM) {
            c->last_use[s->a] = i;
            c->last_use[s->bslot] = i;
        }
    }
    /* the slots released after each step: intermediates at their last use */
    c->free_at = calloc((size_t)c->n_steps + 2, sizeof *c->free_at);
    c->free_slots = malloc(sizeof(int) * ((size_t)c->n_slots + 1));
    if (!c->free_at || !c->free_slots) {
        st = lw_nomem();
        goto fail;
    }
    for (int i = 0; i < c->n_slots; i++)
        if (c->last_use[i] >= 0 && !is_root_slot(c, i)) c->free_at[c->last_use[i] + 1]++;
    for (int i = 0; i < c->n_steps; i++) c->free_at[i + 1] += c->free_at[i];
    {
        int *fill = calloc((size_t)c->n_steps + 1, sizeof *fill);
        if (!fill) {
            st = lw_nomem();
            goto fail;
        }
        for (int i = 0; i < c->n_slots; i++)
            if (c->last_use[i] >= 0 && !is_root_slot(c, i)) {
                int at = c->last_use[i];
                c->free_slots[c->free_at[at] + fill[at]++] = i;
            }
        free(fill);
    }
    *out = c;
fail: /* the walk's scratch, on success and failure alike; c itself only on failure */
    if (c)
        for (int k = 0; k < c->n_kernels; k++) free(w.bodies[k]);
    free(w.bodies);
    free(w.slot_of);
    free(w.uses);
    free(w.consumer);
    free(w.is_root);
    free(w.inlined);
    free(w.skip);
    free(w.ew_stamp);
    if (st) ocl_comp_free(c);
    return st;
}

void ocl_comp_free(ocl_comp *c) {
    if (!c) return;
    if (c->kernels)
        for (int k = 0; k < c->n_kernels; k++)
            if (c->kernels[k]) clReleaseKernel(c->kernels[k]);
    if (c->kernel_names)
        for (int k = 0; k < c->n_kernels; k++) free(c->kernel_names[k]);
    if (c->program) clReleaseProgram(c->program);
    free(c->kernels);
    free(c->kernel_names);
    free(c->steps);
    free(c->slots);
    free(c->root_slots);
    free(c->source);
    free(c->last_use);
    free(c->free_at);
    free(c->free_slots);
    free(c);
}
