/*
 * lower_nn.c - lowering the ops of the CNN and LSTM paths to kernels of kernels_nn.c:
 * conv2d (with and without bias) and its backward ops, max_pool2d and its backward, cat,
 * stack, narrow, select, narrow_scatter, select_scatter, index_add, arange and
 * the random ops (rand, randn, randint, bernoulli, bernoulli.p, dropout), and norm (the LSTM
 * example's gradient clipping).
 *
 * Convolutions with groups 1 run as im2col + a CLBlast GEMM (+ a swap of the first two dims
 * and the bias), their input gradient as GEMM + col2im and their weight gradient as im2col +
 * GEMM; grouped ones (and column matrices over CONV_COL_MAX elements) use the direct kernels.
 *
 * ocl_nn_lowers says which nodes these are (dtypes and sizes included): the core's eager
 * fallback runs the others (mem.c's `lowers` slot), so the two must agree.
 */
#include "lower.h"

static const ltc_shape *opshape(const ltc_node *n, int k) {
    return &n->operands[k].node->shapes[n->operands[k].index];
}

static bool is_float(ltc_dtype dt) { return dt == LTC_F32 || (dt == LTC_F64 && ocl.info.fp64); }

/* A 1-based or negative index onto 0..size-1 (the shape rule has checked it); one past the
 * end stays there (a narrow of length 0 at the end). */
static int64_t wrap(int64_t i, int64_t size) {
    if (i == size + 1) return size;
    return i > 0 ? i - 1 : size + i;
}

/* ---- convolution ------------------------------------------------------------------------------ */

/* The 17 sizes of a conv kernel (CONV_ARGS) from the input, weight and output shapes and
 * the attrs stride, padding, dilation, groups at attrs[at..at+3]. */
static void conv_args(ocl_step *s, const ltc_shape *in, const ltc_shape *w, const ltc_shape *out,
                      const ltc_attr *at) {
    int b = in->ndim - 3;
    int64_t groups = at[3].i > 0 ? at[3].i : 1;
    int64_t v[17] = {b ? in->dims[0] : 1, in->dims[b], in->dims[b + 1], in->dims[b + 2],
                     w->dims[0], w->dims[2], w->dims[3], out->dims[b + 1], out->dims[b + 2],
                     at[0].ints[0], at[0].ints[1], at[1].ints[0], at[1].ints[1],
                     at[2].ints[0], at[2].ints[1], w->dims[1], w->dims[0] / groups};
    for (int i = 0; i < 17; i++) lw_arg_long(s, v[i]);
}

/* Whether every tensor of node n has fewer than 2^31 elements (int indices suffice). */
static bool fits_i32(const ltc_node *n) {
    int64_t lim = (int64_t)1 << 31;
    if (ltc_shape_numel(&n->shapes[0]) >= lim) return false;
    for (int k = 0; k < n->n_operands; k++)
        if (ltc_shape_numel(opshape(n, k)) >= lim) return false;
    return true;
}

/* ---- convolution as im2col + CLBlast GEMM ----------------------------------------------------------- */

/* The column matrix of a GEMM convolution holds at most this many elements; bigger ones (and
 * grouped convolutions) take the direct kernels. */
#define CONV_COL_MAX ((int64_t)1 << 26)

ltc_status lw_gemm_step(lw *w, int op, int out, int a, int bslot, bool ta, bool tb, int64_t m,
                        int64_t nn, int64_t k, ltc_dtype dt) {
    ocl_step *s = lw_new_step(w, OCL_STEP_GEMM, op, out);
    if (!s) return lw_nomem();
    s->a = a;
    s->bslot = bslot;
    s->ta = ta;
    s->tb = tb;
    s->m = m;
    s->n = nn;
    s->k = k;
    s->batch = 1;
    s->dtype = dt;
    s->args[0] = (ocl_arg){.kind = 'd', .f = 1};
    s->args[1] = (ocl_arg){.kind = 'd', .f = 0};
    return LTC_OK;
}

/* The input, weight and output shapes of node n's convolution (forward or backward) and the
 * index of its stride attr. */
