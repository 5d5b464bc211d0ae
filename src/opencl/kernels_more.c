/*
 * kernels_more.c - OpenCL C of the kernel families that used to run through the eager
 * fallback: layer_norm and its backward, batch_norm (statistics, then a scale-and-shift), nll_loss and its
 * backward, gather, scatter and scatter_add (one general kernel), tril/triu, avg_pool2d and
 * its backward, cumsum/cumprod, and sort/argsort/topk (a per-line rank kernel).
 *
 * Semantics are the CPU backend's (src/cpu/norm.c, loss.c, index.c, linalg.c, pool.c,
 * scan.c; src/ref/reduce.c for cumsum, src/ref/sort.c for the order): statistics in double
 * where the device has it, 1-based indices, a stable order with NaN above every number.
 * Sizes are kernel arguments (long), never constants of the source; a kernel of rank r
 * (gather, scatter) has r in its source, as the strided copy does. Each work item computes
 * its own outputs by gathering what it needs (scatter visits its contributions in index
 * order), so no kernel needs atomics and results do not depend on scheduling.
 */
#include <stdio.h>

#include "ocl.h"

/* The accumulator type: double where the device has it. */
static const char *acc_t(bool fp64) { return fp64 ? "double" : "float"; }

/* ---- normalisation -------------------------------------------------------------------------- */

/* layer_norm over rows of n elements: mean and biased variance in A, then
 * (x - mean) * rstd * w + b in the element type (as the CPU's ln_row). One work item per row. */
void ocl_k_layer_norm(ocl_sb *b, const char *name, ltc_dtype dt, bool fp64) {
    const char *t = ocl_ctype(dt), *a = acc_t(fp64 || dt == LTC_F64);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *x, __global const %s *w,\n"
        "                 __global const %s *bias, long rows, long n, %s eps) {\n"
        "    long r = get_global_id(0);\n"
        "    if (r >= rows) return;\n"
        "    __global const %s *p = x + r * n;\n"
        "    __global %s *q = out + r * n;\n"
        "    %s mean = 0, var = 0;\n"
        "    for (long j = 0; j < n; j++) mean += (%s)p[j];\n"
        "    mean /= (%s)n;\n"
        "    for (long j = 0; j < n; j++) { %s d = (%s)p[j] - mean; var += d * d; }\n"
        "    %s m = (%s)mean, rs = (%s)(1 / sqrt(var / (%s)n + eps));\n"
        "    for (long j = 0; j < n; j++) q[j] = (p[j] - m) * rs * w[j] + bias[j];\n}\n\n",
        name, t, t, t, t, a, t, t, a, a, a, a, a, t, t, t, a);
}

/* layer_norm_backward, rows: per row of n elements, mean and rstd (kept in st[2r], st[2r+1]
 * for the column kernel) and grad_input = rstd (dx^ - mean(dx^) - x^ mean(dx^ x^)) with x^ =
 * (x - mean) rstd and dx^ = g * w, in A (as the CPU's ln_bwd). One work item per row. */
void ocl_k_ln_bwd_rows(ocl_sb *b, const char *name, ltc_dtype dt, bool fp64) {
    const char *t = ocl_ctype(dt), *a = acc_t(fp64 || dt == LTC_F64);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *dx, __global %s *st, __global const %s *g,\n"
        "                 __global const %s *x, __global const %s *w, long rows, long n,\n"
        "                 %s eps) {\n"
        "    long r = get_global_id(0);\n"
        "    if (r >= rows) return;\n"
        "    __global const %s *p = x + r * n, *q = g + r * n;\n"
        "    %s mean = 0, var = 0, sa = 0, sb = 0;\n"
        "    for (long j = 0; j < n; j++) mean += (%s)p[j];\n"
        "    mean /= (%s)n;\n"
        "    for (long j = 0; j < n; j++) { %s d = (%s)p[j] - mean; var += d * d; }\n"
        "    %s rs = 1 / sqrt(var / (%s)n + eps);\n"
        "    st[2 * r] = mean;\n"
        "    st[2 * r + 1] = rs;\n"
        "    for (long j = 0; j < n; j++) {\n"
        "        %s xh = ((%s)p[j] - mean) * rs, dxh = (%s)q[j] * w[j];\n"
        "        sa += dxh;\n"
        "        sb += dxh * xh;\n"
        "    }\n"
        "    sa /= (%s)n;\n"
        "    sb /= (%s)n;\n"
        "    for (long j = 0; j < n; j++)\n"
        "        dx[r * n + j] = (%s)(rs * ((%s)q[j] * w[j] - sa - ((%s)p[j] - mean) * rs * sb));\n"
        "}\n\n",
        name, t, a, t, t, t, a, t, a, a, a, a, a, a, a, a, a, a, a, a, t, a, a);
}

