/*
 * grad_formulas_nn.c - the derivative helpers of matmul, linear, conv2d's bias, cat, stack,
 * repeat, layer_norm and batch_norm: the C twins of lua/ltc/autograd.lua's F functions of the
 * same names (grad_formulas.h says the conventions).
 */
#include <stdlib.h>

#include "grad_formulas.h"

#define TRY(x)                                                                                     \
    do {                                                                                           \
        if ((st = (x)) != LTC_OK) goto done;                                                       \
    } while (0)

static void release_all(ltc_tensor **t, int n) {
    for (int i = 0; i < n; i++)
        ltc_tensor_release(t[i]);
}

static const ltc_shape *shape_of(const ltc_tensor *t) {
    return ltc_tensor_shape(t);
}

/* t reshaped to its own size with the entry at position `drop` (0-based) removed. */
static ltc_status drop_dim(ltc_tensor *t, int drop, ltc_tensor **out) {
    const ltc_shape *s = shape_of(t);
    int64_t sz[LTC_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < s->ndim; i++)
        if (i != drop) sz[n++] = s->dims[i];
    return ltc_reshape(t, sz, n, out);
}

ltc_status ltc_grad_matmul_backward(ltc_tensor *grad, ltc_tensor *self, ltc_tensor *other,
                                    int64_t which, ltc_tensor **out) {
    int sd = shape_of(self)->ndim, od = shape_of(other)->ndim;
    if (sd == 1 && od == 1) return ltc_mul(grad, which == 1 ? other : self, out);
    ltc_tensor *x[7] = {0};
    ltc_status st = LTC_OK;
    ltc_tensor *s = self, *o = other, *g = grad;
    if (sd == 1) {
        int64_t sz[2] = {1, shape_of(self)->dims[0]};
        TRY(ltc_reshape(self, sz, 2, &x[0]));
        s = x[0];
    }
    if (od == 1) {
        int64_t sz[2] = {shape_of(other)->dims[0], 1};
        TRY(ltc_reshape(other, sz, 2, &x[1]));
        o = x[1];
    }
    if (sd == 1) {
        TRY(ltc_unsqueeze(g, shape_of(g)->ndim, &x[2]));
        g = x[2];
    }
    if (od == 1) {
        TRY(ltc_unsqueeze(g, shape_of(g)->ndim + 1, &x[3]));
        g = x[3];
    }
    if (which == 1) {
        TRY(ltc_transpose(o, -1, -2, &x[4]));
        TRY(ltc_matmul(g, x[4], &x[5]));
        if (sd == 1)
            st = drop_dim(x[5], shape_of(x[5])->ndim - 2, out);
        else
            *out = ltc_tensor_retain(x[5]);
    } else {
        TRY(ltc_transpose(s, -1, -2, &x[4]));
        TRY(ltc_matmul(x[4], g, &x[5]));
        if (od == 1)
            st = drop_dim(x[5], shape_of(x[5])->ndim - 1, out);
        else
            *out = ltc_tensor_retain(x[5]);
    }
done:
    release_all(x, 7);
    return st;
}

ltc_status ltc_grad_linear_weight_backward(ltc_tensor *grad, ltc_tensor *self, ltc_tensor **out) {
    const ltc_shape *gs = shape_of(grad), *ss = shape_of(self);
    if (gs->ndim == 0 || ss->ndim == 0)
        return ltc_errorf(LTC_ERR_ARG, "linear backward: 0-d operands");
    int64_t rows = 1;
    for (int i = 0; i < gs->ndim - 1; i++)
        rows *= gs->dims[i];
    int64_t g2[2] = {rows, gs->dims[gs->ndim - 1]}, s2[2] = {rows, ss->dims[ss->ndim - 1]};
    ltc_tensor *x[3] = {0};
    ltc_status st = LTC_OK;
    TRY(ltc_reshape(grad, g2, 2, &x[0]));
    TRY(ltc_t(x[0], &x[1]));
    TRY(ltc_reshape(self, s2, 2, &x[2]));
    st = ltc_matmul(x[1], x[2], out);
done:
    release_all(x, 3);
    return st;
}

ltc_status ltc_grad_linear_backward(ltc_tensor *grad, ltc_tensor *self, ltc_tensor *weight,
                                    ltc_tensor **outs) {
    if (!ltc_grad_enabled()) return ltc_linear_backward(grad, self, weight, outs);
    ltc_status st = ltc_matmul(grad, weight, &outs[0]);
    if (!st) st = ltc_grad_linear_weight_backward(grad, self, &outs[1]);
    if (!st) outs[2] = ltc_tensor_retain(grad);
    if (st)
        for (int i = 0; i < 3; i++) {
            ltc_tensor_release(outs[i]);
            outs[i] = NULL;
        }
    return st;
}

