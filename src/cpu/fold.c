/* fold.c - plan rewrites before fusion: copies that views would make are elided, and
 * transposes feeding a matmul fold into the cblas_*gemm call (see fold.h). */
#include "fold.h"
#include "threads.h"

#include <stdlib.h>
#include <string.h>

static bool is_cpu(const plan_step *s, int op) {
    return s->op == op && !s->fused && s->fn == ltc_cpu_kernels[op];
}

/* A step whose output is its input's bytes under another shape. */
static bool is_copy_view(const plan_step *s) {
    return s->n_in == 1 && s->n_out == 1 &&
           (is_cpu(s, LTC_OP_VIEW) || is_cpu(s, LTC_OP_RESHAPE)) &&
           s->in_shapes[0].dtype == s->out_shapes[0].dtype;
}

/* A step that swaps the two dims of a 2-d tensor. */
static bool is_transpose2d(const plan_step *s) {
    if (s->n_in != 1 || s->in_shapes[0].ndim != 2) return false;
    if (is_cpu(s, LTC_OP_T)) return true;
    return is_cpu(s, LTC_OP_TRANSPOSE) && s->n_attrs >= 2 && s->attrs[0].i != s->attrs[1].i;
}

/* A matmul of two 2-d float operands, plain or already folded (attrs[0].ints = flags). */
static bool is_matmul2d(const plan_step *s) {
    bool plain = is_cpu(s, LTC_OP_MATMUL) && s->n_attrs == 0;
    bool folded = s->op == LTC_OP_MATMUL && !s->fused && s->fn == ltc_cpu_kernel_matmul_folded;
    return (plain || folded) && s->n_in == 2 && s->n_out == 1 && s->in_shapes[0].ndim == 2 &&
           s->in_shapes[1].ndim == 2 &&
           (s->out_shapes[0].dtype == LTC_F32 || s->out_shapes[0].dtype == LTC_F64);
}

/* Makes s a folded matmul with transpose flags tr (both 0 keeps the folded kernel: the
 * same gemm). False when out of memory (s unchanged). */
static bool set_matmul_flags(plan_step *s, const int64_t tr[2]) {
    ltc_attr *at = malloc(sizeof *at);
    if (!at) return false;
    *at = ltc_attr_ints(tr, 2);
    free(s->attrs);
    s->attrs = at;
    s->n_attrs = 1;
    s->fn = ltc_cpu_kernel_matmul_folded;
    return true;
}

/* A transpose of a matmul's product that nothing else reads: (A B)^T = B^T A^T, so the
 * matmul writes the transposed product itself (operands swapped, flags toggled) into the
 * transpose's output, and the transpose step goes. Runs before the operands are folded.
 * Returns whether it changed p; *failed on allocation failure (p stays runnable). */
static bool fold_transposed_products(cpu_plan *p, int *producer, const int *readers,
                                     bool *failed) {
    bool changed = false;
    for (int s = 0; s < p->n_steps; s++) {
        plan_step *st = &p->steps[s];
        if (!is_transpose2d(st)) continue;
        int b = st->in[0], ps = producer[b];
        if (ps < 0 || readers[b] != 1 || p->bufs[b].kind == BUF_OUTPUT) continue;
        plan_step *mm = &p->steps[ps];
        if (!is_matmul2d(mm)) continue;
        bool was = mm->n_attrs == 1;
        int64_t tr[2] = {!(was && mm->attrs[0].ints[1]), !(was && mm->attrs[0].ints[0])};
        int in0 = mm->in[0];
        ltc_shape s0 = mm->in_shapes[0];
        if (!set_matmul_flags(mm, tr)) {
            *failed = true;
            return changed;
        }
        mm->in[0] = mm->in[1], mm->in_shapes[0] = mm->in_shapes[1];
        mm->in[1] = in0, mm->in_shapes[1] = s0;
        mm->out[0] = st->out[0];
        mm->out_shapes[0] = st->out_shapes[0];
        producer[st->out[0]] = ps; /* a transpose of this one folds in turn */
        ltc_cpu_plan_step_clear(st);
        st->fn = NULL; /* gone: dropped below, once `producer` is no longer read */
        changed = true;
    }
    int n = 0;
    for (int s = 0; changed && s < p->n_steps; s++)
        if (p->steps[s].fn) p->steps[n++] = p->steps[s];
    if (changed) p->n_steps = n;
    return changed;
}

