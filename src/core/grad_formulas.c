/*
 * grad_formulas.c - the elementwise and reduction helpers of the derivative formulas, the C
 * twins of lua/ltc/autograd.lua's F functions (grad_formulas.h says the conventions). Each
 * function keeps its temporaries in a local array released on every path (one `done`
 * label); the result is moved out only on success.
 */
#include <math.h>

#include "grad_formulas.h"

#define TRY(x)                                                                                     \
    do {                                                                                           \
        if ((st = (x)) != LTC_OK) goto done;                                                       \
    } while (0)

static void release_all(ltc_tensor **t, int n) {
    for (int i = 0; i < n; i++)
        ltc_tensor_release(t[i]);
}

static int ndim_of(const ltc_tensor *t) {
    return ltc_tensor_shape(t)->ndim;
}

/* ---- building blocks ------------------------------------------------------------------ */

static ltc_status weak(double v, bool is_int, ltc_tensor **out) {
    return is_int ? ltc_tensor_from_int((int64_t)v, true, out)
                  : ltc_tensor_from_float(v, true, out);
}

ltc_status ltc_grad_binop_s(ltc_grad_binop f, ltc_tensor *t, double v, bool v_int, bool v_first,
                            ltc_tensor **out) {
    ltc_tensor *s = NULL;
    ltc_status st = weak(v, v_int, &s);
    if (st == LTC_OK) st = v_first ? f(s, t, out) : f(t, s, out);
    ltc_tensor_release(s);
    return st;
}

ltc_status ltc_grad_where_s(ltc_tensor *cond, ltc_tensor *t, double v, bool v_int, bool v_first,
                            ltc_tensor **out) {
    ltc_tensor *s = NULL;
    ltc_status st = weak(v, v_int, &s);
    if (st == LTC_OK) st = v_first ? ltc_where(cond, s, t, out) : ltc_where(cond, t, s, out);
    ltc_tensor_release(s);
    return st;
}

/* ltc_grad_number with the exact value of an integer in *i. */
static bool number_of(ltc_tensor *t, double *v, int64_t *i, bool *is_int) {
    if (!t || !ltc_tensor_is_weak(t) || ltc_tensor_is_pending(t) || ndim_of(t) != 0) return false;
    *is_int = !ltc_dtype_is_float(ltc_tensor_shape(t)->dtype);
    if (*is_int) {
        if (ltc_tensor_read_i64(t, 0, i) != LTC_OK) return false;
        *v = (double)*i;
        return true;
    }
    *i = 0;
    return ltc_tensor_read_f64(t, 0, v) == LTC_OK;
}

bool ltc_grad_number(ltc_tensor *t, double *v, bool *is_int) {
    int64_t i;
    return number_of(t, v, &i, is_int);
}

ltc_status ltc_grad_arith(ltc_grad_binop f, char op, ltc_tensor *a, ltc_tensor *b,
                          ltc_tensor **out) {
    double x, y;
    int64_t i, j, r;
    bool xi, yi;
    if (!number_of(a, &x, &i, &xi) || !number_of(b, &y, &j, &yi)) return f(a, b, out);
    bool ints = xi && yi && op != '/' && op != '^';
    if (ints) {
        switch (op) {
        case '+':
            r = (int64_t)((uint64_t)i + (uint64_t)j);
            break;
        case '-':
            r = (int64_t)((uint64_t)i - (uint64_t)j);
            break;
        case '*':
            r = (int64_t)((uint64_t)i * (uint64_t)j);
            break;
        default: /* 'f' (//) and '%' */
            if (j == 0)
                return ltc_errorf(LTC_ERR_ARG, "attempt to perform 'n%s0'", op == '%' ? "%" : "//");
            if (j == -1) { /* i / -1 overflows for INT64_MIN */
                r = op == '%' ? 0 : (int64_t)(0 - (uint64_t)i);
                break;
            }
            r = i / j;
            if ((i % j != 0) && ((i < 0) != (j < 0))) r--;
            if (op == '%') r = i - r * j;
        }
        return ltc_tensor_from_int(r, true, out);
    }
    double d;
    switch (op) {
    case '+':
        d = x + y;
        break;
    case '-':
        d = x - y;
        break;
    case '*':
        d = x * y;
        break;
    case '/':
        d = x / y;
        break;
    case '^':
        d = pow(x, y);
        break;
    case '%':
        d = fmod(x, y);
        if (d != 0 && (d < 0) != (y < 0)) d += y;
        break;
    default:
        d = floor(x / y);
        break; /* 'f' (//) */
    }
    return ltc_tensor_from_float(d, true, out);
}