ltc_status ltc_grad_conv2d_bias_backward(ltc_tensor *grad, ltc_tensor **out) {
    int nd = shape_of(grad)->ndim;
    ltc_tensor *g = ltc_tensor_retain(grad), *next = NULL;
    ltc_status st = LTC_OK;
    for (int d = nd; d >= 1; d--) {
        if (d == nd - 2) continue;
        TRY(ltc_sum(g, d, false, &next));
        ltc_tensor_release(g);
        g = next, next = NULL;
    }
    *out = g, g = NULL;
done:
    ltc_tensor_release(g);
    return st;
}

ltc_status ltc_grad_cat_backward(ltc_tensor *grad, ltc_tensor *const *tensors, int n, int64_t dim,
                                 ltc_tensor **outs) {
    ltc_status st = LTC_OK;
    ltc_tensor **r = calloc((size_t)(n > 0 ? n : 1), sizeof *r);
    if (!r) return ltc_errorf(LTC_ERR_NOMEM, "cat backward: out of memory");
    int64_t at = 1;
    for (int j = 0; j < n; j++) {
        const ltc_shape *s = shape_of(tensors[j]);
        if (s->ndim == 1 && s->dims[0] == 0 && shape_of(grad)->ndim != 1) {
            TRY(ltc_grad_zeros_like(tensors[j], &r[j]));
            continue;
        }
        int64_t len;
        TRY(ltc_grad_size(tensors[j], dim, &len));
        TRY(ltc_narrow(grad, dim, at, len, &r[j]));
        at += len;
    }
    for (int j = 0; j < n; j++)
        outs[j] = r[j], r[j] = NULL;
done:
    release_all(r, n);
    free(r);
    return st;
}

ltc_status ltc_grad_stack_backward(ltc_tensor *grad, ltc_tensor *const *tensors, int n, int64_t dim,
                                   ltc_tensor **outs) {
    (void)tensors;
    ltc_status st = LTC_OK;
    if (dim < 0) dim += shape_of(grad)->ndim + 1;
    ltc_tensor **r = calloc((size_t)(n > 0 ? n : 1), sizeof *r);
    if (!r) return ltc_errorf(LTC_ERR_NOMEM, "stack backward: out of memory");
    for (int j = 0; j < n; j++)
        TRY(ltc_select(grad, dim, j + 1, &r[j]));
    for (int j = 0; j < n; j++)
        outs[j] = r[j], r[j] = NULL;
done:
    release_all(r, n);
    free(r);
    return st;
}

ltc_status ltc_grad_repeat_backward(ltc_tensor *grad, ltc_tensor *self, const int64_t *repeats,
                                    int n, ltc_tensor **out) {
    const ltc_shape *ss = shape_of(self);
    int sd = ss->ndim;
    if (n > LTC_MAX_DIMS || n < sd)
        return ltc_errorf(LTC_ERR_ARG, "repeat backward: %d repeats for a %d-d tensor", n, sd);
    int64_t s[LTC_MAX_DIMS], sizes[LTC_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        s[i] = i >= n - sd ? ss->dims[i - (n - sd)] : 1;
        sizes[i] = repeats[i] * s[i];
    }
    ltc_tensor *g = ltc_tensor_retain(grad), *v = NULL, *next = NULL;
    ltc_status st = LTC_OK;
    for (int i = n - 1; i >= 0; i--) {
        int64_t before = 1, after = 1;
        for (int j = 0; j < i; j++)
            before *= sizes[j];
        for (int j = i + 1; j < n; j++)
            after *= sizes[j];
        int64_t v3[3] = {before, repeats[i], s[i] * after};
        TRY(ltc_reshape(g, v3, 3, &v));
        TRY(ltc_sum(v, 2, false, &next));
        ltc_tensor_release(g), ltc_tensor_release(v);
        g = next, v = NULL, next = NULL;
        sizes[i] = s[i];
    }
    st = ltc_reshape(g, ss->dims, sd, out);
done:
    ltc_tensor_release(g);
    ltc_tensor_release(v);
    return st;
}

