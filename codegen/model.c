/*
 * model.c - loading ops.yaml and the backend YAML (libyaml's document API) into the
 * model: one gen_op per entry of ops.yaml (non_native ones included), sorted by full name,
 * and lowerings from the backend's lists. The ops come from ops.yaml alone, so the core's
 * generated files do not depend on the backend YAML. Every problem is reported with
 * file:line:column.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "model.h"

/* A loaded YAML file. */
typedef struct yfile {
    const char *path;
    yaml_document_t doc;
} yfile;

static const char *const op_keys[] = {"func", "doc", "shape", "dtypes", "expr",
                                      "expr_int", "int_div", "out", "random", "view", "inplace",
                                      "operator", "overload_of",
                                      "derivatives", "non_native", "composite", NULL};
static const char *const non_native_keys[] = {"func", "doc", "non_native", NULL};
static const char *const composite_keys[] = {"func", "doc", "composite", "inplace",
                                             "overload_of", NULL};
/* ir_gen and non_native are PyTorch's backend YAML keys; here they would add node kinds to
 * the core, so only an empty list is accepted (load_backend says where the entries go). */
static const char *const backend_keys[] = {"backend", "full_codegen", "supported",
                                           "skips_unread_outputs", "ir_gen", "non_native", NULL};

/* Parses a YAML file into f->doc; reports libyaml's problem as "path:line:col: problem". */
static bool yaml_load(yfile *f) {
    FILE *fp = fopen(f->path, "rb");
    if (!fp) {
        cg_error("cannot open %s", f->path);
        return false;
    }
    yaml_parser_t parser;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_file(&parser, fp);
    bool ok = yaml_parser_load(&parser, &f->doc);
    if (!ok) {
        const char *problem = parser.problem ? parser.problem : "invalid YAML";
        if (parser.error == YAML_READER_ERROR) {
            cg_error_at(f->path, 1, 1, "%s (at byte %zu)", problem, parser.problem_offset);
        } else if (parser.context) {
            cg_error_at(f->path, (int)parser.problem_mark.line + 1,
                        (int)parser.problem_mark.column + 1, "%s (%s at line %d, column %d)",
                        problem, parser.context, (int)parser.context_mark.line + 1,
                        (int)parser.context_mark.column + 1);
        } else {
            cg_error_at(f->path, (int)parser.problem_mark.line + 1,
                        (int)parser.problem_mark.column + 1, "%s", problem);
        }
    }
    yaml_parser_delete(&parser);
    fclose(fp);
    return ok;
}

/* The node with this index in f's document. */
static yaml_node_t *node_at(yfile *f, int index) {
    return yaml_document_get_node(&f->doc, index);
}

/* Reports an error located at a node. */
#define NODE_ERROR(f, n, ...)                                                                   \
    cg_error_at((f)->path, (int)(n)->start_mark.line + 1, (int)(n)->start_mark.column + 1,      \
                __VA_ARGS__)

/* The text of a scalar node, or NULL (with an error naming `what`) for other nodes. */
static const char *scalar(yfile *f, yaml_node_t *n, const char *what) {
    if (n->type == YAML_SCALAR_NODE) return (const char *)n->data.scalar.value;
    NODE_ERROR(f, n, "%s must be a string", what);
    return NULL;
}

/* True for a plain null scalar ("", "~", "null"): an empty list in the backend YAML. */
static bool is_null(yaml_node_t *n) {
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)n->data.scalar.value;
    return !*v || !strcmp(v, "~") || !strcmp(v, "null");
}

/* Checks that every key of a mapping is a known, non-repeated scalar key. */
static bool check_keys(yfile *f, yaml_node_t *map, const char *const *known) {
    bool ok = true;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = node_at(f, p->key);
        const char *key = scalar(f, k, "a key");
        if (!key) {
            ok = false;
            continue;
        }
        bool found = false;
        for (int i = 0; known[i]; i++) found |= strcmp(known[i], key) == 0;
        if (!found) {
            strbuf list = {0};
            for (int i = 0; known[i]; i++) sb_printf(&list, "%s%s", i ? ", " : "", known[i]);
            NODE_ERROR(f, k, "unknown key '%s' (expected one of: %s)", key, list.s);
            sb_free(&list);
            ok = false;
        }
        for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++) {
            yaml_node_t *k2 = node_at(f, q->key);
            if (k2->type == YAML_SCALAR_NODE && !strcmp((const char *)k2->data.scalar.value, key)) {
                NODE_ERROR(f, k, "key '%s' given twice", key);
                ok = false;
            }
        }
    }
    return ok;
}