static void conv_shapes(const ltc_node *n, const ltc_shape **in, const ltc_shape **wt,
                        const ltc_shape **out, int *at) {
    switch (n->op) {
    case LTC_OP_CONV2D_BACKWARD_INPUT:
        *in = &n->shapes[0], *wt = opshape(n, 1), *out = opshape(n, 0), *at = 1;
        break;
    case LTC_OP_CONV2D_BACKWARD_WEIGHT:
        *in = opshape(n, 1), *wt = &n->shapes[0], *out = opshape(n, 0), *at = 1;
        break;
    default: *in = opshape(n, 0), *wt = opshape(n, 1), *out = &n->shapes[0], *at = 0; break;
    }
}

static bool conv_gemm_ok(const ltc_node *n) {
    const ltc_shape *in, *wt, *out;
    int at;
    conv_shapes(n, &in, &wt, &out, &at);
    int b = in->ndim - 3;
    int64_t ckk = lw_prod(wt, 1, 4), np = (b ? in->dims[0] : 1) * out->dims[b + 1] * out->dims[b + 2];
    return n->attrs[at + 3].i == 1 && ckk > 0 && np > 0 && wt->dims[0] > 0 &&
           ckk * np <= CONV_COL_MAX && ltc_shape_numel(in) < ((int64_t)1 << 31);
}

/* A kernel step of the conv family over slots: out, then the `nin` inputs, then the 17 sizes. */
static ltc_status conv_kernel(lw *w, ocl_sb *b, const ltc_node *n, int out, const int *ins,
                              int nin, size_t global) {
    const ltc_shape *in, *wt, *os;
    int at;
    conv_shapes(n, &in, &wt, &os, &at);
    ocl_step *s = lw_family_step(w, b, n->op, out, global);
    if (!s) return lw_nomem();
    lw_arg_buf(s, 'o', out);
    for (int k = 0; k < nin; k++) lw_arg_buf(s, 'b', ins[k]);
    conv_args(s, in, wt, os, &n->attrs[at]);
    return LTC_OK;
}

/* A swap01 step: out [A, B, P] from in [B, A, P] (+ bias[b] when bias >= 0). */
static ltc_status swap_step(lw *w, int op, int out, int in, int bias, int64_t a, int64_t bb,
                            int64_t p, ltc_dtype dt) {
    ocl_sb b = {0};
    ocl_k_swap01(&b, KNAME, dt, bias >= 0);
    ocl_step *s = lw_family_step(w, &b, op, out, (size_t)(a * bb * p));
    if (!s) return lw_nomem();
    lw_arg_buf(s, 'o', out);
    lw_arg_buf(s, 'b', in);
    if (bias >= 0) lw_arg_buf(s, 'b', bias);
    lw_arg_long(s, a);
    lw_arg_long(s, bb);
    lw_arg_long(s, p);
    return LTC_OK;
}

/* Forward: col = im2col(x); y' [K, N*P] = W [K, CKK] col; y = y' swapped to [N, K, P] + bias.
 * Input gradient: g' [K, N*P] = grad_output swapped; dcol = W^T g'; grad_input = col2im(dcol).
 * Weight gradient: col = im2col(x); g' as above; dW [K, CKK] = (col g'^T)^T. */