/* matmul of two 2-d float operands, each read transposed when attrs[0].ints[k] is 1 (the
 * in_shapes are the stored, untransposed shapes). */
ltc_status ltc_cpu_kernel_matmul_folded(const ltc_kernel_args *a) {
    const ltc_shape *so = &a->out_shapes[0];
    bool ta = a->attrs[0].ints[0], tb = a->attrs[0].ints[1];
    int64_t m = so->dims[0], n = so->dims[1];
    int64_t k = ta ? a->in_shapes[0].dims[0] : a->in_shapes[0].dims[1];
    int64_t lda = a->in_shapes[0].dims[1], ldb = a->in_shapes[1].dims[1];
    if (m * n == 0) return LTC_OK;
    if (k == 0) {
        memset(a->out[0], 0, ltc_shape_nbytes(so));
        return LTC_OK;
    }
    ltc_cpu_gemm(so->dtype, ta, tb, m, n, k, 1.0, a->in[0], lda, a->in[1], ldb, 0.0, a->out[0], n);
    return LTC_OK;
}

/* A cross_entropy step and a cross_entropy_backward step of the same logits, target and
 * reduction: the backward computes each row's max and exp sum, which are all the loss
 * needs, so it writes the loss too (as its second output) and the forward step goes. The
 * pair is joined at the backward's place when nothing between the two reads the loss (a
 * forward after the backward, the usual order, always qualifies). Rows of more than
 * LTC_CPU_CE_ROW_MAX classes keep their own forward (it sums those rows in another order).
 * Returns whether it changed p; false on allocation failure leaves p as it was. */
static bool pair_cross_entropy(cpu_plan *p, bool *failed) {
    bool changed = false;
    for (int b = 0; b < p->n_steps; b++) {
        plan_step *bw = &p->steps[b];
        if (!is_cpu(bw, LTC_OP_CROSS_ENTROPY_BACKWARD) || bw->n_out != 1 || bw->n_in != 3)
            continue;
        const ltc_shape *xs = &bw->in_shapes[1];
        if (xs->ndim < 1 || xs->dims[xs->ndim - 1] > LTC_CPU_CE_ROW_MAX) continue;
        int f = -1;
        for (int s = 0; s < p->n_steps && f < 0; s++) {
            const plan_step *fw = &p->steps[s];
            if (is_cpu(fw, LTC_OP_CROSS_ENTROPY) && fw->n_in == 2 && fw->n_out == 1 &&
                fw->in[0] == bw->in[1] && fw->in[1] == bw->in[2] &&
                fw->attrs[0].i == bw->attrs[0].i)
                f = s;
        }
        if (f < 0) continue;
        bool read_between = false; /* a forward before the backward: its loss unread till then */
        for (int s = f + 1; s <= b && f < b; s++)
            for (int k = 0; k < p->steps[s].n_in; k++)
                read_between |= p->steps[s].in[k] == p->steps[f].out[0];
        if (read_between) continue;
        int *out = realloc(bw->out, 2 * sizeof *out);
        if (out) bw->out = out;
        ltc_shape *os = out ? realloc(bw->out_shapes, 2 * sizeof *os) : NULL;
        if (!os) {
            *failed = true;
            return changed;
        }
        bw->out_shapes = os;
        bw->out[1] = p->steps[f].out[0];
        bw->out_shapes[1] = p->steps[f].out_shapes[0];
        bw->n_out = 2;
        ltc_cpu_plan_step_clear(&p->steps[f]);
        memmove(&p->steps[f], &p->steps[f + 1], sizeof *p->steps * (size_t)(p->n_steps - f - 1));
        p->n_steps--;
        if (f < b) b--;
        changed = true;
    }
    return changed;
}

/* The results nothing reads and no one gets, of steps whose kernel skips such a result
 * (ltc_cpu_skips_unread: the backend YAML's skips_unread_outputs), become BUF_UNREAD: the
 * kernel gets NULL and leaves them unwritten (linear_backward of a first layer: no gemm for
 * the input's gradient). Returns false when out of memory (p unchanged). */
