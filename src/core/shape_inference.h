/*
 * shape_inference.h - hand-written shape and dtype rules, one per op or shared by a family.
 *
 * The generated op entries call these at trace time; an error here is the error the user
 * sees (prefixed with the op's name), so messages name the shapes, dtypes or values.
 *
 * Signatures follow the op's schema in codegen/ops.yaml (the code generator checks that
 * each full_codegen op's function is declared here and prints the declaration to add):
 *   Tensor, Scalar -> const ltc_shape *    Tensor[] -> const ltc_shape *, int
 *   int, index, int? -> int64_t            dim, dim? -> int64_t (0-based, wrapped; LTC_NONE)
 *   int[] -> const int64_t *, int          float -> double      bool -> bool
 *   ScalarType, ScalarType? -> ltc_dtype (LTC_DTYPE_NONE when absent)
 * followed by `ltc_shape *out` (one entry per output). Tensor operands have already been
 * promoted per the op's `dtypes:` rule. Index arguments are still 1-based (negative from
 * the end) and are checked here.
 */
#ifndef LTC_SHAPE_INFERENCE_H
#define LTC_SHAPE_INFERENCE_H

#include "ltc.h"

/* ---- broadcasting (shape_inference.c) ------------------------------------------------------- */
/* PyTorch broadcasting of two shapes' sizes into out->dims/ndim (dtype untouched).
 * Fails with "shapes [2,3] and [4] are not broadcastable". */
ltc_status ltc_broadcast_shapes(const ltc_shape *a, const ltc_shape *b, ltc_shape *out);

/* ---- creation and random ops (shape_creation.c) --------------------------------------------- */
ltc_status ltc_shape_creation(const int64_t *size, int n_size, ltc_dtype dtype, ltc_shape *out);
/* rand, randn: as creation, and the dtype must be float32 or float64 (PyTorch raises at the
 * call for an integer or bool dtype). */
ltc_status ltc_shape_rand(const int64_t *size, int n_size, ltc_dtype dtype, ltc_shape *out);
ltc_status ltc_shape_scalar_tensor(double value, ltc_dtype dtype, ltc_shape *out);
ltc_status ltc_shape_full(const int64_t *size, int n_size, const ltc_shape *fill_value,
                          ltc_dtype dtype, ltc_shape *out);
ltc_status ltc_shape_arange(double start, double end, double step, ltc_dtype dtype,
                            ltc_shape *out);
ltc_status ltc_shape_linspace(double start, double end, int64_t steps, ltc_dtype dtype,
                              ltc_shape *out);
ltc_status ltc_shape_eye(int64_t rows, int64_t cols, ltc_dtype dtype, ltc_shape *out);
ltc_status ltc_shape_randint(int64_t low, int64_t high, const int64_t *size, int n_size,
                             ltc_dtype dtype, ltc_shape *out);
ltc_status ltc_shape_bernoulli(const ltc_shape *self, ltc_shape *out);
ltc_status ltc_shape_bernoulli_p(const ltc_shape *self, double p, ltc_shape *out);
/* multinomial: weights [C] or [N, C] of a floating dtype; num_samples <= C without
 * replacement. randperm: size >= 0, int64 unless dtype says (not bool). */
ltc_status ltc_shape_multinomial(const ltc_shape *self, int64_t num_samples, bool replacement,
                                 ltc_shape *out);
ltc_status ltc_shape_randperm(int64_t size, ltc_dtype dtype, ltc_shape *out);
/* self's shape and dtype, any dtype (clone, contiguous). */
ltc_status ltc_shape_copy(const ltc_shape *self, ltc_shape *out);

/* ---- elementwise (shape_inference.c) -------------------------------------------------------- */
ltc_status ltc_shape_binary(const ltc_shape *self, const ltc_shape *other, ltc_shape *out);
/* sub: ltc_shape_binary, but a bool operand is an error (PyTorch: "Subtraction, the `-`
 * operator, with a bool tensor is not supported"). */
