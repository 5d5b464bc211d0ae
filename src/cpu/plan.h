/*
 * plan.h - the CPU backend's compiled computation: a list of kernel steps over buffers,
 * with a memory plan. Built once per graph (compile), run on every cache hit (execute).
 *
 * Buffers are parameters (the computation's arguments), outputs (fresh backend data on
 * each run: the user holds them), or temporaries (slices of an arena that the plan keeps
 * across runs, placed by lifetime so that dead temporaries' bytes are reused). A step is
 * one kernel now; fusion will make a step that runs several nodes' math in one pass
 * without changing this structure.
 */
#ifndef LTC_CPU_PLAN_H
#define LTC_CPU_PLAN_H

#include "ltc_backend.h"
#include "ltc_kernel.h"
#include "threads.h"

/* BUF_UNREAD: a result nothing reads and no one gets, of a step whose kernel skips such a
 * result (the backend YAML's skips_unread_outputs, ltc_cpu_skips_unread): the kernel gets
 * NULL for it and writes nothing; it takes no memory (fold.c marks them). */
typedef enum { BUF_PARAM, BUF_OUTPUT, BUF_TEMP, BUF_UNREAD } buf_kind;

typedef struct ltc_cpu_batch ltc_cpu_batch;

typedef struct {
    buf_kind kind;
    int index;       /* BUF_PARAM: argument index; BUF_OUTPUT: output index */
    ltc_shape shape;
    size_t nbytes;
    size_t offset;   /* BUF_TEMP: byte offset in the arena */
    int last_use;    /* the last step that reads it (-1: none) */
    int alias;       /* BUF_TEMP: >= 0 when it lives in that output buffer instead of the
                      * arena (a collective's input, reduced in place there: plan.c); -1 */
    int inherit;     /* BUF_TEMP: >= 0 when it takes over the arena range of that temporary,
                      * which dies as this is made (a collective's output, in place); -1 */
} plan_buf;

typedef struct {
    int op;
    int node;             /* the post-order index of its IR node (a fused step: the last
                           * member's), reported with ltc_error_set_node when it fails */
    ltc_kernel_fn fn;
    int n_in, n_out, n_attrs;
    int *in;              /* buffer ids */
    int *out;
    ltc_shape *in_shapes, *out_shapes;
    ltc_attr *attrs;
    struct ltc_fused *fused; /* a fused step's group (fuse.h), passed as the kernel's ctx;
                              * owned. NULL for a one-kernel step */
    struct ltc_cpu_batch *batch; /* a batch step's members (fuse.h), passed as the kernel's
                                  * ctx; owned. NULL for any other step */
    uint64_t prof_ns, prof_runs; /* LTC_PROFILE: wall time spent in this step, and runs */
    uint64_t prof_min_ns;        /* LTC_PROFILE: its fastest run (0: none yet), the figure
                                  * least moved by other processes on a shared machine */
    const char *source;   /* LTC_IR_DEBUG: "file:line" of the Lua code that traced the node
                           * (static; of the first graph compiled to this plan), or NULL */
} plan_step;

typedef struct {
    plan_buf *bufs;
    int n_bufs;
    plan_step *steps;
    int n_steps;
    int *outputs;       /* buffer id of each root */
    int n_outputs;
    size_t arena_size;
    void *arena;        /* kept across runs */
    void **ptrs;        /* scratch: each buffer's address during a run */
    int busy;           /* a run uses arena and ptrs (atomic); a concurrent run of the same
                         * plan on another thread gets scratch of its own */
    ltc_cpu_split_plan split; /* whether its timed kernels all split (threads.h) */
} cpu_plan;

/* The kernel a step of op with output shape out runs instead of fn (a generated kernel of
 * ltc_cpu_kernels or ltc_ref_kernels): integer floor_divide and remainder check their
 * divisor for zeros first (plan.c); fn for every other step. */
ltc_kernel_fn ltc_cpu_int_checked(int op, const ltc_shape *out, ltc_kernel_fn fn);
/* True for the ops whose CPU kernel leaves a result unwritten when it gets NULL for it (the
 * backend YAML's skips_unread_outputs; gen/cpu_ops.c). Indexed by ltc_op. */
