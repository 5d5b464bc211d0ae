/* fuse.c - elementwise fusion of the CPU plan: grouping at build, blockwise evaluation. */
#include "fuse.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elementwise.h"
#include "threads.h"

#define BLOCK 2048              /* elements per block (fewer with many slots: below) */
#define PAR_GRAIN 32            /* blocks per chunk handed to a thread (64K elements) */
#define SLOT_BUDGET 6144        /* elements of all slots of a block (24 KB of float32) */
#define SLOT_MIN_BLOCK 512
#define PAR_MIN_BLOCKS (LTC_PAR_MIN_CHUNKS * PAR_GRAIN) /* fewer run on the calling thread */
#define MAX_EXT 64              /* the plan runs steps of at most 64 inputs, 8 outputs */
#define RED_MAX_ROW 16384       /* longest row a fused last-dim reduction takes */
#define MAX_STORE 8

enum { EXT_FULL, EXT_SCALAR, EXT_BCAST };
enum { RED_NONE, RED_ALL, RED_ROWS };

/* An operand from outside the group. */
typedef struct {
    int kind;
    size_t esz;
    int slot;                   /* EXT_SCALAR, EXT_BCAST: the block buffer holding it */
    int nd;                     /* EXT_BCAST: the output's coalesced dims, its strides */
    int64_t size[LTC_MAX_DIMS], stride[LTC_MAX_DIMS];
} fused_ext;

/* One member: out = loop(values[src...], attrs...). */
typedef struct {
    int op;
    ltc_ew_loop loop;
    int n_src;
    int src[LTC_EW_MAX_IN];     /* value ids: < n_ext an external, n_ext + k member k */
    int n_attrs;
    double attrs[4];
    size_t esz;                 /* of its output */
    int slot;                   /* its block buffer, when it is not stored */
    int store;                  /* the step output it is written to, or -1 */
} fused_op;

struct ltc_fused {
    int n_ops, n_ext, n_out, n_slots;
    fused_op *ops;
    fused_ext *ext;
    int64_t numel;
    int64_t block;              /* elements per block (BLOCK, or numel when smaller) */
    size_t slot_bytes;
    /* A sum or mean of member red_src's value, fused after the members (its producers then
     * never write that value out unless someone else reads it): RED_ALL reduces every
     * element (a partial per block, added in block order), RED_ROWS each row of red_n
     * elements (the last dim; a block holds whole rows). Either way every sum is formed in
     * one fixed order, whatever the threads. The result, of the value's float dtype, is
     * step output red_store. */
    int red_kind, red_src, red_store;
    bool red_mean;
    int64_t red_n;
    ltc_dtype red_dt;
    int pre_op;                 /* >= 0: the group runs as the epilogue of a step of this op
                                 * (ltc_cpu_plan_epilogues); -1 */
};

void ltc_cpu_fused_free(ltc_fused *f) {
    if (!f) return;
    free(f->ops);
    free(f->ext);
    free(f);
}

