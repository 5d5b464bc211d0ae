/*
 * grad_formulas.h - the named helpers of the derivative formulas (the `F.` functions of
 * codegen/ops.yaml's `derivatives:`), in C for the generated backward functions
 * (gen/derivatives.c). Each is the C twin of the function of the same name in
 * lua/ltc/autograd.lua, op for op, so both give the same lazy graph and the same values.
 *
 * Conventions, for every function below:
 *   - tensors passed in are borrowed; *out (or each entry of outs) receives a new reference;
 *   - dims are positive and 1-based (as the engine records them) unless said otherwise; an
 *     absent optional dim is LTC_NONE, an absent optional float NAN (ltc_ops.h's rule);
 *   - on failure nothing is written to out, every reference made is released and the
 *     message is set (the failing op's, or ltc_errorf's);
 *   - masks select with ltc_where, they never multiply, so NaN and infinities in a gradient
 *     stay where they belong.
 * Everything is IR construction: nothing runs (a weak scalar operand is read, never synced).
 */
#ifndef LTC_GRAD_FORMULAS_H
#define LTC_GRAD_FORMULAS_H

#include "ltc.h"

/* Which gradient a helper with several inputs is asked for (the Lua helpers' string
 * argument 'self', 'weight', 'bias'). */
typedef enum { LTC_GRAD_SELF, LTC_GRAD_WEIGHT, LTC_GRAD_BIAS } ltc_grad_which;

/* ---- small building blocks (grad_formulas.c) ------------------------------------------ */

/* A binary op entry (ltc_add, ltc_mul, ltc_where's shape minus the condition, ...). */
typedef ltc_status (*ltc_grad_binop)(ltc_tensor *, ltc_tensor *, ltc_tensor **);

/* f(t, v) (or f(v, t) when v_first) with v a weak 0-d scalar, int64 when v_int (a Lua
 * integer) else float64 (a Lua float): what `t * 2` or `1 - t` does from Lua. */
ltc_status ltc_grad_binop_s(ltc_grad_binop f, ltc_tensor *t, double v, bool v_int, bool v_first,
                            ltc_tensor **out);
/* where(cond, v, t) (v_first) or where(cond, t, v), v a weak scalar as above. */
ltc_status ltc_grad_where_s(ltc_tensor *cond, ltc_tensor *t, double v, bool v_int, bool v_first,
                            ltc_tensor **out);
/* True when t is what a Lua number becomes (a weak 0-d scalar with a value, not pending IR);
 * its value in *v and whether it is an integer in *is_int. The Lua helpers branch on
 * type(x) == "number" for such operands; these do the same. */
bool ltc_grad_number(ltc_tensor *t, double *v, bool *is_int);
/* a <op> b where either may be a Lua number (ltc_grad_number): two numbers give Lua's result
 * as a new weak scalar (op '+', '-', '*', '%' and 'f' (//) keep integers, '/' and '^'
 * give floats; an integer // or % by 0 is LTC_ERR_ARG, as Lua raises), otherwise f(a, b).
 * Two weak scalars through the op itself would give float32, not the float64 a Lua number
 * stays. */
ltc_status ltc_grad_arith(ltc_grad_binop f, char op, ltc_tensor *a, ltc_tensor *b,
                          ltc_tensor **out);
/* -t: a Lua number stays a number (a weak scalar of its type), otherwise ltc_neg. */
ltc_status ltc_grad_neg(ltc_tensor *t, ltc_tensor **out);
/* t:size(d) from Lua: d 1-based or negative; LTC_ERR_ARG when out of range. */
ltc_status ltc_grad_size(const ltc_tensor *t, int64_t d, int64_t *out);
/* t with a size-1 dim inserted at dim when a reduction along dim dropped it (dim given, not
 * keepdim, self not 0-d); otherwise a new reference to t. */
ltc_status ltc_grad_keep(ltc_tensor *t, const ltc_tensor *self, int64_t dim, bool keepdim,
                         ltc_tensor **out);

/* ---- shapes --------------------------------------------------------------------------- */

/* Zeros of t's size and dtype. */
ltc_status ltc_grad_zeros_like(ltc_tensor *t, ltc_tensor **out);
/* t with a size-1 dim inserted at dim (1..t's rank + 1). */
ltc_status ltc_grad_unsqueeze(ltc_tensor *t, int64_t dim, ltc_tensor **out);
/* g broadcast to t's size. */
ltc_status ltc_grad_expand_as(ltc_tensor *g, ltc_tensor *t, ltc_tensor **out);
/* g summed over the dims it was broadcast along, down to size[0..n) (leading dims summed
 * away, size-1 dims summed with keepdim); g itself (retained) when it has that size. */
