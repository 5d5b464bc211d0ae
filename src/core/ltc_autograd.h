/*
 * ltc_autograd.h - reverse-mode automatic differentiation in the core (PyTorch's autograd
 * engine, torch/csrc/autograd). Included by ltc.h.
 *
 * When grad mode is on (per thread, on by default) and an op entry (ltc_add, ...) is traced
 * with an operand that requires grad, its float outputs get a grad_fn node that records the
 * op, its arguments and where the operands' gradients go. ltc_backward walks those nodes from
 * a tensor in reverse topological order and calls each op's backward, generated from the
 * `derivatives:` formulas of codegen/ops.yaml (gen/derivatives.c): backward builds lazy IR
 * like any op, and a training step (forward, backward, update) is one graph.
 *
 * Semantics are PyTorch's: requires_grad is set on leaves (float tensors only) and flows to
 * results; gradients accumulate into leaves' grad; integer and bool tensors never require
 * grad. In-place writes (ltc_tensor_assign_, ltc_tensor_copy_) give the written tensor the
 * history of its new value; a write through a view gives the view's base a CopySlices node
 * (the base's old history outside the view, the written value's inside), and the base's
 * other views take their history from the base's again when next used (PyTorch's version
 * counter). A value saved for backward keeps its value at record time even if written in
 * place later. Writing into a leaf that requires grad, or a view of one, is an error unless
 * grad mode is off. Overwriting a tensor that requires grad by a value that does not (zero_,
 * fill_, copy_ of a constant) keeps it requiring grad; its old history gets zeros. A move
 * between devices (ltc_tensor_to_device) is recorded too: its backward moves the gradient back.
 */
#ifndef LTC_AUTOGRAD_PUBLIC_H
#define LTC_AUTOGRAD_PUBLIC_H

#include <stdbool.h>

/* Grad mode of the calling thread (PyTorch's GradMode): whether ops record history. */
extern _Thread_local bool ltc_grad_mode;
static inline bool ltc_grad_enabled(void) { return ltc_grad_mode; }
/* Sets grad mode; returns the previous mode. */
bool ltc_set_grad_enabled(bool on);

/* Whether t requires grad (a stale view's history is brought up to date first, which may
 * trace view ops; an error there reads as false and leaves the message set). */
bool ltc_requires_grad(ltc_tensor *t);
/* Marks a leaf as requiring grad or not. LTC_ERR_ARG: t has history ("only leaf tensors can
 * be changed (use detach())") or flag is set on a non-float tensor. */
ltc_status ltc_set_requires_grad(ltc_tensor *t, bool flag);
/* True when t has no history (a leaf, whether it requires grad or not). */
bool ltc_is_leaf(ltc_tensor *t);
/* The op name of t's grad_fn ("mul", "copy_slices", "overwrite", "to_copy") and which of its outputs t
 * is (1-based) in *output; NULL for a leaf. */
const char *ltc_grad_fn_name(ltc_tensor *t, int *output);
/* t's accumulated gradient (borrowed; NULL if none), and setting it (retained; NULL clears). */
ltc_tensor *ltc_grad_get(ltc_tensor *t);
void ltc_grad_set(ltc_tensor *t, ltc_tensor *g);
/* A tensor with t's value and storage (writes reach t) but no history (PyTorch detach). */
ltc_status ltc_detach(ltc_tensor *t, ltc_tensor **out);
/* Accumulates d(t)/d(leaf) into the grad of every leaf that requires grad and reaches t.
 * grad: t's gradient (t's size; NULL means ones, allowed only for a one-element t).
 * retain_graph keeps the saved values for another backward; create_graph records the
 * backward's ops (gradients of gradients; implies retain_graph). Nothing runs until a sync.
 * Errors (LTC_ERR_ARG / LTC_ERR_STATE): t does not require grad, grad of the wrong size, a
 * second backward through freed nodes, an op without a derivative, a formula's own error. */
