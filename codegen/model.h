/*
 * model.h - the code generator's model of the ops: the entries of ops.yaml and the
 * backend YAML loaded into structs, with each op's schema parsed into typed arguments.
 *
 * Schema strings follow torchgen's function schema, restricted to ltc's types:
 *   name[.overload](Type name[=default], ...) -> Tensor | (Tensor a, Tensor b, ...)
 */
#ifndef LTCGEN_MODEL_H
#define LTCGEN_MODEL_H

#include <stdbool.h>

#include "util.h"

/* ---- schema types ----------------------------------------------------------------- */

typedef enum {
    ARG_TENSOR,      /* Tensor */
    ARG_TENSOR_LIST, /* Tensor[] */
    ARG_SCALAR,      /* Scalar: a tensor or a Lua number (a weak 0-d tensor) */
    ARG_INT,         /* int */
    ARG_INT_OPT,     /* int? */
    ARG_INTS,        /* int[], or int[N] (gen_arg.fixed_len N): N integers, Lua gives a
                      * number (every one) or a table of 1 or N (PyTorch's int[2]) */
    ARG_INDEX,       /* index: 1-based, negative from the end */
    ARG_DIM,         /* dim: 1-based or negative on entry, wrapped to 0-based */
    ARG_DIM_OPT,     /* dim? */
    ARG_FLOAT,       /* float */
    ARG_FLOAT_OPT,   /* float? */
    ARG_BOOL,        /* bool */
    ARG_DTYPE,       /* ScalarType */
    ARG_DTYPE_OPT,   /* ScalarType? */
    ARG_TYPE_COUNT
} arg_type;

typedef enum {
    DEF_ABSENT = 0, /* no default: the argument is required */
    DEF_NONE,       /* None */
    DEF_TRUE,       /* True */
    DEF_FALSE,      /* False */
    DEF_INT,        /* an integer literal (text kept) */
    DEF_FLOAT,      /* a float literal (text kept) */
    DEF_ARG,        /* int[N]: the value of an earlier int[N] argument (its name kept) */
} default_kind;

typedef struct gen_arg {
    arg_type type;
    char *name;
    default_kind def;
    char *def_text; /* DEF_INT / DEF_FLOAT: the literal as written; DEF_ARG: the name */
    int fixed_len;  /* int[N]: N (1..8); 0 for int[] of any length */
    bool generator; /* `Generator? name`: an ARG_TENSOR that may be nil, the generator state
                     * int64 [2]; the C entry fills a NULL one from the default generator,
                     * advanced by the op's `random:` count function (PyTorch's Generator?) */
} gen_arg;

/* The schema spelling of a type ("int?", "Tensor[]"). */
const char *arg_type_name(arg_type t);
/* Tensor and Scalar: one traced operand each. */
bool arg_is_operand(arg_type t);
/* A `?` type: None is a valid value. */
bool arg_is_nullable(arg_type t);
/* Nullable or with a default: may be left out from Lua. */
bool arg_is_optional(const gen_arg *a);

/* ---- ops -------------------------------------------------------------------------- */

typedef enum { DTYPES_NONE = 0, DTYPES_COMMON, DTYPES_FLOAT } dtype_rule;

/* How the backend lowers an op (the backend YAML's lists). A backend YAML chooses only
 * this: the ops, their IR nodes and entries (the core's files) come from ops.yaml alone. */
typedef enum {
    LOWER_NONE = 0,  /* in no list: reference-backend fallback */
    LOWER_FULL,      /* full_codegen: generated elementwise kernel */
    LOWER_SUPPORTED, /* supported: hand-written kernel */
} lowering;

typedef struct gen_op {
    char *full_name; /* "max.dim" */
    char *base_name; /* "max" */
    char *cname;     /* "max_dim" */
    char *enum_name; /* "LTC_OP_MAX_DIM" */
    char *schema;    /* the func string as written */
    char *doc;       /* may be NULL */
    char *shape;     /* shape function name (default ltc_shape_<cname>) */
    dtype_rule dtypes;
    char *expr, *expr_int; /* may be NULL */
    bool out_bool, random;
    /* `random: <C function>`: the op draws from its `Generator?` argument; when that is nil
     * the entry makes the default generator's state, advanced by
     * <function>(operand shapes, output shapes) numbers (src/core/shape_inference.h) */
    char *random_count;
    /* `dtypes: common(a, b)`: bit k set for the k-th Tensor/Scalar operand that takes part
     * in promotion; 0 means all of them. Operands left out of an elementwise op's promotion
     * are bool (its shape function checks). */
    unsigned promote_mask;
    bool view; /* the result shares its input's storage (src/core/views.c) */
    bool int_div; /* `int_div: true`: an integer result with a zero divisor raises (ltc_op_int_div) */
    /* `inplace: true`: the method t:<name>_(...) writes the op's result into t (the list
     * ltc_lua_inplace of lua_ops.c); `operator: __add`: the tensor metamethod bound to the op
     * (ltc_lua_operators), or NULL. */
    bool inplace;
    char *lua_operator;
    /* `overload_of: max`: the op is also one more overload of that Lua name, as PyTorch's
     * max.other (torch.max(input, other)) is maximum: the name's dispatcher (lua_ops.c) tries
     * it with the name's own overloads, told apart by the type of the last required
     * argument. NULL when absent. */
    char *overload_of;
    /* `derivatives:` (emit_autograd.c): a mapping from input name to a Lua expression of
     * its gradient, or `not_differentiable`. has_derivs is false when the key is absent. */
    bool has_derivs, not_differentiable;
    char **deriv_inputs, **deriv_exprs; /* n_derivs each */
    int n_derivs, deriv_line, deriv_col;
    bool non_native; /* `non_native: true` in ops.yaml: an IR node with no entry */
    lowering lower;
    /* listed in the backend YAML's `skips_unread_outputs`: its hand-written kernel leaves an
     * output unwritten when the plan passes NULL for it (an output nothing reads) */
    bool skips_unread;
    bool device_lowered; /* listed in the device backend YAML's `lowered` (--device-yaml) */
    gen_arg *args;
    int n_args;
    char **ret_names; /* n_rets; NULL entries for an unnamed single Tensor */
    int n_rets;
    const char *file; /* where the func scalar is (1-based) */
    int line, col;
} gen_op;

