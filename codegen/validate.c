/*
 * validate.c - checks of the loaded model against the rest of the tree: shape functions
 * declared in the shape header, hand-written kernels present in the implementation path,
 * and what the generated code needs of each op (an expr for full_codegen ops, a tensor to
 * wrap dims against, ...). Each error says what to add and where.
 */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* The text of every *.c file directly in `dir`, concatenated; NULL if dir cannot be read. */
static char *read_impl_sources(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return NULL;
    strbuf all = {0};
    sb_puts(&all, "");
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 3 || strcmp(e->d_name + n - 2, ".c") != 0) continue;
        strbuf path = {0};
        sb_printf(&path, "%s/%s", dir, e->d_name);
        char *text = cg_read_file(path.s, NULL);
        if (text) {
            sb_puts(&all, text);
            sb_puts(&all, "\n");
            free(text);
        }
        sb_free(&path);
    }
    closedir(d);
    return all.s;
}

/* Bit mask of the operand variables (x = 1, y = 2, z = 4) an expr uses. */
static unsigned expr_vars(const char *e) {
    unsigned mask = 0;
    while (*e) {
        if (isalpha((unsigned char)*e) || *e == '_' || isdigit((unsigned char)*e)) {
            const char *s = e;
            while (isalnum((unsigned char)*e) || *e == '_' || *e == '.') e++;
            if (e - s == 1 && *s >= 'x' && *s <= 'z') mask |= 1u << (*s - 'x');
        } else {
            e++;
        }
    }
    return mask;
}

/* Checks what the generated elementwise kernel of a full_codegen op needs. */
static bool check_full_codegen(const gen_op *op) {
    bool ok = true;
    int n = op_n_operands(op);
    if (!op->expr) {
        cg_error("full_codegen op '%s' has no expr in ops.yaml (%s:%d:%d): add `expr:` with "
                 "its elementwise value as a C expression of x, y, z",
                 op->full_name, op->file, op->line, op->col);
        ok = false;
    }
    bool others_ok = true; /* besides operands, only attributes an expr may name */
    for (int i = 0; i < op->n_args; i++)
        others_ok &= arg_is_operand(op->args[i].type) || ew_is_attr(&op->args[i]);
    if (n < 1 || n > 3 || !others_ok || op->n_rets != 1 || op->random) {
        cg_error("full_codegen op '%s' must take 1 to 3 Tensor/Scalar arguments (then only "
                 "float, int or bool attributes), return one Tensor and not be random (list "
                 "it under supported instead)", op->full_name);
        ok = false;
    }
    if (n > 1 && op->dtypes == DTYPES_NONE) {
        cg_error("full_codegen op '%s' has %d operands but `dtypes: none`; its kernel needs "
                 "them promoted to one dtype (common or float)", op->full_name, n);
        ok = false;
    }
    const char *exprs[2] = {op->expr, op->expr_int};
    for (int i = 0; i < 2; i++) {
        if (!exprs[i] || n < 1 || n > 3) continue;
        unsigned extra = expr_vars(exprs[i]) & ~((1u << n) - 1);
        if (extra) {
            cg_error("full_codegen op '%s': %s '%s' uses %c but the op has %d operand(s)",
                     op->full_name, i ? "expr_int" : "expr", exprs[i],
                     'x' + __builtin_ctz(extra), n);
            ok = false;
        }
    }
    return ok;
}

/* Checks that the generated entry can be built from the schema. */
static bool check_entry(const gen_op *op) {
    bool ok = true;
    int n_lists = 0, first_tensor = -1;
    for (int i = 0; i < op->n_args; i++) {
        arg_type t = op->args[i].type;
        n_lists += t == ARG_TENSOR_LIST;
        if (first_tensor < 0 && (t == ARG_TENSOR || t == ARG_TENSOR_LIST)) first_tensor = i;
        if ((t == ARG_DIM || t == ARG_DIM_OPT) && first_tensor < 0) {
            cg_error_at(op->file, op->line, op->col,
                        "op '%s': dim argument '%s' needs a Tensor or Tensor[] argument before "
                        "it to be wrapped against", op->full_name, op->args[i].name);
            ok = false;
        }
    }
    if (n_lists > 1) {
        cg_error_at(op->file, op->line, op->col, "op '%s' has more than one Tensor[] argument",
                    op->full_name);
        ok = false;
    }
    return ok;
}

