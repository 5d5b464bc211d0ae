/* attention.c - CPU kernels of scaled_dot_product_attention and its backward, FlashAttention's
 * loops on the host (Dao et al. 2022, algorithms 1 and 2).
 *
 * Forward: for each (batch, block of BR queries), the keys are walked in blocks of BC; a block
 * of scores is one gemm, masked, and folded into each query row by an online softmax (running
 * max m and sum l; the accumulator rescaled by exp(m_old - m_new)), then P . V_block is
 * added by a second gemm. Only BR x BC scores exist at once, never [L, S]. The per-row
 * logsumexp m + log(l) is the second output.
 * Backward: per batch, for each block of keys and each block of queries that sees it, P is
 * recomputed from the logsumexp (P = exp(s - lse)), then dV += P^T dO, dP = dO V^T, dS = P
 * (dP - D) with D = rowsum(dO * O), dQ += scale dS K, dK += scale dS^T Q: five gemms per
 * block pair, two BR x BC scratch blocks per thread.
 * Dropout (the .dropout overloads): probability P[b, i, j] is kept with probability 1 - p and
 * scaled by 1 / (1 - p), the decision drawn from Philox at counter offset + (b L + i) S + j
 * (the flat index in [..., L, S]) as ltc.rand draws a uniform of the dtype, so the decisions
 * of a block are regenerated wherever they are needed and never stored: the forward folds
 * the undropped exps into the normaliser l (logsumexp stays the undropped one) and multiplies
 * P by the factors before P . V; the backward forms W = P * factors (a third scratch block),
 * dV += W^T dO and dS = W * dP - P * D (= P (dP * factors - D); D = rowsum(dO * O) is still
 * rowsum(P * dP * factors), as O = W V).
 * Small heads (the packed op's gathered items with E, Ev <= SMALL_E): the blocks' products
 * are mmk's (attention_impl.h), not OpenBLAS's, whose per-call packing and zeroing of C cost
 * more than the arithmetic of a 64 x 64 x 32 block; K (and V in the backward) are gathered
 * transposed so that every product reads its right operand along rows, and causal blocks
 * leave out the terms and score vectors past the diagonal. mmk reads and writes every other
 * operand (Q, V, dO, dQ, dK, dV) in its strided place in qkv: gathering them first and
 * copying the gradients back cost a tenth of the kernels' time.
 * Threads: forward items are (batch, query block) pairs, backward items batches (their dK and
 * dV are private to them); OpenBLAS runs single-threaded inside (threads.h).
 * A row that no key may see (every mask entry false or -inf) gives NaN output and logsumexp
 * -inf, as PyTorch's softmax of a row of -inf; its NaN probabilities reach dV, and dQ and dK
 * too when the mask is float (PyTorch's s + mask), not when it is bool (masked_fill: the
 * masked scores are constants, their gradient 0). A row with a +inf (or NaN) score gives NaN
 * output and logsumexp (inf - inf in its exps), as the reference kernel and PyTorch's
 * softmax. */
#if defined(__GNUC__) && !defined(__clang__)
/* -std=c11 turns off a * b + c contraction into FMA; mmk's loops want it (as gemm_small.c) */
#pragma GCC optimize("fp-contract=fast")
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "elementwise.h"
#include "threads.h"
#include "vmath.h"

/* Queries and keys per block: a BR x BC block of scores (32 KB in float32) and its
 * gradient stay in L2 cache with the Q, K and V rows they come from. */
#define BR 64
#define BC 128
/* Heads up to this width take mmk's products rather than OpenBLAS's (c->small). */
#define SMALL_E 64

/* Where item b's rows are: row r of item b starts at (b / H) * bs + (b % H) * hs + r * ld
 * elements from its base (contiguous [..., L, E]: H 1, bs L * E, hs 0, ld E). */
typedef struct {
    int64_t bs, hs, ld;
} at_lay;