ltc_status ltc_grad_sum_to(ltc_tensor *g, const int64_t *size, int n, ltc_tensor **out);
/* A 1-based int64 index along dim of t's shape (size 1 in the other dims), for index masks. */
ltc_status ltc_grad_positions(ltc_tensor *t, int64_t dim, ltc_tensor **out);
/* The permutation inv[0..n) that undoes permute(dims[0..n)) of an ndim-d tensor (dims
 * 1-based or negative): inv[d - 1] = i for dims[i - 1] = d. LTC_ERR_ARG if dims is not a
 * permutation of 1..n. */
ltc_status ltc_grad_inverse_permutation(const int64_t *dims, int n, int64_t ndim, int64_t *inv);

/* ---- elementwise ---------------------------------------------------------------------- */

/* t rounded toward zero: where(t >= 0, floor(t), ceil(t)) (fmod's gradient). */
ltc_status ltc_grad_trunc(ltc_tensor *t, ltc_tensor **out);
/* silu: grad * s * (self * (1 - s) + 1), s = sigmoid(self). */
ltc_status ltc_grad_silu_backward(ltc_tensor *grad, ltc_tensor *self, ltc_tensor **out);
/* clamp: grad where min <= self <= max (a bound NAN when absent), else 0. */
ltc_status ltc_grad_clamp_backward(ltc_tensor *grad, ltc_tensor *self, double min, double max,
                                   ltc_tensor **out);
/* minimum (is_min) or maximum with respect to self: 0 where other wins, grad * 0.5 on ties,
 * grad elsewhere, NaN operands included (PyTorch 1.13's masked_fill rule). */
ltc_status ltc_grad_minmax_backward(ltc_tensor *grad, ltc_tensor *self, ltc_tensor *other,
                                    bool is_min, ltc_tensor **out);
/* pow with respect to self (PyTorch's pow_backward_self): grad * exponent * self^(exponent-1),
 * 0 where exponent == 0 (for a number exponent 0: grad * 0, as the Lua helper). */
ltc_status ltc_grad_pow_backward_self(ltc_tensor *grad, ltc_tensor *self, ltc_tensor *exponent,
                                      ltc_tensor **out);
/* pow with respect to exponent (pow_backward_exponent): grad * result * log(self), 0 where
 * self == 0 and exponent >= 0 (not NaN from 0 * log 0). */
ltc_status ltc_grad_pow_backward_exponent(ltc_tensor *grad, ltc_tensor *self, ltc_tensor *exponent,
                                          ltc_tensor *result, ltc_tensor **out);
/* dropout: grad when not train or p == 0, grad * 0 when p >= 1, else grad / (1 - p) where the
 * result is nonzero and 0 elsewhere. */
ltc_status ltc_grad_dropout_backward(ltc_tensor *grad, ltc_tensor *self, ltc_tensor *result,
                                     double p, bool train, ltc_tensor **out);

/* ---- reductions ----------------------------------------------------------------------- */

/* sum(self, dim, keepdim): grad (unsqueezed at dim unless keepdim) broadcast to self's size. */
ltc_status ltc_grad_sum_backward(ltc_tensor *grad, ltc_tensor *self, int64_t dim, bool keepdim,
                                 ltc_tensor **out);
/* mean: sum_backward / n (the size of dim, or self's element count). */
ltc_status ltc_grad_mean_backward(ltc_tensor *grad, ltc_tensor *self, int64_t dim, bool keepdim,
                                  ltc_tensor **out);
/* max() / min() of all elements: grad shared evenly among the elements equal to the result
 * (among the NaN elements when the result is NaN), 0 elsewhere. */
ltc_status ltc_grad_max_backward(ltc_tensor *grad, ltc_tensor *self, ltc_tensor *result,
                                 ltc_tensor **out);
/* max.dim / min.dim (and kthvalue-like ops): grad at each returned 1-based index along dim,
 * 0 elsewhere; grad itself for a 0-d self. */
ltc_status ltc_grad_index_dim_backward(ltc_tensor *grad, ltc_tensor *self, int64_t dim,
                                       bool keepdim, ltc_tensor *indices, ltc_tensor **out);
/* prod: the product of the other elements, exact with zeros (one zero: only it gets a
 * gradient; several: none). */
ltc_status ltc_grad_prod_backward(ltc_tensor *grad, ltc_tensor *self, int64_t dim, bool keepdim,
                                  ltc_tensor *result, ltc_tensor **out);
