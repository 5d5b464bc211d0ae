/*
 * kernels_nn.c - OpenCL C of the kernel families the CNN and LSTM paths need: conv2d and its
 * two backward ops, max_pool2d and its backward, slice copies (cat, stack, narrow, select
 * and their scatter forms), index_add, arange, and the random ops on the
 * core's Philox 4x32-10 (src/core/ltc_rng.h).
 *
 * Semantics are the reference backend's (src/ref/conv.c, pool.c, join.c, scatter.c,
 * index.c, creation.c). Sizes are kernel arguments (long), never constants of the source.
 * Each kernel computes one output element per work item by gathering what it needs (the
 * backward ops and index_add loop over their contributions in the reference's
 * order), so no kernel needs atomics and results do not depend on scheduling.
 */
#include "ocl.h"

/* ---- convolution -------------------------------------------------------------------------- */

/* The sizes every conv kernel takes, in this order (see conv_args in lower_nn.c), and the
 * prologue that copies them into locals of the index type ix_t: int when every tensor of
 * the op has fewer than 2^31 elements (lower_nn.c decides; 64-bit division is slow on most
 * devices), else long. */
#define CONV_ARGS                                                                              \
    "long N_, long C_, long H_, long W_, long K_, long KH_, long KW_, long OH_, long OW_, "    \
    "long SH_, long SW_, long PH_, long PW_, long DH_, long DW_, long CG_, long KG_"

static void conv_prologue(ocl_sb *b, bool i32) {
    ocl_sb_printf(b,
        "    typedef %s ix_t;\n"
        "    const ix_t N = N_, C = C_, H = H_, W = W_, K = K_, KH = KH_, KW = KW_, OH = OH_,\n"
        "        OW = OW_, SH = SH_, SW = SW_, PH = PH_, PW = PW_, DH = DH_, DW = DW_, CG = CG_,\n"
        "        KG = KG_;\n"
        "    ix_t g = (ix_t)get_global_id(0);\n",
        i32 ? "int" : "long");
}

/* out[n][k][oy][ox] = bias[k] + sum over the group's channels and the window of
 * in[n][ch][oy*SH-PH+i*DH][ox*SW-PW+j*DW] * w[k][ch][i][j] (padding reads a real 0). */
void ocl_k_conv2d(ocl_sb *b, const char *name, ltc_dtype dt, bool bias, bool i32) {
    const char *t = ocl_ctype(dt);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *in, __global const %s *w%s%s%s,\n"
        "                 " CONV_ARGS ") {\n",
        name, t, t, t, bias ? ", __global const " : "", bias ? t : "", bias ? " *bias" : "");
    conv_prologue(b, i32);
    ocl_sb_printf(b,
        "    if (g >= N * K * OH * OW) return;\n"
        "    ix_t ox = g %% OW, r = g / OW, oy = r %% OH; r /= OH;\n"
        "    ix_t k = r %% K, n = r / K, first = k / KG * CG;\n"
        "    %s s = %s;\n"
        "    __global const %s *wk = w + k * CG * KH * KW;\n"
        "    for (ix_t ch = 0; ch < CG; ch++) {\n"
        "        __global const %s *ip = in + (n * C + first + ch) * H * W;\n"
        "        for (ix_t i = 0; i < KH; i++) {\n"
        "            ix_t y = oy * SH - PH + i * DH;\n"
        "            if (y < 0 || y >= H) { /* a real 0 times the weights (0 * inf is NaN) */\n"
        "                for (ix_t j = 0; j < KW; j++) s += (%s)0 * wk[(ch * KH + i) * KW + j];\n"
        "                continue;\n"
        "            }\n"
        "            for (ix_t j = 0; j < KW; j++) {\n"
        "                ix_t x = ox * SW - PW + j * DW;\n"
        "                %s v = x >= 0 && x < W ? ip[y * W + x] : 0;\n"
        "                s += v * wk[(ch * KH + i) * KW + j];\n"
        "            }\n"
        "        }\n"
        "    }\n"
        "    out[g] = s;\n}\n\n",
        t, bias ? "bias[k]" : "0", t, t, t, t);
}

