/*
 * validate.c - checks of the loaded model against the rest of the tree: shape functions
 * declared in the shape header and hand-written kernels defined in the implementation path,
 * each with the signature the op needs (csource.c finds real declarations, not a name in a
 * comment), and what the generated code needs of each op (an expr for full_codegen ops, a
 * tensor to wrap dims against, ...). Each error says what to add and where.
 */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csource.h"
#include "model.h"

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.c files directly in `dir`, loaded and sorted by name into *out; their count, or
 * -1 if dir cannot be read. */
static int load_impl_sources(const char *dir, c_source **out) {
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d) return -1;
    char **names = NULL;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 3 || strcmp(e->d_name + len - 2, ".c") != 0) continue;
        names = cg_realloc(names, sizeof *names * (size_t)(n + 1));
        names[n++] = cg_strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, compare_names);
    *out = cg_calloc((size_t)n + 1, sizeof **out);
    int loaded = 0;
    size_t dlen = strlen(dir);
    for (int i = 0; i < n; i++) {
        strbuf path = {0};
        sb_printf(&path, "%s%s%s", dir, dlen && dir[dlen - 1] == '/' ? "" : "/", names[i]);
        if (c_source_load(&(*out)[loaded], path.s)) loaded++;
        sb_free(&path);
        free(names[i]);
    }
    free(names);
    return loaded;
}

static void free_impl_sources(c_source *s, int n) {
    for (int i = 0; i < n; i++) c_source_free(&s[i]);
    free(s);
}

/* True if f returns ltc_status: its type is `ltc_status`, maybe after attribute or export
 * macros (`LTC_API ltc_status`). */
static bool returns_status(const c_func *f) {
    size_t n = strlen(f->ret);
    return n >= 10 && !strcmp(f->ret + n - 10, "ltc_status") && (n == 10 || f->ret[n - 11] == ' ');
}

/* The kernel convention of ltc_kernel.h: every kernel is ltc_kernel_fn. */
#define KERNEL_PARAMS "const ltc_kernel_args *a"

/* Checks that the kernel `fn` is defined in one of the n sources of `dir` with the kernel
 * signature (ltc_status fn(const ltc_kernel_args *)) and not static; a name in a comment
 * or a string, a call, or a declaration alone does not count. Reports "<subject> <missing>:
 * define ..." when there is nothing, else what is wrong with what there is and the line
 * to write. `hint` ends the message of a missing kernel. */
static bool check_kernel(const c_source *srcs, int n, const char *dir, const char *fn,
                         const char *subject, const char *missing, const char *hint) {
    size_t dlen = strlen(dir);
    const char *slash = dlen && dir[dlen - 1] == '/' ? "" : "/";
    const c_func *wrong = NULL, *stat = NULL, *decl = NULL;
    const char *wrong_path = NULL, *stat_path = NULL, *decl_path = NULL;
    bool ok = false;
    c_func **found = cg_calloc((size_t)n + 1, sizeof *found);
    int *counts = cg_calloc((size_t)n + 1, sizeof *counts);
    for (int i = 0; i < n && !ok; i++) {
        counts[i] = c_source_find(&srcs[i], fn, &found[i]);
        for (int k = 0; k < counts[i]; k++) {
            const c_func *f = &found[i][k];
            bool sig = returns_status(f) &&
                       !strcmp(f->params, "const ltc_kernel_args *");
            if (!sig) {
                if (!wrong) wrong = f, wrong_path = srcs[i].path;
            } else if (!f->definition) {
                if (!decl) decl = f, decl_path = srcs[i].path;
            } else if (f->is_static) {
                if (!stat) stat = f, stat_path = srcs[i].path;
            } else {
                ok = true;
            }
        }
    }
    if (ok) {
        /* defined as it should be */
    } else if (wrong) {
        cg_error("%s: %s at %s:%d is `%s %s(%s)`, not a kernel; define it in %s%s as:\n"
                 "    ltc_status %s(" KERNEL_PARAMS ")",
                 subject, fn, wrong_path, wrong->line, wrong->ret, fn, wrong->params, dir, slash,
                 fn);
    } else if (stat) {
        cg_error("%s: %s at %s:%d is static, out of reach of the generated kernel table; "
                 "define it without static:\n    ltc_status %s(" KERNEL_PARAMS ")",
                 subject, fn, stat_path, stat->line, fn);
    } else if (decl) {
        cg_error("%s: %s is declared at %s:%d but defined nowhere in %s%s; define it there:\n"
                 "    ltc_status %s(" KERNEL_PARAMS ")",
                 subject, fn, decl_path, decl->line, dir, slash, fn);
    } else {
        cg_error("%s %s: define ltc_status %s(" KERNEL_PARAMS ") in %s%s%s", subject, missing,
                 fn, dir, slash, hint);
    }
    for (int i = 0; i < n; i++) c_funcs_free(found[i], counts[i]);
    free(found);
    free(counts);
    return ok;
}

/* Checks that the shape header declares op's shape function with the parameter types its
 * schema gives (op_shape_decl; parameter names may differ) and returns ltc_status. A name
 * in a comment or a string, or a call, does not count. */
