/*
 * emit_lua.c - the generated Lua binding (lua_ops.c): one function per op that checks
 * every argument first (raising before anything is allocated), then converts operands,
 * calls the C entry, releases and pushes the results; a dispatcher per overloaded name;
 * and the function and method tables.
 */
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* Most entries of a Tensor[] argument (as the C entries allow). */
#define MAX_LIST 64

/* Emits phase 1's check of one argument: a local holding its value (or position). */
static void emit_check_arg(strbuf *b, const gen_op *op, int i, const char *fname) {
    const gen_arg *a = &op->args[i];
    const char *nm = a->name, *def = a->def_text;
    bool has_def = a->def == DEF_INT || a->def == DEF_FLOAT;
    switch (a->type) {
    case ARG_TENSOR:
    case ARG_SCALAR:
        if (a->generator) /* nil: the default generator (the C entry gets NULL) */
            sb_printf(b, "    const int p_%s = arg++;\n    if (!lua_isnoneornil(L, p_%s)) "
                         "ltcL_checkoperand(L, p_%s, \"%s\");\n", nm, nm, nm, fname);
        else
            sb_printf(b, "    const int p_%s = arg++;\n    ltcL_checkoperand(L, p_%s, \"%s\");\n",
                      nm, nm, fname);
        break;
    case ARG_TENSOR_LIST:
        sb_printf(b, "    const int p_%s = arg++;\n    ltcL_checklist(L, p_%s, \"%s\");\n", nm, nm,
                  fname);
        break;
    case ARG_INTS: {
        if (a->fixed_len) { /* int[N]: a number or a table of 1 or N; defaults as written */
            sb_printf(b, "    int64_t %s[%d];\n    const int n_%s = %d;\n", nm, a->fixed_len, nm,
                      a->fixed_len);
            if (a->def == DEF_ARG)
                sb_printf(b, "    if (!ltcL_checkfixedints(L, arg++, %s, %d, false, 0, \"%s\", "
                             "\"%s\"))\n        memcpy(%s, %s, sizeof %s);\n",
                          nm, a->fixed_len, fname, nm, nm, a->def_text, nm);
            else if (a->def == DEF_INT)
                sb_printf(b, "    ltcL_checkfixedints(L, arg++, %s, %d, true, %s, \"%s\", \"%s\");\n",
                          nm, a->fixed_len, a->def_text, fname, nm);
            else
                sb_printf(b, "    if (!ltcL_checkfixedints(L, arg, %s, %d, false, 0, \"%s\", \"%s\"))\n"
                             "        luaL_error(L, \"%s: bad argument #%%d '%s' (an integer or a "
                             "table of %d integers expected, got nil)\", arg);\n    arg++;\n",
                          nm, a->fixed_len, fname, nm, fname, nm, a->fixed_len);
            break;
        }
        /* a run of integers only when nothing after it could be mistaken for one */
        bool varargs = true;
        for (int j = i + 1; j < op->n_args; j++)
            varargs &= arg_is_optional(&op->args[j]) || op->args[j].type == ARG_DTYPE;
        sb_printf(b, "    int64_t %s[LTC_MAX_DIMS];\n"
                     "    const int n_%s = ltcL_checkints(L, &arg, %s, %s, \"%s\");\n",
                  nm, nm, nm, varargs ? "true" : "false", fname);
        break;
    }
    case ARG_INT:
    case ARG_INT_OPT:
        if (arg_leads_default(op, i)) { /* left out when the next place holds c's table */
            sb_printf(b, "    int64_t %s = lua_type(L, arg + 1) == LUA_TTABLE ? %s\n"
                         "        : ltcL_optint(L, arg++, %s, \"%s\");\n",
                      nm, def, def, fname);
            break;
        }
        if (a->type == ARG_INT && !has_def) {
            sb_printf(b, "    int64_t %s = ltcL_checkint(L, arg++, \"%s\");\n", nm, fname);
            break;
        }
        /* an optional int just before a dtype is left out by a dtype name in its place
         * (eye(3, "float64"), as zeros(2, 3, "float64") ends its sizes with one) */
        if (i + 1 < op->n_args &&
            (op->args[i + 1].type == ARG_DTYPE || op->args[i + 1].type == ARG_DTYPE_OPT))
            sb_printf(b, "    int64_t %s = lua_type(L, arg) == LUA_TSTRING ? %s\n"
                         "        : ltcL_optint(L, arg++, %s, \"%s\");\n",
                      nm, has_def ? def : "LTC_NONE", has_def ? def : "LTC_NONE", fname);
        else
            sb_printf(b, "    int64_t %s = ltcL_optint(L, arg++, %s, \"%s\");\n", nm,
                      has_def ? def : "LTC_NONE", fname);
        break;
    case ARG_INDEX:
    case ARG_DIM:
    case ARG_DIM_OPT:
        if (has_def)
            sb_printf(b, "    int64_t %s = opt_dim(L, arg++, %s, \"%s\");\n", nm, def, fname);
        else
            sb_printf(b, "    int64_t %s = ltcL_checkdim(L, arg++, %s, \"%s\");\n", nm,
                      a->type == ARG_DIM_OPT ? "true" : "false", fname);
        break;
    case ARG_FLOAT:
    case ARG_FLOAT_OPT:
        if (has_def || a->type == ARG_FLOAT_OPT)
            sb_printf(b, "    double %s = ltcL_optnum(L, arg++, %s, \"%s\");\n", nm,
                      has_def ? def : "NAN", fname);
        else sb_printf(b, "    double %s = ltcL_checknum(L, arg++, \"%s\");\n", nm, fname);
        break;
    case ARG_BOOL:
        if (a->def == DEF_ABSENT) sb_printf(b, "    bool %s = check_bool(L, arg++, \"%s\");\n", nm, fname);
        else sb_printf(b, "    bool %s = opt_bool(L, arg++, %s, \"%s\");\n", nm,
                       a->def == DEF_TRUE ? "true" : "false", fname);
        break;
    case ARG_DTYPE:
    case ARG_DTYPE_OPT:
        sb_printf(b, "    ltc_dtype %s = ltcL_checkdtype(L, arg++, %s, \"%s\");\n", nm,
                  a->type == ARG_DTYPE_OPT ? "true" : "false", fname);
        break;
    default: break;
    }
}

