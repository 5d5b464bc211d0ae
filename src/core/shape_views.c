/* shape_views.c - shape rules of the shape ops: the views transpose, t, view, reshape,
 * narrow, select, permute, unsqueeze, squeeze, flatten and expand, broadcast_to and the
 * scatters that invert narrow and select, and the copying ops cat, stack, repeat and flip
 * (kernels: src/cpu/shape_ops.c, join.c, scatter.c); declared in shape_inference.h. Dims are
 * 1-based or negative on entry where the schema says int or int[] (the generated entry wraps
 * only `dim` arguments). PyTorch's rules throughout. */
#include <stdio.h>
#include <string.h>

#include "shape_inference.h"

#define SHAPE_STR(s, buf) ltc_shape_str((s), (buf), sizeof(buf))

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

/* The region of a scatter must have src's sizes and dtype. */
static ltc_status check_src(const ltc_shape *region, const ltc_shape *src) {
    char a[128], b[128];
    if (!ltc_shape_equal(region, src))
        return ltc_errorf(LTC_ERR_ARG, "src %s %s does not match the region %s %s",
                          ltc_dtype_name(src->dtype), SHAPE_STR(src, a),
                          ltc_dtype_name(region->dtype), SHAPE_STR(region, b));
    return LTC_OK;
}

/* Wraps a 1-based or negative dim of a list into 0..ndim-1, naming `what`. */
static ltc_status wrap(int64_t dim, int ndim, const char *what, int *out) {
    ltc_status st = ltc_dim_wrap(dim, ndim, out);
    if (st) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", ltc_last_error());
        return ltc_errorf(st, "%s: %s", what, msg);
    }
    return LTC_OK;
}

/* Wraps dims[0..n) and checks that none repeats; writes the 0-based dims into out. */
static ltc_status wrap_dims(const int64_t *dims, int n, int ndim, const char *what, int *out) {
    bool seen[LTC_MAX_DIMS] = {false};
    for (int i = 0; i < n; i++) {
        ltc_status st = wrap(dims[i], ndim, what, &out[i]);
        if (st) return st;
        if (ndim == 0) continue; /* a 0-d tensor's dim 1 and -1 are the same nothing */
        if (seen[out[i]])
            return ltc_errorf(LTC_ERR_ARG, "%s: dim %lld appears twice", what, (long long)dims[i]);
        seen[out[i]] = true;
    }
    return LTC_OK;
}

/* cat's rule: every tensor has the first non-skipped one's sizes except along dim; 1-d empty
 * tensors are skipped (PyTorch's legacy rule). Writes the joined shape. */
static ltc_status join(const ltc_shape *tensors, int n, int64_t dim, bool stack, ltc_shape *out) {
    char a[128], b[128];
    if (n < 1) return ltc_errorf(LTC_ERR_ARG, "expected a non-empty list of tensors");
    int ref = -1;
    for (int i = 0; i < n && ref < 0; i++)
        if (stack || !(tensors[i].ndim == 1 && tensors[i].dims[0] == 0)) ref = i;
    if (ref < 0) { /* every tensor is a 1-d empty one */
        *out = tensors[0];
        return LTC_OK;
    }
    const ltc_shape *r = &tensors[ref];
    if (!stack && r->ndim == 0)
        return ltc_errorf(LTC_ERR_ARG, "0-d tensors cannot be concatenated (tensor %d)", ref + 1);
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        const ltc_shape *t = &tensors[i];
        if (t->dtype != r->dtype)
            return ltc_errorf(LTC_ERR_ARG, "tensor %d is %s, tensor %d %s", i + 1,
                              ltc_dtype_name(t->dtype), ref + 1, ltc_dtype_name(r->dtype));
        if (!stack && t->ndim == 1 && t->dims[0] == 0) continue;
        bool ok = t->ndim == r->ndim;
        for (int d = 0; ok && d < r->ndim; d++) ok = d == dim && !stack ? true : t->dims[d] == r->dims[d];
        if (!ok)
            return ltc_errorf(LTC_ERR_ARG, "tensor %d has size %s, tensor %d %s: sizes must match%s",
                              i + 1, SHAPE_STR(t, a), ref + 1, SHAPE_STR(r, b),
                              stack ? "" : " except in the joined dim");
        total += stack ? 1 : t->dims[dim];
    }
    *out = *r;
    if (stack) {
        if (r->ndim >= LTC_MAX_DIMS)
            return ltc_errorf(LTC_ERR_ARG, "a tensor has at most %d dims", LTC_MAX_DIMS);
        memmove(&out->dims[dim + 1], &out->dims[dim], sizeof(int64_t) * (size_t)(r->ndim - dim));
        out->ndim++;
    }
    out->dims[dim] = total;
    return ltc_shape_make(out, out->dtype, out->ndim, out->dims);
}

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

