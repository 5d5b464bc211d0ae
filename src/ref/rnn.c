/* rnn.c - reference kernels of the fused recurrences (lstm_layer, gru_layer and their
 * backwards): the
 * formulas of codegen/ops.yaml written out element by element in double, no BLAS. The oracle
 * for src/cpu/rnn.c. */
#include <math.h>
#include <stdlib.h>

#include "ref.h"

typedef struct {
    ltc_dtype dt;
    int64_t nt, B, H;
    bool reverse;
} ref_rnn;

static double sigm(double x) { return 1 / (1 + exp(-x)); }

/* The step processed s-th (0-based) and the one before it (-1: the initial state). */
static int64_t step_at(const ref_rnn *r, int64_t s) { return r->reverse ? r->nt - 1 - s : s; }
static int64_t step_before(const ref_rnn *r, int64_t s) { return s == 0 ? -1 : step_at(r, s - 1); }

/* Element (b, j) of the state [B, H] before step t: h0/c0 when t is -1, else seq[t]. */
static double state(const ref_rnn *r, const void *init, const void *seq, int64_t t, int64_t b,
                    int64_t j) {
    if (t < 0) return ltc_ref_get(init, r->dt, b * r->H + j);
    return ltc_ref_get(seq, r->dt, (t * r->B + b) * r->H + j);
}

/* lstm_layer(input_proj, h0, c0, weight_hh, reverse) -> (output, c_seq, gates) */
ltc_status ltc_ref_kernel_lstm_layer(const ltc_kernel_args *a) {
    const ltc_shape *ps = &a->in_shapes[0];
    ref_rnn r = {ps->dtype, ps->dims[0], ps->dims[1], ps->dims[2] / 4, a->attrs[0].i != 0};
    int64_t B = r.B, H = r.H;
    const void *P = a->in[0], *h0 = a->in[1], *c0 = a->in[2], *W = a->in[3];
    void *out = a->out[0], *cs = a->out[1], *G = a->out[2];
    for (int64_t s = 0; s < r.nt; s++) {
        int64_t t = step_at(&r, s), tp = step_before(&r, s);
        for (int64_t b = 0; b < B; b++) {
            for (int64_t k = 0; k < 4 * H; k++) { /* the pre-activation, then activated */
                double g = ltc_ref_get(P, r.dt, (t * B + b) * 4 * H + k);
                for (int64_t j = 0; j < H; j++)
                    g += state(&r, h0, out, tp, b, j) * ltc_ref_get(W, r.dt, k * H + j);
                ltc_ref_set(G, r.dt, (t * B + b) * 4 * H + k, k / H == 2 ? tanh(g) : sigm(g));
            }
        }
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < H; j++) {
                int64_t g0 = (t * B + b) * 4 * H + j, o = (t * B + b) * H + j;
                double i = ltc_ref_get(G, r.dt, g0), f = ltc_ref_get(G, r.dt, g0 + H);
                double gg = ltc_ref_get(G, r.dt, g0 + 2 * H), og = ltc_ref_get(G, r.dt, g0 + 3 * H);
                double c = f * state(&r, c0, cs, tp, b, j) + i * gg;
                ltc_ref_set(cs, r.dt, o, c);
                ltc_ref_set(out, r.dt, o, og * tanh(c));
            }
    }
    return LTC_OK;
}

/* lstm_layer_backward(grad_output, grad_c_seq, h0, c0, weight_hh, output, c_seq, gates,
 * reverse) -> (grad_input_proj, grad_h0, grad_c0, grad_weight_hh) */
