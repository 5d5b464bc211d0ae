/*
 * emit_doc.c - the op reference (ops.md): one section per op, sorted by full name, with
 * its Lua signature, schema, doc, shape function, dtype rule and how the backend lowers it.
 */
#include <stdio.h>
#include <string.h>

#include "model.h"

/* The Lua spelling of an argument's default ("nil", "false", "1"). */
static const char *lua_default(const gen_arg *a) {
    switch (a->def) {
    case DEF_NONE: return "nil";
    case DEF_TRUE: return "true";
    case DEF_FALSE: return "false";
    case DEF_INT:
    case DEF_FLOAT:
    case DEF_ARG: return a->def_text;
    default: return arg_is_nullable(a->type) ? "nil" : NULL;
    }
}

/* Appends the Lua argument list from schema argument `from` on: "dim=nil, keepdim=false". */
static void lua_args(strbuf *b, const gen_op *op, int from) {
    for (int i = from; i < op->n_args; i++) {
        const char *def = lua_default(&op->args[i]);
        sb_printf(b, "%s%s%s%s", i > from ? ", " : "", op->args[i].name, def ? "=" : "",
                  def ? def : "");
    }
}

/* The description of an argument's type as Lua sees it. */
static const char *lua_type(const gen_arg *a) {
    switch (a->type) {
    case ARG_TENSOR: return "a tensor (a number is taken as a 0-d tensor)";
    case ARG_TENSOR_LIST: return "a table of tensors or numbers";
    case ARG_SCALAR: return "a tensor or a number";
    case ARG_INT: case ARG_INT_OPT: return "an integer";
    case ARG_INTS: {
        static char pair[64];
        snprintf(pair, sizeof pair, "a number (every entry) or a table of 1 or %d integers",
                 a->fixed_len);
        return a->fixed_len ? pair : "a table of integers";
    }
    case ARG_INDEX: return "an index (1-based; negative counts from the end)";
    case ARG_DIM: case ARG_DIM_OPT: return "a dim (1-based; negative counts from the end)";
    case ARG_FLOAT: case ARG_FLOAT_OPT: return "a number";
    case ARG_BOOL: return "a boolean";
    default: return "a dtype name (\"float32\", \"float64\", \"float16\", \"bfloat16\", "
                    "\"int64\", \"int32\", \"int16\", \"int8\", \"uint8\", \"bool\")";
    }
}

/* A composite overload's arguments after self, its keywords as the table that ends them:
 * "other, {rounding_mode = ...}". */
static void keyword_call(strbuf *b, const gen_composite *c) {
    for (int k = 1; k < c->n_positional; k++) sb_printf(b, "%s, ", c->arg_names[k]);
    sb_puts(b, "{");
    for (int k = c->n_positional; k < c->n_args; k++)
        sb_printf(b, "%s%s = ...", k > c->n_positional ? ", " : "", c->arg_names[k]);
    sb_puts(b, "}");
}

