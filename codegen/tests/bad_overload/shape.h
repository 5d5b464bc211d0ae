/* Shape functions of the bad_overload fixture. */
ltc_status ltc_shape_unary(const ltc_shape *self, ltc_shape *out);
ltc_status ltc_shape_pad(const ltc_shape *self, const int64_t *sizes, int n_sizes, ltc_shape *out);

