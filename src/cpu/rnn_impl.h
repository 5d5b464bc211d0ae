/*
 * rnn_impl.h - the loops of rnn.c for one element type, included once per type with T
 * (float, double), SFX (f32, f64), EXP (expf, exp) and TANH (tanhf, tanh) defined. Not a
 * header of its own: rnn.c holds the context struct and the kernels.
 */

/* The gates of one step, in place in G [B, 4H] (the pre-activations on entry): sigmoid on
 * blocks i, f and o, tanh on g; then c = f cp + i g and h = o tanh(c) into c [B, H], h [B, H]. */
LTC_EW_CLONES static void FN(lstm_cell)(int64_t B, int64_t H, T *G, const T *cp, T *c, T *h) {
    for (int64_t b = 0; b < B; b++) {
        T *g = G + b * 4 * H;
        LTC_SIMD for (int64_t j = 0; j < 2 * H; j++) g[j] = 1 / (1 + EXP(-g[j]));
        LTC_SIMD for (int64_t j = 2 * H; j < 3 * H; j++) g[j] = TANH(g[j]);
        LTC_SIMD for (int64_t j = 3 * H; j < 4 * H; j++) g[j] = 1 / (1 + EXP(-g[j]));
        const T *gi = g, *gf = g + H, *gg = g + 2 * H, *go = g + 3 * H;
        const T *cr = cp + b * H;
        T *cw = c + b * H, *hw = h + b * H;
        LTC_SIMD for (int64_t j = 0; j < H; j++) {
            T cc = gf[j] * cr[j] + gi[j] * gg[j];
            cw[j] = cc;
            hw[j] = go[j] * TANH(cc);
        }
    }
}

/* The gate gradients of one step into dG [B, 4H], from the gradients reaching h and c at this
 * step (go_t, gc_t, plus the carries dh, dc [B, H]); dc becomes the carry to the previous step
 * (dc f). dh is read here and overwritten by the caller's gemm afterwards. */
LTC_EW_CLONES static void FN(lstm_cell_backward)(int64_t B, int64_t H, const T *G, const T *c, const T *cp,
                                   const T *go_t, const T *gc_t, const T *dh, T *dc, T *dG) {
    for (int64_t b = 0; b < B; b++) {
        const T *gi = G + b * 4 * H, *gf = gi + H, *gg = gi + 2 * H, *go = gi + 3 * H;
        T *di = dG + b * 4 * H, *df = di + H, *dg = di + 2 * H, *dO = di + 3 * H;
        const T *cr = c + b * H, *cpr = cp + b * H, *ho = go_t + b * H, *co = gc_t + b * H;
        const T *dhr = dh + b * H;
        T *dcr = dc + b * H;
        LTC_SIMD for (int64_t j = 0; j < H; j++) {
            T tc = TANH(cr[j]);
            T dhj = ho[j] + dhr[j];
            T dcj = co[j] + dcr[j] + dhj * go[j] * (1 - tc * tc);
            di[j] = dcj * gg[j] * gi[j] * (1 - gi[j]);
            df[j] = dcj * cpr[j] * gf[j] * (1 - gf[j]);
            dg[j] = dcj * gi[j] * (1 - gg[j] * gg[j]);
            dO[j] = dhj * tc * go[j] * (1 - go[j]);
            dcr[j] = dcj * gf[j];
        }
    }
}

/* The steps of batch rows [b0, b0 + nb) (the rows are independent: chunks of them run on the
 * pool's threads). Every [.., B, ..] tensor is offset to row b0; its row strides stay. */
static void FN(lstm_forward)(const rnn_ctx *x, int64_t b0, int64_t nb) {
    int64_t T_ = x->nt, B = x->B, H = x->H, G4 = 4 * H;
    const T *P = (const T *)x->proj + b0 * G4, *Wt = x->wt;
    const T *h0 = (const T *)x->h0 + b0 * H, *c0 = (const T *)x->c0 + b0 * H;
    T *out = (T *)x->out + b0 * H, *cs = (T *)x->cseq + b0 * H, *gates = (T *)x->gates + b0 * G4;
    for (int64_t s = 0; s < T_; s++) {
        int64_t t = x->reverse ? T_ - 1 - s : s, tp = x->reverse ? t + 1 : t - 1;
        const T *hp = s == 0 ? h0 : out + tp * B * H;
        const T *cp = s == 0 ? c0 : cs + tp * B * H;
        T *G = gates + t * B * G4; /* input_proj[t] + h_prev W_hh^T */
        FN(step_mm)(nb, G4, H, hp, H, Wt, G4, P + t * B * G4, G4, G, G4);
        FN(lstm_cell)(nb, H, G, cp, cs + t * B * H, out + t * B * H);
    }
}