/* The name of the static function of one op. */
static void fn_name(strbuf *b, const gen_op *op, bool overloaded) {
    sb_printf(b, "bind_%s%s", overloaded ? "ov_" : "", op->cname);
}

/* Schema position (1-based) of the last argument that must be given, 0 if none. */
static int n_required(const gen_op *op) {
    int n = 0;
    for (int i = 0; i < op->n_args; i++)
        if (!arg_is_optional(&op->args[i])) n = i + 1;
    return n;
}

/* Emits `static const char *const <var>[]`: op's argument names, for keyword tables. */
static void emit_kw_names(strbuf *b, const gen_op *op, const char *var) {
    sb_printf(b, "static const char *const %s[] = {", var);
    for (int i = 0; i < op->n_args; i++) sb_printf(b, "\"%s\", ", op->args[i].name);
    sb_puts(b, "NULL};\n");
}

/* Emits one op's binding. The entry of a name with one overload first hands a keyword table
 * to ltcL_kwcall (ltc_kwargs.c) with its argument names; dispatchers do so for overloads. */
static void emit_binding(strbuf *b, const gen_op *op, bool overloaded) {
    const char *fname = op->base_name, *list = NULL;
    int n_ops = op_n_operands(op);
    strbuf name = {0};
    fn_name(&name, op, overloaded);
    sb_puts(b, "\n");
    if (!overloaded) {
        strbuf var = {0};
        sb_printf(&var, "kwn_%s", op->cname);
        sb_printf(b, "static int %s(lua_State *L);\n", name.s);
        emit_kw_names(b, op, var.s);
        sb_printf(b, "static const ltcL_kwoverload kw_%s[] = {{%s, %s, %d}};\n", op->cname,
                  name.s, var.s, n_required(op));
        sb_free(&var);
    }
    emit_op_comment(b, op, false);
    sb_printf(b, "static int %s(lua_State *L) {\n", name.s);
    if (!overloaded)
        sb_printf(b, "    if (ltcL_haskeywords(L)) return ltcL_kwcall(L, kw_%s, 1, \"%s\");\n",
                  op->cname, fname);
    if (op->n_args) sb_puts(b, "    int arg = 1;\n");
    sb_free(&name);
    for (int i = 0; i < op->n_args; i++) {
        emit_check_arg(b, op, i, fname);
        if (op->args[i].type == ARG_TENSOR_LIST) list = op->args[i].name;
    }
    /* nothing but nils after the schema's arguments */
    sb_printf(b, "    ltcL_checknoextra(L, %s, \"%s\");\n", op->n_args ? "arg" : "1", fname);
    if (list) {
        /* the first allocation, after every check that could raise */
        sb_printf(b, "    ltc_tensor *%s[%d];\n", list, MAX_LIST);
        sb_printf(b, "    const int n_%s = ltcL_checkoperands(L, p_%s, %s, %d, \"%s\");\n", list,
                  list, list, MAX_LIST, fname);
    }
    if (n_ops) {
        sb_printf(b, "    ltc_tensor *ops[%d] = {NULL", n_ops);
        for (int k = 1; k < n_ops; k++) sb_puts(b, ", NULL");
        sb_puts(b, "};\n");
    }
    sb_printf(b, "    ltc_tensor *outs[%d] = {NULL", op->n_rets);
    for (int k = 1; k < op->n_rets; k++) sb_puts(b, ", NULL");
    sb_puts(b, "};\n");
    sb_printf(b, "    ltc_status st = %s;\n", n_ops ? "LTC_ERR_NOMEM" : "LTC_OK");
    int k = 0;
    for (int i = 0; i < op->n_args; i++) {
        const gen_arg *a = &op->args[i];
        if (!arg_is_operand(a->type)) continue;
        if (a->generator)
            sb_printf(b, "    if (!lua_isnoneornil(L, p_%s) && !(ops[%d] = ltcL_operand_once(L, "
                         "p_%s)))\n        goto cleanup;\n", a->name, k, a->name);
        else
            sb_printf(b, "    if (!(ops[%d] = ltcL_operand_once(L, p_%s))) goto cleanup;\n", k,
                      a->name);
        k++;
    }
    strbuf head = {0}, args = {0};
    sb_printf(&head, "st = ltc_%s(", op->cname);
    k = 0;
    for (int i = 0; i < op->n_args; i++) {
        const gen_arg *a = &op->args[i];
        if (arg_is_operand(a->type)) sb_printf(&args, "ops[%d], ", k++);
        else if (a->type == ARG_TENSOR_LIST || a->type == ARG_INTS)
            sb_printf(&args, "%s, n_%s, ", a->name, a->name);
        else sb_printf(&args, "%s, ", a->name);
    }
    sb_puts(&args, "outs");
    sb_call(b, "    ", head.s, args.s, ");");
    sb_free(&head);
    sb_free(&args);
    if (n_ops) sb_puts(b, "cleanup:\n");
    if (n_ops) sb_printf(b, "    ltcL_release(ops, %d);\n", n_ops);
    if (list) sb_printf(b, "    ltcL_release(%s, n_%s);\n", list, list);
    sb_puts(b, "    if (st != LTC_OK) return ltcL_error(L);\n");
    for (k = 0; k < op->n_rets; k++) sb_printf(b, "    ltcL_pushtensor(L, outs[%d]);\n", k);
    sb_printf(b, "    return %d;\n}\n", op->n_rets);
}

