/* linalg.c - reference kernels of linear algebra: triple loops, no BLAS; tril and triu. */
#include "ref.h"

/* matmul(Tensor self, Tensor other): PyTorch's torch.matmul. A 1-d self is a 1 x k row, a
 * 1-d other a k x 1 column (the added dims are not in the result); the dims before the
 * last two are batch dims that broadcast. For each output element: its batch index, row i
 * and column j, then sum over p of self[batch, i, p] * other[batch, p, j] in double. */
ltc_status ltc_ref_kernel_matmul(const ltc_kernel_args *a) {
    const ltc_shape *sa = &a->in_shapes[0], *sb = &a->in_shapes[1], *so = &a->out_shapes[0];
    int64_t m = sa->ndim >= 2 ? sa->dims[sa->ndim - 2] : 1;
    int64_t k = sa->dims[sa->ndim - 1];
    int64_t n = sb->ndim >= 2 ? sb->dims[sb->ndim - 1] : 1;
    /* the batch dims of each operand and of the result, as shapes */
    ltc_shape ba = {.ndim = sa->ndim > 2 ? sa->ndim - 2 : 0};
    ltc_shape bb = {.ndim = sb->ndim > 2 ? sb->ndim - 2 : 0};
    ltc_shape bo = {.ndim = so->ndim - (sa->ndim >= 2) - (sb->ndim >= 2)};
    for (int d = 0; d < ba.ndim; d++) ba.dims[d] = sa->dims[d];
    for (int d = 0; d < bb.ndim; d++) bb.dims[d] = sb->dims[d];
    for (int d = 0; d < bo.ndim; d++) bo.dims[d] = so->dims[d];
    int64_t batches = ltc_shape_numel(&bo);
    for (int64_t t = 0; t < batches; t++) {
        int64_t ta = ltc_ref_offset(&bo, &ba, t), tb = ltc_ref_offset(&bo, &bb, t);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t p = 0; p < k; p++)
                    s += ltc_ref_get(a->in[0], sa->dtype, ta * m * k + i * k + p) *
                         ltc_ref_get(a->in[1], sb->dtype, tb * k * n + p * n + j);
                ltc_ref_set(a->out[0], so->dtype, t * m * n + i * n + j, s);
            }
    }
    return LTC_OK;
}

/* mm, bmm and dot are matmuls of 2-d, 3-d and 1-d operands. */
ltc_status ltc_ref_kernel_mm(const ltc_kernel_args *a) { return ltc_ref_kernel_matmul(a); }
ltc_status ltc_ref_kernel_bmm(const ltc_kernel_args *a) { return ltc_ref_kernel_matmul(a); }
ltc_status ltc_ref_kernel_dot(const ltc_kernel_args *a) { return ltc_ref_kernel_matmul(a); }

/* outer(Tensor self, Tensor vec2): out[i][j] = self[i] * vec2[j]. */
ltc_status ltc_ref_kernel_outer(const ltc_kernel_args *a) {
    const ltc_shape *os = &a->out_shapes[0];
    int64_t m = os->dims[1];
    for (int64_t i = 0; i < ltc_shape_numel(os); i++)
        ltc_ref_set(a->out[0], os->dtype, i,
                    ltc_ref_get(a->in[0], a->in_shapes[0].dtype, i / m) *
                        ltc_ref_get(a->in[1], a->in_shapes[1].dtype, i % m));
    return LTC_OK;
}

/* tril(Tensor self, int diagonal), triu(...): element (.., i, j) is self's where j - i <=
 * diagonal (tril) or j - i >= diagonal (triu), else 0. */
static ltc_status triangle(const ltc_kernel_args *a, bool upper) {
    const ltc_shape *s = &a->in_shapes[0];
    const int64_t m = s->dims[s->ndim - 2], n = s->dims[s->ndim - 1], d = a->attrs[0].i;
    for (int64_t k = 0; k < ltc_shape_numel(s); k++) {
        int64_t i = k / n % m, j = k % n; /* j - i cannot overflow; compared with d as is */
        bool keep = upper ? j - i >= d : j - i <= d;
        if (keep) ltc_ref_copy(a->out[0], s->dtype, k, a->in[0], s->dtype, k);
        else ltc_ref_set_i64(a->out[0], s->dtype, k, 0);
    }
    return LTC_OK;
}

ltc_status ltc_ref_kernel_tril(const ltc_kernel_args *a) { return triangle(a, false); }
ltc_status ltc_ref_kernel_triu(const ltc_kernel_args *a) { return triangle(a, true); }
