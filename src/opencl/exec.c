/*
 * exec.c - running a computation: parameters bound to their buffers (data of another
 * backend uploaded), each step enqueued in order on the device's in-order queue (kernels,
 * CLBlast GEMMs, aliases), intermediates returned to the allocator after their last use
 * (the queue orders their reuse after it), and the error flag of index-checking kernels
 * read at the end. A run does not wait for the device (see OCL_MAX_INFLIGHT). (Nodes the device does not
 * lower never get here: the core's eager fallback runs them.)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h" /* first: sets CL_TARGET_OPENCL_VERSION */
#include <clblast_c.h>

static ltc_status alloc_slot(ocl_comp *c, ocl_buf **bufs, int slot, ltc_pool *pool) {
    if (bufs[slot]) return LTC_OK;
    bufs[slot] = ocl_buf_from(pool, ltc_shape_nbytes(&c->slots[slot].shape));
    return bufs[slot] ? LTC_OK : LTC_ERR_NOMEM;
}

static int fail_after; /* ocl_fail_run_after: runs left before a simulated device loss */

/* One run at a time: a computation's kernels are shared (the compile cache serves every
 * thread) and clSetKernelArg on a shared kernel is not thread-safe. */
static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER;

void ocl_fail_run_after(int n) { fail_after = n; }

static ltc_status run_kernel(ocl_comp *c, ocl_step *s, ocl_buf **bufs, ocl_buf *err,
                             ltc_pool *pool) {
    cl_kernel k = c->kernels[s->kernel];
    ltc_status st;
    for (int a = 0; a < s->n_args; a++)
        if (s->args[a].kind == 'o' && (st = alloc_slot(c, bufs, s->args[a].slot, pool))) return st;
    if (!s->global) return LTC_OK;
    cl_int e = CL_SUCCESS;
    for (int a = 0; a < s->n_args && e == CL_SUCCESS; a++) {
        const ocl_arg *g = &s->args[a];
        switch (g->kind) {
        case 'o':
        case 'b': e = clSetKernelArg(k, (cl_uint)a, sizeof(cl_mem), &bufs[g->slot]->mem); break;
        case 'e': e = clSetKernelArg(k, (cl_uint)a, sizeof(cl_mem), &err->mem); break;
        case 'l': {
            cl_long v = g->l;
            e = clSetKernelArg(k, (cl_uint)a, sizeof v, &v);
            break;
        }
        case 'f': {
            cl_float v = (cl_float)g->f;
            e = clSetKernelArg(k, (cl_uint)a, sizeof v, &v);
            break;
        }
        default: {
            cl_double v = g->f;
            e = clSetKernelArg(k, (cl_uint)a, sizeof v, &v);
            break;
        }
        }
    }
    if (e == CL_SUCCESS)
        e = clEnqueueNDRangeKernel(ocl.queue, k, 1, NULL, &s->global, NULL, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        return ltc_errorf(LTC_ERR_BACKEND, "opencl: %s: running kernel %s on %s failed: %s",
                          ltc_op_name(s->op), c->kernel_names[s->kernel], ocl.info.name,
                          ocl_err(e));
    return LTC_OK;
}

static ltc_status run_gemm(ocl_comp *c, ocl_step *s, ocl_buf **bufs, ltc_pool *pool) {
    ltc_status st = alloc_slot(c, bufs, s->out, pool);
    if (st) return st;
    double alpha = s->args[0].f, beta = s->args[1].f;
    if (!s->m || !s->n || !s->batch) return LTC_OK;
    if (!s->k) { /* an empty sum: the bias as filled, or 0 */
        if (s->bias >= 0) return LTC_OK;
        cl_uchar zero = 0;
        cl_int e = clEnqueueFillBuffer(ocl.queue, bufs[s->out]->mem, &zero, 1, 0,
                                       ltc_shape_nbytes(&c->slots[s->out].shape), 0, NULL, NULL);
        return e == CL_SUCCESS ? LTC_OK
                               : ltc_errorf(LTC_ERR_BACKEND, "opencl: fill failed: %s", ocl_err(e));
    }
    size_t m = (size_t)s->m, n = (size_t)s->n, k = (size_t)s->k;
    size_t lda = s->ta ? m : k, ldb = s->tb ? k : n, ldc = n;
    CLBlastTranspose ta = s->ta ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastTranspose tb = s->tb ? CLBlastTransposeYes : CLBlastTransposeNo;
    cl_mem A = bufs[s->a]->mem, B = bufs[s->bslot]->mem, C = bufs[s->out]->mem;
    CLBlastStatusCode r;
    if (s->batch > 1) {
        size_t sa = m * k, sb = k * n, sc = m * n, bt = (size_t)s->batch;
        r = s->dtype == LTC_F64
                ? CLBlastDgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, m, n, k, alpha, A, 0,
                                             lda, sa, B, 0, ldb, sb, beta, C, 0, ldc, sc, bt,
                                             &ocl.queue, NULL)
                : CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, m, n, k,
                                             (float)alpha, A, 0, lda, sa, B, 0, ldb, sb,
                                             (float)beta, C, 0, ldc, sc, bt, &ocl.queue, NULL);
    } else {
        r = s->dtype == LTC_F64
                ? CLBlastDgemm(CLBlastLayoutRowMajor, ta, tb, m, n, k, alpha, A, 0, lda, B, 0,
                               ldb, beta, C, 0, ldc, &ocl.queue, NULL)
                : CLBlastSgemm(CLBlastLayoutRowMajor, ta, tb, m, n, k, (float)alpha, A, 0, lda,
                               B, 0, ldb, (float)beta, C, 0, ldc, &ocl.queue, NULL);
    }
    if (r != CLBlastSuccess)
        return ltc_errorf(LTC_ERR_BACKEND, "opencl: %s: CLBlast gemm %zux%zux%zu on %s failed "
                          "(CLBlast status %d)", ltc_op_name(s->op), m, n, k, ocl.info.name, (int)r);
    return LTC_OK;
}