/* layer_norm_backward, columns: grad_weight[j] = sum over rows of g * x^ and grad_bias[j] =
 * sum of g, with the rows' mean and rstd from st. One work item per column. */
void ocl_k_ln_bwd_cols(ocl_sb *b, const char *name, ltc_dtype dt, bool fp64) {
    const char *t = ocl_ctype(dt), *a = acc_t(fp64 || dt == LTC_F64);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *gw, __global %s *gb, __global const %s *st,\n"
        "                 __global const %s *g, __global const %s *x, long rows, long n) {\n"
        "    long j = get_global_id(0);\n"
        "    if (j >= n) return;\n"
        "    %s sw = 0, sb = 0;\n"
        "    for (long r = 0; r < rows; r++) {\n"
        "        %s gr = g[r * n + j];\n"
        "        sw += gr * ((%s)x[r * n + j] - st[2 * r]) * st[2 * r + 1];\n"
        "        sb += gr;\n"
        "    }\n"
        "    gw[j] = (%s)sw;\n"
        "    gb[j] = (%s)sb;\n}\n\n",
        name, t, t, a, t, t, a, a, a, t, t);
}

/* batch_norm's per-channel statistics: ss[ch] = w / sqrt(var + eps) (the scale) and
 * ss[c + ch] = b - mean * scale (the shift), mean and var the batch's (biased, over every
 * dim but 1) when training, else the running ones. One work item per channel. */
void ocl_k_bn_stats(ocl_sb *b, const char *name, ltc_dtype dt, bool fp64) {
    const char *t = ocl_ctype(dt), *a = acc_t(fp64 || dt == LTC_F64);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *ss, __global const %s *x, __global const %s *rm,\n"
        "                 __global const %s *rv, __global const %s *w, __global const %s *bias,\n"
        "                 long outer, long c, long inner, long training, %s eps) {\n"
        "    long ch = get_global_id(0);\n"
        "    if (ch >= c) return;\n"
        "    %s mean = rm[ch], var = rv[ch];\n"
        "    if (training) {\n"
        "        %s m = (%s)(outer * inner);\n"
        "        mean = 0; var = 0;\n"
        "        for (long o = 0; o < outer; o++)\n"
        "            for (long k = 0; k < inner; k++) mean += x[(o * c + ch) * inner + k];\n"
        "        mean /= m;\n"
        "        for (long o = 0; o < outer; o++)\n"
        "            for (long k = 0; k < inner; k++) {\n"
        "                %s d = x[(o * c + ch) * inner + k] - mean;\n"
        "                var += d * d;\n"
        "            }\n"
        "        var /= m;\n"
        "    }\n"
        "    %s scale = w[ch] / sqrt(var + eps);\n"
        "    ss[ch] = scale;\n"
        "    ss[c + ch] = bias[ch] - mean * scale;\n}\n\n",
        name, a, t, t, t, t, t, a, a, a, a, a, a);
}

/* batch_norm's output: x * scale + shift of its channel, computed in A. */
void ocl_k_bn_apply(ocl_sb *b, const char *name, ltc_dtype dt, bool fp64) {
    const char *t = ocl_ctype(dt), *a = acc_t(fp64 || dt == LTC_F64);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *x, __global const %s *ss,\n"
        "                 long total, long c, long inner) {\n"
        "    long g = get_global_id(0);\n"
        "    if (g >= total) return;\n"
        "    long ch = g / inner %% c;\n"
        "    out[g] = (%s)((%s)x[g] * ss[ch] + ss[c + ch]);\n}\n\n",
        name, t, t, a, t, a);
}

/* ---- nll_loss ----------------------------------------------------------------------------- */

/* loss[i] = -x[i, target[i] - 1] (0 for an ignored label); a label outside 1..c sets the
 * error flag. */