static ltc_status lower_conv_gemm(lw *w, const ltc_node *n, int out) {
    const ltc_shape *in, *wt, *os;
    int at;
    conv_shapes(n, &in, &wt, &os, &at);
    ltc_dtype dt = n->shapes[0].dtype;
    int bd = in->ndim - 3;
    int64_t nb = bd ? in->dims[0] : 1, kk = wt->dims[0], ckk = lw_prod(wt, 1, 4);
    int64_t p = os->dims[bd + 1] * os->dims[bd + 2], np = nb * p;
    int64_t cdims[2] = {ckk, np}, gdims[2] = {kk, np};
    ltc_shape cs, gs;
    ltc_shape_make(&cs, dt, 2, cdims);
    ltc_shape_make(&gs, dt, 2, gdims);
    bool i32 = ckk * np < ((int64_t)1 << 31) && ltc_shape_numel(in) < ((int64_t)1 << 31);
    ltc_status st;
    ocl_sb b = {0};
    if (n->op == LTC_OP_CONV2D || n->op == LTC_OP_CONV2D_NOBIAS) {
        int col = lw_new_slot(w, &cs), yp = lw_new_slot(w, &gs), x = lw_opslot(w, n, 0);
        if (col < 0 || yp < 0) return lw_nomem();
        ocl_k_im2col(&b, KNAME, dt, i32);
        if ((st = conv_kernel(w, &b, n, col, &x, 1, (size_t)(ckk * np))) ||
            (st = lw_gemm_step(w, n->op, yp, lw_opslot(w, n, 1), col, false, false, kk, np, ckk, dt)))
            return st;
        return swap_step(w, n->op, out, yp, n->op == LTC_OP_CONV2D ? lw_opslot(w, n, 2) : -1, nb,
                         kk, p, dt);
    }
    int gp = lw_new_slot(w, &gs);
    if (gp < 0) return lw_nomem();
    if ((st = swap_step(w, n->op, gp, lw_opslot(w, n, 0), -1, kk, nb, p, dt))) return st;
    if (n->op == LTC_OP_CONV2D_BACKWARD_INPUT) {
        int dcol = lw_new_slot(w, &cs);
        if (dcol < 0) return lw_nomem();
        if ((st = lw_gemm_step(w, n->op, dcol, lw_opslot(w, n, 1), gp, true, false, ckk, np, kk, dt)))
            return st;
        ocl_k_col2im(&b, KNAME, dt, i32);
        return conv_kernel(w, &b, n, out, &dcol, 1, (size_t)ltc_shape_numel(in));
    }
    /* dW^T = col g'^T, then transposed: CLBlast (untuned, as on PoCL) runs this shape about
     * twice as fast as g' col^T */
    int64_t tdims[2] = {ckk, kk};
    ltc_shape ts;
    ltc_shape_make(&ts, dt, 2, tdims);
    int col = lw_new_slot(w, &cs), dwt = lw_new_slot(w, &ts), x = lw_opslot(w, n, 1);
    if (col < 0 || dwt < 0) return lw_nomem();
    ocl_k_im2col(&b, KNAME, dt, i32);
    if ((st = conv_kernel(w, &b, n, col, &x, 1, (size_t)(ckk * np))) ||
        (st = lw_gemm_step(w, n->op, dwt, col, gp, false, true, ckk, kk, np, dt)))
        return st;
    return swap_step(w, n->op, out, dwt, -1, kk, ckk, 1, dt);
}

static ltc_status lower_conv(lw *w, const ltc_node *n, int out) {
    const ltc_shape *os = &n->shapes[0];
    ocl_sb b = {0};
    ocl_step *s;
    bool i32 = fits_i32(n);
    if (conv_gemm_ok(n)) return lower_conv_gemm(w, n, out);
    switch (n->op) {
    case LTC_OP_CONV2D:
    case LTC_OP_CONV2D_NOBIAS: {
        bool bias = n->op == LTC_OP_CONV2D;
        ocl_k_conv2d(&b, KNAME, os->dtype, bias, i32);
        if (!(s = lw_family_step(w, &b, n->op, out, (size_t)ltc_shape_numel(os)))) return lw_nomem();
        lw_arg_buf(s, 'o', out);
        for (int k = 0; k < (bias ? 3 : 2); k++) lw_arg_buf(s, 'b', lw_opslot(w, n, k));
        conv_args(s, opshape(n, 0), opshape(n, 1), os, &n->attrs[0]);
        return LTC_OK;
    }
    case LTC_OP_CONV2D_BACKWARD_INPUT:
        ocl_k_conv2d_bwd_input(&b, KNAME, os->dtype,
                               n->attrs[1].ints[0] == 1 && n->attrs[1].ints[1] == 1, i32);
        if (!(s = lw_family_step(w, &b, n->op, out, (size_t)ltc_shape_numel(os)))) return lw_nomem();
        lw_arg_buf(s, 'o', out);
        lw_arg_buf(s, 'b', lw_opslot(w, n, 0));
        lw_arg_buf(s, 'b', lw_opslot(w, n, 1));
        conv_args(s, os, opshape(n, 1), opshape(n, 0), &n->attrs[1]);
        return LTC_OK;
    default: /* LTC_OP_CONV2D_BACKWARD_WEIGHT */
        ocl_k_conv2d_bwd_weight(&b, KNAME, os->dtype, i32);
        if (!(s = lw_family_step(w, &b, n->op, out, (size_t)ltc_shape_numel(os)))) return lw_nomem();
        lw_arg_buf(s, 'o', out);
        lw_arg_buf(s, 'b', lw_opslot(w, n, 0));
        lw_arg_buf(s, 'b', lw_opslot(w, n, 1));
        conv_args(s, opshape(n, 1), os, opshape(n, 0), &n->attrs[1]);
        return LTC_OK;
    }
}