static ltc_status check_error(ocl_comp *c, ocl_buf *err) {
    cl_long v[2] = {0, 0};
    ltc_status st = ocl_read(err, v, sizeof v);
    if (st || !v[0]) return st;
    int i = (int)v[0] - 1;
    if (i < 0 || i >= c->n_steps) return ltc_errorf(LTC_ERR_ARG, "opencl: bad error flag");
    const ocl_step *s = &c->steps[i];
    /* the failing node, in the graph's post order: the executor then names the op the user
     * called when a composite traced it (index_fill's one_hot), as on the CPU backend */
    ltc_error_set_node(s->node);
    if (s->op == LTC_OP_BERNOULLI)
        return ltc_errorf(LTC_ERR_ARG, "bernoulli: all probabilities (self) should be between 0 "
                          "and 1: element %lld is not", (long long)v[1]);
    if (s->op == LTC_OP_CROSS_ENTROPY || s->op == LTC_OP_CROSS_ENTROPY_BACKWARD ||
        s->op == LTC_OP_NLL_LOSS || s->op == LTC_OP_NLL_LOSS_BACKWARD)
        return ltc_label_range_error(ltc_op_name(s->op), v[1], s->k);
    return ltc_errorf(LTC_ERR_ARG, "%s: index %lld out of range (1..%lld; indices are 1-based)",
                      ltc_op_name(s->op), (long long)v[1], (long long)s->k);
}


static ltc_status run_locked(ocl_comp *c, ltc_data *const *args, ltc_data **outs,
                             ltc_pool *pool);

ltc_status ocl_run(ocl_comp *c, ltc_data *const *args, ltc_data **outs, ltc_pool *pool) {
    pthread_mutex_lock(&run_lock);
    ltc_status st = run_locked(c, args, outs, pool);
    pthread_mutex_unlock(&run_lock);
    return st;
}

