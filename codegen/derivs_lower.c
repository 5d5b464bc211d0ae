/*
 * derivs_lower.c - one op's derivative formulas lowered to a C backward function (formula.h),
 * for emit_derivs_c.c.
 *
 * The tree of each formula (formula.c) is lowered with static types (tensor, int, float, bool,
 * int list, dtype, tensor list, string) to calls of the op entry points of ltc_ops.h and of the
 * helpers of src/core/grad_formulas.h (`F.name` is ltc_grad_<name>). A Lua number used as a
 * tensor operand becomes a weak 0-d scalar, int64 for a Lua integer and float64 for a float, as
 * the Lua binding makes it; arithmetic between operands that may both be Lua numbers goes
 * through ltc_grad_arith, which keeps Lua's number arithmetic. Every tensor made is a temporary
 * t[k] of the generated function, released on every path; the gradients are moved (or
 * retained) into g.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formula.h"

/* snprintf, remembering a truncation (the op's translation then fails: a C expression
 * longer than the buffers here is beyond what this translator is meant for). */
static bool truncated;
static void fmtc(char *dst, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(dst, n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= n) truncated = true;
}

/* ---- values and the lowering context --------------------------------------------------- */

typedef enum { V_NIL, V_TENSOR, V_INT, V_FLOAT, V_BOOL, V_INTS, V_DTYPE, V_TLIST, V_STR } vtype;

static const char *const vtype_names[] = {"nil",      "tensor", "int",         "float", "bool",
                                          "int list", "dtype",  "tensor list", "string"};

/* A lowered value: a C expression (of type ltc_tensor *, int64_t, double, bool, ltc_dtype),
 * or for lists a pointer expression c and a count n. temp >= 0 when the tensor is t[temp]. */
typedef struct val {
    vtype ty;
    char c[200], n[120];
    int temp;
    bool maybe_num; /* a tensor that may hold a Lua number (a weak scalar): an argument, a
                       number made a tensor, or number arithmetic */
} val;

typedef struct ctx {
    const gen_model *m;
    const gen_op *op;
    strbuf body, decls, cleanup;
    int indent, n_temps, n_locals;
    /* the M helper calls made so far (their arguments' C text) and the local m<k> of each */
    char *memo[8];
    int memo_local[8], n_memo;
    bool used_try, failed;
    char why[200];
} ctx;

static void fail(ctx *x, const char *fmt, const char *arg) {
    if (!x->failed) fmtc(x->why, sizeof x->why, fmt, arg ? arg : "");
    x->failed = true;
}