void ocl_k_nll_rows(ocl_sb *b, const char *name, ltc_dtype dt, ltc_dtype it) {
    const char *t = ocl_ctype(dt);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *loss, __global const %s *x, __global const %s *target,\n",
        name, t, t, ocl_ctype(it));
    ocl_k_label_row(b, "", "loss[i] = 0; ", "loss[i] = 0; ");
    ocl_sb_printf(b, "    loss[i] = -x[i * c + y - 1];\n}\n\n");
}

/* nll_loss_backward: row i is 0 but at its target, -grad_output[i or 0] there (for the mean
 * divided by kept[0], the rows not ignored: an argument after c), in A as the CPU computes
 * it; an ignored row is 0. One work item per row. */
void ocl_k_nll_backward(ocl_sb *b, const char *name, ltc_dtype dt, ltc_dtype it, bool per_row,
                        bool mean, bool fp64) {
    const char *t = ocl_ctype(dt), *a = acc_t(fp64 || dt == LTC_F64);
    char div[32] = "";
    if (mean) snprintf(div, sizeof div, " / (%s)kept[0]", a);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *go, __global const %s *target,\n",
        name, t, t, ocl_ctype(it));
    ocl_k_label_row(b, mean ? ", __global const long *kept" : "",
                    "for (long j = 0; j < c; j++) out[i * c + j] = 0; ", "");
    ocl_sb_printf(b,
        "    __global %s *q = out + i * c;\n"
        "    for (long j = 0; j < c; j++) q[j] = 0;\n"
        "    %s g = (%s)go[%s]%s;\n"
        "    q[y - 1] = (%s)-g;\n}\n\n",
        t, a, a, per_row ? "i" : "0", div, t);
}

/* ---- gather and scatter ------------------------------------------------------------------- */

/* gather along `dim` of rank-r tensors: out[p] = self[p with coordinate dim = index[p] - 1];
 * the index's dims d0.. and self's strides s0.. are arguments. One work item per index
 * element; an index outside 1..n sets the error flag. */
void ocl_k_gather(ocl_sb *b, const char *name, ltc_dtype dt, ltc_dtype it, int r) {
    const char *t = ocl_ctype(dt);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *self, __global const %s *index,\n"
        "                 long total, long dim, long n",
        name, t, t, ocl_ctype(it));
    for (int d = 0; d < r; d++) ocl_sb_printf(b, ", long d%d", d);
    for (int d = 0; d < r; d++) ocl_sb_printf(b, ", long s%d", d);
    ocl_sb_printf(b,
        ", __global long *err, long step) {\n"
        "    long g = get_global_id(0);\n"
        "    if (g >= total) return;\n"
        "    long v = (long)index[g];\n");
    ocl_k_check_index(b, "    ", "v", "n", "out[g] = 0; return;");
    ocl_sb_printf(b, "    long rest = g, off = 0, c;\n");
    for (int d = r - 1; d >= 0; d--)
        ocl_sb_printf(b, "    c = rest %% d%d; rest /= d%d; off += (dim == %d ? v - 1 : c) * s%d;\n",
                      d, d, d, d);
    ocl_sb_printf(b, "    out[g] = self[off];\n}\n\n");
}

/* scatter (add: scatter_add) along `dim` of rank-r tensors, one work item per output element
 * p (self's size): out[p] = self[p], then for j = 0.. m-1 in order, where p's coordinates
 * outside dim lie within the index's and index[p with dim = j] == p's dim coordinate + 1,
 * out[p] = (or +=) src[p with dim = j] (value: src[0], a 0-d src converted to self's dtype).
 * So the last write wins and sums run in index order, as the CPU's walk over the index.
 * Arguments: out's dims o0.., the index's dims i0.. and strides is0.., src's strides rs0... */