/* ---- max pooling ------------------------------------------------------------------------------- */

static ltc_status lower_pool(lw *w, const ltc_node *n, int out) {
    bool bwd = n->op == LTC_OP_MAX_POOL2D_BACKWARD;
    const ltc_shape *is = opshape(n, bwd ? 1 : 0), *ps = bwd ? opshape(n, 0) : &n->shapes[0];
    const ltc_attr *at = n->attrs;
    int b0 = is->ndim - 2;
    ocl_sb b = {0};
    if (bwd) ocl_k_max_pool2d_bwd(&b, KNAME, is->dtype, fits_i32(n));
    else ocl_k_max_pool2d(&b, KNAME, is->dtype, fits_i32(n));
    ocl_step *s = lw_family_step(w, &b, n->op, out, (size_t)ltc_shape_numel(&n->shapes[0]));
    if (!s) return lw_nomem();
    lw_arg_buf(s, 'o', out);
    lw_arg_buf(s, 'b', lw_opslot(w, n, 0));
    if (bwd) lw_arg_buf(s, 'b', lw_opslot(w, n, 1));
    int64_t v[13] = {lw_prod(is, 0, b0), is->dims[b0], is->dims[b0 + 1], ps->dims[b0],
                     ps->dims[b0 + 1], at[0].ints[0], at[0].ints[1], at[1].ints[0],
                     at[1].ints[1], at[2].ints[0], at[2].ints[1], at[3].ints[0], at[3].ints[1]};
    for (int i = 0; i < 13; i++) lw_arg_long(s, v[i]);
    return LTC_OK;
}

/* ---- slices ------------------------------------------------------------------------------------ */

/* One slice-copy step (kernels_nn.c, ocl_k_slice) of slot in into slot out: `total` work
 * items (the elements of in when writing, of out when reading). */
static ltc_status slice_step(lw *w, int op, int out, int in, bool write, int64_t total,
                             int64_t olen, int64_t ilen, int64_t inner, int64_t off) {
    ocl_sb b = {0};
    ocl_k_slice(&b, KNAME, w->c->slots[in].shape.dtype, w->c->slots[out].shape.dtype, write);
    ocl_step *s = lw_family_step(w, &b, op, out, (size_t)total);
    if (!s) return lw_nomem();
    lw_arg_buf(s, 'o', out);
    lw_arg_buf(s, 'b', in);
    lw_arg_long(s, total);
    lw_arg_long(s, olen ? olen : 1);
    lw_arg_long(s, ilen ? ilen : 1);
    lw_arg_long(s, inner ? inner : 1);
    lw_arg_long(s, off);
    return LTC_OK;
}