static bool mark_unread(cpu_plan *p) {
    int *readers = calloc((size_t)p->n_bufs + 1, sizeof(int));
    if (!readers) return false;
    for (int s = 0; s < p->n_steps; s++)
        for (int k = 0; k < p->steps[s].n_in; k++) readers[p->steps[s].in[k]]++;
    for (int s = 0; s < p->n_steps; s++) {
        plan_step *st = &p->steps[s];
        if (!is_cpu(st, st->op) || !ltc_cpu_skips_unread[st->op]) continue;
        for (int k = 0; k < st->n_out; k++) {
            plan_buf *b = &p->bufs[st->out[k]];
            if (!readers[st->out[k]] && b->kind == BUF_TEMP) b->kind = BUF_UNREAD;
        }
    }
    free(readers);
    return true;
}

bool ltc_cpu_plan_fold(cpu_plan *p) {
    int ns = p->n_steps, nb = p->n_bufs;
    int *producer = malloc(sizeof(int) * (size_t)(nb + 1));
    int *readers = calloc((size_t)nb + 1, sizeof(int));
    if (!producer || !readers) {
        free(producer);
        free(readers);
        return false;
    }
    for (int b = 0; b < nb; b++) producer[b] = -1;
    for (int s = 0; s < ns; s++)
        for (int k = 0; k < p->steps[s].n_out; k++) producer[p->steps[s].out[k]] = s;
    for (int s = 0; s < ns; s++)
        for (int k = 0; k < p->steps[s].n_in; k++) readers[p->steps[s].in[k]]++;
    bool failed = false;
    bool changed = fold_transposed_products(p, producer, readers, &failed);
    if (changed) { /* steps moved: producers anew */
        ns = p->n_steps;
        for (int b = 0; b < nb; b++) producer[b] = -1;
        for (int s = 0; s < ns; s++)
            for (int k = 0; k < p->steps[s].n_out; k++) producer[p->steps[s].out[k]] = s;
    }
    memset(readers, 0, sizeof(int) * (size_t)(nb + 1));
    for (int s = 0; s < ns; s++) {
        plan_step *st = &p->steps[s];
        /* read through views: the consumer gets the viewed bytes under the view's shape */
        for (int k = 0; k < st->n_in; k++) {
            int ps = producer[st->in[k]];
            while (ps >= 0 && is_copy_view(&p->steps[ps])) {
                st->in[k] = p->steps[ps].in[0];
                ps = producer[st->in[k]];
                changed = true;
            }
        }
        /* transposed matmul operands: a chain of transposes folds to one flag (t(t(w)) is w) */
        if (is_matmul2d(st)) {
            bool was = st->n_attrs == 1;
            int64_t tr[2] = {was && st->attrs[0].ints[0], was && st->attrs[0].ints[1]};
            bool moved = false;
            for (int k = 0; k < 2; k++) {
                int ps;
                while ((ps = producer[st->in[k]]) >= 0 && is_transpose2d(&p->steps[ps])) {
                    tr[k] ^= 1;
                    st->in[k] = p->steps[ps].in[0];
                    st->in_shapes[k] = p->steps[ps].in_shapes[0];
                    moved = true;
                }
            }
            if (moved && !set_matmul_flags(st, tr)) {
                free(producer);
                free(readers);
                return false;
            }
            changed |= moved;
        }
    }
    bool paired = pair_cross_entropy(p, &failed);
    ns = p->n_steps;
    if (changed) { /* drop the view and transpose steps nobody reads any more: from the last
                    * step back, so a chain (t(t(w))) goes whole */
        for (int s = 0; s < ns; s++)
            for (int k = 0; k < p->steps[s].n_in; k++) readers[p->steps[s].in[k]]++;
        for (int s = ns - 1; s >= 0; s--) {
            plan_step *st = &p->steps[s];
            bool dead = (is_copy_view(st) || is_transpose2d(st)) && !readers[st->out[0]] &&
                        p->bufs[st->out[0]].kind != BUF_OUTPUT;
            if (!dead) continue;
            for (int k = 0; k < st->n_in; k++) readers[st->in[k]]--;
            ltc_cpu_plan_step_clear(st); /* not fused: fold runs before fusion */
            st->fn = NULL;
        }
        int n = 0;
        for (int s = 0; s < ns; s++)
            if (p->steps[s].fn) p->steps[n++] = p->steps[s];
        p->n_steps = n;
    }
    if (changed || paired) ltc_cpu_plan_count_uses(p);
    free(producer);
    free(readers);
    return !failed && mark_unread(p);
}
