/*
 * kernels.c - OpenCL C of the hand-written kernel families: reductions over one dim (sum,
 * mean, max/min with NaN propagation, argmax/argmin with 1-based indices), softmax and
 * log_softmax, cross_entropy and its backward, index_select/embedding, and the strided
 * copy of permute/transpose. Elementwise kernels are generated from ops.yaml's exprs in
 * lower.c. Every size is a kernel argument (long), never a constant of the source, so one
 * built program serves every batch size. Semantics are the reference backend's
 * (src/ref/reduce.c, loss.c, index.c): 1-based indices, first index on ties, NaN wins.
 *
 * Data-dependent errors (an index or class label out of range) set err[0] to the step's
 * number + 1 and err[1] to the offending value; the run reads them after the last step.
 * A class label of -100 (LTC_LABEL_IGNORED) is no error: its row is ignored.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

void ocl_sb_printf(ocl_sb *b, const char *fmt, ...) {
    if (b->oom) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1024;
        while (cap < b->len + (size_t)n + 1) cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

const char *ocl_ctype(ltc_dtype dt) {
    switch (dt) {
    case LTC_F32: return "float";
    case LTC_F64: return "double";
    case LTC_I32: return "int";
    case LTC_I64: return "long";
    default: return "uchar";
    }
}

void ocl_src_preamble(ocl_sb *b, bool fp64) {
    if (fp64) ocl_sb_printf(b, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
    ocl_sb_printf(b, "typedef long int64_t;\ntypedef ulong uint64_t;\ntypedef int int32_t;\n"
                     "#define nearbyint rint\n"
                     /* ops.yaml's expr_int of add, sub, mul, neg, abs: integers wrap (the
                      * devices' two's complement; no UBSan here), see ltc_kernel.h */
                     "#define LTC_WRAP_U(x) (x)\n\n");
    /* ops.yaml's expr_int of clamp, as ltc_kernel.h's ltc_clamp_int (bounds NaN when absent) */
    const char *ft = fp64 ? "double" : "float";
    ocl_sb_printf(b,
        "long ltc_clamp_int(long x, %s lo, %s hi) {\n"
        "    if (lo == lo) {\n"
        "        long l = lo <= -9223372036854775808.0 ? LONG_MIN\n"
        "               : lo >= 9223372036854775808.0 ? LONG_MAX : (long)ceil(lo);\n"
        "        if (x < l) x = l;\n"
        "    }\n"
        "    if (hi == hi) {\n"
        "        long h = hi <= -9223372036854775808.0 ? LONG_MIN\n"
        "               : hi >= 9223372036854775808.0 ? LONG_MAX : (long)floor(hi);\n"
        "        if (x > h) x = h;\n"
        "    }\n"
        "    return x;\n"
        "}\n\n", ft, ft);
    /* exp of float32 in plain arithmetic, for the elementwise kernels (lower.c): Cody-Waite
     * reduction by ln 2 (k rounded by the 1.5 * 2^23 trick), Cephes' expf polynomial (within
     * 2 ulp of glibc's), 2^k applied as two exact power-of-two factors so that subnormal
     * results come out right; NaN stays NaN, overflow gives inf, underflow 0. PoCL runs it
     * vectorized over work items, about a third faster than its library exp. */
    ocl_sb_printf(b,
        "float ltc_expf(float x) {\n"
        "    float xc = x > 89.0f ? 89.0f : (x < -104.0f ? -104.0f : x);\n"
        "    float t = xc * 1.44269504088896341f + 12582912.0f;\n"
        "    int ki = as_int(t) - 0x4B400000;\n"
        "    float k = t - 12582912.0f;\n"
        "    float r = k * -0.693359375f + xc;\n"
        "    r = k * 2.12194440e-4f + r;\n"
        "    float p = 1.9875691500e-4f;\n"
        "    p = p * r + 1.3981999507e-3f;\n"
        "    p = p * r + 8.3334519073e-3f;\n"
        "    p = p * r + 4.1665795894e-2f;\n"
        "    p = p * r + 1.6666665459e-1f;\n"
        "    p = p * r + 5.0000001201e-1f;\n"
        "    p = p * r * r + r + 1.0f;\n"
        "    int k1 = ki >> 1;\n"
        "    float y = p * as_float((k1 + 127) << 23) * as_float((ki - k1 + 127) << 23);\n"
        "    return x >= 89.0f ? INFINITY : (x <= -104.0f ? 0.0f : y);\n}\n\n");
}