ltc_status ltc_shape_sub(const ltc_shape *self, const ltc_shape *other, ltc_shape *out);
/* sign: self's shape and dtype, bool included (PyTorch: sign of a bool tensor is itself). */
ltc_status ltc_shape_sign(const ltc_shape *self, ltc_shape *out);
ltc_status ltc_shape_compare(const ltc_shape *self, const ltc_shape *other, ltc_shape *out);
ltc_status ltc_shape_unary(const ltc_shape *self, ltc_shape *out);
ltc_status ltc_shape_to(const ltc_shape *self, ltc_dtype dtype, ltc_shape *out);
/* A bool result of self's sizes, any dtype (isnan, isinf, logical_not). */
ltc_status ltc_shape_predicate(const ltc_shape *self, ltc_shape *out);
ltc_status ltc_shape_leaky_relu(const ltc_shape *self, double negative_slope, ltc_shape *out);
/* order is 0 or 1 (the orders of polygamma with a kernel). */
ltc_status ltc_shape_polygamma(const ltc_shape *self, int64_t order, ltc_shape *out);
/* At least one bound; not bool. */
ltc_status ltc_shape_clamp(const ltc_shape *self, double min, double max, ltc_shape *out);
/* condition must be bool; the three broadcast; the dtype is self's (promoted with other). */
ltc_status ltc_shape_where(const ltc_shape *condition, const ltc_shape *self,
                           const ltc_shape *other, ltc_shape *out);
/* Three operands broadcast together, in self's (promoted) dtype: lerp. */
ltc_status ltc_shape_ternary(const ltc_shape *self, const ltc_shape *a, const ltc_shape *b,
                             ltc_shape *out);
ltc_status ltc_shape_addcmul(const ltc_shape *self, const ltc_shape *tensor1,
                             const ltc_shape *tensor2, double value, ltc_shape *out);

/* ---- reductions and scans (shape_reduce.c); cumprod uses ltc_shape_cumsum, cummin ltc_shape_cummax  */
ltc_status ltc_shape_sum(const ltc_shape *self, int64_t dim, bool keepdim, ltc_shape *out);
ltc_status ltc_shape_mean(const ltc_shape *self, int64_t dim, bool keepdim, ltc_shape *out);
ltc_status ltc_shape_max(const ltc_shape *self, ltc_shape *out);
ltc_status ltc_shape_max_dim(const ltc_shape *self, int64_t dim, bool keepdim, ltc_shape *out);
ltc_status ltc_shape_argmax(const ltc_shape *self, int64_t dim, bool keepdim, ltc_shape *out);
ltc_status ltc_shape_var(const ltc_shape *self, int64_t dim, bool unbiased, bool keepdim,
                         ltc_shape *out);
ltc_status ltc_shape_norm(const ltc_shape *self, double p, int64_t dim, bool keepdim,
                          ltc_shape *out);
/* all, any: a bool result. */
ltc_status ltc_shape_all(const ltc_shape *self, int64_t dim, bool keepdim, ltc_shape *out);
/* self's sizes; integers and bool give int64. */
ltc_status ltc_shape_cumsum(const ltc_shape *self, int64_t dim, ltc_shape *out);
/* cummax, cummin: values of self's shape and dtype, int64 indices (shape_sort.c); cumprod
 * uses ltc_shape_cumsum */
ltc_status ltc_shape_cummax(const ltc_shape *self, int64_t dim, ltc_shape *out);

/* ---- sorting and selection (shape_sort.c); median uses ltc_shape_max, median.dim and mode
 * ltc_shape_max_dim */
ltc_status ltc_shape_sort(const ltc_shape *self, int64_t dim, bool descending, ltc_shape *out);
ltc_status ltc_shape_argsort(const ltc_shape *self, int64_t dim, bool descending, ltc_shape *out);
/* 0 <= k <= the size of dim */
ltc_status ltc_shape_topk(const ltc_shape *self, int64_t k, int64_t dim, bool largest,
                          bool sorted, ltc_shape *out);
