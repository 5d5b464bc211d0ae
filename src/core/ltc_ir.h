/*
 * ltc_ir.h - IR nodes and values, hashing, and the tracing helpers that the generated op
 * entries (gen/ltc_ops.c) call. Backends read nodes through this header when lowering.
 *
 * PyTorch LTC: torch/csrc/lazy/core/ir.h (Node, Value, hash), tensor.h (LazyTensor).
 */
#ifndef LTC_IR_H
#define LTC_IR_H

#include "ltc.h"

/* ---- hashing (XXH3-128) ------------------------------------------------------------- */

typedef struct ltc_hash {
    uint64_t lo, hi;
} ltc_hash;

ltc_hash ltc_hash_bytes(const void *p, size_t n, ltc_hash seed);
static inline bool ltc_hash_equal(ltc_hash a, ltc_hash b) { return a.lo == b.lo && a.hi == b.hi; }

/* ---- attributes ------------------------------------------------------------------------ */

typedef enum {
    LTC_ATTR_INT,   /* int, dim (0-based), bool, ScalarType (stored as its enum value) */
    LTC_ATTR_FLOAT, /* float: hashed by its bits */
    LTC_ATTR_INTS,  /* int[] (at most LTC_MAX_DIMS entries) */
} ltc_attr_kind;

typedef struct ltc_attr {
    ltc_attr_kind kind;
    int n; /* LTC_ATTR_INTS: number of entries */
    union {
        int64_t i;
        double f;
        int64_t ints[LTC_MAX_DIMS];
    };
} ltc_attr;

static inline ltc_attr ltc_attr_int(int64_t v) {
    ltc_attr a = {.kind = LTC_ATTR_INT};
    a.i = v;
    return a;
}
static inline ltc_attr ltc_attr_float(double v) {
    ltc_attr a = {.kind = LTC_ATTR_FLOAT};
    a.f = v;
    return a;
}
/* Fails (returns an attr with n = -1) if n > LTC_MAX_DIMS; ltc_trace rejects it. */
ltc_attr ltc_attr_ints(const int64_t *v, int n);

/* ---- nodes and values ------------------------------------------------------------------ */

typedef struct ltc_node ltc_node;
typedef struct ltc_data ltc_data; /* backend data: see ltc_backend.h */

/* One output of a node. */
typedef struct ltc_value {
    ltc_node *node;
    int index;
} ltc_value;

/* An IR node: one op applied to operand values, with attributes, producing n_outputs
 * values. Immutable once built, reference counted (operands are retained). */
struct ltc_node {
    int32_t refcount;
    uint16_t op;         /* ltc_op (gen/ltc_ops.h) */
    uint16_t n_operands;
    uint8_t n_outputs;
    uint8_t n_attrs;
    ltc_hash hash;       /* op, attributes, output shapes; NOT operands (see executor.c) */
    ltc_value *operands; /* n_operands, retained */
    ltc_shape *shapes;   /* n_outputs */
    ltc_attr *attrs;     /* n_attrs */
    ltc_data *data;      /* LTC_OP_DEVICE_DATA only: the parameter's data (retained) */
    const char *source;  /* optional "file:line" of the Lua code that made it (static) */
    const char *user_op; /* the op the user called when a composite traced it (interned,
                          * static; NULL outside ltc_op_scope_enter): names runtime errors */
    /* executor scratch, valid during one sync */
    uint32_t mark;
    int32_t index;
};

ltc_node *ltc_node_retain(ltc_node *n);
/* Releases a reference; frees the node (and releases its operands, iteratively) at 0. */
void ltc_node_release(ltc_node *n);
/* Builds a node. `operands` are retained. Returns NULL (with the error set) on failure. */
ltc_node *ltc_node_new(int op, const ltc_value *operands, int n_operands, const ltc_attr *attrs,
                       int n_attrs, const ltc_shape *shapes, int n_outputs);
/* As ltc_node_new; shapes_checked: the caller has passed every shape through
 * ltc_shape_check already (the tracer does, for the status it returns). */
ltc_node *ltc_node_new_checked(int op, const ltc_value *operands, int n_operands,
                               const ltc_attr *attrs, int n_attrs, const ltc_shape *shapes,
                               int n_outputs, bool shapes_checked);
const char *ltc_op_name(int op); /* generated */