ltc_status ltc_grad_neg(ltc_tensor *t, ltc_tensor **out) {
    double v;
    int64_t i;
    bool is_int;
    if (!number_of(t, &v, &i, &is_int)) return ltc_neg(t, out);
    return is_int ? ltc_tensor_from_int((int64_t)(0 - (uint64_t)i), true, out)
                  : ltc_tensor_from_float(-v, true, out);
}

ltc_status ltc_grad_size(const ltc_tensor *t, int64_t d, int64_t *out) {
    const ltc_shape *s = ltc_tensor_shape(t);
    int k;
    ltc_status st = ltc_dim_wrap(d, s->ndim, &k);
    if (st != LTC_OK) return st;
    if (s->ndim == 0)
        return ltc_errorf(LTC_ERR_ARG, "size: a 0-d tensor has no dim %lld", (long long)d);
    *out = s->dims[k];
    return LTC_OK;
}

ltc_status ltc_grad_keep(ltc_tensor *t, const ltc_tensor *self, int64_t dim, bool keepdim,
                         ltc_tensor **out) {
    if (dim != LTC_NONE && !keepdim && ndim_of(self) > 0) return ltc_unsqueeze(t, dim, out);
    *out = ltc_tensor_retain(t);
    return LTC_OK;
}

/* ---- shapes --------------------------------------------------------------------------- */

ltc_status ltc_grad_zeros_like(ltc_tensor *t, ltc_tensor **out) {
    const ltc_shape *s = ltc_tensor_shape(t);
    return ltc_zeros(s->dims, s->ndim, s->dtype, out);
}

ltc_status ltc_grad_unsqueeze(ltc_tensor *t, int64_t dim, ltc_tensor **out) {
    return ltc_unsqueeze(t, dim, out);
}

ltc_status ltc_grad_expand_as(ltc_tensor *g, ltc_tensor *t, ltc_tensor **out) {
    const ltc_shape *s = ltc_tensor_shape(t);
    return ltc_broadcast_to(g, s->dims, s->ndim, out);
}

ltc_status ltc_grad_sum_to(ltc_tensor *g, const int64_t *size, int n, ltc_tensor **out) {
    ltc_status st = LTC_OK;
    ltc_tensor *cur = ltc_tensor_retain(g), *next = NULL;
    for (int i = ndim_of(g); i > n; i--) {
        TRY(ltc_sum(cur, 1, false, &next));
        ltc_tensor_release(cur);
        cur = next, next = NULL;
    }
    for (int i = 0; i < n && i < ndim_of(cur); i++) {
        if (size[i] != 1 || ltc_tensor_shape(cur)->dims[i] == 1) continue;
        TRY(ltc_sum(cur, i + 1, true, &next));
        ltc_tensor_release(cur);
        cur = next, next = NULL;
    }
    *out = cur, cur = NULL;
done:
    ltc_tensor_release(cur);
    return st;
}

ltc_status ltc_grad_positions(ltc_tensor *t, int64_t dim, ltc_tensor **out) {
    int64_t n, shape[LTC_MAX_DIMS];
    ltc_status st = ltc_grad_size(t, dim, &n);
    if (st != LTC_OK) return st;
    int nd = ndim_of(t);
    for (int i = 0; i < nd; i++)
        shape[i] = i + 1 == dim ? n : 1;
    ltc_tensor *r = NULL;
    if ((st = ltc_arange(1, (double)(n + 1), 1, LTC_I64, &r)) != LTC_OK) return st;
    st = ltc_reshape(r, shape, nd, out);
    ltc_tensor_release(r);
    return st;
}

ltc_status ltc_grad_inverse_permutation(const int64_t *dims, int n, int64_t ndim, int64_t *inv) {
    for (int i = 0; i < n; i++)
        inv[i] = 0;
    for (int i = 0; i < n; i++) {
        int64_t d = dims[i] < 0 ? dims[i] + ndim + 1 : dims[i];
        if (d < 1 || d > n || inv[d - 1])
            return ltc_errorf(LTC_ERR_ARG, "permute backward: dims is not a permutation of 1..%d",
                              n);
        inv[d - 1] = i + 1;
    }
    return LTC_OK;
}

/* ---- elementwise ---------------------------------------------------------------------- */