/* Runs enqueued since the queue last drained. A run does not wait for its kernels (the
 * queue is in order: later runs, transfers and reads come after them; a read of a value
 * blocks until it is computed), so tracing the next step overlaps the device's work and a
 * sync costs no round trip through the driver's threads; every OCL_MAX_INFLIGHT runs one
 * waits, so a loop that never reads a value cannot queue without bound. */
#define OCL_MAX_INFLIGHT 8
static int inflight;

static ltc_status device_failed(cl_int e) {
    return ltc_errorf(LTC_ERR_BACKEND, "opencl: the device %s failed while running (%s): "
                      "device lost?", ocl.info.name, ocl_err(e));
}

ltc_status ocl_finish(void) {
    if (!ocl.ready) return LTC_OK;
    pthread_mutex_lock(&run_lock);
    inflight = 0;
    cl_int e = clFinish(ocl.queue);
    pthread_mutex_unlock(&run_lock);
    return e == CL_SUCCESS ? LTC_OK : device_failed(e);
}

static ltc_status run_locked(ocl_comp *c, ltc_data *const *args, ltc_data **outs,
                             ltc_pool *pool) {
    ltc_status st = LTC_OK;
    ocl_buf **bufs = calloc((size_t)c->n_slots + 1, sizeof *bufs);
    ocl_buf *err = NULL;
    int r = 0;
    if (!bufs) {
        st = ltc_errorf(LTC_ERR_NOMEM, "opencl: out of memory");
        goto done;
    }
    for (int i = 0; i < c->n_slots && !st; i++) {
        int p = c->slots[i].param;
        if (p < 0) continue;
        ocl_buf *b, *tmp;
        if (!(st = ocl_data_buffer(args[p], &b, &tmp))) bufs[i] = tmp ? tmp : ocl_buf_retain(b);
    }
    if (!st && c->checks) {
        static const cl_long zero[2] = {0, 0};
        if (!(err = ocl_buf_new(sizeof zero))) st = LTC_ERR_NOMEM;
        else st = ocl_write(err, zero, sizeof zero);
    }
    for (int i = 0; i < c->n_steps && !st; i++) {
        ocl_step *s = &c->steps[i];
        switch (s->kind) {
        case OCL_STEP_ALIAS: bufs[s->out] = ocl_buf_retain(bufs[s->in[0]]); break;
        case OCL_STEP_KERNEL: st = run_kernel(c, s, bufs, err, pool); break;
        case OCL_STEP_GEMM: st = run_gemm(c, s, bufs, pool); break;
        }
        for (int f = c->free_at[i]; f < c->free_at[i + 1] && !st; f++) { /* past last use */
            ocl_buf_release(bufs[c->free_slots[f]]);
            bufs[c->free_slots[f]] = NULL;
        }
    }
    if (!st) {
        cl_int e = ++inflight >= OCL_MAX_INFLIGHT ? clFinish(ocl.queue) : clFlush(ocl.queue);
        if (inflight >= OCL_MAX_INFLIGHT) inflight = 0;
        if (fail_after > 0 && --fail_after == 0) e = CL_OUT_OF_RESOURCES; /* the test hook */
        if (e != CL_SUCCESS) st = device_failed(e);
    }
    if (!st && err) st = check_error(c, err);
    for (r = 0; r < c->n_roots && !st; r++) {
        int slot = c->root_slots[r];
        if (!bufs[slot]) {
            st = ltc_errorf(LTC_ERR_BACKEND, "opencl: output %d was never computed", r);
            break;
        }
        if (!(outs[r] = ocl_data_wrap(bufs[slot], &c->slots[slot].shape))) st = LTC_ERR_NOMEM;
    }
    if (st)
        for (int k = 0; k < r && k < c->n_roots; k++) {
            ltc_data_release(outs[k]);
            outs[k] = NULL;
        }
done:
    if (bufs)
        for (int i = 0; i < c->n_slots; i++) ocl_buf_release(bufs[i]);
    ocl_buf_release(err);
    free(bufs);
    return st;
}
