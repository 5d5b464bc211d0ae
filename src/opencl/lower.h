/*
 * lower.h - the lowering walk's state and helpers, shared by lower.c (the walk, fusion
 * planning, GEMMs, reductions, losses, index_select, views), lower_ew.c (elementwise
 * groups), lower_more.c and lower_nn.c (convolution, pooling,
 * slices, index_add/scatter_add, arange, random ops). Internal to the module.
 */
#ifndef LTC_OCL_LOWER_H
#define LTC_OCL_LOWER_H

#include "ocl.h"

typedef struct lw {
    const ltc_lowering_ctx *ctx;
    ocl_comp *c;
    int *slot_of;   /* per node: its first output's slot */
    int *uses;      /* per node: references to output 0 (operands and roots) */
    int *consumer;  /* per node: the last node using output 0 */
    bool *is_root;
    bool *inlined;  /* elementwise, folded into its consumer's kernel */
    bool *skip;     /* a transpose every user folds into its GEMM */
    int *ew_stamp;  /* per node: the elementwise kernel that computed it last (group id) */
    int ew_groups;
    bool fp64;
    bool rng;       /* a random kernel: the program gets the Philox functions */
    int cap_slots, cap_steps;
    char **bodies;  /* kernel sources with the placeholder name */
    int cap_kernels;
    int cur_node;   /* the node being lowered: each step made records it (ocl_step.node) */
} lw;

/* The placeholder a kernel body names itself by (every occurrence becomes its name). */
#define KNAME "__KNAME__"

ltc_status lw_nomem(void);
/* A new value slot of shape s (-1: out of memory). */
int lw_new_slot(lw *w, const ltc_shape *s);
ocl_step *lw_new_step(lw *w, ocl_step_kind kind, int op, int out);
/* The index of kernel `body` in the program (added if new; body's string is taken). */
int lw_add_kernel(lw *w, ocl_sb *body);
/* A kernel step running `body` (taken) over `global` work items, writing slot out. */
ocl_step *lw_family_step(lw *w, ocl_sb *b, int op, int out, size_t global);
/* A kernel over the lines of operand 0 of n split as [outer, len, inner] around one dim
 * (reductions, scans, sorts): lw_family_step over outer * inner work items, writing out (and
 * out + 1 when n_out is 2), with the arguments out..., operand 0, outer, len, inner; the
 * caller appends any more. NULL when out of memory. */
ocl_step *lw_line_step(lw *w, ocl_sb *b, const ltc_node *n, int out, int n_out, size_t global,
                       int64_t outer, int64_t len, int64_t inner);
void lw_arg_buf(ocl_step *s, char kind, int slot);
void lw_arg_long(ocl_step *s, int64_t v);
/* The slot of operand k of node n. */
int lw_opslot(lw *w, const ltc_node *n, int k);
/* A loss's per-row values in slot tmp (rows of them) reduced into slot out: their sum when
 * red is 2, when 1 their mean over the rows whose labels (slot target, dtype it) are not
 * LTC_LABEL_IGNORED; red 0 adds nothing. */
ltc_status lw_reduce_rows(lw *w, int op, int out, int tmp, int target, ltc_dtype it,
                          int64_t rows, int red, ltc_dtype dt);
/* A new int64 slot [1] holding the number of the rows labels in slot target (dtype it) that
 * are not LTC_LABEL_IGNORED, and the step computing it (-1: out of memory). */
int lw_label_count(lw *w, int op, int target, ltc_dtype it, int64_t rows);
/* The product of dims [from, to) of s. */
int64_t lw_prod(const ltc_shape *s, int from, int to);

/* lower_ew.c: the OpenCL C expression of an elementwise node (ops.yaml's `expr`, or the
 * fill/cast's), NULL when the node is not lowered as elementwise; lowering the group rooted at
 * node ni (the nodes marked inlined are folded in) as one kernel writing slot out. */
const char *lw_ew_expr(const ltc_node *n);
ltc_status lw_lower_ew(lw *w, int ni, int out);
/* Whether a and b have the same dims (dtypes aside). */
bool lw_same_dims(const ltc_shape *a, const ltc_shape *b);

/* A CLBlast GEMM step C (m x n) = A (m x k, or its transpose) B (k x n, or its transpose),
 * row-major, over slots (lower_nn.c). */
ltc_status lw_gemm_step(lw *w, int op, int out, int a, int bslot, bool ta, bool tb, int64_t m,
                        int64_t nn, int64_t k, ltc_dtype dt);
/* lower_nn.c: whether it lowers node n (its dtypes and sizes included), and lowering it. */
bool ocl_nn_lowers(const ltc_node *n);
ltc_status ocl_lower_nn(lw *w, const ltc_node *n, int out, bool *done);
/* lower_more.c: the same for layer_norm, batch_norm, nll_loss, gather/scatter, tril/triu,
 * avg_pool2d, cumsum/cumprod and sort/argsort/topk. */
bool ocl_more_lowers(const ltc_node *n);
ltc_status ocl_lower_more(lw *w, const ltc_node *n, int out, bool *done);

#endif
