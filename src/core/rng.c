/* rng.c - Philox 4x32-10 and the draws built on it (see ltc_rng.h). */
#include "ltc_rng.h"

#include <math.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void ltc_philox4x32(uint64_t counter, uint64_t key, uint32_t out[4]) {
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

static double u53(uint32_t a, uint32_t b) {
    uint64_t bits = (((uint64_t)a << 32) | b) >> 11;
    return (double)bits * (1.0 / 9007199254740992.0);
}

float ltc_rng_uniform_f32(uint64_t seed, uint64_t offset, int64_t i) {
    uint32_t w[4];
    ltc_philox4x32(offset + (uint64_t)i, seed, w);
    return (float)(w[0] >> 8) * (1.0f / 16777216.0f);
}

double ltc_rng_uniform_f64(uint64_t seed, uint64_t offset, int64_t i) {
    uint32_t w[4];
    ltc_philox4x32(offset + (uint64_t)i, seed, w);
    return u53(w[0], w[1]);
}

double ltc_rng_normal_f64(uint64_t seed, uint64_t offset, int64_t i) {
    uint32_t w[4];
    ltc_philox4x32(offset + (uint64_t)i, seed, w);
    double u1 = 1.0 - u53(w[0], w[1]); /* (0, 1]: log(u1) is finite */
    double u2 = u53(w[2], w[3]);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

float ltc_rng_normal_f32(uint64_t seed, uint64_t offset, int64_t i) {
    return (float)ltc_rng_normal_f64(seed, offset, i);
}