static ltc_status lower_slices(lw *w, const ltc_node *n, int out) {
    const ltc_shape *os = &n->shapes[0];
    ltc_status st = LTC_OK;
    switch (n->op) {
    case LTC_OP_CAT:
    case LTC_OP_STACK: {
        bool stack = n->op == LTC_OP_STACK;
        int dim = stack ? (int)wrap(n->attrs[0].i, os->ndim) : (int)n->attrs[0].i;
        int64_t outer = lw_prod(os, 0, dim), inner = lw_prod(os, dim + 1, os->ndim), off = 0;
        for (int k = 0; k < n->n_operands && !st; k++) {
            const ltc_shape *s = opshape(n, k);
            int64_t len = stack ? 1 : s->ndim != os->ndim ? 0 : s->dims[dim]; /* 0: a skipped [0] */
            st = slice_step(w, n->op, out, lw_opslot(w, n, k), true, outer * len * inner,
                            os->dims[dim], len, inner, off);
            off += len;
        }
        return st;
    }
    case LTC_OP_NARROW:
    case LTC_OP_SELECT: {
        const ltc_shape *is = opshape(n, 0);
        int dim = (int)n->attrs[0].i;
        int64_t at = wrap(n->attrs[1].i, is->dims[dim]);
        int64_t olen = n->op == LTC_OP_NARROW ? os->dims[dim] : 1;
        return slice_step(w, n->op, out, lw_opslot(w, n, 0), false, ltc_shape_numel(os), olen,
                          is->dims[dim], lw_prod(is, dim + 1, is->ndim), at);
    }
    default: { /* NARROW_SCATTER, SELECT_SCATTER: a copy of self, then src written into it */
        const ltc_shape *ss = opshape(n, 1);
        int dim = (int)n->attrs[0].i;
        int64_t at = wrap(n->attrs[1].i, os->dims[dim]);
        int64_t len = n->op == LTC_OP_NARROW_SCATTER ? ss->dims[dim] : 1;
        int64_t inner = lw_prod(os, dim + 1, os->ndim);
        st = slice_step(w, n->op, out, lw_opslot(w, n, 0), false, ltc_shape_numel(os), 1, 1, 1, 0);
        if (!st)
            st = slice_step(w, n->op, out, lw_opslot(w, n, 1), true, ltc_shape_numel(ss),
                            os->dims[dim], len, inner, at);
        return st;
    }
    }
}

/* ---- index_add ---------------------------------------------------------------------- */

static ltc_status lower_index_add(lw *w, const ltc_node *n, int out) {
    const ltc_shape *ss = opshape(n, 0), *is = opshape(n, 1), *rs = opshape(n, 2);
    int dim = (int)n->attrs[0].i;
    int64_t m = ltc_shape_numel(is);
    ocl_sb b = {0};
    ocl_k_index_add(&b, KNAME, ss->dtype, is->dtype);
    ocl_step *s = lw_family_step(w, &b, n->op, out, (size_t)ltc_shape_numel(ss));
    if (!s) return lw_nomem();
    lw_arg_buf(s, 'o', out);
    lw_arg_buf(s, 'b', lw_opslot(w, n, 0));
    lw_arg_buf(s, 'b', lw_opslot(w, n, 1));
    lw_arg_buf(s, 'b', lw_opslot(w, n, 2));
    lw_arg_long(s, lw_prod(ss, 0, dim));
    lw_arg_long(s, ss->dims[dim]);
    lw_arg_long(s, m);
    lw_arg_long(s, lw_prod(ss, dim + 1, ss->ndim));
    lw_arg_buf(s, 'e', -1);
    lw_arg_long(s, w->c->n_steps - 1);
    s->checks = true;
    s->k = ss->dims[dim];
    (void)rs;
    return LTC_OK;
}

/* ---- arange and random ops -------------------------------------------------------------------------- */

static ltc_status lower_random(lw *w, const ltc_node *n, int out) {
    const ltc_shape *os = &n->shapes[0];
    int64_t numel = ltc_shape_numel(os);
    char kind;
    switch (n->op) {
    case LTC_OP_RAND: kind = 'u'; break;
    case LTC_OP_RANDN: kind = 'n'; break;
    case LTC_OP_RANDINT: kind = 'i'; break;
    case LTC_OP_BERNOULLI: kind = 'b'; break;
    case LTC_OP_BERNOULLI_P: kind = 'p'; break;
    default: /* DROPOUT */
        if (!n->attrs[1].i) /* not training: a copy */
            return slice_step(w, n->op, out, lw_opslot(w, n, 0), false, numel, 1, 1, 1, 0);
        kind = 'd';
        break;
    }
    ocl_sb b = {0};
    ocl_k_random(&b, KNAME, kind, os->dtype, ocl.info.fp64);
    ocl_step *s = lw_family_step(w, &b, n->op, out, (size_t)numel);
    if (!s) return lw_nomem();
    w->rng = true;
    lw_arg_buf(s, 'o', out);
    if (kind == 'b' || kind == 'd') lw_arg_buf(s, 'b', lw_opslot(w, n, 0));
    lw_arg_buf(s, 'b', lw_opslot(w, n, n->n_operands - 1));
    lw_arg_long(s, numel);
    if (kind == 'b') { /* the error flag (exec.c names a probability outside [0, 1]) */
        lw_arg_buf(s, 'e', -1);
        lw_arg_long(s, w->c->n_steps - 1);
        s->checks = true;
    }
    char qk = os->dtype == LTC_F32 ? 'f' : 'd';
    if (kind == 'p')
        s->args[s->n_args++] = (ocl_arg){.kind = qk, .f = qk == 'f' ? (double)(float)n->attrs[0].f
                                                                     : n->attrs[0].f};
    if (kind == 'd') {
        double p = n->attrs[0].f;
        s->args[s->n_args++] = (ocl_arg){.kind = qk, .f = qk == 'f' ? (double)(float)(1 - p) : 1 - p};
        lw_arg_long(s, p == 1);
    }
    if (kind == 'i') {
        lw_arg_long(s, n->attrs[0].i);
        lw_arg_long(s, n->attrs[1].i - n->attrs[0].i);
    }
    return LTC_OK;
}