ltc_status ltc_grad_trunc(ltc_tensor *t, ltc_tensor **out) {
    ltc_tensor *x[3] = {0};
    ltc_status st = LTC_OK;
    TRY(ltc_grad_binop_s(ltc_ge, t, 0, true, false, &x[0]));
    TRY(ltc_floor(t, &x[1]));
    TRY(ltc_ceil(t, &x[2]));
    st = ltc_where(x[0], x[1], x[2], out);
done:
    release_all(x, 3);
    return st;
}

ltc_status ltc_grad_silu_backward(ltc_tensor *grad, ltc_tensor *self, ltc_tensor **out) {
    ltc_tensor *x[6] = {0};
    ltc_status st = LTC_OK;
    TRY(ltc_sigmoid(self, &x[0]));                              /* s */
    TRY(ltc_mul(grad, x[0], &x[1]));                            /* grad * s */
    TRY(ltc_grad_binop_s(ltc_sub, x[0], 1, true, true, &x[2])); /* 1 - s */
    TRY(ltc_mul(self, x[2], &x[3]));
    TRY(ltc_grad_binop_s(ltc_add, x[3], 1, true, false, &x[4]));
    st = ltc_mul(x[1], x[4], out);
done:
    release_all(x, 6);
    return st;
}

ltc_status ltc_grad_clamp_backward(ltc_tensor *grad, ltc_tensor *self, double min, double max,
                                   ltc_tensor **out) {
    ltc_tensor *x[3] = {0}, *keep = NULL;
    ltc_status st = LTC_OK;
    if (!isnan(min)) TRY(ltc_grad_binop_s(ltc_ge, self, min, false, false, &x[0]));
    if (!isnan(max)) {
        TRY(ltc_grad_binop_s(ltc_le, self, max, false, false, &x[1]));
        if (x[0]) TRY(ltc_logical_and(x[0], x[1], &x[2]));
    }
    keep = x[2] ? x[2] : x[0] ? x[0] : x[1];
    if (!keep) {
        *out = ltc_tensor_retain(grad);
        goto done;
    }
    st = ltc_grad_where_s(keep, grad, 0, true, false, out);
done:
    release_all(x, 3);
    return st;
}

ltc_status ltc_grad_minmax_backward(ltc_tensor *grad, ltc_tensor *self, ltc_tensor *other,
                                    bool is_min, ltc_tensor **out) {
    ltc_tensor *x[4] = {0};
    ltc_status st = LTC_OK;
    TRY(is_min ? ltc_gt(self, other, &x[0]) : ltc_lt(self, other, &x[0])); /* lose */
    TRY(ltc_eq(self, other, &x[1]));
    TRY(ltc_grad_binop_s(ltc_mul, grad, 0.5, false, false, &x[2]));
    TRY(ltc_where(x[1], x[2], grad, &x[3]));
    st = ltc_grad_where_s(x[0], x[3], 0, true, true, out);
done:
    release_all(x, 4);
    return st;
}

ltc_status ltc_grad_pow_backward_self(ltc_tensor *grad, ltc_tensor *self, ltc_tensor *exponent,
                                      ltc_tensor **out) {
    ltc_tensor *x[5] = {0};
    ltc_status st = LTC_OK;
    double e;
    bool e_int;
    if (ltc_grad_number(exponent, &e, &e_int)) {
        if (e == 0) return ltc_grad_binop_s(ltc_mul, grad, 0, true, false, out);
        TRY(ltc_grad_binop_s(ltc_pow, self, e - 1, e_int, false, &x[0]));
        TRY(ltc_grad_binop_s(ltc_mul, x[0], e, e_int, true, &x[1]));
        st = ltc_mul(grad, x[1], out);
        goto done;
    }
    TRY(ltc_grad_binop_s(ltc_eq, exponent, 0, true, false, &x[0]));
    TRY(ltc_mul(grad, exponent, &x[1]));
    TRY(ltc_grad_binop_s(ltc_sub, exponent, 1, true, false, &x[2]));
    TRY(ltc_pow(self, x[2], &x[3]));
    TRY(ltc_mul(x[1], x[3], &x[4]));
    st = ltc_grad_where_s(x[0], x[4], 0, true, true, out);
done:
    release_all(x, 5);
    return st;
}