char *ltc_cpu_fused_text(const ltc_fused *f, char *buf, size_t n) {
    size_t len = (size_t)snprintf(buf, n, "%s%sfused(", f->pre_op >= 0 ? ltc_op_name(f->pre_op) : "",
                                  f->pre_op >= 0 ? " + " : "");
    for (int k = 0; k < f->n_ops && len < n; k++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", k ? ", " : "", ltc_op_name(f->ops[k].op));
    if (f->red_kind && len < n)
        len += (size_t)snprintf(buf + len, n - len, " -> %s", f->red_mean ? "mean" : "sum");
    if (len < n) snprintf(buf + len, n - len, ")");
    return buf;
}

/* ---- running ------------------------------------------------------------------------------ */

static _Thread_local char *tls_scratch;
static _Thread_local size_t tls_size;

/* This thread's scratch of at least `need` bytes (kept: a steady state allocates nothing). */
static char *scratch(size_t need) {
    if (tls_size < need) {
        free(tls_scratch);
        tls_size = 0;
        need = (need + 4095) & ~(size_t)4095;
        if (!(tls_scratch = aligned_alloc(64, need))) return NULL;
        tls_size = need;
    }
    return tls_scratch;
}

/* n copies of the element at src (esz bytes) into dst: the first one, then the copies made
 * so far copied after them, doubling (a few memcpy calls for a block of 2048: the element
 * by element loop took ~2.5 us of an MLP step's 5 fused scalars). */
static void fill(char *dst, const void *src, size_t esz, int64_t n) {
    if (n <= 0) return;
    memcpy(dst, src, esz);
    size_t have = esz, total = (size_t)n * esz;
    while (have < total) {
        size_t m = total - have < have ? total - have : have;
        memcpy(dst + have, dst, m);
        have += m;
    }
}

/* Copies elements [lo, lo + n) of a broadcast operand, in the output's row-major order. */
static void gather(const fused_ext *e, const char *src, int64_t lo, int64_t n, char *dst) {
    int64_t idx[LTC_MAX_DIMS], off = 0, rest = lo;
    for (int d = e->nd - 1; d >= 0; d--) {
        idx[d] = rest % e->size[d];
        rest /= e->size[d];
        off += idx[d] * e->stride[d];
    }
    int last = e->nd - 1;
    int64_t inner = e->size[last], is = e->stride[last];
    size_t es = e->esz;
    while (n > 0) {
        int64_t run = inner - idx[last] < n ? inner - idx[last] : n;
        const char *s = src + off * (int64_t)es;
        if (is == 1) {
            memcpy(dst, s, (size_t)run * es);
        } else if (is == 0) {
            fill(dst, s, es, run);
        } else {
            for (int64_t i = 0; i < run; i++) memcpy(dst + i * (int64_t)es, s + i * is * (int64_t)es, es);
        }
        dst += run * (int64_t)es;
        n -= run;
        idx[last] += run;
        off += run * is;
        for (int d = last; d > 0 && idx[d] == e->size[d]; d--) { /* carry */
            off -= idx[d] * e->stride[d];
            idx[d] = 0;
            idx[d - 1]++;
            off += e->stride[d - 1];
        }
    }
}

typedef struct {
    const ltc_fused *f;
    const void *const *in;
    void *const *out;
    double *part;               /* RED_ALL: each block's partial sum */
    atomic_bool failed;
} run_ctx;

/* The sum of n values (float or double) in double, as eight interleaved partial sums (one
 * AVX-512 register of them where the CPU has it: the clones add in the same order). */
LTC_EW_CLONES static double sum_run(const void *x, ltc_dtype dt, int64_t n) {
    double s[8] = {0};
    int64_t j = 0;
    if (dt == LTC_F32) {
        const float *v = x;
        for (; j + 8 <= n; j += 8)
            for (int u = 0; u < 8; u++) s[u] += v[j + u];
        for (; j < n; j++) s[0] += v[j];
    } else {
        const double *v = x;
        for (; j + 8 <= n; j += 8)
            for (int u = 0; u < 8; u++) s[u] += v[j + u];
        for (; j < n; j++) s[0] += v[j];
    }
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

static void put_val(void *y, ltc_dtype dt, int64_t i, double v) {
    if (dt == LTC_F32) ((float *)y)[i] = (float)v;
    else ((double *)y)[i] = v;
}

/* The fused reduction's share of block b (elements [lo, lo + n)), whose value is at x. */
static void reduce_block(const run_ctx *c, const void *x, int64_t b, int64_t lo, int64_t n) {
    const ltc_fused *f = c->f;
    if (f->red_kind == RED_ALL) {
        c->part[b] = sum_run(x, f->red_dt, n);
        return;
    }
    size_t es = ltc_dtype_size(f->red_dt);
    for (int64_t r = 0; r < n / f->red_n; r++) {
        double s = sum_run((const char *)x + r * f->red_n * (int64_t)es, f->red_dt, f->red_n);
        put_val(c->out[f->red_store], f->red_dt, lo / f->red_n + r,
                f->red_mean ? s / (double)f->red_n : s);
    }
}

static const int64_t ones[LTC_EW_MAX_IN + 4] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

/* Evaluates elements [lo, hi) of the group on this thread, in blocks of f->block from lo (a
 * multiple of f->block when the group reduces); false when out of memory. */
static bool eval(const run_ctx *c, int64_t lo, int64_t hi) {
    const ltc_fused *f = c->f;
    size_t nv = (size_t)(f->n_ext + f->n_ops);
    char *s = scratch(f->slot_bytes * (size_t)f->n_slots + nv * sizeof(void *));
    if (!s) return false;
    const void **vals = (const void **)(s + f->slot_bytes * (size_t)f->n_slots);
    for (int e = 0; e < f->n_ext; e++) { /* scalars: one block of copies, once */
        const fused_ext *x = &f->ext[e];
        if (x->kind != EXT_SCALAR) continue;
        char *d = s + f->slot_bytes * (size_t)x->slot;
        fill(d, c->in[e], x->esz, f->block);
        vals[e] = d;
    }
    for (; lo < hi; lo += f->block) {
        int64_t n = hi - lo < f->block ? hi - lo : f->block;
        for (int e = 0; e < f->n_ext; e++) {
            const fused_ext *x = &f->ext[e];
            if (x->kind == EXT_FULL) {
                vals[e] = (const char *)c->in[e] + lo * (int64_t)x->esz;
            } else if (x->kind == EXT_BCAST) {
                char *d = s + f->slot_bytes * (size_t)x->slot;
                gather(x, c->in[e], lo, n, d);
                vals[e] = d;
            }
        }
        for (int k = 0; k < f->n_ops; k++) {
            const fused_op *o = &f->ops[k];
            const void *in[LTC_EW_MAX_IN + 4];
            for (int j = 0; j < o->n_src; j++) in[j] = vals[o->src[j]];
            for (int j = 0; j < o->n_attrs; j++) in[o->n_src + j] = &o->attrs[j];
            void *out = o->store >= 0 ? (char *)c->out[o->store] + lo * (int64_t)o->esz
                                      : s + f->slot_bytes * (size_t)o->slot;
            o->loop(n, out, in, ones);
            vals[f->n_ext + k] = out;
        }
        if (f->red_kind) reduce_block(c, vals[f->n_ext + f->red_src], lo / f->block, lo, n);
    }
    return true;
}

/* Evaluates blocks [blo, bhi) of the group on this thread. */
static void run_blocks(void *ctxp, int64_t blo, int64_t bhi, int tid) {
    (void)tid;
    run_ctx *c = ctxp;
    int64_t hi = bhi * c->f->block;
    if (!eval(c, blo * c->f->block, hi < c->f->numel ? hi : c->f->numel)) atomic_store(&c->failed, true);
}

bool ltc_cpu_fused_run_range(const ltc_fused *f, const void *const *in, void *const *out,
                             int64_t lo, int64_t hi) {
    run_ctx c = {.f = f, .in = in, .out = out};
    return eval(&c, lo, hi);
}

bool ltc_cpu_fused_reads_whole(const ltc_fused *f, int k) {
    return !f->red_kind && f->pre_op < 0 && k >= 0 && k < f->n_ext && f->ext[k].kind == EXT_FULL;
}

void ltc_cpu_fused_set_pre(ltc_fused *f, int op) { f->pre_op = op; }

/* Blocks per chunk handed to a thread: blocks of whole rows are larger, so a chunk keeps
 * about as many elements. */
static int64_t chunk_blocks(const ltc_fused *f) {
    int64_t grain = PAR_GRAIN * BLOCK / f->block;
    return grain < 1 ? 1 : grain;
}

bool ltc_cpu_fused_batchable(const ltc_fused *f) {
    int64_t blocks = (f->numel + f->block - 1) / f->block;
    return !f->red_kind && f->pre_op < 0 && blocks < LTC_PAR_MIN_CHUNKS * chunk_blocks(f);
}

int64_t ltc_cpu_fused_numel(const ltc_fused *f, int64_t *block) {
    *block = f->block;
    return f->numel;
}

ltc_status ltc_cpu_fused_kernel(const ltc_kernel_args *a) {
    const ltc_fused *f = a->ctx;
    run_ctx c = {.f = f, .in = a->in, .out = a->out};
    int64_t blocks = (f->numel + f->block - 1) / f->block;
    if (f->red_kind == RED_ALL && !(c.part = malloc(sizeof(double) * (size_t)blocks)))
        return ltc_errorf(LTC_ERR_NOMEM, "fused elementwise step: out of memory for partial sums");
    int64_t grain = chunk_blocks(f);
    /* A group of k members makes k passes over each block: with less than 4 chunks of
     * elements but 4 of work (k times smaller), the threads may pay (AdamW's update of a
     * [512, 128] weight, 12 members over 64K elements, memory-bound: 0.22 ms on one thread,
     * 0.15 on two free cores, more than one when the other core is busy), so the way is
     * timed as it runs (threads.h), keyed by the group. Either way, the same bits. */
    int64_t wgrain = grain / (f->n_ops > 1 ? f->n_ops : 1);
    if (wgrain < 1) wgrain = 1;
    ltc_cpu_split_t sp;
    bool timed = blocks < LTC_PAR_MIN_CHUNKS * grain && blocks >= LTC_PAR_MIN_CHUNKS * wgrain &&
                 ltc_cpu_threads() > 1;
    if (blocks >= LTC_PAR_MIN_CHUNKS * grain)
        ltc_cpu_parallel_for(blocks, grain, run_blocks, &c);
    else if (timed && ltc_cpu_split_begin(&sp, (uint64_t)(uintptr_t)f))
        ltc_cpu_parallel_for(blocks, wgrain, run_blocks, &c);
    else
        run_blocks(&c, 0, blocks, 0);
    if (timed) ltc_cpu_split_end(&sp);
    if (atomic_load(&c.failed)) {
        free(c.part);
        return ltc_errorf(LTC_ERR_NOMEM, "fused elementwise step: out of memory for block buffers");
    }
    if (f->red_kind == RED_ALL) {
        double s = 0;
        for (int64_t b = 0; b < blocks; b++) s += c.part[b];
        put_val(a->out[f->red_store], f->red_dt, 0, f->red_mean ? s / (double)f->numel : s);
        free(c.part);
    }
    return LTC_OK;
}

/* ---- building ------------------------------------------------------------------------------ */

/* The loop a step would run if it is a generated elementwise op on the CPU kernels, a
 * broadcast (a copy), or a dtype conversion (`to`: elementwise too, though hand-written, since its output dtype is
 * an attribute that the generated loops, dispatched on an input's dtype, cannot follow).
 * Fusing `to` keeps casts such as relu's backward mask (gt, to, mul) inside one step. */
static ltc_ew_loop step_loop(const plan_step *st) {
    if (st->fused || st->n_out != 1 || st->fn != ltc_cpu_kernels[st->op]) return NULL;
    if (st->op == LTC_OP_TO) {
        if (st->n_in != 1 || ltc_shape_numel(&st->out_shapes[0]) == 0) return NULL;
        return ltc_cpu_convert_loop(st->out_shapes[0].dtype, st->in_shapes[0].dtype);
    }
    /* broadcast_to / expand: a copy whose input is a broadcast operand of the group, so the
     * expanded tensor (a mean's gradient over its rows, say) is never written out when only
     * the group reads it */
    if (st->op == LTC_OP_BROADCAST_TO || st->op == LTC_OP_EXPAND) {
        if (st->n_in != 1 || ltc_shape_numel(&st->out_shapes[0]) == 0) return NULL;
        return ltc_cpu_convert_loop(st->out_shapes[0].dtype, st->in_shapes[0].dtype);
    }
    /* gelu and its backward: hand-written loops (gelu.c), fused as the generated ones are */
    if (st->op == LTC_OP_GELU || st->op == LTC_OP_GELU_BACKWARD) {
        ltc_dtype dt = st->out_shapes[0].dtype;
        for (int k = 0; k < st->n_in; k++)
            if (st->in_shapes[k].dtype != dt) return NULL;
        return ltc_shape_numel(&st->out_shapes[0]) ? ltc_cpu_gelu_loop(st->op, st->n_in, dt) : NULL;
    }
    const ltc_ew_info *info = &ltc_cpu_ew_info[st->op];
    if (info->dispatch >= st->n_in || st->n_in + info->n_attrs > LTC_EW_MAX_IN) return NULL;
    for (int j = 0; j < info->n_attrs; j++)
        if (info->attr[j] >= st->n_attrs) return NULL;
    ltc_dtype dt = st->in_shapes[info->dispatch].dtype;
    if ((int)dt < 0 || dt >= LTC_DTYPE_COUNT || ltc_shape_numel(&st->out_shapes[0]) == 0) return NULL;
    return info->loops[dt];
}

static bool same_dims(const ltc_shape *a, const ltc_shape *b) {
    if (a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->dims[d] != b->dims[d]) return false;
    return true;
}

/* Broadcast strides of operand shape `is` over output shape `os`, coalesced. */
static void bcast_dims(fused_ext *e, const ltc_shape *is, const ltc_shape *os) {
    int64_t cs[LTC_MAX_DIMS], acc = 1;
    for (int d = is->ndim - 1; d >= 0; d--) {
        cs[d] = acc;
        acc *= is->dims[d];
    }
    int nd = 0;
    for (int d = 0; d < os->ndim; d++) {
        if (os->dims[d] == 1) continue;
        int id = d - (os->ndim - is->ndim);
        int64_t st = (id < 0 || is->dims[id] == 1) ? 0 : cs[id];
        if (nd > 0 && e->stride[nd - 1] == st * os->dims[d]) {
            e->size[nd - 1] *= os->dims[d];
            e->stride[nd - 1] = st;
        } else {
            e->size[nd] = os->dims[d];
            e->stride[nd] = st;
            nd++;
        }
    }
    if (nd == 0) e->size[0] = 1, e->stride[0] = 0, nd = 1;
    e->nd = nd;
}

typedef struct {
    cpu_plan *p;
    int *group;       /* per step: its group, -1 if none */
    int *ext_of;      /* per buffer: scratch map to an external index, -1 */
    int *val_of;      /* per buffer: scratch map to a member index, -1 */
    uint8_t *in_sub;  /* per step: in the subset being built */
    int *n_readers;   /* per buffer: reads by all steps (a step reading it twice: 2) */
    int *sub_reads;   /* per buffer: scratch, reads by the subset */
    plan_step **emit; /* per step: the fused step to run at its place, or NULL */
    int red_step;     /* the reduction offered to the group being built, or -1 */
    bool red_taken;   /* a fused step of that group took it */
} builder;

/* How step st reduces, if it is a sum or mean the fused step can take: RED_ALL, RED_ROWS
 * (*n: the row) or RED_NONE. Float inputs only (integer sums are int64 and wrap). */
static int red_kind_of(const plan_step *st, int64_t *n) {
    if ((st->op != LTC_OP_SUM && st->op != LTC_OP_MEAN) || st->fused ||
        st->fn != ltc_cpu_kernels[st->op] || st->n_in != 1 || st->n_out != 1 || st->n_attrs < 1)
        return RED_NONE;
    const ltc_shape *is = &st->in_shapes[0];
    if ((is->dtype != LTC_F32 && is->dtype != LTC_F64) || st->out_shapes[0].dtype != is->dtype ||
        ltc_shape_numel(is) == 0)
        return RED_NONE;
    int64_t dim = st->attrs[0].i;
    if (dim == LTC_NONE) return RED_ALL;
    if (is->ndim < 1 || dim != is->ndim - 1 || is->dims[dim] > RED_MAX_ROW) return RED_NONE;
    *n = is->dims[dim];
    return RED_ROWS;
}

/* True if buffer b is read by a step outside the subset (sub_reads counts the reads from
 * inside) or is a plan output. */
static bool leaves(const builder *bd, int b) {
    return bd->p->bufs[b].kind == BUF_OUTPUT || bd->sub_reads[b] < bd->n_readers[b];
}

/* Builds the fused step of members m[0..n) (step indices, in order) into *out. Returns 1 on
 * success, 0 when it has too many inputs or outputs (the caller splits it), -1 when out of
 * memory. */
static int build_sub(builder *bd, const int *m, int n, plan_step *out) {
    cpu_plan *p = bd->p;
    const ltc_shape *os = &p->steps[m[0]].out_shapes[0];
    int n_ext = 0, n_store = 0, rc = -1, red_kind = RED_NONE;
    const plan_step *red = NULL; /* the offered reduction (see below) */
    int64_t red_n = 0;
    int ext_buf[MAX_EXT], store_buf[MAX_STORE];
    ltc_shape ext_shape[MAX_EXT]; /* as the members read it (a view's shape, say) */
    ltc_fused *f = calloc(1, sizeof *f);
    int *last = malloc(sizeof(int) * (size_t)(MAX_EXT + n));
    int *free_slots = malloc(sizeof(int) * (size_t)(MAX_EXT + n + 1)), n_free = 0, n_slots = 0;
    if (!f || !last || !free_slots || !(f->ops = calloc((size_t)n, sizeof *f->ops))) goto done;
    for (int i = 0; i < n; i++) {
        const plan_step *st = &p->steps[m[i]];
        bd->in_sub[m[i]] = 1;
        bd->val_of[st->out[0]] = i;
        for (int k = 0; k < st->n_in; k++) bd->sub_reads[st->in[k]]++;
    }
    /* the offered reduction, when it reduces a value of these members: its read is ours */
    red = bd->red_step >= 0 && !bd->red_taken ? &p->steps[bd->red_step] : NULL;
    red_kind = red ? red_kind_of(red, &red_n) : RED_NONE;
    if (red_kind && (bd->val_of[red->in[0]] < 0 ||
                     !same_dims(&red->in_shapes[0], &p->steps[m[bd->val_of[red->in[0]]]].out_shapes[0])))
        red_kind = RED_NONE;
    if (red_kind) bd->sub_reads[red->in[0]]++;
    /* externals, stored values */
    for (int i = 0; i < n; i++) {
        const plan_step *st = &p->steps[m[i]];
        for (int k = 0; k < st->n_in; k++) {
            int b = st->in[k];
            if (bd->val_of[b] >= 0) continue;
            if (bd->ext_of[b] >= 0 && same_dims(&ext_shape[bd->ext_of[b]], &st->in_shapes[k]))
                continue;
            if (bd->ext_of[b] >= 0) { rc = 0; goto done; } /* one buffer read as two shapes */
            if (n_ext == MAX_EXT) { rc = 0; goto done; }
            bd->ext_of[b] = n_ext;
            ext_shape[n_ext] = st->in_shapes[k];
            ext_buf[n_ext++] = b;
        }
        if (leaves(bd, st->out[0])) {
            if (n_store == MAX_STORE) { rc = 0; goto done; }
            f->ops[i].store = n_store;
            store_buf[n_store++] = st->out[0];
        } else {
            f->ops[i].store = -1;
        }
    }
    if (red_kind) { /* its result is one more output */
        if (n_store == MAX_STORE) { rc = 0; goto done; }
        f->red_kind = red_kind;
        f->red_src = bd->val_of[red->in[0]];
        f->red_store = n_store;
        f->red_mean = red->op == LTC_OP_MEAN;
        f->red_n = red_n;
        f->red_dt = red->in_shapes[0].dtype;
        store_buf[n_store++] = red->out[0];
    }
    if (!(f->ext = calloc((size_t)n_ext + 1, sizeof *f->ext))) goto done;
    f->n_ops = n, f->n_ext = n_ext, f->n_out = n_store;
    f->pre_op = -1;
    f->numel = ltc_shape_numel(os);
    f->block = f->numel < BLOCK ? f->numel : BLOCK;
    if (red_kind == RED_ROWS) { /* whole rows per block */
        f->block = red_n * (BLOCK / red_n > 1 ? BLOCK / red_n : 1);
        if (f->block > f->numel) f->block = f->numel;
    }
    /* slots: externals that need one keep it; members by liveness */
    for (int e = 0; e < n_ext; e++) {
        const ltc_shape *is = &ext_shape[e];
        fused_ext *x = &f->ext[e];
        int64_t nk = ltc_shape_numel(is);
        x->esz = ltc_dtype_size(is->dtype);
        x->kind = nk == f->numel ? EXT_FULL : nk == 1 ? EXT_SCALAR : EXT_BCAST;
        x->slot = x->kind == EXT_FULL ? -1 : n_slots++;
        if (x->kind == EXT_BCAST) bcast_dims(x, is, os);
    }
    for (int v = 0; v < n_ext + n; v++) last[v] = -1;
    for (int i = 0; i < n; i++) {
        const plan_step *st = &p->steps[m[i]];
        for (int k = 0; k < st->n_in; k++) {
            int b = st->in[k];
            int v = bd->val_of[b] >= 0 ? n_ext + bd->val_of[b] : bd->ext_of[b];
            last[v] = i;
        }
    }
    if (red_kind) last[n_ext + f->red_src] = n; /* read after the last member: never dies */
    for (int i = 0; i < n; i++) {
        const plan_step *st = &p->steps[m[i]];
        const ltc_ew_info *info = &ltc_cpu_ew_info[st->op];
        fused_op *o = &f->ops[i];
        o->op = st->op;
        o->loop = step_loop(st);
        o->n_src = st->n_in;
        o->esz = ltc_dtype_size(st->out_shapes[0].dtype);
        o->n_attrs = info->n_attrs;
        for (int j = 0; j < info->n_attrs; j++) {
            const ltc_attr *at = &st->attrs[info->attr[j]];
            o->attrs[j] = info->attr_float[j] ? at->f : (double)at->i;
        }
        /* A member value dying here frees its slot (once, however often it is read), after
         * this op's output has its own: the output may take over the slot of one dying
         * input of its element size (the loops run index by index), never another's. */
        int reuse = -1, dying[LTC_EW_MAX_IN], n_dying = 0;
        for (int k = 0; k < st->n_in; k++) {
            int b = st->in[k];
            int v = bd->val_of[b] >= 0 ? n_ext + bd->val_of[b] : bd->ext_of[b];
            o->src[k] = v;
            if (v >= n_ext && last[v] == i) {
                const fused_op *src = &f->ops[v - n_ext];
                last[v] = -2;
                if (src->store >= 0) continue;
                if (reuse < 0 && src->esz == o->esz && o->store < 0) reuse = src->slot;
                else dying[n_dying++] = src->slot;
            }
        }
        if (o->store >= 0) o->slot = -1;
        else o->slot = reuse >= 0 ? reuse : n_free ? free_slots[--n_free] : n_slots++;
        for (int k = 0; k < n_dying; k++) free_slots[n_free++] = dying[k];
    }
    f->n_slots = n_slots;
    /* Many slots (AdamW's update: 11, its scalars' among them) at BLOCK elements each spill
     * out of L1 between the members' passes: such a group takes smaller blocks, down to
     * SLOT_MIN_BLOCK, so that its slots stay within SLOT_BUDGET elements (the update of a
     * [512, 128] weight on one thread: 94 us in blocks of 512, 106 in blocks of 2048, 118
     * in blocks of 256). A group with a reduction keeps its blocks (its partial sums). */
    if (!red_kind)
        while (f->block > SLOT_MIN_BLOCK && f->block * n_slots > SLOT_BUDGET) f->block /= 2;
    f->slot_bytes = ((size_t)f->block * 8 + 63) & ~(size_t)63;
    /* the step */
    memset(out, 0, sizeof *out);
    out->op = p->steps[m[n - 1]].op;
    out->node = p->steps[m[n - 1]].node;
    out->fn = ltc_cpu_fused_kernel;
    out->n_in = n_ext;
    out->n_out = n_store;
    out->in = malloc(sizeof(int) * (size_t)(n_ext + 1));
    out->out = malloc(sizeof(int) * (size_t)(n_store + 1));
    out->in_shapes = malloc(sizeof(ltc_shape) * (size_t)(n_ext + 1));
    out->out_shapes = malloc(sizeof(ltc_shape) * (size_t)(n_store + 1));
    out->attrs = malloc(sizeof(ltc_attr));
    if (!out->in || !out->out || !out->in_shapes || !out->out_shapes || !out->attrs) {
        free(out->in), free(out->out), free(out->in_shapes), free(out->out_shapes), free(out->attrs);
        memset(out, 0, sizeof *out);
        goto done;
    }
    for (int e = 0; e < n_ext; e++) out->in[e] = ext_buf[e], out->in_shapes[e] = ext_shape[e];
    for (int k = 0; k < n_store; k++)
        out->out[k] = store_buf[k], out->out_shapes[k] = p->bufs[store_buf[k]].shape;
    out->fused = f;
    f = NULL;
    rc = 1;
    if (red_kind) bd->red_taken = true;
done:
    if (red_kind) bd->sub_reads[red->in[0]] = 0;
    for (int i = 0; i < n; i++) {
        const plan_step *st = &p->steps[m[i]];
        bd->in_sub[m[i]] = 0;
        bd->val_of[st->out[0]] = -1;
        for (int k = 0; k < st->n_in; k++) bd->ext_of[st->in[k]] = -1, bd->sub_reads[st->in[k]] = 0;
    }
    free(free_slots);
    free(last);
    ltc_cpu_fused_free(f);
    return rc;
}

/* Builds members m[0..n), halving it while it has too many inputs or outputs. */
static bool build_group(builder *bd, const int *m, int n) {
    plan_step *st = malloc(sizeof *st);
    if (!st) return false;
    int rc = build_sub(bd, m, n, st);
    if (rc == 1) {
        bd->emit[m[n - 1]] = st;
        return true;
    }
    free(st);
    if (rc < 0) return false;
    if (n == 1) { /* a step reading one buffer under two shapes: it keeps its kernel */
        bd->group[m[0]] = -1;
        return true;
    }
    return build_group(bd, m, n / 2) && build_group(bd, m + n / 2, n - n / 2);
}

static int find(int *parent, int g) {
    if (g < 0) return g;
    while (parent[g] != g) g = parent[g] = parent[parent[g]];
    return g;
}

bool ltc_cpu_plan_fuse(cpu_plan *p) {
    int ns = p->n_steps, nb = p->n_bufs;
    bool ok = false;
    builder bd = {.p = p, .red_step = -1};
    int *buf_group = malloc(sizeof(int) * (size_t)(nb + 1));
    int *outside = malloc(sizeof(int) * (size_t)(ns + 1)); /* per group: first outside reader */
    int *members = malloc(sizeof(int) * (size_t)(ns + 1));
    int *gstart = malloc(sizeof(int) * (size_t)(ns + 2));
    int *parent = malloc(sizeof(int) * (size_t)(ns + 1)); /* union-find over groups */
    bd.group = malloc(sizeof(int) * (size_t)(ns + 1));
    bd.ext_of = malloc(sizeof(int) * (size_t)(nb + 1));
    bd.val_of = malloc(sizeof(int) * (size_t)(nb + 1));
    bd.in_sub = calloc((size_t)ns + 1, 1);
    bd.n_readers = calloc((size_t)nb + 1, sizeof(int));
    bd.sub_reads = calloc((size_t)nb + 1, sizeof(int));
    bd.emit = calloc((size_t)ns + 1, sizeof *bd.emit);
    int *red_for = malloc(sizeof(int) * (size_t)(ns + 1)); /* per group: its reduction, -1 */
    uint8_t *taken = calloc((size_t)ns + 1, 1); /* per step: a reduction a fused step took */
    uint8_t *gemm_made = calloc((size_t)nb + 1, 1); /* per buffer: a GEMM epilogue's input */
    plan_step *steps = NULL;
    if (!buf_group || !outside || !members || !gstart || !parent || !bd.group || !bd.ext_of || !bd.val_of ||
        !bd.in_sub || !bd.emit || !bd.n_readers || !bd.sub_reads || !red_for || !taken || !gemm_made)
        goto done;
    for (int b = 0; b < nb; b++) buf_group[b] = bd.ext_of[b] = bd.val_of[b] = -1;
    for (int s = 0; s < ns; s++) {
        const plan_step *st = &p->steps[s];
        for (int k = 0; k < st->n_in; k++) bd.n_readers[st->in[k]]++;
        gemm_made[st->out[0]] = ltc_cpu_epilogue_op(st->op);
    }

    /* groups: a fusable step joins the group of one of its inputs when the shapes match and
     * nothing outside that group has read the group's values yet (the fused step runs at
     * its last member's place, so every outside reader must come after it) */
    int n_groups = 0;
    for (int s = 0; s < ns; s++) {
        plan_step *st = &p->steps[s];
        bd.group[s] = -1;
        if (step_loop(st)) {
            /* joins (and so merges) every open group of the same shape it reads from */
            int g = -1;
            for (int k = 0; k < st->n_in; k++) {
                int cg = find(parent, buf_group[st->in[k]]);
                if (cg < 0 || cg == g || outside[cg] != INT_MAX ||
                    !same_dims(&p->steps[members[cg]].out_shapes[0], &st->out_shapes[0]))
                    continue;
                if (g < 0) g = cg;
                else parent[cg] = g;
            }
            if (g < 0) {
                g = n_groups++;
                parent[g] = g;
                outside[g] = INT_MAX;
                members[g] = s; /* first member, for the shape */
            }
            bd.group[s] = g;
            buf_group[st->out[0]] = g;
        }
        for (int k = 0; k < st->n_in; k++) {
            int cg = find(parent, buf_group[st->in[k]]);
            if (cg >= 0 && cg != bd.group[s] && outside[cg] == INT_MAX) outside[cg] = s;
        }
    }
    for (int s = 0; s < ns; s++) /* group ids: the roots of the merged groups */
        if (bd.group[s] >= 0) bd.group[s] = find(parent, bd.group[s]);
    /* members of each group, in step order (counting sort) */
    for (int g = 0; g <= n_groups; g++) gstart[g] = 0;
    for (int s = 0; s < ns; s++)
        if (bd.group[s] >= 0) gstart[bd.group[s] + 1]++;
    for (int g = 0; g < n_groups; g++) gstart[g + 1] += gstart[g];
    int *fill = outside; /* reused as insertion cursors */
    for (int g = 0; g < n_groups; g++) fill[g] = gstart[g];
    for (int s = 0; s < ns; s++)
        if (bd.group[s] >= 0) members[fill[bd.group[s]]++] = s;
    /* reductions: a sum or mean of a group's value, after the group's last member, is
     * offered to the group (one per group, the first) */
    for (int g = 0; g < n_groups; g++) red_for[g] = -1;
    for (int s = 0; s < ns; s++) {
        int64_t rn;
        if (bd.group[s] >= 0 || !red_kind_of(&p->steps[s], &rn)) continue;
        int g = find(parent, buf_group[p->steps[s].in[0]]);
        if (g < 0 || red_for[g] >= 0 || gstart[g + 1] == gstart[g] ||
            members[gstart[g + 1] - 1] > s)
            continue;
        red_for[g] = s;
    }
    for (int g = 0; g < n_groups; g++) {
        int n = gstart[g + 1] - gstart[g];
        const int *m = &members[gstart[g]];
        if (n == 0) continue; /* merged into another group */
        /* a lone small step gains nothing (unless a reduction joins it, or it may run as the
         * epilogue of the GEMM whose result it reads: ltc_cpu_plan_epilogues): it keeps its
         * kernel */
        bool epi = false;
        for (int k = 0; k < p->steps[m[0]].n_in; k++) epi |= gemm_made[p->steps[m[0]].in[k]];
        if (n == 1 && red_for[g] < 0 && !epi &&
            ltc_shape_numel(&p->steps[m[0]].out_shapes[0]) < BLOCK * PAR_MIN_BLOCKS) {
            bd.group[m[0]] = -1;
            continue;
        }
        bd.red_step = red_for[g];
        bd.red_taken = false;
        if (!build_group(&bd, m, n)) goto done;
        if (bd.red_taken) taken[red_for[g]] = 1;
    }

    /* the new step list: fused steps at their last member's place */
    if (!(steps = calloc((size_t)ns + 1, sizeof *steps))) goto done;
    int n = 0;
    for (int s = 0; s < ns; s++) {
        if (bd.emit[s]) steps[n++] = *bd.emit[s];
        else if (bd.group[s] < 0 && !taken[s]) steps[n++] = p->steps[s];
    }
    for (int s = 0; s < ns; s++)
        if (bd.group[s] >= 0 || taken[s]) ltc_cpu_plan_step_clear(&p->steps[s]);
    free(p->steps);
    p->steps = steps;
    p->n_steps = n;
    steps = NULL;
    ltc_cpu_plan_count_uses(p);
    ok = true;
done:
    if (!ok && bd.emit)
        for (int s = 0; s < ns; s++)
            if (bd.emit[s]) ltc_cpu_plan_step_clear(bd.emit[s]);
    if (bd.emit)
        for (int s = 0; s < ns; s++) free(bd.emit[s]);
    free(steps);
    free(buf_group);
    free(outside);
    free(members);
    free(gstart);
    free(parent);
    free(bd.group);
    free(bd.ext_of);
    free(bd.val_of);
    free(bd.in_sub);
    free(bd.n_readers);
    free(bd.sub_reads);
    free(bd.emit);
    free(red_for);
    free(taken);
    free(gemm_made);
    return ok;
}