static bool check_shape(const c_source *header, const gen_op *op) {
    strbuf decl = {0};
    op_shape_decl(op, &decl);
    char *want = c_decl_params(decl.s);
    c_func *found;
    int n = c_source_find(header, op->shape, &found);
    bool ok = false;
    for (int k = 0; k < n && !ok; k++)
        ok = returns_status(&found[k]) && !strcmp(found[k].params, want);
    if (ok) {
        /* declared as it should be */
    } else if (n > 0) {
        cg_error("%sop '%s': %s at %s:%d is `%s %s(%s)`, not `ltc_status %s(%s)` as the "
                 "op's schema needs; declare it in %s as:\n    %s",
                 op->lower == LOWER_FULL ? "full_codegen " : "", op->full_name, op->shape,
                 header->path, found[0].line, found[0].ret, op->shape, found[0].params,
                 op->shape, want, header->path, decl.s);
    } else {
        cg_error("%sop '%s' has no shape function; add to %s:\n    %s",
                 op->lower == LOWER_FULL ? "full_codegen " : "", op->full_name, header->path,
                 decl.s);
    }
    c_funcs_free(found, n);
    free(want);
    sb_free(&decl);
    return ok;
}

/* An op's `random: <count function>` must be declared in the shape header as
 * int64_t <fn>(const ltc_shape *const *in, const ltc_shape *out): the numbers the op draws,
 * from its operand shapes (the Generator? argument's NULL) and its output shapes. */
static bool check_random_count(const c_source *header, const gen_op *op) {
    if (!op->random_count) return true;
    c_func *found;
    int n = c_source_find(header, op->random_count, &found);
    char *want = c_decl_params("int64_t f(const ltc_shape *const *in, const ltc_shape *out);");
    bool ok = false;
    for (int k = 0; k < n && !ok; k++)
        ok = !strcmp(found[k].ret, "int64_t") && !strcmp(found[k].params, want);
    free(want);
    if (!ok)
        cg_error("op '%s': random: %s needs a declaration in %s:\n    int64_t %s(const ltc_shape "
                 "*const *in, const ltc_shape *out);", op->full_name, op->random_count,
                 header->path, op->random_count);
    c_funcs_free(found, n);
    return ok;
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
    c_source *impl;
    int n_impl = load_impl_sources(o->ref_impl_path, &impl);
    if (n_impl < 0) {
        cg_error("cannot read the reference implementation path %s", o->ref_impl_path);
        return false;
    }
    bool ok = true;
    for (int i = 0; i < m->n_ops; i++) {
        const gen_op *op = &m->ops[i];
        if (op->non_native || !op_has_entry(op) || op->expr) continue;
        strbuf fn = {0}, subject = {0};
        sb_printf(&fn, "ltc_ref_kernel_%s", op->cname);
        sb_printf(&subject, "op '%s'", op->full_name);
        ok &= check_kernel(impl, n_impl, o->ref_impl_path, fn.s, subject.s,
                           "has no reference kernel", " (or give the op an `expr` in ops.yaml)");
        sb_free(&fn);
        sb_free(&subject);
    }
    free_impl_sources(impl, n_impl);
    return ok;
}

bool model_validate(const gen_model *m, const gen_options *o) {
    bool ok = true;
    if (strcmp(m->backend, o->backend_name) != 0) {
        cg_error("%s is for backend '%s', not '%s' (--backend-name)", o->backend_yaml, m->backend,
                 o->backend_name);
        ok = false;
    }
    c_source header = {0};
    if (!o->backend_only && !c_source_load(&header, o->shape_header)) {
        cg_error("cannot read the shape header %s", o->shape_header);
        ok = false;
    }
    c_source *impl;
    int n_impl = load_impl_sources(o->impl_path, &impl);
    if (n_impl < 0) {
        cg_error("cannot read the implementation path %s", o->impl_path);
        ok = false;
    }
    for (int i = 0; i < m->n_ops; i++) {
        const gen_op *op = &m->ops[i];
        if (!op_has_entry(op)) continue;
        if (!o->backend_only) ok &= check_entry(op);
        if (op->lower == LOWER_FULL || (o->ref_impl_path && op->expr))
            ok &= check_full_codegen(op);
        if (header.code) ok &= check_shape(&header, op) && check_random_count(&header, op);
        if (n_impl >= 0 && op->lower == LOWER_SUPPORTED) {
            strbuf fn = {0}, subject = {0};
            sb_printf(&fn, "ltc_%s_kernel_%s", o->backend_name, op->cname);
            sb_printf(&subject, "supported op '%s'", op->full_name);
            ok &= check_kernel(impl, n_impl, o->impl_path, fn.s, subject.s,
                               "has no hand-written kernel", "");
            sb_free(&fn);
            sb_free(&subject);
        }
    }
    if (o->ref_impl_path) ok &= check_ref_kernels(m, o);
    if (!o->backend_only) ok &= validate_derivatives(m);
    c_source_free(&header);
    if (n_impl >= 0) free_impl_sources(impl, n_impl);
    return ok;
}
