/* shape_attention.c - shape and dtype rules of scaled_dot_product_attention, its packed form
 * (qkv [N, L, 3E]) and their backward (declared in shape_inference.h). query [..., L, E], key [..., S, E], value [..., S, Ev]:
 * one floating dtype, at least 2 dims, the same leading dims (no broadcasting among them);
 * attn_mask (bool, or query's dtype) broadcasts to [..., L, S]; the dropout overloads take
 * dropout_p in [0, 1] and the generator state int64 [2]. Messages name the sizes. */
#include <math.h>
#include <string.h>

#include "shape_inference.h"

#define SHAPE_STR(s, buf) ltc_shape_str((s), (buf), sizeof(buf))

static ltc_status qkv(const ltc_shape *q, const ltc_shape *k, const ltc_shape *v, double scale) {
    char a[128], b[128], c[128];
    /* float16 and bfloat16 run as float32 (ltc_trace casts them up and the result down) */
    ltc_status st = ltc_shape_need_float(q, "query");
    if (st) return st;
    if (k->dtype != q->dtype || v->dtype != q->dtype)
        return ltc_errorf(LTC_ERR_ARG, "query, key and value must have one dtype, got %s, %s "
                          "and %s", ltc_dtype_name(q->dtype), ltc_dtype_name(k->dtype),
                          ltc_dtype_name(v->dtype));
    bool fit = q->ndim >= 2 && k->ndim == q->ndim && v->ndim == q->ndim;
    int n = q->ndim;
    for (int d = 0; fit && d < n - 2; d++)
        fit = k->dims[d] == q->dims[d] && v->dims[d] == q->dims[d];
    if (fit)
        fit = k->dims[n - 1] == q->dims[n - 1] && v->dims[n - 2] == k->dims[n - 2];
    if (!fit)
        return ltc_errorf(LTC_ERR_ARG, "query %s, key %s and value %s do not fit (query [..., L, "
                          "E], key [..., S, E], value [..., S, Ev] with the same leading dims)",
                          SHAPE_STR(q, a), SHAPE_STR(k, b), SHAPE_STR(v, c));
    if (!isfinite(scale))
        return ltc_errorf(LTC_ERR_ARG, "scale must be finite, got %g", scale);
    return LTC_OK;
}

static ltc_status mask_fits(const ltc_shape *q, const ltc_shape *k, const ltc_shape *m) {
    char a[128], b[128];
    if (m->dtype != LTC_BOOL && m->dtype != q->dtype)
        return ltc_errorf(LTC_ERR_ARG, "attn_mask must be bool or query's dtype %s, got %s",
                          ltc_dtype_name(q->dtype), ltc_dtype_name(m->dtype));
    int n = q->ndim;
    bool fit = m->ndim <= n;
    for (int d = 0; fit && d < m->ndim; d++) {
        int qd = n - m->ndim + d;
        int64_t want = qd == n - 1 ? k->dims[n - 2] : q->dims[qd];
        fit = m->dims[d] == want || m->dims[d] == 1;
    }
    if (!fit) {
        ltc_shape t = *q;
        t.dims[n - 1] = k->dims[n - 2];
        return ltc_errorf(LTC_ERR_ARG, "attn_mask %s does not broadcast to the scores %s",
                          SHAPE_STR(m, a), SHAPE_STR(&t, b));
    }
    return LTC_OK;
}

ltc_status ltc_shape_attention(const ltc_shape *query, const ltc_shape *key,
                               const ltc_shape *value, bool is_causal, double scale,
                               ltc_shape *out) {
    (void)is_causal;
    ltc_status st = qkv(query, key, value, scale);
    if (st) return st;
    int n = query->ndim;
    out[0] = *query;
    out[0].dims[n - 1] = value->dims[n - 1];
    out[1] = *query;
    out[1].ndim = n - 1;
    return LTC_OK;
}

ltc_status ltc_shape_attention_mask(const ltc_shape *query, const ltc_shape *key,
                                    const ltc_shape *value, bool is_causal, double scale,
                                    const ltc_shape *attn_mask, ltc_shape *out) {
    ltc_status st = ltc_shape_attention(query, key, value, is_causal, scale, out);
    return st ? st : mask_fits(query, key, attn_mask);
}

/* A backward's grad_output, output and logsumexp against the forward's shapes fwd. */
static ltc_status saved_fit(const ltc_shape *grad_output, const ltc_shape *output,
                            const ltc_shape *logsumexp, const ltc_shape fwd[2]) {
    char a[128], b[128], c[128];
    if (!ltc_shape_equal(grad_output, &fwd[0]) || !ltc_shape_equal(output, &fwd[0]))
        return ltc_errorf(LTC_ERR_ARG, "grad_output %s and output %s must be %s",
                          SHAPE_STR(grad_output, a), SHAPE_STR(output, b), SHAPE_STR(&fwd[0], c));
    if (!ltc_shape_equal(logsumexp, &fwd[1]))
        return ltc_errorf(LTC_ERR_ARG, "logsumexp %s must be %s", SHAPE_STR(logsumexp, a),
                          SHAPE_STR(&fwd[1], b));
    return LTC_OK;
}

ltc_status ltc_shape_attention_backward(const ltc_shape *grad_output, const ltc_shape *query,
                                        const ltc_shape *key, const ltc_shape *value,
                                        const ltc_shape *output, const ltc_shape *logsumexp,
                                        bool is_causal, double scale, ltc_shape *out) {
    ltc_shape fwd[2];
    ltc_status st = ltc_shape_attention(query, key, value, is_causal, scale, fwd);
    if (st) return st;
    if ((st = saved_fit(grad_output, output, logsumexp, fwd))) return st;
    out[0] = *query, out[1] = *key, out[2] = *value;
    return LTC_OK;
}

