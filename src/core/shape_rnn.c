/* shape_rnn.c - shape and dtype rules of the fused recurrences (lstm_layer, gru_layer and their
 * backwards; declared in shape_inference.h). LSTM: input_proj [T, B, 4H], h0 and c0 [B, H],
 * weight_hh [4H, H]; GRU: input_proj [T, B, 3H], h0 [B, H], weight_hh [3H, H], bias_hh [3H].
 * One floating dtype, no broadcasting. Messages name the op and the sizes. */
#include <string.h>

#include "shape_inference.h"

#define SHAPE_STR(s, buf) ltc_shape_str((s), (buf), sizeof(buf))

static bool dims_are(const ltc_shape *s, int n, int64_t d0, int64_t d1, int64_t d2) {
    int64_t want[3] = {d0, d1, d2};
    if (s->ndim != n) return false;
    for (int d = 0; d < n; d++)
        if (s->dims[d] != want[d]) return false;
    return true;
}

/* The forward's operands; the gate count is G (4 for LSTM). */
static ltc_status layer_args(const char *op, const ltc_shape *proj, const ltc_shape *h0,
                             const ltc_shape *c0, const ltc_shape *w, int G) {
    char a[128], b[128], c[128], d[128];
    ltc_dtype dt = proj->dtype;
    if (!ltc_dtype_is_float(dt)) /* narrow floats run as float32, as every op */
        return ltc_errorf(LTC_ERR_ARG, "%s: input_proj must be of a floating dtype, got %s", op,
                          ltc_dtype_name(dt));
    if (h0->dtype != dt || c0->dtype != dt || w->dtype != dt)
        return ltc_errorf(LTC_ERR_ARG, "%s: input_proj, h0, c0 and weight_hh must have one dtype, "
                          "got %s, %s, %s and %s", op, ltc_dtype_name(dt),
                          ltc_dtype_name(h0->dtype), ltc_dtype_name(c0->dtype),
                          ltc_dtype_name(w->dtype));
    bool fit = proj->ndim == 3 && h0->ndim == 2 && proj->dims[2] % G == 0;
    int64_t B = fit ? proj->dims[1] : 0, H = fit ? proj->dims[2] / G : 0;
    fit = fit && dims_are(h0, 2, B, H, 0) && dims_are(c0, 2, B, H, 0) &&
          dims_are(w, 2, G * H, H, 0);
    if (!fit)
        return ltc_errorf(LTC_ERR_ARG, "%s: input_proj %s, h0 %s, c0 %s and weight_hh %s do not "
                          "fit (input_proj [T, B, %dH], h0 and c0 [B, H], weight_hh [%dH, H])",
                          op, SHAPE_STR(proj, a), SHAPE_STR(h0, b), SHAPE_STR(c0, c),
                          SHAPE_STR(w, d), G, G);
    return LTC_OK;
}

ltc_status ltc_shape_lstm_layer(const ltc_shape *input_proj, const ltc_shape *h0,
                                const ltc_shape *c0, const ltc_shape *weight_hh, bool reverse,
                                ltc_shape *out) {
    (void)reverse;
    ltc_status st = layer_args("lstm_layer", input_proj, h0, c0, weight_hh, 4);
    if (st) return st;
    out[0] = *input_proj;
    out[0].dims[2] = h0->dims[1];
    out[1] = out[0];
    out[2] = *input_proj;
    return LTC_OK;
}

ltc_status ltc_shape_lstm_layer_backward(const ltc_shape *grad_output,
                                         const ltc_shape *grad_c_seq, const ltc_shape *h0,
                                         const ltc_shape *c0, const ltc_shape *weight_hh,
                                         const ltc_shape *output, const ltc_shape *c_seq,
                                         const ltc_shape *gates, bool reverse, ltc_shape *out) {
    (void)reverse;
    const char *op = "lstm_layer_backward";
    ltc_status st = layer_args(op, gates, h0, c0, weight_hh, 4);
    if (st) return st;
    ltc_shape seq = *gates;
    seq.dims[2] = h0->dims[1];
    const ltc_shape *s[4] = {grad_output, grad_c_seq, output, c_seq};
    static const char *const names[4] = {"grad_output", "grad_c_seq", "output", "c_seq"};
    char a[128], b[128];
    for (int k = 0; k < 4; k++)
        if (!ltc_shape_equal(s[k], &seq))
            return ltc_errorf(LTC_ERR_ARG, "%s: %s %s must be %s (gates %s)", op, names[k],
                              SHAPE_STR(s[k], a), SHAPE_STR(&seq, b),
                              SHAPE_STR(gates, (char[128]){0}));
    out[0] = *gates, out[1] = *h0, out[2] = *c0, out[3] = *weight_hh;
    return LTC_OK;
}

