/* linear.c - CPU kernels of the fully connected layer ops over OpenBLAS gemm: linear
 * (self . weight^T + bias, the weight read transposed in place, no copy), its backward
 * (both gemms and the bias sums in one kernel) and addmm. */
#include <string.h>

#include <stdatomic.h>

#include "elementwise.h"
#include "fuse.h"
#include "threads.h"

/* C[m,n] = alpha * A[m,k] . op(B) + beta * C, row-major; op(B) = B^T (B is [n,k]) when
 * `bt`, else B ([k,n]). */
static void gemm(ltc_dtype dt, bool bt, int64_t m, int64_t n, int64_t k, double alpha,
                 const void *A, const void *B, double beta, void *C) {
    ltc_cpu_gemm(dt, false, bt, m, n, k, alpha, A, k, B, bt ? k : n, beta, C, n);
}

/* Whether a product of `macs` multiply-adds may go to the pool's threads as row blocks,
 * each on one OpenBLAS thread: with worker threads, from LTC_GEMM_SPLIT multiply-adds,
 * never under LTC_DETERMINISTIC (kept to one thread, as for ltc_cpu_gemm). The blocks give
 * one call's values within rounding, not always its bits (OpenBLAS 0.3.21's Haswell kernels,
 * which it also picks on AMD EPYC, round rows differently by block, as they do on 2 threads
 * against 1), so whether a call splits is left to split_now. */
static bool split_gemm(int64_t macs) {
    static int64_t *deterministic;
    if (!deterministic) deterministic = ltc_config_slot("LTC_DETERMINISTIC");
    return ltc_cpu_threads() > 1 && macs >= LTC_GEMM_SPLIT && !*deterministic;
}

/* Whether this call splits (*timed: it is timed, for ltc_cpu_split_end); the timing chooses
 * (threads.h). The other way is one call on this thread alone (*single): never OpenBLAS's own
 * threads (LTC_GEMM_SPLIT=0 aside), whose workers spin on after it on the cores the next
 * kernel's threads need, a cost the call's own time does not show (a [1024,512]
 * gelu_backward after linear_backward took 0.44-0.57 ms, 0.32-0.37 after the split one;
 * tiny_gpt's step went from 60 to 97 ms in a run where the timing chose OpenBLAS's threads).
 * Splitting was untimed from LTC_GEMM_SMALL multiply-adds, but when other processes hold the
 * cores a worker that took a block may not run for milliseconds while this thread waits:
 * tiny_gpt's step took 191 ms on two threads against 142 on one (load average 4-5), most of
 * it in these GEMMs. */
static bool split_now(ltc_cpu_split_t *sp, bool *timed, bool *single, int64_t macs,
                      uint64_t key) {
    static int64_t *mode;
    if (!mode) mode = ltc_config_slot("LTC_GEMM_SPLIT");
    *single = *mode != 0 && macs >= LTC_GEMM_SMALL;
    if (!*timed) return false;
    return ltc_cpu_split_begin(sp, key);
}

/* The timing key of a kernel `site` on sizes a, b, c. */
static uint64_t split_key(uint64_t site, int64_t a, int64_t b, int64_t c) {
    uint64_t h = site * 0x100000001B3u;
    h = (h ^ (uint64_t)a) * 0x100000001B3u;
    h = (h ^ (uint64_t)b) * 0x100000001B3u;
    return (h ^ (uint64_t)c) * 0x100000001B3u;
}

/* linear's row blocks: rows [m * t / n, m * (t + 1) / n) of y for block t of n, each
 * started from the bias (or zeros) by the thread that then adds its product: the start
 * (a [1024, 512] float32 y: 2 MB written) runs on the threads too, and is still in cache
 * when the GEMM reads it. */
typedef struct {
    ltc_dtype dt;
    int64_t m, n, k, blocks;
    const char *x, *w, *bias; /* bias NULL: zeros */
    char *y;
    const ltc_kernel_args *epi; /* the epilogue group's step (epi_args), run on each block */
    atomic_bool failed;         /* the epilogue ran out of memory */
} lin_ctx;