/* grad_input[n][ch][y][x] = sum over the group's output channels k and the window positions
 * (i, j) of the outputs that read (y, x): grad_output[n][k][oy][ox] * w[k][ch'][i][j]. With
 * unit strides every window position reads from one output (no divisibility tests). */
void ocl_k_conv2d_bwd_input(ocl_sb *b, const char *name, ltc_dtype dt, bool unit_stride,
                            bool i32) {
    const char *t = ocl_ctype(dt);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *go, __global const %s *w,\n"
        "                 " CONV_ARGS ") {\n",
        name, t, t, t);
    conv_prologue(b, i32);
    ocl_sb_printf(b,
        "    if (g >= N * C * H * W) return;\n"
        "    ix_t x = g %% W, r = g / W, y = r %% H; r /= H;\n"
        "    ix_t ch = r %% C, n = r / C, grp = ch / CG, cl = ch - grp * CG;\n"
        "    %s s = 0;\n"
        "    for (ix_t k = grp * KG; k < (grp + 1) * KG; k++) {\n"
        "        __global const %s *gp = go + (n * K + k) * OH * OW;\n"
        "        __global const %s *wp = w + (k * CG + cl) * KH * KW;\n"
        "        for (ix_t i = 0; i < KH; i++) {\n"
        "            ix_t ty = y + PH - i * DH;\n",
        t, t, t);
    if (unit_stride) {
        ocl_sb_printf(b,
            "            if (ty < 0 || ty >= OH) continue;\n"
            "            for (ix_t j = 0; j < KW; j++) {\n"
            "                ix_t ox = x + PW - j * DW;\n"
            "                s += ox >= 0 && ox < OW ? gp[ty * OW + ox] * wp[i * KW + j] : 0;\n"
            "            }\n"
            "        }\n"
            "    }\n"
            "    out[g] = s;\n}\n\n");
        return;
    }
    ocl_sb_printf(b,
            "            if (ty < 0 || ty %% SH) continue;\n"
            "            ix_t oy = ty / SH;\n"
            "            if (oy >= OH) continue;\n"
            "            for (ix_t j = 0; j < KW; j++) {\n"
            "                ix_t tx = x + PW - j * DW;\n"
            "                if (tx < 0 || tx %% SW) continue;\n"
            "                ix_t ox = tx / SW;\n"
            "                if (ox >= OW) continue;\n");
    ocl_sb_printf(b,
        "                s += gp[oy * OW + ox] * wp[i * KW + j];\n"
        "            }\n"
        "        }\n"
        "    }\n"
        "    out[g] = s;\n}\n\n");
}

/* grad_weight[k][ch][i][j] = sum over images and outputs of grad_output[n][k][oy][ox] times
 * the input element that weight position reads (0 in the padding). */
void ocl_k_conv2d_bwd_weight(ocl_sb *b, const char *name, ltc_dtype dt, bool i32) {
    const char *t = ocl_ctype(dt);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *go, __global const %s *in,\n"
        "                 " CONV_ARGS ") {\n",
        name, t, t, t);
    conv_prologue(b, i32);
    ocl_sb_printf(b,
        "    if (g >= K * CG * KH * KW) return;\n"
        "    ix_t j = g %% KW, r = g / KW, i = r %% KH; r /= KH;\n"
        "    ix_t ch = r %% CG, k = r / CG, first = k / KG * CG;\n"
        "    %s s = 0;\n"
        "    for (ix_t n = 0; n < N; n++)\n"
        "        for (ix_t oy = 0; oy < OH; oy++) {\n"
        "            ix_t y = oy * SH - PH + i * DH;\n"
        "            bool iny = y >= 0 && y < H;\n"
        "            __global const %s *gp = go + ((n * K + k) * OH + oy) * OW;\n"
        "            __global const %s *ip = in + ((n * C + first + ch) * H + (iny ? y : 0)) * W;\n"
        "            for (ix_t ox = 0; ox < OW; ox++) {\n"
        "                ix_t x = ox * SW - PW + j * DW;\n"
        "                %s v = iny && x >= 0 && x < W ? ip[x] : 0;\n"
        "                s += gp[ox] * v;\n"
        "            }\n"
        "        }\n"
        "    out[g] = s;\n}\n\n",
        t, t, t, t);
}

