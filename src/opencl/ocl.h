/*
 * ocl.h - the OpenCL device backend's internal interface (module ltc/opencl.so).
 *
 * The backend reaches the core only through ltc.h, ltc_ir.h, ltc_backend.h, ltc_graph.h and
 * the op enum (gen/ltc_ops.h). Its data is device memory (a cl_mem behind a reference-counted
 * buffer); a computation is a list of steps (a generated kernel, a CLBlast GEMM, or an alias)
 * over value slots. Nodes it does not lower go to the core's eager fallback (`lowers`).
 *
 * Files: device.c (platforms, devices, context, queue, errors), mem.c (buffers, the caching
 * allocator, capture pools' buffers, the data slots), lower.c (a graph to steps and OpenCL
 * C; lower.h its walk's state), lower_nn.c (the CNN and LSTM ops' lowering), lower_more.c
 * (normalisation, losses, gather/scatter, scans, sorting), kernels.c, kernels_nn.c and
 * kernels_more.c (the source of the hand-written kernel families), program.c (build, memory
 * and disk cache), exec.c (running steps), capture.c (the graph implementation),
 * lua_opencl.c (the Lua module), bench.c (raw copy and CLBlast figures).
 */
#ifndef LTC_OCL_H
#define LTC_OCL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include "ltc_backend.h"
#include "ltc_graph.h"
#include "ltc_ops.h"

/* ---- device ------------------------------------------------------------------------------- */

typedef struct ocl_device_info {
    int platform, device; /* indices as clGetPlatformIDs / clGetDeviceIDs list them */
    char platform_name[128], name[128], vendor[128], version[64];
    uint64_t global_mem, max_alloc;
    int compute_units;
    bool fp64;
} ocl_device_info;

/* The state of the one device the backend runs on (chosen at first use). */
typedef struct ocl_state {
    bool ready;
    ocl_device_info info;
    cl_platform_id platform;
    cl_device_id device;
    cl_context ctx;
    cl_command_queue queue;
} ocl_state;

extern ocl_state ocl;

/* Lists every device of every platform into out (at most max); returns the count, or -1
 * with the error set when no OpenCL platform exists. */
int ocl_list_devices(ocl_device_info *out, int max);
/* Opens the device: `spec` is "P:D" (platform and device index) or a number (the n-th
 * device overall) or NULL (LTC_OPENCL_DEVICE, else the first GPU, else the first device).
 * Idempotent once open. */
ltc_status ocl_open(const char *spec);
/* Text of an OpenCL error code ("CL_OUT_OF_RESOURCES"). */
const char *ocl_err(cl_int e);

/* ---- memory ------------------------------------------------------------------------------- */

/* A device buffer, reference counted: values of a graph may alias one (views) and
 * backend data wrap one. Freed buffers go back to the caching allocator. */
typedef struct ocl_buf {
    int32_t refcount;
    cl_mem mem;
    size_t nbytes;   /* asked for */
    size_t cap;      /* allocated (size class) */
    ltc_pool *pool;  /* a capture's pool it goes back to, or NULL (the allocator's cache) */
} ocl_buf;

/* A new buffer of nbytes (from the cache when one of its size class is free). On failure
 * the error names the bytes and the device, NULL returned. */
ocl_buf *ocl_buf_new(size_t nbytes);
/* A buffer of nbytes from a capture's pool (a free one of its size class, else a new one
 * that returns to the pool when released); ocl_buf_new when pool is NULL. */
ocl_buf *ocl_buf_from(ltc_pool *pool, size_t nbytes);
/* The pools' callbacks (a pool's buffers are ocl_buf; destroying one hands it to the
 * allocator's cache). */
extern const ltc_pool_i ocl_pool_iface;
/* Test hook: the n-th next run fails as a lost device would (0: never). */
void ocl_fail_run_after(int n);
ocl_buf *ocl_buf_retain(ocl_buf *b);
void ocl_buf_release(ocl_buf *b);
/* Frees every cached (unused) buffer. */
void ocl_mem_trim(void);
/* Device data of this backend: data->ptr is NULL (the core must go through the transfer
 * slots), the buffer lives behind the header. */
