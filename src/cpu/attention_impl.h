/*
 * attention_impl.h - the blocked loops of attention.c for one element type, included once per
 * type with T (float, double), IT (int32_t, int64_t: an integer of T's size), SFX (f32, f64)
 * and EXP (expf, exp) defined. Not a header of
 * its own: attention.c holds the context struct, the mask look-up and the kernels.
 */

/* Rows [r0, r1) of n elements from src (row stride ld) to dst (row stride n). */
static void FN(gather)(T *dst, const T *src, int64_t r0, int64_t r1, int64_t n, int64_t ld) {
    for (int64_t r = r0; r < r1; r++) memcpy(dst + r * n, src + r * ld, (size_t)n * sizeof(T));
}


/* The small-block product of c->small (heads of width E, Ev <= SMALL_E): C[m, n] = alpha *
 * op(A) . B + beta * C, at two vector widths (attention_mmk.h): 64-byte vectors where the
 * CPU has AVX-512 (x86-64-v4: 32 vector registers, and on this machine's cores twice the
 * multiply-adds per cycle of 32-byte ones: a 64 x 64 x 32 block took 1.21 us against 2.40),
 * else 32-byte ones (8 accumulators fit AVX2's 16 registers). Each element of C is the same
 * sum at either width (one lane each, k in order). */
#ifndef NOLIM
#define NOLIM INT64_MAX
#endif
#define MMK_NAME FN(mmk_w32)
#define MMK_VB 32
#define MMK_ATTR LTC_EW_CLONES_V3
#include "attention_mmk.h"
#if LTC_HAVE_V4_TARGET
#define MMK_NAME FN(mmk_w64)
#define MMK_VB 64
#define MMK_ATTR LTC_V4_TARGET
#include "attention_mmk.h"
#endif

static void FN(mmk)(bool ta, int64_t m, int64_t n, int64_t k, T alpha, const T *A, int64_t lda,
                    const T *B, int64_t ldb, T beta, T *C, int64_t ldc, int64_t kl, int64_t cl) {
#if LTC_HAVE_V4_TARGET
    if (ltc_cpu_has_v4()) {
        FN(mmk_w64)(ta, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, kl, cl);
        return;
    }
#endif
    FN(mmk_w32)(ta, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, kl, cl);
}

/* row[j] = exp(row[j] - z) for j < n, exactly 0 where row[j] - z <= EXP_MIN: a masked score
 * (-inf) gets probability 0, as in PyTorch's softmax, not exp(EXP_MIN). The exp is taken of
 * the difference clamped at EXP_MIN (the vector exp's slow path for -inf and subnormal
 * results is never taken), and results below EXP_ZERO (just above exp(EXP_MIN)) become 0;
 * three loops, as GCC vectorizes no loop with both a call and a select. NaN stays NaN. */
LTC_EW_CLONES static void FN(expz)(T *row, int64_t n, T z) {
    LTC_SIMD for (int64_t j = 0; j < n; j++) {
        T x = row[j] - z;
        row[j] = x < EXP_MIN ? EXP_MIN : x;
    }
    LTC_SIMD for (int64_t j = 0; j < n; j++) row[j] = EXP(row[j]);
    LTC_SIMD for (int64_t j = 0; j < n; j++) row[j] = row[j] < EXP_ZERO ? 0 : row[j];
}

/* The largest of row[0..n) and the sum of row[0..n), over vectors of 64 bytes: NaN entries
 * are skipped by the maximum (`x > m ? x : m`, as before) and the maximum is the same in
 * any order, so its lanes meet in a tree; the sum keeps one partial per lane (the remainder
 * in lane 0) added in lane order, the order of GCC's omp simd reduction in the AVX-512
 * clone, without its per-row lane array (16 scalar stores read back as one vector, a
 * stalled store forwarding, then a scalar loop): those reductions were half the forward's
 * own time in tiny_gpt (rows of 64). */
