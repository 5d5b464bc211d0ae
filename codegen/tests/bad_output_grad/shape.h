/* Shape functions of the output_grads fixture. */
#include "ltc.h"
ltc_status ltc_shape_split2(const ltc_shape *self, ltc_shape *out);