/* The kernel args of a merged step's epilogue group (ltc_cpu_plan_epilogues): those past
 * the GEMM op's n_in inputs and n_out outputs, ctx the group. */
static ltc_kernel_args epi_args(const ltc_kernel_args *a, int n_in, int n_out) {
    ltc_kernel_args e = *a;
    e.n_in -= n_in, e.in += n_in, e.in_shapes += n_in;
    e.n_out -= n_out, e.out += n_out, e.out_shapes += n_out;
    e.attrs = NULL, e.n_attrs = 0;
    return e;
}

/* Runs the epilogue group over elements [lo, hi) of the GEMM's result (epi NULL: none). */
static void epi_range(const ltc_kernel_args *epi, int64_t lo, int64_t hi, atomic_bool *failed) {
    if (epi && hi > lo && !ltc_cpu_fused_run_range(epi->ctx, epi->in, epi->out, lo, hi))
        atomic_store(failed, true);
}

/* The most elements of a GEMM result whose epilogue runs on the GEMM's row blocks (where the
 * rows are still in the cache of the thread that made them: a [256, 128] relu). A larger one
 * runs after the GEMM as its own step would, in chunks shared out as the threads come free:
 * on the row blocks, tiny_gpt's [1024, 512] gelu_backward went to the one thread of
 * linear_backward's input gradient while the other computed the weight's (1.8-2.0 ms against
 * 1.3 + 0.2 apart), and its gelu after a split linear took 1.0 ms against 0.69 + 0.26. */
#define EPI_INLINE_MAX 65536

/* The epilogue a call runs on its row blocks when it splits: epi when small, else NULL. */
static const ltc_kernel_args *epi_inline(const ltc_kernel_args *epi, int64_t numel) {
    return numel <= EPI_INLINE_MAX ? epi : NULL;
}

/* After the GEMM of a step with an epilogue: a split call ran a small group on each block;
 * a timed call that did not split runs a small one here on this thread (its way is one
 * thread for both); any other runs the group as its own step would (threads as it chooses). */
static ltc_status epi_finish(const ltc_kernel_args *epi, bool split, bool timed, int64_t numel,
                             atomic_bool *failed) {
    if (!epi) return LTC_OK;
    bool small = epi_inline(epi, numel) != NULL;
    if (!split && timed && small) epi_range(epi, 0, numel, failed);
    if (atomic_load(failed))
        return ltc_errorf(LTC_ERR_NOMEM, "%s: out of memory for its epilogue's block buffers",
                          ltc_op_name(epi->op));
    return (split || timed) && small ? LTC_OK : ltc_cpu_fused_kernel(epi);
}

static void lin_task(void *p, int64_t lo, int64_t hi, int tid) {
    (void)tid;
    lin_ctx *c = p;
    size_t es = ltc_dtype_size(c->dt), row = (size_t)c->n * es;
    for (int64_t t = lo; t < hi; t++) {
        int64_t r0 = c->m * t / c->blocks, r1 = c->m * (t + 1) / c->blocks;
        if (r1 <= r0) continue;
        char *y = c->y + (size_t)r0 * row;
        if (c->bias)
            for (int64_t i = 0; i < r1 - r0; i++) memcpy(y + (size_t)i * row, c->bias, row);
        else
            memset(y, 0, (size_t)(r1 - r0) * row);
        if (c->k)
            gemm(c->dt, true, r1 - r0, c->n, c->k, 1.0, c->x + (size_t)(r0 * c->k) * es, c->w,
                 1.0, y);
        epi_range(c->epi, r0 * c->n, r1 * c->n, &c->failed);
    }
}

/* linear(self [..., in], weight [out, in], bias [out]) and linear.nobias; epi: the group of
 * an epilogue (NULL: none). */
