/*
 * lower_ew.c - lowering elementwise ops (those with an `expr` in ops.yaml, casts and fills)
 * into fused OpenCL kernels: a node that lower.c's plan_fusion marks inlined becomes part of
 * its consumer's expression, so a chain becomes one kernel. Operands outside the group are
 * read in place: same size (index i), one element (index 0), or broadcast (strides as
 * kernel arguments, 0 on broadcast dims).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower.h"

static const char *const float_fns[] = {"exp", "log", "tanh", "floor", "ceil", "pow", "sqrt",
                                        "log1p", "expm1", "sin", "cos", "erf", "fmod",
                                        "isinf", "nearbyint", NULL};

/* OpenCL C builtins an expr may call (the rest of ops.yaml's C is operators). */
static const char *const cl_builtins[] = {
    "exp", "log", "tanh", "floor", "ceil", "pow", "sqrt", "log1p", "expm1", "sin", "cos",
    "erf", "erfc", "fmod", "isinf", "isnan", "isfinite", "nearbyint", "rint", "round", "trunc",
    "fabs", "fmin", "fmax", "atan", "asin", "acos", "atan2", "sinh", "cosh", "tan", "asinh",
    "acosh", "atanh", "lgamma", "tgamma", "exp2", "log2", "log10", "cbrt", "hypot",
    "copysign", "signbit",
    "LTC_WRAP_U", /* ltc_kernel.h's wrapping integer arithmetic; the preamble defines it */
    "ltc_clamp_int", /* ltc_kernel.h's clamp of an integer; so does it */
    NULL};

static bool is_ident(char ch) {
    return ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch >= '0' && ch <= '9');
}

static bool expr_calls(const char *e, const char *fn) {
    size_t n = strlen(fn);
    for (const char *p = e; (p = strstr(p, fn)); p += n)
        if ((p == e || !is_ident(p[-1])) && !is_ident(p[n])) return true;
    return false;
}

/* The expr of an elementwise node, or NULL when the node is not lowered as elementwise. */
const char *lw_ew_expr(const ltc_node *n) {
    switch (n->op) {
    case LTC_OP_TO: return n->n_operands == 1 ? "x" : NULL;
    case LTC_OP_ONES: return "1";
    case LTC_OP_ZEROS:
    case LTC_OP_EMPTY: return "0"; /* empty is zeros, as on the CPU */
    case LTC_OP_FULL: return n->n_operands == 1 ? "x" : NULL;
    case LTC_OP_CLONE:
    case LTC_OP_CONTIGUOUS: return NULL; /* aliases */
    default: break;
    }
    if (n->n_outputs != 1) return NULL;
    ltc_dtype cdt = n->n_operands ? n->operands[0].node->shapes[n->operands[0].index].dtype
                                  : n->shapes[0].dtype;
    bool out_bool = false;
    const char *probe = ltc_op_expr(n->op, false, &out_bool);
    if (!probe) return NULL;
    if (!out_bool) cdt = n->shapes[0].dtype;
    bool integer = !ltc_dtype_is_float(cdt);
    /* integer // and % must raise on a zero divisor (ltc_kernel_int_div_check): host steps */
    if (integer && ltc_op_int_div(n->op)) return NULL;
    const char *e = ltc_op_expr(n->op, integer, NULL);
    if (integer)
        for (int i = 0; float_fns[i]; i++)
            if (expr_calls(e, float_fns[i])) return NULL;
    /* every function the expr calls must be an OpenCL C builtin (the CPU's own helpers,
     * ltc_math_*, are not): else the op runs through the fallback */
    for (const char *p = e; *p; p++) {
        if (!is_ident(*p) || (p > e && is_ident(p[-1])) || (*p >= '0' && *p <= '9')) continue;
        const char *q = p;
        while (is_ident(*q)) q++;
        const char *r = q;
        while (*r == ' ') r++;
        if (*r == '(') {
            bool known = false;
            for (int i = 0; cl_builtins[i] && !known; i++)
                known = strlen(cl_builtins[i]) == (size_t)(q - p) &&
                        !strncmp(cl_builtins[i], p, (size_t)(q - p));
            if (!known) return NULL;
        }
        p = q - 1;
    }
    return e;
}

bool lw_same_dims(const ltc_shape *a, const ltc_shape *b) {
    if (a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->dims[d] != b->dims[d]) return false;
    return true;
}

typedef struct group {
    const ltc_shape *out;
    int id;       /* stamps w->ew_stamp of the nodes already computed in this kernel */
    ocl_sb stmts; /* one `T vN = ...;` per node of the group, operands first */
    int n_leaves;
    int leaf_slot[16];
    char leaf_kind[16]; /* 's' same size, 'o' one element, 'b' broadcast */
} group;