typedef T FN(v64) __attribute__((vector_size(64)));
typedef IT FN(m64) __attribute__((vector_size(64))); /* a lane mask of v64 */
#define V64W ((int64_t)(64 / sizeof(T)))
LTC_EW_CLONES static T FN(rowmax)(const T *row, int64_t n) {
    T mx = -INFINITY;
    int64_t j = 0;
    if (n >= V64W) {
        FN(v64) a = (FN(v64)){0} - (T)INFINITY, b;
        for (; j + V64W <= n; j += V64W) {
            memcpy(&b, row + j, sizeof b);
            FN(m64) gt = b > a, ab, bb; /* a = b > a ? b : a, lane by lane */
            memcpy(&ab, &a, sizeof ab), memcpy(&bb, &b, sizeof bb);
            ab = (bb & gt) | (ab & ~gt);
            memcpy(&a, &ab, sizeof a);
        }
        T t[V64W];
        memcpy(t, &a, sizeof t);
        for (int64_t w = V64W / 2; w > 0; w /= 2)
            for (int64_t l = 0; l < w; l++) t[l] = t[l + w] > t[l] ? t[l + w] : t[l];
        mx = t[0];
    }
    for (; j < n; j++) mx = row[j] > mx ? row[j] : mx;
    return mx;
}

/* The lanes of a 64-byte vector summed as a tree (halves, quarters, ...): 4 dependent adds
 * for float32, where lane order took 16 (a third of rowsum's time on tiny_gpt's rows). */
static inline T FN(lanesum)(FN(v64) a) {
    T t[V64W];
    memcpy(t, &a, sizeof t);
    for (int64_t w = V64W / 2; w > 0; w /= 2)
        for (int64_t l = 0; l < w; l++) t[l] += t[l + w];
    return t[0];
}

LTC_EW_CLONES static T FN(rowsum)(const T *row, int64_t n) {
    FN(v64) a = {0}, b;
    int64_t j = 0;
    for (; j + V64W <= n; j += V64W) {
        memcpy(&b, row + j, sizeof b);
        a += b;
    }
    T rest = 0;
    for (; j < n; j++) rest += row[j];
    return FN(lanesum)(a) + rest;
}

/* The sum of x[j] * y[j], j < n, as rowsum adds (the backward's D = rowsum(dO * O): its omp
 * simd reduction was three quarters of the backward's own time). */
LTC_EW_CLONES static T FN(rowdot)(const T *x, const T *y, int64_t n) {
    FN(v64) a = {0}, u, v;
    int64_t j = 0;
    for (; j + V64W <= n; j += V64W) {
        memcpy(&u, x + j, sizeof u), memcpy(&v, y + j, sizeof v);
        a += u * v;
    }
    T rest = 0;
    for (; j < n; j++) rest += x[j] * y[j];
    return FN(lanesum)(a) + rest;
}
#undef V64W

/* Scores block s[br, bc] = scale * Q[i0.., :] . K[j0.., :]^T (Q and K item b's rows, with row
 * strides ldq and ldk; with c->small, K is given transposed, [E, S] with row stride ldk), masked: -inf where causal hides key j from query i or a bool mask is
 * false, plus a float mask's value. */
