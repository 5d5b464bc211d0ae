/* reduce_norm.c - the CPU kernel of norm: (sum |x|^p)^(1/p) of all elements or along a dim,
 * p = inf / -inf the largest / smallest |x|, p = 0 the count of nonzeros (the reference
 * kernel's rules, src/ref/reduce.c, which follow PyTorch's torch.linalg.vector_norm).
 *
 * As in reduce.c the input is outer x n x inner around the reduced dim; an item is one
 * block of at most NORM_BLOCK elements of one output's line, its partial (a double) has
 * its own slot, and each output combines its partials in block order: the result does not
 * depend on the number of threads. Partials accumulate in double. */
#include <math.h>
#include <stdlib.h>

#include "elementwise.h"
#include "threads.h"

#define NORM_BLOCK 16384 /* elements of a line per partial */
#define NORM_GRAIN 65536 /* elements of work per chunk handed to a thread */
#define NORM_GATHER 256  /* elements converted at a time (dtypes other than f32, f64) */

enum { K_P2, K_P1, K_P0, K_INF, K_NINF, K_P };

typedef struct {
    const char *x;
    ltc_dtype dt;
    size_t es;
    int64_t outer, n, inner, blocks;
    int kind;
    double p;
    double *part; /* outer * inner * blocks partials */
} norm_ctx;

/* a combined with b by the kind's rule (NaN wins for the max and min). */
static double norm_join(int kind, double a, double b) {
    if (kind == K_INF) return b > a || isnan(b) ? b : a;
    if (kind == K_NINF) return b < a || isnan(b) ? b : a;
    return a + b;
}

/* The partial of n elements x[j * stride] of type T (f32 or f64). */
#define DEF_PART(NAME, T)                                                                      \
    LTC_EW_CLONES static double NAME(const T *x, int64_t n, int64_t stride, int kind,          \
                                     double p) {                                               \
        double s[8] = {0};                                                                     \
        int64_t j = 0;                                                                         \
        if (kind == K_P2 && stride == 1) {                                                     \
            for (; j + 8 <= n; j += 8)                                                         \
                for (int u = 0; u < 8; u++)                                                    \
                    s[u] += (double)x[j + u] * (double)x[j + u];                               \
            for (; j < n; j++) s[0] += (double)x[j] * (double)x[j];                            \
            return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));         \
        }                                                                                      \
        double r = kind == K_NINF ? INFINITY : 0;                                              \
        for (; j < n; j++) {                                                                   \
            double v = fabs((double)x[j * stride]);                                            \
            switch (kind) {                                                                    \
            case K_P2: r += v * v; break;                                                      \
            case K_P1: r += v; break;                                                          \
            case K_P0: r += v != 0; break; /* NaN is nonzero */                                \
            case K_P: r += pow(v, p); break;                                                   \
            default: r = norm_join(kind, r, v);                                                \
            }                                                                                  \
        }                                                                                      \
        return r;                                                                              \
    }
DEF_PART(part_f32, float)
DEF_PART(part_f64, double)

/* The partial of n elements at x (dtype dt, element stride `stride`). */
static double norm_part(const norm_ctx *c, const char *x, int64_t n, int64_t stride) {
    if (c->dt == LTC_F32) return part_f32((const float *)x, n, stride, c->kind, c->p);
    if (c->dt == LTC_F64) return part_f64((const double *)x, n, stride, c->kind, c->p);
    double r = c->kind == K_NINF ? INFINITY : 0, buf[NORM_GATHER];
    for (int64_t j0 = 0; j0 < n; j0 += NORM_GATHER) {
        int64_t m = n - j0 < NORM_GATHER ? n - j0 : NORM_GATHER;
        for (int64_t j = 0; j < m; j++)
            ltc_cpu_convert(buf + j, LTC_F64, x + (j0 + j) * stride * (int64_t)c->es, c->dt, 1);
        r = norm_join(c->kind == K_INF || c->kind == K_NINF ? c->kind : K_P1, r,
                      part_f64(buf, m, 1, c->kind, c->p));
    }
    return r;
}

/* Item k: block k % blocks of line k / blocks (line = o * inner + i). */
static void norm_range(void *p, int64_t lo, int64_t hi, int tid) {
    (void)tid;
    const norm_ctx *c = p;
    for (int64_t k = lo; k < hi; k++) {
        int64_t line = k / c->blocks, b = k % c->blocks;
        int64_t o = line / c->inner, i = line % c->inner;
        int64_t j0 = b * NORM_BLOCK, j1 = j0 + NORM_BLOCK < c->n ? j0 + NORM_BLOCK : c->n;
        const char *x = c->x + ((o * c->n + j0) * c->inner + i) * (int64_t)c->es;
        c->part[k] = norm_part(c, x, j1 - j0, c->inner);
    }
}

/* norm(Tensor self, float p, dim? dim, bool keepdim): attrs p, dim (0-based or LTC_NONE),
 * keepdim (shape only). The output is float32 or float64 (integers give float32). */
ltc_status ltc_cpu_kernel_norm(const ltc_kernel_args *a) {
    norm_ctx c = {.x = a->in[0], .dt = a->in_shapes[0].dtype, .p = a->attrs[0].f};
    c.es = ltc_dtype_size(c.dt);
    ltc_cpu_split_dim(&a->in_shapes[0], a->attrs[1].i, &c.outer, &c.n, &c.inner);
    int64_t lines = c.outer * c.inner;
    if (lines == 0) return LTC_OK;
    c.kind = c.p == 2 ? K_P2 : c.p == 1 ? K_P1 : c.p == 0 ? K_P0 : c.p == INFINITY ? K_INF
           : c.p == -INFINITY ? K_NINF : K_P;
    c.blocks = c.n ? (c.n + NORM_BLOCK - 1) / NORM_BLOCK : 1;
    c.part = malloc((size_t)(lines * c.blocks) * sizeof(double));
    if (!c.part) return ltc_errorf(LTC_ERR_NOMEM, "norm: out of memory");
    int64_t cost = c.n < NORM_BLOCK ? (c.n ? c.n : 1) : NORM_BLOCK;
    int64_t grain = NORM_GRAIN / cost;
    ltc_cpu_parallel_for(lines * c.blocks, grain < 1 ? 1 : grain, norm_range, &c);
    /* line l's partials, in block order, into slot l (l <= l * blocks: read before written) */
    for (int64_t l = 0; l < lines; l++) {
        double r = c.part[l * c.blocks];
        if (c.n == 0) r = c.kind == K_NINF ? INFINITY : 0;
        for (int64_t b = 1; b < c.blocks; b++) r = norm_join(c.kind, r, c.part[l * c.blocks + b]);
        if (c.kind == K_P2) r = sqrt(r);
        else if (c.kind == K_P && !isnan(r)) r = pow(r, 1 / c.p);
        c.part[l] = r;
    }
    ltc_cpu_convert(a->out[0], a->out_shapes[0].dtype, c.part, LTC_F64, lines);
    free(c.part);
    return LTC_OK;
}
