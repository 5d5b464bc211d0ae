/* rnn.c - CPU kernels of the fused recurrences: lstm_layer and lstm_layer_backward (cuDNN's
 * and PyTorch's fused RNN, in ltc ops; codegen/ops.yaml says what they compute).
 *
 * Forward, per step t (in time order, or from T down to 1 when reverse): the step's gates
 * start as input_proj[t], one gemm adds h_prev W_hh^T ([B, H] x [H, 4H]), one vectorised loop
 * activates them (kept in `gates` for the backward) and writes c[t] and h[t].
 * Backward, per step in the opposite order: one loop makes the gate gradients of the step
 * (into grad_input_proj[t]) and the carried dc, one gemm the carried dh = dgates W_hh
 * ([B, 4H] x [4H, H]); after the loop grad_weight_hh = dgates^T h_prev is one gemm over all
 * steps but the first (whose h_prev is h0, a second small gemm). tanh(c) is recomputed from
 * c_seq rather than saved. One thread drives the loop; each gemm goes through ltc_cpu_gemm,
 * which chooses OpenBLAS's threads by size. */
#include <math.h>
#include <string.h>

#include "elementwise.h"
#include "threads.h"
#include "vmath.h"

typedef struct {
    ltc_dtype dt;
    int64_t nt, B, H; /* steps, batch, hidden size */
    bool reverse;
    const void *proj, *h0, *c0, *w;  /* forward operands */
    void *out, *cseq, *gates;        /* forward outputs (backward inputs) */
    const void *gout, *gc;           /* backward: the gradients of output and c_seq */
    void *dproj, *dh0, *dc0, *dw;    /* backward outputs */
} lstm_ctx;

/* gemm that tolerates empty dims (k == 0 leaves beta * C, so zeros for beta 0). */
static void mm(ltc_dtype dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
               const void *A, int64_t lda, const void *B, int64_t ldb, double beta, void *C,
               int64_t ldc) {
    if (m == 0 || n == 0) return;
    if (k == 0) {
        if (beta == 0) memset(C, 0, (size_t)(m * ldc) * ltc_dtype_size(dt));
        return;
    }
    ltc_cpu_gemm(dt, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define FN(name) CAT(name, SFX)

#define T float
#define SFX f32
#define EXP expf
#define TANH tanhf
#include "rnn_impl.h"
#undef T
#undef SFX
#undef EXP
#undef TANH

#define T double
#define SFX f64
#define EXP exp
#define TANH tanh
#include "rnn_impl.h"
#undef T
#undef SFX
#undef EXP
#undef TANH

/* lstm_layer(input_proj, h0, c0, weight_hh, reverse) -> (output, c_seq, gates) */
ltc_status ltc_cpu_kernel_lstm_layer(const ltc_kernel_args *a) {
    const ltc_shape *ps = &a->in_shapes[0];
    lstm_ctx x = {.dt = ps->dtype, .nt = ps->dims[0], .B = ps->dims[1], .H = ps->dims[2] / 4,
                  .reverse = a->attrs[0].i != 0, .proj = a->in[0], .h0 = a->in[1],
                  .c0 = a->in[2], .w = a->in[3], .out = a->out[0], .cseq = a->out[1],
                  .gates = a->out[2]};
    if (x.dt == LTC_F32) lstm_forward_f32(&x);
    else lstm_forward_f64(&x);
    return LTC_OK;
}

/* lstm_layer_backward(grad_output, grad_c_seq, h0, c0, weight_hh, output, c_seq, gates,
 * reverse) -> (grad_input_proj, grad_h0, grad_c0, grad_weight_hh) */
ltc_status ltc_cpu_kernel_lstm_layer_backward(const ltc_kernel_args *a) {
    const ltc_shape *gs = &a->in_shapes[7];
    lstm_ctx x = {.dt = gs->dtype, .nt = gs->dims[0], .B = gs->dims[1], .H = gs->dims[2] / 4,
                  .reverse = a->attrs[0].i != 0, .gout = a->in[0], .gc = a->in[1],
                  .h0 = a->in[2], .c0 = a->in[3], .w = a->in[4], .out = (void *)a->in[5],
                  .cseq = (void *)a->in[6], .gates = (void *)a->in[7], .dproj = a->out[0],
                  .dh0 = a->out[1], .dc0 = a->out[2], .dw = a->out[3]};
    if (x.dt == LTC_F32) lstm_backward_f32(&x);
    else lstm_backward_f64(&x);
    return LTC_OK;
}