/* var: grad * (self - mean) * 2 / (n - 1 when unbiased, else n). */
ltc_status ltc_grad_var_backward(ltc_tensor *grad, ltc_tensor *self, int64_t dim, bool unbiased,
                                 bool keepdim, ltc_tensor **out);
/* std: var's with grad / (2 result), 0 where result is 0 (PyTorch's std_backward). */
ltc_status ltc_grad_std_backward(ltc_tensor *grad, ltc_tensor *self, int64_t dim, bool unbiased,
                                 bool keepdim, ltc_tensor *result, ltc_tensor **out);
/* logsumexp: grad * exp(self - result). */
ltc_status ltc_grad_logsumexp_backward(ltc_tensor *grad, ltc_tensor *self, int64_t dim,
                                       bool keepdim, ltc_tensor *result, ltc_tensor **out);
/* The p-norm (PyTorch's norm_backward): p = 0 zeros, p = 1 grad * sign(self), p = +-inf the
 * sign at the elements reaching the norm (shared evenly), p = 2 grad * self / norm, otherwise
 * grad * self |self|^(p-2) / norm^(p-1); 0 where the norm is 0. */
ltc_status ltc_grad_norm_backward(ltc_tensor *grad, ltc_tensor *self, double p, int64_t dim,
                                  bool keepdim, ltc_tensor *result, ltc_tensor **out);
/* cumsum along dim: the reversed running sums of grad (grad itself when 0-d). */
ltc_status ltc_grad_cumsum_backward(ltc_tensor *grad, int64_t dim, ltc_tensor **out);
/* softmax along dim, from its result: result * (grad - sum(grad * result, dim)). */
ltc_status ltc_grad_softmax_backward(ltc_tensor *grad, ltc_tensor *result, int64_t dim,
                                     ltc_tensor **out);
/* log_softmax along dim, from its result: grad - exp(result) * sum(grad, dim). */
ltc_status ltc_grad_log_softmax_backward(ltc_tensor *grad, ltc_tensor *result, int64_t dim,
                                         ltc_tensor **out);

/* ---- linear algebra, shapes of lists, nn (grad_formulas_nn.c) --------------------------- */

/* matmul with respect to self (which 1) or other (which 2), PyTorch's rules: 1-d operands
 * promoted, batch dims broadcast (the engine sums them back to each operand's shape). */
ltc_status ltc_grad_matmul_backward(ltc_tensor *grad, ltc_tensor *self, ltc_tensor *other,
                                    int64_t which, ltc_tensor **out);
/* linear's weight: grad^T . self with the leading dims flattened ([out, in]). */
ltc_status ltc_grad_linear_weight_backward(ltc_tensor *grad, ltc_tensor *self, ltc_tensor **out);
/* linear (and linear.nobias): outs[0..3) = the gradients of self, weight and bias. Outside
 * grad mode, from one linear_backward node; under it (create_graph), grad . weight,
 * linear_weight_backward and grad (summed by the engine), differentiable again. */
ltc_status ltc_grad_linear_backward(ltc_tensor *grad, ltc_tensor *self, ltc_tensor *weight,
                                    ltc_tensor **outs);
/* conv2d's bias: grad summed over every dim but the channel dim (the third from the end). */
ltc_status ltc_grad_conv2d_bias_backward(ltc_tensor *grad, ltc_tensor **out);
/* cat(tensors[0..n), dim): outs[j] = the slice of grad along dim that came from tensors[j];
 * zeros for a 1-d empty tensor, which cat skips. outs has n entries (written only on
 * success). */
ltc_status ltc_grad_cat_backward(ltc_tensor *grad, ltc_tensor *const *tensors, int n, int64_t dim,
                                 ltc_tensor **outs);
/* stack(tensors[0..n), dim) (dim 1-based or negative against grad's rank): outs[j] = grad
 * selected at position j + 1 of dim. */
ltc_status ltc_grad_stack_backward(ltc_tensor *grad, ltc_tensor *const *tensors, int n, int64_t dim,
                                   ltc_tensor **outs);
/* repeat(self, repeats[0..n)): grad viewed as [r1, s1, r2, s2, ...] and summed over the
 * repeat dims, one at a time (at most 3 dims at once whatever n is). */
ltc_status ltc_grad_repeat_backward(ltc_tensor *grad, ltc_tensor *self, const int64_t *repeats,
                                    int n, ltc_tensor **out);
