/* gemm.c - the CPU matmul kernel (PyTorch's torch.matmul rules) and ltc_cpu_gemm, the one entry
 * to OpenBLAS gemm of all the CPU kernels (threads.h). */
#include <cblas.h>
#include <string.h>

#include "elementwise.h"
#include "gemm_small.h"
#include "threads.h"

/* See threads.h. blasint is 32-bit in Debian's OpenBLAS (64-bit in an INTERFACE64 build). */
int64_t ltc_cpu_blas_max = sizeof(blasint) >= 8 ? INT64_MAX : INT32_MAX;

/* C = alpha op(A) op(B) + beta C in plain loops with int64 indices (accumulated in double):
 * for the products whose n, k or leading dims BLAS cannot address. Slow, but such operands
 * hold at least 2^31 elements of one row and are rare; beta 0 never reads C. */
static void gemm_loops(int dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
                       const void *A, int64_t lda, const void *B, int64_t ldb, double beta,
                       void *C, int64_t ldc) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0;
            for (int64_t p = 0; p < k; p++) {
                int64_t ia = ta ? p * lda + i : i * lda + p, ib = tb ? j * ldb + p : p * ldb + j;
                acc += dt == LTC_F32 ? (double)((const float *)A)[ia] * ((const float *)B)[ib]
                                     : ((const double *)A)[ia] * ((const double *)B)[ib];
            }
            int64_t ic = i * ldc + j;
            if (dt == LTC_F32) {
                float *c = (float *)C + ic;
                *c = (float)(alpha * acc + (beta == 0 ? 0 : beta * *c));
            } else {
                double *c = (double *)C + ic;
                *c = alpha * acc + (beta == 0 ? 0 : beta * *c);
            }
        }
}