/* What an op's attribute means, from its schema type (for IR dumps). */
typedef enum {
    LTC_ATTR_T_INT,   /* int, int? (LTC_NONE when absent) */
    LTC_ATTR_T_INTS,  /* int[] */
    LTC_ATTR_T_INDEX, /* index: stored as written, 1-based or negative */
    LTC_ATTR_T_DIM,   /* dim, dim?: stored 0-based (LTC_NONE when absent) */
    LTC_ATTR_T_FLOAT, /* float, float? (NAN when absent) */
    LTC_ATTR_T_BOOL,  /* bool, stored as 0/1 */
    LTC_ATTR_T_DTYPE, /* ScalarType, ScalarType?: an ltc_dtype, -1 when absent */
} ltc_attr_type;

typedef struct ltc_attr_info {
    const char *name; /* the schema's argument name: "dim", "keepdim" */
    ltc_attr_type type;
} ltc_attr_info;

/* The attributes an op's schema declares, in node attribute order (generated). Returns a
 * static array of *n entries, or NULL with *n = 0 for an op without attributes. Nodes built
 * by hand may carry other attributes; check node->n_attrs against *n before using names. */
const ltc_attr_info *ltc_op_attrs(int op, int *n);
bool ltc_op_is_view(int op);     /* generated from ops.yaml's `view: true` */
/* An integer division (ops.yaml's `int_div: true`: floor_divide, remainder, div_trunc): with
 * an integer result, a zero in its divisor (operand 2) raises (ltc_kernel.h). Generated. */
bool ltc_op_int_div(int op);
/* An elementwise op's value as a C expression of x, y, z (its operands, in order) and of
 * its attribute names, from ops.yaml's `expr` (`expr_int` when integer and given); NULL for
 * ops without one. *out_bool (may be NULL) says whether the result is bool. Generated. */
const char *ltc_op_expr(int op, bool integer, bool *out_bool);

/* ---- tensors as the executor sees them ---------------------------------------------------- */

/* The IR value of a tensor: its pending value, or a DEVICE_DATA node for its data
 * (created on first use and cached in the tensor). Borrowed reference. */
ltc_status ltc_tensor_value(ltc_tensor *t, ltc_value *out);
/* A new tensor holding `v` (retains v.node; a DEVICE_DATA value also gives it its data). */
ltc_status ltc_tensor_from_value(ltc_value v, ltc_tensor **out);
/* The data a tensor holding node n keeps: a DEVICE_DATA node's (a computed value; retained,
 * the caller releases it), NULL for a pending value. */
ltc_data *ltc_node_held_data(const ltc_node *n);

/* ---- the tracing helpers used by generated op entries --------------------------------------- */

/* Dtype rules of ops.yaml's `dtypes:` key, applied to Tensor/Scalar operands before the
 * shape function runs (PyTorch's result_type with wrapped numbers as weak scalars). */
typedef enum {
    LTC_PROMOTE_NONE = 0,   /* operands as they are; the shape function checks dtypes */
    LTC_PROMOTE_COMMON,     /* cast operands to their common dtype */
    LTC_PROMOTE_FLOAT,      /* as COMMON, then integers and bool become float32 */
} ltc_promote_rule;

/* Computes the common dtype of `in` (weak scalars take part only by category: bool < int
 * < float) and replaces each operand whose dtype differs by a cast of it. The tensors in
 * `io` are borrowed on entry; on success, io[i] holds a reference the caller must release
 * with ltc_trace_release (casts are new tensors, others retained). */
ltc_status ltc_trace_promote(ltc_tensor **io, int n, ltc_promote_rule rule);
/* The dtype ltc_trace_promote's common rule gives operands ts (torch.result_type). */
ltc_dtype ltc_trace_result_type(ltc_tensor *const *ts, int n);
void ltc_trace_release(ltc_tensor **io, int n);

/* Builds a node of `op` over the tensors' values and returns one new tensor per output.
 * `shapes` are the output shapes from the op's shape function. */
ltc_status ltc_trace(int op, ltc_tensor *const *operands, int n_operands, const ltc_attr *attrs,
                     int n_attrs, const ltc_shape *shapes, int n_outputs, ltc_tensor **outs);

/* ltc_rng_state_tensor (ltc.h) makes the state operand of random ops. */

#endif