/* ---- reductions -------------------------------------------------------------------------- */

/* out[o, k] = reduce over j of in[(o * n + j) * inner + k]; one work item per (o, k).
 * kind: 's' sum, 'm' mean, 'M' max, 'N' min, 'a' argmax, 'i' argmin, 'D' max.dim and
 * 'E' min.dim (values and 1-based indices). */
void ocl_k_reduce(ocl_sb *b, const char *name, char kind, ltc_dtype in, ltc_dtype out,
                  bool fp64) {
    const char *it = ocl_ctype(in), *ot = ocl_ctype(out);
    bool isf = ltc_dtype_is_float(in);
    const char *acc = kind == 's' || kind == 'm'
                          ? (ltc_dtype_is_float(out) ? (out == LTC_F64 || !fp64 ? ot : "double")
                                                     : "long")
                          : it;
    ocl_sb_printf(b, "__kernel void %s(__global %s *out, ", name, kind == 'a' || kind == 'i'
                                                                  ? "long" : ot);
    if (kind == 'D' || kind == 'E') ocl_sb_printf(b, "__global long *idx, ");
    ocl_sb_printf(b, "__global const %s *in, long outer, long n, long inner) {\n"
                     "    long g = get_global_id(0);\n"
                     "    if (g >= outer * inner) return;\n"
                     "    long o = g / inner, k = g %% inner;\n"
                     "    __global const %s *p = in + o * n * inner + k;\n", it, it);
    if (kind == 's' || kind == 'm') {
        ocl_sb_printf(b, "    %s acc = 0;\n    for (long j = 0; j < n; j++) acc += (%s)p[j * inner];\n",
                      acc, acc);
        if (kind == 'm') ocl_sb_printf(b, "    out[g] = (%s)(acc / (%s)n);\n}\n\n", ot, acc);
        else ocl_sb_printf(b, "    out[g] = (%s)acc;\n}\n\n", ot);
        return;
    }
    bool is_max = kind == 'M' || kind == 'a' || kind == 'D';
    ocl_sb_printf(b, "    %s best = p[0];\n    long bi = 0;\n", it);
    ocl_sb_printf(b, "    for (long j = 1; j < n; j++) {\n        %s v = p[j * inner];\n", it);
    if (isf)
        ocl_sb_printf(b, "        if (best != best) break;\n"
                         "        if (v != v || v %s best) { best = v; bi = j; }\n", is_max ? ">" : "<");
    else
        ocl_sb_printf(b, "        if (v %s best) { best = v; bi = j; }\n", is_max ? ">" : "<");
    ocl_sb_printf(b, "    }\n");
    if (kind == 'a' || kind == 'i') ocl_sb_printf(b, "    out[g] = bi + 1;\n}\n\n");
    else if (kind == 'D' || kind == 'E') ocl_sb_printf(b, "    out[g] = best;\n    idx[g] = bi + 1;\n}\n\n");
    else ocl_sb_printf(b, "    out[g] = best;\n}\n\n");
}

