/*
 * ltc_cpu.h - what the CPU backend offers to the code that wires it in (src/lua/ltc_builtins.c,
 * the fuzz harnesses): its vtable, its graph implementation and pool statistics, and a few
 * facts about the host. Nothing in src/core or src/backend includes it; the binding reaches
 * the CPU backend through the interfaces of ltc_backend.h and ltc_graph.h only.
 */
#ifndef LTC_CPU_H
#define LTC_CPU_H

#include "ltc_graph.h"

/* The CPU backend ("cpu"), static storage: register it with ltc_backend_register. */
ltc_backend *ltc_cpu_backend(void);
/* The CPU graph implementation's factory (capture.c), for ltc_graph_impl_register("cpu"). */
ltc_graph *ltc_cpu_graph_new(const ltc_graph_args *args);
/* Statistics of a CPU pool; false when no pool has that id (never made, or released). For
 * ltc_graph_impl_register_pool_stats("cpu"). */
bool ltc_cpu_pool_stats(ltc_mempool_id id, ltc_pool_stats *out);
/* The name of the kernels OpenBLAS uses ("SkylakeX", ...; threads.h). */
const char *ltc_cpu_blas_core(void);

#endif