static ltc_status linear(const ltc_kernel_args *a, bool bias, const ltc_kernel_args *epi) {
    const ltc_shape *s = &a->in_shapes[0], *w = &a->in_shapes[1];
    ltc_dtype dt = s->dtype;
    int64_t k = w->dims[1], n = w->dims[0], m = k ? ltc_shape_numel(s) / k : 0;
    if (!k) m = ltc_shape_numel(&a->out_shapes[0]) / (n ? n : 1);
    if (m == 0 || n == 0) return LTC_OK;
    lin_ctx c = {dt, m, n, k, 1, a->in[0], a->in[1], bias ? a->in[2] : NULL, a->out[0], NULL, false};
    ltc_cpu_split_t sp;
    bool timed = k && split_gemm(m * n * k) && m >= 2 * LTC_PAR_MIN_CHUNKS, single, split;
    if ((split = split_now(&sp, &timed, &single, m * n * k, split_key(1 + dt, m, n, k)))) {
        c.blocks = ltc_cpu_threads();
        c.epi = epi_inline(epi, m * n);
        ltc_cpu_blas_single(true);
        ltc_cpu_parallel_tasks(c.blocks, lin_task, &c);
        ltc_cpu_blas_single(false);
    } else {
        if (single) ltc_cpu_blas_single(true);
        lin_task(&c, 0, 1, 0);
        if (single) ltc_cpu_blas_single(false);
    }
    ltc_status st = epi_finish(epi, split, timed, m * n, &c.failed);
    if (timed) ltc_cpu_split_end(&sp);
    return st;
}

ltc_status ltc_cpu_kernel_linear(const ltc_kernel_args *a) { return linear(a, true, NULL); }
ltc_status ltc_cpu_kernel_linear_nobias(const ltc_kernel_args *a) { return linear(a, false, NULL); }
ltc_status ltc_cpu_kernel_linear_epilogue(const ltc_kernel_args *a) {
    ltc_kernel_args e = epi_args(a, 3, 1);
    return linear(a, true, &e);
}
ltc_status ltc_cpu_kernel_linear_nobias_epilogue(const ltc_kernel_args *a) {
    ltc_kernel_args e = epi_args(a, 2, 1);
    return linear(a, false, &e);
}

/* linear_backward's work: with rows r = the leading dims' product, dX[r, in] = dY[r, out] .
 * W[out, in], dW[out, in] = dY^T . X[r, in], db[out] = dY summed over rows. Task t < nx:
 * block t of nx of dX's rows; t >= nx: block t - nx of nw of dW's rows and of db's entries
 * (each db entry summed over the rows in order, whatever the blocks). */
typedef struct {
    const ltc_kernel_args *a;
    int64_t rows, in, out;
    int nx, nw;                     /* blocks of dX (0 when skipped) and of dW */
    bool skip_dw, skip_db;          /* results nothing reads (NULL: the plan's fold): unwritten */
    const ltc_kernel_args *epi;     /* an epilogue group reading dX, run on each block of it */
    atomic_bool failed;
} lb_ctx;

/* db[o0..o1) = the rows of g summed in row order, 4 vectors of columns at a time held in
 * registers (the same sums as a plain loop over the rows, without a store and a load of db
 * per row); the columns left over as a plain loop. */
typedef float bias_vf32 __attribute__((vector_size(64)));
typedef double bias_vf64 __attribute__((vector_size(64)));
#define DEF_BIAS(NAME, T, V, VW)                                                               \
    LTC_EW_CLONES static void NAME(const T *g, int64_t rows, int64_t out, int64_t o0,         \
                                   int64_t o1, T *db) {                                        \
        int64_t o = o0;                                                                        \
        for (; o + 4 * VW <= o1; o += 4 * VW) {                                                \
            V a0 = {0}, a1 = a0, a2 = a0, a3 = a0, u;                                          \
            for (int64_t r = 0; r < rows; r++) {                                               \
                const T *gr = g + r * out + o;                                                 \
                memcpy(&u, gr, sizeof u), a0 += u;                                             \
                memcpy(&u, gr + VW, sizeof u), a1 += u;                                        \
                memcpy(&u, gr + 2 * VW, sizeof u), a2 += u;                                    \
                memcpy(&u, gr + 3 * VW, sizeof u), a3 += u;                                    \
            }                                                                                  \
            memcpy(db + o, &a0, sizeof a0), memcpy(db + o + VW, &a1, sizeof a1);               \
            memcpy(db + o + 2 * VW, &a2, sizeof a2), memcpy(db + o + 3 * VW, &a3, sizeof a3);  \
        }                                                                                      \
        for (int64_t p = o; p < o1; p++) db[p] = 0;                                            \
        for (int64_t r = 0; r < rows; r++) {                                                   \
            const T *gr = g + r * out;                                                         \
            LTC_SIMD for (int64_t p = o; p < o1; p++) db[p] += gr[p];                          \
        }                                                                                      \
    }