void ocl_k_scatter(ocl_sb *b, const char *name, ltc_dtype dt, ltc_dtype it, ltc_dtype st, int r,
                   bool add, bool value) {
    const char *t = ocl_ctype(dt);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *self, __global const %s *index,\n"
        "                 __global const %s *src, long total, long dim, long m, long n",
        name, t, t, ocl_ctype(it), ocl_ctype(st));
    for (int d = 0; d < r; d++) ocl_sb_printf(b, ", long o%d", d);
    for (int d = 0; d < r; d++) ocl_sb_printf(b, ", long i%d", d);
    for (int d = 0; d < r; d++) ocl_sb_printf(b, ", long is%d", d);
    for (int d = 0; d < r; d++) ocl_sb_printf(b, ", long rs%d", d);
    ocl_sb_printf(b,
        ", __global long *err, long step) {\n"
        "    long g = get_global_id(0);\n"
        "    if (g >= total) return;\n"
        "    %s s = self[g];\n"
        "    long rest = g, c, ib = 0, rb = 0, v = 0, istep = 0, rstep = 0;\n"
        "    int inside = 1;\n", t);
    for (int d = r - 1; d >= 0; d--)
        ocl_sb_printf(b,
            "    c = rest %% o%d; rest /= o%d;\n"
            "    if (dim == %d) { v = c; istep = is%d; rstep = rs%d; }\n"
            "    else { inside &= c < i%d; ib += c * is%d; rb += c * rs%d; }\n",
            d, d, d, d, d, d, d, d);
    const char *val = value ? (dt == LTC_BOOL ? "(uchar)(src[0] != 0)" : "src[0]")
                            : "src[rb + j * rstep]";
    ocl_sb_printf(b,
        "    if (inside)\n"
        "        for (long j = 0; j < m; j++) {\n"
        "            long x = (long)index[ib + j * istep];\n");
    ocl_k_check_index(b, "            ", "x", "n", "continue;");
    ocl_sb_printf(b,
        "            if (x == v + 1) s %s (%s)%s;\n"
        "        }\n"
        "    out[g] = s;\n}\n\n",
        add ? (dt == LTC_BOOL ? "|=" : "+=") : "=", t, val);
}

/* ---- tril, triu ---------------------------------------------------------------------------- */

/* Element (i, j) of each [m, n] matrix kept where j - i <= diag (tril) or >= diag (triu). */
void ocl_k_triangle(ocl_sb *b, const char *name, ltc_dtype dt, bool upper) {
    const char *t = ocl_ctype(dt);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *x, long total, long m, long n,\n"
        "                 long diag) {\n"
        "    long g = get_global_id(0);\n"
        "    if (g >= total) return;\n"
        "    long j = g %% n, i = g / n %% m;\n"
        "    out[g] = j - i %s diag ? x[g] : (%s)0;\n}\n\n",
        name, t, t, upper ? ">=" : "<=", t);
}

/* ---- avg_pool2d ------------------------------------------------------------------------------ */

#define AVG_ARGS                                                                               \
    "long P, long H, long W, long OH, long OW, long KH, long KW, long SH, long SW, long PH, "  \
    "long PW, long count_pad"

/* The window of (oy, ox) clipped to the input and its divisor (src/cpu/pool.c avg_window). */
static void avg_window_fn(ocl_sb *b, const char *name) {
    ocl_sb_printf(b,
        "long %s_window(long oy, long ox, long H, long W, long KH, long KW, long SH, long SW,\n"
        "               long PH, long PW, long count_pad, long *y0, long *y1, long *x0, long *x1) {\n"
        "    long ys = oy * SH - PH, xs = ox * SW - PW;\n"
        "    long ye = ys + KH < H + PH ? ys + KH : H + PH, xe = xs + KW < W + PW ? xs + KW : W + PW;\n"
        "    long padded = (ye - ys) * (xe - xs);\n"
        "    *y0 = ys < 0 ? 0 : ys; *x0 = xs < 0 ? 0 : xs;\n"
        "    *y1 = ye < H ? ye : H; *x1 = xe < W ? xe : W;\n"
        "    return count_pad ? padded : (*y1 - *y0) * (*x1 - *x0);\n}\n\n",
        name);
}

/* out[q][oy][ox] = the window's sum (in the element type) / its divisor (NaN for none). */
void ocl_k_avg_pool2d(ocl_sb *b, const char *name, ltc_dtype dt) {
    const char *t = ocl_ctype(dt);
    avg_window_fn(b, name);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *in, " AVG_ARGS ") {\n"
        "    long g = get_global_id(0);\n"
        "    if (g >= P * OH * OW) return;\n"
        "    long ox = g %% OW, r = g / OW, oy = r %% OH, q = r / OH, y0, y1, x0, x1;\n"
        "    long div = %s_window(oy, ox, H, W, KH, KW, SH, SW, PH, PW, count_pad, &y0, &y1, &x0, &x1);\n"
        "    __global const %s *p = in + q * H * W;\n"
        "    %s s = 0;\n"
        "    for (long y = y0; y < y1; y++)\n"
        "        for (long x = x0; x < x1; x++) s += p[y * W + x];\n"
        "    out[g] = div ? s / (%s)div : (%s)NAN;\n}\n\n",
        name, t, t, name, t, t, t, t);
}

