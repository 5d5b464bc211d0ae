/* attention.c - reference kernels of scaled_dot_product_attention and its backward: the
 * whole [L, S] score matrix of each batch entry, materialised in double, softmax by its
 * definition. The oracle for the CPU backend's blocked kernels (src/cpu/attention.c). A row
 * that no key may see gives NaN (0 / 0, as PyTorch's softmax of a row of -inf), logsumexp
 * -inf; the gradients through it as src/cpu/attention.c says; a row with a +inf or NaN
 * score gives NaN output and logsumexp. With dropout, probability
 * (b, i, j) is multiplied by dropout's factor drawn at counter offset + (b L + i) S + j, the
 * draw src/cpu/attention.c makes (so the two drop the same elements). */
#include <math.h>
#include <stdlib.h>

#include "ltc_rng.h"
#include "ref.h"

/* Element e of row r of item b at base + (b / H) * bs + (b % H) * hs + r * ld + e. */
typedef struct {
    int64_t base, bs, hs, ld;
} lay;

typedef struct {
    ltc_dtype dt;
    int64_t B, L, S, E, Ev, H;
    lay lq, lk, lv, lo; /* query, key, value (and their gradients), output (and its grad) */
    const void *q, *k, *v, *mask;
    void *dq, *dk, *dv;
    const ltc_shape *ms;
    ltc_shape scores; /* [..., L, S] */
    bool causal;
    double scale;
    double keep;           /* 1 - dropout_p; 1 without dropout */
    uint64_t seed, offset; /* the generator state of the keep decisions */
} ref_at;

static int64_t ix(const ref_at *c, const lay *l, int64_t b, int64_t r) {
    return l->base + b / c->H * l->bs + b % c->H * l->hs + r * l->ld;
}

static void setup(ref_at *c, const ltc_kernel_args *a, int qi, int mi, int ri) {
    const ltc_shape *qs = &a->in_shapes[qi];
    int n = qs->ndim;
    c->dt = qs->dtype;
    c->L = qs->dims[n - 2], c->E = qs->dims[n - 1];
    c->S = a->in_shapes[qi + 1].dims[n - 2], c->Ev = a->in_shapes[qi + 2].dims[n - 1];
    c->B = 1;
    for (int d = 0; d < n - 2; d++) c->B *= qs->dims[d];
    c->H = 1;
    c->lq = (lay){0, c->L * c->E, 0, c->E}, c->lk = (lay){0, c->S * c->E, 0, c->E};
    c->lv = (lay){0, c->S * c->Ev, 0, c->Ev}, c->lo = (lay){0, c->L * c->Ev, 0, c->Ev};
    c->q = a->in[qi], c->k = a->in[qi + 1], c->v = a->in[qi + 2];
    c->mask = mi >= 0 ? a->in[mi] : NULL;
    c->ms = mi >= 0 ? &a->in_shapes[mi] : NULL;
    c->scores = *qs;
    c->scores.dims[n - 1] = c->S;
    c->causal = a->attrs[0].i != 0;
    c->scale = a->attrs[1].f;
    c->keep = 1, c->seed = c->offset = 0;
    if (ri >= 0) {
        const int64_t *st = a->in[ri];
        c->keep = 1 - a->attrs[2].f;
        c->seed = (uint64_t)st[0], c->offset = (uint64_t)st[1];
    }
}

/* The dropout factor of probability (b, i, j): 1 / (1 - p) when the uniform draw (of the
 * dtype, as ltc.rand draws it) at its flat index in [..., L, S] is below 1 - p, else 0. */
static double factor(const ref_at *c, int64_t b, int64_t i, int64_t j) {
    if (c->keep == 1) return 1;
    int64_t idx = (b * c->L + i) * c->S + j;
    bool kept = c->dt == LTC_F32
                    ? ltc_rng_uniform_f32(c->seed, c->offset, idx) < (float)c->keep
                    : ltc_rng_uniform_f64(c->seed, c->offset, idx) < c->keep;
    return kept ? 1 / c->keep : 0;
}

/* s as a score of dtype dt: kept in double (the reference's precision), but infinite where
 * dt overflows, as the scores of a float32 product are (1e30 . 1e30: +inf, then a NaN row,
 * as PyTorch's float32 softmax gives; fuzz seed 33 program 657). */
static double in_range(ltc_dtype dt, double s) {
    if (dt != LTC_F32) return s;
    float f = (float)s;
    return isinf(f) ? (double)f : s;
}