typedef struct ocl_data {
    ltc_data base;
    ocl_buf *buf;
} ocl_data;

ltc_backend *ocl_backend(void);
/* The graph implementation's factory (capture.c), registered for "opencl". */
ltc_graph *ocl_graph_new(const ltc_graph_args *args);
/* A new data header over buf (retains it). */
ltc_data *ocl_data_wrap(ocl_buf *buf, const ltc_shape *shape);
/* The buffer of data made by any backend: this backend's own (borrowed: *tmp = NULL), or an
 * upload of another backend's host data (a new buffer in *tmp the caller releases). */
ltc_status ocl_data_buffer(const ltc_data *d, ocl_buf **out, ocl_buf **tmp);
ltc_status ocl_write(ocl_buf *b, const void *host, size_t nbytes);
ltc_status ocl_read(ocl_buf *b, void *host, size_t nbytes);

/* ---- computations ------------------------------------------------------------------------- */

typedef enum {
    OCL_STEP_KERNEL,   /* a kernel of the program over slots, with long/size arguments */
    OCL_STEP_GEMM,     /* CLBlast GEMM (batched when batch > 1) */
    OCL_STEP_ALIAS,    /* out slot = in slot (a view of contiguous data) */
} ocl_step_kind;

#define OCL_MAX_ARGS 96

typedef struct ocl_arg {
    char kind;   /* 'b' buffer (slot), 'l' long, 'f' float, 'd' double */
    int slot;
    int64_t l;
    double f;
} ocl_arg;

typedef struct ocl_step {
    ocl_step_kind kind;
    int out;               /* the slot written (first output) */
    int n_out;             /* outputs (slots out .. out+n_out-1): max.dim, min.dim */
    /* KERNEL */
    int kernel;            /* index into the computation's kernels */
    size_t global;         /* work items */
    int n_args;
    ocl_arg args[OCL_MAX_ARGS];
    /* GEMM: C[b] = alpha A[b] B[b] (+ beta C) row-major; A m x k, B k x n */
    int a, bslot, bias;    /* bias slot or -1: C starts as bias broadcast over rows */
    bool ta, tb;
    int64_t m, n, k, batch;
    ltc_dtype dtype;
    /* ALIAS and error messages */
    int op;
    int n_in;
    int in[1];
    bool checks;           /* writes the error flag (index ranges) */
    int node;              /* the node lowered (its post-order index): named when it fails */
} ocl_step;

typedef struct ocl_slot {
    ltc_shape shape;
    int param;             /* >= 0: the parameter it holds */
} ocl_slot;

typedef struct ocl_comp {
    int n_slots;
    ocl_slot *slots;
    int n_steps;
    ocl_step *steps;
    int *root_slots;       /* n_roots */
    int n_roots;
    char *source;          /* the program's OpenCL C (NULL when no kernel) */
    char **kernel_names;
    int n_kernels;
    cl_program program;    /* retained from the program cache */
    cl_kernel *kernels;
    int *last_use;         /* per slot: the last step reading it (-1 none) */
    int *free_at;          /* n_steps + 1 offsets into free_slots: the intermediates (not */
    int *free_slots;       /* roots) whose last use is step i, released after it */
    bool checks;
} ocl_comp;

ltc_status ocl_lower(const ltc_lowering_ctx *ctx, ocl_comp **out);
/* Whether the backend lowers op on the device (float32 operands; some ops fall back for
 * other dtypes or shapes: integer pow, 1-d matmul, ...). */
bool ocl_op_lowered(int op);
/* Whether it lowers node n, dtypes and sizes included (the `lowers` slot): the core's eager
 * fallback runs the others on the CPU backend. */
bool ocl_node_lowered(const ltc_node *n);
void ocl_comp_free(ocl_comp *c);
/* Waits for everything enqueued on the device; a device error is returned (device lost). */
ltc_status ocl_finish(void);
/* Runs c (enqueues it: no wait, exec.c); buffers come from `pool` (a capture's, or NULL: the
 * allocator's cache). */