LTC_EW_CLONES static void FN(scores)(const at_ctx *c, int64_t b, int64_t i0, int64_t br,
                                     int64_t j0, int64_t bc, T *s, const T *Q, int64_t ldq,
                                     const T *K, int64_t ldk) {
    /* scale 0: gemm's alpha 0 would not read Q and K at all (BLAS), so the product is
     * scaled after it, as PyTorch's (q k^T) * scale: inf * 0 and NaN * 0 give NaN */
    if (c->small)
        FN(mmk)(false, br, bc, c->E, c->scale != 0 ? (T)c->scale : 1, Q + i0 * ldq, ldq, K + j0,
                ldk, 0, s, bc, NOLIM, c->causal ? i0 - j0 : NOLIM);
    else
        mm(c->dt, false, true, br, bc, c->E, c->scale != 0 ? c->scale : 1.0, Q + i0 * ldq, ldq,
           K + j0 * ldk, ldk, 0.0, s, bc);
    if (c->scale == 0) LTC_SIMD for (int64_t j = 0; j < br * bc; j++) s[j] *= 0;
    if (c->mask) {
        int64_t base = mask_base(c, b);
        for (int64_t r = 0; r < br; r++) {
            int64_t o = base + (i0 + r) * c->msl + j0 * c->mss;
            T *row = s + r * bc;
            int64_t ss = c->mss;
            if (c->mdt == LTC_BOOL) {
                const uint8_t *m = (const uint8_t *)c->mask + o;
                if (ss == 1)
                    LTC_SIMD for (int64_t j = 0; j < bc; j++) row[j] = m[j] ? row[j] : -INFINITY;
                else
                    for (int64_t j = 0; j < bc; j++) row[j] = m[j * ss] ? row[j] : -INFINITY;
            } else {
                const T *m = (const T *)c->mask + o;
                if (ss == 1)
                    LTC_SIMD for (int64_t j = 0; j < bc; j++) row[j] += m[j];
                else
                    for (int64_t j = 0; j < bc; j++) row[j] += m[j * ss];
            }
        }
    }
    if (c->causal)
        for (int64_t r = 0; r < br; r++) {
            T *row = s + r * bc;
            LTC_SIMD for (int64_t j = i0 + r + 1 - j0 < 0 ? 0 : i0 + r + 1 - j0; j < bc; j++)
                row[j] = -INFINITY;
        }
}

/* dst[0..n) = src[0..n) times the dropout factors of scores (b, i, j0..j0+n): 1 / (1 - p) where
 * the uniform draw at counter offset + (b L + i) S + j is below 1 - p (kept), 0 where not
 * (src[j] * 0: NaN stays NaN, as the dropout op's x * 0). Keys that causal attention hides
 * from query i (j > i, probability 0) are not drawn: their factor is 0. n <= BC; src may be
 * dst. */
LTC_EW_CLONES static void FN(drop)(const at_ctx *c, int64_t b, int64_t i, int64_t j0, int64_t n,
                                   const T *src, T *dst) {
    int64_t nd = c->causal && i + 1 - j0 < n ? i + 1 - j0 : n; /* the keys drawn */
    if (nd < 0) nd = 0;
    uint64_t w01[BC]; /* the words 0 and 1 of each counter */
    philox_words(c->offset + (uint64_t)((b * c->L + i) * c->S + j0), c->seed, nd, w01);
    T q = (T)c->keep, f = q > 0 ? 1 / q : 0;
    LTC_SIMD for (int64_t j = 0; j < nd; j++) dst[j] = src[j] * (UNIFORM(w01[j]) < q ? f : 0);
    for (int64_t j = nd; j < n; j++) dst[j] = src[j] * 0;
}

/* Forward over items [lo, hi) = (batch, block of BR queries): the online softmax. Scratch
 * (from c->scratch, per thread): scores BR x BC, then m, l [BR] and the accumulator BR x Ev;
 * with c->gather, the item's Q [L, E], K [S, E] and V [S, Ev] rows gathered from their
 * strided places (so that the gemms read contiguous blocks); with c->small only K, as K^T. */