/* The probabilities P [L, S] of batch entry b (and each row's logsumexp in lse[L]). */
static void probs(const ref_at *c, int64_t b, double *P, double *lse) {
    for (int64_t i = 0; i < c->L; i++) {
        double *row = P + i * c->S, mx = -INFINITY;
        for (int64_t j = 0; j < c->S; j++) {
            double s = 0;
            for (int64_t e = 0; e < c->E; e++)
                s += ltc_ref_get(c->q, c->dt, ix(c, &c->lq, b, i) + e) *
                     ltc_ref_get(c->k, c->dt, ix(c, &c->lk, b, j) + e);
            s = in_range(c->dt, in_range(c->dt, s) * c->scale);
            if (c->causal && j > i) s = -INFINITY;
            if (c->mask) {
                int64_t o = ltc_ref_offset(&c->scores, c->ms, (b * c->L + i) * c->S + j);
                if (c->ms->dtype == LTC_BOOL) {
                    if (!ltc_ref_get_i64(c->mask, LTC_BOOL, o)) s = -INFINITY;
                } else {
                    s += ltc_ref_get(c->mask, c->ms->dtype, o);
                }
            }
            row[j] = s;
            if (s > mx) mx = s;
        }
        double sum = 0;
        for (int64_t j = 0; j < c->S; j++) sum += exp(row[j] - mx);
        for (int64_t j = 0; j < c->S; j++) row[j] = exp(row[j] - mx) / sum;
        lse[i] = mx == -INFINITY ? -INFINITY : mx + log(sum);
    }
}

static ltc_status run_forward(ref_at c, void *out, void *out_lse) {
    double *P = malloc((size_t)(c.L * c.S + c.L + 1) * sizeof(double)), *lse = P + c.L * c.S;
    if (!P) return ltc_errorf(LTC_ERR_NOMEM, "scaled_dot_product_attention: out of memory");
    for (int64_t b = 0; b < c.B; b++) {
        probs(&c, b, P, lse);
        for (int64_t i = 0; i < c.L; i++) {
            for (int64_t e = 0; e < c.Ev; e++) {
                double s = 0;
                for (int64_t j = 0; j < c.S; j++)
                    s += P[i * c.S + j] * factor(&c, b, i, j) *
                         ltc_ref_get(c.v, c.dt, ix(&c, &c.lv, b, j) + e);
                ltc_ref_set(out, c.dt, ix(&c, &c.lo, b, i) + e, s);
            }
            ltc_ref_set(out_lse, c.dt, b * c.L + i, lse[i]);
        }
    }
    free(P);
    return LTC_OK;
}

/* dV = W^T dO with W = P * factors (the dropped probabilities; P without dropout), dP = dO
 * V^T * factors, dS = P * (dP - rowsum(P * dP)), dQ = scale dS K, dK = scale dS^T Q: P
 * recomputed from the inputs (output and logsumexp are not read). */
static ltc_status run_backward(ref_at c, const void *go) {
    size_t n = (size_t)(2 * c.L * c.S + c.L + 1);
    double *P = malloc(n * sizeof(double)), *dS = P + c.L * c.S, *lse = dS + c.L * c.S;
    if (!P) return ltc_errorf(LTC_ERR_NOMEM, "scaled_dot_product_attention_backward: out of memory");
    for (int64_t b = 0; b < c.B; b++) {
        probs(&c, b, P, lse);
        for (int64_t i = 0; i < c.L; i++) {
            double rs = 0;
            for (int64_t j = 0; j < c.S; j++) {
                double dp = 0;
                for (int64_t e = 0; e < c.Ev; e++)
                    dp += ltc_ref_get(go, c.dt, ix(&c, &c.lo, b, i) + e) *
                          ltc_ref_get(c.v, c.dt, ix(&c, &c.lv, b, j) + e);
                dp *= factor(&c, b, i, j);
                dS[i * c.S + j] = dp;
                rs += P[i * c.S + j] * dp;
            }
            /* a row no key may see: NaN probabilities; masked by a bool mask (or causally)
             * its scores are constants (masked_fill's) and get no gradient */
            bool consts = lse[i] == -INFINITY && (c.causal || (c.ms && c.ms->dtype == LTC_BOOL));
            for (int64_t j = 0; j < c.S; j++)
                dS[i * c.S + j] = consts ? 0 : P[i * c.S + j] * (dS[i * c.S + j] - rs);
        }
        for (int64_t i = 0; i < c.L; i++)
            for (int64_t e = 0; e < c.E; e++) {
                double s = 0;
                for (int64_t j = 0; j < c.S; j++)
                    s += dS[i * c.S + j] * ltc_ref_get(c.k, c.dt, ix(&c, &c.lk, b, j) + e);
                ltc_ref_set(c.dq, c.dt, ix(&c, &c.lq, b, i) + e, c.scale * s);
            }
        for (int64_t j = 0; j < c.S; j++) {
            for (int64_t e = 0; e < c.E; e++) {
                double s = 0;
                for (int64_t i = 0; i < c.L; i++)
                    s += dS[i * c.S + j] * ltc_ref_get(c.q, c.dt, ix(&c, &c.lq, b, i) + e);
                ltc_ref_set(c.dk, c.dt, ix(&c, &c.lk, b, j) + e, c.scale * s);
            }
            for (int64_t e = 0; e < c.Ev; e++) {
                double s = 0;
                for (int64_t i = 0; i < c.L; i++)
                    s += P[i * c.S + j] * factor(&c, b, i, j) *
                         ltc_ref_get(go, c.dt, ix(&c, &c.lo, b, i) + e);
                ltc_ref_set(c.dv, c.dt, ix(&c, &c.lv, b, j) + e, s);
            }
        }
    }
    free(P);
    return LTC_OK;
}

