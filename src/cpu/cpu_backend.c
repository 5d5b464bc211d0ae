/*
 * cpu_backend.c - the CPU backend's vtable: host data, compile (lower to a plan), execute.
 */

#include "hostmem.h"
#include "ltc_cpu.h"
#include "plan.h"

static ltc_status compile(ltc_backend *b, const ltc_lowering_ctx *const *ctxs, int n,
                          ltc_computation **out) {
    (void)b;
    return ltc_cpu_plan_compile_all(ctxs, n, out, ltc_cpu_kernels);
}

static ltc_status execute(ltc_backend *b, ltc_computation *c, ltc_data *const *args,
                          ltc_data **outs) {
    void *capture = ltc_capture_exec_ctx(b); /* a graph capture: outputs from its pool */
    if (capture) return ltc_cpu_capture_execute(capture, c->impl, args, outs);
    return ltc_cpu_plan_run(b, c->impl, args, outs);
}

/* The ops with a CPU kernel (gen/cpu_ops.c); the others run on the eager fallback. */
/* PyTorch's PrepareToExit: free the host-memory cache (hostmem.c). */
static void prepare_to_exit(ltc_backend *b) {
    (void)b;
    ltc_cpu_mem_trim();
}

static bool lowers(ltc_backend *b, const ltc_node *n) {
    (void)b;
    return ltc_cpu_kernels[n->op] != NULL;
}

static bool lowers_op(ltc_backend *b, int op, ltc_dtype dtype) {
    (void)b, (void)dtype;
    return ltc_cpu_kernels[op] != NULL;
}

static const char *eager_fallback_device_type(ltc_backend *b) {
    (void)b;
    return "ref";
}

static const struct ltc_backend_i cpu_iface = {
    .version = LTC_BACKEND_IFACE_VERSION,
    .prepare_to_exit = prepare_to_exit,
    .data_from_host = ltc_host_data_from_host,
    .data_from_scalar = ltc_host_data_from_host,
    .data_of_node = ltc_host_data_of_node,
    .data_to_host = ltc_host_data_to_host,
    .data_read = ltc_host_data_read,
    .data_free = ltc_host_data_free,
    .compile = compile,
    .computation_free = ltc_cpu_plan_computation_free,
    .execute = execute,
    .default_device = ltc_host_default_device,
    .eager_fallback_device_type = eager_fallback_device_type,
    .devices = ltc_host_devices,
    .computation_text = ltc_cpu_plan_computation_text,
    .lowers = lowers,
    .lowers_op = lowers_op,
};

ltc_backend *ltc_cpu_backend(void) {
    static ltc_backend cpu = {.name = "cpu", .iface = &cpu_iface};
    return &cpu;
}