static void FN(lstm_backward)(const rnn_ctx *x, int64_t b0, int64_t nb) {
    int64_t T_ = x->nt, B = x->B, H = x->H, G4 = 4 * H;
    const T *W = x->w, *cs = (const T *)x->cseq + b0 * H, *gates = (const T *)x->gates + b0 * G4;
    const T *gout = (const T *)x->gout + b0 * H, *gc = (const T *)x->gc + b0 * H;
    const T *c0 = (const T *)x->c0 + b0 * H;
    T *dP = (T *)x->dproj + b0 * G4, *dh = (T *)x->dh0 + b0 * H, *dc = (T *)x->dc0 + b0 * H;
    memset(dh, 0, (size_t)(nb * H) * sizeof(T));
    memset(dc, 0, (size_t)(nb * H) * sizeof(T));
    for (int64_t s = T_ - 1; s >= 0; s--) {
        int64_t t = x->reverse ? T_ - 1 - s : s, tp = x->reverse ? t + 1 : t - 1;
        const T *cp = s == 0 ? c0 : cs + tp * B * H;
        T *dG = dP + t * B * G4;
        FN(lstm_cell_backward)(nb, H, gates + t * B * G4, cs + t * B * H, cp, gout + t * B * H,
                               gc + t * B * H, dh, dc, dG);
        FN(step_mm)(nb, H, G4, dG, G4, W, H, NULL, 0, dh, H); /* dh = dG W_hh */
    }
}

/* Rows [r0, r1) of dW [G H, H] = sum_t dG_t^T h_prev(t) for dG [T, B, G H] (LSTM's gate
 * gradients, GRU's gh gradients): the steps with a previous step in one gemm (their dG and
 * that step's h are both contiguous runs of T - 1 steps), then the first step's h0. */
static void FN(weight_grad)(const rnn_ctx *x, const T *dG, int64_t r0, int64_t r1) {
    int64_t T_ = x->nt, B = x->B, H = x->H, GH = x->gh;
    const T *out = x->out;
    T *dw = (T *)x->dw + r0 * H;
    if (T_ == 0) {
        memset(dw, 0, (size_t)((r1 - r0) * H) * sizeof(T));
        return;
    }
    const T *dG_rest = (x->reverse ? dG : dG + B * GH) + r0;
    const T *h_rest = x->reverse ? out + B * H : out;
    const T *dG_first = (x->reverse ? dG + (T_ - 1) * B * GH : dG) + r0;
    mm(x->dt, true, false, r1 - r0, H, (T_ - 1) * B, 1.0, dG_rest, GH, h_rest, H, 0.0, dw, H);
    mm(x->dt, true, false, r1 - r0, H, B, 1.0, dG_first, GH, x->h0, H, 1.0, dw, H);
}

static void FN(weight_grad_range)(void *ctx, int64_t lo, int64_t hi, int tid) {
    (void)tid;
    const rnn_ctx *x = ctx;
    int64_t r1 = hi * WROWS < x->gh ? hi * WROWS : x->gh;
    FN(weight_grad)(x, x->dg, lo * WROWS, r1);
}

/* ---- GRU ------------------------------------------------------------------------------- */

/* One GRU step's gates from gh [B, 3H] = h_prev W_hh^T (bias_hh added here) and input_proj[t]
 * P [B, 3H]: gates [B, 4H] = r, z, n, gh_n and h [B, H]. */
LTC_EW_CLONES static void FN(gru_cell)(int64_t B, int64_t H, const T *gh, const T *bh,
                                      const T *P, const T *hp, T *G, T *h) {
    for (int64_t b = 0; b < B; b++) {
        const T *g = gh + b * 3 * H, *p = P + b * 3 * H, *hpr = hp + b * H;
        T *gr = G + b * 4 * H, *gz = gr + H, *gn = gr + 2 * H, *ghn = gr + 3 * H, *hw = h + b * H;
        LTC_SIMD for (int64_t j = 0; j < H; j++) {
            T r = 1 / (1 + EXP(-(p[j] + g[j] + bh[j])));
            T z = 1 / (1 + EXP(-(p[H + j] + g[H + j] + bh[H + j])));
            T hn = g[2 * H + j] + bh[2 * H + j];
            T n = TANH(p[2 * H + j] + r * hn);
            gr[j] = r, gz[j] = z, gn[j] = n, ghn[j] = hn;
            hw[j] = n + z * (hpr[j] - n);
        }
    }
}

/* One GRU step's gradients: dh = go_t + the carry dhc [B, H]; the gate gradients into dP
 * [B, 3H] (input_proj's) and dgh [B, 3H] (gh's); dhc becomes dh z (the caller adds dgh W_hh). */