/* 1 <= k <= the size of dim */
ltc_status ltc_shape_kthvalue(const ltc_shape *self, int64_t k, int64_t dim, bool keepdim,
                              ltc_shape *out);

/* ---- linear algebra (shape_linalg.c): operands of one floating dtype ------------------------ */
ltc_status ltc_shape_matmul(const ltc_shape *self, const ltc_shape *other, ltc_shape *out);
ltc_status ltc_shape_mm(const ltc_shape *self, const ltc_shape *mat2, ltc_shape *out);
ltc_status ltc_shape_bmm(const ltc_shape *self, const ltc_shape *mat2, ltc_shape *out);
ltc_status ltc_shape_dot(const ltc_shape *self, const ltc_shape *other, ltc_shape *out);
ltc_status ltc_shape_outer(const ltc_shape *self, const ltc_shape *vec2, ltc_shape *out);
/* tril, triu: self has at least 2 dims; the result is self's shape. */
ltc_status ltc_shape_triangle(const ltc_shape *self, int64_t diagonal, ltc_shape *out);
ltc_status ltc_shape_linear(const ltc_shape *self, const ltc_shape *weight, const ltc_shape *bias,
                            ltc_shape *out);
ltc_status ltc_shape_linear_nobias(const ltc_shape *self, const ltc_shape *weight, ltc_shape *out);
/* grad_output [..., out] (self's leading dims, weight's out): out[0] = self's shape, out[1]
 * = weight's, out[2] = [out]. */
ltc_status ltc_shape_linear_backward(const ltc_shape *grad_output, const ltc_shape *self,
                                     const ltc_shape *weight, ltc_shape *out);
ltc_status ltc_shape_addmm(const ltc_shape *self, const ltc_shape *mat1, const ltc_shape *mat2,
                           double beta, double alpha, ltc_shape *out);

/* ---- shape ops and views (shape_views.c). Dims in int/int[] arguments are 1-based or negative  */
ltc_status ltc_shape_transpose(const ltc_shape *self, int64_t dim0, int64_t dim1, ltc_shape *out);
ltc_status ltc_shape_t(const ltc_shape *self, ltc_shape *out);
ltc_status ltc_shape_view(const ltc_shape *self, const int64_t *size, int n_size, ltc_shape *out);
ltc_status ltc_shape_narrow(const ltc_shape *self, int64_t dim, int64_t start, int64_t length,
                            ltc_shape *out);
ltc_status ltc_shape_select(const ltc_shape *self, int64_t dim, int64_t index, ltc_shape *out);
ltc_status ltc_shape_broadcast_to(const ltc_shape *self, const int64_t *size, int n_size,
                                  ltc_shape *out);
ltc_status ltc_shape_narrow_scatter(const ltc_shape *self, const ltc_shape *src, int64_t dim,
                                    int64_t start, ltc_shape *out);
ltc_status ltc_shape_select_scatter(const ltc_shape *self, const ltc_shape *src, int64_t dim,
                                    int64_t index, ltc_shape *out);
ltc_status ltc_shape_permute(const ltc_shape *self, const int64_t *dims, int n_dims,
                             ltc_shape *out);
/* dim in 1..ndim+1 or -(ndim+1)..-1 */
ltc_status ltc_shape_unsqueeze(const ltc_shape *self, int64_t dim, ltc_shape *out);
ltc_status ltc_shape_squeeze(const ltc_shape *self, ltc_shape *out);
ltc_status ltc_shape_squeeze_dim(const ltc_shape *self, int64_t dim, ltc_shape *out);
ltc_status ltc_shape_flatten(const ltc_shape *self, int64_t start_dim, int64_t end_dim,
                             ltc_shape *out);
