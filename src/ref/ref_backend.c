/*
 * ref_backend.c - the reference backend's vtable ("ref"). Host memory like the CPU backend,
 * so data made by either backend feeds the other's computations (a plan reads any
 * parameter's ptr). Compiling lowers a graph into the same plan structure as the CPU
 * backend (src/cpu/plan.c: steps over buffers, memory plan), with the reference kernels
 * (gen/ref_ops.c) and no fallback: every op has one.
 */

#include "ltc_ref.h"
#include "plan.h"
#include "ref.h"

static ltc_status compile(ltc_backend *b, const ltc_lowering_ctx *const *ctxs, int n,
                          ltc_computation **out) {
    (void)b;
    return ltc_cpu_plan_compile_all(ctxs, n, out, ltc_ref_kernels);
}

static ltc_status execute(ltc_backend *b, ltc_computation *c, ltc_data *const *args,
                          ltc_data **outs) {
    return ltc_cpu_plan_run(b, c->impl, args, outs);
}

static const struct ltc_backend_i ref_iface = {
    .version = LTC_BACKEND_IFACE_VERSION,
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
    .devices = ltc_host_devices,
    .computation_text = ltc_cpu_plan_computation_text,
};

ltc_backend *ltc_ref_backend(void) {
    static ltc_backend ref = {.name = "ref", .iface = &ref_iface};
    return &ref;
}
