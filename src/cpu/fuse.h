/*
 * fuse.h - elementwise fusion of the CPU plan.
 *
 * At plan build, maximal groups of generated elementwise steps (ops with an `expr`) whose
 * outputs have one shape become one fused step. It evaluates the group block by block (a
 * few thousand elements, sized for the L1/L2 cache): each member runs its generated loop
 * over small per-thread block buffers, so no full-size intermediate is ever written. Only
 * values that leave the group (plan outputs, values read by later steps) are stored, and
 * their buffers are the only ones the memory plan places. Operands from outside the group
 * are read in place: same-shape ones at the block's offset, 0-d/one-element ones from a
 * block filled once per run, broadcast ones gathered per block. Blocks are split over the
 * worker threads (threads.h) when there are enough of them.
 *
 * A float sum or mean of a group's value, over all elements or the last dim (rows of at
 * most 16384), that comes after the group's last member joins the group: the fused step
 * reduces each block as it computes it, so the reduced value is never written out unless
 * something else reads it ("fused(mul, exp -> sum)" in the plan text). Each sum is formed in
 * one fixed order (per-block partials added in block order; a row within one block), so
 * results do not depend on the thread count.
 */
#ifndef LTC_CPU_FUSE_H
#define LTC_CPU_FUSE_H

#include "plan.h"

typedef struct ltc_fused ltc_fused;

/* Rewrites p->steps: groups of fusable steps become fused steps (the kernel
 * ltc_cpu_fused_kernel, with step->fused set), member buffers that no longer appear in any
 * step are dropped from the memory plan, and every buffer's last_use is recomputed. Call
 * before the memory plan. Returns false on allocation failure (p is unchanged then). */
bool ltc_cpu_plan_fuse(cpu_plan *p);

/* The kernel of a fused step: a->ctx is its ltc_fused. */
ltc_status ltc_cpu_fused_kernel(const ltc_kernel_args *a);

void ltc_cpu_fused_free(ltc_fused *f);

/* "fused(mul, add, relu)": the member ops in order, into buf (n bytes); returns buf. */
char *ltc_cpu_fused_text(const ltc_fused *f, char *buf, size_t n);

#endif