/* grad_input[q][y][x] = the sum over the windows containing (y, x), oy then ox ascending (the
 * CPU's order), of grad_output / the window's divisor. */
void ocl_k_avg_pool2d_bwd(ocl_sb *b, const char *name, ltc_dtype dt) {
    const char *t = ocl_ctype(dt);
    avg_window_fn(b, name);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *go, " AVG_ARGS ") {\n"
        "    long g = get_global_id(0);\n"
        "    if (g >= P * H * W) return;\n"
        "    long x = g %% W, r = g / W, y = r %% H, q = r / H, y0, y1, x0, x1;\n"
        "    long ly = y + PH - KH, lx = x + PW - KW;\n"
        "    long oy0 = ly < 0 ? 0 : ly / SH + 1, ox0 = lx < 0 ? 0 : lx / SW + 1;\n"
        "    long oy1 = (y + PH) / SH, ox1 = (x + PW) / SW;\n"
        "    if (oy1 > OH - 1) oy1 = OH - 1;\n"
        "    if (ox1 > OW - 1) ox1 = OW - 1;\n"
        "    %s s = 0;\n"
        "    for (long oy = oy0; oy <= oy1; oy++)\n"
        "        for (long ox = ox0; ox <= ox1; ox++) {\n"
        "            long div = %s_window(oy, ox, H, W, KH, KW, SH, SW, PH, PW, count_pad, &y0, &y1, &x0, &x1);\n"
        "            if (!div || y < y0 || y >= y1 || x < x0 || x >= x1) continue;\n"
        "            s += go[(q * OH + oy) * OW + ox] / (%s)div;\n"
        "        }\n"
        "    out[g] = s;\n}\n\n",
        name, t, t, t, name, t);
}

/* ---- cumsum, cumprod ---------------------------------------------------------------------------- */

/* Running sums (or products) along a dim, one work item per (o, k) line. cumsum of floats
 * adds in A (the reference's double), cumprod of floats multiplies in the element type (the
 * CPU's); integers and bool run in 64-bit unsigned arithmetic (wrapping) into int64. */
void ocl_k_cumulative(ocl_sb *b, const char *name, ltc_dtype in, ltc_dtype out, bool prod,
                      bool fp64) {
    const char *it = ocl_ctype(in), *ot = ocl_ctype(out);
    bool isf = ltc_dtype_is_float(in);
    const char *a = !isf ? "ulong" : prod ? it : acc_t(fp64 || in == LTC_F64);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *in, long outer, long n, long inner) {\n"
        "    long g = get_global_id(0);\n"
        "    if (g >= outer * inner) return;\n"
        "    long o = g / inner, k = g %% inner;\n"
        "    __global const %s *p = in + o * n * inner + k;\n"
        "    __global %s *q = out + o * n * inner + k;\n"
        "    %s s = %s;\n"
        "    for (long j = 0; j < n; j++) {\n"
        "        s %s= (%s)%sp[j * inner];\n"
        "        q[j * inner] = %s;\n"
        "    }\n}\n\n",
        name, ot, it, it, ot, a, prod ? "1" : "0", prod ? "*" : "+", a, isf ? "" : "(long)",
        isf ? (out == LTC_F64 ? "(double)s" : "(float)s") : "as_long(s)");
}

/* ---- sort, argsort, topk ------------------------------------------------------------------------ */

/* Each element of self [outer, n, inner] finds its rank in its line (the elements before
 * it in the order, plus equal ones earlier in the line: a stable order, NaN above every
 * number) and, when the rank is in [first, first + count), writes itself (values, if any)
 * and its 1-based position (indices, if any) at rank - first of an output [outer, count,
 * inner]. median: the one rank written is the lower median's, or the first NaN's when the
 * line holds one (the count of NaNs comes with the rank). O(n) per element: one work item
 * per element. */