/* softmax / log_softmax along a dim: one work item per (o, k) row of n elements. */
void ocl_k_softmax(ocl_sb *b, const char *name, ltc_dtype dt, bool log) {
    const char *t = ocl_ctype(dt);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *in, long outer, long n, long inner) {\n"
        "    long g = get_global_id(0);\n"
        "    if (g >= outer * inner) return;\n"
        "    long o = g / inner, k = g %% inner;\n"
        "    __global const %s *p = in + o * n * inner + k;\n"
        "    __global %s *q = out + o * n * inner + k;\n"
        "    %s m = p[0];\n"
        "    for (long j = 1; j < n; j++) { %s v = p[j * inner]; if (v > m || v != v) m = v; }\n"
        "    %s s = 0;\n"
        "    for (long j = 0; j < n; j++) s += exp(p[j * inner] - m);\n",
        name, t, t, t, t, t, t, t);
    if (log)
        ocl_sb_printf(b, "    %s ls = log(s);\n"
                         "    for (long j = 0; j < n; j++) q[j * inner] = p[j * inner] - m - ls;\n}\n\n", t);
    else
        ocl_sb_printf(b, "    for (long j = 0; j < n; j++) q[j * inner] = exp(p[j * inner] - m) / s;\n}\n\n");
}

/* ---- data-dependent errors ------------------------------------------------------------------ */

void ocl_k_check_index(ocl_sb *b, const char *indent, const char *v, const char *n,
                       const char *then) {
    ocl_sb_printf(b, "%sif (%s < 1 || %s > %s) { err[0] = step + 1; err[1] = %s; %s }\n", indent, v,
                  v, n, v, then);
}

void ocl_k_label_row(ocl_sb *b, const char *extra, const char *on_ignore, const char *on_error) {
    ocl_sb_printf(b,
        "                 long rows, long c%s, __global long *err, long step) {\n"
        "    long i = get_global_id(0);\n"
        "    if (i >= rows) return;\n"
        "    long y = (long)target[i];\n"
        "    if (y == %d) { %sreturn; }\n", extra, LTC_LABEL_IGNORED, on_ignore);
    char then[96];
    snprintf(then, sizeof then, "%sreturn;", on_error);
    ocl_k_check_index(b, "    ", "y", "c", then);
}

void ocl_k_label_mean(ocl_sb *b, const char *name, ltc_dtype dt, ltc_dtype it, bool fp64) {
    const char *t = ocl_ctype(dt), *a = dt == LTC_F64 || !fp64 ? t : "double";
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *in, __global const %s *target,\n"
        "                 long n) {\n"
        "    if (get_global_id(0) != 0) return;\n"
        "    %s acc = 0;\n"
        "    long kept = 0;\n"
        "    for (long j = 0; j < n; j++) { acc += (%s)in[j]; kept += target[j] != %d; }\n"
        "    out[0] = (%s)(acc / (%s)kept);\n}\n\n",
        name, t, t, ocl_ctype(it), a, a, LTC_LABEL_IGNORED, t, a);
}

void ocl_k_label_count(ocl_sb *b, const char *name, ltc_dtype it) {
    ocl_sb_printf(b,
        "__kernel void %s(__global long *kept, __global const %s *target, long n) {\n"
        "    if (get_global_id(0) != 0) return;\n"
        "    long k = 0;\n"
        "    for (long j = 0; j < n; j++) k += target[j] != %d;\n"
        "    kept[0] = k;\n}\n\n",
        name, ocl_ctype(it), LTC_LABEL_IGNORED);
}

/* cross_entropy rows: loss[i] = logsumexp(x[i, :]) - x[i, target[i] - 1], one work item
 * per row of c logits (0 for an ignored label); a label outside 1..c sets the error flag. */
void ocl_k_ce_rows(ocl_sb *b, const char *name, ltc_dtype dt, ltc_dtype it) {
    const char *t = ocl_ctype(dt);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *loss, __global const %s *x, __global const %s *target,\n",
        name, t, t, ocl_ctype(it));
    ocl_k_label_row(b, "", "loss[i] = 0; ", "loss[i] = 0; ");
    ocl_sb_printf(b,
        "    __global const %s *p = x + i * c;\n"
        "    %s m = p[0];\n"
        "    for (long j = 1; j < c; j++) if (p[j] > m || p[j] != p[j]) m = p[j];\n"
        "    %s s = 0;\n"
        "    for (long j = 0; j < c; j++) s += exp(p[j] - m);\n"
        "    loss[i] = m + log(s) - p[y - 1];\n}\n\n",
        t, t, t);
}