ltc_status ltc_grad_layer_norm_backward(ltc_tensor *grad, ltc_tensor *self,
                                        const int64_t *normalized_shape, int k, ltc_tensor *weight,
                                        double eps, ltc_tensor **outs) {
    const ltc_shape *ss = shape_of(self);
    if (k > ss->ndim || k < 0)
        return ltc_errorf(LTC_ERR_ARG, "layer_norm backward: %d normalized dims of a %d-d tensor",
                          k, ss->ndim);
    if (!ltc_grad_enabled() && weight)
        return ltc_layer_norm_backward(grad, self, normalized_shape, k, weight, eps, outs);
    int64_t n = 1, lead[LTC_MAX_DIMS + 1];
    for (int i = 0; i < k; i++)
        n *= normalized_shape[i];
    int nl = ss->ndim - k;
    for (int i = 0; i < nl; i++)
        lead[i] = ss->dims[i];
    lead[nl++] = n;
    ltc_tensor *x[20] = {0};
    ltc_status st = LTC_OK;
    TRY(ltc_reshape(self, lead, nl, &x[0])); /* xf */
    TRY(ltc_mean(x[0], -1, true, &x[1]));
    TRY(ltc_sub(x[0], x[1], &x[2])); /* d */
    TRY(ltc_mul(x[2], x[2], &x[3]));
    TRY(ltc_mean(x[3], -1, true, &x[4]));
    TRY(ltc_grad_binop_s(ltc_add, x[4], eps, false, false, &x[5]));
    TRY(ltc_grad_binop_s(ltc_pow, x[5], -0.5, false, false, &x[6])); /* rstd */
    TRY(ltc_mul(x[2], x[6], &x[7]));                                 /* xhat */
    TRY(ltc_reshape(x[7], ss->dims, ss->ndim, &x[17]));
    TRY(ltc_mul(grad, x[17], &outs[1])); /* weight's, summed by the engine */
    outs[2] = ltc_tensor_retain(grad);   /* bias's, summed by the engine */
    if (weight)
        TRY(ltc_mul(grad, weight, &x[8]));
    else
        x[8] = ltc_tensor_retain(grad);      /* no weight: ones */
    TRY(ltc_reshape(x[8], lead, nl, &x[9])); /* dxhat */
    TRY(ltc_mean(x[9], -1, true, &x[10]));
    TRY(ltc_sub(x[9], x[10], &x[11]));
    TRY(ltc_mul(x[9], x[7], &x[12]));
    TRY(ltc_mean(x[12], -1, true, &x[13]));
    TRY(ltc_mul(x[7], x[13], &x[14]));
    TRY(ltc_sub(x[11], x[14], &x[15]));
    TRY(ltc_mul(x[6], x[15], &x[16]));
    st = ltc_reshape(x[16], ss->dims, ss->ndim, &outs[0]);
done:
    if (st)
        for (int i = 0; i < 3; i++) {
            ltc_tensor_release(outs[i]);
            outs[i] = NULL;
        }
    release_all(x, 20);
    return st;
}

/* t summed over every dim but the second, kept (batch_norm's per-channel reduction). */
static ltc_status red(ltc_tensor *t, ltc_tensor **out) {
    int nd = shape_of(t)->ndim;
    ltc_tensor *g = ltc_tensor_retain(t), *next = NULL;
    ltc_status st = LTC_OK;
    for (int d = nd; d >= 1; d--) {
        if (d == 2) continue;
        TRY(ltc_sum(g, d, true, &next));
        ltc_tensor_release(g);
        g = next, next = NULL;
    }
    *out = g, g = NULL;
done:
    ltc_tensor_release(g);
    return st;
}