ltc_status ltc_ref_kernel_lstm_layer_backward(const ltc_kernel_args *a) {
    const ltc_shape *gs = &a->in_shapes[7];
    ref_rnn r = {gs->dtype, gs->dims[0], gs->dims[1], gs->dims[2] / 4, a->attrs[0].i != 0};
    int64_t B = r.B, H = r.H;
    const void *gout = a->in[0], *gc = a->in[1], *h0 = a->in[2], *c0 = a->in[3], *W = a->in[4];
    const void *out = a->in[5], *cs = a->in[6], *G = a->in[7];
    void *dP = a->out[0], *dh0 = a->out[1], *dc0 = a->out[2], *dW = a->out[3];
    double *dh = calloc((size_t)(2 * B * H + 1), sizeof(double)), *dc = dh + B * H;
    if (!dh) return ltc_errorf(LTC_ERR_NOMEM, "lstm_layer_backward: out of memory");
    for (int64_t k = 0; k < 4 * H * H; k++) ltc_ref_set(dW, r.dt, k, 0);
    for (int64_t s = r.nt - 1; s >= 0; s--) {
        int64_t t = step_at(&r, s), tp = step_before(&r, s);
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < H; j++) {
                int64_t g0 = (t * B + b) * 4 * H + j, o = (t * B + b) * H + j;
                double i = ltc_ref_get(G, r.dt, g0), f = ltc_ref_get(G, r.dt, g0 + H);
                double gg = ltc_ref_get(G, r.dt, g0 + 2 * H), og = ltc_ref_get(G, r.dt, g0 + 3 * H);
                double tc = tanh(ltc_ref_get(cs, r.dt, o));
                double dhj = ltc_ref_get(gout, r.dt, o) + dh[b * H + j];
                double dcj = ltc_ref_get(gc, r.dt, o) + dc[b * H + j] + dhj * og * (1 - tc * tc);
                ltc_ref_set(dP, r.dt, g0, dcj * gg * i * (1 - i));
                ltc_ref_set(dP, r.dt, g0 + H, dcj * state(&r, c0, cs, tp, b, j) * f * (1 - f));
                ltc_ref_set(dP, r.dt, g0 + 2 * H, dcj * i * (1 - gg * gg));
                ltc_ref_set(dP, r.dt, g0 + 3 * H, dhj * tc * og * (1 - og));
                dc[b * H + j] = dcj * f;
            }
        /* dh = dgates W_hh; dW_hh += dgates^T h_prev */
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < H; j++) {
                double v = 0;
                for (int64_t k = 0; k < 4 * H; k++)
                    v += ltc_ref_get(dP, r.dt, (t * B + b) * 4 * H + k) *
                         ltc_ref_get(W, r.dt, k * H + j);
                dh[b * H + j] = v;
            }
        for (int64_t k = 0; k < 4 * H; k++)
            for (int64_t j = 0; j < H; j++) {
                double v = ltc_ref_get(dW, r.dt, k * H + j);
                for (int64_t b = 0; b < B; b++)
                    v += ltc_ref_get(dP, r.dt, (t * B + b) * 4 * H + k) *
                         state(&r, h0, out, tp, b, j);
                ltc_ref_set(dW, r.dt, k * H + j, v);
            }
    }
    for (int64_t k = 0; k < B * H; k++) {
        ltc_ref_set(dh0, r.dt, k, dh[k]);
        ltc_ref_set(dc0, r.dt, k, dc[k]);
    }
    free(dh);
    return LTC_OK;
}

/* gru_layer(input_proj, h0, weight_hh, bias_hh, reverse) -> (output, gates) */
ltc_status ltc_ref_kernel_gru_layer(const ltc_kernel_args *a) {
    const ltc_shape *ps = &a->in_shapes[0];
    ref_rnn r = {ps->dtype, ps->dims[0], ps->dims[1], ps->dims[2] / 3, a->attrs[0].i != 0};
    int64_t B = r.B, H = r.H;
    const void *P = a->in[0], *h0 = a->in[1], *W = a->in[2], *bh = a->in[3];
    void *out = a->out[0], *G = a->out[1];
    for (int64_t s = 0; s < r.nt; s++) {
        int64_t t = step_at(&r, s), tp = step_before(&r, s);
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < H; j++) {
                double gh[3], p[3];
                for (int k = 0; k < 3; k++) {
                    gh[k] = ltc_ref_get(bh, r.dt, k * H + j);
                    for (int64_t i = 0; i < H; i++)
                        gh[k] += state(&r, h0, out, tp, b, i) * ltc_ref_get(W, r.dt, (k * H + j) * H + i);
                    p[k] = ltc_ref_get(P, r.dt, (t * B + b) * 3 * H + k * H + j);
                }
                double rg = sigm(p[0] + gh[0]), z = sigm(p[1] + gh[1]);
                double n = tanh(p[2] + rg * gh[2]);
                int64_t g0 = (t * B + b) * 4 * H + j;
                ltc_ref_set(G, r.dt, g0, rg);
                ltc_ref_set(G, r.dt, g0 + H, z);
                ltc_ref_set(G, r.dt, g0 + 2 * H, n);
                ltc_ref_set(G, r.dt, g0 + 3 * H, gh[2]);
            }
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < H; j++) {
                int64_t g0 = (t * B + b) * 4 * H + j;
                double z = ltc_ref_get(G, r.dt, g0 + H), n = ltc_ref_get(G, r.dt, g0 + 2 * H);
                ltc_ref_set(out, r.dt, (t * B + b) * H + j,
                            (1 - z) * n + z * state(&r, h0, out, tp, b, j));
            }
    }
    return LTC_OK;
}