ltc_status ltc_shape_expand(const ltc_shape *self, const int64_t *size, int n_size,
                            ltc_shape *out);
ltc_status ltc_shape_cat(const ltc_shape *tensors, int n_tensors, int64_t dim, ltc_shape *out);
/* dim in 1..ndim+1 or negative */
ltc_status ltc_shape_stack(const ltc_shape *tensors, int n_tensors, int64_t dim, ltc_shape *out);
ltc_status ltc_shape_repeat(const ltc_shape *self, const int64_t *repeats, int n_repeats,
                            ltc_shape *out);
ltc_status ltc_shape_flip(const ltc_shape *self, const int64_t *dims, int n_dims, ltc_shape *out);

/* ---- indexing and scattering (shape_index.c); index data is 1-based ------------------------- */
ltc_status ltc_shape_index_select(const ltc_shape *self, int64_t dim, const ltc_shape *index,
                                  ltc_shape *out);
ltc_status ltc_shape_index_add(const ltc_shape *self, int64_t dim, const ltc_shape *index,
                               const ltc_shape *source, ltc_shape *out);
ltc_status ltc_shape_gather(const ltc_shape *self, int64_t dim, const ltc_shape *index,
                            ltc_shape *out);
ltc_status ltc_shape_scatter_add(const ltc_shape *self, int64_t dim, const ltc_shape *index,
                                 const ltc_shape *src, ltc_shape *out);
ltc_status ltc_shape_scatter(const ltc_shape *self, int64_t dim, const ltc_shape *index,
                             const ltc_shape *src, ltc_shape *out);
ltc_status ltc_shape_one_hot(const ltc_shape *self, int64_t num_classes, ltc_shape *out);
/* mask bool, value 0-d; the result broadcasts self and mask, in self's dtype. */
ltc_status ltc_shape_masked_fill(const ltc_shape *self, const ltc_shape *mask,
                                 const ltc_shape *value, ltc_shape *out);
ltc_status ltc_shape_embedding(const ltc_shape *weight, const ltc_shape *indices, ltc_shape *out);

/* ---- losses (shape_loss.c); class indices are 1-based --------------------------------------- */
ltc_status ltc_shape_nll_loss(const ltc_shape *self, const ltc_shape *target, int64_t reduction,
                              ltc_shape *out);
ltc_status ltc_shape_nll_loss_backward(const ltc_shape *grad_output, const ltc_shape *self,
                                       const ltc_shape *target, int64_t reduction,
                                       ltc_shape *out);
ltc_status ltc_shape_mse_loss(const ltc_shape *self, const ltc_shape *target, int64_t reduction,
                              ltc_shape *out);
/* assert_in_range: self's shape and dtype (any numeric dtype; low <= high, neither NaN). */
ltc_status ltc_shape_assert_in_range(const ltc_shape *self, double low, double high, ltc_shape *out);

/* ---- neural-network functions (shape_nn.c) -------------------------------------------------- */
ltc_status ltc_shape_softmax(const ltc_shape *self, int64_t dim, ltc_shape *out);
ltc_status ltc_shape_dropout(const ltc_shape *self, double p, bool train, ltc_shape *out);
ltc_status ltc_shape_layer_norm(const ltc_shape *self, const int64_t *normalized_shape,
                                int n_normalized_shape, const ltc_shape *weight,
                                const ltc_shape *bias, double eps, ltc_shape *out);
/* out[0] = self's shape (grad_input), out[1] and out[2] = weight's (grad_weight, grad_bias);
 * grad_output must equal self, weight fit as layer_norm's. */
ltc_status ltc_shape_layer_norm_backward(const ltc_shape *grad_output, const ltc_shape *self,
                                         const int64_t *normalized_shape, int n_normalized_shape,
                                         const ltc_shape *weight, double eps, ltc_shape *out);
