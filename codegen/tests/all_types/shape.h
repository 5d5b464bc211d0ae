/* Shape functions of the all_types fixture. */
#include "ltc.h"
ltc_status ltc_shape_cat(const ltc_shape *tensors, int n_tensors, int64_t dim, ltc_shape *out);
ltc_status ltc_shape_mix(const ltc_shape *self, const ltc_shape *s, int64_t a, int64_t b,
                         const int64_t *c, int n_c, int64_t idx, int64_t dm, int64_t e, double f,
                         ltc_dtype t, double g, bool h, ltc_shape *out);
ltc_status ltc_shape_pick(const ltc_shape *self, int64_t k, double eps, ltc_dtype dtype,
                          ltc_shape *out);
ltc_status ltc_shape_pick_list(const ltc_shape *self, const ltc_shape *others, int n_others,
                               ltc_shape *out);
ltc_status ltc_shape_where3(const ltc_shape *cond, const ltc_shape *x, const ltc_shape *y,
                            ltc_shape *out);
ltc_status ltc_shape_isneg(const ltc_shape *self, ltc_shape *out);
ltc_status ltc_shape_draw(const ltc_shape *self, double p, const ltc_shape *rng_state,
                          ltc_shape *out);
int64_t ltc_rng_numel_draw(const ltc_shape *const *in, const ltc_shape *out);
ltc_status ltc_shape_span(int64_t low, int64_t high, const int64_t *size, int n_size,
                          ltc_dtype dtype, ltc_shape *out);