/* The value node of `key` in a mapping, or NULL. */
static yaml_node_t *lookup(yfile *f, yaml_node_t *map, const char *key) {
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = node_at(f, p->key);
        if (k->type == YAML_SCALAR_NODE && !strcmp((const char *)k->data.scalar.value, key))
            return node_at(f, p->value);
    }
    return NULL;
}

/* A copy of the string value of `key`, or NULL if absent (or not a string: error). */
static char *get_string(yfile *f, yaml_node_t *map, const char *key, bool *ok) {
    yaml_node_t *v = lookup(f, map, key);
    if (!v) return NULL;
    const char *s = scalar(f, v, key);
    if (!s) *ok = false;
    return s ? cg_strdup(s) : NULL;
}

/* Appends a zeroed op to the model and returns it. */
static gen_op *new_op(gen_model *m) {
    m->ops = cg_realloc(m->ops, (size_t)(m->n_ops + 1) * sizeof *m->ops);
    gen_op *op = &m->ops[m->n_ops++];
    memset(op, 0, sizeof *op);
    return op;
}

/* Reads `derivatives:`: `not_differentiable`, or a mapping of input name -> Lua expression. */
static bool load_derivatives(yfile *f, yaml_node_t *v, gen_op *op) {
    op->has_derivs = true;
    op->deriv_line = (int)v->start_mark.line + 1;
    op->deriv_col = (int)v->start_mark.column + 1;
    if (v->type == YAML_SCALAR_NODE) {
        if (strcmp((const char *)v->data.scalar.value, "not_differentiable") == 0) {
            op->not_differentiable = true;
            return true;
        }
        NODE_ERROR(f, v, "derivatives must be `not_differentiable` or a mapping from input "
                         "name to a Lua expression of grad");
        return false;
    }
    if (v->type != YAML_MAPPING_NODE) {
        NODE_ERROR(f, v, "derivatives must be a mapping from input name to a Lua expression");
        return false;
    }
    bool ok = true;
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
        const char *k = scalar(f, node_at(f, p->key), "a derivatives key");
        const char *e = scalar(f, node_at(f, p->value), "a derivative expression");
        if (!k || !e) {
            ok = false;
            continue;
        }
        op->deriv_inputs = cg_realloc(op->deriv_inputs, sizeof(char *) * (size_t)(op->n_derivs + 1));
        op->deriv_exprs = cg_realloc(op->deriv_exprs, sizeof(char *) * (size_t)(op->n_derivs + 1));
        op->deriv_inputs[op->n_derivs] = cg_strdup(k);
        op->deriv_exprs[op->n_derivs++] = cg_strdup(e);
    }
    return ok;
}

/* Parses "a, b)" (the argument names of `dtypes: common(a, b)`) into op->promote_mask:
 * bit k for the k-th Tensor/Scalar argument. False for an unknown or non-operand name. */
static bool parse_promote_list(gen_op *op, const char *s) {
    const char *end = strchr(s, ')');
    if (!end || end[1] || !op->args) return false;
    while (s < end) {
        while (*s == ' ' || *s == ',') s++;
        const char *w = s;
        while (s < end && *s != ',' && *s != ' ') s++;
        if (s == w) break;
        bool found = false;
        for (int i = 0, k = 0; i < op->n_args && !found; i++) {
            if (!arg_is_operand(op->args[i].type)) continue;
            if (strlen(op->args[i].name) == (size_t)(s - w) &&
                !strncmp(op->args[i].name, w, (size_t)(s - w)))
                op->promote_mask |= 1u << k, found = true;
            k++;
        }
        if (!found) return false;
    }
    return op->promote_mask != 0;
}

/* Reads `key: true|false` into *out (false when absent); reports another value. */
static bool get_bool(yfile *f, yaml_node_t *map, const char *key, bool *out) {
    yaml_node_t *v = lookup(f, map, key);
    *out = false;
    if (!v) return true;
    const char *s = scalar(f, v, key);
    if (!s) return false;
    if (strcmp(s, "true") != 0 && strcmp(s, "false") != 0) {
        NODE_ERROR(f, v, "%s must be true or false, not '%s'", key, s);
        return false;
    }
    *out = !strcmp(s, "true");
    return true;
}