/* An op written in Lua over the generated ones (`composite: lua/ltc/<file>.lua` in
 * ops.yaml; PyTorch's CompositeImplicitAutograd): no IR node, no C entry, no binding. Its
 * kernels and derivatives are those of the ops it calls. ops.yaml lists it so that it is
 * documented (ops.md, ltc.help) and known to tools (ops_meta.lua) like any op; its schema is
 * PyTorch's, kept as text (its Lua function checks its arguments). */
typedef struct gen_composite {
    char *full_name, *base_name;
    char *schema, *doc, *impl; /* impl: the Lua file that defines it */
    bool inplace;              /* `inplace: true`: t:<name>_(...) as for a generated op */
    /* `overload_of: div`: one more overload of a generated op's Lua name, reached by a table
     * of its keyword-only arguments (after `*` in its schema) after the positional ones, as
     * PyTorch's div.Tensor_mode is torch.div(a, b, rounding_mode=...): the name's dispatcher
     * (lua_ops.c) unpacks the table and calls the function the file registered as
     * core._overloads["<full name>"]. NULL when absent. Only then are the argument names read
     * from the schema: arg_names[0 .. n_positional - 1] positional, the rest keywords. */
    char *overload_of;
    char **arg_names;
    int n_args, n_positional;
    bool self_first; /* the first argument is `Tensor self` */
    const char *file;
    int line, col;
} gen_composite;

typedef struct gen_model {
    gen_op *ops; /* all ops of ops.yaml (non_native ones included), sorted by full name */
    int n_ops;
    gen_composite *composites; /* sorted by full name */
    int n_composites;
    char *backend; /* the backend YAML's `backend:` */
} gen_model;

/* Parses a schema string into op->full_name, base_name, cname, enum_name, args and rets.
 * Reports an error at op->file/line/col and returns false if it is malformed. */
bool schema_parse(gen_op *op, const char *schema);

/* Loads ops.yaml (appending its ops to m) and the backend YAML (setting lowerings; it
 * adds no op). Reports every problem found; returns false if there was any. On success
 * the ops are sorted by full name. */
bool model_load(gen_model *m, const char *ops_path, const char *backend_path);

/* The composite overloads of a Lua name (their overload_of), in full-name order: stores up
 * to max of them in out (when not NULL) and returns how many there are. */
int model_composite_overloads(const gen_model *m, const char *name, const gen_composite **out,
                              int max);

/* Frees everything model_load allocated. */
void model_free(gen_model *m);
/* Loads a device backend's YAML (`backend: name`, `lowered: [op, ...]`: the ops it runs on
 * its device; the rest take the core's eager fallback): sets op->device_lowered and
 * *name (owned by the model's caller, freed with free). Reports unknown ops. */
bool model_load_device(gen_model *m, const char *path, char **name);

/* The op with this full name, or NULL. */
gen_op *model_find(gen_model *m, const char *full_name);

/* True for ops that get a C entry and a Lua binding: those not marked non_native. */
bool op_has_entry(const gen_op *op);
/* True if b's arguments are a's without a's argument at position p (1-based), a Tensor
 * (conv2d and conv2d.nobias): the Lua dispatcher and the derivative formulas take a nil
 * there as leaving it out, the later arguments shifting down (PyTorch's `Tensor? bias`). */
bool op_drops_tensor(const gen_op *a, const gen_op *b, int p);

/* True if op's argument i is an `int` with a default that required arguments follow, as
 * `int a=N, int b, int[] c` (PyTorch's randint(low=0, high, size)), the one shape schema_parse
 * allows: Lua leaves a out when a table stands in b's place (randint(high, {size})). */
bool arg_leads_default(const gen_op *op, int i);
/* Number of Tensor/Scalar arguments; whether there is a Tensor[] argument. */
int op_n_operands(const gen_op *op);
bool op_has_list(const gen_op *op);

