/*
 * ltc_derivative.h - the interface between the autograd engine (autograd.c) and the
 * derivative formulas generated as C from ops.yaml (gen/derivatives.c, codegen/emit_derivs_c.c).
 *
 * When an op is traced with an operand that requires grad, the engine records a grad_fn node
 * holding the op's arguments as ltc_ag_arg values, in schema order, normalised as the Lua
 * formulas always saw them: defaults filled in, absent optionals LTC_AG_NONE, dims positive
 * and 1-based (wrapped against the first tensor argument's rank, a 0-d tensor counting as 1),
 * tensors as their values at record time (a later in-place write does not change them).
 * The backward of a node calls its op's ltc_backward_fn with those arguments, the op's
 * results and one gradient per output; the function returns one gradient per argument it
 * was asked for. Gradients are lazy tensors built with the ordinary op entry points (ltc_mul,
 * ltc_where, ...): backward is IR construction, nothing runs.
 */
#ifndef LTC_DERIVATIVE_H
#define LTC_DERIVATIVE_H

#include "ltc.h"

typedef enum {
    LTC_AG_NONE = 0, /* an absent optional argument (None) */
    LTC_AG_TENSOR,   /* Tensor or Scalar: t (a Lua number arrives as a weak 0-d tensor) */
    LTC_AG_LIST,     /* Tensor[]: list[0..n) */
    LTC_AG_INT,      /* int, int?, index, dim (positive, 1-based), dim?: i */
    LTC_AG_FLOAT,    /* float, float?: f */
    LTC_AG_BOOL,     /* bool: b */
    LTC_AG_INTS,     /* int[]: ints[0..n) */
    LTC_AG_DTYPE,    /* ScalarType: i (an ltc_dtype) */
} ltc_ag_kind;

/* One recorded argument. Borrowed by the backward function (the engine owns it). */
typedef struct ltc_ag_arg {
    ltc_ag_kind kind;
    ltc_tensor *t;
    ltc_tensor **list;
    int n;
    int64_t i;
    double f;
    bool b;
    int64_t *ints;
} ltc_ag_arg;

/* One gradient returned by a backward function for the argument at the same schema
 * position: t for a Tensor/Scalar argument, list[0..n) for a Tensor[] argument (the function
 * mallocs list with n = the argument's n; the engine frees it and releases its entries).
 * Every tensor is a new reference, or NULL for "no gradient" (a zero). */
typedef struct ltc_ag_grad {
    ltc_tensor *t;
    ltc_tensor **list;
    int n;
} ltc_ag_grad;

/* The backward of one op.
 *   a       the recorded arguments, n_args of them, in schema order;
 *   results the op's outputs (n_outputs; the values as computed, without history);
 *   grads   one gradient per output, never NULL (the engine passes zeros for an output
 *           that got none), each of its output's size and dtype;
 *   needs   per schema argument: whether its gradient is wanted (false for non-tensors);
 *   g       per schema argument, zeroed by the caller: the gradients, filled for needed
 *           arguments only.
 * The gradients need not have the input's size where the op broadcast it nor its dtype: the
 * engine sums broadcast dims away and casts. On failure every reference made is released,
 * g is left all NULL, and the message is set (ltc_errorf). */
typedef ltc_status (*ltc_backward_fn)(const ltc_ag_arg *a, ltc_tensor *const *results,
                                      ltc_tensor *const *grads, const bool *needs,
                                      ltc_ag_grad *g);

/* An op's entry in the generated table. */
typedef struct ltc_derivative {
    const char *name;        /* full op name, "max.dim" */
    int op;                  /* LTC_OP_* */
    int n_args, n_outputs;
    const ltc_ag_kind *kinds; /* per schema argument: the kind it is recorded as when present */
    bool not_differentiable; /* `derivatives: not_differentiable` (or no entry at all) */
    bool view;               /* the result is a view of the first argument */
    bool save_result;        /* a formula reads the results */
    const bool *has_formula; /* per schema argument: a formula is given for it */
    /* The generated C backward; NULL when the formulas could not be translated to C (the
     * engine then asks the binding's foreign backward, see autograd.h). */
    ltc_backward_fn backward;
    /* per schema argument: a formula reads it, so a Tensor/Scalar/Tensor[] argument is saved
     * at record time (the others reach the backward as NULL / empty lists) */
    const bool *saves;
    /* per schema argument j: the arguments i (bit i) whose formula reads it; NULL when not
     * known. Recording saves argument j only when one of those needs a gradient (PyTorch
     * saves `self` of a product only when `other` requires grad). */
    const uint64_t *reads;
} ltc_derivative;

/* The generated table (gen/derivatives.c): the entry of an op by its LTC_OP_* number, NULL
 * for ops without an entry point (the non_native nodes of ops.yaml, such as device_data). */
const ltc_derivative *ltc_derivative_of(int op);
/* By full op name ("max.dim"); NULL if none. */
const ltc_derivative *ltc_derivative_find(const char *name);

#endif
