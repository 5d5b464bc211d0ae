/* Shape functions of the kernel_checks fixture: only the unary one. */
ltc_status ltc_shape_unary(const ltc_shape *self, ltc_shape *out);
