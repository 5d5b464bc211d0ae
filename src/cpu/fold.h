/*
 * fold.h - plan rewrites that run before fusion on the CPU backend's plans:
 *  - a view or reshape is a copy of its input's bytes: every step that reads its output
 *    reads the input buffer instead (under the view's shape), and the copy is dropped
 *    unless its result is a plan output;
 *  - a matmul of 2-d float operands produced by t() or transpose() reads the transposes'
 *    inputs and tells cblas_*gemm to transpose them (CblasTrans), so no transposed copy is
 *    made; a chain of transposes is one flag or none (t(t(w)) is w: the gradient of h w^T
 *    with respect to h reads w itself); the transpose step is dropped when nothing else
 *    reads it;
 *  - a transpose of a 2-d float matmul's product that nothing else reads is the product of
 *    the transposed operands in the other order ((A B)^T = B^T A^T: the gradient of w in
 *    h w^T), so the matmul writes it directly;
 *  - a linear_backward whose grad_input or grad_bias nothing reads (a first layer's input
 *    does not require grad) leaves it unmade (attrs {skip grad_input, skip grad_bias});
 *  - a cross_entropy and a cross_entropy_backward of the same logits, target and reduction
 *    become one step: the backward writes the loss as its second output (rows of at most
 *    LTC_CPU_CE_ROW_MAX classes, where both compute a row's exps the same way).
 */
#ifndef LTC_CPU_FOLD_H
#define LTC_CPU_FOLD_H

#include "plan.h"

/* The longest rows (classes) whose cross_entropy the backward step computes too (loss.c's
 * EXP_BLOCK: longer rows take another summation in the forward kernel). */
#define LTC_CPU_CE_ROW_MAX 1024

/* Rewrites p's steps as above and recomputes buffers' last_use. False when out of memory
 * (p stays runnable). */
bool ltc_cpu_plan_fold(cpu_plan *p);

/* The kernel of a folded matmul: 2-d operands as stored, attrs[0].ints = {A transposed,
 * B transposed}. */
ltc_status ltc_cpu_kernel_matmul_folded(const ltc_kernel_args *a);

#endif
