/*
 * hostmem.h - host memory of the CPU backend's data. Large blocks (LTC_HOSTMEM_BIG and up)
 * are 2 MB aligned and advised to use transparent huge pages. Blocks from LTC_HOSTMEM_CACHED
 * up, when freed, are kept in a small cache for the next allocation of the same size, so
 * that a steady-state step reuses the memory of the outputs it replaced instead of mapping
 * and faulting in fresh pages (glibc maps such blocks afresh or trims its heap under them:
 * in the Fashion-MNIST step, 256x784 float32 parameters and gradients, the kernel zeroing
 * fresh pages took a third of the time). From one page up: in the MLP step (64-128-10),
 * glibc gave the 32 KB updated weight fresh pages every step (its dynamic mmap and trim
 * thresholds move with the blocks freed), 7 page faults a step and the update's 8192
 * elements taking 14 us instead of 3.5.
 * Every pointer comes from aligned_alloc: free() is a valid way to release one too (it then
 * bypasses the cache). Thread-safe.
 */
#ifndef LTC_CPU_HOSTMEM_H
#define LTC_CPU_HOSTMEM_H

#include <stddef.h>

#define LTC_HOSTMEM_BIG ((size_t)1 << 20)
#define LTC_HOSTMEM_CACHED ((size_t)4 << 10)

/* At least nbytes (0 allowed) of 64-byte aligned memory; NULL when out of memory. */
void *ltc_cpu_mem_alloc(size_t nbytes);
/* Releases memory from ltc_cpu_mem_alloc(nbytes) (same nbytes); NULL is ignored. */
void ltc_cpu_mem_free(void *p, size_t nbytes);
/* Frees the cached blocks. */
void ltc_cpu_mem_trim(void);

#endif