/* im2col for a GEMM convolution (groups 1): col [C * KH * KW, N * OH * OW], row (ch, i, j),
 * column (n, oy, ox), holds the input element that kernel tap (i, j) of channel ch meets at
 * output (oy, ox), 0 in the padding (multiplied by the weights as a real 0, as the direct
 * kernel does). */
void ocl_k_im2col(ocl_sb *b, const char *name, ltc_dtype dt, bool i32) {
    const char *t = ocl_ctype(dt);
    ocl_sb_printf(b, "__kernel void %s(__global %s *col, __global const %s *in, " CONV_ARGS ") {\n",
                  name, t, t);
    conv_prologue(b, i32);
    ocl_sb_printf(b,
        "    (void)K; (void)CG; (void)KG;\n"
        "    ix_t NP = N * OH * OW;\n"
        "    if (g >= C * KH * KW * NP) return;\n"
        "    ix_t q = g %% NP, r = g / NP;\n"
        "    ix_t ox = q %% OW, u = q / OW, oy = u %% OH, n = u / OH;\n"
        "    ix_t j = r %% KW; u = r / KW;\n"
        "    ix_t i = u %% KH, ch = u / KH;\n"
        "    ix_t y = oy * SH - PH + i * DH, x = ox * SW - PW + j * DW;\n"
        "    col[g] = y >= 0 && y < H && x >= 0 && x < W ? in[((n * C + ch) * H + y) * W + x] : (%s)0;\n}\n\n",
        t);
}

/* col2im, the backward of im2col: grad_input[n][ch][y][x] = the sum over the taps (i, j)
 * whose output (oy, ox) reads (y, x) of dcol[(ch, i, j), (n, oy, ox)]. */
void ocl_k_col2im(ocl_sb *b, const char *name, ltc_dtype dt, bool i32) {
    const char *t = ocl_ctype(dt);
    ocl_sb_printf(b, "__kernel void %s(__global %s *out, __global const %s *dcol, " CONV_ARGS ") {\n",
                  name, t, t);
    conv_prologue(b, i32);
    ocl_sb_printf(b,
        "    (void)K; (void)CG; (void)KG;\n"
        "    if (g >= N * C * H * W) return;\n"
        "    ix_t x = g %% W, r = g / W, y = r %% H; r /= H;\n"
        "    ix_t ch = r %% C, n = r / C, NP = N * OH * OW;\n"
        "    %s s = 0;\n"
        "    for (ix_t i = 0; i < KH; i++) {\n"
        "        ix_t ty = y + PH - i * DH;\n"
        "        if (ty < 0 || ty %% SH || ty / SH >= OH) continue;\n"
        "        for (ix_t j = 0; j < KW; j++) {\n"
        "            ix_t tx = x + PW - j * DW;\n"
        "            if (tx < 0 || tx %% SW || tx / SW >= OW) continue;\n"
        "            s += dcol[((ch * KH + i) * KW + j) * NP + (n * OH + ty / SH) * OW + tx / SW];\n"
        "        }\n"
        "    }\n"
        "    out[g] = s;\n}\n\n",
        t);
}

/* out [A, B, P] = in [B, A, P] with its first two dims swapped (plus bias[b] when given): the
 * GEMM convolution's [K, N * P] results to [N, K, P], and grad_output the other way. */
void ocl_k_swap01(ocl_sb *b, const char *name, ltc_dtype dt, bool bias) {
    const char *t = ocl_ctype(dt);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *in%s%s%s, long A, long B, long P) {\n"
        "    long g = get_global_id(0);\n"
        "    if (g >= A * B * P) return;\n"
        "    long p = g %% P, r = g / P, bb = r %% B, aa = r / B;\n"
        "    out[g] = in[(bb * A + aa) * P + p]%s;\n}\n\n",
        name, t, t, bias ? ", __global const " : "", bias ? t : "", bias ? " *bias" : "",
        bias ? " + bias[bb]" : "");
}

/* ---- max pooling ---------------------------------------------------------------------------- */