DEF_BIAS(bias_f32, float, bias_vf32, 16)
DEF_BIAS(bias_f64, double, bias_vf64, 8)

static void lb_bias(const lb_ctx *c, int64_t o0, int64_t o1) {
    const ltc_kernel_args *a = c->a;
    if (c->skip_db) return;
    if (a->in_shapes[0].dtype == LTC_F32)
        bias_f32(a->in[0], c->rows, c->out, o0, o1, a->out[2]);
    else
        bias_f64(a->in[0], c->rows, c->out, o0, o1, a->out[2]);
}

static void lb_task(void *p, int64_t lo, int64_t hi, int tid) {
    (void)tid;
    lb_ctx *c = p;
    const ltc_kernel_args *a = c->a;
    ltc_dtype dt = a->in_shapes[0].dtype;
    size_t es = ltc_dtype_size(dt);
    for (int64_t t = lo; t < hi; t++) {
        if (t < c->nx) { /* dX rows [r0, r1) */
            int64_t r0 = c->rows * t / c->nx, r1 = c->rows * (t + 1) / c->nx;
            if (r1 > r0)
                ltc_cpu_gemm(dt, false, false, r1 - r0, c->in, c->out, 1.0,
                             (const char *)a->in[0] + (size_t)(r0 * c->out) * es, c->out,
                             a->in[2], c->in, 0.0, (char *)a->out[0] + (size_t)(r0 * c->in) * es,
                             c->in);
            epi_range(c->epi, r0 * c->in, r1 * c->in, &c->failed);
        } else if (t < c->nx + c->nw) { /* dW rows (and db entries) [o0, o1) */
            int64_t b = t - c->nx;
            int64_t o0 = c->out * b / c->nw, o1 = c->out * (b + 1) / c->nw;
            if (o1 > o0 && !c->skip_dw)
                ltc_cpu_gemm(dt, true, false, o1 - o0, c->in, c->rows, 1.0,
                             (const char *)a->in[0] + (size_t)o0 * es, c->out, a->in[1], c->in,
                             0.0, (char *)a->out[1] + (size_t)(o0 * c->in) * es, c->in);
            lb_bias(c, o0, o1);
        }
    }
}

/* linear_backward(grad_output [..., out], self [..., in], weight [out, in]) -> (grad_input,
 * grad_weight, grad_bias). A result the kernel gets NULL for is one nothing reads (the
 * plan's fold, cpu_backend.yaml's skips_unread_outputs): it is left unwritten, as PyTorch's
 * output_mask leaves it. When split_gemm says so, the gemms go as independent row blocks to
 * the threads, each on one OpenBLAS thread (two blocks of dX and two of dW, or four of the
 * one gemm left when the other is skipped): two cores run two single-threaded gemms at
 * nearly twice one's speed, where one gemm threaded over both got 1.2-1.6x on this machine.
 * Otherwise one gemm after the other (each as ltc_cpu_gemm threads it). */