/* Every op of ops.yaml needs a reference kernel: generated from its expr, or hand-written
 * as ltc_ref_kernel_<op> in the reference implementation path. */
static bool check_ref_kernels(const gen_model *m, const gen_options *o) {
    char *impl = read_impl_sources(o->ref_impl_path);
    if (!impl) {
        cg_error("cannot read the reference implementation path %s", o->ref_impl_path);
        return false;
    }
    bool ok = true;
    for (int i = 0; i < m->n_ops; i++) {
        const gen_op *op = &m->ops[i];
        if (op->non_native || !op_has_entry(op) || op->expr) continue;
        strbuf fn = {0};
        sb_printf(&fn, "ltc_ref_kernel_%s", op->cname);
        if (!cg_has_call(impl, fn.s)) {
            size_t n = strlen(o->ref_impl_path);
            cg_error("op '%s' has no reference kernel: define ltc_status %s(const "
                     "ltc_kernel_args *a) in %s%s (or give the op an `expr` in ops.yaml)",
                     op->full_name, fn.s, o->ref_impl_path,
                     n && o->ref_impl_path[n - 1] == '/' ? "" : "/");
            ok = false;
        }
        sb_free(&fn);
    }
    free(impl);
    return ok;
}

bool model_validate(const gen_model *m, const gen_options *o) {
    bool ok = true;
    if (strcmp(m->backend, o->backend_name) != 0) {
        cg_error("%s is for backend '%s', not '%s' (--backend-name)", o->backend_yaml, m->backend,
                 o->backend_name);
        ok = false;
    }
    char *header = o->backend_only ? NULL : cg_read_file(o->shape_header, NULL);
    if (!header && !o->backend_only) {
        cg_error("cannot read the shape header %s", o->shape_header);
        ok = false;
    }
    char *impl = read_impl_sources(o->impl_path);
    if (!impl) {
        cg_error("cannot read the implementation path %s", o->impl_path);
        ok = false;
    }
    for (int i = 0; i < m->n_ops; i++) {
        const gen_op *op = &m->ops[i];
        if (!op_has_entry(op)) continue;
        if (!o->backend_only) ok &= check_entry(op);
        if (op->lower == LOWER_FULL || (o->ref_impl_path && op->expr))
            ok &= check_full_codegen(op);
        if (header && !cg_has_call(header, op->shape)) {
            strbuf decl = {0};
            op_shape_decl(op, &decl);
            cg_error("%sop '%s' has no shape function; add to %s:\n    %s",
                     op->lower == LOWER_FULL ? "full_codegen " : "", op->full_name,
                     o->shape_header, decl.s);
            sb_free(&decl);
            ok = false;
        }
        if (impl && op->lower == LOWER_SUPPORTED) {
            strbuf fn = {0};
            sb_printf(&fn, "ltc_%s_kernel_%s", o->backend_name, op->cname);
            if (!cg_has_call(impl, fn.s)) {
                size_t n = strlen(o->impl_path);
                cg_error("supported op '%s' has no hand-written kernel: define ltc_status "
                         "%s(const ltc_kernel_args *a) in %s%s", op->full_name, fn.s,
                         o->impl_path, n && o->impl_path[n - 1] == '/' ? "" : "/");
                ok = false;
            }
            sb_free(&fn);
        }
    }
    if (o->ref_impl_path) ok &= check_ref_kernels(m, o);
    if (!o->backend_only) ok &= validate_derivatives(m);
    free(header);
    free(impl);
    return ok;
}