void ocl_k_sort(ocl_sb *b, const char *name, ltc_dtype dt, bool descending, bool values,
                bool indices, bool median) {
    const char *t = ocl_ctype(dt);
    bool isf = ltc_dtype_is_float(dt);
    if (isf)
        ocl_sb_printf(b,
            "int %s_before(%s x, %s y) {\n"
            "    if (isnan(x) || isnan(y)) return %s;\n"
            "    return x %s y;\n}\n\n",
            name, t, t, descending ? "isnan(x) && !isnan(y)" : "!isnan(x) && isnan(y)",
            descending ? ">" : "<");
    else
        ocl_sb_printf(b, "int %s_before(%s x, %s y) { return x %s y; }\n\n", name, t, t,
                      descending ? ">" : "<");
    ocl_sb_printf(b, "__kernel void %s(", name);
    if (values) ocl_sb_printf(b, "__global %s *vals, ", t);
    if (indices) ocl_sb_printf(b, "__global long *idx, ");
    ocl_sb_printf(b,
        "__global const %s *x, long outer, long n,\n"
        "                 long inner, long first, long count) {\n"
        "    long g = get_global_id(0);\n"
        "    if (g >= outer * n * inner) return;\n"
        "    long kk = g %% inner, r = g / inner, j = r %% n, o = r / n;\n"
        "    __global const %s *p = x + o * n * inner + kk;\n"
        "    %s v = p[j * inner];\n"
        "    long rank = 0, nans = 0;\n"
        "    for (long i = 0; i < n; i++) {\n"
        "        %s u = p[i * inner];\n"
        "        if (%s_before(u, v) || (i < j && !%s_before(v, u))) rank++;\n"
        "%s"
        "    }\n",
        t, t, t, t, name, name, median && isf ? "        nans += isnan(u) ? 1 : 0;\n" : "");
    if (median) ocl_sb_printf(b, "    first = nans ? n - nans : (n - 1) / 2;\n");
    ocl_sb_printf(b,
        "    if (rank < first || rank >= first + count) return;\n"
        "    long dst = (o * count + rank - first) * inner + kk;\n"
        "%s%s}\n\n",
        values ? "    vals[dst] = v;\n" : "", indices ? "    idx[dst] = j + 1;\n" : "");
}

/* cummax (cummin): along a dim, one work item per line: the running value and the 1-based
 * index where it was reached (src/cpu/scan.c: an element takes over when it is NaN, or when
 * the running value is not NaN and the element is >= (<=) it). */
void ocl_k_cumext(ocl_sb *b, const char *name, ltc_dtype dt, bool is_min) {
    const char *t = ocl_ctype(dt);
    bool isf = ltc_dtype_is_float(dt);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global long *idx, __global const %s *in, long outer,\n"
        "                 long n, long inner) {\n"
        "    long g = get_global_id(0);\n"
        "    if (g >= outer * inner) return;\n"
        "    long o = g / inner, k = g %% inner, at = 0;\n"
        "    __global const %s *p = in + o * n * inner + k;\n"
        "    __global %s *q = out + o * n * inner + k;\n"
        "    __global long *qi = idx + o * n * inner + k;\n"
        "    %s best = 0;\n"
        "    for (long j = 0; j < n; j++) {\n"
        "        %s v = p[j * inner];\n"
        "        if (j == 0 || %s) { best = v; at = j; }\n"
        "        q[j * inner] = best;\n"
        "        qi[j * inner] = at + 1;\n"
        "    }\n}\n\n",
        name, t, t, t, t, t, t,
        isf ? (is_min ? "isnan(v) || (!isnan(best) && v <= best)"
                      : "isnan(v) || (!isnan(best) && v >= best)")
            : (is_min ? "v <= best" : "v >= best"));
}

/* ---- copies and creation ----------------------------------------------------------------------- */

/* out (rank r) from in at base + sum over d of (c_d % i_d) * s_d: flip (i_d the out's size,
 * negative strides on the flipped dims and base at their ends) and repeat (i_d the input's
 * size, 1 and stride 0 on new leading dims). Arguments o0.., i0.., s0... */