/* The C declaration of an op's shape function, derived from its schema per the table in
 * src/core/shape_inference.h ("ltc_status ltc_shape_foo(const ltc_shape *self, ...);"). */
void op_shape_decl(const gen_op *op, strbuf *b);

/* ---- validation (validate.c) ------------------------------------------------------ */

typedef struct gen_options {
    const char *source;       /* --source */
    const char *backend_yaml; /* --backend-yaml */
    const char *output_dir;   /* --output-dir */
    const char *impl_path;    /* --impl-path */
    const char *shape_header; /* --shape-header */
    const char *backend_name; /* --backend-name */
    const char *ref_impl_path; /* --ref-impl-path: emit ref_ops.c; its kernels live there */
    const char *device_yaml;   /* --device-yaml: a device backend's YAML (opencl_backend.yaml) */
    const char *device_name;   /* its `backend:` (set when loaded) */
    bool dry_run;
    /* --backend-only: write only <backend>_ops.c and check only the backend's lowerings
     * (full_codegen exprs, supported kernels), not what the core's files need. */
    bool backend_only;
} gen_options;

/* Checks the model against the shape header and the hand-written kernels (only the
 * latter, and the full_codegen exprs, with o->backend_only); reports every problem found
 * and returns false if there was any. */
bool model_validate(const gen_model *m, const gen_options *o);

/* ---- emitters (emit_*.c): each appends one output file's text to `b` ---------------- */

void emit_ops_h(const gen_model *m, const gen_options *o, strbuf *b);
void emit_ops_c(const gen_model *m, const gen_options *o, strbuf *b);
void emit_backend_c(const gen_model *m, const gen_options *o, strbuf *b);
void emit_lua_c(const gen_model *m, const gen_options *o, strbuf *b);
void emit_doc_md(const gen_model *m, const gen_options *o, strbuf *b);
/* The backward functions of the derivative formulas, as Lua (derivatives.lua). */
void emit_autograd_lua(const gen_model *m, const gen_options *o, strbuf *b);
/* The backward functions of the derivative formulas, as C (derivatives.c, emit_derivs_c.c),
 * for the autograd engine of src/core (ltc_derivative.h). Prints the ops left without one. */
void emit_derivs_c(const gen_model *m, const gen_options *o, strbuf *b);
/* True if a formula of op names `name` as a whole identifier (emit_autograd.c). */
bool deriv_uses_name(const gen_op *op, const char *name);
/* Checks the derivative formulas: keys name differentiable inputs, expressions mention
 * only known names (emit_autograd.c). */
bool validate_derivatives(const gen_model *m);
/* The reference backend's kernel table (ref_ops.c, emit_ref.c). */
void emit_ref_c(const gen_model *m, const gen_options *o, strbuf *b);
/* The op table as Lua data (ops_meta.lua, emit_meta.c), for the fuzzer and bad-input suite. */
void emit_meta_lua(const gen_model *m, const gen_options *o, strbuf *b);

/* ---- elementwise ops (emit_cpu.c), shared by the backend emitters ------------------- */

/* A dtype that elementwise kernels get a loop for. */
typedef struct ew_dtype {
    const char *dtype, *suffix, *ctype; /* "LTC_F32", "f32", "float" */
    bool is_int;                        /* expr_int applies (integers and bool) */
} ew_dtype;
#define EW_N_DTYPES 5
extern const ew_dtype ew_dtypes[EW_N_DTYPES];
/* How many of ew_dtypes an op gets loops for (floats only for `dtypes: float`). */
int ew_n_dtypes(const gen_op *op);
/* True for the non-tensor argument types an expr may name (float, int, bool). */
bool ew_is_attr(const gen_arg *a);
/* The node attribute index of schema argument `arg` (its rank among non-tensor args). */
int ew_attr_index(const gen_op *op, int arg);
/* Whether the k-th operand takes part in promotion; the first that does picks the dtype. */
bool ew_operand_promoted(const gen_op *op, int k);
int ew_dispatch_operand(const gen_op *op);
/* True if identifier `ident` occurs in expr as a whole token. */
bool expr_uses(const char *expr, const char *ident);
/* Emits `O[i] = (otype)(expr);` (bool outputs: `(expr) != 0`) at `indent`. */
void ew_store(strbuf *b, const char *indent, const char *otype, const char *expr);
/* The op attribute table and ltc_op_attrs() (emit_attrs.c), part of ltc_ops.c. */
void emit_op_attrs(const gen_model *m, strbuf *b);

/* The C parameter list of an op's entry ("ltc_tensor *self, int64_t dim, ltc_tensor **out").
 * Shared by ltc_ops.h and ltc_ops.c. */
void emit_entry_params(const gen_op *op, strbuf *b);
/* The comment above an op's generated code: its schema (wrapped if long), then its doc. */
void emit_op_comment(strbuf *b, const gen_op *op, bool with_doc);
/* The comment that starts a generated C file: its name, its sources, then `what` wrapped.
 * The sources are ops.yaml, and the backend YAML only for a backend's glue (`backend`): the
 * core's files come from ops.yaml alone. */
void emit_banner(strbuf *b, const gen_options *o, const char *file, const char *what,
                 bool backend);

#endif