/* Emits one op's section. */
static void emit_section(strbuf *b, const gen_model *m, const gen_op *op,
                         const gen_options *o) {
    static const char *const dtype_rules[] = {
        "none: operands are used as they are; the shape function checks their dtypes",
        "common: operands are promoted to their common dtype (PyTorch result_type; a Lua "
        "number is a weak scalar)",
        "float: operands are promoted to their common dtype, then integers and bool become "
        "float32",
    };
    sb_printf(b, "\n## %s\n\n", op->full_name);
    if (op_has_entry(op)) {
        bool method = op->n_args > 0 && op->args[0].type == ARG_TENSOR &&
                      !strcmp(op->args[0].name, "self");
        sb_printf(b, "`ltc.%s(", op->base_name);
        lua_args(b, op, 0);
        sb_puts(b, ")`");
        if (method) {
            sb_printf(b, " / `t:%s(", op->base_name);
            lua_args(b, op, 1);
            sb_puts(b, ")`");
        }
        sb_puts(b, "\n\n");
    } else {
        sb_puts(b, "Internal IR node (non_native): no Lua function and no C entry.\n\n");
    }
    sb_printf(b, "Schema: `%s`\n\n", op->schema);
    if (op->doc) sb_printf(b, "%s\n\n", op->doc);
    if (op_has_entry(op)) {
        for (int i = 0; i < op->n_args; i++) {
            const gen_arg *a = &op->args[i];
            if (a->generator)
                sb_printf(b, "- `%s`: a generator state (int64 [2] {seed, offset}), or nil for the "
                             "default generator", a->name);
            else sb_printf(b, "- `%s`: %s", a->name, lua_type(a));
            if (a->type == ARG_INTS && !a->fixed_len) {
                bool varargs = true;
                for (int j = i + 1; j < op->n_args; j++)
                    varargs &= arg_is_optional(&op->args[j]) || op->args[j].type == ARG_DTYPE;
                if (varargs) sb_puts(b, ", or the integers as separate arguments");
            }
            if (arg_is_nullable(a->type)) sb_puts(b, ", or nil");
            if (arg_leads_default(op, i))
                sb_printf(b, "; left out (%s) when `%s` is followed by `%s` as a table: "
                             "`ltc.%s(%s, {...})`", a->def_text, op->args[i + 1].name,
                          op->args[i + 2].name, op->base_name, op->args[i + 1].name);
            sb_puts(b, "\n");
        }
        if (op->n_rets == 1) {
            sb_puts(b, "- Returns: a tensor\n");
        } else {
            sb_printf(b, "- Returns: %d tensors (", op->n_rets);
            for (int i = 0; i < op->n_rets; i++)
                sb_printf(b, "%s`%s`", i ? ", " : "", op->ret_names[i]);
            sb_puts(b, ")\n");
        }
        sb_printf(b, "- Shape rule: `%s` (%s)\n", op->shape, o->shape_header);
        sb_printf(b, "- Dtype rule: %s\n", dtype_rules[op->dtypes]);
        if (op->random) sb_puts(b, "- Random: draws from the default generator\n");
        if (op->random_count)
            sb_printf(b, "- Random: draws from its `Generator?` argument, or when that is nil from "
                         "the default generator, advanced by `%s` numbers\n", op->random_count);
        if (op->inplace) sb_printf(b, "- In place: `t:%s_(...)`\n", op->base_name);
        if (op->lua_operator) sb_printf(b, "- Lua operator: `%s`\n", op->lua_operator);
        if (op->overload_of)
            sb_printf(b, "- Also an overload of `%s`: `ltc.%s` and `t:%s` with these arguments\n",
                      op->overload_of, op->overload_of, op->overload_of);
        const gen_composite *kw = NULL;
        if (model_composite_overloads(m, op->base_name, &kw, 1)) {
            strbuf call = {0};
            keyword_call(&call, kw);
            sb_printf(b, "- With keywords: `t:%s(%s)`, the composite `%s`\n", op->base_name,
                      call.s, kw->full_name);
            sb_free(&call);
        }
    }
    sb_printf(b, "- %s backend: ", o->backend_name);
    switch (op->lower) {
    case LOWER_FULL:
        sb_printf(b, "generated elementwise kernel (full_codegen): `%s`", op->expr);
        if (op->expr_int) sb_printf(b, "; integers: `%s`", op->expr_int);
        sb_puts(b, "\n");
        break;
    case LOWER_SUPPORTED:
        sb_printf(b, "hand-written kernel `ltc_%s_kernel_%s` (supported)\n", o->backend_name,
                  op->cname);
        break;
    default:
        sb_puts(b, op->non_native ? "handled by the executor (non_native)\n"
                                  : "not lowered; runs on the reference backend (fallback)\n");
        break;
    }
    if (o->device_name && !op->non_native)
        sb_printf(b, "- %s backend: %s\n", o->device_name,
                  op->device_lowered ? "lowered on the device"
                                     : "eager fallback (runs on the host, counted)");
    if (o->ref_impl_path && op_has_entry(op)) {
        if (op->expr) sb_puts(b, "- ref backend: generated per-element loop from the expr\n");
        else sb_printf(b, "- ref backend: hand-written kernel `ltc_ref_kernel_%s`\n", op->cname);
    }
}

void emit_doc_md(const gen_model *m, const gen_options *o, strbuf *b) {
    sb_puts(b, "# ltc op reference\n\n");
    sb_printf(b, "Generated by ltcgen from `%s` and `%s`; do not edit.\n\n", o->source,
              o->backend_yaml);
    sb_puts(b, "Dims and indices are 1-based; negative ones count from the end. A method form "
               "`t:op(...)` exists for ops whose first argument is `self`; overloads sharing a "
               "name are told apart by their arguments.\n\nOps: ");
    for (int i = 0; i < m->n_ops; i++) sb_printf(b, "%s`%s`", i ? ", " : "", m->ops[i].full_name);
    sb_puts(b, ".\n");
    if (o->device_name) { /* which backend runs each op, at a glance */
        sb_printf(b, "\n| op | %s | %s |\n|---|---|---|\n", o->backend_name, o->device_name);
        for (int i = 0; i < m->n_ops; i++) {
            const gen_op *op = &m->ops[i];
            if (op->non_native) continue;
            sb_printf(b, "| `%s` | %s | %s |\n", op->full_name,
                      op->lower == LOWER_FULL || op->lower == LOWER_SUPPORTED ? "yes" : "fallback",
                      op->device_lowered ? "yes" : "fallback");
        }
    }
    for (int i = 0; i < m->n_ops; i++) emit_section(b, m, &m->ops[i], o);
    if (!m->n_composites) return;
    sb_puts(b, "\n# Composite ops\n\nWritten in Lua over the ops above (PyTorch's "
               "CompositeImplicitAutograd): no IR node and no kernel of their own; autograd, "
               "fusion and every backend see the ops they call.\n\nOps: ");
    for (int i = 0; i < m->n_composites; i++)
        sb_printf(b, "%s`%s`", i ? ", " : "", m->composites[i].full_name);
    sb_puts(b, ".\n");
    for (int i = 0; i < m->n_composites; i++) {
        const gen_composite *c = &m->composites[i];
        sb_printf(b, "\n## %s\n\nSchema: `%s`\n\n", c->full_name, c->schema);
        if (c->doc) sb_printf(b, "%s\n\n", c->doc);
        sb_printf(b, "- Composite: `%s`\n", c->impl);
        if (c->overload_of) {
            strbuf call = {0};
            keyword_call(&call, c);
            sb_printf(b, "- An overload of `%s`: `ltc.%s(%s, %s)` and `t:%s(%s)`, picked by the "
                         "table of keywords\n", c->overload_of, c->overload_of,
                      c->arg_names[0], call.s, c->overload_of, call.s);
            sb_free(&call);
        }
    }
}
