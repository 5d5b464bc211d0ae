/*
 * attention_impl.h - the blocked loops of attention.c for one element type, included once per
 * type with T (float, double), SFX (f32, f64) and EXP (expf, exp) defined. Not a header of
 * its own: attention.c holds the context struct, the mask look-up and the kernels.
 */

/* Scores block s[br, bc] = scale * Q[i0.., :] . K[j0.., :]^T, masked: -inf where causal
 * hides key j from query i or a bool mask is false, plus a float mask's value. */
static void FN(scores)(const at_ctx *c, int64_t b, int64_t i0, int64_t br, int64_t j0,
                         int64_t bc, T *s) {
    const T *Q = (const T *)c->q + (b * c->L + i0) * c->E;
    const T *K = (const T *)c->k + (b * c->S + j0) * c->E;
    mm(c->dt, false, true, br, bc, c->E, c->scale, Q, c->E, K, c->E, 0.0, s, bc);
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
        for (int64_t r = 0; r < br; r++)
            for (int64_t j = i0 + r + 1 - j0 < 0 ? 0 : i0 + r + 1 - j0; j < bc; j++)
                s[r * bc + j] = -INFINITY;
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
 * (from c->scratch, per thread): scores BR x BC, then m, l [BR] and the accumulator BR x Ev. */
LTC_EW_CLONES static void FN(fwd)(void *p, int64_t lo, int64_t hi, int tid) {
    const at_ctx *c = p;
    int64_t Ev = c->Ev, qb = (c->L + BR - 1) / BR;
    T *s = (T *)c->scratch[tid], *m = s + BR * BC, *l = m + BR, *acc = l + BR;
    for (int64_t it = lo; it < hi; it++) {
        int64_t b = it / qb, i0 = it % qb * BR, br = c->L - i0 < BR ? c->L - i0 : BR;
        for (int64_t r = 0; r < br; r++) m[r] = -INFINITY, l[r] = 0;
        memset(acc, 0, (size_t)(br * Ev) * sizeof(T));
        int64_t end = key_end(c, i0, br);
        for (int64_t j0 = 0; j0 < end; j0 += BC) {
            int64_t bc = end - j0 < BC ? end - j0 : BC;
            FN(scores)(c, b, i0, br, j0, bc, s);
            for (int64_t r = 0; r < br; r++) {
                T *row = s + r * bc, mx = -INFINITY;
#pragma omp simd reduction(max : mx)
                for (int64_t j = 0; j < bc; j++)
                    mx = row[j] > mx ? row[j] : mx;
                T mn = mx > m[r] ? mx : m[r];
                if (mn == -INFINITY) { /* nothing seen yet: this block adds nothing */
                    memset(row, 0, (size_t)bc * sizeof(T));
                    continue;
                }
                LTC_SIMD for (int64_t j = 0; j < bc; j++) {
                    T x = row[j] - mn;
                    row[j] = x < EXP_MIN ? EXP_MIN : x;
                }
                LTC_SIMD for (int64_t j = 0; j < bc; j++) row[j] = EXP(row[j]);
                T sum = 0;
#pragma omp simd reduction(+ : sum)
                for (int64_t j = 0; j < bc; j++)
                    sum += row[j];
                T alpha = EXP(m[r] - mn);
                if (alpha != 1) {
                    T *a = acc + r * Ev;
                    LTC_SIMD for (int64_t e = 0; e < Ev; e++) a[e] *= alpha;
                }
                l[r] = l[r] * alpha + sum;
                m[r] = mn;
                if (c->dropout) FN(drop)(c, b, i0 + r, j0, bc, row, row);
            }
            const T *V = (const T *)c->v + (b * c->S + j0) * Ev;
            mm(c->dt, false, false, br, Ev, bc, 1.0, s, bc, V, Ev, 1.0, acc, Ev);
        }
        T *out = (T *)c->out + (b * c->L + i0) * Ev, *lse = (T *)c->lse + b * c->L + i0;
        for (int64_t r = 0; r < br; r++) {
            /* no key took part: 0 / 0 (NaN), as PyTorch's softmax of a row of -inf; no key
             * at all (S == 0): zeros, as its matmul over an empty dim */
            T inv = c->S == 0 ? 0 : l[r] > 0 ? 1 / l[r] : NAN;
            LTC_SIMD for (int64_t e = 0; e < Ev; e++) out[r * Ev + e] = acc[r * Ev + e] * inv;
            lse[r] = l[r] > 0 ? m[r] + (T)log(l[r]) : -INFINITY;
        }
    }
}

/* Backward over items [lo, hi) = batches: for each block of keys, each block of queries
 * that sees it: P recomputed from logsumexp, then dV, dP, dS, dQ and dK by gemm. Scratch:
 * P and dP (BR x BC each), with dropout W = P * factors (BR x BC), then D = rowsum(dO * O)
 * [L]. */
LTC_EW_CLONES static void FN(bwd)(void *p, int64_t lo, int64_t hi, int tid) {
    const at_ctx *c = p;
    int64_t L = c->L, S = c->S, E = c->E, Ev = c->Ev;
    T *P = (T *)c->scratch[tid], *dP = P + BR * BC, *W = dP + BR * BC;
    T *D = W + (c->dropout ? BR * BC : 0);
    for (int64_t b = lo; b < hi; b++) {
        const T *Q = (const T *)c->q + b * L * E, *K = (const T *)c->k + b * S * E;
        const T *V = (const T *)c->v + b * S * Ev, *dO = (const T *)c->go + b * L * Ev;
        const T *O = (const T *)c->o + b * L * Ev, *lse = (const T *)c->lse + b * L;
        T *dQ = (T *)c->dq + b * L * E, *dK = (T *)c->dk + b * S * E, *dV = (T *)c->dv + b * S * Ev;
        memset(dQ, 0, (size_t)(L * E) * sizeof(T));
        memset(dK, 0, (size_t)(S * E) * sizeof(T));
        memset(dV, 0, (size_t)(S * Ev) * sizeof(T));
        for (int64_t i = 0; i < L; i++) {
            T d = 0;
#pragma omp simd reduction(+ : d)
            for (int64_t e = 0; e < Ev; e++)
                d += dO[i * Ev + e] * O[i * Ev + e];
            D[i] = d;
        }
        for (int64_t j0 = 0; j0 < S; j0 += BC) {
            int64_t bc = S - j0 < BC ? S - j0 : BC;
            /* causal: query i sees key j when j <= i, so blocks with i0 + br <= j0 see none */
            int64_t first = c->causal ? j0 / BR * BR : 0;
            for (int64_t i0 = first; i0 < L; i0 += BR) {
                int64_t br = L - i0 < BR ? L - i0 : BR;
                FN(scores)(c, b, i0, br, j0, bc, P);
                for (int64_t r = 0; r < br; r++) {
                    T *row = P + r * bc, z = lse[i0 + r];
                    LTC_SIMD for (int64_t j = 0; j < bc; j++) {
                        T x = row[j] - z;
                        row[j] = x < EXP_MIN ? EXP_MIN : x;
                    }
                    LTC_SIMD for (int64_t j = 0; j < bc; j++) row[j] = EXP(row[j]);
                    if (c->dropout) FN(drop)(c, b, i0 + r, j0, bc, row, W + r * bc);
                }
                mm(c->dt, true, false, bc, Ev, br, 1.0, c->dropout ? W : P, bc, dO + i0 * Ev, Ev,
                   1.0, dV + j0 * Ev, Ev);
                mm(c->dt, false, true, br, bc, Ev, 1.0, dO + i0 * Ev, Ev, V + j0 * Ev,
                             Ev, 0.0, dP, bc);
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
                mm(c->dt, false, false, br, E, bc, c->scale, P, bc, K + j0 * E, E, 1.0,
                             dQ + i0 * E, E);
                mm(c->dt, true, false, bc, E, br, c->scale, P, bc, Q + i0 * E, E, 1.0,
                             dK + j0 * E, E);
            }
        }
    }
}
