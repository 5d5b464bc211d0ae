/*
 * cpu_backend.c - the CPU backend's vtable: host data, compile (lower to a plan), execute.
 */

#include "ltc_cpu.h"
#include "plan.h"

static ltc_status compile(ltc_backend *b, const ltc_lowering_ctx *const *ctxs, int n,
                          ltc_computation **out) {
    (void)b;
    return ltc_cpu_plan_compile_all(ctxs, n, out, ltc_cpu_kernels, ltc_ref_kernels);
}

static ltc_status execute(ltc_backend *b, ltc_computation *c, ltc_data *const *args,
                          ltc_data **outs) {
    void *capture = ltc_capture_exec_ctx(b); /* a graph capture: outputs from its pool */
    if (capture) return ltc_cpu_capture_execute(capture, c->impl, args, outs);
    return ltc_cpu_plan_run(b, c->impl, args, outs);
}

static const char *eager_fallback_device_type(ltc_backend *b) {
    (void)b;
    return "ref";
}

static const struct ltc_backend_i cpu_iface = {
    .version = LTC_BACKEND_IFACE_VERSION,
    .data_from_host = ltc_host_data_from_host,
    .data_from_scalar = ltc_host_data_from_host,
    .data_placeholder = ltc_host_data_placeholder,
    .data_of_node = ltc_host_data_of_node,
    .data_to_host = ltc_host_data_to_host,
    .data_free = ltc_host_data_free,
    .compile = compile,
    .computation_free = ltc_cpu_plan_computation_free,
    .execute = execute,
    .default_device = ltc_host_default_device,
    .eager_fallback_device_type = eager_fallback_device_type,
    .devices = ltc_host_devices,
    .computation_text = ltc_cpu_plan_computation_text,
};

ltc_backend *ltc_cpu_backend(void) {
    static ltc_backend cpu = {.name = "cpu", .iface = &cpu_iface};
    return &cpu;
}