#define POOL_ARGS                                                                              \
    "long P_, long H_, long W_, long OH_, long OW_, long KH_, long KW_, long SH_, long SW_, "  \
    "long PH_, long PW_, long DH_, long DW_"

/* The sizes as locals of the index type (as conv_prologue). */
static void pool_prologue(ocl_sb *b, const char *ix) {
    ocl_sb_printf(b,
        "    typedef %s ix_t;\n"
        "    const ix_t P = P_, H = H_, W = W_, OH = OH_, OW = OW_, KH = KH_, KW = KW_, SH = SH_,\n"
        "        SW = SW_, PH = PH_, PW = PW_, DH = DH_, DW = DW_;\n"
        "    ix_t g = (ix_t)get_global_id(0);\n", ix);
}

/* The flat index (within plane q's base) of window (oy, ox)'s maximum: the first of equal
 * maxima, a NaN wins (the last NaN); -1 for a window wholly in the padding. */
static void pool_argmax_fn(ocl_sb *b, const char *name, const char *t, const char *ix) {
    ocl_sb_printf(b,
        "%s %s_argmax(__global const %s *p, %s H, %s W, %s oy, %s ox, %s KH, %s KW,\n"
        "               %s SH, %s SW, %s PH, %s PW, %s DH, %s DW) {\n"
        "    %s best = -1;\n"
        "    %s m = 0;\n"
        "    for (%s i = 0; i < KH; i++) {\n"
        "        %s y = oy * SH - PH + i * DH;\n"
        "        if (y < 0 || y >= H) continue;\n"
        "        for (%s j = 0; j < KW; j++) {\n"
        "            %s x = ox * SW - PW + j * DW;\n"
        "            if (x < 0 || x >= W) continue;\n"
        "            %s v = p[y * W + x];\n"
        "            if (best < 0 || v > m || v != v) { m = v; best = y * W + x; }\n"
        "        }\n"
        "    }\n"
        "    return best;\n}\n\n",
        ix, name, t, ix, ix, ix, ix, ix, ix, ix, ix, ix, ix, ix, ix, ix, t, ix, ix, ix, ix, t);
}

void ocl_k_max_pool2d(ocl_sb *b, const char *name, ltc_dtype dt, bool i32) {
    const char *t = ocl_ctype(dt), *ix = i32 ? "int" : "long";
    pool_argmax_fn(b, name, t, ix);
    ocl_sb_printf(b, "__kernel void %s(__global %s *out, __global const %s *in, " POOL_ARGS ") {\n",
                  name, t, t);
    pool_prologue(b, ix);
    ocl_sb_printf(b,
        "    if (g >= P * OH * OW) return;\n"
        "    ix_t ox = g %% OW, r = g / OW, oy = r %% OH, q = r / OH;\n"
        "    __global const %s *p = in + q * H * W;\n"
        "    ix_t k = %s_argmax(p, H, W, oy, ox, KH, KW, SH, SW, PH, PW, DH, DW);\n"
        "    out[g] = k < 0 ? -INFINITY : p[k];\n}\n\n",
        t, name);
}

/* grad_input[q][y][x] = the sum of grad_output over the windows that contain (y, x) and
 * picked it, in the reference's order (oy, then ox, ascending). */
void ocl_k_max_pool2d_bwd(ocl_sb *b, const char *name, ltc_dtype dt, bool i32) {
    const char *t = ocl_ctype(dt), *ix = i32 ? "int" : "long";
    pool_argmax_fn(b, name, t, ix);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *go, __global const %s *in,\n"
        "                 " POOL_ARGS ") {\n", name, t, t, t);
    pool_prologue(b, ix);
    ocl_sb_printf(b,
        "    if (g >= P * H * W) return;\n"
        "    ix_t x = g %% W, r = g / W, y = r %% H, q = r / H;\n"
        "    __global const %s *p = in + q * H * W;\n"
        "    %s s = 0;\n"
        "    for (ix_t i = KH - 1; i >= 0; i--) {\n"
        "        ix_t ty = y + PH - i * DH;\n"
        "        if (ty < 0 || ty %% SH || ty / SH >= OH) continue;\n"
        "        ix_t oy = ty / SH;\n"
        "        for (ix_t j = KW - 1; j >= 0; j--) {\n"
        "            ix_t tx = x + PW - j * DW;\n"
        "            if (tx < 0 || tx %% SW || tx / SW >= OW) continue;\n"
        "            ix_t ox = tx / SW;\n"
        "            if (%s_argmax(p, H, W, oy, ox, KH, KW, SH, SW, PH, PW, DH, DW) == y * W + x)\n"
        "                s += go[(q * OH + oy) * OW + ox];\n"
        "        }\n"
        "    }\n"
        "    out[g] = s;\n}\n\n",
        t, t, name);
}

