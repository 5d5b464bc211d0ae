/* Shape functions of the shape_checks fixture.
 * ltc_status ltc_shape_incomment(const ltc_shape *self, int64_t dim, ltc_shape *out);
 */
#define SHAPE_INCOMMENT(s, o) ltc_shape_incomment(s, 1, o)
ltc_status ltc_shape_wrongsig(const ltc_shape *self,
                              ltc_shape *out);
void ltc_shape_wrongret(const ltc_shape *self, ltc_shape *out);
ltc_status ltc_shape_good(const ltc_shape *x, int64_t count, double epsilon,
                          ltc_shape *result);
#define LTC_API __attribute__((visibility("default")))
LTC_API ltc_status ltc_shape_exported(const ltc_shape *, ltc_shape *);
