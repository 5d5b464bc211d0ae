/*
 * ltc_rng.h - the counter-based generator shared by every backend, so that each backend
 * (and capture/replay) draws the same numbers from the same seed.
 *
 * Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11),
 * the generator PyTorch uses on CUDA. A random op gets the state {seed, offset} as an
 * int64[2] operand; element i (0-based, row-major) of its output uses the block
 * ltc_philox4x32(offset + i, seed), so elements are independent and any split of the work
 * gives the same values. The core advances the offset by numel after each random op.
 */
#ifndef LTC_RNG_H
#define LTC_RNG_H

#include <stdint.h>

/* The four 32-bit words of Philox 4x32-10 for a 64-bit counter and a 64-bit key. */
void ltc_philox4x32(uint64_t counter, uint64_t key, uint32_t out[4]);

/* Element i of a uniform [0, 1) draw at state (seed, offset): 24 random bits for float32,
 * 53 for float64. */
float ltc_rng_uniform_f32(uint64_t seed, uint64_t offset, int64_t i);
double ltc_rng_uniform_f64(uint64_t seed, uint64_t offset, int64_t i);
/* Element i of a standard normal draw: Box-Muller on the block's words
 * (u1 from words 0-1, u2 from words 2-3; u1 in (0, 1]). */
float ltc_rng_normal_f32(uint64_t seed, uint64_t offset, int64_t i);
double ltc_rng_normal_f64(uint64_t seed, uint64_t offset, int64_t i);

#endif