ltc_status ltc_grad_pow_backward_exponent(ltc_tensor *grad, ltc_tensor *self, ltc_tensor *exponent,
                                          ltc_tensor *result, ltc_tensor **out) {
    ltc_tensor *x[6] = {0};
    ltc_status st = LTC_OK;
    double s;
    bool s_int;
    TRY(ltc_mul(grad, result, &x[0]));
    if (ltc_grad_number(self, &s, &s_int)) {
        if (s == 0) {
            TRY(ltc_grad_binop_s(ltc_ge, exponent, 0, true, false, &x[1]));
            TRY(ltc_grad_binop_s(ltc_mul, x[0], -INFINITY, false, false, &x[2]));
            st = ltc_grad_where_s(x[1], x[2], 0, true, true, out);
        } else {
            st = ltc_grad_binop_s(ltc_mul, x[0], log(s), false, false, out);
        }
        goto done;
    }
    TRY(ltc_grad_binop_s(ltc_eq, self, 0, true, false, &x[1]));
    TRY(ltc_grad_binop_s(ltc_ge, exponent, 0, true, false, &x[2]));
    TRY(ltc_logical_and(x[1], x[2], &x[3]));
    TRY(ltc_log(self, &x[4]));
    TRY(ltc_mul(x[0], x[4], &x[5]));
    st = ltc_grad_where_s(x[3], x[5], 0, true, true, out);
done:
    release_all(x, 6);
    return st;
}

ltc_status ltc_grad_dropout_backward(ltc_tensor *grad, ltc_tensor *self, ltc_tensor *result,
                                     double p, bool train, ltc_tensor **out) {
    (void)self;
    if (!train || p == 0) {
        *out = ltc_tensor_retain(grad);
        return LTC_OK;
    }
    if (p >= 1) return ltc_grad_binop_s(ltc_mul, grad, 0, true, false, out);
    ltc_tensor *x[2] = {0};
    ltc_status st = LTC_OK;
    TRY(ltc_grad_binop_s(ltc_ne, result, 0, true, false, &x[0]));
    TRY(ltc_grad_binop_s(ltc_div, grad, 1 - p, false, false, &x[1]));
    st = ltc_grad_where_s(x[0], x[1], 0, true, false, out);
done:
    release_all(x, 2);
    return st;
}

/* ---- reductions ----------------------------------------------------------------------- */

ltc_status ltc_grad_sum_backward(ltc_tensor *grad, ltc_tensor *self, int64_t dim, bool keepdim,
                                 ltc_tensor **out) {
    ltc_tensor *g = NULL;
    ltc_status st = ltc_grad_keep(grad, self, dim, keepdim, &g);
    if (st == LTC_OK) st = ltc_grad_expand_as(g, self, out);
    ltc_tensor_release(g);
    return st;
}

ltc_status ltc_grad_mean_backward(ltc_tensor *grad, ltc_tensor *self, int64_t dim, bool keepdim,
                                  ltc_tensor **out) {
    int64_t n = ltc_shape_numel(ltc_tensor_shape(self));
    ltc_tensor *s = NULL;
    ltc_status st = LTC_OK;
    if (dim != LTC_NONE && ndim_of(self) > 0) TRY(ltc_grad_size(self, dim, &n));
    TRY(ltc_grad_sum_backward(grad, self, dim, keepdim, &s));
    st = ltc_grad_binop_s(ltc_div, s, (double)n, true, false, out);
done:
    ltc_tensor_release(s);
    return st;
}

ltc_status ltc_grad_max_backward(ltc_tensor *grad, ltc_tensor *self, ltc_tensor *result,
                                 ltc_tensor **out) {
    ltc_tensor *x[7] = {0};
    ltc_status st = LTC_OK;
    TRY(ltc_eq(self, result, &x[0]));
    TRY(ltc_ne(self, self, &x[1]));
    TRY(ltc_ne(result, result, &x[2]));
    TRY(ltc_logical_and(x[1], x[2], &x[3]));
    TRY(ltc_logical_or(x[0], x[3], &x[4])); /* mask */
    TRY(ltc_sum(x[4], LTC_NONE, false, &x[5]));
    TRY(ltc_div(grad, x[5], &x[6]));
    st = ltc_grad_where_s(x[4], x[6], 0, true, false, out);
done:
    release_all(x, 7);
    return st;
}