LTC_EW_CLONES static void FN(gru_cell_backward)(int64_t B, int64_t H, const T *G, const T *hp,
                                               const T *go_t, T *dhc, T *dP, T *dgh) {
    for (int64_t b = 0; b < B; b++) {
        const T *gr = G + b * 4 * H, *gz = gr + H, *gn = gr + 2 * H, *ghn = gr + 3 * H;
        const T *hpr = hp + b * H, *ho = go_t + b * H;
        T *dc = dhc + b * H, *dp = dP + b * 3 * H, *dg = dgh + b * 3 * H;
        LTC_SIMD for (int64_t j = 0; j < H; j++) {
            T dh = ho[j] + dc[j], r = gr[j], z = gz[j], n = gn[j];
            T dn = dh * (1 - z) * (1 - n * n);
            T dr = dn * ghn[j] * r * (1 - r);
            T dz = dh * (hpr[j] - n) * z * (1 - z);
            dp[j] = dr, dp[H + j] = dz, dp[2 * H + j] = dn;
            dg[j] = dr, dg[H + j] = dz, dg[2 * H + j] = dn * r;
            dc[j] = dh * z;
        }
    }
}

static void FN(gru_forward)(const rnn_ctx *x, int64_t b0, int64_t nb) {
    int64_t T_ = x->nt, B = x->B, H = x->H, G3 = 3 * H;
    const T *P = (const T *)x->proj + b0 * G3, *h0 = (const T *)x->h0 + b0 * H;
    T *out = (T *)x->out + b0 * H, *gates = (T *)x->gates + b0 * 4 * H;
    T *gh = (T *)x->scratch + b0 * G3;
    for (int64_t s = 0; s < T_; s++) {
        int64_t t = x->reverse ? T_ - 1 - s : s, tp = x->reverse ? t + 1 : t - 1;
        const T *hp = s == 0 ? h0 : out + tp * B * H;
        FN(step_mm)(nb, G3, H, hp, H, (const T *)x->wt, G3, NULL, 0, gh, G3);
        FN(gru_cell)(nb, H, gh, x->bh, P + t * B * G3, hp, gates + t * B * 4 * H, out + t * B * H);
    }
}

static void FN(gru_backward)(const rnn_ctx *x, int64_t b0, int64_t nb) {
    int64_t T_ = x->nt, B = x->B, H = x->H, G3 = 3 * H;
    const T *out = (const T *)x->out + b0 * H, *gates = (const T *)x->gates + b0 * 4 * H;
    const T *W = x->w, *h0 = (const T *)x->h0 + b0 * H, *gout = (const T *)x->gout + b0 * H;
    T *dP = (T *)x->dproj + b0 * G3, *dh = (T *)x->dh0 + b0 * H, *dgh = (T *)x->scratch + b0 * G3;
    memset(dh, 0, (size_t)(nb * H) * sizeof(T));
    for (int64_t s = T_ - 1; s >= 0; s--) {
        int64_t t = x->reverse ? T_ - 1 - s : s, tp = x->reverse ? t + 1 : t - 1;
        const T *hp = s == 0 ? h0 : out + tp * B * H;
        FN(gru_cell_backward)(nb, H, gates + t * B * 4 * H, hp, gout + t * B * H, dh,
                              dP + t * B * G3, dgh + t * B * G3);
        FN(step_mm)(nb, H, G3, dgh + t * B * G3, G3, W, H, dh, H, dh, H); /* dh z + dgh W_hh */
    }
}

/* GRU's grad_bias_hh: the sum of dgh over steps and rows. */
static void FN(gru_finish)(const rnn_ctx *x) {
    int64_t G3 = 3 * x->H;
    const T *dgh = x->scratch;
    T *db = x->dbh;
    memset(db, 0, (size_t)G3 * sizeof(T));
    for (int64_t r = 0; r < x->nt * x->B; r++) {
        const T *g = dgh + r * G3;
        LTC_SIMD for (int64_t k = 0; k < G3; k++) db[k] += g[k];
    }
}

/* The row chunks [lo, hi) of ROWS rows each: one range function per loop. */
#define RANGE_FN(name)                                                                         \
    static void FN(name##_range)(void *ctx, int64_t lo, int64_t hi, int tid) {                 \
        (void)tid;                                                                             \
        const rnn_ctx *x = ctx;                                                                \
        int64_t b0 = lo * ROWS, b1 = hi * ROWS < x->B ? hi * ROWS : x->B;                     \
        FN(name)(x, b0, b1 - b0);                                                              \
    }
RANGE_FN(lstm_forward)
RANGE_FN(lstm_backward)
RANGE_FN(gru_forward)
RANGE_FN(gru_backward)
#undef RANGE_FN
