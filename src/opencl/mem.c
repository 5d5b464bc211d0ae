/*
 * mem.c - device memory: reference-counted buffers over cl_mem, a caching allocator (freed
 * buffers are kept by size class and reused, as the CPU backend's host-memory cache does),
 * host <-> device transfers, and the data-transfer slots of the backend vtable.
 *
 * Figures go to the core's counters, so ltc.metrics.report() shows them:
 * OpenCLAllocCount (clCreateBuffer calls), OpenCLCacheHit (buffers reused), OpenCLBytesLive
 * (bytes of buffers in use), OpenCLBytesCached (bytes kept for reuse), OpenCLHostToDevice /
 * OpenCLDeviceToHost (bytes moved).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

/* The allocator's cache and figures are shared by every thread that syncs on the backend. */
static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;

#define CACHE_MAX 512

static struct {
    cl_mem mem;
    size_t cap;
} cache[CACHE_MAX];
static int n_cached;
static size_t bytes_live, bytes_cached;
static size_t mem_limit; /* 0: the device's global memory */

void ocl_mem_set_limit(size_t bytes) { mem_limit = bytes; }

/* The size class of n bytes: at least 256, then steps of a quarter of the power of two. */
static size_t size_class(size_t n) {
    if (n <= 256) return 256;
    size_t p = 1;
    while (p < n) p <<= 1;
    size_t q = p / 8; /* classes p/2 + k*p/8 for k = 1..4 */
    size_t c = p / 2;
    while (c < n) c += q;
    return c;
}

static void trim_locked(void) {
    for (int i = 0; i < n_cached; i++) clReleaseMemObject(cache[i].mem);
    ltc_counter_add("OpenCLBytesCached", -(int64_t)bytes_cached);
    n_cached = 0;
    bytes_cached = 0;
}

void ocl_mem_trim(void) {
    pthread_mutex_lock(&mem_lock);
    trim_locked();
    pthread_mutex_unlock(&mem_lock);
}

static cl_mem create(size_t cap, cl_int *e) {
    size_t limit = mem_limit ? mem_limit : (size_t)ocl.info.global_mem;
    if ((limit && bytes_live + bytes_cached + cap > limit) ||
        (ocl.info.max_alloc && cap > ocl.info.max_alloc)) {
        *e = CL_MEM_OBJECT_ALLOCATION_FAILURE;
        return NULL;
    }
    cl_mem m = clCreateBuffer(ocl.ctx, CL_MEM_READ_WRITE, cap, NULL, e);
    if (m) ltc_counter_add("OpenCLAllocCount", 1);
    return m;
}

ocl_buf *ocl_buf_new(size_t nbytes) {
    if (!ocl.ready) {
        ltc_status st = ocl_open(NULL);
        if (st) return NULL;
    }
    size_t cap = size_class(nbytes);
    ocl_buf *b = malloc(sizeof *b);
    if (!b) {
        ltc_errorf(LTC_ERR_NOMEM, "opencl: out of host memory");
        return NULL;
    }
    b->refcount = 1;
    b->nbytes = nbytes;
    b->cap = cap;
    b->mem = NULL;
    b->pool = NULL;
    pthread_mutex_lock(&mem_lock);
    for (int i = 0; i < n_cached; i++) {
        if (cache[i].cap != cap) continue;
        b->mem = cache[i].mem;
        cache[i] = cache[--n_cached];
        bytes_cached -= cap;
        ltc_counter_add("OpenCLBytesCached", -(int64_t)cap);
        ltc_counter_add("OpenCLCacheHit", 1);
        break;
    }
    cl_int e = CL_SUCCESS;
    if (!b->mem) b->mem = create(cap, &e);
    if (!b->mem && n_cached) { /* give the cache back to the device and try once more */
        trim_locked();
        b->mem = create(cap, &e);
    }
    if (!b->mem) {
        pthread_mutex_unlock(&mem_lock);
        free(b);
        size_t limit = mem_limit ? mem_limit : (size_t)ocl.info.global_mem;
        ltc_errorf(LTC_ERR_NOMEM,
                   "opencl: out of device memory: %zu bytes asked for on %s (%s; %zu bytes in "
                   "use, limit %zu)", nbytes, ocl.info.name, ocl_err(e), bytes_live, limit);
        return NULL;
    }
    bytes_live += cap;
    pthread_mutex_unlock(&mem_lock);
    ltc_counter_add("OpenCLBytesLive", (int64_t)cap);
    return b;
}

ocl_buf *ocl_buf_retain(ocl_buf *b) {
    if (b) __atomic_add_fetch(&b->refcount, 1, __ATOMIC_RELAXED);
    return b;
}