ltc_status ltc_backward(ltc_tensor *t, ltc_tensor *grad, bool retain_graph, bool create_graph);
/* In-place write with the autograd rules above, named `op` in errors ("add_"): t's value
 * becomes v (copy: broadcast and cast to t, as ltc_tensor_copy_; else same sizes, as
 * ltc_tensor_assign_). ltc_tensor_assign_ and ltc_tensor_copy_ are this with op
 * "assign_" / "copy_". */
ltc_status ltc_tensor_write_(ltc_tensor *t, ltc_tensor *v, bool copy, const char *op);
/* PyTorch's fill_ with the same rules, named `op` in errors: every element of t becomes
 * value (one element: a number or 0-d tensor). Unlike a copy it may go through a view that
 * repeats elements (an expand), each shared element getting the one value; the base's new
 * value is not differentiable there (an error when autograd would need it). */
ltc_status ltc_tensor_fill_(ltc_tensor *t, ltc_tensor *value, const char *op);

/* PyTorch's torch.autograd.grad: the gradients of outputs[0..n_out) (with grad_outputs, NULL
 * entries meaning ones for one-element outputs) with respect to inputs[0..n_in), returned
 * in grads[0..n_in) (new references; NULL for an input the outputs do not depend on, which
 * is an error unless allow_unused) without accumulating into any tensor's grad.
 * retain_graph and create_graph as for ltc_backward. Errors as ltc_backward, plus an input
 * that does not require grad. */
ltc_status ltc_autograd_grad(ltc_tensor *const *outputs, ltc_tensor *const *grad_outputs,
                             int n_out, ltc_tensor *const *inputs, int n_in, bool retain_graph,
                             bool create_graph, bool allow_unused, ltc_tensor **grads);
/* PyTorch's Tensor.retain_grad: a tensor with history gets its gradient in grad at backward
 * (accumulated like a leaf's); no-op on a leaf. LTC_ERR_ARG if t does not require grad. */
ltc_status ltc_retain_grad(ltc_tensor *t);
/* Whether t keeps its grad: a leaf that requires grad, or retain_grad was called. */
bool ltc_retains_grad(ltc_tensor *t);
/* PyTorch's Tensor.register_hook: the binding's hook number `id` runs whenever a gradient
 * with respect to t is computed, before it is accumulated (leaves) or passed on (others),
 * and may replace it. The core calls run(ud, id, grad, &replacement) (replacement NULL:
 * keep grad) and free(ud, id) when t goes. LTC_ERR_ARG if t does not require grad. */
typedef ltc_status (*ltc_hook_run_fn)(void *ud, int id, ltc_tensor *grad, ltc_tensor **out);
typedef void (*ltc_hook_free_fn)(void *ud, int id);
void ltc_autograd_set_hooks(ltc_hook_run_fn run, ltc_hook_free_fn free_fn, void *ud);
ltc_status ltc_register_hook(ltc_tensor *t, int id);
/* Removes hook `id` from t (its handle's remove()); false if t has no such hook. */
bool ltc_remove_hook(ltc_tensor *t, int id);

/* A derivative that has no C translation is asked of the binding (Lua formulas), through
 * this hook: the arguments are ltc_backward_fn's, plus the op's table entry. */
struct ltc_derivative;
struct ltc_ag_arg;
struct ltc_ag_grad;
typedef ltc_status (*ltc_foreign_backward_fn)(void *ud, const struct ltc_derivative *d,
                                              const struct ltc_ag_arg *a,
                                              ltc_tensor *const *results,
                                              ltc_tensor *const *grads, const bool *needs,
                                              struct ltc_ag_grad *g);
void ltc_autograd_set_foreign(ltc_foreign_backward_fn fn, void *ud);
/* Sends every derivative to the foreign hook, C translation or not (the spec comparing the
 * generated C formulas with the Lua ones uses it). */
void ltc_autograd_use_foreign(bool always);

/* Generated op entries: whether the op must be recorded for operand t (it requires grad, or
 * is a view whose base has autograd state), and the recording itself (autograd.c). */
bool ltc_ag_wants(const ltc_tensor *t);
bool ltc_ag_wants_list(ltc_tensor *const *ts, int n);
ltc_status ltc_ag_record(int op, const struct ltc_ag_arg *args, int n_args, ltc_tensor **outs,
                         int n_outs);

#endif