/* ---- slices ----------------------------------------------------------------------------------- */

/* out viewed as [outer, olen, inner] and in as [outer, ilen, inner]. write: every element of
 * in goes to out[o, off + j, k] (cat, stack, the scatter half of narrow/select_scatter);
 * otherwise every element of out reads in[o, off + j, k] (narrow, select, plain copies). */
void ocl_k_slice(ocl_sb *b, const char *name, ltc_dtype in, ltc_dtype out, bool write) {
    const char *it = ocl_ctype(in), *ot = ocl_ctype(out);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *in, long total, long olen,\n"
        "                 long ilen, long inner, long off) {\n"
        "    long g = get_global_id(0);\n"
        "    if (g >= total) return;\n"
        "    long k = g %% inner, r = g / inner;\n",
        name, ot, it);
    if (write) {
        ocl_sb_printf(b, "    long j = r %% ilen, o = r / ilen;\n"
                         "    %s v = in[g];\n"
                         "    out[(o * olen + off + j) * inner + k] = ", it);
    } else {
        ocl_sb_printf(b, "    long j = r %% olen, o = r / olen;\n"
                         "    %s v = in[(o * ilen + off + j) * inner + k];\n"
                         "    out[g] = ", it);
    }
    if (out == LTC_BOOL && in != LTC_BOOL) ocl_sb_printf(b, "(uchar)(v != 0);\n}\n\n");
    else ocl_sb_printf(b, "(%s)v;\n}\n\n", ot);
}

/* ---- index_add ------------------------------------------------------------------ */

/* index_add along a dim: out[o, v, k] = self[o, v, k] + the sum, in index order, of
 * src[o, j, k] over the j with index[j] == v + 1. Every work item reads every index, so an
 * index outside 1..n sets the error flag. self and out [outer, n, inner], src [outer, m,
 * inner]. */
void ocl_k_index_add(ocl_sb *b, const char *name, ltc_dtype dt, ltc_dtype it) {
    const char *t = ocl_ctype(dt);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *self, __global const %s *index,\n"
        "                 __global const %s *src, long outer, long n, long m, long inner,\n"
        "                 __global long *err, long step) {\n"
        "    long g = get_global_id(0);\n"
        "    if (g >= outer * n * inner) return;\n"
        "    long k = g %% inner, r = g / inner, v = r %% n, o = r / n;\n"
        "    %s s = self[g];\n"
        "    for (long j = 0; j < m; j++) {\n"
        "        long x = (long)index[j];\n",
        name, t, t, ocl_ctype(it), t, t);
    ocl_k_check_index(b, "        ", "x", "n", "continue;");
    ocl_sb_printf(b,
        "        if (x == v + 1) s += src[(o * m + j) * inner + k];\n"
        "    }\n"
        "    out[g] = s;\n}\n\n");
}

/* ---- arange ------------------------------------------------------------------------------------ */

/* out[i] = start + i * step, computed in double (float without fp64), converted; integer
 * dtypes in integer arithmetic when start and step are integers (ltc_arange_int). */
void ocl_k_arange(ocl_sb *b, const char *name, ltc_dtype dt, bool fp64) {
    const char *a = fp64 ? "double" : "float";
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, long n, %s start, %s step) {\n"
        "    long i = get_global_id(0);\n"
        "    if (i >= n) return;\n"
        "    %s v = start + (%s)i * step;\n",
        name, ocl_ctype(dt), a, a, a, a);
    if (dt == LTC_BOOL) ocl_sb_printf(b, "    out[i] = (uchar)(v != 0);\n}\n\n");
    else if (dt == LTC_I32 || dt == LTC_I64) /* ltc_kernel.h's ltc_arange_int */
        ocl_sb_printf(b,
            "    if (start == floor(start) && step == floor(step) && fabs(start) < 9.2e18 &&\n"
            "        fabs(step) < 9.2e18)\n"
            "        out[i] = (%s)((long)start + i * (long)step);\n"
            "    else out[i] = (%s)v;\n}\n\n", ocl_ctype(dt), ocl_ctype(dt));
    else ocl_sb_printf(b, "    out[i] = (%s)v;\n}\n\n", ocl_ctype(dt));
}

