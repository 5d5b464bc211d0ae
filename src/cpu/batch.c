/* batch.c - horizontal fusion of the CPU plan: fused elementwise steps that only make the
 * computation's results and are too small to share out among the threads on their own
 * become one step (fuse.h, ltc_cpu_plan_batch). An optimizer's update of each parameter is
 * such a step: tiny_gpt's AdamW made 53 of them, 8K to 64K elements each, run one after the
 * other on one thread or split one by one (each split waking the workers); batched, the
 * threads share the blocks of all of them, as PyTorch's multi-tensor ("foreach") updates. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuse.h"

typedef struct {
    ltc_fused *f;         /* owned */
    int in_off, out_off;  /* its first input and output among the step's */
    int64_t numel, block; /* its elements, and per block */
    int64_t first;        /* its first block among the batch's */
} batch_member;

struct ltc_cpu_batch {
    int n;
    batch_member *m;
    int64_t blocks; /* of all members */
};

void ltc_cpu_batch_free(ltc_cpu_batch *b) {
    if (!b) return;
    for (int i = 0; i < b->n; i++) ltc_cpu_fused_free(b->m[i].f);
    free(b->m);
    free(b);
}

char *ltc_cpu_batch_text(const ltc_cpu_batch *b, char *buf, size_t n) {
    char f[64];
    snprintf(buf, n, "batch of %d: %s, ...", b->n, ltc_cpu_fused_text(b->m[0].f, f, sizeof f));
    return buf;
}

/* ---- running ------------------------------------------------------------------------------ */

typedef struct {
    const ltc_cpu_batch *b;
    const ltc_kernel_args *a;
    atomic_bool failed;
} batch_run;

/* Blocks [lo, hi) of the batch: the members' blocks in member order. */
static void run_blocks(void *p, int64_t lo, int64_t hi, int tid) {
    (void)tid;
    batch_run *r = p;
    const ltc_cpu_batch *b = r->b;
    int i = 0, j = b->n - 1; /* the member holding block lo: the last with first <= lo */
    while (i < j) {
        int mid = (i + j + 1) / 2;
        if (b->m[mid].first <= lo) i = mid;
        else j = mid - 1;
    }
    for (; lo < hi; i++) {
        const batch_member *m = &b->m[i];
        int64_t end = m->first + (m->numel + m->block - 1) / m->block;
        int64_t stop = hi < end ? hi : end;
        int64_t e1 = (stop - m->first) * m->block;
        if (!ltc_cpu_fused_run_range(m->f, r->a->in + m->in_off, r->a->out + m->out_off,
                                     (lo - m->first) * m->block, e1 < m->numel ? e1 : m->numel))
            atomic_store(&r->failed, true);
        lo = stop;
    }
}

ltc_status ltc_cpu_batch_kernel(const ltc_kernel_args *a) {
    const ltc_cpu_batch *b = a->ctx;
    batch_run r = {.b = b, .a = a};
    /* chunks of about an eighth of the blocks per thread: members differ in size and in
     * members per block, and the chunks are handed out as threads come free */
    int threads = ltc_cpu_threads();
    int64_t grain = b->blocks / (8 * (threads > 1 ? threads : 1));
    if (grain < 1) grain = 1;
    ltc_cpu_split_t sp;
    bool timed = threads > 1;
    if (timed && ltc_cpu_split_begin(&sp, (uint64_t)(uintptr_t)b))
        ltc_cpu_parallel_for(b->blocks, grain, run_blocks, &r);
    else
        run_blocks(&r, 0, b->blocks, 0);
    if (timed) ltc_cpu_split_end(&sp);
    if (atomic_load(&r.failed))
        return ltc_errorf(LTC_ERR_NOMEM, "fused elementwise step: out of memory for block buffers");
    return LTC_OK;
}

/* ---- planning ----------------------------------------------------------------------------- */

/* Whether step s may join a batch: a fused step without a reduction or a GEMM before it, that
 * the threads would not share out on its own, and whose values are all results. */
