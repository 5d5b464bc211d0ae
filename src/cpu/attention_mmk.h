/*
 * attention_mmk.h - the small-block product of attention_impl.h at one vector width, included
 * by it once per width and element type with MMK_NAME (the function), MMK_VB (the vector
 * width in bytes) and MMK_ATTR (its target attribute) defined; T, FN and NOLIM come from
 * attention_impl.h. Not a header of its own.
 *
 * C[m, n] = alpha * op(A) . B + beta * C (beta 0 or 1; 0 never reads C), B [k, n] row-major
 * (row stride ldb), op(A) = A [m, k] (row stride lda) or, ta, A^T with A [k, m]. Four rows
 * of C by two vectors at a time in registers, k inner: no packing, no zeroing of C, none of
 * OpenBLAS's per-call set-up, which cost more than the arithmetic on the 64 x 64 x 32
 * blocks of tiny_gpt's heads. Columns past the last whole vector are scalar sums.
 */
#define MMK_VEC CAT(MMK_NAME, v)
typedef T MMK_VEC __attribute__((vector_size(MMK_VB)));
#define VW ((int64_t)(MMK_VB / sizeof(T)))
/* rows i..i+rb-1 (rb <= 4) of C at columns j..j+NV*VW-1 (NV 1 or 2) */
#define MMK4(NV)                                                                               \
    do {                                                                                       \
        MMK_VEC z = {0}, a00 = z, a01 = z, a10 = z, a11 = z, a20 = z, a21 = z, a30 = z,        \
                a31 = z;                                                                       \
        const T *bp = B + k0 * ldb + j;                                                        \
        for (int64_t p = k0; p < k1; p++, bp += ldb) {                                         \
            MMK_VEC b0, b1 = z;                                                                \
            memcpy(&b0, bp, sizeof b0);                                                        \
            if (NV == 2) memcpy(&b1, bp + VW, sizeof b1);                                      \
            const T *ap = ta ? A + p * lda + i : A + i * lda + p;                              \
            T x0 = ap[0], x1 = ap[s1], x2 = ap[s2], x3 = ap[s3];                               \
            a00 += x0 * b0, a10 += x1 * b0, a20 += x2 * b0, a30 += x3 * b0;                    \
            if (NV == 2) a01 += x0 * b1, a11 += x1 * b1, a21 += x2 * b1, a31 += x3 * b1;       \
        }                                                                                      \
        MMK_VEC acc[4][2] = {{a00, a01}, {a10, a11}, {a20, a21}, {a30, a31}};                  \
        for (int64_t r = 0; r < rb; r++)                                                       \
            for (int v = 0; v < NV; v++) {                                                     \
                T *cp = C + (i + r) * ldc + j + v * VW;                                        \
                MMK_VEC o = alpha * acc[r][v], old;                                            \
                if (beta != 0) {                                                               \
                    memcpy(&old, cp, sizeof old);                                              \
                    o += old;                                                                  \
                }                                                                              \
                memcpy(cp, &o, sizeof o);                                                      \
            }                                                                                  \
    } while (0)

/* The causal limits (NOLIM: none): op(A)[r, p] is known to be 0 where p > r + kl (ta false:
 * probabilities of keys p a query r does not see) or p < r - kl (ta true), and those terms
 * are left out; C[r, q] is not needed where q > r + cl, and whole vectors of such columns
 * are set to 0 rather than computed. */
MMK_ATTR static void MMK_NAME(bool ta, int64_t m, int64_t n, int64_t k, T alpha, const T *A,
                              int64_t lda, const T *B, int64_t ldb, T beta, T *C, int64_t ldc,
                              int64_t kl, int64_t cl) {
    int64_t sr = ta ? 1 : lda; /* A's stride between rows of op(A) */
    for (int64_t i = 0; i < m; i += 4) {
        int64_t rb = m - i < 4 ? m - i : 4, j = 0, k0 = 0, k1 = k;
        if (kl != NOLIM) {
            if (ta)
                k0 = i - kl < 0 ? 0 : i - kl < k ? i - kl : k;
            else
                k1 = i + rb + kl < 0 ? 0 : i + rb + kl < k ? i + rb + kl : k;
        }
        /* columns from jn on are not needed in any of the rows */
        int64_t jn = cl == NOLIM || i + rb + cl >= n ? n : i + rb + cl < 0 ? 0 : i + rb + cl;
        /* rows past the last (rb < 4) repeat row i, their sums not stored */
        int64_t s1 = rb > 1 ? sr : 0, s2 = rb > 2 ? 2 * sr : 0, s3 = rb > 3 ? 3 * sr : 0;
        for (; j + 2 * VW <= n && j < jn; j += 2 * VW) MMK4(2);
        if (j + VW <= n && j < jn) {
            MMK4(1);
            j += VW;
        }
        if (jn < n && j < n && jn <= j) { /* whole vectors past the limit */
            for (int64_t r = i; r < i + rb; r++)
                for (int64_t q = j; q < n; q++) C[r * ldc + q] = 0;
            continue;
        }
        for (int64_t r = i; r < i + rb; r++)
            for (int64_t q = j; q < n; q++) {
                T sum = 0;
                for (int64_t p = k0; p < k1; p++)
                    sum += (ta ? A[p * lda + r] : A[r * lda + p]) * B[p * ldb + q];
                C[r * ldc + q] = alpha * sum + (beta != 0 ? C[r * ldc + q] : 0);
            }
    }
}
#undef MMK4
#undef VW
#undef MMK_VEC
#undef MMK_NAME
#undef MMK_VB
#undef MMK_ATTR
