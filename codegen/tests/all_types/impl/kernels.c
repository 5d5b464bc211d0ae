/* Hand-written kernels of the all_types fixture (only their definitions are looked for). */
ltc_status ltc_cpu_kernel_cat(const ltc_kernel_args *a) { (void)a; return LTC_OK; }
ltc_status ltc_cpu_kernel_pick_list(const ltc_kernel_args *a) { (void)a; return LTC_OK; }