typedef struct {
    ltc_dtype dt;
    int64_t B, L, S, E, Ev; /* B: the leading dims flattened (batches x heads) */
    int64_t H;              /* heads per batch entry (1 but for the packed op) */
    bool gather;            /* strided rows: each item's gathered into scratch first */
    bool small;             /* gather, E and Ev <= SMALL_E: the blocks' products by mmk
                               (attention_impl.h), not OpenBLAS; only K (and V in the
                               backward) gathered, transposed */
    at_lay lq, lk, lv, lo;  /* query (and its gradient), key, value, output (and its grad) */
    const void *q, *k, *v;
    const void *mask;       /* NULL, or bool / dt entries broadcast to [..., L, S] */
    ltc_dtype mdt;
    int nb;                 /* leading dims of q (ndim - 2) */
    int64_t bdims[LTC_MAX_DIMS], bstride[LTC_MAX_DIMS]; /* q's leading sizes, the mask's strides
                                                           along them (0 where broadcast) */
    int64_t msl, mss;       /* the mask's strides along L and S */
    bool causal;
    bool const_masked;      /* the mask is bool or causal: masked scores are constants */
    double scale;
    bool dropout;           /* dropout_p > 0 */
    double keep;            /* 1 - dropout_p */
    uint64_t seed, offset;  /* the generator state of the keep decisions */
    void *out, *lse;                   /* forward outputs; lse is read by the backward */
    const void *go, *o;                /* backward inputs: grad_output, output */
    void *dq, *dk, *dv;                /* backward outputs */
    void **scratch;                    /* one buffer per thread */
} at_ctx;

static inline int64_t at_off(const at_ctx *c, const at_lay *l, int64_t b) {
    return b / c->H * l->bs + b % c->H * l->hs;
}

/* Offset in the mask of batch b's [L, S] slice. */
static int64_t mask_base(const at_ctx *c, int64_t b) {
    int64_t off = 0;
    for (int d = c->nb - 1; d >= 0; d--) {
        off += b % c->bdims[d] * c->bstride[d];
        b /= c->bdims[d];
    }
    return off;
}