LTC_EW_CLONES static void FN(fwd)(void *p, int64_t lo, int64_t hi, int tid) {
    const at_ctx *c = p;
    int64_t Ev = c->Ev, E = c->E, qb = (c->L + BR - 1) / BR;
    T *s = (T *)c->scratch[tid], *m = s + BR * BC, *l = m + BR, *acc = l + BR;
    T *gq = acc + BR * Ev, *gk = gq + c->L * E, *gv = gk + c->S * E;
    for (int64_t it = lo; it < hi; it++) {
        int64_t b = it / qb, i0 = it % qb * BR, br = c->L - i0 < BR ? c->L - i0 : BR;
        for (int64_t r = 0; r < br; r++) m[r] = -INFINITY, l[r] = 0;
        int64_t end = key_end(c, i0, br);
        /* the first block's P . V writes acc (beta 0); with no key at all, zeros */
        if (end == 0) memset(acc, 0, (size_t)(br * Ev) * sizeof(T));
        const T *Q = (const T *)c->q + at_off(c, &c->lq, b), *K = (const T *)c->k + at_off(c, &c->lk, b);
        const T *V = (const T *)c->v + at_off(c, &c->lv, b);
        int64_t ldq = c->lq.ld, ldk = c->lk.ld, ldv = c->lv.ld;
        if (c->small) { /* K^T [E, S]; mmk reads Q and V's rows where they are */
            FN(gathert)(gk, c->S, K, end, E, ldk);
            K = gk, ldk = c->S;
        } else if (c->gather) {
            FN(gather)(gq, Q, i0, i0 + br, E, ldq);
            FN(gather)(gk, K, 0, end, E, ldk);
            FN(gather)(gv, V, 0, end, Ev, ldv);
            Q = gq, K = gk, V = gv, ldq = E, ldk = E, ldv = Ev;
        }
        for (int64_t j0 = 0; j0 < end; j0 += BC) {
            int64_t bc = end - j0 < BC ? end - j0 : BC;
            int64_t lim = c->causal ? i0 - j0 : NOLIM; /* mmk's: keys past a query have P 0 */
            FN(scores)(c, b, i0, br, j0, bc, s, Q, ldq, K, ldk);
            for (int64_t r = 0; r < br; r++) {
                /* causal: the keys past query i0 + r score -inf, probability 0; only the
                 * first nr entries are looked at, the rest set to 0 */
                int64_t nr = row_keys(c, i0 + r, j0, bc);
                T *row = s + r * bc, mx = FN(rowmax)(row, nr);
                T mn = mx > m[r] ? mx : m[r];
                if (mn == -INFINITY) { /* nothing seen yet: this block adds nothing */
                    memset(row, 0, (size_t)bc * sizeof(T));
                    continue;
                }
                FN(expz)(row, nr, mn);
                if (nr < bc) memset(row + nr, 0, (size_t)(bc - nr) * sizeof(T));
                /* the entries from nr to bc are zeros: summed up to a whole vector */
                int64_t ns = (nr + (int64_t)(64 / sizeof(T)) - 1) / (int64_t)(64 / sizeof(T)) * (int64_t)(64 / sizeof(T));
                T sum = FN(rowsum)(row, ns < bc ? ns : bc);
                T alpha = m[r] == -INFINITY ? 0 : EXP(m[r] - mn); /* exp(-inf) without a call */
                if (alpha != 1 && j0 > 0) {
                    T *a = acc + r * Ev;
                    LTC_SIMD for (int64_t e = 0; e < Ev; e++) a[e] *= alpha;
                }
                l[r] = l[r] * alpha + sum;
                m[r] = mn;
                if (c->dropout) FN(drop)(c, b, i0 + r, j0, bc, row, row);
            }
            if (c->small)
                FN(mmk)(false, br, Ev, bc, 1, s, bc, V + j0 * ldv, ldv, j0 == 0 ? 0 : 1, acc, Ev,
                        lim, NOLIM);
            else
                mm(c->dt, false, false, br, Ev, bc, 1.0, s, bc, V + j0 * ldv, ldv,
                   j0 == 0 ? 0.0 : 1.0, acc, Ev);
        }
        int64_t ldo = c->lo.ld;
        T *out = (T *)c->out + at_off(c, &c->lo, b) + i0 * ldo, *lse = (T *)c->lse + b * c->L + i0;
        for (int64_t r = 0; r < br; r++) {
            /* no key took part: 0 / 0 (NaN), as PyTorch's softmax of a row of -inf; no key
             * at all (S == 0): zeros, as its matmul over an empty dim */
            T inv = c->S == 0 ? 0 : l[r] > 0 ? 1 / l[r] : NAN;
            LTC_SIMD for (int64_t e = 0; e < Ev; e++) out[r * ldo + e] = acc[r * Ev + e] * inv;
            /* l NaN (a +inf or NaN score: inf - inf in the exps): NaN, as the output */
            lse[r] = l[r] == 0 ? -INFINITY : m[r] + (T)log(l[r]);
        }
    }
}

