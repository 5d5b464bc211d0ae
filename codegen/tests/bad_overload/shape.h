/* Shape functions of the bad_overload fixture. */
ltc_status ltc_shape_unary(const ltc_shape *self, ltc_shape *out);