static ltc_status linear_backward(const ltc_kernel_args *a, const ltc_kernel_args *epi) {
    const ltc_shape *w = &a->in_shapes[2];
    int64_t out = w->dims[0], in = w->dims[1];
    int64_t rows = out ? ltc_shape_numel(&a->in_shapes[0]) / out : 0;
    bool skip_dx = !a->out[0], skip_dw = !a->out[1], skip_db = !a->out[2];
    lb_ctx c = {a, rows, in, out, skip_dx ? 0 : 1, 1, skip_dw, skip_db, NULL, false};
    if (rows == 0 || in == 0 || out == 0) { /* empty products: zeros (the bias's sums) */
        if (!skip_dx) memset(a->out[0], 0, ltc_shape_nbytes(&a->out_shapes[0]));
        if (!skip_dw) memset(a->out[1], 0, ltc_shape_nbytes(&a->out_shapes[1]));
        if (out) lb_bias(&c, 0, out);
        return epi_finish(epi, false, false, rows * in, &c.failed);
    }
    ltc_cpu_split_t sp;
    /* with both products, each thread takes a whole one (nothing packed twice): they split
     * from a quarter of LTC_GEMM_SPLIT each (mlp-step's [256,10] output layer: 327K each) */
    int64_t macs = rows * in * out * (!skip_dx && !skip_dw ? 4 : 1);
    bool timed = split_gemm(macs) && out >= 2 * LTC_PAR_MIN_CHUNKS, single, split;
    if ((split = split_now(&sp, &timed, &single, rows * in * out,
                           split_key(3 + a->in_shapes[0].dtype + 16 * skip_dx + 32 * skip_dw,
                                     rows, in, out)))) {
        int th = ltc_cpu_threads();
        c.nx = skip_dx ? 0 : skip_dw ? th : (th + 1) / 2;
        c.nw = skip_dx ? th : skip_dw ? 1 : th / 2;
        c.epi = epi_inline(epi, rows * in);
        ltc_cpu_blas_single(true);
        ltc_cpu_parallel_tasks(c.nx + c.nw, lb_task, &c);
        ltc_cpu_blas_single(false);
    } else {
        if (single) ltc_cpu_blas_single(true);
        lb_task(&c, 0, c.nx + c.nw, 0);
        if (single) ltc_cpu_blas_single(false);
    }
    ltc_status st = epi_finish(epi, split, timed, rows * in, &c.failed);
    if (timed) ltc_cpu_split_end(&sp);
    return st;
}

ltc_status ltc_cpu_kernel_linear_backward(const ltc_kernel_args *a) {
    return linear_backward(a, NULL);
}
ltc_status ltc_cpu_kernel_linear_backward_epilogue(const ltc_kernel_args *a) {
    ltc_kernel_args e = epi_args(a, 3, 3);
    return linear_backward(a, &e);
}

/* addmm(self, mat1 [m,k], mat2 [k,n], beta, alpha): beta * self (broadcast to [m,n]) +
 * alpha * mat1 . mat2. With beta == 0 self is not read (NaN there does not propagate), as
 * in PyTorch. */
ltc_status ltc_cpu_kernel_addmm(const ltc_kernel_args *a) {
    const ltc_shape *s = &a->in_shapes[0], *m1 = &a->in_shapes[1], *m2 = &a->in_shapes[2];
    ltc_dtype dt = m1->dtype;
    double beta = a->attrs[0].f, alpha = a->attrs[1].f;
    int64_t m = m1->dims[0], k = m1->dims[1], n = m2->dims[1];
    int64_t rows = s->ndim == 2 ? s->dims[0] : 1, cols = s->ndim >= 1 ? s->dims[s->ndim - 1] : 1;
    int64_t sr = rows == 1 ? 0 : cols, sc = cols == 1 ? 0 : 1;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            int64_t o = i * n + j, p = i * sr + j * sc;
            if (dt == LTC_F32)
                ((float *)a->out[0])[o] = beta == 0 ? 0.0f : (float)beta * ((const float *)a->in[0])[p];
            else
                ((double *)a->out[0])[o] = beta == 0 ? 0.0 : beta * ((const double *)a->in[0])[p];
        }
    if (m && n && k) gemm(dt, false, m, n, k, alpha, a->in[1], a->in[2], 1.0, a->out[0]);
    return LTC_OK;
}