ltc_status ltc_grad_batch_norm_backward(ltc_tensor *grad, ltc_tensor *self,
                                        ltc_tensor *running_mean, ltc_tensor *running_var,
                                        ltc_tensor *weight, bool training, double eps,
                                        ltc_grad_which which, ltc_tensor **out) {
    const ltc_shape *ss = shape_of(self);
    if (ss->ndim < 2)
        return ltc_errorf(LTC_ERR_ARG, "batch_norm backward: self is %d-d, expected [N, C, ...]",
                          ss->ndim);
    int nd = ss->ndim;
    int64_t c = ss->dims[1], shape[LTC_MAX_DIMS];
    for (int i = 0; i < nd; i++)
        shape[i] = i == 1 ? c : 1;
    ltc_tensor *x[24] = {0};
    ltc_status st = LTC_OK;
    if (which == LTC_GRAD_BIAS) {
        TRY(red(grad, &x[0]));
        st = ltc_reshape(x[0], &c, 1, out);
        goto done;
    }
    if (c == 0) {
        st = ltc_errorf(LTC_ERR_ARG, "batch_norm backward: no channels");
        goto done;
    }
    int64_t n = ltc_shape_numel(ss) / c;
    ltc_tensor *mean, *var;
    if (training) {
        TRY(red(self, &x[0]));
        TRY(ltc_grad_binop_s(ltc_div, x[0], (double)n, true, false, &x[1])); /* mean */
        TRY(ltc_sub(self, x[1], &x[2]));
        TRY(ltc_mul(x[2], x[2], &x[3]));
        TRY(red(x[3], &x[4]));
        TRY(ltc_grad_binop_s(ltc_div, x[4], (double)n, true, false, &x[5])); /* var */
    } else {
        TRY(ltc_reshape(running_mean, shape, nd, &x[1]));
        TRY(ltc_reshape(running_var, shape, nd, &x[5]));
    }
    mean = x[1], var = x[5];
    TRY(ltc_grad_binop_s(ltc_add, var, eps, false, false, &x[6]));
    TRY(ltc_grad_binop_s(ltc_pow, x[6], -0.5, false, false, &x[7])); /* rstd */
    TRY(ltc_sub(self, mean, &x[8]));
    TRY(ltc_mul(x[8], x[7], &x[9])); /* xhat */
    if (which == LTC_GRAD_WEIGHT) {
        TRY(ltc_mul(grad, x[9], &x[10]));
        TRY(red(x[10], &x[11]));
        st = ltc_reshape(x[11], &c, 1, out);
        goto done;
    }
    if (weight) {
        TRY(ltc_reshape(weight, shape, nd, &x[10]));
        TRY(ltc_mul(grad, x[10], &x[11])); /* dxhat */
    } else {
        x[11] = ltc_tensor_retain(grad); /* no weight: ones */
    }
    if (!training) {
        st = ltc_mul(x[11], x[7], out);
        goto done;
    }
    TRY(red(x[11], &x[12]));
    TRY(ltc_grad_binop_s(ltc_div, x[12], (double)n, true, false, &x[13]));
    TRY(ltc_sub(x[11], x[13], &x[14]));
    TRY(ltc_mul(x[11], x[9], &x[15]));
    TRY(red(x[15], &x[16]));
    TRY(ltc_mul(x[9], x[16], &x[17]));
    TRY(ltc_grad_binop_s(ltc_div, x[17], (double)n, true, false, &x[18]));
    TRY(ltc_sub(x[14], x[18], &x[19]));
    st = ltc_mul(x[7], x[19], out);
done:
    release_all(x, 24);
    return st;
}

ltc_status ltc_grad_attention_backward(ltc_tensor *grad, ltc_tensor *query, ltc_tensor *key,
                                       ltc_tensor *value, ltc_tensor *output,
                                       ltc_tensor *logsumexp, bool is_causal, double scale,
                                       ltc_tensor *attn_mask, ltc_tensor **outs) {
    if (attn_mask)
        return ltc_scaled_dot_product_attention_backward_mask(grad, query, key, value, output,
                                                              logsumexp, is_causal, scale,
                                                              attn_mask, outs);
    return ltc_scaled_dot_product_attention_backward(grad, query, key, value, output, logsumexp,
                                                     is_causal, scale, outs);
}

ltc_status ltc_grad_attention_mask_backward(ltc_tensor *grad, ltc_tensor *query, ltc_tensor *key,
                                            ltc_tensor *value, ltc_tensor *output,
                                            ltc_tensor *logsumexp, bool is_causal, double scale,
                                            ltc_tensor *attn_mask, ltc_tensor **out) {
    ltc_tensor *x[13] = {0};
    ltc_status st = LTC_OK;
    TRY(ltc_transpose(key, -2, -1, &x[0]));
    TRY(ltc_matmul(query, x[0], &x[1]));
    TRY(ltc_grad_binop_s(ltc_mul, x[1], scale, false, false, &x[2]));
    TRY(ltc_add(x[2], attn_mask, &x[3])); /* the scores */
    TRY(ltc_unsqueeze(logsumexp, shape_of(logsumexp)->ndim + 1, &x[4]));
    TRY(ltc_sub(x[3], x[4], &x[5]));
    TRY(ltc_exp(x[5], &x[6])); /* P */
    if (is_causal)
        TRY(ltc_tril(x[6], 0, &x[7]));
    else
        x[7] = ltc_tensor_retain(x[6]);
    TRY(ltc_transpose(value, -2, -1, &x[8]));
    TRY(ltc_matmul(grad, x[8], &x[9])); /* dP */
    TRY(ltc_mul(grad, output, &x[10]));
    TRY(ltc_sum(x[10], -1, true, &x[11]));
    TRY(ltc_sub(x[9], x[11], &x[12]));
    st = ltc_mul(x[7], x[12], out);
done:
    release_all(x, 13);
    return st;
}