/* ---- random ops ---------------------------------------------------------------------------------- */

/* Philox 4x32-10 and the draws of src/core/rng.c, once per program. */
void ocl_src_philox(ocl_sb *b, bool fp64) {
    ocl_sb_printf(b,
        "uint4 ltc_philox(ulong counter, ulong key) {\n"
        "    uint c0 = (uint)counter, c1 = (uint)(counter >> 32), c2 = 0, c3 = 0;\n"
        "    uint k0 = (uint)key, k1 = (uint)(key >> 32);\n"
        "    for (int r = 0; r < 10; r++) {\n"
        "        ulong p0 = (ulong)0xD2511F53u * c0, p1 = (ulong)0xCD9E8D57u * c2;\n"
        "        uint n0 = (uint)(p1 >> 32) ^ c1 ^ k0;\n"
        "        uint n2 = (uint)(p0 >> 32) ^ c3 ^ k1;\n"
        "        c1 = (uint)p1; c3 = (uint)p0; c0 = n0; c2 = n2;\n"
        "        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;\n"
        "    }\n"
        "    return (uint4)(c0, c1, c2, c3);\n}\n"
        "float ltc_uniform_f32(__global const long *st, long i) {\n"
        "    uint4 w = ltc_philox((ulong)st[1] + (ulong)i, (ulong)st[0]);\n"
        "    return (float)(w.s0 >> 8) * (1.0f / 16777216.0f);\n}\n");
    if (fp64)
        ocl_sb_printf(b,
            "double ltc_u53(uint a, uint b) {\n"
            "    return (double)(((((ulong)a) << 32) | b) >> 11) * (1.0 / 9007199254740992.0);\n}\n"
            "double ltc_uniform_f64(__global const long *st, long i) {\n"
            "    uint4 w = ltc_philox((ulong)st[1] + (ulong)i, (ulong)st[0]);\n"
            "    return ltc_u53(w.s0, w.s1);\n}\n"
            "double ltc_normal_f64(__global const long *st, long i) {\n"
            "    uint4 w = ltc_philox((ulong)st[1] + (ulong)i, (ulong)st[0]);\n"
            "    double u1 = 1.0 - ltc_u53(w.s0, w.s1), u2 = ltc_u53(w.s2, w.s3);\n"
            "    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);\n}\n");
    else /* float32 only: the same words, Box-Muller in float (within rounding of the CPU's) */
        ocl_sb_printf(b,
            "float ltc_normal_f32(__global const long *st, long i) {\n"
            "    uint4 w = ltc_philox((ulong)st[1] + (ulong)i, (ulong)st[0]);\n"
            "    float u1 = 1.0f - (float)(w.s0 >> 8) * (1.0f / 16777216.0f);\n"
            "    float u2 = (float)(w.s2 >> 8) * (1.0f / 16777216.0f);\n"
            "    return sqrt(-2.0f * log(u1)) * cos(6.2831853f * u2);\n}\n");
    ocl_sb_printf(b, "\n");
}

/* kind 'u' rand, 'n' randn, 'b' bernoulli (in: probabilities, checked: the error flag and
 * step follow n), 'p' bernoulli.p (scalar
 * p), 'd' dropout (in: x; q = 1 - p, drop_all when p == 1), 'i' randint (low, span). The
 * generator state {seed, offset} is the last buffer; element i uses counter offset + i. */