void ocl_k_tile(ocl_sb *b, const char *name, ltc_dtype dt, int r) {
    const char *t = ocl_ctype(dt);
    ocl_sb_printf(b, "__kernel void %s(__global %s *out, __global const %s *in, long total, long base",
                  name, t, t);
    for (int d = 0; d < r; d++) ocl_sb_printf(b, ", long o%d", d);
    for (int d = 0; d < r; d++) ocl_sb_printf(b, ", long i%d", d);
    for (int d = 0; d < r; d++) ocl_sb_printf(b, ", long s%d", d);
    ocl_sb_printf(b, ") {\n    long g = get_global_id(0);\n    if (g >= total) return;\n"
                     "    long rest = g, off = base, c;\n");
    for (int d = r - 1; d >= 0; d--)
        ocl_sb_printf(b, "    c = rest %% o%d; rest /= o%d; off += (c %% i%d) * s%d;\n", d, d, d, d);
    ocl_sb_printf(b, "    out[g] = in[off];\n}\n\n");
}

/* one_hot: out [m, C] int64, 1 at the 1-based class self[i]; a class outside 1..C sets the
 * error flag. One work item per output element. */
void ocl_k_one_hot(ocl_sb *b, const char *name, ltc_dtype it) {
    ocl_sb_printf(b,
        "__kernel void %s(__global long *out, __global const %s *x, long total, long c,\n"
        "                 __global long *err, long step) {\n"
        "    long g = get_global_id(0);\n"
        "    if (g >= total) return;\n"
        "    long v = (long)x[g / c];\n",
        name, ocl_ctype(it));
    ocl_k_check_index(b, "    ", "v", "c", "out[g] = 0; return;");
    ocl_sb_printf(b, "    out[g] = v - 1 == g %% c;\n}\n\n");
}

/* eye: out [rows, cols], 1 on the diagonal. */
void ocl_k_eye(ocl_sb *b, const char *name, ltc_dtype dt) {
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, long total, long cols) {\n"
        "    long g = get_global_id(0);\n"
        "    if (g >= total) return;\n"
        "    out[g] = g / cols == g %% cols ? 1 : 0;\n}\n\n",
        name, ocl_ctype(dt));
}

/* linspace in double, PyTorch's formula (from start in the first half, from end in the
 * second; src/cpu/creation.c), converted. */
void ocl_k_linspace(ocl_sb *b, const char *name, ltc_dtype dt) {
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, long steps, double start, double end) {\n"
        "    long i = get_global_id(0);\n"
        "    if (i >= steps) return;\n"
        "    double step = steps > 1 ? (end - start) / (double)(steps - 1) : 0;\n"
        "    double v = i < steps / 2 || steps == 1 ? start + step * (double)i\n"
        "                                           : end - step * (double)(steps - 1 - i);\n"
        "    out[i] = %s;\n}\n\n",
        name, ocl_ctype(dt), dt == LTC_BOOL ? "(uchar)(v != 0)" : dt == LTC_F32 ? "(float)v" : dt == LTC_F64 ? "v" : dt == LTC_I32 ? "(int)v" : "(long)v");
}

/* randperm: the 1-based positions of n float64 draws in ascending order of the draws (ties
 * by position), as src/cpu/creation.c: each position finds its draw's rank. */
void ocl_k_randperm(ocl_sb *b, const char *name, ltc_dtype dt) {
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const long *st, long n) {\n"
        "    long i = get_global_id(0);\n"
        "    if (i >= n) return;\n"
        "    double u = ltc_uniform_f64(st, i);\n"
        "    long rank = 0;\n"
        "    for (long j = 0; j < n; j++) {\n"
        "        double w = ltc_uniform_f64(st, j);\n"
        "        if (w < u || (w == u && j < i)) rank++;\n"
        "    }\n"
        "    out[rank] = (%s)(i + 1);\n}\n\n",
        name, ocl_ctype(dt), ocl_ctype(dt));
}

/* mse_loss's squared differences over the broadcast of x and t (rank r; out dims o0.., the
 * operands' strides sx0.., st0.., 0 on broadcast dims), the difference in A (the
 * reference's double): out (the element type, reduction none) or A (to be reduced). */
