/*
 * vmath.h - vectorized math for the CPU backend's elementwise loops. Declares the C math
 * functions that glibc's libmvec implements for SIMD (SSE, AVX2, AVX-512 variants, accurate
 * to 4 ulp at most per glibc's manual) with GCC's `simd` attribute, so that a loop marked
 * LTC_SIMD calling exp, log, tanh, ... is vectorized without -ffast-math (glibc only makes
 * these declarations under __FAST_MATH__). Include after <math.h> or <tgmath.h>; link with
 * -lmvec. Elsewhere (another libc or compiler) the declarations are left alone and the
 * loops call the scalar functions.
 */
#ifndef LTC_CPU_VMATH_H
#define LTC_CPU_VMATH_H

#include <math.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__) &&   \
    !defined(LTC_NO_VMATH)
#define LTC_VMATH_DECL(name)                                                                   \
    double(name)(double) __attribute__((simd("notinbranch")));                                  \
    float name##f(float) __attribute__((simd("notinbranch")));
LTC_VMATH_DECL(exp)
LTC_VMATH_DECL(log)
LTC_VMATH_DECL(tanh)
LTC_VMATH_DECL(log1p)
LTC_VMATH_DECL(expm1)
LTC_VMATH_DECL(sin)
LTC_VMATH_DECL(cos)
LTC_VMATH_DECL(erf)
double(pow)(double, double) __attribute__((simd("notinbranch")));
float powf(float, float) __attribute__((simd("notinbranch")));
#undef LTC_VMATH_DECL
#endif

#endif