static void put_literal(ocl_sb *b, double v) {
    if (isnan(v)) ocl_sb_printf(b, "NAN");
    else if (isinf(v)) ocl_sb_printf(b, v > 0 ? "INFINITY" : "(-INFINITY)");
    else {
        char t[64];
        snprintf(t, sizeof t, "%.17g", v);
        if (!strpbrk(t, ".e")) strcat(t, ".0");
        ocl_sb_printf(b, "(%s)", t);
    }
}

static ltc_status ew_stmt(lw *w, int ni, group *g);

/* Appends operand k of node n as an expression: inlined nodes recurse, others are leaves. */
static ltc_status ew_operand(lw *w, const ltc_node *n, int k, group *g, ocl_sb *e) {
    const ltc_node *o = n->operands[k].node;
    int oi = o->index;
    if (w->inlined[oi] && n->operands[k].index == 0) {
        ltc_status st = ew_stmt(w, oi, g);
        if (!st) ocl_sb_printf(e, "v%d", oi);
        return st;
    }
    int slot = w->slot_of[oi] + n->operands[k].index;
    const ltc_shape *s = &w->c->slots[slot].shape;
    int li = -1;
    for (int i = 0; i < g->n_leaves; i++)
        if (g->leaf_slot[i] == slot) li = i;
    if (li < 0) {
        if (g->n_leaves == 16)
            return ltc_errorf(LTC_ERR_BACKEND, "opencl: a fused kernel with over 16 operands");
        li = g->n_leaves++;
        g->leaf_slot[li] = slot;
        g->leaf_kind[li] = lw_same_dims(s, g->out) ? 's' : ltc_shape_numel(s) == 1 ? 'o' : 'b';
    }
    ocl_sb_printf(e, "L%d", li);
    return LTC_OK;
}

/* Emits `T vN = <expr>;` for node ni into the group's statements (its operands' first),
 * once per kernel: an operand named several times by an expr is computed once. */
static ltc_status ew_stmt(lw *w, int ni, group *g) {
    if (w->ew_stamp[ni] == g->id) return LTC_OK;
    ocl_sb ebuf = {0}, *e = &ebuf;
    const ltc_node *n = w->ctx->post_order[ni];
    const char *x = lw_ew_expr(n);
    ltc_dtype odt = n->shapes[0].dtype;
    int n_ai = 0;
    const ltc_attr_info *ai = ltc_op_attrs(n->op, &n_ai);
    if (odt == LTC_BOOL) ocl_sb_printf(e, "((uchar)((");
    else ocl_sb_printf(e, "((%s)(", ocl_ctype(odt));
    if (n->op == LTC_OP_SCALAR_TENSOR && n->n_attrs > 0) {
        put_literal(e, n->attrs[0].kind == LTC_ATTR_FLOAT ? n->attrs[0].f : (double)n->attrs[0].i);
        x = "";
    }
    for (const char *p = x; *p;) {
        if (is_ident(*p) && !(*p >= '0' && *p <= '9') && (p == x || !is_ident(p[-1]))) {
            const char *q = p;
            while (is_ident(*q)) q++;
            size_t len = (size_t)(q - p);
            ltc_status st = LTC_OK;
            bool done = false;
            if (len == 1 && (*p == 'x' || *p == 'y' || *p == 'z')) {
                int k = *p - 'x';
                if (k >= n->n_operands) {
                    free(ebuf.s);
                    return ltc_errorf(LTC_ERR_BACKEND, "opencl: %s: expr names operand %c",
                                      ltc_op_name(n->op), *p);
                }
                st = ew_operand(w, n, k, g, e);
                done = true;
            }
            for (int a = 0; a < n_ai && a < n->n_attrs && !done; a++) {
                if (strlen(ai[a].name) != len || strncmp(ai[a].name, p, len)) continue;
                const ltc_attr *at = &n->attrs[a];
                put_literal(e, at->kind == LTC_ATTR_FLOAT ? at->f : (double)at->i);
                done = true;
            }
            if (st) {
                free(ebuf.s);
                return st;
            }
            /* float32 exp: the preamble's ltc_expf (kernels.c) */
            if (!done && odt == LTC_F32 && len == 3 && !strncmp(p, "exp", 3) && *q == '(') {
                ocl_sb_printf(e, "ltc_expf");
                done = true;
            }
            if (!done) ocl_sb_printf(e, "%.*s", (int)len, p);
            p = q;
        } else if (*p >= '0' && *p <= '9') { /* a number: copy whole (1e-5, 0.5f) */
            const char *q = p;
            while (is_ident(*q) || *q == '.' ||
                   ((*q == '-' || *q == '+') && (q[-1] == 'e' || q[-1] == 'E')))
                q++;
            ocl_sb_printf(e, "%.*s", (int)(q - p), p);
            p = q;
        } else {
            ocl_sb_printf(e, "%c", *p++);
        }
    }
    ocl_sb_printf(e, odt == LTC_BOOL ? ") != 0))" : "))");
    if (e->oom) {
        free(ebuf.s);
        return lw_nomem();
    }
    ocl_sb_printf(&g->stmts, "    %s v%d = %s;\n", ocl_ctype(odt), ni, ebuf.s);
    free(ebuf.s);
    w->ew_stamp[ni] = g->id;
    return g->stmts.oom ? lw_nomem() : LTC_OK;
}