ltc_status ltc_shape_permute(const ltc_shape *self, const int64_t *dims, int n_dims,
                             ltc_shape *out) {
    int d[LTC_MAX_DIMS];
    if (n_dims != self->ndim && !(self->ndim == 0 && n_dims == 0))
        return ltc_errorf(LTC_ERR_ARG, "dims must name each of the %d dims once, got %d dims",
                          self->ndim, n_dims);
    ltc_status st = wrap_dims(dims, n_dims, self->ndim, "dims", d);
    if (st) return st;
    *out = *self;
    for (int i = 0; i < self->ndim; i++) out->dims[i] = self->dims[d[i]];
    return LTC_OK;
}

ltc_status ltc_shape_unsqueeze(const ltc_shape *self, int64_t dim, ltc_shape *out) {
    int d;
    if (self->ndim >= LTC_MAX_DIMS)
        return ltc_errorf(LTC_ERR_ARG, "a tensor has at most %d dims", LTC_MAX_DIMS);
    ltc_status st = wrap(dim, self->ndim + 1, "dim", &d);
    if (st) return st;
    *out = *self;
    out->ndim = self->ndim + 1;
    for (int i = 0, k = 0; i < out->ndim; i++) out->dims[i] = i == d ? 1 : self->dims[k++];
    return LTC_OK;
}

ltc_status ltc_shape_squeeze(const ltc_shape *self, ltc_shape *out) {
    *out = *self;
    out->ndim = 0;
    for (int i = 0; i < self->ndim; i++)
        if (self->dims[i] != 1) out->dims[out->ndim++] = self->dims[i];
    return LTC_OK;
}

ltc_status ltc_shape_squeeze_dim(const ltc_shape *self, int64_t dim, ltc_shape *out) {
    *out = *self;
    if (self->ndim == 0 || self->dims[dim] != 1) return LTC_OK; /* as PyTorch: no change */
    out->ndim = self->ndim - 1;
    for (int i = 0, k = 0; i < self->ndim; i++)
        if (i != dim) out->dims[k++] = self->dims[i];
    return LTC_OK;
}

ltc_status ltc_shape_flatten(const ltc_shape *self, int64_t start_dim, int64_t end_dim,
                             ltc_shape *out) {
    *out = *self;
    if (self->ndim == 0) { /* PyTorch: a 0-d tensor flattens to one element */
        out->ndim = 1;
        out->dims[0] = 1;
        return LTC_OK;
    }
    if (start_dim > end_dim)
        return ltc_errorf(LTC_ERR_ARG, "start_dim (%lld) must not come after end_dim (%lld)",
                          (long long)start_dim + 1, (long long)end_dim + 1);
    int64_t n = 1;
    for (int64_t i = start_dim; i <= end_dim; i++) n *= self->dims[i];
    out->ndim = 0;
    for (int i = 0; i < self->ndim; i++) {
        if (i > start_dim && i <= end_dim) continue;
        out->dims[out->ndim++] = i == start_dim ? n : self->dims[i];
    }
    return LTC_OK;
}