ltc_status ltc_grad_attention_dropout_backward(ltc_tensor *grad, ltc_tensor *query,
                                               ltc_tensor *key, ltc_tensor *value,
                                               ltc_tensor *output, ltc_tensor *logsumexp,
                                               bool is_causal, double scale, double dropout_p,
                                               ltc_tensor *rng_state, ltc_tensor *attn_mask,
                                               ltc_tensor **outs) {
    if (attn_mask)
        return ltc_scaled_dot_product_attention_backward_dropout_mask(
            grad, query, key, value, output, logsumexp, is_causal, scale, dropout_p, rng_state,
            attn_mask, outs);
    return ltc_scaled_dot_product_attention_backward_dropout(
        grad, query, key, value, output, logsumexp, is_causal, scale, dropout_p, rng_state, outs);
}

ltc_status ltc_grad_attention_dropout_mask_backward(ltc_tensor *grad, ltc_tensor *query,
                                                    ltc_tensor *key, ltc_tensor *value,
                                                    ltc_tensor *output, ltc_tensor *logsumexp,
                                                    bool is_causal, double scale,
                                                    double dropout_p, ltc_tensor *attn_mask,
                                                    ltc_tensor **out) {
    if (dropout_p > 0)
        return ltc_errorf(LTC_ERR_ARG, "scaled_dot_product_attention.dropout_mask: the gradient "
                          "of a float attn_mask with dropout_p %g > 0 is not supported (ltc.nn."
                          "functional.scaled_dot_product_attention takes the path over the ops "
                          "when the mask requires grad)", dropout_p);
    return ltc_grad_attention_mask_backward(grad, query, key, value, output, logsumexp,
                                            is_causal, scale, attn_mask, out);
}

/* Under create_graph (grad mode on in the backward) with an operand that requires grad, the
 * gradient would need the derivative of `op`, which has none: an error naming it, rather
 * than second derivatives that silently leave the recurrence out. */
static ltc_status no_double_backward(const char *op, const char *module, ltc_tensor *const *ts,
                                     int n) {
    if (!ltc_grad_enabled()) return LTC_OK;
    for (int i = 0; i < n; i++)
        if (ts[i] && ltc_requires_grad(ts[i]))
            return ltc_errorf(LTC_ERR_ARG, "%s is not differentiable: a backward with "
                              "create_graph through %s (ltc.nn.%s's fused layer) cannot make "
                              "second derivatives", op, op[0] == 'l' ? "lstm_layer" : "gru_layer",
                              module);
    return LTC_OK;
}

ltc_status ltc_grad_lstm_layer_backward(ltc_tensor *grad, ltc_tensor *grad_c_seq, ltc_tensor *h0,
                                        ltc_tensor *c0, ltc_tensor *weight_hh,
                                        ltc_tensor *output, ltc_tensor *c_seq, ltc_tensor *gates,
                                        bool reverse, ltc_tensor **outs) {
    ltc_tensor *used[] = {grad, grad_c_seq, h0, c0, weight_hh, output, c_seq};
    ltc_status st = no_double_backward("lstm_layer_backward", "LSTM", used, 7);
    if (st) return st;
    return ltc_lstm_layer_backward(grad, grad_c_seq, h0, c0, weight_hh, output, c_seq, gates,
                                   reverse, outs);
}

ltc_status ltc_grad_gru_layer_backward(ltc_tensor *grad, ltc_tensor *h0, ltc_tensor *weight_hh,
                                       ltc_tensor *output, ltc_tensor *gates, bool reverse,
                                       ltc_tensor **outs) {
    ltc_tensor *used[] = {grad, h0, weight_hh, output};
    ltc_status st = no_double_backward("gru_layer_backward", "GRU", used, 4);
    if (st) return st;
    return ltc_gru_layer_backward(grad, h0, weight_hh, output, gates, reverse, outs);
}
