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
#include <stdlib.h>
#include <string.h>

#include "elementwise.h"
#include "threads.h"
#include "vmath.h"

typedef struct {
    ltc_dtype dt;
    int64_t nt, B, H; /* steps, batch, hidden size */
    bool reverse;
    const void *proj, *h0, *c0, *w;  /* forward operands */
    void *wt;                        /* forward: W_hh^T [H, GH], made once per call */
    const void *bh;                  /* GRU: bias_hh [3H] */
    void *scratch;                   /* GRU: forward gh [B, 3H]; backward dgh [T, B, 3H] */
    void *dbh;                       /* GRU backward: grad_bias_hh */
    int64_t gh;                      /* backward: the rows of dW_hh (4H, 3H) */
    const void *dg;                  /* backward: the gradients dW_hh is made of */
    void *out, *cseq, *gates;        /* forward outputs (backward inputs) */
    const void *gout, *gc;           /* backward: the gradients of output and c_seq */
    void *dproj, *dh0, *dc0, *dw;    /* backward outputs */
} rnn_ctx;

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

/* ---- the step's product in float32 ------------------------------------------------------- */

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
/* -std=c11 turns off a * b + c contraction into FMA; the tiles want it */
#pragma GCC optimize("fp-contract=fast")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

/* C[m, n] = A[m, k] . Bm[k, n] (+ D[m, n] when D is not NULL), all row-major with leading
 * dims: the per-step product of the recurrence (B 32, k 128 or 512, n 512 or 128). OpenBLAS
 * packs both operands on every call, about a third of the time of a product this small;
 * here Bm is read in place (the forward passes W_hh^T, transposed once per call), with
 * tiles of 8 rows x 32 columns of C in 16 vector accumulators (64-byte GCC vectors: one zmm
 * on x86-64-v4, two ymm on v3), k in order: each element of C is the same sum wherever its
 * tile starts. Rows past a multiple of 8 take 1-row tiles, columns past a multiple of 32 a
 * plain loop. D may be C itself (each element is read before it is written). */
typedef float vf32 __attribute__((vector_size(64)));
typedef float vf32u __attribute__((vector_size(64), aligned(4)));

static inline __attribute__((always_inline)) void tile_f32(int R, int64_t k, const float *A,
                                                           int64_t lda, const float *Bm,
                                                           int64_t ldb, const float *D,
                                                           int64_t ldd, float *C, int64_t ldc) {
    vf32 acc[8][2];
    for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = (vf32){0};
    for (int64_t p = 0; p < k; p++) {
        vf32 b0 = *(const vf32u *)(Bm + p * ldb), b1 = *(const vf32u *)(Bm + p * ldb + 16);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            float a = A[r * lda + p];
            acc[r][0] += a * b0;
            acc[r][1] += a * b1;
        }
    }
    for (int r = 0; r < R; r++) {
        vf32 c0 = acc[r][0], c1 = acc[r][1];
        if (D) {
            c0 += *(const vf32u *)(D + r * ldd);
            c1 += *(const vf32u *)(D + r * ldd + 16);
        }
        *(vf32u *)(C + r * ldc) = c0;
        *(vf32u *)(C + r * ldc + 16) = c1;
    }
}