/* gru_layer_backward(grad_output, h0, weight_hh, output, gates, reverse) -> (grad_input_proj,
 * grad_h0, grad_weight_hh, grad_bias_hh) */
ltc_status ltc_ref_kernel_gru_layer_backward(const ltc_kernel_args *a) {
    const ltc_shape *gs = &a->in_shapes[4];
    ref_rnn r = {gs->dtype, gs->dims[0], gs->dims[1], gs->dims[2] / 4, a->attrs[0].i != 0};
    int64_t B = r.B, H = r.H;
    const void *gout = a->in[0], *h0 = a->in[1], *W = a->in[2], *out = a->in[3], *G = a->in[4];
    void *dP = a->out[0], *dh0 = a->out[1], *dW = a->out[2], *db = a->out[3];
    /* dh: the carried gradient of h [B, H]; dg: one step's gradient of gh [B, 3H] */
    double *dh = calloc((size_t)(B * H + B * 3 * H + 1), sizeof(double)), *dg = dh + B * H;
    if (!dh) return ltc_errorf(LTC_ERR_NOMEM, "gru_layer_backward: out of memory");
    for (int64_t k = 0; k < 3 * H * H; k++) ltc_ref_set(dW, r.dt, k, 0);
    for (int64_t k = 0; k < 3 * H; k++) ltc_ref_set(db, r.dt, k, 0);
    for (int64_t s = r.nt - 1; s >= 0; s--) {
        int64_t t = step_at(&r, s), tp = step_before(&r, s);
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < H; j++) {
                int64_t g0 = (t * B + b) * 4 * H + j, p0 = (t * B + b) * 3 * H + j;
                double rg = ltc_ref_get(G, r.dt, g0), z = ltc_ref_get(G, r.dt, g0 + H);
                double n = ltc_ref_get(G, r.dt, g0 + 2 * H), hn = ltc_ref_get(G, r.dt, g0 + 3 * H);
                double d = ltc_ref_get(gout, r.dt, (t * B + b) * H + j) + dh[b * H + j];
                double dn = d * (1 - z) * (1 - n * n);
                double dr = dn * hn * rg * (1 - rg);
                double dz = d * (state(&r, h0, out, tp, b, j) - n) * z * (1 - z);
                ltc_ref_set(dP, r.dt, p0, dr);
                ltc_ref_set(dP, r.dt, p0 + H, dz);
                ltc_ref_set(dP, r.dt, p0 + 2 * H, dn);
                dg[b * 3 * H + j] = dr, dg[b * 3 * H + H + j] = dz, dg[b * 3 * H + 2 * H + j] = dn * rg;
                dh[b * H + j] = d * z;
            }
        /* dh += dgh W_hh; dW_hh += dgh^T h_prev; db_hh += sum of dgh */
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < H; j++)
                for (int64_t k = 0; k < 3 * H; k++)
                    dh[b * H + j] += dg[b * 3 * H + k] * ltc_ref_get(W, r.dt, k * H + j);
        for (int64_t k = 0; k < 3 * H; k++) {
            double sb = ltc_ref_get(db, r.dt, k);
            for (int64_t b = 0; b < B; b++) sb += dg[b * 3 * H + k];
            ltc_ref_set(db, r.dt, k, sb);
            for (int64_t j = 0; j < H; j++) {
                double v = ltc_ref_get(dW, r.dt, k * H + j);
                for (int64_t b = 0; b < B; b++)
                    v += dg[b * 3 * H + k] * state(&r, h0, out, tp, b, j);
                ltc_ref_set(dW, r.dt, k * H + j, v);
            }
        }
    }
    for (int64_t k = 0; k < B * H; k++) ltc_ref_set(dh0, r.dt, k, dh[k]);
    free(dh);
    return LTC_OK;
}
