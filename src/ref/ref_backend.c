/*
 * ref_backend.c - the reference backend's vtable ("ref"). Host memory like the CPU backend,
 * so data made by either backend feeds the other's computations (a plan reads any
 * parameter's ptr). Compiling lowers a graph into the same plan structure as the CPU
 * backend (src/cpu/plan.c: steps over buffers, memory plan), with the reference kernels
 * (gen/ref_ops.c) and no fallback: every op has one.
 */
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "ref.h"

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
    free(d->ptr);
    free(d);
}

static ltc_status compile(ltc_backend *b, const ltc_lowering_ctx *const *ctxs, int n,
                          ltc_computation **out) {
    (void)b;
    return ltc_cpu_plan_compile_all(ctxs, n, out, ltc_ref_kernels, NULL);
}

static ltc_status execute(ltc_backend *b, ltc_computation *c, ltc_data *const *args,
                          ltc_data **outs) {
    return ltc_cpu_plan_run(b, c->impl, args, outs);
}

static ltc_device default_device(ltc_backend *b) {
    (void)b;
    return (ltc_device){"ref", 0};
}

static int devices(ltc_backend *b, ltc_device *out, int max) {
    if (max > 0) out[0] = default_device(b);
    return 1;
}

static char *computation_text(ltc_backend *b, const ltc_computation *c) {
    (void)b;
    char *text = ltc_cpu_plan_text(c->impl);
    if (text && !strncmp(text, "cpu plan", 8)) memcpy(text, "ref", 3); /* "ref plan: ..." */
    return text;
}

static const struct ltc_backend_i ref_iface = {
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
    .devices = devices,
    .computation_text = computation_text,
};

ltc_backend *ltc_ref_backend(void) {
    static ltc_backend ref = {.name = "ref", .iface = &ref_iface};
    return &ref;
}
