/*
 * autograd.h - private to src/core: the autograd engine's records (PyTorch's autograd::Node,
 * Edge, SavedVariable and AutogradMeta), shared by autograd.c (recording, the tensor's
 * autograd state), autograd_inplace.c (views and in-place writes) and autograd_engine.c
 * (the backward walk).
 */
#ifndef LTC_AUTOGRAD_H
#define LTC_AUTOGRAD_H

#include "core.h"
#include "ltc_derivative.h"

typedef struct ltc_grad_fn ltc_grad_fn;

/* Where a gradient goes: output nr of node fn (retained), or the leaf tensor (retained),
 * or nowhere (both NULL). */
typedef struct ltc_edge {
    ltc_grad_fn *fn;
    int nr;
    ltc_tensor *leaf;
} ltc_edge;

/* A tensor's autograd state is t->ag (core.h's struct ltc_ag_meta, kept in the tensor). */

/* What a node is. */
typedef enum {
    AG_OP,          /* a traced op: d's backward (C, or the binding's foreign one) */
    AG_COPY_SLICES, /* a write through a view into its base (PyTorch's CopySlices) */
    AG_OVERWRITE,   /* a value overwritten by one that needs no grad: zeros for the old */
    AG_TO_DEVICE,   /* a move between devices (PyTorch's ToCopyBackward0): the gradient moved
                     * back to dev */
} ag_kind;

/* A value saved for backward: the tensor as it was (retained) and the version of its root
 * then; if the root was written in place since, the value it had (a retained IR value). */
typedef struct ag_saved {
    bool kept; /* saved at all (a formula reads it) */
    bool registered; /* t is in its root's savers (a copy made by ltc_ag_preserve is not) */
    ltc_tensor *t;
    uint64_t version;
    ltc_value value;
} ag_saved;

struct ltc_grad_fn {
    int32_t refcount;
    ag_kind kind;
    const ltc_derivative *d; /* AG_OP */
    const char *name;
    int n_args;              /* schema arguments (AG_OP); 2 (COPY_SLICES), 1 (OVERWRITE) */
    ltc_ag_arg *args;        /* the recorded arguments; tensors borrowed from saved */
    ag_saved *saved;         /* one per tensor in args (lists expanded), in order */
    int n_saved;
    ltc_edge *edges;         /* one per tensor in args (lists expanded), in order */
    ltc_shape *in_shapes;    /* the shapes of those tensors (gradients are fitted to them) */
    bool *needs;             /* per argument */
    int n_outputs;
    ltc_shape *out_shapes;
    ltc_tensor **outs;       /* the outputs, weak (cleared when they go or change history) */
    uint64_t *out_versions;
    ltc_value *out_values;   /* save_result: the outputs' values (retained) */
    bool freed;              /* the saved values were released (backward without retain) */
    bool saves_values;       /* while recording: the argument being saved is read by a formula */
    bool ok_formulas;        /* AG_OP: a formula exists for every argument that needs one */
    /* AG_COPY_SLICES: the view ops from base to view, the view's shape (owned) */
    ltc_view_step *steps;
    int n_steps;
    ltc_shape *view_shape;
    /* AG_TO_DEVICE: the device the moved tensor came from */
    ltc_device dev;
    size_t size; /* of the node's block (slab.c) */
    /* the backward walk's scratch */
    ltc_tensor **gbuf; /* n_outputs gradients being summed (in the node's block) */
    uint32_t mark;
    int n_kids, kid_at;
};

static inline bool ltc_ag_stale(const ltc_tensor *t) {
    return t->base && !t->ag_detached && t->ag_gen != t->base->generation;
}

/* t's meta, made if absent (NULL when out of memory, message set). */
ltc_ag_meta *ltc_ag_meta_of(ltc_tensor *t);
/* A grad whose sync failed had no value before the backward that made it (a grad that had one
 * is rolled back to it, executor.c): that backward did not happen, so m has no grad again, as
 * PyTorch leaves .grad when a backward raises. Reading or accumulating into a grad does this. */
void ltc_ag_drop_failed_grad(ltc_ag_meta *m);
/* Gives t the history (fn, nr), replacing its own: fn is retained (NULL: none); t requires
 * grad iff fn != NULL or `req`. */
ltc_status ltc_ag_set_history(ltc_tensor *t, ltc_grad_fn *fn, int nr, bool req);
/* The edge a gradient of t goes to (refreshing a stale view first); fn and leaf borrowed.
 * *e zeroed when t needs no grad. */
ltc_status ltc_ag_edge_of(ltc_tensor *t, ltc_edge *e);
/* A stale view's history: its view ops applied to its base's current history. */
ltc_status ltc_ag_refresh(ltc_tensor *t);

ltc_grad_fn *ltc_grad_fn_retain(ltc_grad_fn *fn);
void ltc_grad_fn_release(ltc_grad_fn *fn);
/* Releases the saved values of fn (after a backward without retain_graph). */
void ltc_grad_fn_free_saved(ltc_grad_fn *fn);
/* A new node of `kind` with n_args arguments, n_saved saved tensors/edges and n_outputs
 * outputs, zeroed. */
ltc_grad_fn *ltc_grad_fn_new(ag_kind kind, int n_args, int n_saved, int n_outputs);
/* Saves t (retained) as fn->saved[i], with the edge its gradient takes. */
ltc_status ltc_ag_save(ltc_grad_fn *fn, int i, ltc_tensor *t, const ltc_edge *e);
/* Marks outs[0..n) (the float ones) as outputs of fn. */
ltc_status ltc_ag_set_outputs(ltc_grad_fn *fn, ltc_tensor *const *outs, int n);
/* The saved tensor i as a tensor with its value at save time (new reference); with history
 * (its edge) when grad mode is on (create_graph). */
ltc_status ltc_ag_unpack(ltc_grad_fn *fn, int i, ltc_tensor **out);
/* Output r of fn as computed (new reference), as ltc_ag_unpack. */
ltc_status ltc_ag_unpack_result(ltc_grad_fn *fn, int r, ltc_tensor **out);

/* autograd_inplace.c: the view step s applied to x (recorded when grad mode is on), and its
 * inverse: src written into whole, the step's input. New references. */
ltc_status ltc_ag_apply_step(ltc_tensor *x, const ltc_view_step *s, ltc_tensor **out);
ltc_status ltc_ag_scatter_step(ltc_tensor *whole, ltc_tensor *src, const ltc_view_step *s,
                               ltc_tensor **out);
/* The backward of COPY_SLICES and OVERWRITE nodes (autograd_inplace.c). */
ltc_status ltc_ag_inplace_backward(ltc_grad_fn *fn, ltc_tensor *grad, ltc_tensor **g);

/* Before an in-place write to root r (a tensor that is no view): every node that saved r or
 * a view of r gets a tensor of its own holding the value saved (PyTorch saves the original
 * value of an input written later; here the saved tensor would otherwise come to hold, in
 * its new history, the node that saves it: a reference cycle). */
ltc_status ltc_ag_preserve(ltc_tensor *r);

/* Drops the hooks of a tensor's state (autograd_engine.c). */
void ltc_ag_hooks_free(ltc_ag_meta *m);

/* The tensor's version: its root's count of in-place writes. */
static inline uint64_t ltc_ag_version(const ltc_tensor *t) {
    return t->base ? t->base->generation : t->generation;
}

#endif