/* gru_layer's operands (or its backward's, with `seq` the gates [T, B, 4H] in input_proj's
 * place): the sizes fit and one dtype. */
static ltc_status gru_args(const char *op, const char *seq_name, const ltc_shape *seq, int blocks,
                           const ltc_shape *h0, const ltc_shape *w, const ltc_shape *bias) {
    char a[128], b[128], c[128], d[128];
    ltc_dtype dt = seq->dtype;
    if (!ltc_dtype_is_float(dt)) /* narrow floats run as float32, as every op */
        return ltc_errorf(LTC_ERR_ARG, "%s: %s must be of a floating dtype, got %s", op, seq_name,
                          ltc_dtype_name(dt));
    if (h0->dtype != dt || w->dtype != dt || (bias && bias->dtype != dt))
        return ltc_errorf(LTC_ERR_ARG, "%s: %s, h0, weight_hh%s must have one dtype, got %s, %s, "
                          "%s%s%s", op, seq_name, bias ? " and bias_hh" : "", ltc_dtype_name(dt),
                          ltc_dtype_name(h0->dtype), ltc_dtype_name(w->dtype), bias ? " and " : "",
                          bias ? ltc_dtype_name(bias->dtype) : "");
    bool fit = seq->ndim == 3 && h0->ndim == 2;
    int64_t B = fit ? seq->dims[1] : 0, H = fit ? h0->dims[1] : 0;
    fit = fit && seq->dims[2] == blocks * H && dims_are(h0, 2, B, H, 0) &&
          dims_are(w, 2, 3 * H, H, 0) && (!bias || dims_are(bias, 1, 3 * H, 0, 0));
    if (!fit)
        return ltc_errorf(LTC_ERR_ARG, "%s: %s %s, h0 %s, weight_hh %s%s%s do not fit (%s [T, B, "
                          "%dH], h0 [B, H], weight_hh [3H, H]%s)", op, seq_name, SHAPE_STR(seq, a),
                          SHAPE_STR(h0, b), SHAPE_STR(w, c), bias ? " and bias_hh " : "",
                          bias ? SHAPE_STR(bias, d) : "", seq_name, blocks,
                          bias ? ", bias_hh [3H]" : "");
    return LTC_OK;
}

ltc_status ltc_shape_gru_layer(const ltc_shape *input_proj, const ltc_shape *h0,
                               const ltc_shape *weight_hh, const ltc_shape *bias_hh, bool reverse,
                               ltc_shape *out) {
    (void)reverse;
    ltc_status st = gru_args("gru_layer", "input_proj", input_proj, 3, h0, weight_hh, bias_hh);
    if (st) return st;
    out[0] = *input_proj;
    out[0].dims[2] = h0->dims[1];
    out[1] = *input_proj;
    out[1].dims[2] = 4 * h0->dims[1];
    return LTC_OK;
}

ltc_status ltc_shape_gru_layer_backward(const ltc_shape *grad_output, const ltc_shape *h0,
                                        const ltc_shape *weight_hh, const ltc_shape *output,
                                        const ltc_shape *gates, bool reverse, ltc_shape *out) {
    (void)reverse;
    const char *op = "gru_layer_backward";
    ltc_status st = gru_args(op, "gates", gates, 4, h0, weight_hh, NULL);
    if (st) return st;
    ltc_shape seq = *gates;
    seq.dims[2] = h0->dims[1];
    char a[128], b[128];
    if (!ltc_shape_equal(grad_output, &seq) || !ltc_shape_equal(output, &seq))
        return ltc_errorf(LTC_ERR_ARG, "%s: grad_output %s and output %s must be %s", op,
                          SHAPE_STR(grad_output, a), SHAPE_STR(output, b),
                          SHAPE_STR(&seq, (char[128]){0}));
    out[0] = *gates;
    out[0].dims[2] = 3 * h0->dims[1];
    out[1] = *h0, out[2] = *weight_hh;
    out[3] = *weight_hh;
    out[3].ndim = 1;
    return LTC_OK;
}