/* gemm that tolerates empty dims (k == 0 leaves beta * C, so zeros for beta 0). */
static void mm(ltc_dtype dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
               const void *A, int64_t lda, const void *B, int64_t ldb, double beta, void *C,
               int64_t ldc) {
    if (m == 0 || n == 0) return;
    if (k == 0) {
        if (beta == 0) {
            size_t es = ltc_dtype_size(dt);
            for (int64_t i = 0; i < m; i++) memset((char *)C + (size_t)(i * ldc) * es, 0, (size_t)n * es);
        }
        return;
    }
    ltc_cpu_gemm(dt, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* Keys a block of queries [i0, i0 + br) can see: all S, or up to the last query's position
 * when causal (query i sees keys j <= i, PyTorch's top-left tril). */
static int64_t key_end(const at_ctx *c, int64_t i0, int64_t br) {
    return c->causal && i0 + br < c->S ? i0 + br : c->S;
}

/* The keys of block j0 .. j0 + bc - 1 that query i may see: with causal, those up to i (the
 * rest score -inf, probability exactly 0), else all bc. */
static inline int64_t row_keys(const at_ctx *c, int64_t i, int64_t j0, int64_t bc) {
    if (!c->causal) return bc;
    int64_t n = i + 1 - j0;
    return n < 0 ? 0 : n > bc ? bc : n;
}

/* Philox 4x32-10's words 0 and 1 (as w0 << 32 | w1) at counters counter .. counter + n - 1
 * (n <= BC) under key: ltc_philox4x32 (src/core/rng.c) a block row at a time, rounds outside
 * and counters inside so that each round is a vector loop (4-8x the scalar generator's rate). */
LTC_EW_CLONES static void philox_words(uint64_t counter, uint64_t key, int64_t n, uint64_t *w01) {
    uint32_t c0[BC], c1[BC], c2[BC], c3[BC];
    LTC_SIMD for (int64_t j = 0; j < n; j++) {
        uint64_t ctr = counter + (uint64_t)j;
        c0[j] = (uint32_t)ctr, c1[j] = (uint32_t)(ctr >> 32), c2[j] = 0, c3[j] = 0;
    }
    uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
    for (int r = 0; r < 10; r++) {
        LTC_SIMD for (int64_t j = 0; j < n; j++) {
            uint64_t p0 = (uint64_t)0xD2511F53u * c0[j], p1 = (uint64_t)0xCD9E8D57u * c2[j];
            uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[j] ^ k0;
            uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3[j] ^ k1;
            c1[j] = (uint32_t)p1, c3[j] = (uint32_t)p0, c0[j] = n0, c2[j] = n2;
        }
        k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
    }
    LTC_SIMD for (int64_t j = 0; j < n; j++) w01[j] = (uint64_t)c0[j] << 32 | c1[j];
}

/* Rows [0, n) of n x e src (row stride ld) transposed into dst [e, n] (row stride ldd): the
 * K^T and V^T of the small-head products, read from the packed qkv's strided rows. float32
 * goes by 8 x 8 tiles of 32-byte vectors (eight loads, three rounds of shuffles, eight
 * stores), the rest element by element; the scalar loop alone was half the forward's time
 * in tiny_gpt (a load and a store per element, the loads missing cache). */
typedef float at_v8 __attribute__((vector_size(32)));
typedef int32_t at_i8 __attribute__((vector_size(32)));
LTC_EW_CLONES static void gathert_f32(float *dst, int64_t ldd, const float *src, int64_t n,
                                      int64_t e, int64_t ld) {
    int64_t n8 = n - n % 8, e8 = e - e % 8;
    const at_i8 lo = {0, 8, 1, 9, 4, 12, 5, 13}, hi = {2, 10, 3, 11, 6, 14, 7, 15};
    const at_i8 lo2 = {0, 1, 8, 9, 4, 5, 12, 13}, hi2 = {2, 3, 10, 11, 6, 7, 14, 15};
    const at_i8 lo4 = {0, 1, 2, 3, 8, 9, 10, 11}, hi4 = {4, 5, 6, 7, 12, 13, 14, 15};
    for (int64_t r = 0; r < n8; r += 8)
        for (int64_t x = 0; x < e8; x += 8) {
            at_v8 a[8], t[8], u[8];
            for (int i = 0; i < 8; i++) memcpy(&a[i], src + (r + i) * ld + x, sizeof a[i]);
            for (int i = 0; i < 8; i += 2) {
                t[i] = __builtin_shuffle(a[i], a[i + 1], lo);
                t[i + 1] = __builtin_shuffle(a[i], a[i + 1], hi);
            }
            for (int i = 0; i < 8; i += 4)
                for (int h = 0; h < 2; h++) {
                    u[i + 2 * h] = __builtin_shuffle(t[i + h], t[i + 2 + h], lo2);
                    u[i + 2 * h + 1] = __builtin_shuffle(t[i + h], t[i + 2 + h], hi2);
                }
            /* u[0..3]: columns 0/4, 1/5, 2/6, 3/7 of rows 0-3; u[4..7] the same of rows 4-7 */
            for (int i = 0; i < 4; i++) {
                at_v8 c0 = __builtin_shuffle(u[i], u[i + 4], lo4);
                at_v8 c1 = __builtin_shuffle(u[i], u[i + 4], hi4);
                memcpy(dst + (x + i) * ldd + r, &c0, sizeof c0);
                memcpy(dst + (x + i + 4) * ldd + r, &c1, sizeof c1);
            }
        }
    for (int64_t r = 0; r < n; r++)
        for (int64_t x = r < n8 ? e8 : 0; x < e; x++) dst[x * ldd + r] = src[r * ld + x];
}

static void gathert_f64(double *dst, int64_t ldd, const double *src, int64_t n, int64_t e,
                        int64_t ld) {
    for (int64_t r = 0; r < n; r++)
        for (int64_t x = 0; x < e; x++) dst[x * ldd + r] = src[r * ld + x];
}

/* The exps of the softmax are taken of x = s - max <= 0; at or below EXP_MIN, where exp all
 * but underflows (1.6e-38 in float32, 3.3e-308 in float64), the probability is exactly 0
 * (expz in attention_impl.h), so a masked key (score -inf) gets no weight at all; EXP_ZERO
 * lies just above exp(EXP_MIN). */
#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define FN(name) CAT(name, SFX)

/* The uniform in [0, 1) of Philox words w0, w1 given as w = w0 << 32 | w1, as
 * ltc_rng_uniform_f32 (w0's top 24 bits) and _f64 (the top 53 bits of w) make it. */
#define UNIFORM(w) ((float)((w) >> 40) * (1.0f / 16777216.0f))
#define T float
#define IT int32_t
#define SFX f32
#define EXP expf
#define EXP_MIN -87.0f
#define EXP_ZERO 1.7e-38f
#include "attention_impl.h"
#undef T
#undef IT
#undef SFX
#undef EXP
#undef EXP_MIN
#undef EXP_ZERO
#undef UNIFORM

#define UNIFORM(w) ((double)((w) >> 11) * (1.0 / 9007199254740992.0))
#define T double
#define IT int64_t
#define SFX f64
#define EXP exp
#define EXP_MIN -708.0
#define EXP_ZERO 3.4e-308
#include "attention_impl.h"
#undef T
#undef IT
#undef SFX
#undef EXP
#undef EXP_MIN
#undef EXP_ZERO
#undef UNIFORM

/* Fills the sizes, the generator state (in[ri]; none when ri < 0) and the mask's broadcast
 * strides (in[mi]); q, k, v are in[1..3] for the backward. */
static void setup(at_ctx *c, const ltc_kernel_args *a, int qi, int mi, int ri) {
    const ltc_shape *qs = &a->in_shapes[qi], *ks = &a->in_shapes[qi + 1], *vs = &a->in_shapes[qi + 2];
    int n = qs->ndim;
    c->dt = qs->dtype;
    c->L = qs->dims[n - 2], c->E = qs->dims[n - 1], c->S = ks->dims[n - 2], c->Ev = vs->dims[n - 1];
    c->B = 1;
    c->nb = n - 2;
    for (int d = 0; d < n - 2; d++) c->B *= qs->dims[d], c->bdims[d] = qs->dims[d];
    c->H = 1;
    c->lq = (at_lay){c->L * c->E, 0, c->E}, c->lk = (at_lay){c->S * c->E, 0, c->E};
    c->lv = (at_lay){c->S * c->Ev, 0, c->Ev}, c->lo = (at_lay){c->L * c->Ev, 0, c->Ev};
    c->q = a->in[qi], c->k = a->in[qi + 1], c->v = a->in[qi + 2];
    c->causal = a->attrs[0].i != 0;
    c->scale = a->attrs[1].f;
    c->mask = NULL;
    c->const_masked = c->causal;
    if (ri >= 0) {
        const int64_t *st = a->in[ri];
        c->keep = 1 - a->attrs[2].f;
        c->dropout = c->keep < 1;
        c->seed = (uint64_t)st[0], c->offset = (uint64_t)st[1];
    }
    if (mi < 0) return;
    const ltc_shape *ms = &a->in_shapes[mi];
    c->mask = a->in[mi], c->mdt = ms->dtype;
    c->const_masked = c->causal || ms->dtype == LTC_BOOL;
    /* the mask's strides aligned to q's dims (trailing), 0 along size-1 (broadcast) dims */
    int64_t st[LTC_MAX_DIMS] = {0}, acc = 1;
    for (int d = ms->ndim - 1; d >= 0; d--) {
        st[n - ms->ndim + d] = ms->dims[d] == 1 ? 0 : acc;
        acc *= ms->dims[d];
    }
    for (int d = 0; d < n - 2; d++) c->bstride[d] = st[d];
    c->msl = st[n - 2], c->mss = st[n - 1];
}

/* One scratch buffer of `elems` elements per thread; false when out of memory. */
static bool scratch_new(at_ctx *c, int64_t elems) {
    int n = ltc_cpu_threads();
    c->scratch = calloc((size_t)n, sizeof(void *));
    if (!c->scratch) return false;
    for (int i = 0; i < n; i++)
        if (!(c->scratch[i] = malloc((size_t)elems * ltc_dtype_size(c->dt)))) return false;
    return true;
}

static void scratch_free(at_ctx *c) {
    if (!c->scratch) return;
    for (int i = 0; i < ltc_cpu_threads(); i++) free(c->scratch[i]);
    free(c->scratch);
}

/* Runs fn over n items, BLAS single-threaded inside when the items are shared out. */
static void run(int64_t n, ltc_cpu_range_fn fn, at_ctx *c) {
    bool split = ltc_cpu_threads() > 1 && n >= LTC_PAR_MIN_CHUNKS;
    if (split) ltc_cpu_blas_single(true);
    ltc_cpu_parallel_for(n, 1, fn, c);
    if (split) ltc_cpu_blas_single(false);
}

static ltc_status run_forward(at_ctx c) {
    if (c.B * c.L == 0) return LTC_OK;
    int64_t g = c.gather ? c.L * c.E + c.S * (c.E + c.Ev) : 0;
    if (!scratch_new(&c, BR * BC + 2 * BR + BR * c.Ev + g)) {
        scratch_free(&c);
        return ltc_errorf(LTC_ERR_NOMEM, "scaled_dot_product_attention: out of memory for "
                          "the blocks of scores");
    }
    run(c.B * ((c.L + BR - 1) / BR), c.dt == LTC_F32 ? fwd_f32 : fwd_f64, &c);
    scratch_free(&c);
    return LTC_OK;
}

static ltc_status run_backward(at_ctx c) {
    if (c.B == 0) return LTC_OK;
    int64_t g = c.gather ? 2 * (c.L * c.E + c.S * (c.E + c.Ev)) + c.L * c.Ev : 0;
    if (c.small) g += c.S * c.E; /* K^T */
    if (!scratch_new(&c, (c.dropout ? 3 : 2) * BR * BC + c.L + g)) {
        scratch_free(&c);
        return ltc_errorf(LTC_ERR_NOMEM, "scaled_dot_product_attention_backward: out of memory "
                          "for the blocks of scores");
    }
    run(c.B, c.dt == LTC_F32 ? bwd_f32 : bwd_f64, &c);
    scratch_free(&c);
    return LTC_OK;
}

static ltc_status forward(const ltc_kernel_args *a, int mi, int ri) {
    at_ctx c = {0};
    setup(&c, a, 0, mi, ri);
    c.out = a->out[0], c.lse = a->out[1];
    return run_forward(c);
}

static ltc_status backward(const ltc_kernel_args *a, int mi, int ri) {
    at_ctx c = {0};
    setup(&c, a, 1, mi, ri);
    c.go = a->in[0], c.o = a->in[4], c.lse = (void *)a->in[5];
    c.dq = a->out[0], c.dk = a->out[1], c.dv = a->out[2];
    return run_backward(c);
}

/* The packed layout: qkv [N, L, 3E] (query, key and value side by side, head h at columns h
 * * D of each, D = E / heads), output [N, L, E] (the heads side by side), logsumexp [N,
 * heads, L]. Items are (batch entry, head) pairs; *dqkv (the backward's output) gets the
 * gradients of the three at the same places. */
static void setup_packed(at_ctx *c, const ltc_shape *qs, const void *qkv, void *dqkv,
                         int64_t heads, bool causal, double scale) {
    int64_t N = qs->dims[0], L = qs->dims[1], E = qs->dims[2] / 3, D = E / heads;
    size_t es = ltc_dtype_size(qs->dtype);
    c->dt = qs->dtype;
    c->B = N * heads, c->H = heads;
    c->L = c->S = L, c->E = c->Ev = D;
    c->lq = c->lk = c->lv = (at_lay){L * 3 * E, D, 3 * E};
    c->lo = (at_lay){L * E, D, E};
    c->q = qkv, c->k = (const char *)qkv + (size_t)E * es, c->v = (const char *)qkv + (size_t)(2 * E) * es;
    if (dqkv) {
        c->dq = dqkv, c->dk = (char *)dqkv + (size_t)E * es;
        c->dv = (char *)dqkv + (size_t)(2 * E) * es;
    }
    c->causal = c->const_masked = causal;
    c->scale = scale;
    c->gather = heads > 1;
    c->small = c->gather && D <= SMALL_E;
}

/* scaled_dot_product_attention(query, key, value, is_causal, scale) -> (output, logsumexp) */
ltc_status ltc_cpu_kernel_scaled_dot_product_attention(const ltc_kernel_args *a) {
    return forward(a, -1, -1);
}

/* scaled_dot_product_attention.mask(query, key, value, is_causal, scale, attn_mask) */
ltc_status ltc_cpu_kernel_scaled_dot_product_attention_mask(const ltc_kernel_args *a) {
    return forward(a, 3, -1);
}

/* scaled_dot_product_attention.dropout(query, key, value, is_causal, scale, dropout_p,
 * rng_state) */
ltc_status ltc_cpu_kernel_scaled_dot_product_attention_dropout(const ltc_kernel_args *a) {
    return forward(a, -1, 3);
}

/* scaled_dot_product_attention.dropout_mask(..., dropout_p, rng_state, attn_mask) */
ltc_status ltc_cpu_kernel_scaled_dot_product_attention_dropout_mask(const ltc_kernel_args *a) {
    return forward(a, 4, 3);
}

/* scaled_dot_product_attention_backward(grad_output, query, key, value, output, logsumexp,
 * is_causal, scale) -> (grad_query, grad_key, grad_value) */
ltc_status ltc_cpu_kernel_scaled_dot_product_attention_backward(const ltc_kernel_args *a) {
    return backward(a, -1, -1);
}

/* scaled_dot_product_attention_backward.mask(..., attn_mask) */
ltc_status ltc_cpu_kernel_scaled_dot_product_attention_backward_mask(const ltc_kernel_args *a) {
    return backward(a, 6, -1);
}

/* scaled_dot_product_attention_backward.dropout(..., is_causal, scale, dropout_p, rng_state) */
ltc_status ltc_cpu_kernel_scaled_dot_product_attention_backward_dropout(const ltc_kernel_args *a) {
    return backward(a, -1, 6);
}

/* scaled_dot_product_attention_backward.dropout_mask(..., dropout_p, rng_state, attn_mask) */
ltc_status ltc_cpu_kernel_scaled_dot_product_attention_backward_dropout_mask(
    const ltc_kernel_args *a) {
    return backward(a, 7, 6);
}

/* scaled_dot_product_attention_packed(qkv, heads, is_causal, scale) -> (output, logsumexp) */
ltc_status ltc_cpu_kernel_scaled_dot_product_attention_packed(const ltc_kernel_args *a) {
    at_ctx c = {0};
    setup_packed(&c, &a->in_shapes[0], a->in[0], NULL, a->attrs[0].i, a->attrs[1].i != 0,
                 a->attrs[2].f);
    c.out = a->out[0], c.lse = a->out[1];
    return run_forward(c);
}

/* scaled_dot_product_attention_packed_backward(grad_output, qkv, output, logsumexp, heads,
 * is_causal, scale) -> grad_qkv */
ltc_status ltc_cpu_kernel_scaled_dot_product_attention_packed_backward(const ltc_kernel_args *a) {
    at_ctx c = {0};
    setup_packed(&c, &a->in_shapes[1], a->in[1], a->out[0], a->attrs[0].i, a->attrs[1].i != 0,
                 a->attrs[2].f);
    c.go = a->in[0], c.o = a->in[2], c.lse = (void *)a->in[3];
    return run_backward(c);
}