ltc_status ocl_run(ocl_comp *c, ltc_data *const *args, ltc_data **outs, ltc_pool *pool);

/* Builds (or finds in the memory cache, then the disk cache) the program of `source`.
 * Returns a retained program. A build error prints the source and the log into the error. */
ltc_status ocl_program_get(const char *source, cl_program *out);
void ocl_program_cache_clear(void);
/* Builds src uncached (a source that fails shows the build-error path). */
ltc_status ocl_program_try(const char *src);
/* The source and build log of the last failed build ("" if none). */
const char *ocl_last_build_log(void);

/* ---- kernel sources (kernels.c) ------------------------------------------------------------ */

/* A growable string (s is NULL until the first append; free(s) when done). */
typedef struct ocl_sb {
    char *s;
    size_t len, cap;
    bool oom;
} ocl_sb;
void ocl_sb_printf(ocl_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* OpenCL C type of a dtype ("float", "double", "int", "long", "uchar"). */
const char *ocl_ctype(ltc_dtype dt);
/* Appends the preamble every program starts with. */
void ocl_src_preamble(ocl_sb *b, bool fp64);
/* A data-dependent error (kernels.c's header): writes `<indent>if (v < 1 || v > n) { err[0] =
 * step + 1; err[1] = v; <then> }`, an index or class label v outside 1..n flagging the step
 * (the kernel has `__global long *err, long step` parameters). */
void ocl_k_check_index(ocl_sb *b, const char *indent, const char *v, const char *n,
                       const char *then);
/* The shared head of a per-row kernel of class labels (cross_entropy, nll_loss and their
 * backwards), after its other parameters (the last one `target`): the parameters `long rows,
 * long c<extra>, __global long *err, long step`, the work item's row i (none past rows) and
 * its label y = target[i]: LTC_LABEL_IGNORED (-100) runs `on_ignore` (it zeroes the row's
 * results) and the row returns; else checked: outside 1..c, `on_error` runs ("loss[i] = 0; "
 * or "") and the row returns. */
void ocl_k_label_row(ocl_sb *b, const char *extra, const char *on_ignore, const char *on_error);
/* The mean of a loss's n per-row values in[] over the rows whose labels target[] are not
 * LTC_LABEL_IGNORED (0/0, NaN, when none is): out[0], one work item; accumulated in double
 * when fp64. Arguments out, in, target, n. */
void ocl_k_label_mean(ocl_sb *b, const char *name, ltc_dtype dt, ltc_dtype it, bool fp64);
/* kept[0] = the number of the n labels target[] that are not LTC_LABEL_IGNORED (the divisor
 * of a mean's gradient), one work item. Arguments kept (long), target, n. */
void ocl_k_label_count(ocl_sb *b, const char *name, ltc_dtype it);
void ocl_k_reduce(ocl_sb *b, const char *name, char kind, ltc_dtype in, ltc_dtype out, bool fp64);
void ocl_k_softmax(ocl_sb *b, const char *name, ltc_dtype dt, bool log);
void ocl_k_ce_rows(ocl_sb *b, const char *name, ltc_dtype dt, ltc_dtype it);
void ocl_k_ce_backward(ocl_sb *b, const char *name, ltc_dtype dt, ltc_dtype it, bool per_row,
                       bool mean);
void ocl_k_index_select(ocl_sb *b, const char *name, ltc_dtype dt, ltc_dtype it);
void ocl_k_strided(ocl_sb *b, const char *name, ltc_dtype dt, int r);
void ocl_mem_set_limit(size_t bytes);

/* kernels_nn.c: the CNN and LSTM families (see there). */
void ocl_k_conv2d(ocl_sb *b, const char *name, ltc_dtype dt, bool bias, bool i32);
void ocl_k_conv2d_bwd_input(ocl_sb *b, const char *name, ltc_dtype dt, bool unit_stride,
                            bool i32);
void ocl_k_conv2d_bwd_weight(ocl_sb *b, const char *name, ltc_dtype dt, bool i32);
void ocl_k_im2col(ocl_sb *b, const char *name, ltc_dtype dt, bool i32);
void ocl_k_col2im(ocl_sb *b, const char *name, ltc_dtype dt, bool i32);
void ocl_k_swap01(ocl_sb *b, const char *name, ltc_dtype dt, bool bias);
void ocl_k_max_pool2d(ocl_sb *b, const char *name, ltc_dtype dt, bool i32);
void ocl_k_max_pool2d_bwd(ocl_sb *b, const char *name, ltc_dtype dt, bool i32);
void ocl_k_slice(ocl_sb *b, const char *name, ltc_dtype in, ltc_dtype out, bool write);
void ocl_k_index_add(ocl_sb *b, const char *name, ltc_dtype dt, ltc_dtype it);
void ocl_k_arange(ocl_sb *b, const char *name, ltc_dtype dt, bool fp64);
void ocl_k_norm(ocl_sb *b, const char *name, ltc_dtype in, ltc_dtype out, bool fp64);
void ocl_src_philox(ocl_sb *b, bool fp64);
void ocl_k_random(ocl_sb *b, const char *name, char kind, ltc_dtype dt, bool fp64);

/* kernels_more.c: normalisation, nll_loss, gather/scatter, triangles, avg pooling, scans
 * and sorting (see there). */
void ocl_k_layer_norm(ocl_sb *b, const char *name, ltc_dtype dt, bool fp64);
void ocl_k_ln_bwd_rows(ocl_sb *b, const char *name, ltc_dtype dt, bool fp64);
void ocl_k_ln_bwd_cols(ocl_sb *b, const char *name, ltc_dtype dt, bool fp64);
void ocl_k_bn_stats(ocl_sb *b, const char *name, ltc_dtype dt, bool fp64);
void ocl_k_bn_apply(ocl_sb *b, const char *name, ltc_dtype dt, bool fp64);
void ocl_k_nll_rows(ocl_sb *b, const char *name, ltc_dtype dt, ltc_dtype it);
void ocl_k_nll_backward(ocl_sb *b, const char *name, ltc_dtype dt, ltc_dtype it, bool per_row,
                        bool mean, bool fp64);
void ocl_k_gather(ocl_sb *b, const char *name, ltc_dtype dt, ltc_dtype it, int r);
void ocl_k_scatter(ocl_sb *b, const char *name, ltc_dtype dt, ltc_dtype it, ltc_dtype st, int r,
                   bool add, bool value);
void ocl_k_triangle(ocl_sb *b, const char *name, ltc_dtype dt, bool upper);
void ocl_k_avg_pool2d(ocl_sb *b, const char *name, ltc_dtype dt);
void ocl_k_avg_pool2d_bwd(ocl_sb *b, const char *name, ltc_dtype dt);
void ocl_k_cumulative(ocl_sb *b, const char *name, ltc_dtype in, ltc_dtype out, bool prod,
                      bool fp64);
void ocl_k_sort(ocl_sb *b, const char *name, ltc_dtype dt, bool descending, bool values,
                bool indices, bool median);
void ocl_k_cumext(ocl_sb *b, const char *name, ltc_dtype dt, bool is_min);
void ocl_k_tile(ocl_sb *b, const char *name, ltc_dtype dt, int r);
void ocl_k_one_hot(ocl_sb *b, const char *name, ltc_dtype it);
void ocl_k_eye(ocl_sb *b, const char *name, ltc_dtype dt);
void ocl_k_linspace(ocl_sb *b, const char *name, ltc_dtype dt);
void ocl_k_randperm(ocl_sb *b, const char *name, ltc_dtype dt);
void ocl_k_sqdiff(ocl_sb *b, const char *name, ltc_dtype dt, ltc_dtype out, int r, bool fp64);
void ocl_k_reduce_more(ocl_sb *b, const char *name, char kind, ltc_dtype in, ltc_dtype out,
                       bool fp64);

#endif