LTC_EW_CLONES static void step_mm_f32(int64_t m, int64_t n, int64_t k, const float *A,
                                      int64_t lda, const float *Bm, int64_t ldb, const float *D,
                                      int64_t ldd, float *C, int64_t ldc) {
    int64_t n32 = n / 32 * 32, m8 = m / 8 * 8;
    for (int64_t j = 0; j < n32; j += 32) {
        int64_t i = 0;
        for (; i < m8; i += 8)
            tile_f32(8, k, A + i * lda, lda, Bm + j, ldb, D ? D + i * ldd + j : NULL, ldd,
                     C + i * ldc + j, ldc);
        for (; i < m; i++)
            tile_f32(1, k, A + i * lda, lda, Bm + j, ldb, D ? D + i * ldd + j : NULL, ldd,
                     C + i * ldc + j, ldc);
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = n32; j < n; j++) {
            float acc = 0;
            for (int64_t p = 0; p < k; p++) acc += A[i * lda + p] * Bm[p * ldb + j];
            C[i * ldc + j] = D ? acc + D[i * ldd + j] : acc;
        }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif

/* The same product in float64, through OpenBLAS (D copied into C first). */
static void step_mm_f64(int64_t m, int64_t n, int64_t k, const double *A, int64_t lda,
                        const double *Bm, int64_t ldb, const double *D, int64_t ldd, double *C,
                        int64_t ldc) {
    if (D && D != C)
        for (int64_t i = 0; i < m; i++) memcpy(C + i * ldc, D + i * ldd, (size_t)n * sizeof(double));
    mm(LTC_F64, false, false, m, n, k, 1.0, A, lda, Bm, ldb, D ? 1.0 : 0.0, C, ldc);
}

/* Batch rows per task: the rows are independent through the whole sequence, so chunks of
 * them run on the pool's threads with no step-by-step synchronisation (a late thread's chunks
 * go to the others); 8 rows fill the product's tiles. */
#define ROWS 8
/* Rows of dW_hh per task of its product (dG^T h_prev over all steps, after the loop). */
#define WROWS 64

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

/* Runs fn over the batch's row chunks: on the pool when there are enough of them
 * (LTC_PAR_MIN_CHUNKS: B >= 32), OpenBLAS on one thread inside the tasks. */
static void run_rows(const rnn_ctx *x, ltc_cpu_range_fn fn) {
    int64_t n = (x->B + ROWS - 1) / ROWS;
    bool split = ltc_cpu_threads() > 1 && n >= LTC_PAR_MIN_CHUNKS;
    if (split) ltc_cpu_blas_single(true);
    ltc_cpu_parallel_for(n, 1, fn, (void *)x);
    if (split) ltc_cpu_blas_single(false);
}

/* dW_hh from x->dg, its rows in tasks on the pool (the product's columns are too few to
 * split OpenBLAS's way well, and tasks handed out dynamically let a late thread's share go
 * to the others). */
static void run_weight_grad(rnn_ctx *x, int64_t gh, const void *dg) {
    x->gh = gh, x->dg = dg;
    int64_t n = (gh + WROWS - 1) / WROWS;
    bool split = ltc_cpu_threads() > 1 && n >= LTC_PAR_MIN_CHUNKS;
    if (split) ltc_cpu_blas_single(true);
    ltc_cpu_parallel_for(n, 1, x->dt == LTC_F32 ? weight_grad_range_f32 : weight_grad_range_f64, x);
    if (split) ltc_cpu_blas_single(false);
}

/* W_hh^T [H, G H] from W_hh [G H, H], or NULL when out of memory (the caller frees it). */
static void *transposed(const void *w, int64_t rows, int64_t H, size_t es) {
    char *wt = malloc((size_t)(rows * H) * es + 1);
    if (!wt) return NULL;
    for (int64_t r = 0; r < rows; r++) /* wt[j, r] = w[r, j] */
        for (int64_t j = 0; j < H; j++)
            memcpy(wt + (size_t)(j * rows + r) * es, (const char *)w + (size_t)(r * H + j) * es, es);
    return wt;
}

/* lstm_layer(input_proj, h0, c0, weight_hh, reverse) -> (output, c_seq, gates) */
ltc_status ltc_cpu_kernel_lstm_layer(const ltc_kernel_args *a) {
    const ltc_shape *ps = &a->in_shapes[0];
    rnn_ctx x = {.dt = ps->dtype, .nt = ps->dims[0], .B = ps->dims[1], .H = ps->dims[2] / 4,
                  .reverse = a->attrs[0].i != 0, .proj = a->in[0], .h0 = a->in[1],
                  .c0 = a->in[2], .w = a->in[3], .out = a->out[0], .cseq = a->out[1],
                  .gates = a->out[2]};
    if (!(x.wt = transposed(x.w, 4 * x.H, x.H, ltc_dtype_size(x.dt))))
        return ltc_errorf(LTC_ERR_NOMEM, "lstm_layer: out of memory for weight_hh^T");
    run_rows(&x, x.dt == LTC_F32 ? lstm_forward_range_f32 : lstm_forward_range_f64);
    free(x.wt);
    return LTC_OK;
}

/* lstm_layer_backward(grad_output, grad_c_seq, h0, c0, weight_hh, output, c_seq, gates,
 * reverse) -> (grad_input_proj, grad_h0, grad_c0, grad_weight_hh) */
ltc_status ltc_cpu_kernel_lstm_layer_backward(const ltc_kernel_args *a) {
    const ltc_shape *gs = &a->in_shapes[7];
    rnn_ctx x = {.dt = gs->dtype, .nt = gs->dims[0], .B = gs->dims[1], .H = gs->dims[2] / 4,
                  .reverse = a->attrs[0].i != 0, .gout = a->in[0], .gc = a->in[1],
                  .h0 = a->in[2], .c0 = a->in[3], .w = a->in[4], .out = (void *)a->in[5],
                  .cseq = (void *)a->in[6], .gates = (void *)a->in[7], .dproj = a->out[0],
                  .dh0 = a->out[1], .dc0 = a->out[2], .dw = a->out[3]};
    run_rows(&x, x.dt == LTC_F32 ? lstm_backward_range_f32 : lstm_backward_range_f64);
    run_weight_grad(&x, 4 * x.H, x.dproj);
    return LTC_OK;
}

/* gru_layer(input_proj, h0, weight_hh, bias_hh, reverse) -> (output, gates) */
ltc_status ltc_cpu_kernel_gru_layer(const ltc_kernel_args *a) {
    const ltc_shape *ps = &a->in_shapes[0];
    rnn_ctx x = {.dt = ps->dtype, .nt = ps->dims[0], .B = ps->dims[1], .H = ps->dims[2] / 3,
                 .reverse = a->attrs[0].i != 0, .proj = a->in[0], .h0 = a->in[1],
                 .w = a->in[2], .bh = a->in[3], .out = a->out[0], .gates = a->out[1]};
    size_t es = ltc_dtype_size(x.dt);
    x.wt = transposed(x.w, 3 * x.H, x.H, es);
    x.scratch = malloc((size_t)(x.B * 3 * x.H) * es + 1);
    if (!x.wt || !x.scratch) {
        free(x.wt);
        free(x.scratch);
        return ltc_errorf(LTC_ERR_NOMEM, "gru_layer: out of memory for the step buffers");
    }
    run_rows(&x, x.dt == LTC_F32 ? gru_forward_range_f32 : gru_forward_range_f64);
    free(x.wt);
    free(x.scratch);
    return LTC_OK;
}

/* gru_layer_backward(grad_output, h0, weight_hh, output, gates, reverse) -> (grad_input_proj,
 * grad_h0, grad_weight_hh, grad_bias_hh) */
ltc_status ltc_cpu_kernel_gru_layer_backward(const ltc_kernel_args *a) {
    const ltc_shape *gs = &a->in_shapes[4];
    rnn_ctx x = {.dt = gs->dtype, .nt = gs->dims[0], .B = gs->dims[1], .H = gs->dims[2] / 4,
                 .reverse = a->attrs[0].i != 0, .gout = a->in[0], .h0 = a->in[1],
                 .w = a->in[2], .out = (void *)a->in[3], .gates = (void *)a->in[4],
                 .dproj = a->out[0], .dh0 = a->out[1], .dw = a->out[2], .dbh = a->out[3]};
    size_t es = ltc_dtype_size(x.dt);
    if (!(x.scratch = malloc((size_t)(x.nt * x.B * 3 * x.H) * es + 1)))
        return ltc_errorf(LTC_ERR_NOMEM, "gru_layer_backward: out of memory for the gate "
                          "gradients");
    run_rows(&x, x.dt == LTC_F32 ? gru_backward_range_f32 : gru_backward_range_f64);
    if (x.dt == LTC_F32) gru_finish_f32(&x);
    else gru_finish_f64(&x);
    run_weight_grad(&x, 3 * x.H, x.scratch);
    free(x.scratch);
    return LTC_OK;
}
