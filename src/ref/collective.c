/* collective.c - the reference backend's kernels of the collective ops: each runs on the
 * registered communicator inside the plan (src/backend/comm_registry.c, ltc_comm_kernel). */
#include "ltc_comm.h"
#include "ltc_kernel.h"

ltc_status ltc_ref_kernel_all_reduce(const ltc_kernel_args *a) { return ltc_comm_kernel(a); }
ltc_status ltc_ref_kernel_broadcast(const ltc_kernel_args *a) { return ltc_comm_kernel(a); }
ltc_status ltc_ref_kernel_reduce(const ltc_kernel_args *a) { return ltc_comm_kernel(a); }
ltc_status ltc_ref_kernel_all_gather(const ltc_kernel_args *a) { return ltc_comm_kernel(a); }
ltc_status ltc_ref_kernel_reduce_scatter(const ltc_kernel_args *a) { return ltc_comm_kernel(a); }