void ocl_k_random(ocl_sb *b, const char *name, char kind, ltc_dtype dt, bool fp64) {
    const char *t = ocl_ctype(dt);
    bool f64 = dt != LTC_F32; /* the CPU draws in float64 for every dtype but float32 */
    const char *u = f64 ? "ltc_uniform_f64(st, i)" : "ltc_uniform_f32(st, i)";
    const char *ut = f64 ? "double" : "float";
    ocl_sb_printf(b, "__kernel void %s(__global %s *out, ", name, t);
    if (kind == 'b' || kind == 'd') ocl_sb_printf(b, "__global const %s *in, ", t);
    ocl_sb_printf(b, "__global const long *st, long n");
    if (kind == 'p' || kind == 'd') ocl_sb_printf(b, ", %s q", ut);
    if (kind == 'd') ocl_sb_printf(b, ", long drop_all");
    if (kind == 'i') ocl_sb_printf(b, ", long low, long span");
    if (kind == 'b') ocl_sb_printf(b, ", __global long *err, long step");
    ocl_sb_printf(b, ") {\n    long i = get_global_id(0);\n    if (i >= n) return;\n");
    switch (kind) {
    case 'u': ocl_sb_printf(b, "    out[i] = (%s)%s;\n", t, u); break;
    case 'n':
        ocl_sb_printf(b, "    out[i] = (%s)%s;\n", t,
                      fp64 ? "ltc_normal_f64(st, i)" : "ltc_normal_f32(st, i)");
        break;
    case 'b': /* a probability outside [0, 1] or NaN sets the error flag (err[1]: its position) */
        ocl_sb_printf(b, "    if (!(in[i] >= 0 && in[i] <= 1)) { err[0] = step + 1; err[1] = i + 1; }\n"
                         "    out[i] = %s < in[i] ? 1 : 0;\n", u);
        break;
    case 'p': ocl_sb_printf(b, "    out[i] = %s < q ? 1 : 0;\n", u); break;
    case 'd':
        ocl_sb_printf(b, "    out[i] = drop_all ? in[i] * 0 : in[i] * (%s)(%s < q) / q;\n", t, u);
        break;
    case 'i':
        ocl_sb_printf(b, "    long v = low + (long)floor(%s * (double)span);\n"
                         "    if (v >= low + span) v = low + span - 1;\n"
                         "    out[i] = (%s)v;\n", u, t);
        break;
    }
    ocl_sb_printf(b, "}\n\n");
}

/* ---- norm ------------------------------------------------------------------------------------- */

/* The p-norm along a dim (or of everything, outer = inner = 1), as the reference: |x|^p summed
 * in double (float without fp64), then ^(1/p); p = inf the max |x|, -inf the min, 0 the count
 * of nonzeros; a NaN wins. p = 1 and 2 take |x| and x*x (exact, where pow is not). One work
 * item per (o, k). */
void ocl_k_norm(ocl_sb *b, const char *name, ltc_dtype in, ltc_dtype out, bool fp64) {
    const char *a = fp64 ? "double" : "float";
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *in, long outer, long n, long inner,\n"
        "                 %s p) {\n"
        "    long g = get_global_id(0);\n"
        "    if (g >= outer * inner) return;\n"
        "    long o = g / inner, k = g %% inner;\n"
        "    __global const %s *q = in + o * n * inner + k;\n"
        "    %s r = p == -INFINITY ? INFINITY : 0;\n"
        "    for (long j = 0; j < n; j++) {\n"
        "        %s v = fabs((%s)q[j * inner]);\n"
        "        if (p == 0) r += v != 0 ? 1 : 0;\n"
        "        else if (isnan(v)) r = v;\n"
        "        else if (isnan(r)) continue;\n"
        "        else if (p == INFINITY) r = v > r ? v : r;\n"
        "        else if (p == -INFINITY) r = v < r ? v : r;\n"
        "        else if (p == 2) r += v * v;\n"
        "        else if (p == 1) r += v;\n"
        "        else r += pow(v, p);\n"
        "    }\n"
        "    if (!isinf(p) && p != 0 && !isnan(r)) r = p == 2 ? sqrt(r) : p == 1 ? r : pow(r, 1 / p);\n"
        "    out[g] = (%s)r;\n}\n\n",
        name, ocl_ctype(out), ocl_ctype(in), a, ocl_ctype(in), a, a, a, ocl_ctype(out));
}
