/* Hand-written kernels of the kernel_checks fixture: each wrong in its own way but good.
 * ltc_status ltc_cpu_kernel_incomment(const ltc_kernel_args *a) is still to write. */
#include "ltc_kernel.h"

// ltc_status ltc_cpu_kernel_incomment(const ltc_kernel_args *a) { return LTC_OK; }
#define INCOMMENT ltc_cpu_kernel_incomment(a)
static const char *todo = "ltc_status ltc_cpu_kernel_incomment(const ltc_kernel_args *a) {";

ltc_status ltc_cpu_kernel_wrongsig(const ltc_kernel_args *a, int extra) {
    (void)a, (void)extra;
    return LTC_OK;
}

int ltc_cpu_kernel_wrongret(const ltc_kernel_args *a) { (void)a; return 0; }

ltc_status ltc_cpu_kernel_declonly(const ltc_kernel_args *a);

static ltc_status ltc_cpu_kernel_isstatic(const ltc_kernel_args *a) { (void)a; return LTC_OK; }

ltc_status
ltc_cpu_kernel_good(const ltc_kernel_args *args) {
    (void)todo;
    return ltc_cpu_kernel_incomment(args);
}
