/* shape_inference.c - the shape and dtype rules of src/core/shape_inference.h. */
#include <math.h>
#include <string.h>

#include "shape_inference.h"

#define SHAPE_STR(s, buf) ltc_shape_str((s), (buf), sizeof(buf))

ltc_status ltc_broadcast_shapes(const ltc_shape *a, const ltc_shape *b, ltc_shape *out) {
    int n = a->ndim > b->ndim ? a->ndim : b->ndim;
    int64_t dims[LTC_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        int ia = a->ndim - n + i, ib = b->ndim - n + i;
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char sa[128], sb[128];
            return ltc_errorf(LTC_ERR_ARG, "shapes %s and %s are not broadcastable",
                              SHAPE_STR(a, sa), SHAPE_STR(b, sb));
        }
        dims[i] = da == 1 ? db : da;
    }
    out->ndim = n;
    memcpy(out->dims, dims, sizeof(int64_t) * (size_t)n);
    return LTC_OK;
}

/* ---- creation ---------------------------------------------------------------------- */

ltc_status ltc_shape_creation(const int64_t *size, int n_size, ltc_dtype dtype, ltc_shape *out) {
    return ltc_shape_make(out, dtype == LTC_DTYPE_NONE ? LTC_F32 : dtype, n_size, size);
}

ltc_status ltc_shape_rand(const int64_t *size, int n_size, ltc_dtype dtype, ltc_shape *out) {
    if (dtype != LTC_DTYPE_NONE && !ltc_dtype_is_float(dtype))
        return ltc_errorf(LTC_ERR_ARG, "dtype %s is not a floating dtype (random samples are "
                          "float32 or float64)", ltc_dtype_name(dtype));
    return ltc_shape_creation(size, n_size, dtype, out);
}

ltc_status ltc_shape_scalar_tensor(double value, ltc_dtype dtype, ltc_shape *out) {
    ltc_status st = ltc_dtype_check_f64(value, dtype == LTC_DTYPE_NONE ? LTC_F32 : dtype);
    if (st) return st;
    return ltc_shape_creation(NULL, 0, dtype, out);
}

ltc_status ltc_shape_full(const int64_t *size, int n_size, const ltc_shape *fill_value,
                          ltc_dtype dtype, ltc_shape *out) {
    if (fill_value->ndim != 0)
        return ltc_errorf(LTC_ERR_ARG, "fill_value must be a number or a 0-d tensor, got %d-d",
                          fill_value->ndim);
    return ltc_shape_creation(size, n_size, dtype, out);
}

ltc_status ltc_shape_arange(double start, double end, double step, ltc_dtype dtype,
                            ltc_shape *out) {
    if (!isfinite(start) || !isfinite(end) || !isfinite(step))
        return ltc_errorf(LTC_ERR_ARG, "start, end and step must be finite (got %g, %g, %g)",
                          start, end, step);
    if (step == 0) return ltc_errorf(LTC_ERR_ARG, "step must be nonzero");
    if ((step > 0 && end < start) || (step < 0 && end > start))
        return ltc_errorf(LTC_ERR_ARG, "upper bound and step sign are inconsistent (start %g, end %g, step %g)",
                          start, end, step);
    double n = ceil((end - start) / step);
    if (n > 1e15) return ltc_errorf(LTC_ERR_ARG, "too many elements (%g)", n);
    int64_t len = (int64_t)n;
    return ltc_shape_make(out, dtype == LTC_DTYPE_NONE ? LTC_F32 : dtype, 1, &len);
}

/* ---- elementwise --------------------------------------------------------------------- */

ltc_status ltc_shape_binary(const ltc_shape *self, const ltc_shape *other, ltc_shape *out) {
    out->dtype = self->dtype;
    return ltc_broadcast_shapes(self, other, out);
}

ltc_status ltc_shape_sub(const ltc_shape *self, const ltc_shape *other, ltc_shape *out) {
    if (self->dtype == LTC_BOOL || other->dtype == LTC_BOOL)
        return ltc_errorf(LTC_ERR_ARG, "subtraction with a bool tensor is not supported, as in "
                          "PyTorch (use logical_xor for two masks, logical_not to invert one)");
    return ltc_shape_binary(self, other, out);
}