static ltc_status lower_arange(lw *w, const ltc_node *n, int out) {
    const ltc_shape *os = &n->shapes[0];
    ocl_sb b = {0};
    ocl_k_arange(&b, KNAME, os->dtype, true);
    ocl_step *s = lw_family_step(w, &b, n->op, out, (size_t)ltc_shape_numel(os));
    if (!s) return lw_nomem();
    lw_arg_buf(s, 'o', out);
    lw_arg_long(s, ltc_shape_numel(os));
    s->args[s->n_args++] = (ocl_arg){.kind = 'd', .f = n->attrs[0].f};
    s->args[s->n_args++] = (ocl_arg){.kind = 'd', .f = n->attrs[2].f};
    return LTC_OK;
}

/* ---- norm ---------------------------------------------------------------------------------------- */

static ltc_status lower_norm(lw *w, const ltc_node *n, int out) {
    const ltc_shape *is = opshape(n, 0);
    int64_t dim = n->attrs[1].i, outer = 1, len = ltc_shape_numel(is), inner = 1;
    if (dim != LTC_NONE && is->ndim > 0) {
        outer = lw_prod(is, 0, (int)dim);
        len = is->dims[dim];
        inner = lw_prod(is, (int)dim + 1, is->ndim);
    }
    ocl_sb b = {0};
    ocl_k_norm(&b, KNAME, is->dtype, n->shapes[0].dtype, ocl.info.fp64);
    ocl_step *s = lw_line_step(w, &b, n, out, 1, (size_t)(outer * inner), outer, len, inner);
    if (!s) return lw_nomem();
    s->args[s->n_args++] = (ocl_arg){.kind = ocl.info.fp64 ? 'd' : 'f', .f = n->attrs[0].f};
    return LTC_OK;
}

/* ---- which nodes ------------------------------------------------------------------------------------ */