ltc_status ltc_shape_batch_norm(const ltc_shape *self, const ltc_shape *running_mean,
                                const ltc_shape *running_var, const ltc_shape *weight,
                                const ltc_shape *bias, bool training, double eps,
                                ltc_shape *out);

/* ---- convolution and pooling (shape_cnn.c): inputs [N, C, H, W] or [C, H, W]; pairs are
 * int[2] {height, width} */
ltc_status ltc_shape_conv2d(const ltc_shape *self, const ltc_shape *weight, const ltc_shape *bias,
                            const int64_t *stride, int n_stride, const int64_t *padding,
                            int n_padding, const int64_t *dilation, int n_dilation,
                            int64_t groups, ltc_shape *out);
ltc_status ltc_shape_conv2d_nobias(const ltc_shape *self, const ltc_shape *weight,
                                   const int64_t *stride, int n_stride, const int64_t *padding,
                                   int n_padding, const int64_t *dilation, int n_dilation,
                                   int64_t groups, ltc_shape *out);
ltc_status ltc_shape_conv2d_backward_input(const ltc_shape *grad_output, const ltc_shape *weight,
                                           const int64_t *input_size, int n_input_size,
                                           const int64_t *stride, int n_stride,
                                           const int64_t *padding, int n_padding,
                                           const int64_t *dilation, int n_dilation,
                                           int64_t groups, ltc_shape *out);
ltc_status ltc_shape_conv2d_backward_weight(const ltc_shape *grad_output, const ltc_shape *self,
                                            const int64_t *weight_size, int n_weight_size,
                                            const int64_t *stride, int n_stride,
                                            const int64_t *padding, int n_padding,
                                            const int64_t *dilation, int n_dilation,
                                            int64_t groups, ltc_shape *out);
/* max_pool2d (and avg_pool2d with dilation 1): PyTorch's pooling_output_shape. */
ltc_status ltc_shape_pool2d(const ltc_shape *self, const int64_t *kernel_size, int n_kernel_size,
                            const int64_t *stride, int n_stride, const int64_t *padding,
                            int n_padding, const int64_t *dilation, int n_dilation,
                            bool ceil_mode, ltc_shape *out);
/* grad_output must have the pooled size; the result has self's. */
ltc_status ltc_shape_pool2d_backward(const ltc_shape *grad_output, const ltc_shape *self,
                                     const int64_t *kernel_size, int n_kernel_size,
                                     const int64_t *stride, int n_stride, const int64_t *padding,
                                     int n_padding, const int64_t *dilation, int n_dilation,
                                     bool ceil_mode, ltc_shape *out);
ltc_status ltc_shape_avg_pool2d(const ltc_shape *self, const int64_t *kernel_size,
                                int n_kernel_size, const int64_t *stride, int n_stride,
                                const int64_t *padding, int n_padding, bool ceil_mode,
                                bool count_include_pad, ltc_shape *out);
ltc_status ltc_shape_avg_pool2d_backward(const ltc_shape *grad_output, const ltc_shape *self,
                                         const int64_t *kernel_size, int n_kernel_size,
                                         const int64_t *stride, int n_stride,
                                         const int64_t *padding, int n_padding, bool ceil_mode,
                                         bool count_include_pad, ltc_shape *out);

/* ---- recurrences (shape_rnn.c) ----------------------------------------------------------- */

/* lstm_layer: input_proj [T, B, 4H], h0 and c0 [B, H], weight_hh [4H, H], one floating dtype:
 * out[0] output and out[1] c_seq [T, B, H], out[2] gates [T, B, 4H]. */
ltc_status ltc_shape_lstm_layer(const ltc_shape *input_proj, const ltc_shape *h0,
                                const ltc_shape *c0, const ltc_shape *weight_hh, bool reverse,
                                ltc_shape *out);
/* lstm_layer_backward: grad_output, grad_c_seq, output, c_seq [T, B, H] beside the forward's
 * operands and gates: out = input_proj's, h0's, c0's and weight_hh's shapes. */
