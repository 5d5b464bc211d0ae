/*
 * cpu_backend.c - the CPU backend's vtable: host data, compile (lower to a plan), execute.
 */
#include <stdlib.h>
#include <string.h>

#include "ltc_graph.h"
#include "hostmem.h"
#include "threads.h"
#include "plan.h"

#define ALIGN 64

ltc_data *ltc_cpu_data_new(ltc_backend *b, const ltc_shape *shape) {
    ltc_data *d = malloc(sizeof *d);
    size_t nbytes = ltc_shape_nbytes(shape);
    if (!d) return NULL;
    d->ptr = ltc_cpu_mem_alloc(nbytes);
    if (!d->ptr) {
        free(d);
        return NULL;
    }
    d->refcount = 1;
    d->shape = *shape;
    d->nbytes = nbytes;
    d->backend = b;
    return d;
}

static ltc_data *data_from_host(ltc_backend *b, const ltc_shape *shape, const void *host) {
    ltc_data *d = ltc_cpu_data_new(b, shape);
    if (d && d->nbytes) memcpy(d->ptr, host, d->nbytes);
    return d;
}

static ltc_data *data_from_scalar(ltc_backend *b, const ltc_shape *shape0d, const void *value) {
    return data_from_host(b, shape0d, value);
}

static ltc_data *data_placeholder(ltc_backend *b, const ltc_shape *shape) {
    return ltc_cpu_data_new(b, shape);
}

static ltc_data *data_of_node(ltc_backend *b, const ltc_node *n) {
    (void)b;
    return n->op == LTC_OP_DEVICE_DATA ? n->data : NULL;
}

static ltc_status data_to_host(ltc_backend *b, const ltc_data *d, void *host) {
    (void)b;
    if (d->nbytes) memcpy(host, d->ptr, d->nbytes);
    return LTC_OK;
}

static void data_free(ltc_backend *b, ltc_data *d) {
    (void)b;
    ltc_cpu_mem_free(d->ptr, d->nbytes);
    free(d);
}

static ltc_status compile(ltc_backend *b, const ltc_lowering_ctx *const *ctxs, int n,
                          ltc_computation **out) {
    (void)b;
    return ltc_cpu_plan_compile_all(ctxs, n, out, ltc_cpu_kernels, ltc_ref_kernels);
}

static ltc_status execute(ltc_backend *b, ltc_computation *c, ltc_data *const *args,
                          ltc_data **outs) {
    ltc_cpu_blas_threads(); /* OpenBLAS follows LTC_NUM_THREADS */
    void *capture = ltc_capture_exec_ctx(b); /* a graph capture: outputs from its pool */
    if (capture) return ltc_cpu_capture_execute(capture, c->impl, args, outs);
    return ltc_cpu_plan_run(b, c->impl, args, outs);
}

static ltc_device default_device(ltc_backend *b) {
    (void)b;
    return (ltc_device){"cpu", 0};
}

static const char *eager_fallback_device_type(ltc_backend *b) {
    (void)b;
    return "ref";
}

static int devices(ltc_backend *b, ltc_device *out, int max) {
    if (max > 0) out[0] = default_device(b);
    return 1;
}

static char *computation_text(ltc_backend *b, const ltc_computation *c) {
    (void)b;
    return ltc_cpu_plan_text(c->impl);
}

static const struct ltc_backend_i cpu_iface = {
    .version = LTC_BACKEND_IFACE_VERSION,
    .data_from_host = data_from_host,
    .data_from_scalar = data_from_scalar,
    .data_placeholder = data_placeholder,
    .data_of_node = data_of_node,
    .data_to_host = data_to_host,
    .data_free = data_free,
    .compile = compile,
    .computation_free = ltc_cpu_plan_computation_free,
    .execute = execute,
    .default_device = default_device,
    .eager_fallback_device_type = eager_fallback_device_type,
    .devices = devices,
    .computation_text = computation_text,
};

ltc_backend *ltc_cpu_backend(void) {
    static ltc_backend cpu = {.name = "cpu", .iface = &cpu_iface};
    return &cpu;
}
