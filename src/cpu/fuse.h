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

/* Merges a linear step and a fused step that reads its result into one step that runs the
 * group as the linear's epilogue (a GEMM epilogue, as cuBLASLt's and oneDNN's post-ops): each
 * thread that computes a block of the linear's rows then evaluates the group over those rows
 * while they are in its cache, and no step of its own waits for them (a [256, 128] relu after
 * a split linear took 2.8-4.5 us at best but 6.8-16.5 on average, its rows coming from the
 * other core). The fused step qualifies when it has no reduction, reads the result whole
 * (element i of the group from element i of the result) and reads nothing made after the
 * linear; it moves up to the linear's place. The merged step's inputs are the linear's then
 * the group's, its outputs the linear's result then the group's; its kernel is
 * ltc_cpu_kernel_linear_epilogue (or _nobias_), ctx the group. A linear_backward likewise
 * runs a group that reads its grad_input on each block of grad_input's rows (when it splits
 * its GEMMs). Off under LTC_GEMM_EPILOGUE=0.
 * Call after ltc_cpu_plan_fuse, before the memory plan. False on allocation failure (p stays
 * a consistent plan, some of its steps merged). */
bool ltc_cpu_plan_epilogues(cpu_plan *p);

/* Whether a step of op may take an epilogue (linear, linear.nobias, linear_backward). */
bool ltc_cpu_epilogue_op(int op);
/* The merged steps' kernels (linear.c). */
ltc_status ltc_cpu_kernel_linear_epilogue(const ltc_kernel_args *a);
ltc_status ltc_cpu_kernel_linear_nobias_epilogue(const ltc_kernel_args *a);
ltc_status ltc_cpu_kernel_linear_backward_epilogue(const ltc_kernel_args *a);

/* Whether the group can be an epilogue of the step that writes its input k (see above). */
bool ltc_cpu_fused_reads_whole(const ltc_fused *f, int k);
/* Marks the group as the epilogue of a step of op (plan text: "linear + fused(relu)"). */
void ltc_cpu_fused_set_pre(ltc_fused *f, int op);
/* Evaluates elements [lo, hi) of a group without a reduction on the calling thread, with the
 * group's inputs in and outputs out (the whole buffers, as its step gets them). False when out
 * of memory for the block buffers. */
bool ltc_cpu_fused_run_range(const ltc_fused *f, const void *const *in, void *const *out,
                             int64_t lo, int64_t hi);

/* Horizontal fusion: fused steps without a reduction or a GEMM before them, that make only
 * the computation's results (plan outputs) and that the threads would not share out on
 * their own, become one batch step (batch.c), which runs where the last of them ran: until
 * a step reads what one of them made, each such step joins the open batch. The threads
 * share the blocks of all its members (an optimizer's update of every parameter: a
 * multi-tensor update). The batch step's inputs and outputs are its members', in order;
 * its kernel is ltc_cpu_batch_kernel, ctx the batch. The same bits as the steps run one by
 * one. Off under LTC_BATCH_STEPS=0.
 * Call after ltc_cpu_plan_epilogues, before the memory plan. False on allocation failure
 * (p stays a consistent plan, some of its steps batched). */
bool ltc_cpu_plan_batch(cpu_plan *p);
ltc_status ltc_cpu_batch_kernel(const ltc_kernel_args *a);
void ltc_cpu_batch_free(ltc_cpu_batch *b);
/* "batch of 53: fused(mul, ...), ...", into buf (n bytes); returns buf. */
char *ltc_cpu_batch_text(const ltc_cpu_batch *b, char *buf, size_t n);
/* Whether a fused step may join a batch (see ltc_cpu_plan_batch). */
bool ltc_cpu_fused_batchable(const ltc_fused *f);
/* The group's elements; *block receives its elements per block. */
int64_t ltc_cpu_fused_numel(const ltc_fused *f, int64_t *block);

/* "fused(mul, add, relu)": the member ops in order, into buf (n bytes); returns buf. */
char *ltc_cpu_fused_text(const ltc_fused *f, char *buf, size_t n);

#endif
