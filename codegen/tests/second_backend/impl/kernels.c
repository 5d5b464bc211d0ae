/* Hand-written kernels of the second_backend fixture. */
ltc_status ltc_toy_kernel_mm(const ltc_kernel_args *a) { (void)a; return LTC_OK; }
ltc_status ltc_toy_kernel_sum(const ltc_kernel_args *a) { (void)a; return LTC_OK; }