static bool same_but(const ltc_shape *a, const ltc_shape *b, int dim) {
    if (a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (d != dim && a->dims[d] != b->dims[d]) return false;
    return true;
}

bool ocl_nn_lowers(const ltc_node *n) {
    const ltc_shape *os = &n->shapes[0];
    if (n->n_outputs != 1) return false;
    switch (n->op) {
    case LTC_OP_CONV2D:
    case LTC_OP_CONV2D_NOBIAS:
    case LTC_OP_CONV2D_BACKWARD_INPUT:
    case LTC_OP_CONV2D_BACKWARD_WEIGHT: {
        int at = n->op == LTC_OP_CONV2D || n->op == LTC_OP_CONV2D_NOBIAS ? 0 : 1;
        if (n->n_attrs < at + 4 || n->n_operands < 2) return false;
        for (int k = 0; k < n->n_operands; k++)
            if (opshape(n, k)->dtype != os->dtype) return false;
        return is_float(os->dtype) && n->attrs[at + 3].i >= 1;
    }
    case LTC_OP_MAX_POOL2D:
    case LTC_OP_MAX_POOL2D_BACKWARD: {
        const ltc_shape *is = opshape(n, n->op == LTC_OP_MAX_POOL2D ? 0 : 1);
        return n->n_attrs >= 4 && is_float(is->dtype) && is->ndim >= 2 &&
               (n->op == LTC_OP_MAX_POOL2D || opshape(n, 0)->dtype == is->dtype);
    }
    case LTC_OP_CAT:
    case LTC_OP_STACK:
        if (n->n_attrs < 1 || os->ndim == 0) return false;
        for (int k = 0; k < n->n_operands; k++)
            if (opshape(n, k)->dtype != os->dtype && os->dtype == LTC_BOOL) return false;
        return os->dtype != LTC_F64 || ocl.info.fp64;
    case LTC_OP_NARROW:
    case LTC_OP_SELECT:
    case LTC_OP_NARROW_SCATTER:
    case LTC_OP_SELECT_SCATTER:
        if (n->n_attrs < 2 || opshape(n, 0)->ndim == 0) return false;
        for (int k = 0; k < n->n_operands; k++)
            if (opshape(n, k)->dtype == LTC_F64 && !ocl.info.fp64) return false;
        return os->dtype != LTC_F64 || ocl.info.fp64;
    case LTC_OP_INDEX_ADD: {
        const ltc_shape *ss = opshape(n, 0), *is = opshape(n, 1), *rs = opshape(n, 2);
        int dim = (int)n->attrs[0].i;
        if (ss->ndim == 0 || dim < 0 || dim >= ss->ndim) return false;
        if (ss->dtype == LTC_BOOL || rs->dtype != ss->dtype || os->dtype != ss->dtype) return false;
        if (ss->dtype == LTC_F64 && !ocl.info.fp64) return false;
        if (is->dtype != LTC_I64 && is->dtype != LTC_I32) return false;
        if (!same_but(ss, rs, dim)) return false;
        if (ltc_shape_numel(is) != rs->dims[dim]) return false;
        /* an empty self checks no index on the device: the host raises as the CPU does */
        return ltc_shape_numel(ss) > 0 || ltc_shape_numel(is) == 0;
    }
    case LTC_OP_ARANGE: return ocl.info.fp64 && n->n_attrs >= 3;
    case LTC_OP_NORM: return n->n_attrs >= 2 && is_float(opshape(n, 0)->dtype) &&
                             opshape(n, 0)->dtype == os->dtype;
    case LTC_OP_RAND:
    case LTC_OP_RANDN: return is_float(os->dtype);
    case LTC_OP_BERNOULLI: return is_float(os->dtype) && opshape(n, 0)->dtype == os->dtype;
    case LTC_OP_BERNOULLI_P: return os->dtype == LTC_F32 || ocl.info.fp64;
    case LTC_OP_DROPOUT: return is_float(os->dtype) && n->n_attrs >= 2;
    case LTC_OP_RANDINT: return ocl.info.fp64 && n->n_attrs >= 2 && os->dtype != LTC_BOOL;
    default: return false;
    }
}

ltc_status ocl_lower_nn(lw *w, const ltc_node *n, int out, bool *done) {
    *done = ocl_nn_lowers(n);
    if (!*done) return LTC_OK;
    switch (n->op) {
    case LTC_OP_CONV2D:
    case LTC_OP_CONV2D_NOBIAS:
    case LTC_OP_CONV2D_BACKWARD_INPUT:
    case LTC_OP_CONV2D_BACKWARD_WEIGHT: return lower_conv(w, n, out);
    case LTC_OP_MAX_POOL2D:
    case LTC_OP_MAX_POOL2D_BACKWARD: return lower_pool(w, n, out);
    case LTC_OP_INDEX_ADD: return lower_index_add(w, n, out);
    case LTC_OP_ARANGE: return lower_arange(w, n, out);
    case LTC_OP_NORM: return lower_norm(w, n, out);
    case LTC_OP_RAND:
    case LTC_OP_RANDN:
    case LTC_OP_RANDINT:
    case LTC_OP_BERNOULLI:
    case LTC_OP_BERNOULLI_P:
    case LTC_OP_DROPOUT: return lower_random(w, n, out);
    default: return lower_slices(w, n, out);
    }
}
