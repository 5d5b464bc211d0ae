/*
 * ltc_special.h - special functions that C's <math.h> lacks, for the elementwise exprs of
 * codegen/ops.yaml (erfinv, digamma, trigamma). Both backends' generated kernels call them
 * (src/cpu/elementwise.h and src/ref/ref.h include this header), so the two compute the same
 * values. Each takes and returns a double; float32 kernels round the result.
 *
 * The special values follow PyTorch (aten/src/ATen/native/Math.h): erfinv(+-1) = +-inf and
 * NaN outside [-1, 1]; digamma(+0) = -inf, digamma(-0) = +inf, NaN at negative integers;
 * trigamma at non-positive integers is +inf.
 */
#ifndef LTC_SPECIAL_H
#define LTC_SPECIAL_H

#include <math.h>

#define LTC_PI 3.14159265358979323846

/* The inverse error function: erf(ltc_math_erfinv(y)) == y for y in (-1, 1). A rational first
 * guess (Giles, "Approximating the erfinv function", 2010) refined by two Newton steps on
 * erf, which make it accurate to a few ulp in double. */
static inline double ltc_math_erfinv(double y) {
    if (y != y || y < -1 || y > 1) return NAN;
    if (y == 1) return INFINITY;
    if (y == -1) return -INFINITY;
    double w = -log((1.0 - y) * (1.0 + y)), x;
    if (w < 5.0) {
        w -= 2.5;
        double p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w;
        p = -3.5233877e-06 + p * w;
        p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w;
        p = -0.00125372503 + p * w;
        p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w;
        p = 1.50140941 + p * w;
        x = p * y;
    } else {
        w = sqrt(w) - 3.0;
        double p = -0.000200214257;
        p = 0.000100950558 + p * w;
        p = 0.00134934322 + p * w;
        p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w;
        p = -0.0076224613 + p * w;
        p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w;
        p = 2.83297682 + p * w;
        x = p * y;
    }
    for (int k = 0; k < 2; k++) {
        double d = 1.1283791670955126 * exp(-x * x); /* erf'(x) = 2 / sqrt(pi) * exp(-x^2) */
        if (d == 0) break;
        x -= (erf(x) - y) / d;
    }
    return x;
}

/* The digamma function psi(x) = d/dx log(gamma(x)): the reflection formula for x < 0, the
 * recurrence psi(x) = psi(x + 1) - 1 / x up to x >= 10, then the asymptotic series. */
static inline double ltc_math_digamma(double x) {
    if (x == 0) return copysign(INFINITY, -x);
    if (x != x || x == INFINITY) return x;
    if (x == -INFINITY) return NAN;
    double r = 0;
    if (x < 0) {
        if (x == floor(x)) return NAN;
        /* psi(x) = psi(1 - x) - pi / tan(pi x) */
        r = -LTC_PI / tan(LTC_PI * x);
        x = 1 - x;
    }
    while (x < 10) {
        r -= 1 / x;
        x += 1;
    }
    double z = 1 / (x * x);
    double s = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132)))));
    return r + log(x) - 0.5 / x - s;
}

/* The trigamma function psi'(x) (the derivative of digamma): the reflection formula for
 * x < 0.5, the recurrence psi'(x) = psi'(x + 1) + 1 / x^2 up to x >= 10, then the
 * asymptotic series. */
static inline double ltc_math_trigamma(double x) {
    if (x != x) return x;
    if (x == INFINITY) return 0;
    if (x <= 0 && x == floor(x)) return INFINITY;
    double r = 0, sign = 1;
    if (x < 0.5) {
        /* psi'(1 - x) + psi'(x) = pi^2 / sin^2(pi x) */
        double s = sin(LTC_PI * x);
        r = LTC_PI * LTC_PI / (s * s);
        sign = -1;
        x = 1 - x;
    }
    double t = 0;
    while (x < 10) {
        t += 1 / (x * x);
        x += 1;
    }
    double z = 1 / (x * x);
    t += 1 / x + z / 2 + z / x * (1.0 / 6 - z * (1.0 / 30 - z * (1.0 / 42 - z * (1.0 / 30))));
    return sign < 0 ? r - t : t;
}

#endif