ltc_status ltc_shape_expand(const ltc_shape *self, const int64_t *size, int n_size,
                            ltc_shape *out) {
    char a[128];
    if (n_size < self->ndim)
        return ltc_errorf(LTC_ERR_ARG, "the size has %d dims, fewer than the tensor's %d (%s)",
                          n_size, self->ndim, SHAPE_STR(self, a));
    int64_t dims[LTC_MAX_DIMS];
    if (n_size > LTC_MAX_DIMS)
        return ltc_errorf(LTC_ERR_ARG, "a tensor has at most %d dims", LTC_MAX_DIMS);
    for (int i = 0; i < n_size; i++) {
        int k = i - (n_size - self->ndim); /* self's dim lined up with i, or < 0 for new dims */
        int64_t s = size[i];
        if (s == -1) {
            if (k < 0)
                return ltc_errorf(LTC_ERR_ARG, "size -1 (keep) is not allowed for the new "
                                  "leading dim %d", i + 1);
            s = self->dims[k];
        } else if (s < 0) {
            return ltc_errorf(LTC_ERR_ARG, "size %lld of dim %d is negative", (long long)s, i + 1);
        } else if (k >= 0 && self->dims[k] != 1 && self->dims[k] != s) {
            return ltc_errorf(LTC_ERR_ARG, "cannot expand dim %d of %s (size %lld) to %lld: only "
                              "size-1 dims expand", k + 1, SHAPE_STR(self, a),
                              (long long)self->dims[k], (long long)s);
        }
        dims[i] = s;
    }
    return ltc_shape_make(out, self->dtype, n_size, dims);
}

ltc_status ltc_shape_cat(const ltc_shape *tensors, int n_tensors, int64_t dim, ltc_shape *out) {
    return join(tensors, n_tensors, dim, false, out);
}

ltc_status ltc_shape_stack(const ltc_shape *tensors, int n_tensors, int64_t dim, ltc_shape *out) {
    int d;
    if (n_tensors < 1) return ltc_errorf(LTC_ERR_ARG, "expected a non-empty list of tensors");
    ltc_status st = wrap(dim, tensors[0].ndim + 1, "dim", &d);
    if (st) return st;
    return join(tensors, n_tensors, d, true, out);
}

ltc_status ltc_shape_repeat(const ltc_shape *self, const int64_t *repeats, int n_repeats,
                            ltc_shape *out) {
    if (n_repeats < self->ndim)
        return ltc_errorf(LTC_ERR_ARG, "repeats has %d entries, fewer than the tensor's %d dims",
                          n_repeats, self->ndim);
    if (n_repeats > LTC_MAX_DIMS)
        return ltc_errorf(LTC_ERR_ARG, "a tensor has at most %d dims", LTC_MAX_DIMS);
    int64_t dims[LTC_MAX_DIMS];
    for (int i = 0; i < n_repeats; i++) {
        int k = i - (n_repeats - self->ndim);
        if (repeats[i] < 0)
            return ltc_errorf(LTC_ERR_ARG, "repeats must not be negative, got %lld at %d",
                              (long long)repeats[i], i + 1);
        int64_t s = k >= 0 ? self->dims[k] : 1;
        if (s && repeats[i] > INT64_MAX / s)
            return ltc_errorf(LTC_ERR_ARG, "repeats %lld at %d is too large", (long long)repeats[i], i + 1);
        dims[i] = s * repeats[i];
    }
    return ltc_shape_make(out, self->dtype, n_repeats, dims);
}

ltc_status ltc_shape_flip(const ltc_shape *self, const int64_t *dims, int n_dims, ltc_shape *out) {
    int d[LTC_MAX_DIMS];
    if (n_dims > LTC_MAX_DIMS)
        return ltc_errorf(LTC_ERR_ARG, "dims has %d entries (at most %d)", n_dims, LTC_MAX_DIMS);
    ltc_status st = wrap_dims(dims, n_dims, self->ndim, "dims", d);
    if (st) return st;
    *out = *self;
    return LTC_OK;
}
