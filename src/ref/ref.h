/*
 * ref.h - the reference backend: helpers its kernels share. The reference kernels are
 * written to be read: one per op (ltc_ref_kernel_<op>, or generated from the op's expr in
 * gen/ref_ops.c), obvious loops over output indices, no fusion, no BLAS, no fast paths.
 * They are the oracle the CPU backend is compared against, and the CPU backend's eager
 * fallback for ops it does not lower.
 *
 * Element access goes through double (floats) or int64 (integers and bool) so that one loop
 * serves every dtype; a kernel picks the accessor by ltc_dtype_is_float.
 */
#ifndef LTC_REF_H
#define LTC_REF_H

#include "ltc_kernel.h"
#include "ltc_special.h"

/* The element offset in `in` (row-major contiguous) of the element that broadcasts onto
 * flat output index i of `out` (PyTorch broadcasting: trailing dims aligned; a size-1 dim
 * of `in` repeats). */
int64_t ltc_ref_offset(const ltc_shape *out, const ltc_shape *in, int64_t i);

/* Flat index <-> multi-index (0-based) of a row-major shape. */
void ltc_ref_unravel(const ltc_shape *s, int64_t flat, int64_t *idx);
int64_t ltc_ref_ravel(const ltc_shape *s, const int64_t *idx);

/* Element i of a buffer of dtype dt, read as a double or an int64 (bool: 0 or 1). */
double ltc_ref_get(const void *p, ltc_dtype dt, int64_t i);
int64_t ltc_ref_get_i64(const void *p, ltc_dtype dt, int64_t i);
/* Writes element i as dtype dt (floats to integers truncate toward zero; to bool: != 0). */
void ltc_ref_set(void *p, ltc_dtype dt, int64_t i, double v);
void ltc_ref_set_i64(void *p, ltc_dtype dt, int64_t i, int64_t v);
/* Copies element si of src to element di of dst, converting between dtypes (as Tensor.to). */
void ltc_ref_copy(void *dst, ltc_dtype dd, int64_t di, const void *src, ltc_dtype sd, int64_t si);

/* Splits a shape around dim (0-based) into outer x n x inner: element (o, j, k) is at
 * (o * n + j) * inner + k. dim == LTC_NONE, or a 0-d shape: outer = inner = 1, n = numel. */
void ltc_ref_split(const ltc_shape *s, int64_t dim, int64_t *outer, int64_t *n, int64_t *inner);

#endif