void ocl_k_sqdiff(ocl_sb *b, const char *name, ltc_dtype dt, ltc_dtype out, int r, bool fp64) {
    const char *t = ocl_ctype(dt), *a = acc_t(fp64 || dt == LTC_F64);
    ocl_sb_printf(b, "__kernel void %s(__global %s *out, __global const %s *x, __global const %s *y, long total",
                  name, ocl_ctype(out), t, t);
    for (int d = 0; d < r; d++) ocl_sb_printf(b, ", long o%d", d);
    for (int d = 0; d < r; d++) ocl_sb_printf(b, ", long sx%d", d);
    for (int d = 0; d < r; d++) ocl_sb_printf(b, ", long sy%d", d);
    ocl_sb_printf(b, ") {\n    long g = get_global_id(0);\n    if (g >= total) return;\n"
                     "    long rest = g, ox = 0, oy = 0, c;\n");
    for (int d = r - 1; d >= 0; d--)
        ocl_sb_printf(b, "    c = rest %% o%d; rest /= o%d; ox += c * sx%d; oy += c * sy%d;\n", d, d,
                      d, d);
    ocl_sb_printf(b, "    %s v = (%s)x[ox] - (%s)y[oy];\n    out[g] = (%s)(v * v);\n}\n\n", a, a,
                  a, ocl_ctype(out));
}

/* ---- more reductions ------------------------------------------------------------------------------ */

/* out[o, k] = a reduction over j of in[(o * n + j) * inner + k], one work item per (o, k), as
 * the reference (src/ref/reduce.c) computes it in double: kind 'v' var and 's' std (the mean,
 * then the squared deviations over n - corr; NaN when that is not positive), 'p' prod (floats
 * in A, integers wrapping in int64), 'l' logsumexp (the max first; an infinite or NaN max is
 * the result), 'A' all and 'Y' any (bool). */
void ocl_k_reduce_more(ocl_sb *b, const char *name, char kind, ltc_dtype in, ltc_dtype out,
                       bool fp64) {
    const char *it = ocl_ctype(in), *ot = ocl_ctype(out);
    const char *a = acc_t(fp64 || in == LTC_F64 || out == LTC_F64);
    bool isf = ltc_dtype_is_float(in);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *in, long outer, long n, long inner,\n"
        "                 long corr) {\n"
        "    long g = get_global_id(0);\n"
        "    if (g >= outer * inner) return;\n"
        "    long o = g / inner, k = g %% inner;\n"
        "    __global const %s *p = in + o * n * inner + k;\n",
        name, ot, it, it);
    switch (kind) {
    case 'v':
    case 's':
        ocl_sb_printf(b,
            "    %s mean = 0, ss = 0, div = (%s)(n - corr);\n"
            "    for (long j = 0; j < n; j++) mean += (%s)p[j * inner];\n"
            "    mean /= (%s)n;\n"
            "    for (long j = 0; j < n; j++) { %s d = (%s)p[j * inner] - mean; ss += d * d; }\n"
            "    %s v = div > 0 ? ss / div : (%s)NAN;\n"
            "    out[g] = (%s)%s;\n}\n\n",
            a, a, a, a, a, a, a, a, ot, kind == 's' ? "sqrt(v)" : "v");
        break;
    case 'p':
        if (isf)
            ocl_sb_printf(b, "    %s r = 1;\n    for (long j = 0; j < n; j++) r *= (%s)p[j * inner];\n"
                             "    out[g] = (%s)r;\n}\n\n", a, a, ot);
        else
            ocl_sb_printf(b, "    ulong r = 1;\n"
                             "    for (long j = 0; j < n; j++) r *= (ulong)(long)p[j * inner];\n"
                             "    out[g] = as_long(r);\n}\n\n");
        break;
    case 'l':
        ocl_sb_printf(b,
            "    %s mx = -INFINITY, s = 0;\n"
            "    for (long j = 0; j < n; j++) { %s v = (%s)p[j * inner]; if (v > mx || isnan(v)) mx = v; }\n"
            "    if (isinf(mx)) { out[g] = (%s)mx; return; }\n"
            "    for (long j = 0; j < n; j++) s += exp((%s)p[j * inner] - mx);\n"
            "    out[g] = (%s)(mx + log(s));\n}\n\n",
            a, a, a, ot, a, ot);
        break;
    default: /* 'A' all, 'Y' any */
        ocl_sb_printf(b,
            "    uchar r = %d;\n"
            "    for (long j = 0; j < n; j++) r = r %s (p[j * inner] != 0);\n"
            "    out[g] = r;\n}\n\n",
            kind == 'A', kind == 'A' ? "&&" : "||");
        break;
    }
}
