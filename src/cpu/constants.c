/* constants.c - scalar_tensor: a 0-d constant of the graph (attrs: value, dtype). */
#include "elementwise.h"

ltc_status ltc_cpu_kernel_scalar_tensor(const ltc_kernel_args *a) {
    double v = a->attrs[0].f;
    ltc_cpu_convert(a->out[0], a->out_shapes[0].dtype, &v, LTC_F64, 1);
    return LTC_OK;
}