/* Reads `overload_of: <name>` of an entry; reports a value that cannot name an op. */
static char *get_overload_of(yfile *f, yaml_node_t *map, bool *ok) {
    yaml_node_t *v = lookup(f, map, "overload_of");
    if (!v || !scalar(f, v, "overload_of")) return NULL;
    const char *s = (const char *)v->data.scalar.value;
    if (s[0] && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_") == strlen(s))
        return cg_strdup(s);
    NODE_ERROR(f, v, "overload_of must name an op (lower case, digits, _), not '%s'", s);
    *ok = false;
    return NULL;
}

/* Reads the argument names of a composite's schema (PyTorch's spelling, types unchecked):
 * those before a `*` are positional, those after it keywords. Reports a name missing. */
static bool read_composite_args(yfile *f, yaml_node_t *func, gen_composite *c) {
    const char *p = strchr(c->schema, '(') + 1, *end = strchr(p, ')');
    bool seen_star = false;
    c->arg_names = cg_calloc(strlen(p) + 1, sizeof *c->arg_names);
    while (end && p < end) {
        size_t len = strcspn(p, ",)");
        while (len && (*p == ' ' || *p == '\t')) p++, len--;
        size_t k = len;
        while (k && (p[k - 1] == ' ' || p[k - 1] == '\t')) k--;
        if (k == 1 && *p == '*' && !seen_star) {
            seen_star = true;
            c->n_positional = c->n_args;
        } else {
            const char *eq = memchr(p, '=', k);
            size_t n = eq ? (size_t)(eq - p) : k;
            while (n && p[n - 1] == ' ') n--;
            size_t start = n;
            while (start && (isalnum((unsigned char)p[start - 1]) || p[start - 1] == '_')) start--;
            size_t type_len = start;
            while (type_len && (p[type_len - 1] == ' ' || p[type_len - 1] == '\t')) type_len--;
            if (start == n || type_len == 0 || start == type_len) {
                NODE_ERROR(f, func, "bad schema '%s': expected `Type name` as argument %d",
                           c->schema, c->n_args + 1);
                return false;
            }
            if (c->n_args == 0)
                c->self_first = type_len == 6 && !strncmp(p, "Tensor", 6) && n - start == 4 &&
                                !strncmp(p + start, "self", 4);
            c->arg_names[c->n_args++] = cg_strndup(p + start, n - start);
        }
        p += len;
        if (*p == ',') p++;
        else break;
    }
    if (!seen_star) c->n_positional = c->n_args;
    return true;
}

/* Reads a `composite:` entry: func (its name checked, the rest kept as text), doc and the
 * Lua file that implements it, which must exist. */
static bool load_composite(gen_model *m, yfile *f, yaml_node_t *map, yaml_node_t *impl) {
    bool ok = check_keys(f, map, composite_keys);
    yaml_node_t *func = lookup(f, map, "func");
    const char *schema = func ? scalar(f, func, "func") : NULL;
    const char *path = scalar(f, impl, "composite");
    if (!func) NODE_ERROR(f, map, "op entry has no 'func' (its schema)");
    if (!schema || !path) return false;
    size_t n = strspn(schema, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.");
    if (!n || schema[n] != '(' || !strstr(schema + n, "->")) {
        NODE_ERROR(f, func, "bad schema '%s': expected name[.overload](...) -> ...", schema);
        return false;
    }
    FILE *fp = fopen(path, "r");
    if (!fp) NODE_ERROR(f, impl, "composite: cannot open '%s' (paths are from the top folder)",
                        path), ok = false;
    else fclose(fp);
    m->composites = cg_realloc(m->composites, (size_t)(m->n_composites + 1) * sizeof *m->composites);
    gen_composite *c = &m->composites[m->n_composites++];
    memset(c, 0, sizeof *c);
    c->full_name = cg_strndup(schema, n);
    c->base_name = cg_strndup(schema, strcspn(c->full_name, "."));
    c->schema = cg_strdup(schema);
    c->impl = cg_strdup(path);
    c->doc = get_string(f, map, "doc", &ok);
    ok &= get_bool(f, map, "inplace", &c->inplace);
    if ((c->overload_of = get_overload_of(f, map, &ok))) ok &= read_composite_args(f, func, c);
    c->file = f->path;
    c->line = (int)func->start_mark.line + 1;
    c->col = (int)func->start_mark.column + 1;
    return ok;
}

/* Reads one op entry (a mapping with func, doc, ...); returns false on a problem. An entry
 * with `non_native: true` is an IR node with no entry: it takes only func and doc. */
static bool load_op(gen_model *m, yfile *f, yaml_node_t *map) {
    if (map->type != YAML_MAPPING_NODE) {
        NODE_ERROR(f, map, "an op entry must be a mapping with a 'func' key");
        return false;
    }
    yaml_node_t *impl = lookup(f, map, "composite");
    if (impl) return load_composite(m, f, map, impl);
    bool non_native;
    bool ok = get_bool(f, map, "non_native", &non_native);
    ok &= check_keys(f, map, non_native ? non_native_keys : op_keys);
    yaml_node_t *func = lookup(f, map, "func");
    if (!func) {
        NODE_ERROR(f, map, "op entry has no 'func' (its schema)");
        return false;
    }
    const char *schema = scalar(f, func, "func");
    if (!schema) return false;
    gen_op *op = new_op(m);
    op->file = f->path;
    op->line = (int)func->start_mark.line + 1;
    op->col = (int)func->start_mark.column + 1;
    op->schema = cg_strdup(schema);
    op->non_native = non_native;
    if (!schema_parse(op, schema)) ok = false;
    op->doc = get_string(f, map, "doc", &ok);
    op->shape = get_string(f, map, "shape", &ok);
    if (!op->shape && op->cname) {
        op->shape = cg_malloc(strlen(op->cname) + 11);
        sprintf(op->shape, "ltc_shape_%s", op->cname);
    }
    op->expr = get_string(f, map, "expr", &ok);
    op->expr_int = get_string(f, map, "expr_int", &ok);
    yaml_node_t *v;
    if ((v = lookup(f, map, "dtypes")) && scalar(f, v, "dtypes")) {
        const char *s = (const char *)v->data.scalar.value;
        if (!strcmp(s, "common")) op->dtypes = DTYPES_COMMON;
        else if (!strcmp(s, "float")) op->dtypes = DTYPES_FLOAT;
        else if (!strncmp(s, "common(", 7) || !strncmp(s, "float(", 6)) {
            op->dtypes = s[0] == 'c' ? DTYPES_COMMON : DTYPES_FLOAT;
            if (!parse_promote_list(op, strchr(s, '(') + 1))
                NODE_ERROR(f, v, "dtypes '%s': the list must name Tensor/Scalar arguments of "
                           "the schema, separated by commas", s), ok = false;
        } else if (strcmp(s, "none") != 0)
            NODE_ERROR(f, v, "dtypes must be none, common, float, common(a, b, ...) or "
                       "float(a, b, ...), not '%s'", s), ok = false;
    }
    if ((v = lookup(f, map, "out")) && scalar(f, v, "out")) {
        if (strcmp((const char *)v->data.scalar.value, "bool") != 0)
            NODE_ERROR(f, v, "out must be 'bool' (or left out)"), ok = false;
        op->out_bool = true;
    }
    if ((v = lookup(f, map, "random")) && scalar(f, v, "random")) {
        const char *s = (const char *)v->data.scalar.value;
        if (!strcmp(s, "true")) op->random = true;
        else if (!strncmp(s, "ltc_", 4) && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_") == strlen(s))
            op->random_count = cg_strdup(s);
        else if (strcmp(s, "false") != 0)
            NODE_ERROR(f, v, "random must be true, false or the C function (ltc_...) that counts "
                       "the numbers an op with a Generator? argument draws, not '%s'", s), ok = false;
    }
    int n_gen = 0;
    for (int i = 0; i < op->n_args; i++) n_gen += op->args[i].generator;
    if (n_gen > 1 || (n_gen == 1) != (op->random_count != NULL))
        NODE_ERROR(f, func, "a Generator? argument (one at most) goes with `random: <count "
                   "function>`, and such a random key with one"), ok = false;
    ok &= get_bool(f, map, "view", &op->view);
    ok &= get_bool(f, map, "int_div", &op->int_div);
    if (op->int_div && !op->expr_int)
        NODE_ERROR(f, lookup(f, map, "int_div"),
                   "int_div: true goes with an expr_int (the integer division it checks)"), ok = false;
    ok &= get_bool(f, map, "inplace", &op->inplace);
    if (op->inplace && (op->n_args < 1 || op->args[0].type != ARG_TENSOR ||
                        strcmp(op->args[0].name, "self") != 0))
        NODE_ERROR(f, lookup(f, map, "inplace"),
                   "inplace: true needs `Tensor self` as the first argument"), ok = false;
    if ((v = lookup(f, map, "operator")) && scalar(f, v, "operator")) {
        static const char *const metamethods[] = {"__add", "__sub", "__mul", "__div", "__mod",
                                                  "__pow", "__unm", "__idiv", NULL};
        const char *s = (const char *)v->data.scalar.value;
        bool known = false;
        for (int i = 0; metamethods[i]; i++) known |= !strcmp(s, metamethods[i]);
        if (!known)
            NODE_ERROR(f, v, "operator must be one of __add __sub __mul __div __mod __pow __unm "
                       "__idiv, not '%s'", s), ok = false;
        else op->lua_operator = cg_strdup(s);
    }
    op->overload_of = get_overload_of(f, map, &ok);
    if (op->expr_int && !op->expr) NODE_ERROR(f, func, "expr_int given without expr"), ok = false;
    if ((v = lookup(f, map, "derivatives"))) ok &= load_derivatives(f, v, op);
    return ok;
}

/* Loads the ops of ops.yaml: a sequence of op mappings. */
static bool load_ops(gen_model *m, yfile *f) {
    yaml_node_t *root = yaml_document_get_root_node(&f->doc);
    if (!root || root->type != YAML_SEQUENCE_NODE) {
        cg_error_at(f->path, root ? (int)root->start_mark.line + 1 : 1,
                    root ? (int)root->start_mark.column + 1 : 1,
                    "expected a sequence of op entries");
        return false;
    }
    bool ok = true;
    for (yaml_node_item_t *it = root->data.sequence.items.start;
         it < root->data.sequence.items.top; it++)
        ok &= load_op(m, f, node_at(f, *it));
    return ok;
}

/* Calls each(m, f, n, name, op, ctx) for every entry n of the backend YAML's list `key`
 * (op: the op it names, or NULL; name NULL when n is no scalar). True when the list is
 * absent or every call returned true. */
typedef bool (*list_fn)(gen_model *m, yfile *f, yaml_node_t *n, const char *name, gen_op *op,
                        const void *ctx);
static bool each_listed(gen_model *m, yfile *f, yaml_node_t *map, const char *key, list_fn each,
                        const void *ctx) {
    yaml_node_t *list = lookup(f, map, key);
    if (!list || is_null(list)) return true;
    if (list->type != YAML_SEQUENCE_NODE) {
        NODE_ERROR(f, list, "%s must be a list of op names", key);
        return false;
    }
    bool ok = true;
    for (yaml_node_item_t *it = list->data.sequence.items.start;
         it < list->data.sequence.items.top; it++) {
        yaml_node_t *n = node_at(f, *it);
        const char *name = scalar(f, n, "an op name");
        ok &= each(m, f, n, name, name ? model_find(m, name) : NULL, ctx);
    }
    return ok;
}

typedef struct {
    const char *key, *ops_path;
    lowering lower;
} lower_list;

/* One entry of a lowering list (full_codegen, supported): the op it names gets the list's
 * lowering. */
static bool lower_listed(gen_model *m, yfile *f, yaml_node_t *n, const char *name, gen_op *op,
                         const void *ctx) {
    static const char *const list_names[] = {"", "full_codegen", "supported"};
    const lower_list *l = ctx;
    (void)m;
    if (!name) return false;
    if (!op) {
        NODE_ERROR(f, n, "%s lists '%s', which is not an op of %s", l->key, name, l->ops_path);
        return false;
    }
    if (op->non_native) {
        NODE_ERROR(f, n, "%s lists '%s', a non_native node of %s (it has no entry to lower)",
                   l->key, name, l->ops_path);
        return false;
    }
    if (op->lower != LOWER_NONE) {
        NODE_ERROR(f, n, "'%s' is listed in %s and in %s", name, list_names[op->lower], l->key);
        return false;
    }
    op->lower = l->lower;
    return true;
}

/* Applies one backend list (full_codegen, supported) to the ops it names. */
static bool load_list(gen_model *m, yfile *f, yaml_node_t *map, const char *key, lowering lower,
                      const char *ops_path) {
    lower_list l = {key, ops_path, lower};
    return each_listed(m, f, map, key, lower_listed, &l);
}

/* One entry of the backend YAML's `skips_unread_outputs`: a hand-written kernel (in
 * `supported`) of an op with several results, which leaves a result unwritten when the plan
 * passes NULL for it (PyTorch's output_mask of the backward ops). */
static bool skips_unread_listed(gen_model *m, yfile *f, yaml_node_t *n, const char *name,
                                gen_op *op, const void *ctx) {
    (void)m, (void)ctx;
    if (!name) return false;
    if (!op || op->lower != LOWER_SUPPORTED || op->n_rets < 2) {
        NODE_ERROR(f, n, "skips_unread_outputs lists '%s', which is not a supported op with "
                   "several results", name);
        return false;
    }
    op->skips_unread = true;
    return true;
}

/* Reports a non-empty `ir_gen` or `non_native` list of the backend YAML: node kinds of
 * the core, which belong in ops.yaml (as entries with `non_native: true`). */
static bool refuse_core_list(yfile *f, yaml_node_t *root, const char *key, const char *ops_path) {
    yaml_node_t *v = lookup(f, root, key);
    if (!v || is_null(v) || (v->type == YAML_SEQUENCE_NODE &&
                             v->data.sequence.items.start == v->data.sequence.items.top))
        return true;
    NODE_ERROR(f, v, "%s: a backend YAML only chooses lowerings; the core's node kinds come "
               "from %s alone: give each entry there with `non_native: true` (an IR node with "
               "no entry) and leave %s empty", key, ops_path, key);
    return false;
}

/* Loads the backend YAML: the backend name and the lowering lists. */
static bool load_backend(gen_model *m, yfile *f, const char *ops_path) {
    yaml_node_t *root = yaml_document_get_root_node(&f->doc);
    if (!root || root->type != YAML_MAPPING_NODE) {
        cg_error_at(f->path, 1, 1, "expected a mapping with keys backend, full_codegen, ...");
        return false;
    }
    bool ok = check_keys(f, root, backend_keys);
    m->backend = get_string(f, root, "backend", &ok);
    if (!m->backend) {
        NODE_ERROR(f, root, "no 'backend' (the backend's name)");
        ok = false;
    }
    ok &= load_list(m, f, root, "full_codegen", LOWER_FULL, ops_path);
    ok &= load_list(m, f, root, "supported", LOWER_SUPPORTED, ops_path);
    ok &= each_listed(m, f, root, "skips_unread_outputs", skips_unread_listed, NULL);
    ok &= refuse_core_list(f, root, "ir_gen", ops_path);
    ok &= refuse_core_list(f, root, "non_native", ops_path);
    return ok;
}

gen_op *model_find(gen_model *m, const char *full_name) {
    for (int i = 0; i < m->n_ops; i++)
        if (m->ops[i].full_name && !strcmp(m->ops[i].full_name, full_name)) return &m->ops[i];
    return NULL;
}

/* qsort comparator: by full name. */
static int compare_ops(const void *a, const void *b) {
    return strcmp(((const gen_op *)a)->full_name, ((const gen_op *)b)->full_name);
}

static int compare_composites(const void *a, const void *b) {
    return strcmp(((const gen_composite *)a)->full_name, ((const gen_composite *)b)->full_name);
}

/* Reports ops whose full names, C names or enum names collide. */
static bool check_names(gen_model *m) {
    bool ok = true;
    for (int i = 0; i < m->n_ops; i++) {
        gen_op *a = &m->ops[i];
        if (!strcmp(a->enum_name, "LTC_OP_COUNT")) {
            cg_error_at(a->file, a->line, a->col, "op name '%s' collides with LTC_OP_COUNT",
                        a->full_name);
            ok = false;
        }
        for (int j = 0; j < i; j++) {
            gen_op *b = &m->ops[j];
            if (strcmp(a->cname, b->cname) != 0) continue;
            cg_error_at(a->file, a->line, a->col, "op '%s' %s '%s' (%s:%d:%d)", a->full_name,
                        strcmp(a->full_name, b->full_name) ? "has the same C name as"
                                                           : "is defined twice; also",
                        b->full_name, b->file, b->line, b->col);
            ok = false;
        }
    }
    return ok;
}

/* A table stands in a composite overload's place for its keywords: no other overload of the
 * name may take one there (int[], int[N], Tensor[]), and the name has no other composite
 * overload. It joins the dispatcher of a generated op's Lua name, as a method. */
static bool check_composite_overload(const gen_model *m, const gen_composite *c) {
    if (!c->overload_of) return true;
    bool ok = true, found = false;
    int p = c->n_positional; /* the keyword table is argument #p + 1 */
    for (int j = 0; j < m->n_ops; j++) {
        const gen_op *op = &m->ops[j];
        if (!op_has_entry(op)) continue;
        bool same = !strcmp(op->base_name, c->overload_of);
        found |= same;
        if (!same && !(op->overload_of && !strcmp(op->overload_of, c->overload_of))) continue;
        arg_type t = p < op->n_args ? op->args[p].type : ARG_TENSOR;
        if (t == ARG_INTS || t == ARG_TENSOR_LIST) {
            cg_error_at(c->file, c->line, c->col, "composite op '%s': its keyword table, argument "
                        "#%d of %s, would be taken for '%s' of '%s' (%s)", c->full_name, p + 1,
                        c->overload_of, op->args[p].name, op->full_name, arg_type_name(t));
            ok = false;
        }
    }
    if (!found || !c->self_first || c->n_positional == c->n_args) {
        cg_error_at(c->file, c->line, c->col, "composite op '%s': overload_of '%s' must name a "
                    "generated op's Lua name, for a composite that takes `Tensor self` first and "
                    "keyword-only arguments (after `*`), given as a table after the others",
                    c->full_name, c->overload_of);
        ok = false;
    }
    const gen_composite *first = NULL;
    if (model_composite_overloads(m, c->overload_of, &first, 1) > 1 && first != c) {
        cg_error_at(c->file, c->line, c->col, "composite op '%s': '%s' has a composite overload "
                    "already, '%s' (one table of keywords per name)", c->full_name,
                    c->overload_of, first->full_name);
        ok = false;
    }
    return ok;
}

bool model_load(gen_model *m, const char *ops_path, const char *backend_path) {
    yfile ops = {.path = ops_path}, be = {.path = backend_path};
    bool ops_ok = yaml_load(&ops);
    bool be_ok = yaml_load(&be);
    bool ok = ops_ok && be_ok;
    if (ops_ok) {
        ok &= load_ops(m, &ops);
        if (be_ok) ok &= load_backend(m, &be, ops_path);
    }
    if (ops_ok) yaml_document_delete(&ops.doc);
    if (be_ok) yaml_document_delete(&be.doc);
    if (!ok) return false;
    if (!check_names(m)) return false;
    qsort(m->ops, (size_t)m->n_ops, sizeof *m->ops, compare_ops);
    for (int i = 0; i < m->n_composites; i++) {
        gen_composite *c = &m->composites[i];
        if (model_find(m, c->full_name)) {
            cg_error_at(c->file, c->line, c->col, "composite op '%s' is also a generated op",
                        c->full_name);
            ok = false;
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(c->full_name, m->composites[j].full_name)) {
                cg_error_at(c->file, c->line, c->col, "composite op '%s' is defined twice",
                            c->full_name);
                ok = false;
            }
    }
    /* an overload_of names another op's Lua name, of ops that take `Tensor self` first as it
     * does (the name stays a method) */
    for (int i = 0; i < m->n_ops; i++) {
        const gen_op *op = &m->ops[i];
        if (!op->overload_of) continue;
        bool found = false;
        for (int j = 0; j < m->n_ops; j++)
            found |= j != i && op_has_entry(&m->ops[j]) &&
                     !strcmp(m->ops[j].base_name, op->overload_of) &&
                     strcmp(op->base_name, op->overload_of);
        bool self_first = op->n_args >= 1 && op->args[0].type == ARG_TENSOR &&
                          !strcmp(op->args[0].name, "self");
        if (!found || !self_first || !op_has_entry(op)) {
            cg_error("%s: op '%s': overload_of '%s' must name another op's Lua name, for an op "
                     "with an entry that takes `Tensor self` first",
                     ops_path, op->full_name, op->overload_of);
            ok = false;
        }
    }
    if (m->n_composites > 1) /* (qsort of a NULL array is undefined, even of 0 elements) */
        qsort(m->composites, (size_t)m->n_composites, sizeof *m->composites, compare_composites);
    for (int i = 0; i < m->n_composites; i++) ok &= check_composite_overload(m, &m->composites[i]);
    return ok;
}

int model_composite_overloads(const gen_model *m, const char *name, const gen_composite **out,
                              int max) {
    int n = 0;
    for (int i = 0; i < m->n_composites; i++) {
        const gen_composite *c = &m->composites[i];
        if (!c->overload_of || strcmp(c->overload_of, name)) continue;
        if (out && n < max) out[n] = c;
        n++;
    }
    return n;
}

bool op_has_entry(const gen_op *op) { return !op->non_native; }

bool op_drops_tensor(const gen_op *a, const gen_op *b, int p) {
    if (b->n_args != a->n_args - 1 || p < 1 || p > a->n_args || a->args[p - 1].type != ARG_TENSOR)
        return false;
    for (int i = 0, j = 0; i < a->n_args; i++) {
        if (i == p - 1) continue;
        const gen_arg *x = &a->args[i], *y = &b->args[j++];
        if (x->type != y->type || x->fixed_len != y->fixed_len || strcmp(x->name, y->name))
            return false;
    }
    return true;
}

void model_free(gen_model *m) {
    for (int i = 0; i < m->n_composites; i++) {
        gen_composite *c = &m->composites[i];
        free(c->full_name);
        free(c->base_name);
        free(c->schema);
        free(c->doc);
        free(c->impl);
        free(c->overload_of);
        for (int k = 0; k < c->n_args; k++) free(c->arg_names[k]);
        free(c->arg_names);
    }
    free(m->composites);
    for (int i = 0; i < m->n_ops; i++) {
        gen_op *op = &m->ops[i];
        free(op->full_name);
        free(op->base_name);
        free(op->cname);
        free(op->enum_name);
        free(op->schema);
        free(op->doc);
        free(op->lua_operator);
        free(op->overload_of);
        free(op->shape);
        free(op->expr);
        free(op->expr_int);
        free(op->random_count);
        for (int j = 0; j < op->n_derivs; j++) {
            free(op->deriv_inputs[j]);
            free(op->deriv_exprs[j]);
        }
        free(op->deriv_inputs);
        free(op->deriv_exprs);
        for (int j = 0; j < op->n_args; j++) {
            free(op->args[j].name);
            free(op->args[j].def_text);
        }
        free(op->args);
        for (int j = 0; j < op->n_rets; j++) free(op->ret_names[j]);
        free(op->ret_names);
    }
    free(m->ops);
    free(m->backend);
    memset(m, 0, sizeof *m);
}

/* ---- a device backend's YAML (codegen/opencl_backend.yaml) ------------------------------- */

static const char *const device_keys[] = {"backend", "lowered", NULL};

bool model_load_device(gen_model *m, const char *path, char **name) {
    yfile f = {.path = path};
    *name = NULL;
    if (!yaml_load(&f)) return false;
    bool ok = true;
    yaml_node_t *root = yaml_document_get_root_node(&f.doc);
    if (!root || root->type != YAML_MAPPING_NODE) {
        cg_error_at(path, 1, 1, "expected a mapping with keys backend and lowered");
        ok = false;
        goto done;
    }
    ok &= check_keys(&f, root, device_keys);
    *name = get_string(&f, root, "backend", &ok);
    if (!*name) {
        NODE_ERROR(&f, root, "no 'backend' (the backend's name)");
        ok = false;
    }
    yaml_node_t *list = lookup(&f, root, "lowered");
    if (!list || list->type != YAML_SEQUENCE_NODE) {
        NODE_ERROR(&f, root, "'lowered' must be a list of op names");
        ok = false;
        goto done;
    }
    for (yaml_node_item_t *it = list->data.sequence.items.start;
         it < list->data.sequence.items.top; it++) {
        yaml_node_t *n = node_at(&f, *it);
        const char *op_name = scalar(&f, n, "an op name");
        gen_op *op = op_name ? model_find(m, op_name) : NULL;
        if (!op) {
            if (op_name) NODE_ERROR(&f, n, "lowered lists '%s', which is not an op", op_name);
            ok = false;
        } else {
            op->device_lowered = true;
        }
    }
done:
    yaml_document_delete(&f.doc);
    return ok;
}