/* Number of ops of other names, and of composites, that are also overloads of `base`
 * (`overload_of:`). */
static int n_extra_overloads(const gen_model *m, const char *base) {
    int n = model_composite_overloads(m, base, NULL, 0);
    for (int i = 0; i < m->n_ops; i++)
        n += m->ops[i].overload_of && !strcmp(m->ops[i].overload_of, base);
    return n;
}

/* Emits the binding of a composite overload (`overload_of:` on a composite entry): its
 * keywords, from the table after its positional arguments, in their places, then the Lua
 * function its file registered as core._overloads["<full name>"] (ltc_args.c). */
static void emit_composite_binding(strbuf *b, const gen_composite *c) {
    char *cname = cg_c_name(c->full_name, false);
    sb_printf(b, "\n/* %s\n * A composite (%s), reached by the table of its keywords as argument "
                 "#%d. */\nstatic int bind_kw_%s(lua_State *L) {\n"
                 "    static const char *const keywords[] = {",
              c->schema, c->impl, c->n_positional + 1, cname);
    for (int k = c->n_positional; k < c->n_args; k++) sb_printf(b, "\"%s\", ", c->arg_names[k]);
    sb_printf(b, "NULL};\n    ltcL_checknoextra(L, %d, \"%s\");\n"
                 "    ltcL_keywords(L, %d, keywords, \"%s\");\n"
                 "    return ltcL_call_overload(L, \"%s\", \"%s\");\n}\n",
              c->n_positional + 2, c->overload_of, c->n_positional + 1, c->overload_of,
              c->full_name, c->overload_of);
    free(cname);
}