static ltc_status forward(const ltc_kernel_args *a, int mi, int ri) {
    ref_at c;
    setup(&c, a, 0, mi, ri);
    return run_forward(c, a->out[0], a->out[1]);
}

static ltc_status backward(const ltc_kernel_args *a, int mi, int ri) {
    ref_at c;
    setup(&c, a, 1, mi, ri);
    c.dq = a->out[0], c.dk = a->out[1], c.dv = a->out[2];
    return run_backward(c, a->in[0]);
}

/* The packed layout (src/cpu/attention.c's setup_packed): qkv [N, L, 3E], items (batch entry,
 * head), head h of the query at columns h * D of the first E, of the key of the second, of
 * the value of the third; output [N, L, E]. */
static void setup_packed(ref_at *c, const ltc_shape *qs, const void *qkv, int64_t heads,
                         bool causal, double scale) {
    int64_t N = qs->dims[0], L = qs->dims[1], E = qs->dims[2] / 3, D = E / heads;
    *c = (ref_at){.dt = qs->dtype, .B = N * heads, .L = L, .S = L, .E = D, .Ev = D, .H = heads,
                  .q = qkv, .k = qkv, .v = qkv, .causal = causal, .scale = scale, .keep = 1};
    c->lq = (lay){0, L * 3 * E, D, 3 * E};
    c->lk = (lay){E, L * 3 * E, D, 3 * E};
    c->lv = (lay){2 * E, L * 3 * E, D, 3 * E};
    c->lo = (lay){0, L * E, D, E};
}

/* scaled_dot_product_attention_packed(qkv, heads, is_causal, scale) */
ltc_status ltc_ref_kernel_scaled_dot_product_attention_packed(const ltc_kernel_args *a) {
    ref_at c;
    setup_packed(&c, &a->in_shapes[0], a->in[0], a->attrs[0].i, a->attrs[1].i != 0, a->attrs[2].f);
    return run_forward(c, a->out[0], a->out[1]);
}

/* scaled_dot_product_attention_packed_backward(grad_output, qkv, output, logsumexp, heads,
 * is_causal, scale) */
ltc_status ltc_ref_kernel_scaled_dot_product_attention_packed_backward(const ltc_kernel_args *a) {
    ref_at c;
    setup_packed(&c, &a->in_shapes[1], a->in[1], a->attrs[0].i, a->attrs[1].i != 0, a->attrs[2].f);
    c.dq = c.dk = c.dv = a->out[0];
    return run_backward(c, a->in[0]);
}

/* scaled_dot_product_attention(query, key, value, is_causal, scale) */
ltc_status ltc_ref_kernel_scaled_dot_product_attention(const ltc_kernel_args *a) {
    return forward(a, -1, -1);
}

/* scaled_dot_product_attention.mask(query, key, value, is_causal, scale, attn_mask) */
ltc_status ltc_ref_kernel_scaled_dot_product_attention_mask(const ltc_kernel_args *a) {
    return forward(a, 3, -1);
}

/* scaled_dot_product_attention.dropout(query, key, value, is_causal, scale, dropout_p,
 * rng_state) */
ltc_status ltc_ref_kernel_scaled_dot_product_attention_dropout(const ltc_kernel_args *a) {
    return forward(a, -1, 3);
}

/* scaled_dot_product_attention.dropout_mask(..., dropout_p, rng_state, attn_mask) */
ltc_status ltc_ref_kernel_scaled_dot_product_attention_dropout_mask(const ltc_kernel_args *a) {
    return forward(a, 4, 3);
}

/* scaled_dot_product_attention_backward(grad_output, query, key, value, output, logsumexp,
 * is_causal, scale) */
ltc_status ltc_ref_kernel_scaled_dot_product_attention_backward(const ltc_kernel_args *a) {
    return backward(a, -1, -1);
}

/* scaled_dot_product_attention_backward.mask(..., attn_mask) */
ltc_status ltc_ref_kernel_scaled_dot_product_attention_backward_mask(const ltc_kernel_args *a) {
    return backward(a, 6, -1);
}

/* scaled_dot_product_attention_backward.dropout(..., is_causal, scale, dropout_p, rng_state) */
ltc_status ltc_ref_kernel_scaled_dot_product_attention_backward_dropout(const ltc_kernel_args *a) {
    return backward(a, -1, 6);
}

/* scaled_dot_product_attention_backward.dropout_mask(..., dropout_p, rng_state, attn_mask) */
ltc_status ltc_ref_kernel_scaled_dot_product_attention_backward_dropout_mask(
    const ltc_kernel_args *a) {
    return backward(a, 7, 6);
}