void ocl_buf_release(ocl_buf *b) {
    if (!b || __atomic_sub_fetch(&b->refcount, 1, __ATOMIC_ACQ_REL) > 0) return;
    if (b->pool) { /* back to its capture's pool (which may hand it to pool_destroy) */
        ltc_pool_put(b->pool, b, b->cap);
        return;
    }
    pthread_mutex_lock(&mem_lock);
    bytes_live -= b->cap;
    ltc_counter_add("OpenCLBytesLive", -(int64_t)b->cap);
    if (n_cached < CACHE_MAX) {
        cache[n_cached].mem = b->mem;
        cache[n_cached].cap = b->cap;
        n_cached++;
        bytes_cached += b->cap;
        ltc_counter_add("OpenCLBytesCached", (int64_t)b->cap);
    } else {
        clReleaseMemObject(b->mem);
    }
    pthread_mutex_unlock(&mem_lock);
    free(b);
}

/* ---- capture pools ------------------------------------------------------------------------------ */

/* A pool's buffer let go for good: to the allocator's cache. Runs under the pools' lock
 * (then takes mem_lock: the order is always pools, then memory). */
static void pool_destroy(void *ctx, void *item) {
    (void)ctx;
    ocl_buf *b = item;
    b->pool = NULL;
    b->refcount = 1;
    ocl_buf_release(b);
}

const ltc_pool_i ocl_pool_iface = {.destroy = pool_destroy};

ocl_buf *ocl_buf_from(ltc_pool *pool, size_t nbytes) {
    if (!pool) return ocl_buf_new(nbytes);
    size_t cap = size_class(nbytes);
    ltc_status st;
    ocl_buf *b = ltc_pool_get(pool, cap, cap, &st);
    if (b) {
        b->refcount = 1;
        b->nbytes = nbytes;
        return b;
    }
    if (st || !(b = ocl_buf_new(nbytes))) return NULL;
    b->pool = pool;
    ltc_pool_count_new(pool, cap);
    return b;
}