ltc_status ltc_shape_sign(const ltc_shape *self, ltc_shape *out) {
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_compare(const ltc_shape *self, const ltc_shape *other, ltc_shape *out) {
    out->dtype = LTC_BOOL;
    return ltc_broadcast_shapes(self, other, out);
}

ltc_status ltc_shape_unary(const ltc_shape *self, ltc_shape *out) {
    if (self->dtype == LTC_BOOL)
        return ltc_errorf(LTC_ERR_ARG, "not defined for bool tensors (convert with :to() first)");
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_to(const ltc_shape *self, ltc_dtype dtype, ltc_shape *out) {
    *out = *self;
    out->dtype = dtype;
    return LTC_OK;
}

ltc_status ltc_shape_predicate(const ltc_shape *self, ltc_shape *out) {
    *out = *self;
    out->dtype = LTC_BOOL;
    return LTC_OK;
}

ltc_status ltc_shape_leaky_relu(const ltc_shape *self, double negative_slope, ltc_shape *out) {
    (void)negative_slope;
    return ltc_shape_unary(self, out);
}

ltc_status ltc_shape_polygamma(const ltc_shape *self, int64_t order, ltc_shape *out) {
    if (order != 0 && order != 1)
        return ltc_errorf(LTC_ERR_ARG, "order must be 0 (digamma) or 1 (trigamma), got %lld",
                          (long long)order);
    return ltc_shape_unary(self, out);
}

ltc_status ltc_shape_clamp(const ltc_shape *self, double min, double max, ltc_shape *out) {
    if (isnan(min) && isnan(max)) return ltc_errorf(LTC_ERR_ARG, "at least one of min and max must be given");
    return ltc_shape_unary(self, out);
}

/* Broadcasts three shapes into out's sizes. */
static ltc_status broadcast3(const ltc_shape *a, const ltc_shape *b, const ltc_shape *c, ltc_shape *out) {
    ltc_shape ab;
    ltc_status st = ltc_broadcast_shapes(a, b, &ab);
    if (st) return st;
    return ltc_broadcast_shapes(&ab, c, out);
}

ltc_status ltc_shape_where(const ltc_shape *condition, const ltc_shape *self,
                           const ltc_shape *other, ltc_shape *out) {
    if (condition->dtype != LTC_BOOL)
        return ltc_errorf(LTC_ERR_ARG, "condition must be a bool tensor, got %s (compare first, e.g. x:gt(0))",
                          ltc_dtype_name(condition->dtype));
    out->dtype = self->dtype;
    return broadcast3(condition, self, other, out);
}

ltc_status ltc_shape_ternary(const ltc_shape *self, const ltc_shape *a, const ltc_shape *b,
                             ltc_shape *out) {
    out->dtype = self->dtype;
    return broadcast3(self, a, b, out);
}

ltc_status ltc_shape_addcmul(const ltc_shape *self, const ltc_shape *tensor1,
                             const ltc_shape *tensor2, double value, ltc_shape *out) {
    (void)value;
    if (self->dtype == LTC_BOOL) return ltc_errorf(LTC_ERR_ARG, "not defined for bool tensors");
    return ltc_shape_ternary(self, tensor1, tensor2, out);
}

/* ---- reductions ---------------------------------------------------------------------- */

/* The shape left after reducing `dim` (LTC_NONE: every dim). */
static void reduced(const ltc_shape *self, int64_t dim, bool keepdim, ltc_dtype dt,
                    ltc_shape *out) {
    memset(out, 0, sizeof *out);
    out->dtype = dt;
    if (dim == LTC_NONE) {
        out->ndim = keepdim ? self->ndim : 0;
        for (int i = 0; i < out->ndim; i++) out->dims[i] = 1;
        return;
    }
    for (int i = 0; i < self->ndim; i++) {
        if (i == dim && !keepdim) continue;
        out->dims[out->ndim++] = i == dim ? 1 : self->dims[i];
    }
}

ltc_status ltc_shape_sum(const ltc_shape *self, int64_t dim, bool keepdim, ltc_shape *out) {
    reduced(self, dim, keepdim, ltc_dtype_is_float(self->dtype) ? self->dtype : LTC_I64, out);
    return LTC_OK;
}

ltc_status ltc_shape_mean(const ltc_shape *self, int64_t dim, bool keepdim, ltc_shape *out) {
    if (!ltc_dtype_is_float(self->dtype))
        return ltc_errorf(LTC_ERR_ARG, "needs a floating dtype, got %s (convert with :to(\"float32\"))",
                          ltc_dtype_name(self->dtype));
    reduced(self, dim, keepdim, self->dtype, out);
    return LTC_OK;
}

static ltc_status check_nonempty_dim(const ltc_shape *self, int64_t dim) {
    char s[128];
    if (dim == LTC_NONE ? ltc_shape_numel(self) == 0 : (self->ndim > 0 && self->dims[dim] == 0))
        return ltc_errorf(LTC_ERR_ARG, "cannot reduce an empty tensor %s (no identity)",
                          SHAPE_STR(self, s));
    return LTC_OK;
}

ltc_status ltc_shape_max(const ltc_shape *self, ltc_shape *out) {
    ltc_status st = check_nonempty_dim(self, LTC_NONE);
    if (st) return st;
    reduced(self, LTC_NONE, false, self->dtype, out);
    return LTC_OK;
}

ltc_status ltc_shape_max_dim(const ltc_shape *self, int64_t dim, bool keepdim, ltc_shape *out) {
    ltc_status st = check_nonempty_dim(self, self->ndim ? dim : LTC_NONE);
    if (st) return st;
    reduced(self, self->ndim ? dim : LTC_NONE, keepdim, self->dtype, &out[0]);
    reduced(self, self->ndim ? dim : LTC_NONE, keepdim, LTC_I64, &out[1]);
    return LTC_OK;
}

ltc_status ltc_shape_argmax(const ltc_shape *self, int64_t dim, bool keepdim, ltc_shape *out) {
    if (self->ndim == 0) dim = LTC_NONE;
    ltc_status st = check_nonempty_dim(self, dim);
    if (st) return st;
    reduced(self, dim, keepdim, LTC_I64, out);
    return LTC_OK;
}

ltc_status ltc_shape_var(const ltc_shape *self, int64_t dim, bool unbiased, bool keepdim,
                         ltc_shape *out) {
    (void)unbiased;
    return ltc_shape_mean(self, dim, keepdim, out);
}

ltc_status ltc_shape_norm(const ltc_shape *self, double p, int64_t dim, bool keepdim,
                          ltc_shape *out) {
    if (isnan(p)) return ltc_errorf(LTC_ERR_ARG, "p must be a number, got NaN");
    return ltc_shape_mean(self, dim, keepdim, out);
}

ltc_status ltc_shape_all(const ltc_shape *self, int64_t dim, bool keepdim, ltc_shape *out) {
    reduced(self, self->ndim ? dim : LTC_NONE, keepdim, LTC_BOOL, out);
    return LTC_OK;
}

ltc_status ltc_shape_cumsum(const ltc_shape *self, int64_t dim, ltc_shape *out) {
    (void)dim;
    *out = *self;
    if (!ltc_dtype_is_float(self->dtype)) out->dtype = LTC_I64;
    return LTC_OK;
}

/* ---- linear algebra ------------------------------------------------------------------------ */

ltc_status ltc_shape_matmul(const ltc_shape *a, const ltc_shape *b, ltc_shape *out) {
    char sa[128], sb[128];
    if (a->dtype != b->dtype || !ltc_dtype_is_float(a->dtype))
        return ltc_errorf(LTC_ERR_ARG, "needs two tensors of the same floating dtype, got %s and %s",
                          ltc_dtype_name(a->dtype), ltc_dtype_name(b->dtype));
    if (a->ndim == 0 || b->ndim == 0)
        return ltc_errorf(LTC_ERR_ARG, "both arguments need at least 1 dim, got shapes %s and %s",
                          SHAPE_STR(a, sa), SHAPE_STR(b, sb));
    int64_t ka = a->dims[a->ndim - 1];
    int64_t kb = b->ndim == 1 ? b->dims[0] : b->dims[b->ndim - 2];
    if (ka != kb)
        return ltc_errorf(LTC_ERR_ARG, "shapes %s and %s cannot be multiplied (%lld != %lld)",
                          SHAPE_STR(a, sa), SHAPE_STR(b, sb), (long long)ka, (long long)kb);
    /* batch dims: all but the last two (a 1-d operand has none) */
    ltc_shape ba = {.ndim = a->ndim > 2 ? a->ndim - 2 : 0};
    ltc_shape bb = {.ndim = b->ndim > 2 ? b->ndim - 2 : 0};
    memcpy(ba.dims, a->dims, sizeof(int64_t) * (size_t)ba.ndim);
    memcpy(bb.dims, b->dims, sizeof(int64_t) * (size_t)bb.ndim);
    ltc_shape batch;
    if (ltc_broadcast_shapes(&ba, &bb, &batch))
        return ltc_errorf(LTC_ERR_ARG, "batch dims of shapes %s and %s are not broadcastable",
                          SHAPE_STR(a, sa), SHAPE_STR(b, sb));
    int64_t dims[LTC_MAX_DIMS + 2];
    int n = 0;
    for (int i = 0; i < batch.ndim; i++) dims[n++] = batch.dims[i];
    if (a->ndim >= 2) dims[n++] = a->dims[a->ndim - 2];
    if (b->ndim >= 2) dims[n++] = b->dims[b->ndim - 1];
    return ltc_shape_make(out, a->dtype, n, dims);
}

/* ---- shape and views --------------------------------------------------------------------------- */

ltc_status ltc_shape_transpose(const ltc_shape *self, int64_t dim0, int64_t dim1, ltc_shape *out) {
    *out = *self;
    if (self->ndim == 0) return LTC_OK;
    out->dims[dim0] = self->dims[dim1];
    out->dims[dim1] = self->dims[dim0];
    return LTC_OK;
}

ltc_status ltc_shape_t(const ltc_shape *self, ltc_shape *out) {
    if (self->ndim > 2)
        return ltc_errorf(LTC_ERR_ARG, "expects a tensor with at most 2 dims, got %d (use transpose)",
                          self->ndim);
    return ltc_shape_transpose(self, 0, self->ndim - 1, out);
}

ltc_status ltc_shape_view(const ltc_shape *self, const int64_t *size, int n_size, ltc_shape *out) {
    int64_t dims[LTC_MAX_DIMS], known = 1, numel = ltc_shape_numel(self);
    int infer = -1;
    char s[128];
    if (n_size > LTC_MAX_DIMS)
        return ltc_errorf(LTC_ERR_ARG, "%d dims given, at most %d supported", n_size, LTC_MAX_DIMS);
    for (int i = 0; i < n_size; i++) {
        dims[i] = size[i];
        if (size[i] == -1) {
            if (infer >= 0) return ltc_errorf(LTC_ERR_ARG, "only one size may be -1");
            infer = i;
        } else if (size[i] < 0) {
            return ltc_errorf(LTC_ERR_ARG, "invalid size %lld", (long long)size[i]);
        } else if (__builtin_mul_overflow(known, size[i], &known)) {
            return ltc_errorf(LTC_ERR_ARG, "the sizes given have too many elements");
        }
    }
    if (infer >= 0) {
        if (known == 0 || numel % known != 0)
            return ltc_errorf(LTC_ERR_ARG, "shape %s with %lld elements cannot take a size with -1 here",
                              SHAPE_STR(self, s), (long long)numel);
        dims[infer] = numel / known;
        known = numel;
    }
    if (known != numel) {
        char want[128];
        ltc_shape w = {.ndim = n_size};
        memcpy(w.dims, dims, sizeof(int64_t) * (size_t)n_size);
        return ltc_errorf(LTC_ERR_ARG, "shape %s (%lld elements) cannot be viewed as %s (%lld elements)",
                          SHAPE_STR(self, s), (long long)numel, SHAPE_STR(&w, want), (long long)known);
    }
    return ltc_shape_make(out, self->dtype, n_size, dims);
}

/* Checks a 1-based (or negative) index against a dim of `size`; 0-based in *out. */
static ltc_status check_index(int64_t index, int64_t size, int64_t dim, int64_t *out) {
    if (index == 0) return ltc_errorf(LTC_ERR_ARG, "index 0 is invalid (indices are 1-based)");
    int64_t i = ltc_index_wrap(index, size);
    if (i < 0 || i >= size)
        return ltc_errorf(LTC_ERR_ARG, "index %lld out of range for dim %lld of size %lld",
                          (long long)index, (long long)dim + 1, (long long)size);
    *out = i;
    return LTC_OK;
}

ltc_status ltc_shape_narrow(const ltc_shape *self, int64_t dim, int64_t start, int64_t length,
                            ltc_shape *out) {
    if (self->ndim == 0) return ltc_errorf(LTC_ERR_ARG, "cannot narrow a 0-d tensor");
    int64_t size = self->dims[dim], s0;
    /* start may be one past the end when length is 0, as in PyTorch */
    if (start == size + 1 && length == 0) s0 = size;
    else if (check_index(start, size, dim, &s0)) return LTC_ERR_ARG;
    if (length < 0 || length > size - s0) /* written so it cannot overflow */
        return ltc_errorf(LTC_ERR_ARG, "start %lld with length %lld exceeds dim %lld of size %lld",
                          (long long)start, (long long)length, (long long)dim + 1, (long long)size);
    *out = *self;
    out->dims[dim] = length;
    return LTC_OK;
}

ltc_status ltc_shape_select(const ltc_shape *self, int64_t dim, int64_t index, ltc_shape *out) {
    int64_t i;
    if (self->ndim == 0) return ltc_errorf(LTC_ERR_ARG, "cannot select from a 0-d tensor");
    if (check_index(index, self->dims[dim], dim, &i)) return LTC_ERR_ARG;
    *out = *self;
    out->ndim--;
    for (int k = (int)dim; k < out->ndim; k++) out->dims[k] = self->dims[k + 1];
    out->dims[out->ndim] = 0;
    return LTC_OK;
}

ltc_status ltc_shape_broadcast_to(const ltc_shape *self, const int64_t *size, int n_size,
                                  ltc_shape *out) {
    ltc_shape want;
    char a[128], b[128];
    if (ltc_shape_make(&want, self->dtype, n_size, size)) return LTC_ERR_ARG;
    bool ok = n_size >= self->ndim;
    for (int i = 0; ok && i < self->ndim; i++) {
        int64_t d = self->dims[self->ndim - 1 - i], w = want.dims[n_size - 1 - i];
        ok = d == w || d == 1;
    }
    if (!ok)
        return ltc_errorf(LTC_ERR_ARG, "shape %s cannot be broadcast to %s", SHAPE_STR(self, a),
                          SHAPE_STR(&want, b));
    *out = want;
    return LTC_OK;
}

/* The region of a scatter must have src's sizes and dtype. */
static ltc_status check_src(const ltc_shape *region, const ltc_shape *src) {
    char a[128], b[128];
    if (!ltc_shape_equal(region, src))
        return ltc_errorf(LTC_ERR_ARG, "src %s %s does not match the region %s %s",
                          ltc_dtype_name(src->dtype), SHAPE_STR(src, a),
                          ltc_dtype_name(region->dtype), SHAPE_STR(region, b));
    return LTC_OK;
}

ltc_status ltc_shape_narrow_scatter(const ltc_shape *self, const ltc_shape *src, int64_t dim,
                                    int64_t start, ltc_shape *out) {
    ltc_shape region;
    if (self->ndim == 0 || src->ndim != self->ndim)
        return ltc_errorf(LTC_ERR_ARG, "src must have self's number of dims (%d), got %d",
                          self->ndim, src->ndim);
    ltc_status st = ltc_shape_narrow(self, dim, start, src->dims[dim], &region);
    if (st || (st = check_src(&region, src))) return st;
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_select_scatter(const ltc_shape *self, const ltc_shape *src, int64_t dim,
                                    int64_t index, ltc_shape *out) {
    ltc_shape region;
    ltc_status st = ltc_shape_select(self, dim, index, &region);
    if (st || (st = check_src(&region, src))) return st;
    *out = *self;
    return LTC_OK;
}

/* ---- neural-network functions ---------------------------------------------------------------- */

ltc_status ltc_shape_softmax(const ltc_shape *self, int64_t dim, ltc_shape *out) {
    (void)dim;
    if (!ltc_dtype_is_float(self->dtype))
        return ltc_errorf(LTC_ERR_ARG, "needs a floating dtype, got %s", ltc_dtype_name(self->dtype));
    *out = *self;
    return LTC_OK;
}

/* ---- checks shared by the shape_*.c rules ------------------------------------------------- */

ltc_status ltc_shape_need_float(const ltc_shape *s, const char *what) {
    if (!ltc_dtype_is_float(s->dtype))
        return ltc_errorf(LTC_ERR_ARG, "%s must be float32 or float64, got %s", what,
                          ltc_dtype_name(s->dtype));
    return LTC_OK;
}

ltc_status ltc_shape_src_covers_index(const ltc_shape *index, const ltc_shape *src) {
    if (src->ndim != index->ndim)
        return ltc_errorf(LTC_ERR_ARG, "src must have index's number of dims (%d), got %d",
                          index->ndim, src->ndim);
    for (int d = 0; d < src->ndim; d++)
        if (index->dims[d] > src->dims[d]) {
            char a[128], b[128];
            return ltc_errorf(LTC_ERR_ARG, "index of size %s is larger than src %s",
                              SHAPE_STR(index, a), SHAPE_STR(src, b));
        }
    return LTC_OK;
}