static bool candidate(const cpu_plan *p, const plan_step *s) {
    if (s->op < 0 || !s->fused || s->fn != ltc_cpu_fused_kernel ||
        !ltc_cpu_fused_batchable(s->fused))
        return false;
    for (int k = 0; k < s->n_out; k++)
        if (p->bufs[s->out[k]].kind != BUF_OUTPUT) return false;
    return true;
}

/* a ++ b, of n and m elements of size es, into *a (reallocated). */
static bool append(void *a, int n, const void *b, int m, size_t es) {
    char *r = realloc(*(void **)a, es * (size_t)(n + m) + 1);
    if (!r) return false;
    if (m) memcpy(r + es * (size_t)n, b, es * (size_t)m);
    *(void **)a = r;
    return true;
}

/* The steps in list[0..n) become one batch step, in place of the last of them (each reads
 * only what was made before its own place, so before the last's; nothing reads what they
 * make before a step after the last: ltc_cpu_plan_batch closes a batch there). */
static bool emit(cpu_plan *p, const int *list, int n) {
    if (n < 2) return true;
    ltc_cpu_batch *b = calloc(1, sizeof *b);
    plan_step t = {.op = p->steps[list[n - 1]].op, .node = p->steps[list[n - 1]].node,
                   .fn = ltc_cpu_batch_kernel};
    if (!b || !(b->m = calloc((size_t)n, sizeof *b->m))) goto nomem;
    for (int i = 0; i < n; i++) {
        plan_step *s = &p->steps[list[i]];
        batch_member *m = &b->m[i];
        m->in_off = t.n_in, m->out_off = t.n_out;
        m->numel = ltc_cpu_fused_numel(s->fused, &m->block);
        m->first = b->blocks;
        if (!append(&t.in, t.n_in, s->in, s->n_in, sizeof(int)) ||
            !append(&t.in_shapes, t.n_in, s->in_shapes, s->n_in, sizeof(ltc_shape)) ||
            !append(&t.out, t.n_out, s->out, s->n_out, sizeof(int)) ||
            !append(&t.out_shapes, t.n_out, s->out_shapes, s->n_out, sizeof(ltc_shape)))
            goto nomem;
        t.n_in += s->n_in, t.n_out += s->n_out;
        b->blocks += (m->numel + m->block - 1) / m->block;
    }
    for (int i = 0; i < n; i++) { /* the members' groups move into the batch */
        plan_step *s = &p->steps[list[i]];
        b->m[i].f = s->fused, s->fused = NULL;
        b->n++;
        ltc_cpu_plan_step_clear(s);
        s->op = -1; /* dropped by ltc_cpu_plan_batch */
    }
    t.batch = b;
    p->steps[list[n - 1]] = t;
    return true;
nomem:
    free(t.in), free(t.in_shapes), free(t.out), free(t.out_shapes);
    ltc_cpu_batch_free(b);
    return false;
}

bool ltc_cpu_plan_batch(cpu_plan *p) {
    int *list = malloc(sizeof(int) * (size_t)(p->n_steps + 1));
    bool *made = calloc((size_t)p->n_bufs + 1, 1); /* made by a step of the open batch */
    bool ok = list && made;
    int n = 0;
    for (int i = 0; i < p->n_steps && ok; i++) {
        plan_step *s = &p->steps[i];
        bool reads = false;
        for (int k = 0; k < s->n_in; k++) reads |= made[s->in[k]];
        if (reads) { /* the open batch runs before this step */
            for (int j = 0; j < n; j++) {
                const plan_step *m = &p->steps[list[j]];
                for (int k = 0; k < m->n_out; k++) made[m->out[k]] = false;
            }
            ok = emit(p, list, n);
            n = 0;
        }
        if (ok && candidate(p, s)) {
            list[n++] = i;
            for (int k = 0; k < s->n_out; k++) made[s->out[k]] = true;
        }
    }
    if (ok) ok = emit(p, list, n);
    int kept = 0;
    for (int i = 0; i < p->n_steps; i++)
        if (p->steps[i].op >= 0) p->steps[kept++] = p->steps[i];
    p->n_steps = kept;
    free(list);
    free(made);
    ltc_cpu_plan_count_uses(p);
    return ok;
}