/* Whether op's base name has a dispatcher (op's binding is then bind_ov_<op>). */
static bool op_overloaded(const gen_model *m, const gen_op *op) {
    int n = n_extra_overloads(m, op->base_name);
    for (int i = 0; i < m->n_ops; i++)
        n += op_has_entry(&m->ops[i]) && !strcmp(m->ops[i].base_name, op->base_name);
    return n > 1;
}

/* Emits the dispatcher of the overloads m->ops[first .. first+count-1] (one base name), and
 * of the ops that name it in `overload_of:` (after the name's own among equals). */
static void emit_dispatcher(strbuf *b, const gen_model *m, int first, int count) {
    const char *base = m->ops[first].base_name;
    int extra = n_extra_overloads(m, base);
    const gen_op **order = cg_calloc((size_t)(count + extra), sizeof *order);
    int n = 0;
    for (int i = first; i < first + count; i++)
        if (op_has_entry(&m->ops[i])) order[n++] = &m->ops[i];
    for (int i = 0; i < m->n_ops; i++) {
        const gen_op *op = &m->ops[i];
        if (!op->overload_of || strcmp(op->overload_of, base)) continue;
        order[n++] = op;
        strbuf name = {0};
        fn_name(&name, op, op_overloaded(m, op));
        sb_printf(b, "\nstatic int %s(lua_State *L); /* %s, also %s's overload */\n", name.s,
                  op->full_name, base);
        sb_free(&name);
    }
    const gen_composite *kw = NULL; /* tried first: a table where its keywords go */
    if (model_composite_overloads(m, base, &kw, 1)) emit_composite_binding(b, kw);
    /* keyword tables (ltc_kwargs.c): the overloads in ops.yaml's order */
    for (int i = 0; i < n; i++) {
        strbuf var = {0};
        sb_printf(&var, "kwd_%s_%d", base, i);
        emit_kw_names(b, order[i], var.s);
        sb_free(&var);
    }
    sb_printf(b, "static const ltcL_kwoverload kwd_%s[] = {\n", base);
    for (int i = 0; i < n; i++) {
        strbuf name = {0};
        fn_name(&name, order[i], op_overloaded(m, order[i]));
        sb_printf(b, "    {%s, kwd_%s_%d, %d},\n", name.s, base, i, n_required(order[i]));
        sb_free(&name);
    }
    sb_puts(b, "};\n");
    /* decreasing required count; stable (full-name order) among equals */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && n_required(order[j]) > n_required(order[j - 1]); j--) {
            const gen_op *t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    sb_printf(b, "\n/* %s: ", order[0]->base_name);
    if (kw) sb_printf(b, "%s (a table at #%d), ", kw->full_name, kw->n_positional + 1);
    for (int i = 0; i < n; i++) sb_printf(b, "%s%s", i ? ", " : "", order[i]->full_name);
    sb_printf(b, ", tried in this order. */\nstatic int bind_%s(lua_State *L) {\n"
                 "    const int top = lua_gettop(L);\n", order[0]->base_name);
    if (kw) {
        char *cname = cg_c_name(kw->full_name, false);
        sb_printf(b, "    if (top >= %d && lua_type(L, %d) == LUA_TTABLE) return bind_kw_%s(L);\n",
                  kw->n_positional + 1, kw->n_positional + 1, cname);
        free(cname);
    } else if (n_required(order[0]) == 0) sb_puts(b, "    (void)top;\n");
    sb_printf(b, "    if (ltcL_haskeywords(L)) return ltcL_kwcall(L, kwd_%s, %d, \"%s\");\n", base,
              n, base);
    for (int i = 0; i < n; i++) {
        strbuf name = {0};
        fn_name(&name, order[i], op_overloaded(m, order[i]));
        int r = n_required(order[i]);
        /* an overload without the Tensor argument the previous one was chosen by takes a nil
         * there as leaving it out (PyTorch's `Tensor? bias=None`): the rest shift down */
        int q = i ? n_required(order[i - 1]) : 0;
        if (i && op_drops_tensor(order[i - 1], order[i], q))
            sb_printf(b, "    if (top >= %d) lua_remove(L, %d);\n", q, q);
        /* the next overload requiring as many arguments, a Tensor where this one takes a
         * number (scaled_dot_product_attention's .dropout and .mask): told apart by type */
        arg_type tr = r ? order[i]->args[r - 1].type : ARG_TENSOR;
        bool by_type = i + 1 < n && r && n_required(order[i + 1]) == r &&
                       order[i + 1]->args[r - 1].type == ARG_TENSOR &&
                       (tr == ARG_FLOAT || tr == ARG_INT || tr == ARG_FLOAT_OPT || tr == ARG_INT_OPT ||
                        tr == ARG_DIM || tr == ARG_DIM_OPT || tr == ARG_INDEX);
        if (i == n - 1) sb_printf(b, "    return %s(L);\n}\n", name.s);
        else if (r == 0) sb_printf(b, "    return %s(L);\n}\n", name.s);
        else if (by_type)
            sb_printf(b, "    if (top >= %d && lua_type(L, %d) == LUA_TNUMBER) return %s(L);\n", r,
                      r, name.s);
        else sb_printf(b, "    if (top >= %d && !lua_isnil(L, %d)) return %s(L);\n", r, r, name.s);
        sb_free(&name);
        if (r == 0) break;
    }
    free(order);
}