ltc_status ltc_shape_lstm_layer_backward(const ltc_shape *grad_output,
                                         const ltc_shape *grad_c_seq, const ltc_shape *h0,
                                         const ltc_shape *c0, const ltc_shape *weight_hh,
                                         const ltc_shape *output, const ltc_shape *c_seq,
                                         const ltc_shape *gates, bool reverse, ltc_shape *out);
/* gru_layer: input_proj [T, B, 3H], h0 [B, H], weight_hh [3H, H], bias_hh [3H]: out[0]
 * output [T, B, H], out[1] gates [T, B, 4H]. */
ltc_status ltc_shape_gru_layer(const ltc_shape *input_proj, const ltc_shape *h0,
                               const ltc_shape *weight_hh, const ltc_shape *bias_hh, bool reverse,
                               ltc_shape *out);
/* gru_layer_backward: grad_output and output [T, B, H], gates [T, B, 4H]: out = input_proj's,
 * h0's, weight_hh's and bias_hh's shapes. */
ltc_status ltc_shape_gru_layer_backward(const ltc_shape *grad_output, const ltc_shape *h0,
                                        const ltc_shape *weight_hh, const ltc_shape *output,
                                        const ltc_shape *gates, bool reverse, ltc_shape *out);

/* ---- attention (shape_attention.c) --------------------------------------------------------
 * query [..., L, E], key [..., S, E], value [..., S, Ev], one floating dtype, the same leading
 * dims; attn_mask bool or query's dtype, broadcast to [..., L, S]; scale finite. The forward
 * gives output [..., L, Ev] and logsumexp [..., L]; the backward query's, key's and value's
 * shapes (grad_output and output [..., L, Ev], logsumexp [..., L]). */
ltc_status ltc_shape_attention(const ltc_shape *query, const ltc_shape *key,
                               const ltc_shape *value, bool is_causal, double scale,
                               ltc_shape *out);
ltc_status ltc_shape_attention_mask(const ltc_shape *query, const ltc_shape *key,
                                    const ltc_shape *value, bool is_causal, double scale,
                                    const ltc_shape *attn_mask, ltc_shape *out);
ltc_status ltc_shape_attention_backward(const ltc_shape *grad_output, const ltc_shape *query,
                                        const ltc_shape *key, const ltc_shape *value,
                                        const ltc_shape *output, const ltc_shape *logsumexp,
                                        bool is_causal, double scale, ltc_shape *out);
/* qkv [N, L, 3E] (E a multiple of heads >= 1): out[0] = [N, L, E], out[1] = [N, heads, L]. */
ltc_status ltc_shape_attention_packed(const ltc_shape *qkv, int64_t heads, bool is_causal,
                                      double scale, ltc_shape *out);
/* grad_output and output [N, L, E], logsumexp [N, heads, L] as the forward gives them: out =
 * qkv's shape. */
ltc_status ltc_shape_attention_packed_backward(const ltc_shape *grad_output, const ltc_shape *qkv,
                                               const ltc_shape *output, const ltc_shape *logsumexp,
                                               int64_t heads, bool is_causal, double scale,
                                               ltc_shape *out);
ltc_status ltc_shape_attention_backward_mask(const ltc_shape *grad_output, const ltc_shape *query,
                                             const ltc_shape *key, const ltc_shape *value,
                                             const ltc_shape *output, const ltc_shape *logsumexp,
                                             bool is_causal, double scale,
                                             const ltc_shape *attn_mask, ltc_shape *out);
/* The dropout overloads: dropout_p in [0, 1], rng_state int64 [2] ({seed, offset}) or NULL
 * (the entry then makes the default generator's state, advanced by ltc_rng_numel_attention). */