/* layer_norm: outs[0..3) = the gradients of self, weight and bias. Outside grad mode, from
 * one layer_norm_backward node; under it (create_graph), over the elementwise ops, so that
 * they are differentiable again: x^ = (x - mean) / sqrt(var + eps) over the normalized dims,
 * dx = (dx^ - mean(dx^) - x^ mean(dx^ x^)) / sqrt(var + eps) with dx^ = grad * weight, grad *
 * x^ for weight and grad for bias (the engine sums both to their size). */
ltc_status ltc_grad_layer_norm_backward(ltc_tensor *grad, ltc_tensor *self,
                                        const int64_t *normalized_shape, int k, ltc_tensor *weight,
                                        double eps, ltc_tensor **outs);
/* batch_norm for self [N, C, ...] with respect to self, weight or bias: with the batch's
 * statistics when training, else with the running ones (a per-channel affine map). A NULL
 * weight counts as ones; the running statistics are read only when not training. */
ltc_status ltc_grad_batch_norm_backward(ltc_tensor *grad, ltc_tensor *self,
                                        ltc_tensor *running_mean, ltc_tensor *running_var,
                                        ltc_tensor *weight, bool training, double eps,
                                        ltc_grad_which which, ltc_tensor **out);

/* scaled_dot_product_attention (attn_mask NULL when there is none): outs[0..3) = the
 * gradients of query, key and value, from one scaled_dot_product_attention_backward node
 * (the generated backward calls this once for the three). */
/* scaled_dot_product_attention's float attn_mask: dS = P * (grad . value^T - rowsum(grad *
 * output)) with P = exp(query . key^T * scale + attn_mask - logsumexp) (tril'd when causal),
 * [..., L, S] (the engine sums it to the mask's size). */
ltc_status ltc_grad_attention_mask_backward(ltc_tensor *grad, ltc_tensor *query, ltc_tensor *key,
                                            ltc_tensor *value, ltc_tensor *output,
                                            ltc_tensor *logsumexp, bool is_causal, double scale,
                                            ltc_tensor *attn_mask, ltc_tensor **out);
ltc_status ltc_grad_attention_backward(ltc_tensor *grad, ltc_tensor *query, ltc_tensor *key,
                                       ltc_tensor *value, ltc_tensor *output,
                                       ltc_tensor *logsumexp, bool is_causal, double scale,
                                       ltc_tensor *attn_mask, ltc_tensor **outs);
/* scaled_dot_product_attention.dropout[_mask]: as ltc_grad_attention_backward, from one
 * scaled_dot_product_attention_backward.dropout[_mask] node that regenerates the forward's
 * keep decisions from rng_state. */
ltc_status ltc_grad_attention_dropout_backward(ltc_tensor *grad, ltc_tensor *query,
                                               ltc_tensor *key, ltc_tensor *value,
                                               ltc_tensor *output, ltc_tensor *logsumexp,
                                               bool is_causal, double scale, double dropout_p,
                                               ltc_tensor *rng_state, ltc_tensor *attn_mask,
                                               ltc_tensor **outs);
/* The float attn_mask of scaled_dot_product_attention.dropout_mask: as
 * ltc_grad_attention_mask_backward when dropout_p is 0; LTC_ERR_ARG (not supported) else. */
ltc_status ltc_grad_attention_dropout_mask_backward(ltc_tensor *grad, ltc_tensor *query,
                                                    ltc_tensor *key, ltc_tensor *value,
                                                    ltc_tensor *output, ltc_tensor *logsumexp,
                                                    bool is_causal, double scale,
                                                    double dropout_p, ltc_tensor *attn_mask,
                                                    ltc_tensor **out);

/* lstm_layer: outs[0..4) = the gradients of input_proj, h0, c0 and weight_hh from one
 * lstm_layer_backward node (the generated backward calls this once for the four), given the
 * gradients of output (grad) and of c_seq (grad_c_seq). */
ltc_status ltc_grad_lstm_layer_backward(ltc_tensor *grad, ltc_tensor *grad_c_seq, ltc_tensor *h0,
                                        ltc_tensor *c0, ltc_tensor *weight_hh,
                                        ltc_tensor *output, ltc_tensor *c_seq, ltc_tensor *gates,
                                        bool reverse, ltc_tensor **outs);

/* gru_layer: outs[0..4) = the gradients of input_proj, h0, weight_hh and bias_hh from one
 * gru_layer_backward node, given the gradient of output (grad). */
ltc_status ltc_grad_gru_layer_backward(ltc_tensor *grad, ltc_tensor *h0, ltc_tensor *weight_hh,
                                       ltc_tensor *output, ltc_tensor *gates, bool reverse,
                                       ltc_tensor **outs);

#endif
