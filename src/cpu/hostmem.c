/* hostmem.c - host memory for backend data: huge-page blocks and a cache of freed ones. */
#define _DEFAULT_SOURCE /* madvise */
#include "hostmem.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)
#define PAGE ((size_t)4 << 10)
#define CACHE_SLOTS 32
#define CACHE_MAX_BYTES ((size_t)1 << 30) /* most bytes kept for reuse */

static struct {
    pthread_mutex_t mu;
    void *ptr[CACHE_SLOTS];
    size_t size[CACHE_SLOTS];
    size_t bytes;
} cache = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* The size a block of nbytes really has. */
static size_t block_size(size_t nbytes) {
    if (nbytes < LTC_HOSTMEM_CACHED) return (nbytes + 63) / 64 * 64 + 64 * !nbytes;
    if (nbytes < LTC_HOSTMEM_BIG) return (nbytes + PAGE - 1) / PAGE * PAGE;
    return (nbytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
}

void *ltc_cpu_mem_alloc(size_t nbytes) {
    size_t n = block_size(nbytes);
    if (nbytes < LTC_HOSTMEM_CACHED) return aligned_alloc(64, n);
    pthread_mutex_lock(&cache.mu);
    for (int i = 0; i < CACHE_SLOTS; i++)
        if (cache.ptr[i] && cache.size[i] == n) {
            void *p = cache.ptr[i];
            cache.ptr[i] = NULL;
            cache.bytes -= n;
            pthread_mutex_unlock(&cache.mu);
            return p;
        }
    pthread_mutex_unlock(&cache.mu);
    if (nbytes < LTC_HOSTMEM_BIG) return aligned_alloc(PAGE, n);
    void *p = aligned_alloc(HUGE_PAGE, n);
#ifdef MADV_HUGEPAGE
    if (p) madvise(p, n, MADV_HUGEPAGE);
#endif
    return p;
}

void ltc_cpu_mem_free(void *p, size_t nbytes) {
    if (!p) return;
    size_t n = block_size(nbytes);
    if (nbytes < LTC_HOSTMEM_CACHED) {
        free(p);
        return;
    }
    void *evict = NULL;
    pthread_mutex_lock(&cache.mu);
    int slot = -1;
    for (int i = 0; i < CACHE_SLOTS && slot < 0; i++)
        if (!cache.ptr[i]) slot = i;
    if (slot < 0) { /* full: the first slot's block goes */
        slot = 0;
        evict = cache.ptr[0];
        cache.bytes -= cache.size[0];
        cache.ptr[0] = NULL;
    }
    if (n <= CACHE_MAX_BYTES - cache.bytes) {
        cache.ptr[slot] = p;
        cache.size[slot] = n;
        cache.bytes += n;
        p = NULL;
    }
    pthread_mutex_unlock(&cache.mu);
    free(evict);
    free(p);
}

void ltc_cpu_mem_trim(void) {
    pthread_mutex_lock(&cache.mu);
    for (int i = 0; i < CACHE_SLOTS; i++) {
        free(cache.ptr[i]);
        cache.ptr[i] = NULL;
    }
    cache.bytes = 0;
    pthread_mutex_unlock(&cache.mu);
}