ltc_status ltc_shape_attention_backward_mask(const ltc_shape *grad_output, const ltc_shape *query,
                                             const ltc_shape *key, const ltc_shape *value,
                                             const ltc_shape *output, const ltc_shape *logsumexp,
                                             bool is_causal, double scale,
                                             const ltc_shape *attn_mask, ltc_shape *out) {
    ltc_status st = ltc_shape_attention_backward(grad_output, query, key, value, output,
                                                 logsumexp, is_causal, scale, out);
    return st ? st : mask_fits(query, key, attn_mask);
}

ltc_status ltc_shape_attention_packed(const ltc_shape *qkv, int64_t heads, bool is_causal,
                                      double scale, ltc_shape *out) {
    (void)is_causal;
    char a[128];
    ltc_status st = ltc_shape_need_float(qkv, "qkv");
    if (st) return st;
    if (heads < 1) return ltc_errorf(LTC_ERR_ARG, "heads must be >= 1, got %lld", (long long)heads);
    /* E a multiple of heads, without 3 * heads (heads may be any int64) */
    if (qkv->ndim != 3 || qkv->dims[2] % 3 != 0 || (qkv->dims[2] / 3) % heads != 0)
        return ltc_errorf(LTC_ERR_ARG, "qkv %s must be [N, L, 3E] with E a multiple of heads %lld",
                          SHAPE_STR(qkv, a), (long long)heads);
    if (!isfinite(scale)) return ltc_errorf(LTC_ERR_ARG, "scale must be finite, got %g", scale);
    int64_t o[3] = {qkv->dims[0], qkv->dims[1], qkv->dims[2] / 3};
    int64_t l[3] = {qkv->dims[0], heads, qkv->dims[1]};
    ltc_shape_make(&out[0], qkv->dtype, 3, o);
    ltc_shape_make(&out[1], qkv->dtype, 3, l);
    return LTC_OK;
}

ltc_status ltc_shape_attention_packed_backward(const ltc_shape *grad_output, const ltc_shape *qkv,
                                               const ltc_shape *output, const ltc_shape *logsumexp,
                                               int64_t heads, bool is_causal, double scale,
                                               ltc_shape *out) {
    ltc_shape fwd[2];
    ltc_status st = ltc_shape_attention_packed(qkv, heads, is_causal, scale, fwd);
    if (st) return st;
    if ((st = saved_fit(grad_output, output, logsumexp, fwd))) return st;
    *out = *qkv;
    return LTC_OK;
}

/* dropout_p in [0, 1]; rng_state the generator state {seed, offset}, int64 [2], or NULL
 * (the default generator's, made by the entry). */
static ltc_status dropout_fits(double p, const ltc_shape *rng) {
    char a[128];
    if (!(p >= 0 && p <= 1))
        return ltc_errorf(LTC_ERR_ARG, "dropout_p must be between 0 and 1, got %g", p);
    if (rng && (rng->dtype != LTC_I64 || rng->ndim != 1 || rng->dims[0] != 2))
        return ltc_errorf(LTC_ERR_ARG, "rng_state must be the generator state {seed, offset}, "
                          "int64 [2], got %s %s", ltc_dtype_name(rng->dtype), SHAPE_STR(rng, a));
    return LTC_OK;
}

int64_t ltc_rng_numel_attention(const ltc_shape *const *in, const ltc_shape *out) {
    return ltc_shape_numel(&out[1]) * in[1]->dims[in[1]->ndim - 2];
}

ltc_status ltc_shape_attention_dropout(const ltc_shape *query, const ltc_shape *key,
                                       const ltc_shape *value, bool is_causal, double scale,
                                       double dropout_p, const ltc_shape *rng_state,
                                       ltc_shape *out) {
    ltc_status st = ltc_shape_attention(query, key, value, is_causal, scale, out);
    return st ? st : dropout_fits(dropout_p, rng_state);
}

ltc_status ltc_shape_attention_dropout_mask(const ltc_shape *query, const ltc_shape *key,
                                            const ltc_shape *value, bool is_causal, double scale,
                                            double dropout_p, const ltc_shape *rng_state,
                                            const ltc_shape *attn_mask, ltc_shape *out) {
    ltc_status st = ltc_shape_attention_mask(query, key, value, is_causal, scale, attn_mask, out);
    return st ? st : dropout_fits(dropout_p, rng_state);
}

ltc_status ltc_shape_attention_backward_dropout(const ltc_shape *grad_output,
                                                const ltc_shape *query, const ltc_shape *key,
                                                const ltc_shape *value, const ltc_shape *output,
                                                const ltc_shape *logsumexp, bool is_causal,
                                                double scale, double dropout_p,
                                                const ltc_shape *rng_state, ltc_shape *out) {
    ltc_status st = ltc_shape_attention_backward(grad_output, query, key, value, output,
                                                 logsumexp, is_causal, scale, out);
    return st ? st : dropout_fits(dropout_p, rng_state);
}

ltc_status ltc_shape_attention_backward_dropout_mask(
    const ltc_shape *grad_output, const ltc_shape *query, const ltc_shape *key,
    const ltc_shape *value, const ltc_shape *output, const ltc_shape *logsumexp, bool is_causal,
    double scale, double dropout_p, const ltc_shape *rng_state, const ltc_shape *attn_mask,
    ltc_shape *out) {
    ltc_status st = ltc_shape_attention_backward_mask(grad_output, query, key, value, output,
                                                      logsumexp, is_causal, scale, attn_mask, out);
    return st ? st : dropout_fits(dropout_p, rng_state);
}