void ltc_cpu_gemm(int dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
                  const void *A, int64_t lda, const void *B, int64_t ldb, double beta, void *C,
                  int64_t ldc) {
    int64_t lim = ltc_cpu_blas_max;
    size_t es = dt == LTC_F32 ? sizeof(float) : sizeof(double);
    if (m > lim) {
        /* rows of C are independent: split them into blocks BLAS can address (the common
         * case: a batch stacked into one tall matrix) */
        for (int64_t i0 = 0; i0 < m; i0 += lim) {
            int64_t mm = m - i0 < lim ? m - i0 : lim;
            const char *a0 = (const char *)A + (size_t)(ta ? i0 : i0 * lda) * es;
            ltc_cpu_gemm(dt, ta, tb, mm, n, k, alpha, a0, lda, B, ldb, beta,
                         (char *)C + (size_t)(i0 * ldc) * es, ldc);
        }
        return;
    }
    if (n > lim || k > lim || lda > lim || ldb > lim || ldc > lim) {
        gemm_loops(dt, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    if (!ta && tb && ltc_cpu_gemm_thin_nt(m, n, k)) { /* see gemm_small.h */
        ltc_cpu_gemm_nt(dt, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    ltc_cpu_blas_prepare(m * n * k);
    CBLAS_TRANSPOSE oa = ta ? CblasTrans : CblasNoTrans, ob = tb ? CblasTrans : CblasNoTrans;
    if (dt == LTC_F32)
        cblas_sgemm(CblasRowMajor, oa, ob, (blasint)m, (blasint)n, (blasint)k, (float)alpha, A,
                    (blasint)lda, B, (blasint)ldb, (float)beta, C, (blasint)ldc);
    else
        cblas_dgemm(CblasRowMajor, oa, ob, (blasint)m, (blasint)n, (blasint)k, alpha, A,
                    (blasint)lda, B, (blasint)ldb, beta, C, (blasint)ldc);
}

/* A dot product of k elements, in blocks BLAS can address. */
static double dot(ltc_dtype dt, int64_t k, const void *x, const void *y) {
    double acc = 0;
    size_t es = ltc_dtype_size(dt);
    for (int64_t p = 0; p < k; p += ltc_cpu_blas_max) {
        int64_t kk = k - p < ltc_cpu_blas_max ? k - p : ltc_cpu_blas_max;
        const char *xp = (const char *)x + (size_t)p * es, *yp = (const char *)y + (size_t)p * es;
        ltc_cpu_blas_prepare(kk);
        acc += dt == LTC_F32 ? cblas_sdot((blasint)kk, (const float *)xp, 1, (const float *)yp, 1)
                             : cblas_ddot((blasint)kk, (const double *)xp, 1, (const double *)yp, 1);
    }
    return acc;
}

/* One row-major C[m,n] = A[m,k] * B[k,n] with leading dims k, n, n. */
static void gemm(ltc_dtype dt, int64_t m, int64_t n, int64_t k, const void *A, const void *B,
                 void *C) {
    ltc_cpu_gemm(dt, false, false, m, n, k, 1.0, A, k, B, n, 0.0, C, n);
}

/* Element strides of an operand's batch dims aligned (on the right) to the nb batch dims
 * `bdims` of the result: 0 where the operand lacks the dim or has size 1 there. The
 * operand has `opb` batch dims of sizes `odims`, each batch matrix `mat` elements.
 * Returns the operand's number of batch matrices. */
static int64_t batch_strides(const int64_t *odims, int opb, int nb, int64_t mat, int64_t *st) {
    int64_t acc = mat;
    for (int d = nb - 1; d >= 0; d--) {
        int od = d - (nb - opb);
        if (od < 0) {
            st[d] = 0;
            continue;
        }
        st[d] = odims[od] == 1 ? 0 : acc;
        acc *= odims[od];
    }
    return acc / (mat ? mat : 1);
}

/* matmul(Tensor self, Tensor other): float32 (sgemm) or float64 (dgemm) operands of one
 * dtype. 1-d . 1-d is a dot product (0-d result); a 1-d self is a 1 x k row and a 1-d
 * other a k x 1 column, the added dim removed from the result; dims before the last two
 * are batch dims, broadcast against each other (out_shapes[0] holds the result). */
ltc_status ltc_cpu_kernel_matmul(const ltc_kernel_args *a) {
    const ltc_shape *sa = &a->in_shapes[0], *sb = &a->in_shapes[1], *so = &a->out_shapes[0];
    ltc_dtype dt = so->dtype;
    if ((dt != LTC_F32 && dt != LTC_F64) || sa->dtype != dt || sb->dtype != dt)
        return ltc_errorf(LTC_ERR_ARG, "matmul: expected float32 or float64 operands of one "
                          "dtype, got %s and %s", ltc_dtype_name(sa->dtype),
                          ltc_dtype_name(sb->dtype));
    size_t es = ltc_dtype_size(dt);
    int64_t total = ltc_shape_numel(so);
    if (total == 0)
        return LTC_OK;
    int64_t m = sa->ndim >= 2 ? sa->dims[sa->ndim - 2] : 1;
    int64_t k = sa->dims[sa->ndim - 1];
    int64_t n = sb->ndim >= 2 ? sb->dims[sb->ndim - 1] : 1;
    if (k == 0) {
        memset(a->out[0], 0, (size_t)total * es);
        return LTC_OK;
    }
    if (sa->ndim == 1 && sb->ndim == 1) {
        if (k <= ltc_cpu_blas_max) { /* one BLAS call, bits as before */
            ltc_cpu_blas_prepare(k);
            if (dt == LTC_F32)
                *(float *)a->out[0] = cblas_sdot((blasint)k, a->in[0], 1, a->in[1], 1);
            else
                *(double *)a->out[0] = cblas_ddot((blasint)k, a->in[0], 1, a->in[1], 1);
        } else if (dt == LTC_F32) {
            *(float *)a->out[0] = (float)dot(dt, k, a->in[0], a->in[1]);
        } else {
            *(double *)a->out[0] = dot(dt, k, a->in[0], a->in[1]);
        }
        return LTC_OK;
    }

    /* batch dims of the result, and each operand's strides over them */
    int nb = so->ndim - (sa->ndim >= 2) - (sb->ndim >= 2);
    int ab = sa->ndim > 2 ? sa->ndim - 2 : 0, bb = sb->ndim > 2 ? sb->ndim - 2 : 0;
    int64_t sta[LTC_MAX_DIMS], stb[LTC_MAX_DIMS];
    int64_t na = batch_strides(sa->dims, ab, nb, m * k, sta);
    int64_t nbm = batch_strides(sb->dims, bb, nb, k * n, stb);
    int64_t batch = 1;
    for (int d = 0; d < nb; d++)
        batch *= so->dims[d];

    const char *A = a->in[0], *B = a->in[1];
    char *C = a->out[0];
    if (nbm == 1 && na == batch) {
        /* one shared right operand: the batches of self stack into one tall matrix */
        gemm(dt, batch * m, n, k, A, B, C);
        return LTC_OK;
    }
    int64_t idx[LTC_MAX_DIMS] = {0};
    int64_t oa = 0, ob = 0;
    for (int64_t t = 0; t < batch; t++) {
        gemm(dt, m, n, k, A + oa * (int64_t)es, B + ob * (int64_t)es,
             C + t * m * n * (int64_t)es);
        for (int d = nb - 1; d >= 0; d--) {
            idx[d]++;
            oa += sta[d];
            ob += stb[d];
            if (idx[d] < so->dims[d])
                break;
            oa -= sta[d] * so->dims[d];
            ob -= stb[d] * so->dims[d];
            idx[d] = 0;
        }
    }
    return LTC_OK;
}