ltc_status ltc_grad_index_dim_backward(ltc_tensor *grad, ltc_tensor *self, int64_t dim,
                                       bool keepdim, ltc_tensor *indices, ltc_tensor **out) {
    if (ndim_of(self) == 0) {
        *out = ltc_tensor_retain(grad);
        return LTC_OK;
    }
    ltc_tensor *x[4] = {0};
    ltc_status st = LTC_OK;
    TRY(ltc_grad_keep(grad, self, dim, keepdim, &x[0]));
    TRY(ltc_grad_keep(indices, self, dim, keepdim, &x[1]));
    TRY(ltc_grad_positions(self, dim, &x[2]));
    TRY(ltc_eq(x[2], x[1], &x[3]));
    st = ltc_grad_where_s(x[3], x[0], 0, true, false, out);
done:
    release_all(x, 4);
    return st;
}

ltc_status ltc_grad_prod_backward(ltc_tensor *grad, ltc_tensor *self, int64_t dim, bool keepdim,
                                  ltc_tensor *result, ltc_tensor **out) {
    (void)result; /* the Lua helper reshapes it too, then leaves it unused */
    ltc_tensor *x[12] = {0};
    ltc_status st = LTC_OK;
    TRY(ltc_grad_keep(grad, self, dim, keepdim, &x[0]));
    if (ltc_shape_numel(ltc_tensor_shape(self)) == 0) {
        st = ltc_grad_zeros_like(self, out);
        goto done;
    }
    TRY(ltc_grad_binop_s(ltc_eq, self, 0, true, false, &x[1])); /* zero */
    TRY(ltc_grad_where_s(x[1], self, 1, true, true, &x[2]));    /* nz_self */
    if (dim != LTC_NONE && ndim_of(self) > 0) {
        TRY(ltc_prod(x[2], dim, true, &x[3])); /* nz_prod */
        TRY(ltc_sum(x[1], dim, true, &x[4]));  /* zeros */
    } else {
        TRY(ltc_prod(x[2], LTC_NONE, false, &x[3]));
        TRY(ltc_sum(x[1], LTC_NONE, false, &x[4]));
    }
    TRY(ltc_grad_binop_s(ltc_eq, x[4], 0, true, false, &x[5]));
    TRY(ltc_div(x[3], x[2], &x[6]));
    TRY(ltc_grad_binop_s(ltc_eq, x[4], 1, true, false, &x[7]));
    TRY(ltc_logical_and(x[7], x[1], &x[8]));
    TRY(ltc_grad_where_s(x[8], x[3], 0, true, false, &x[9]));
    TRY(ltc_where(x[5], x[6], x[9], &x[10])); /* others */
    st = ltc_mul(x[0], x[10], out);
done:
    release_all(x, 12);
    return st;
}

ltc_status ltc_grad_var_backward(ltc_tensor *grad, ltc_tensor *self, int64_t dim, bool unbiased,
                                 bool keepdim, ltc_tensor **out) {
    ltc_tensor *x[4] = {0};
    ltc_status st = LTC_OK;
    bool all = dim == LTC_NONE || ndim_of(self) == 0;
    int64_t n = ltc_shape_numel(ltc_tensor_shape(self));
    TRY(ltc_grad_keep(grad, self, dim, keepdim, &x[0]));
    if (!all) TRY(ltc_grad_size(self, dim, &n));
    TRY(all ? ltc_mean(self, LTC_NONE, false, &x[1]) : ltc_mean(self, dim, true, &x[1]));
    TRY(ltc_sub(self, x[1], &x[2]));
    TRY(ltc_mul(x[0], x[2], &x[3]));
    st = ltc_grad_binop_s(ltc_mul, x[3], 2.0 / (double)(n - (unbiased ? 1 : 0)), false, false, out);
done:
    release_all(x, 4);
    return st;
}

ltc_status ltc_grad_std_backward(ltc_tensor *grad, ltc_tensor *self, int64_t dim, bool unbiased,
                                 bool keepdim, ltc_tensor *result, ltc_tensor **out) {
    ltc_tensor *x[4] = {0};
    ltc_status st = LTC_OK;
    TRY(ltc_grad_binop_s(ltc_eq, result, 0, true, false, &x[0]));
    TRY(ltc_grad_binop_s(ltc_mul, result, 2, true, true, &x[1]));
    TRY(ltc_div(grad, x[1], &x[2]));
    TRY(ltc_grad_where_s(x[0], x[2], 0, true, true, &x[3]));
    st = ltc_grad_var_backward(x[3], self, dim, unbiased, keepdim, out);
done:
    release_all(x, 4);
    return st;
}