extern const bool ltc_cpu_skips_unread[];

/* Lowers one graph into a plan; NULL with the error set on failure. Each node runs
 * kernels[op]; a NULL entry is an error (the CPU backend's `lowers` slot keeps such nodes
 * out: the core runs them on the eager fallback, src/core/fallback.c). */
cpu_plan *ltc_cpu_plan_build(const ltc_lowering_ctx *ctx, const ltc_kernel_fn *kernels);
void ltc_cpu_plan_free(cpu_plan *p);
/* Frees what a step owns (its arrays, fused group), not the step itself. */
void ltc_cpu_plan_step_clear(plan_step *s);
/* Sets every buffer's last_use to the last step that reads it (-1: none), after a rewrite of
 * p's steps (fold.c, fuse.c). */
void ltc_cpu_plan_count_uses(cpu_plan *p);
/* The compile and computation_free slots shared by the plan-based backends (CPU and
 * reference): lowers each context with ltc_cpu_plan_build(ctx, kernels) into
 * out[i]->impl; on failure frees what it built and returns LTC_ERR_BACKEND. */
ltc_status ltc_cpu_plan_compile_all(const ltc_lowering_ctx *const *ctxs, int n,
                                    ltc_computation **out, const ltc_kernel_fn *kernels);
void ltc_cpu_plan_computation_free(ltc_backend *b, ltc_computation *c);
/* Runs the plan: args are the parameters' data, outs receives new output data. */
ltc_status ltc_cpu_plan_run(ltc_backend *b, cpu_plan *p, ltc_data *const *args, ltc_data **outs);

/* Makes the data of one output (a new reference); NULL with the error set on failure. */
typedef ltc_data *(*cpu_alloc_fn)(void *ud, const ltc_shape *shape);
/* As ltc_cpu_plan_run with the caller's scratch: `ptrs` (p->n_bufs entries), `arena`
 * (p->arena_size bytes, 64-byte aligned; NULL when the size is 0), and outputs made by
 * alloc(ud, shape). Graph replay (capture.c) runs plans this way. */
ltc_status ltc_cpu_plan_run_with(cpu_plan *p, ltc_data *const *args, ltc_data **outs, void **ptrs,
                                 void *arena, cpu_alloc_fn alloc, void *ud);
/* The plan as text ("<backend> plan: ..." then steps, buffers and sizes). Caller frees. */
char *ltc_cpu_plan_text(const cpu_plan *p, const char *backend);

/* Backend data on the host (hostdata.c): a new uninitialised buffer, and the vtable's data
 * slots shared by the CPU and reference backends (data_from_host is also data_from_scalar:
 * a 0-d value is host data of its dtype). */
ltc_data *ltc_cpu_data_new(ltc_backend *b, const ltc_shape *shape);
ltc_data *ltc_host_data_from_host(ltc_backend *b, const ltc_shape *shape, const void *host);
ltc_data *ltc_host_data_of_node(ltc_backend *b, const ltc_node *n);
ltc_status ltc_host_data_to_host(ltc_backend *b, const ltc_data *d, void *host);
void ltc_host_data_free(ltc_backend *b, ltc_data *d);
ltc_status ltc_host_data_read(ltc_backend *b, const ltc_data *d, size_t offset, size_t n,
                              void *host);
/* The device slots of a host backend: one device, of the backend's name ("cpu", "ref"). */
ltc_device ltc_host_default_device(ltc_backend *b);
int ltc_host_devices(ltc_backend *b, ltc_device *out, int max);
/* The computation_text slot of the plan-based backends: ltc_cpu_plan_text under b's name. */
char *ltc_cpu_plan_computation_text(ltc_backend *b, const ltc_computation *c);

/* capture.c: runs a plan for a sync of a graph capture, with outputs from the capture's
 * pool (`exec_ctx` as given to ltc_capture_start). */
ltc_status ltc_cpu_capture_execute(void *exec_ctx, cpu_plan *p, ltc_data *const *args,
                                   ltc_data **outs);

#endif