static void line(ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(ctx *x, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    for (int i = 0; i < x->indent; i++)
        sb_puts(&x->body, "    ");
    sb_puts(&x->body, buf);
    sb_puts(&x->body, "\n");
}

static val vmake(vtype ty, const char *c) {
    val v = {.ty = ty, .temp = -1};
    fmtc(v.c, sizeof v.c, "%s", c);
    return v;
}

static int new_temp(ctx *x) {
    return x->n_temps++;
}

static val temp_val(int k) {
    val v = {.ty = V_TENSOR, .temp = k};
    fmtc(v.c, sizeof v.c, "t[%d]", k);
    return v;
}

/* `TRY(call);` with the call's text given as printf arguments. */
static void try_call(ctx *x, const char *call) {
    line(x, "TRY(%s);", call);
    x->used_try = true;
}

/* v as a tensor operand: a number becomes a weak 0-d scalar. */
static bool to_tensor(ctx *x, val *v) {
    if (v->ty == V_TENSOR) return true;
    if (v->ty != V_INT && v->ty != V_FLOAT) {
        fail(x, "a %s used as a tensor", vtype_names[v->ty]);
        return false;
    }
    int k = new_temp(x);
    char call[300];
    fmtc(call, sizeof call, "%s(%s, true, &t[%d])",
         v->ty == V_INT ? "ltc_tensor_from_int" : "ltc_tensor_from_float", v->c, k);
    try_call(x, call);
    *v = temp_val(k);
    v->maybe_num = true;
    return true;
}

static bool is_num(const val *v) {
    return v->ty == V_INT || v->ty == V_FLOAT;
}

/* ---- names ------------------------------------------------------------------------------ */

static int arg_index(const gen_op *op, const char *name) {
    for (int i = 0; i < op->n_args; i++)
        if (!strcmp(op->args[i].name, name)) return i;
    return -1;
}

static val lower_name(ctx *x, const char *name) {
    const gen_op *op = x->op;
    char c[200];
    if (!strcmp(name, "grad")) return vmake(V_TENSOR, "grads[0]");
    /* grad_<output>: the gradient of a later output, grads[r] (never NULL: the engine passes
     * zeros for an output that got none); an argument of that name wins */
    for (int r = 1; r < op->n_rets && arg_index(op, name) < 0; r++)
        if (op->ret_names[r] && !strncmp(name, "grad_", 5) && !strcmp(op->ret_names[r], name + 5)) {
            fmtc(c, sizeof c, "grads[%d]", r);
            return vmake(V_TENSOR, c);
        }
    if (op->n_rets == 1 && !strcmp(name, "result")) return vmake(V_TENSOR, "results[0]");
    for (int r = 0; r < op->n_rets; r++)
        if (op->ret_names[r] && !strcmp(op->ret_names[r], name)) {
            fmtc(c, sizeof c, "results[%d]", r);
            return vmake(V_TENSOR, c);
        }
    int i = arg_index(op, name);
    if (i < 0) {
        fail(x, "the name '%s'", name);
        return vmake(V_NIL, "");
    }
    const gen_arg *a = &op->args[i];
    bool none = a->def == DEF_NONE;
    val v = {.temp = -1};
    switch (a->type) {
    case ARG_TENSOR:
    case ARG_SCALAR:
        v.ty = V_TENSOR;
        v.maybe_num = true;
        fmtc(v.c, sizeof v.c, "a[%d].t", i);
        break;
    case ARG_TENSOR_LIST:
        v.ty = V_TLIST;
        fmtc(v.c, sizeof v.c, "a[%d].list", i);
        fmtc(v.n, sizeof v.n, "a[%d].n", i);
        break;
    case ARG_INTS:
        v.ty = V_INTS;
        fmtc(v.c, sizeof v.c, "a[%d].ints", i);
        fmtc(v.n, sizeof v.n, "a[%d].n", i);
        break;
    case ARG_FLOAT:
    case ARG_FLOAT_OPT:
        v.ty = V_FLOAT;
        if (none || a->type == ARG_FLOAT_OPT)
            fmtc(v.c, sizeof v.c, "(a[%d].kind == LTC_AG_NONE ? NAN : a[%d].f)", i, i);
        else
            fmtc(v.c, sizeof v.c, "a[%d].f", i);
        break;
    case ARG_BOOL:
        v.ty = V_BOOL;
        fmtc(v.c, sizeof v.c, "a[%d].b", i);
        break;
    case ARG_DTYPE:
    case ARG_DTYPE_OPT:
        v.ty = V_DTYPE;
        fmtc(v.c, sizeof v.c, "(a[%d].kind == LTC_AG_NONE ? LTC_DTYPE_NONE : (ltc_dtype)a[%d].i)",
             i, i);
        break;
    default: /* int, int?, index, dim, dim? */
        v.ty = V_INT;
        if (none || a->type == ARG_INT_OPT || a->type == ARG_DIM_OPT)
            fmtc(v.c, sizeof v.c, "(a[%d].kind == LTC_AG_NONE ? LTC_NONE : a[%d].i)", i, i);
        else
            fmtc(v.c, sizeof v.c, "a[%d].i", i);
        break;
    }
    return v;
}

/* ---- calls of op entry points ------------------------------------------------------------ */

static int required_count(const gen_op *op) {
    int r = 0;
    for (int a = 0; a < op->n_args; a++)
        if (!arg_is_optional(&op->args[a])) r = a + 1;
    return r;
}

/* The overload the Lua dispatcher picks for n arguments: of the ops with an entry and this
 * base name, tried by decreasing count of required arguments, the first that n satisfies
 * (else the last), as lua/ltc/autograd.lua's pick. */
static const gen_op *pick_overload(const gen_model *m, const char *base, int n) {
    const gen_op *best = NULL, *last = NULL;
    int best_r = -1, last_r = 1 << 30;
    for (int i = 0; i < m->n_ops; i++) {
        const gen_op *op = &m->ops[i];
        if (strcmp(op->base_name, base) != 0 || !op_has_entry(op)) continue;
        int r = required_count(op);
        if ((r == 0 || n >= r) && r > best_r) best = op, best_r = r;
        if (r < last_r) last = op, last_r = r;
    }
    return best ? best : last;
}

/* Appends the C argument for schema argument `a` from value v (NULL: the default). */
static bool op_arg(ctx *x, const gen_arg *a, val *v, strbuf *args) {
    if (!v || v->ty == V_NIL) {
        if (a->def == DEF_ABSENT && !(v && arg_is_nullable(a->type))) {
            fail(x, "no value for the required argument '%s'", a->name);
            return false;
        }
        switch (a->type) {
        case ARG_TENSOR:
        case ARG_SCALAR:
            sb_puts(args, "NULL, ");
            return true;
        case ARG_TENSOR_LIST:
        case ARG_INTS:
            if (a->fixed_len) { /* its default lives in the Lua binding: say it in the formula */
                fail(x, "no value for the int[N] argument '%s'", a->name);
                return false;
            }
            sb_puts(args, "NULL, 0, ");
            return true;
        case ARG_FLOAT:
        case ARG_FLOAT_OPT:
            sb_printf(args, "%s, ", a->def == DEF_INT || a->def == DEF_FLOAT ? a->def_text : "NAN");
            return true;
        case ARG_BOOL:
            sb_printf(args, "%s, ", a->def == DEF_TRUE ? "true" : "false");
            return true;
        case ARG_DTYPE:
        case ARG_DTYPE_OPT:
            sb_puts(args, "LTC_DTYPE_NONE, ");
            return true;
        default:
            sb_printf(args, "%s, ", a->def == DEF_INT ? a->def_text : "LTC_NONE");
            return true;
        }
    }
    switch (a->type) {
    case ARG_TENSOR:
    case ARG_SCALAR:
        if (!to_tensor(x, v)) return false;
        sb_printf(args, "%s, ", v->c);
        return true;
    case ARG_TENSOR_LIST:
    case ARG_INTS:
        if (v->ty != (a->type == ARG_INTS ? V_INTS : V_TLIST)) break;
        sb_printf(args, "%s, %s, ", v->c, v->n);
        return true;
    case ARG_FLOAT:
    case ARG_FLOAT_OPT:
        if (!is_num(v)) break;
        sb_printf(args, "(double)(%s), ", v->c);
        return true;
    case ARG_BOOL:
        if (v->ty != V_BOOL) break;
        sb_printf(args, "%s, ", v->c);
        return true;
    case ARG_DTYPE:
    case ARG_DTYPE_OPT:
        if (v->ty != V_DTYPE) break;
        sb_printf(args, "%s, ", v->c);
        return true;
    default:
        if (v->ty != V_INT) break;
        sb_printf(args, "%s, ", v->c);
        return true;
    }
    fail(x, "a value of the wrong type for '%s'", a->name);
    return false;
}

static val lower(ctx *x, node *e);

/* Lowers the call of op `name` with already lowered arguments vs[0..n). */
static val call_op(ctx *x, const char *name, val *vs, int n) {
    const gen_op *op = pick_overload(x->m, name, n);
    if (!op) {
        fail(x, "the unknown op or method '%s'", name);
        return vmake(V_NIL, "");
    }
    /* a nil Tensor where an overload leaves it out (conv2d's bias): that overload, the later
     * arguments shifted down, as the Lua dispatcher does */
    int q = required_count(op);
    for (int i = 0; q >= 1 && q <= n && vs[q - 1].ty == V_NIL && i < x->m->n_ops; i++) {
        const gen_op *b = &x->m->ops[i];
        if (strcmp(b->base_name, name) || !op_has_entry(b) || !op_drops_tensor(op, b, q)) continue;
        memmove(&vs[q - 1], &vs[q], (size_t)(n - q) * sizeof *vs);
        n--;
        op = b;
        break;
    }
    if (op->n_rets != 1) {
        fail(x, "the multi-output op '%s'", name);
        return vmake(V_NIL, "");
    }
    if (n > op->n_args) {
        fail(x, "too many arguments for '%s'", name);
        return vmake(V_NIL, "");
    }
    strbuf args = {0};
    bool ok = true;
    for (int i = 0; i < op->n_args && ok; i++)
        ok = op_arg(x, &op->args[i], i < n ? &vs[i] : NULL, &args);
    val r = vmake(V_NIL, "");
    if (ok) {
        int k = new_temp(x);
        char *call = cg_calloc(1, args.len + 200);
        sprintf(call, "ltc_%s(%s&t[%d])", op->cname, args.s ? args.s : "", k);
        try_call(x, call);
        free(call);
        r = temp_val(k);
    }
    sb_free(&args);
    return r;
}

/* ---- the F helpers (src/core/grad_formulas.h) --------------------------------------------- */

/* Parameter codes: T tensor, I int64, F double, B bool, L int list (ptr, n), S tensor list
 * (ptr, n), W which ('self', 'weight', 'bias'). Returns: T a tensor, S a tensor list of the
 * S parameter's length, L an int list as long as the L parameter (inverse_permutation), M
 * one of several tensors that one call computes together: the last parameter (an integer
 * literal, not passed) picks which, and the other formulas of the op that make the same call
 * get theirs from the first call (one fused backward op in the graph, not one per input). */
static const struct helper {
    const char *name, *params;
    char ret;
} helpers[] = {
    {"zeros_like", "T", 'T'},
    {"unsqueeze", "TI", 'T'},
    {"expand_as", "TT", 'T'},
    {"sum_to", "TL", 'T'},
    {"positions", "TI", 'T'},
    {"inverse_permutation", "LI", 'L'},
    {"trunc", "T", 'T'},
    {"silu_backward", "TT", 'T'},
    {"clamp_backward", "TTFF", 'T'},
    {"minmax_backward", "TTTB", 'T'},
    {"pow_backward_self", "TTT", 'T'},
    {"pow_backward_exponent", "TTTT", 'T'},
    {"dropout_backward", "TTTFB", 'T'},
    {"sum_backward", "TTIB", 'T'},
    {"mean_backward", "TTIB", 'T'},
    {"max_backward", "TTT", 'T'},
    {"index_dim_backward", "TTIBT", 'T'},
    {"prod_backward", "TTIBT", 'T'},
    {"var_backward", "TTIBB", 'T'},
    {"std_backward", "TTIBBT", 'T'},
    {"logsumexp_backward", "TTIBT", 'T'},
    {"norm_backward", "TTFIBT", 'T'},
    {"cumsum_backward", "TI", 'T'},
    {"softmax_backward", "TTI", 'T'},
    {"log_softmax_backward", "TTI", 'T'},
    {"matmul_backward", "TTTI", 'T'},
    {"linear_weight_backward", "TT", 'T'},
    {"linear_backward", "TTTI", 'M'},
    {"conv2d_bias_backward", "T", 'T'},
    {"cat_backward", "TSI", 'S'},
    {"stack_backward", "TSI", 'S'},
    {"repeat_backward", "TTL", 'T'},
    {"layer_norm_backward", "TTLTFI", 'M'},
    {"batch_norm_backward", "TTTTTBFW", 'T'},
    {"attention_backward", "TTTTTTBFTI", 'M'},
    {"attention_mask_backward", "TTTTTTBFT", 'T'},
    {"attention_dropout_backward", "TTTTTTBFFTTI", 'M'},
    {"attention_dropout_mask_backward", "TTTTTTBFFT", 'T'},
    {"lstm_layer_backward", "TTTTTTTTBI", 'M'},
    {"gru_layer_backward", "TTTTTBI", 'M'},
};

#define MEMO_MAX 8 /* the most tensors an M helper returns */

/* The M helper call with arguments args (its C text, the last one the index): the local
 * m<k> array its tensors go to, computed once per backward function. */
static val call_multi(ctx *x, const char *name, strbuf *args, const val *index) {
    /* an integer literal is INT64_C(<digits>) */
    const char *lit = !strncmp(index->c, "INT64_C(", 8) ? index->c + 8 : "";
    if (index->ty != V_INT || !isdigit((unsigned char)lit[0]) || atoi(lit) >= MEMO_MAX) {
        fail(x, "F.%s: the last argument must be an integer literal (which result)", name);
        return vmake(V_NIL, "");
    }
    int which = atoi(lit);
    /* the call's arguments without the index */
    char *key = cg_strdup(args->s);
    char *comma = strrchr(key, ',');
    *comma = '\0';
    comma = strrchr(key, ',');
    if (comma) comma[2] = '\0';
    int m = -1;
    for (int i = 0; i < x->n_memo; i++)
        if (!strcmp(x->memo[i], key)) m = i;
    if (m >= 0) {
        free(key);
    } else if (x->n_memo == 8) {
        free(key);
        fail(x, "F.%s: too many distinct calls", name);
        return vmake(V_NIL, "");
    } else {
        m = x->n_memo++;
        x->memo[m] = key, x->memo_local[m] = x->n_locals++;
        sb_printf(&x->decls, "    ltc_tensor *m%d[%d] = {0};\n", x->memo_local[m], MEMO_MAX);
        sb_printf(&x->cleanup, "    release_all(m%d, %d);\n", x->memo_local[m], MEMO_MAX);
    }
    int k = x->memo_local[m];
    line(x, "if (!m%d[0]) TRY(ltc_grad_%s(%sm%d));", k, name, x->memo[m], k);
    x->used_try = true;
    int t = new_temp(x);
    line(x, "t[%d] = ltc_tensor_retain(m%d[%d]);", t, k, which);
    return temp_val(t);
}

static val call_helper(ctx *x, const char *name, val *vs, int n) {
    const struct helper *h = NULL;
    for (size_t i = 0; i < sizeof helpers / sizeof helpers[0]; i++)
        if (!strcmp(helpers[i].name, name)) h = &helpers[i];
    if (!h) {
        fail(x, "the helper F.%s (not in grad_formulas.h)", name);
        return vmake(V_NIL, "");
    }
    if ((int)strlen(h->params) != n) {
        fail(x, "F.%s called with another argument count", name);
        return vmake(V_NIL, "");
    }
    strbuf args = {0};
    const char *len = NULL; /* the length of the list parameter, for list results */
    for (int i = 0; i < n && !x->failed; i++) {
        val *v = &vs[i];
        switch (h->params[i]) {
        case 'T':
            if (v->ty == V_NIL)
                sb_puts(&args, "NULL, ");
            else if (to_tensor(x, v))
                sb_printf(&args, "%s, ", v->c);
            break;
        case 'I':
            if (v->ty != V_INT) fail(x, "F.%s: an int expected", name);
            sb_printf(&args, "%s, ", v->c);
            break;
        case 'F':
            if (!is_num(v)) fail(x, "F.%s: a number expected", name);
            sb_printf(&args, "(double)(%s), ", v->c);
            break;
        case 'B':
            if (v->ty != V_BOOL) fail(x, "F.%s: a bool expected", name);
            sb_printf(&args, "%s, ", v->c);
            break;
        case 'L':
        case 'S':
            if (v->ty != (h->params[i] == 'L' ? V_INTS : V_TLIST))
                fail(x, "F.%s: a list expected", name);
            sb_printf(&args, "%s, %s, ", v->c, v->n);
            len = v->n;
            break;
        case 'W':
            if (v->ty != V_STR)
                fail(x, "F.%s: a string expected", name);
            else if (!strcmp(v->c, "self"))
                sb_puts(&args, "LTC_GRAD_SELF, ");
            else if (!strcmp(v->c, "weight"))
                sb_puts(&args, "LTC_GRAD_WEIGHT, ");
            else if (!strcmp(v->c, "bias"))
                sb_puts(&args, "LTC_GRAD_BIAS, ");
            else
                fail(x, "F.%s: 'self', 'weight' or 'bias' expected", name);
            break;
        }
    }
    val r = vmake(V_NIL, "");
    if (!x->failed && h->ret == 'M') {
        r = call_multi(x, name, &args, &vs[n - 1]);
    } else if (!x->failed) {
        char *call = cg_calloc(1, args.len + 300);
        if (h->ret == 'T') {
            int k = new_temp(x);
            sprintf(call, "ltc_grad_%s(%s&t[%d])", name, args.s, k);
            r = temp_val(k);
        } else if (h->ret == 'L') {
            int k = x->n_locals++;
            sb_printf(&x->decls, "    int64_t l%d[LTC_MAX_DIMS];\n", k);
            args.s[args.len - 2] = '\0';
            sprintf(call, "ltc_grad_%s(%s, l%d)", name, args.s, k);
            r = vmake(V_INTS, "");
            fmtc(r.c, sizeof r.c, "l%d", k);
            fmtc(r.n, sizeof r.n, "%s", len);
        } else { /* a tensor list, freed with its entries unless moved into g */
            int k = x->n_locals++;
            sb_printf(&x->decls, "    ltc_tensor **s%d = NULL;\n    int n%d = 0;\n", k, k);
            sb_printf(&x->cleanup, "    release_list(s%d, n%d);\n", k, k);
            line(x, "n%d = %s;", k, len);
            line(x, "if (!(s%d = calloc((size_t)(n%d > 0 ? n%d : 1), sizeof *s%d))) {", k, k, k, k);
            line(x, "    st = ltc_errorf(LTC_ERR_NOMEM, \"%s backward: out of memory\");",
                 x->op->full_name);
            line(x, "    goto done;");
            line(x, "}");
            sprintf(call, "ltc_grad_%s(%ss%d)", name, args.s, k);
            r = vmake(V_TLIST, "");
            fmtc(r.c, sizeof r.c, "s%d", k);
            fmtc(r.n, sizeof r.n, "n%d", k);
        }
        try_call(x, call);
        free(call);
    }
    sb_free(&args);
    return r;
}

/* ---- expressions ------------------------------------------------------------------------- */

/* recv:size() / size(d) / dim() / numel() / dtype(): read from the shape. */
static bool tensor_method(ctx *x, const char *name, val *vs, int n, val *r) {
    if (strcmp(name, "size") && strcmp(name, "dim") && strcmp(name, "numel") &&
        strcmp(name, "dtype"))
        return false;
    if (vs[0].ty != V_TENSOR) {
        fail(x, "%s() of a non-tensor", name);
        return true;
    }
    const char *t = vs[0].c;
    if (!strcmp(name, "size") && n == 2) {
        if (vs[1].ty != V_INT) {
            fail(x, "size(d) with a non-int d", NULL);
            return true;
        }
        int k = x->n_locals++;
        sb_printf(&x->decls, "    int64_t i%d = 0;\n", k);
        char call[400];
        fmtc(call, sizeof call, "ltc_grad_size(%s, %s, &i%d)", t, vs[1].c, k);
        try_call(x, call);
        *r = vmake(V_INT, "");
        fmtc(r->c, sizeof r->c, "i%d", k);
        return true;
    }
    if (n != 1) {
        fail(x, "%s() with arguments", name);
        return true;
    }
    *r = vmake(V_NIL, "");
    if (!strcmp(name, "size")) {
        r->ty = V_INTS;
        fmtc(r->c, sizeof r->c, "ltc_tensor_shape(%s)->dims", t);
        fmtc(r->n, sizeof r->n, "ltc_tensor_shape(%s)->ndim", t);
    } else if (!strcmp(name, "dim")) {
        r->ty = V_INT;
        fmtc(r->c, sizeof r->c, "(int64_t)ltc_tensor_shape(%s)->ndim", t);
    } else if (!strcmp(name, "numel")) {
        r->ty = V_INT;
        fmtc(r->c, sizeof r->c, "ltc_shape_numel(ltc_tensor_shape(%s))", t);
    } else {
        r->ty = V_DTYPE;
        fmtc(r->c, sizeof r->c, "ltc_tensor_shape(%s)->dtype", t);
    }
    return true;
}

static val lower_call(ctx *x, node *e) {
    int n = e->n_args + (e->method ? 1 : 0);
    val *vs = cg_calloc((size_t)n + 1, sizeof *vs);
    int k = 0;
    if (e->method) vs[k++] = lower(x, e->a);
    for (int i = 0; i < e->n_args && !x->failed; i++)
        vs[k++] = lower(x, e->args[i]);
    val r = vmake(V_NIL, "");
    if (x->failed) {
    } else if (e->method) {
        if (!tensor_method(x, e->text, vs, n, &r)) {
            if (vs[0].ty != V_TENSOR)
                fail(x, "the method '%s' of a non-tensor", e->text);
            else
                r = call_op(x, e->text, vs, n);
        }
    } else if (!strcmp(e->a->text, "ltc")) {
        r = call_op(x, e->text, vs, n);
    } else if (!strcmp(e->a->text, "F")) {
        r = call_helper(x, e->text, vs, n);
    } else if (!strcmp(e->a->text, "math") && n == 1 && is_num(&vs[0]) &&
               (!strcmp(e->text, "log") || !strcmp(e->text, "exp") || !strcmp(e->text, "sqrt") ||
                !strcmp(e->text, "abs"))) {
        /* math.f(number): a float (math.abs of an integer stays one in Lua) */
        bool keep_int = !strcmp(e->text, "abs") && vs[0].ty == V_INT;
        r = vmake(keep_int ? V_INT : V_FLOAT, "");
        if (keep_int)
            fmtc(r.c, sizeof r.c, "((%s) < 0 ? -(%s) : (%s))", vs[0].c, vs[0].c, vs[0].c);
        else
            fmtc(r.c, sizeof r.c, "%s((double)(%s))", !strcmp(e->text, "abs") ? "fabs" : e->text,
                 vs[0].c);
    } else {
        fail(x, "a call into '%s'", e->a->text);
    }
    free(vs);
    return r;
}

/* A number operation in C with Lua's result type: int op int stays int for + - *, / and ^
 * give floats. */
static val num_binop(ctx *x, const char *op, val a, val b) {
    val r = vmake(V_NIL, "");
    bool ints = a.ty == V_INT && b.ty == V_INT;
    if (!strcmp(op, "+") || !strcmp(op, "-") || !strcmp(op, "*")) {
        r.ty = ints ? V_INT : V_FLOAT;
        if (ints)
            fmtc(r.c, sizeof r.c, "(%s %s %s)", a.c, op, b.c);
        else
            fmtc(r.c, sizeof r.c, "((double)(%s) %s (double)(%s))", a.c, op, b.c);
    } else if (!strcmp(op, "/")) {
        r.ty = V_FLOAT;
        fmtc(r.c, sizeof r.c, "((double)(%s) / (double)(%s))", a.c, b.c);
    } else if (!strcmp(op, "^")) {
        r.ty = V_FLOAT;
        fmtc(r.c, sizeof r.c, "pow((double)(%s), (double)(%s))", a.c, b.c);
    } else {
        fail(x, "the number operator '%s'", op);
    }
    return r;
}

static val lower_ternary(ctx *x, node *cond, node *yes, node *no) {
    val c = lower(x, cond);
    if (x->failed) return c;
    if (c.ty != V_BOOL) {
        fail(x, "a condition that is not a bool", NULL);
        return c;
    }
    /* the result's slot is declared before the branches; its type is known after both */
    size_t mark = x->body.len;
    int indent = x->indent;
    line(x, "if (%s) {", c.c);
    x->indent++;
    size_t yes_at = x->body.len;
    val y = lower(x, yes);
    size_t yes_end = x->body.len;
    x->indent--;
    line(x, "} else {");
    x->indent++;
    size_t no_at = x->body.len;
    val z = lower(x, no);
    size_t no_end = x->body.len;
    x->indent = indent;
    if (x->failed) return y;
    vtype ty;
    if (y.ty == V_TENSOR || z.ty == V_TENSOR)
        ty = V_TENSOR;
    else if (is_num(&y) && is_num(&z))
        ty = y.ty == V_INT && z.ty == V_INT ? V_INT : V_FLOAT;
    else if (y.ty == V_BOOL && z.ty == V_BOOL)
        ty = V_BOOL;
    else {
        fail(x, "branches of different types", NULL);
        return y;
    }
    /* rebuild the two branches with an assignment of the result at their ends */
    char *ybody = cg_strndup(x->body.s + yes_at, yes_end - yes_at);
    char *zbody = cg_strndup(x->body.s + no_at, no_end - no_at);
    x->body.len = mark;
    x->body.s[mark] = '\0';
    val r;
    int k = -1;
    if (ty == V_TENSOR) {
        k = new_temp(x);
        r = temp_val(k);
    } else {
        int l = x->n_locals++;
        sb_printf(&x->decls, "    %s v%d = 0;\n",
                  ty == V_INT     ? "int64_t"
                  : ty == V_FLOAT ? "double"
                                  : "bool",
                  l);
        r = vmake(ty, "");
        fmtc(r.c, sizeof r.c, "v%d", l);
    }
    val *br[2] = {&y, &z};
    char *bodies[2] = {ybody, zbody};
    for (int i = 0; i < 2; i++) {
        if (i == 0)
            line(x, "if (%s) {", c.c);
        else
            line(x, "} else {");
        sb_puts(&x->body, bodies[i]);
        x->indent++;
        if (ty == V_TENSOR) {
            if (!to_tensor(x, br[i])) break;
            if (br[i]->temp >= 0)
                line(x, "t[%d] = t[%d], t[%d] = NULL;", k, br[i]->temp, br[i]->temp);
            else
                line(x, "t[%d] = ltc_tensor_retain(%s);", k, br[i]->c);
        } else {
            line(x, "%s = %s;", r.c, br[i]->c);
        }
        x->indent--;
    }
    line(x, "}");
    free(ybody);
    free(zbody);
    return r;
}

static val lower(ctx *x, node *e) {
    if (x->failed) return vmake(V_NIL, "");
    switch (e->kind) {
    case K_NUM: {
        val v = vmake(e->is_int ? V_INT : V_FLOAT, e->text);
        if (e->is_int) fmtc(v.c, sizeof v.c, "INT64_C(%s)", e->text);
        return v;
    }
    case K_STR:
        return vmake(V_STR, e->text);
    case K_NIL:
        return vmake(V_NIL, "");
    case K_TRUE:
        return vmake(V_BOOL, "true");
    case K_FALSE:
        return vmake(V_BOOL, "false");
    case K_NAME:
        return lower_name(x, e->text);
    case K_INDEX: /* math.huge, math.pi */
        if (e->a->kind == K_NAME && !strcmp(e->a->text, "math") && !strcmp(e->text, "huge"))
            return vmake(V_FLOAT, "HUGE_VAL");
        if (e->a->kind == K_NAME && !strcmp(e->a->text, "math") && !strcmp(e->text, "pi"))
            return vmake(V_FLOAT, "3.141592653589793");
        fail(x, "the field '%s' outside a call", e->text);
        return vmake(V_NIL, "");
    case K_CALL:
        return lower_call(x, e);
    case K_TABLE: {
        int k = x->n_locals++;
        if (e->n_args > 8) { /* LTC_MAX_DIMS */
            fail(x, "a table of more than 8 entries", NULL);
            return vmake(V_NIL, "");
        }
        sb_printf(&x->decls, "    int64_t l%d[LTC_MAX_DIMS] = {0};\n", k);
        for (int i = 0; i < e->n_args; i++) {
            val v = lower(x, e->args[i]);
            if (x->failed) return v;
            if (v.ty != V_INT) {
                fail(x, "a table of other values than ints", NULL);
                return v;
            }
            line(x, "l%d[%d] = %s;", k, i, v.c);
        }
        val r = vmake(V_INTS, "");
        fmtc(r.c, sizeof r.c, "l%d", k);
        fmtc(r.n, sizeof r.n, "%d", e->n_args);
        return r;
    }
    case K_UNOP: {
        val v = lower(x, e->a);
        if (x->failed) return v;
        val r = vmake(v.ty, "");
        if (!strcmp(e->text, "not")) {
            if (v.ty != V_BOOL) fail(x, "not of a non-bool", NULL);
            fmtc(r.c, sizeof r.c, "(!%s)", v.c);
        } else if (is_num(&v)) {
            fmtc(r.c, sizeof r.c, "(-%s)", v.c);
        } else if (v.ty == V_TENSOR) {
            int k = new_temp(x);
            char call[300];
            fmtc(call, sizeof call, "ltc_%s(%s, &t[%d])", v.maybe_num ? "grad_neg" : "neg", v.c, k);
            try_call(x, call);
            r = temp_val(k);
            r.maybe_num = v.maybe_num;
        } else {
            fail(x, "unary minus of a %s", vtype_names[v.ty]);
        }
        return r;
    }
    case K_BINOP:
        break;
    }
    const char *op = e->text;
    if (!strcmp(op, "or") && e->a->kind == K_BINOP && !strcmp(e->a->text, "and")) {
        /* `c and X or Y`: X when c, else Y (X is never false or nil here) */
        return lower_ternary(x, e->a->a, e->a->b, e->b);
    }
    val a = lower(x, e->a);
    val b = lower(x, e->b);
    if (x->failed) return a;
    val r = vmake(V_BOOL, "");
    if (!strcmp(op, "and") || !strcmp(op, "or")) {
        if (a.ty != V_BOOL || b.ty != V_BOOL) fail(x, "'%s' of non-bools", op);
        fmtc(r.c, sizeof r.c, "(%s %s %s)", a.c, !strcmp(op, "and") ? "&&" : "||", b.c);
        return r;
    }
    static const char *const cmp[][2] = {{"==", "=="}, {"~=", "!="}, {"<=", "<="},
                                         {">=", ">="}, {"<", "<"},   {">", ">"}};
    for (size_t i = 0; i < sizeof cmp / sizeof cmp[0]; i++) {
        if (strcmp(op, cmp[i][0]) != 0) continue;
        bool same = (is_num(&a) && is_num(&b)) ||
                    (i < 2 && a.ty == b.ty && (a.ty == V_BOOL || a.ty == V_DTYPE));
        if (!same) fail(x, "the comparison '%s' of non-numbers", op);
        fmtc(r.c, sizeof r.c, "(%s %s %s)", a.c, cmp[i][1], b.c);
        return r;
    }
    if (is_num(&a) && is_num(&b)) return num_binop(x, op, a, b);
    /* operator, op, ltc_grad_arith's code */
    static const char *const arith[][3] = {
        {"+", "add", "+"},           {"-", "sub", "-"}, {"*", "mul", "*"},      {"/", "div", "/"},
        {"//", "floor_divide", "f"}, {"^", "pow", "^"}, {"%", "remainder", "%"}};
    for (size_t i = 0; i < sizeof arith / sizeof arith[0]; i++) {
        if (strcmp(op, arith[i][0]) != 0) continue;
        if (!to_tensor(x, &a) || !to_tensor(x, &b)) return a;
        int k = new_temp(x);
        char call[500];
        /* two operands that may be Lua numbers: Lua's number arithmetic when they are */
        if (a.maybe_num && b.maybe_num)
            fmtc(call, sizeof call, "ltc_grad_arith(ltc_%s, '%s', %s, %s, &t[%d])", arith[i][1],
                 arith[i][2], a.c, b.c, k);
        else
            fmtc(call, sizeof call, "ltc_%s(%s, %s, &t[%d])", arith[i][1], a.c, b.c, k);
        try_call(x, call);
        val r = temp_val(k);
        r.maybe_num = a.maybe_num && b.maybe_num;
        return r;
    }
    fail(x, "the operator '%s'", op);
    return a;
}

/* ---- one op ---------------------------------------------------------------------------- */

const char *formula_of(const gen_op *op, const char *name) {
    for (int k = 0; k < op->n_derivs; k++)
        if (!strcmp(op->deriv_inputs[k], name)) return op->deriv_exprs[k];
    return NULL;
}

/* Emits the backward function of op into out; false (why set) when a formula could not be
 * translated, and nothing is emitted. */
bool formula_emit_backward(const gen_model *m, const gen_op *op, strbuf *out, char *why,
                           size_t nwhy) {
    ctx x = {.m = m, .op = op, .indent = 1};
    truncated = false;
    for (int i = 0; i < op->n_args && !x.failed; i++) {
        const char *f = formula_of(op, op->args[i].name);
        if (!f) continue;
        char perr[200];
        node *e = formula_parse(f, perr, sizeof perr);
        if (!e) {
            fmtc(x.why, sizeof x.why, "%s: %s", op->args[i].name, perr);
            x.failed = true;
            break;
        }
        char *shown = cg_strdup(f); /* the formula in a comment: no comment end inside */
        for (char *q = shown; (q = strstr(q, "*/"));)
            q[1] = ' ';
        line(&x, "if (needs[%d]) { /* %s: %s */", i, op->args[i].name, shown);
        free(shown);
        x.indent++;
        val v = lower(&x, e);
        formula_free(e);
        if (x.failed) break;
        if (op->args[i].type == ARG_TENSOR_LIST) {
            if (v.ty != V_TLIST) {
                fail(&x, "the gradient of a list is a %s", vtype_names[v.ty]);
                break;
            }
            line(&x, "g[%d].list = %s, g[%d].n = %s;", i, v.c, i, v.n);
            line(&x, "%s = NULL;", v.c);
        } else {
            if (!to_tensor(&x, &v)) break;
            if (v.temp >= 0)
                line(&x, "g[%d].t = t[%d], t[%d] = NULL;", i, v.temp, v.temp);
            else
                line(&x, "g[%d].t = ltc_tensor_retain(%s);", i, v.c);
        }
        x.indent--;
        line(&x, "}");
    }
    if (truncated) fail(&x, "an expression too long for the translator", NULL);
    bool ok = !x.failed;
    if (ok) {
        sb_printf(out, "\n/* %s */\n", op->schema);
        int pad = (int)strlen("static ltc_status bw_(") + (int)strlen(op->cname);
        sb_printf(out,
                  "static ltc_status bw_%s(const ltc_ag_arg *a, ltc_tensor *const *results,\n"
                  "%*sltc_tensor *const *grads, const bool *needs, ltc_ag_grad *g) {\n",
                  op->cname, pad, "");
        sb_puts(out, "    ltc_status st = LTC_OK;\n");
        if (x.n_temps) sb_printf(out, "    ltc_tensor *t[%d] = {0};\n", x.n_temps);
        if (x.decls.s) sb_puts(out, x.decls.s);
        sb_puts(out, "    (void)a, (void)results, (void)grads;\n");
        sb_puts(out, x.body.s ? x.body.s : "");
        if (x.used_try) sb_puts(out, "done:\n");
        if (x.n_temps) sb_printf(out, "    release_all(t, %d);\n", x.n_temps);
        if (x.cleanup.s) sb_puts(out, x.cleanup.s);
        if (x.used_try) sb_printf(out, "    if (st != LTC_OK) clear_grads(g, %d);\n", op->n_args);
        sb_puts(out, "    return st;\n}\n");
    } else {
        fmtc(why, nwhy, "%s", x.why);
    }
    sb_free(&x.body);
    sb_free(&x.decls);
    sb_free(&x.cleanup);
    for (int i = 0; i < x.n_memo; i++)
        free(x.memo[i]);
    return ok;
}