/* cross_entropy_backward: grad[i, j] = (softmax(x[i])[j] - (j == target[i] - 1)) * g, g =
 * grad_output[0] (sum), grad_output[0] / kept[0] (mean: kept is the rows not ignored, an
 * argument after c) or grad_output[i] (none); 0 on an ignored row. One work item per row. */
void ocl_k_ce_backward(ocl_sb *b, const char *name, ltc_dtype dt, ltc_dtype it, bool per_row,
                       bool mean) {
    const char *t = ocl_ctype(dt);
    char div[32] = "";
    if (mean) snprintf(div, sizeof div, " / (%s)kept[0]", t);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *go, __global const %s *x,\n"
        "                 __global const %s *target,\n",
        name, t, t, t, ocl_ctype(it));
    ocl_k_label_row(b, mean ? ", __global const long *kept" : "",
                    "for (long j = 0; j < c; j++) out[i * c + j] = 0; ", "");
    ocl_sb_printf(b,
        "    __global const %s *p = x + i * c;\n"
        "    __global %s *q = out + i * c;\n"
        "    %s g = go[%s]%s;\n"
        "    %s m = p[0];\n"
        "    for (long j = 1; j < c; j++) if (p[j] > m || p[j] != p[j]) m = p[j];\n"
        "    %s s = 0;\n"
        "    for (long j = 0; j < c; j++) s += exp(p[j] - m);\n"
        "    for (long j = 0; j < c; j++) q[j] = (exp(p[j] - m) / s - (j == y - 1 ? 1 : 0)) * g;\n}\n\n",
        t, t, t, per_row ? "i" : "0", div, t, t);
}

/* index_select along a dim: out[o, j, k] = in[o, index[j] - 1, k]; one work item per
 * output element. An index outside 1..n sets the error flag. */
void ocl_k_index_select(ocl_sb *b, const char *name, ltc_dtype dt, ltc_dtype it) {
    const char *t = ocl_ctype(dt);
    ocl_sb_printf(b,
        "__kernel void %s(__global %s *out, __global const %s *in, __global const %s *index,\n"
        "                 long outer, long n, long m, long inner, __global long *err, long step) {\n"
        "    long g = get_global_id(0);\n"
        "    if (g >= outer * m * inner) return;\n"
        "    long k = g %% inner, r = g / inner, j = r %% m, o = r / m;\n"
        "    long v = (long)index[j];\n",
        name, t, t, ocl_ctype(it));
    ocl_k_check_index(b, "    ", "v", "n", "out[g] = 0; return;");
    ocl_sb_printf(b, "    out[g] = in[(o * n + v - 1) * inner + k];\n}\n\n");
}

/* A strided copy: out (rank r, contiguous) from in read at sum(coord[d] * stride[d]); the
 * r dims and r strides are arguments d0.. and s0... Serves permute, transpose, t and
 * expand (stride 0 on broadcast dims). */
void ocl_k_strided(ocl_sb *b, const char *name, ltc_dtype dt, int r) {
    const char *t = ocl_ctype(dt);
    ocl_sb_printf(b, "__kernel void %s(__global %s *out, __global const %s *in, long total", name,
                  t, t);
    for (int d = 0; d < r; d++) ocl_sb_printf(b, ", long d%d", d);
    for (int d = 0; d < r; d++) ocl_sb_printf(b, ", long s%d", d);
    ocl_sb_printf(b, ") {\n    long g = get_global_id(0);\n    if (g >= total) return;\n"
                     "    long rest = g, off = 0, c;\n");
    for (int d = r - 1; d >= 0; d--)
        ocl_sb_printf(b, "    c = rest %% d%d; rest /= d%d; off += c * s%d;\n", d, d, d);
    ocl_sb_printf(b, "    out[g] = in[off];\n}\n\n");
}