ltc_status ltc_grad_logsumexp_backward(ltc_tensor *grad, ltc_tensor *self, int64_t dim,
                                       bool keepdim, ltc_tensor *result, ltc_tensor **out) {
    ltc_tensor *x[4] = {0};
    ltc_status st = LTC_OK;
    TRY(ltc_grad_keep(grad, self, dim, keepdim, &x[0]));
    TRY(ltc_grad_keep(result, self, dim, keepdim, &x[1]));
    TRY(ltc_sub(self, x[1], &x[2]));
    TRY(ltc_exp(x[2], &x[3]));
    st = ltc_mul(x[0], x[3], out);
done:
    release_all(x, 4);
    return st;
}

ltc_status ltc_grad_norm_backward(ltc_tensor *grad, ltc_tensor *self, double p, int64_t dim,
                                  bool keepdim, ltc_tensor *result, ltc_tensor **out) {
    ltc_tensor *x[12] = {0};
    ltc_status st = LTC_OK;
    TRY(ltc_grad_keep(grad, self, dim, keepdim, &x[0]));
    TRY(ltc_grad_keep(result, self, dim, keepdim, &x[1]));
    ltc_tensor *g = x[0], *r = x[1];
    if (p == 0) {
        st = ltc_grad_zeros_like(self, out);
    } else if (p == 1) {
        TRY(ltc_sign(self, &x[2]));
        st = ltc_mul(g, x[2], out);
    } else if (isinf(p)) {
        TRY(ltc_abs(self, &x[2]));
        TRY(ltc_eq(x[2], r, &x[3])); /* hit */
        if (dim != LTC_NONE && ndim_of(self) > 0)
            TRY(ltc_sum(x[3], dim, true, &x[4]));
        else
            TRY(ltc_sum(x[3], LTC_NONE, false, &x[4]));
        TRY(ltc_sign(self, &x[5]));
        TRY(ltc_mul(g, x[5], &x[6]));
        TRY(ltc_div(x[6], x[4], &x[7]));
        st = ltc_grad_where_s(x[3], x[7], 0, true, false, out);
    } else {
        if (p == 2) {
            TRY(ltc_div(self, r, &x[2]));
        } else {
            TRY(ltc_abs(self, &x[3]));
            TRY(ltc_grad_binop_s(ltc_pow, x[3], p - 2, false, false, &x[4]));
            TRY(ltc_mul(self, x[4], &x[5]));
            TRY(ltc_grad_binop_s(ltc_pow, r, p - 1, false, false, &x[6]));
            TRY(ltc_div(x[5], x[6], &x[2]));
        }
        TRY(ltc_grad_binop_s(ltc_eq, r, 0, true, false, &x[7]));
        TRY(ltc_mul(g, x[2], &x[8]));
        st = ltc_grad_where_s(x[7], x[8], 0, true, true, out);
    }
done:
    release_all(x, 12);
    return st;
}

ltc_status ltc_grad_cumsum_backward(ltc_tensor *grad, int64_t dim, ltc_tensor **out) {
    if (ndim_of(grad) == 0) {
        *out = ltc_tensor_retain(grad);
        return LTC_OK;
    }
    ltc_tensor *x[3] = {0};
    ltc_status st = LTC_OK;
    TRY(ltc_sum(grad, dim, true, &x[0]));
    TRY(ltc_cumsum(grad, dim, &x[1]));
    TRY(ltc_sub(x[0], x[1], &x[2]));
    st = ltc_add(x[2], grad, out);
done:
    release_all(x, 3);
    return st;
}

ltc_status ltc_grad_softmax_backward(ltc_tensor *grad, ltc_tensor *result, int64_t dim,
                                     ltc_tensor **out) {
    ltc_tensor *x[3] = {0};
    ltc_status st = LTC_OK;
    TRY(ltc_mul(grad, result, &x[0]));
    TRY(ltc_sum(x[0], dim, true, &x[1]));
    TRY(ltc_sub(grad, x[1], &x[2]));
    st = ltc_mul(result, x[2], out);
done:
    release_all(x, 3);
    return st;
}

ltc_status ltc_grad_log_softmax_backward(ltc_tensor *grad, ltc_tensor *result, int64_t dim,
                                         ltc_tensor **out) {
    ltc_tensor *x[3] = {0};
    ltc_status st = LTC_OK;
    TRY(ltc_exp(result, &x[0]));
    TRY(ltc_sum(grad, dim, true, &x[1]));
    TRY(ltc_mul(x[0], x[1], &x[2]));
    st = ltc_sub(grad, x[2], out);
done:
    release_all(x, 3);
    return st;
}