/* Number of ops with a Lua binding sharing m->ops[i]'s base name, from i on. */
static int group_size(const gen_model *m, int i, int *n_entries) {
    int n = 0;
    *n_entries = 0;
    while (i + n < m->n_ops && !strcmp(m->ops[i + n].base_name, m->ops[i].base_name)) {
        *n_entries += op_has_entry(&m->ops[i + n]);
        n++;
    }
    if (*n_entries) *n_entries += n_extra_overloads(m, m->ops[i].base_name);
    return n;
}

/* True if every overload in the group takes `Tensor self` first (a method). */
static bool group_is_method(const gen_model *m, int first, int count) {
    for (int i = first; i < first + count; i++) {
        const gen_op *op = &m->ops[i];
        if (!op_has_entry(op)) continue;
        if (op->n_args < 1 || op->args[0].type != ARG_TENSOR || strcmp(op->args[0].name, "self"))
            return false;
    }
    return true;
}

void emit_lua_c(const gen_model *m, const gen_options *o, strbuf *b) {
    emit_banner(b, o, "lua_ops.c",
                "The Lua binding of every op: check all arguments (raising before anything is "
                "allocated), convert the operands, call the C entry, release, raise on error, "
                "push the results. Overloads sharing a name are tried in order of decreasing "
                "count of required arguments.", false);
    sb_puts(b, "#include <math.h>\n#include <stdbool.h>\n#include <string.h>\n\n#include \"ltc_ir.h\"\n"
               "#include \"ltc_lua.h\"\n\n");
    sb_puts(b, "/* A required bool argument (true or false). */\n"
               "static inline bool check_bool(lua_State *L, int arg, const char *fname) {\n"
               "    if (!lua_isboolean(L, arg))\n"
               "        luaL_error(L, \"%s: bad argument #%d (boolean expected, got %s)\", fname, arg,\n"
               "                   luaL_typename(L, arg));\n"
               "    return lua_toboolean(L, arg);\n}\n\n");
    sb_puts(b, "/* A bool argument (true or false; `def` when nil or absent). */\n"
               "static inline bool opt_bool(lua_State *L, int arg, bool def, const char *fname) {\n"
               "    if (lua_isnoneornil(L, arg)) return def;\n"
               "    if (!lua_isboolean(L, arg))\n"
               "        luaL_error(L, \"%s: bad argument #%d (boolean expected, got %s)\", fname, arg,\n"
               "                   luaL_typename(L, arg));\n"
               "    return lua_toboolean(L, arg);\n}\n\n"
               "/* A dim or index argument; `def` when nil or absent. */\n"
               "static inline int64_t opt_dim(lua_State *L, int arg, int64_t def, "
               "const char *fname) {\n"
               "    return lua_isnoneornil(L, arg) ? def : ltcL_checkdim(L, arg, false, fname);"
               "\n}\n");
    for (int i = 0, n; i < m->n_ops; i += n) {
        int entries;
        n = group_size(m, i, &entries);
        for (int j = i; j < i + n; j++)
            if (op_has_entry(&m->ops[j])) emit_binding(b, &m->ops[j], entries > 1);
        if (entries > 1) emit_dispatcher(b, m, i, n);
    }
    for (int pass = 0; pass < 2; pass++) {
        sb_printf(b, "\nconst luaL_Reg ltc_lua_%s[] = {\n", pass ? "methods" : "functions");
        for (int i = 0, n; i < m->n_ops; i += n) {
            int entries;
            n = group_size(m, i, &entries);
            if (!entries || (pass && !group_is_method(m, i, n))) continue;
            int j = i;
            while (!op_has_entry(&m->ops[j])) j++;
            const gen_op *op = &m->ops[j];
            strbuf name = {0};
            if (entries > 1) sb_printf(&name, "bind_%s", op->base_name);
            else fn_name(&name, op, false);
            sb_printf(b, "    {\"%s\", %s},\n", op->base_name, name.s);
            sb_free(&name);
        }
        sb_puts(b, "    {NULL, NULL},\n};\n");
    }
    /* ops.yaml's `operator:` keys: metamethod -> the op's binding (ltc_lua.c sets them on the
     * tensor metatable), and its `inplace: true` keys: the names that get t:<name>_(...)
     * (lua/ltc/init.lua makes them from core.inplace_ops) */
    sb_puts(b, "\nconst luaL_Reg ltc_lua_operators[] = {\n");
    for (int i = 0, n; i < m->n_ops; i += n) {
        int entries;
        n = group_size(m, i, &entries);
        for (int j = i; j < i + n; j++) {
            const gen_op *op = &m->ops[j];
            if (!op->lua_operator || !op_has_entry(op)) continue;
            strbuf name = {0};
            if (entries > 1) sb_printf(&name, "bind_%s", op->base_name);
            else fn_name(&name, op, false);
            sb_printf(b, "    {\"%s\", %s},\n", op->lua_operator, name.s);
            sb_free(&name);
        }
    }
    sb_puts(b, "    {NULL, NULL},\n};\n\nconst char *const ltc_lua_inplace[] = {\n");
    for (int i = 0, n; i < m->n_ops; i += n) {
        int entries;
        n = group_size(m, i, &entries);
        bool inplace = false;
        for (int j = i; j < i + n; j++) inplace |= m->ops[j].inplace && op_has_entry(&m->ops[j]);
        if (inplace) sb_printf(b, "    \"%s\",\n", m->ops[i].base_name);
    }
    /* composite ops with `inplace: true` (their Lua functions are core's too) */
    for (int i = 0; i < m->n_composites; i++)
        if (m->composites[i].inplace) sb_printf(b, "    \"%s\",\n", m->composites[i].base_name);
    sb_puts(b, "    NULL,\n};\n");
    /* every registered name's keyword tables (core._keywords, ltc_kwargs.c) */
    sb_puts(b, "\nconst ltcL_kwentry ltc_lua_keywords[] = {\n");
    for (int i = 0, n; i < m->n_ops; i += n) {
        int entries;
        n = group_size(m, i, &entries);
        if (!entries) continue;
        int j = i;
        while (!op_has_entry(&m->ops[j])) j++;
        if (entries > 1)
            sb_printf(b, "    {\"%s\", kwd_%s, (int)(sizeof kwd_%s / sizeof kwd_%s[0])},\n",
                      m->ops[j].base_name, m->ops[j].base_name, m->ops[j].base_name,
                      m->ops[j].base_name);
        else sb_printf(b, "    {\"%s\", kw_%s, 1},\n", m->ops[j].base_name, m->ops[j].cname);
    }
    sb_puts(b, "    {NULL, NULL, 0},\n};\n");
}