/* One kernel for the elementwise group rooted at node ni, writing slot out. */
ltc_status lw_lower_ew(lw *w, int ni, int out) {
    const ltc_node *n = w->ctx->post_order[ni];
    group g = {.out = &n->shapes[0], .id = ++w->ew_groups};
    ltc_status st = ew_stmt(w, ni, &g);
    if (st) {
        free(g.stmts.s);
        return st;
    }
    int r = g.out->ndim;
    ocl_sb b = {0};
    ocl_sb_printf(&b, "__kernel void " KNAME "(__global %s *out", ocl_ctype(g.out->dtype));
    for (int i = 0; i < g.n_leaves; i++)
        ocl_sb_printf(&b, ", __global const %s *in%d",
                      ocl_ctype(w->c->slots[g.leaf_slot[i]].shape.dtype), i);
    ocl_sb_printf(&b, ", long n");
    bool any_b = false;
    for (int i = 0; i < g.n_leaves; i++) any_b |= g.leaf_kind[i] == 'b';
    if (any_b)
        for (int d = 0; d < r; d++) ocl_sb_printf(&b, ", long d%d", d);
    for (int i = 0; i < g.n_leaves; i++)
        if (g.leaf_kind[i] == 'b')
            for (int d = 0; d < r; d++) ocl_sb_printf(&b, ", long s%d_%d", i, d);
    ocl_sb_printf(&b, ") {\n    long i = get_global_id(0);\n    if (i >= n) return;\n");
    if (any_b) {
        ocl_sb_printf(&b, "    long rest = i, c;\n");
        for (int l = 0; l < g.n_leaves; l++)
            if (g.leaf_kind[l] == 'b') ocl_sb_printf(&b, "    long o%d = 0;\n", l);
        for (int d = r - 1; d >= 0; d--) {
            ocl_sb_printf(&b, "    c = rest %% d%d; rest /= d%d;", d, d);
            for (int l = 0; l < g.n_leaves; l++)
                if (g.leaf_kind[l] == 'b') ocl_sb_printf(&b, " o%d += c * s%d_%d;", l, l, d);
            ocl_sb_printf(&b, "\n");
        }
    }
    for (int l = 0; l < g.n_leaves; l++) {
        const char *t = ocl_ctype(w->c->slots[g.leaf_slot[l]].shape.dtype);
        if (g.leaf_kind[l] == 's') ocl_sb_printf(&b, "    %s L%d = in%d[i];\n", t, l, l);
        else if (g.leaf_kind[l] == 'o') ocl_sb_printf(&b, "    %s L%d = in%d[0];\n", t, l, l);
        else ocl_sb_printf(&b, "    %s L%d = in%d[o%d];\n", t, l, l, l);
    }
    ocl_sb_printf(&b, "%s    out[i] = v%d;\n}\n\n", g.stmts.s, ni);
    free(g.stmts.s);
    int k = lw_add_kernel(w, &b);
    if (k < 0) return lw_nomem();
    int n_args = 2 + g.n_leaves + (any_b ? r : 0);
    for (int l = 0; l < g.n_leaves; l++) n_args += g.leaf_kind[l] == 'b' ? r : 0;
    if (n_args > OCL_MAX_ARGS)
        return ltc_errorf(LTC_ERR_BACKEND, "opencl: %s: a fused kernel needs %d arguments (at "
                          "most %d)", ltc_op_name(n->op), n_args, OCL_MAX_ARGS);
    ocl_step *s = lw_new_step(w, OCL_STEP_KERNEL, n->op, out);
    if (!s) return lw_nomem();
    s->kernel = k;
    s->global = (size_t)ltc_shape_numel(g.out);
    lw_arg_buf(s, 'o', out);
    for (int l = 0; l < g.n_leaves; l++) lw_arg_buf(s, 'b', g.leaf_slot[l]);
    lw_arg_long(s, (int64_t)s->global);
    if (any_b)
        for (int d = 0; d < r; d++) lw_arg_long(s, g.out->dims[d]);
    for (int l = 0; l < g.n_leaves; l++) {
        if (g.leaf_kind[l] != 'b') continue;
        const ltc_shape *ls = &w->c->slots[g.leaf_slot[l]].shape;
        int off = r - ls->ndim;
        int64_t stride = 1, strides[LTC_MAX_DIMS] = {0};
        for (int d = ls->ndim - 1; d >= 0; d--) {
            strides[d + off] = ls->dims[d] == 1 ? 0 : stride;
            stride *= ls->dims[d];
        }
        for (int d = 0; d < r; d++) lw_arg_long(s, strides[d]);
    }
    return LTC_OK;
}