ltc_status ocl_write(ocl_buf *b, const void *host, size_t nbytes) {
    if (!nbytes) return LTC_OK;
    cl_int e = clEnqueueWriteBuffer(ocl.queue, b->mem, CL_TRUE, 0, nbytes, host, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        return ltc_errorf(LTC_ERR_BACKEND, "opencl: writing %zu bytes to %s failed: %s", nbytes,
                          ocl.info.name, ocl_err(e));
    ltc_counter_add("OpenCLHostToDevice", (int64_t)nbytes);
    return LTC_OK;
}

ltc_status ocl_read(ocl_buf *b, void *host, size_t nbytes) {
    if (!nbytes) return LTC_OK;
    cl_int e = clEnqueueReadBuffer(ocl.queue, b->mem, CL_TRUE, 0, nbytes, host, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        return ltc_errorf(LTC_ERR_BACKEND, "opencl: reading %zu bytes from %s failed: %s (the "
                          "device may be lost)", nbytes, ocl.info.name, ocl_err(e));
    ltc_counter_add("OpenCLDeviceToHost", (int64_t)nbytes);
    return LTC_OK;
}

/* ---- the data slots ---------------------------------------------------------------------------- */

ltc_data *ocl_data_wrap(ocl_buf *buf, const ltc_shape *shape) {
    ocl_data *d = malloc(sizeof *d);
    if (!d) {
        ltc_errorf(LTC_ERR_NOMEM, "opencl: out of host memory");
        return NULL;
    }
    d->base.refcount = 1;
    d->base.shape = *shape;
    d->base.ptr = NULL;
    d->base.nbytes = ltc_shape_nbytes(shape);
    d->base.backend = ocl_backend();
    d->buf = ocl_buf_retain(buf);
    return &d->base;
}

static ltc_data *placeholder(ltc_backend *b, const ltc_shape *shape) {
    (void)b;
    ocl_buf *buf = ocl_buf_new(ltc_shape_nbytes(shape));
    if (!buf) return NULL;
    ltc_data *d = ocl_data_wrap(buf, shape);
    ocl_buf_release(buf);
    return d;
}

static ltc_data *from_host(ltc_backend *b, const ltc_shape *shape, const void *host) {
    ltc_data *d = placeholder(b, shape);
    if (d && ocl_write(((ocl_data *)d)->buf, host, d->nbytes)) {
        ltc_data_release(d);
        return NULL;
    }
    return d;
}

static ltc_data *of_node(ltc_backend *b, const ltc_node *n) {
    (void)b;
    return n->op == LTC_OP_DEVICE_DATA ? n->data : NULL;
}

static ltc_status to_host(ltc_backend *b, const ltc_data *d, void *host) {
    (void)b;
    return ocl_read(((const ocl_data *)d)->buf, host, d->nbytes);
}

static void data_free(ltc_backend *b, ltc_data *d) {
    (void)b;
    ocl_buf_release(((ocl_data *)d)->buf);
    free(d);
}

ltc_status ocl_data_buffer(const ltc_data *d, ocl_buf **out, ocl_buf **tmp) {
    *tmp = NULL;
    if (d->backend == ocl_backend()) {
        *out = ((const ocl_data *)d)->buf;
        return LTC_OK;
    }
    /* another backend's data (host memory: the CPU and reference backends) */
    void *host = d->ptr;
    bool own = false;
    if (!host && d->nbytes) {
        if (!(host = malloc(d->nbytes))) return ltc_errorf(LTC_ERR_NOMEM, "opencl: out of memory");
        own = true;
        ltc_status st = d->backend->iface->data_to_host(d->backend, d, host);
        if (st) {
            free(host);
            return st;
        }
    }
    ocl_buf *b = ocl_buf_new(d->nbytes);
    ltc_status st = b ? ocl_write(b, host, d->nbytes) : LTC_ERR_NOMEM;
    if (own) free(host);
    if (st) {
        ocl_buf_release(b);
        return st;
    }
    *out = *tmp = b;
    return LTC_OK;
}

/* ---- the vtable ---------------------------------------------------------------------------------- */

static ltc_status compile(ltc_backend *b, const ltc_lowering_ctx *const *ctxs, int n,
                          ltc_computation **out) {
    (void)b;
    ltc_status st = ocl_open(NULL);
    if (st) return st;
    for (int i = 0; i < n; i++) {
        ocl_comp *c;
        if ((st = ocl_lower(ctxs[i], &c))) return st;
        out[i]->impl = c;
    }
    return LTC_OK;
}

static void computation_free(ltc_backend *b, ltc_computation *c) {
    (void)b;
    ocl_comp_free(c->impl);
    c->impl = NULL;
}

static ltc_status execute(ltc_backend *b, ltc_computation *c, ltc_data *const *args,
                          ltc_data **outs) {
    /* during a capture on this thread, buffers come from the graph's pool */
    return ocl_run(c->impl, args, outs, ltc_capture_exec_ctx(b));
}

static ltc_device default_device(ltc_backend *b) { return (ltc_device){b->name, 0}; }

static int devices(ltc_backend *b, ltc_device *out, int max) {
    if (max > 0) out[0] = default_device(b);
    return 1;
}

/* The CPU backend runs what the device does not lower (fused, threaded plans; it falls back
 * to the reference kernels in turn for what it does not lower itself). */
static const char *fallback_type(ltc_backend *b) {
    (void)b;
    return "cpu";
}

static bool lowers(ltc_backend *b, const ltc_node *n) {
    (void)b;
    return ocl_node_lowered(n);
}

/* The kinds lower.c lists (ocl_op_lowered); none with a narrow dtype (as ocl_node_lowered). */
static bool lowers_op(ltc_backend *b, int op, ltc_dtype dtype) {
    (void)b;
    return !ltc_dtype_is_narrow(dtype) && ocl_op_lowered(op);
}

static char *computation_text(ltc_backend *b, const ltc_computation *c) {
    (void)b;
    const ocl_comp *k = c->impl;
    ocl_sb sb = {0};
    ocl_sb_printf(&sb, "// opencl computation on %s: %d steps, %d kernels\n", ocl.info.name,
                  k->n_steps, k->n_kernels);
    for (int i = 0; i < k->n_steps; i++) {
        const ocl_step *s = &k->steps[i];
        switch (s->kind) {
        case OCL_STEP_KERNEL:
            ocl_sb_printf(&sb, "//   %%%d = %s (%s) global %zu\n", s->out,
                          k->kernel_names[s->kernel], ltc_op_name(s->op), s->global);
            break;
        case OCL_STEP_GEMM:
            ocl_sb_printf(&sb, "//   %%%d = CLBlast gemm%s (%s) m=%lld n=%lld k=%lld%s%s%s\n",
                          s->out, s->batch > 1 ? " batched" : "", ltc_op_name(s->op),
                          (long long)s->m, (long long)s->n, (long long)s->k,
                          s->ta ? " A^T" : "", s->tb ? " B^T" : "", s->bias >= 0 ? " +bias" : "");
            break;
        case OCL_STEP_ALIAS:
            ocl_sb_printf(&sb, "//   %%%d = %s (alias of %%%d)\n", s->out, ltc_op_name(s->op),
                          s->in[0]);
            break;
        }
    }
    ocl_sb_printf(&sb, "%s", k->source ? k->source : "// (no kernels)\n");
    return sb.s;
}

static const struct ltc_backend_i ocl_iface = {
    .version = LTC_BACKEND_IFACE_VERSION,
    .data_from_host = from_host,
    .data_from_scalar = from_host,
    .data_placeholder = placeholder,
    .data_of_node = of_node,
    .data_to_host = to_host,
    .data_free = data_free,
    .compile = compile,
    .computation_free = computation_free,
    .execute = execute,
    .default_device = default_device,
    .eager_fallback_device_type = fallback_type,
    .devices = devices,
    .computation_text = computation_text,
    .lowers = lowers,
    .lowers_op = lowers_op,
};

ltc_backend *ocl_backend(void) {
    static ltc_backend be = {.name = "opencl", .iface = &ocl_iface};
    return &be;
}