/* `random: ltc_rng_numel_attention` (ops.yaml): the numbers the dropout overloads draw, one
 * per probability of [..., L, S]: the numel of logsumexp [..., L] (out[1]) times S, key's
 * dim -2 (in[1]). */
int64_t ltc_rng_numel_attention(const ltc_shape *const *in, const ltc_shape *out);
ltc_status ltc_shape_attention_dropout(const ltc_shape *query, const ltc_shape *key,
                                       const ltc_shape *value, bool is_causal, double scale,
                                       double dropout_p, const ltc_shape *rng_state,
                                       ltc_shape *out);
ltc_status ltc_shape_attention_dropout_mask(const ltc_shape *query, const ltc_shape *key,
                                            const ltc_shape *value, bool is_causal, double scale,
                                            double dropout_p, const ltc_shape *rng_state,
                                            const ltc_shape *attn_mask, ltc_shape *out);
ltc_status ltc_shape_attention_backward_dropout(const ltc_shape *grad_output,
                                                const ltc_shape *query, const ltc_shape *key,
                                                const ltc_shape *value, const ltc_shape *output,
                                                const ltc_shape *logsumexp, bool is_causal,
                                                double scale, double dropout_p,
                                                const ltc_shape *rng_state, ltc_shape *out);
ltc_status ltc_shape_attention_backward_dropout_mask(
    const ltc_shape *grad_output, const ltc_shape *query, const ltc_shape *key,
    const ltc_shape *value, const ltc_shape *output, const ltc_shape *logsumexp, bool is_causal,
    double scale, double dropout_p, const ltc_shape *rng_state, const ltc_shape *attn_mask,
    ltc_shape *out);

/* ---- collectives (shape_collective.c): shapes only; ranks, roots and sizes are checked when
 * the graph runs, against the communicator (the core knows none) */
/* self's shape; op in 0..4 (sum, avg, max, min, prod); avg needs a floating dtype. */
ltc_status ltc_shape_all_reduce(const ltc_shape *self, int64_t op, ltc_shape *out);
/* self's shape; root >= 0. */
ltc_status ltc_shape_broadcast(const ltc_shape *self, int64_t root, ltc_shape *out);
ltc_status ltc_shape_reduce(const ltc_shape *self, int64_t root, ltc_shape *out);
/* self (at least 1 dim) with dim 0 times world_size (>= 1). */
ltc_status ltc_shape_all_gather(const ltc_shape *self, int64_t world_size, ltc_shape *out);
/* self (at least 1 dim, dim 0 divisible by world_size >= 1) with dim 0 over world_size. */
ltc_status ltc_shape_reduce_scatter(const ltc_shape *self, int64_t op, int64_t world_size,
                                    ltc_shape *out);

/* ---- checks shared by the shape_*.c rules ------------------------------------------------- */

/* "<what> must be of a floating dtype, got <dtype>" unless s is of one. */
ltc_status ltc_shape_need_float(const ltc_shape *s, const char *what);
/* "<what> must be an int64 or int32 tensor, got <dtype>" unless s is one (index data). */
ltc_status ltc_shape_need_int(const ltc_shape *s, const char *what);
/* "<an> and <bn> must have one dtype, got <dtype> and <dtype>" unless they have. */
ltc_status ltc_shape_same_dtype(const ltc_shape *a, const ltc_shape *b, const char *an,
                                const char *bn);
/* "<what> must be between 0 and 1, got <p>" unless 0 <= p <= 1 (NaN fails). */
ltc_status ltc_shape_need_probability(double p, const char *what);
/* scatter and scatter_add: src has index's number of dims and is at least as large in each. */
ltc_status ltc_shape_src_covers_index(const ltc_shape *index, const ltc_shape *src);

/* Maps a 1-based or negative index onto 0..size-1 without checking (kernels; the shape
 * function has checked it). */
static inline int64_t ltc_index_wrap(int64_t index, int64_t size) {
    return index > 0 ? index - 1 : size + index;
}

#endif
