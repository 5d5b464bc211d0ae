/* epilogue.c - the CPU plan's GEMM epilogues: a fused elementwise step that reads the result
 * of a linear (or the input gradient of a linear_backward) runs inside it, on each block of
 * rows as the thread that computed them finishes (fuse.h says when). */
#include <stdlib.h>
#include <string.h>

#include "fuse.h"

bool ltc_cpu_epilogue_op(int op) {
    return op == LTC_OP_LINEAR || op == LTC_OP_LINEAR_NOBIAS || op == LTC_OP_LINEAR_BACKWARD;
}

/* The merged kernel of step s (NULL: it takes no epilogue). The GEMM's result that the group
 * reads is its output 0; its inputs and outputs come before the group's. */
static ltc_kernel_fn epilogue_kernel(const plan_step *s) {
    if (s->fused || s->op < 0 || !ltc_cpu_epilogue_op(s->op) || s->fn != ltc_cpu_kernels[s->op])
        return NULL;
    return s->op == LTC_OP_LINEAR          ? ltc_cpu_kernel_linear_epilogue
           : s->op == LTC_OP_LINEAR_NOBIAS ? ltc_cpu_kernel_linear_nobias_epilogue
                                           : ltc_cpu_kernel_linear_backward_epilogue;
}

/* The step after step i that first reads buffer y, when it is a fused step, else -1 (steps
 * of op -1 were merged). */
static int first_reader(const cpu_plan *p, int i, int y, int *k) {
    for (int j = i + 1; j < p->n_steps; j++)
        for (*k = 0; p->steps[j].op >= 0 && *k < p->steps[j].n_in; (*k)++)
            if (p->steps[j].in[*k] == y) return p->steps[j].fused ? j : -1;
    return -1;
}

/* a ++ b, of n and m elements of size es. */
static void *cat(const void *a, int n, const void *b, int m, size_t es) {
    char *r = malloc(es * (size_t)(n + m) + 1);
    if (!r) return NULL;
    if (n) memcpy(r, a, es * (size_t)n);
    if (m) memcpy(r + es * (size_t)n, b, es * (size_t)m);
    return r;
}

/* Step g's fused group joins GEMM step s (its inputs and outputs after s's) with kernel fn. */
static bool merge(plan_step *s, plan_step *g, ltc_kernel_fn fn) {
    int *in = cat(s->in, s->n_in, g->in, g->n_in, sizeof(int));
    int *out = cat(s->out, s->n_out, g->out, g->n_out, sizeof(int));
    ltc_shape *ins = cat(s->in_shapes, s->n_in, g->in_shapes, g->n_in, sizeof(ltc_shape));
    ltc_shape *outs = cat(s->out_shapes, s->n_out, g->out_shapes, g->n_out, sizeof(ltc_shape));
    if (!in || !out || !ins || !outs) {
        free(in), free(out), free(ins), free(outs);
        return false;
    }
    free(s->in), free(s->out), free(s->in_shapes), free(s->out_shapes);
    s->in = in, s->out = out, s->in_shapes = ins, s->out_shapes = outs;
    s->n_in += g->n_in, s->n_out += g->n_out;
    s->fn = fn;
    s->fused = g->fused, g->fused = NULL;
    ltc_cpu_fused_set_pre(s->fused, s->op);
    ltc_cpu_plan_step_clear(g);
    return true;
}

bool ltc_cpu_plan_epilogues(cpu_plan *p) {
    int *made = malloc(sizeof(int) * (size_t)(p->n_bufs + 1)); /* the step making each buffer */
    if (!made) return false;
    for (int b = 0; b < p->n_bufs; b++) made[b] = -1;
    for (int s = 0; s < p->n_steps; s++)
        for (int k = 0; k < p->steps[s].n_out; k++) made[p->steps[s].out[k]] = s;
    int n = 0;
    bool ok = true;
    for (int i = 0; i < p->n_steps && ok; i++) {
        plan_step *s = &p->steps[i];
        int k, j;
        ltc_kernel_fn fn = epilogue_kernel(s);
        if (fn && (j = first_reader(p, i, s->out[0], &k)) >= 0 &&
            ltc_cpu_fused_reads_whole(p->steps[j].fused, k)) {
            plan_step *g = &p->steps[j];
            bool early = true; /* everything else it reads is made before step i */
            for (int e = 0; e < g->n_in; e++)
                early &= g->in[e] == s->out[0] || made[g->in[e]] < i;
            if (early && (ok = merge(s, g, fn))) {
                g->op = -1; /* dropped below */
                for (int e = 0; e < s->n_out; e++) made[s->out[e]] = i;
            }
        }
    }
    for (int i = 0; i < p->n_steps; i++)
        if (p->steps[i].op >= 0) p->steps[n++] = p->steps[i];
    p->n_steps = n;
    free(made);
    ltc_cpu_plan_count_uses(p);
    return ok;
}
