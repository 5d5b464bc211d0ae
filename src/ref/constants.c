/* constants.c - reference kernel of scalar_tensor. */
#include "ref.h"

/* scalar_tensor(float value, ScalarType? dtype): the value, in the output dtype. */
ltc_status ltc_ref_kernel_scalar_tensor(const ltc_kernel_args *a) {
    ltc_ref_set(a->out[0], a->out_shapes[0].dtype, 0, a->attrs[0].f);
    return LTC_OK;
}