/* Backward over items [lo, hi) = batches: for each block of keys, each block of queries
 * that sees it: P recomputed from logsumexp, then dV, dP, dS, dQ and dK by gemm. Scratch:
 * P and dP (BR x BC each), with dropout W = P * factors (BR x BC), then D = rowsum(dO * O)
 * [L]; with c->gather, the item's Q, K, V and dO gathered from their strided places and dQ,
 * dK, dV accumulated contiguous, then written to theirs; with c->small only K^T and V^T
 * gathered, the rest read and accumulated in place. */
LTC_EW_CLONES static void FN(bwd)(void *p, int64_t lo, int64_t hi, int tid) {
    const at_ctx *c = p;
    int64_t L = c->L, S = c->S, E = c->E, Ev = c->Ev;
    T *P = (T *)c->scratch[tid], *dP = P + BR * BC, *W = dP + BR * BC;
    T *D = W + (c->dropout ? BR * BC : 0);
    T *gq = D + L, *gk = gq + L * E, *gv = gk + S * E, *go = gv + S * Ev;
    T *gdq = go + L * Ev, *gdk = gdq + L * E, *gdv = gdk + S * E, *gkt = gdv + S * Ev;
    for (int64_t b = lo; b < hi; b++) {
        int64_t oq = at_off(c, &c->lq, b), ok = at_off(c, &c->lk, b), ov = at_off(c, &c->lv, b);
        int64_t oo = at_off(c, &c->lo, b);
        int64_t ldq = c->lq.ld, ldk = c->lk.ld, ldv = c->lv.ld, ldo = c->lo.ld;
        const T *Q = (const T *)c->q + oq, *K = (const T *)c->k + ok, *V = (const T *)c->v + ov;
        const T *dO = (const T *)c->go + oo, *O = (const T *)c->o + oo;
        const T *lse = (const T *)c->lse + b * L;
        T *dQ = (T *)c->dq + oq, *dK = (T *)c->dk + ok, *dV = (T *)c->dv + ov;
        for (int64_t i = 0; i < L; i++) D[i] = FN(rowdot)(dO + i * ldo, O + i * ldo, Ev);
        /* with c->small, V^T [Ev, S] (dP's right operand) */
        const T *Vt = gv;
        if (c->small) { /* K^T and V^T; mmk reads and writes the other rows where they are */
            FN(gathert)(gkt, S, K, S, E, ldk);
            FN(gathert)(gv, S, V, S, Ev, ldv);
        } else if (c->gather) {
            FN(gather)(gq, Q, 0, L, E, ldq);
            FN(gather)(gk, K, 0, S, E, ldk);
            FN(gather)(gv, V, 0, S, Ev, ldv);
            FN(gather)(go, dO, 0, L, Ev, ldo);
            Q = gq, K = gk, V = gv, dO = go, dQ = gdq, dK = gdk, dV = gdv;
            ldq = ldk = E, ldv = ldo = Ev;
        }
        /* the scores' K (transposed with c->small) and its row stride */
        const T *Ks = c->small ? gkt : K;
        int64_t ldks = c->small ? S : ldk;
        /* with c->small (L == S), the first product into each row of dQ (key block 0) and of
         * dK and dV (its first query block) writes it with beta 0: no zeroing of the strided
         * rows (a twentieth of the kernel's time) */
        if (!c->small) {
            for (int64_t i = 0; i < L; i++) memset(dQ + i * ldq, 0, (size_t)E * sizeof(T));
            for (int64_t j = 0; j < S; j++) memset(dK + j * ldk, 0, (size_t)E * sizeof(T));
            for (int64_t j = 0; j < S; j++) memset(dV + j * ldv, 0, (size_t)Ev * sizeof(T));
        }
        for (int64_t j0 = 0; j0 < S; j0 += BC) {
            int64_t bc = S - j0 < BC ? S - j0 : BC;
            /* causal: query i sees key j when j <= i, so blocks with i0 + br <= j0 see none */
            int64_t first = c->causal ? j0 / BR * BR : 0;
            for (int64_t i0 = first; i0 < L; i0 += BR) {
                int64_t br = L - i0 < BR ? L - i0 : BR;
                int64_t lim = c->causal ? i0 - j0 : NOLIM; /* mmk's: keys past a query, P 0 */
                FN(scores)(c, b, i0, br, j0, bc, P, Q, ldq, Ks, ldks);
                for (int64_t r = 0; r < br; r++) {
                    T *row = P + r * bc;
                    int64_t nr = row_keys(c, i0 + r, j0, bc); /* as in the forward */
                    FN(expz)(row, nr, lse[i0 + r]);
                    if (nr < bc) memset(row + nr, 0, (size_t)(bc - nr) * sizeof(T));
                    if (c->dropout) FN(drop)(c, b, i0 + r, j0, bc, row, W + r * bc);
                }
                if (c->small) { /* V is V^T [Ev, S] */
                    FN(mmk)(true, bc, Ev, br, 1, c->dropout ? W : P, bc, dO + i0 * ldo, ldo,
                            i0 == first ? 0 : 1, dV + j0 * ldv, ldv, lim, NOLIM);
                    FN(mmk)(false, br, bc, Ev, 1, dO + i0 * ldo, ldo, Vt + j0, S, 0, dP, bc, NOLIM,
                            lim);
                } else {
                    mm(c->dt, true, false, bc, Ev, br, 1.0, c->dropout ? W : P, bc,
                       dO + i0 * ldo, ldo, 1.0, dV + j0 * ldv, ldv);
                    mm(c->dt, false, true, br, bc, Ev, 1.0, dO + i0 * ldo, ldo, V + j0 * ldv, ldv,
                       0.0, dP, bc);
                }
                for (int64_t r = 0; r < br; r++) {
                    T *pr = P + r * bc, *dr = dP + r * bc, d = D[i0 + r];
                    if (lse[i0 + r] == -INFINITY && c->const_masked) {
                        /* a row no key may see, masked by a bool mask (or causally): its
                         * scores are constants (masked_fill's), so no gradient to Q or K */
                        memset(pr, 0, (size_t)bc * sizeof(T));
                        continue;
                    }
                    if (c->dropout) {
                        const T *wr = W + r * bc;
                        LTC_SIMD for (int64_t j = 0; j < bc; j++) pr[j] = wr[j] * dr[j] - pr[j] * d;
                    } else {
                        LTC_SIMD for (int64_t j = 0; j < bc; j++) pr[j] = pr[j] * (dr[j] - d);
                    }
                }
                double sc = c->scale;
                if (sc == 0) { /* as in scores: dS * 0, then the products (0 * inf: NaN) */
                    LTC_SIMD for (int64_t j = 0; j < br * bc; j++) P[j] *= 0;
                    sc = 1;
                }
                if (c->small) {
                    FN(mmk)(false, br, E, bc, (T)sc, P, bc, K + j0 * ldk, ldk, j0 == 0 ? 0 : 1,
                            dQ + i0 * ldq, ldq, lim, NOLIM);
                    FN(mmk)(true, bc, E, br, (T)sc, P, bc, Q + i0 * ldq, ldq, i0 == first ? 0 : 1,
                            dK + j0 * ldk, ldk, lim, NOLIM);
                } else {
                    mm(c->dt, false, false, br, E, bc, sc, P, bc, K + j0 * ldk, ldk, 1.0,
                       dQ + i0 * ldq, ldq);
                    mm(c->dt, true, false, bc, E, br, sc, P, bc, Q + i0 * ldq, ldq, 1.0,
                       dK + j0 * ldk, ldk);
                }
            }
        }
        if (c->gather && !c->small) {
            for (int64_t i = 0; i < L; i++)
                memcpy((T *)c->dq + oq + i * c->lq.ld, gdq + i * E, (size_t)E * sizeof(T));
            for (int64_t j = 0; j < S; j++) {
                memcpy((T *)c->dk + ok + j * c->lk.ld, gdk + j * E, (size_t)E * sizeof(T));
                memcpy((T *)c->dv + ov + j * c->lv.ld, gdv + j * Ev, (size_t)Ev * sizeof(T));
            }
        }
    }
}
