/*
 * slab.c - per-thread free lists of small blocks (tensors, IR nodes) for the tracing fast
 * path. Tracing makes a few small objects per op and a sync (its garbage collection) frees
 * thousands at once; glibc's per-thread caches hold 7 blocks a size, so the rest went
 * through malloc's bins and consolidation. Here freed blocks wait in a list per 64-byte size
 * class (at most SLAB_KEEP each) for the next allocation on the same thread. A block may be
 * freed on any thread (it joins that thread's list); a thread's lists are freed when it exits.
 * Under AddressSanitizer a block on a list is poisoned, so a use after free still traps.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define SLAB_CLASSES (LTC_SLAB_MAX / 64)
#define SLAB_KEEP 16384 /* blocks kept per class and thread */

typedef struct block {
    struct block *next;
} block;

typedef struct {
    block *head[SLAB_CLASSES];
    uint16_t n[SLAB_CLASSES]; /* up to SLAB_KEEP; small, for the TLS budget (Makefile) */
    bool registered; /* the thread-exit destructor knows these lists */
    bool dead;       /* the thread is exiting: no more keeping */
    bool trimmed;    /* ltc_slab_trim ran (ltc_shutdown) and nothing was allocated since:
                      * a block freed now (a tensor finalized after the last state closed)
                      * goes back to malloc, not to a list no one would free */
} lists;

static _Thread_local lists tl;
static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void lists_trim(lists *l) {
    for (int c = 0; c < SLAB_CLASSES; c++) {
        while (l->head[c]) {
            block *b = l->head[c];
            UNPOISON(b, (size_t)(c + 1) * 64);
            l->head[c] = b->next;
            free(b);
        }
        l->n[c] = 0;
    }
}

static void on_exit_thread(void *p) {
    lists *l = p;
    l->dead = true;
    lists_trim(l);
}

static void make_key(void) { (void)pthread_key_create(&key, on_exit_thread); }

void *ltc_slab_alloc(size_t n) {
    if (n == 0 || n > LTC_SLAB_MAX) return malloc(n ? n : 1);
    int c = (int)((n - 1) / 64);
    tl.trimmed = false;
    block *b = tl.head[c];
    if (b) {
        UNPOISON(b, (size_t)(c + 1) * 64);
        tl.head[c] = b->next;
        tl.n[c]--;
        return b;
    }
    return malloc((size_t)(c + 1) * 64);
}

void ltc_slab_free(void *p, size_t n) {
    if (!p) return;
    if (n == 0 || n > LTC_SLAB_MAX) {
        free(p);
        return;
    }
    int c = (int)((n - 1) / 64);
    if (tl.n[c] >= SLAB_KEEP || tl.dead || tl.trimmed) {
        free(p);
        return;
    }
    if (!tl.registered) {
        pthread_once(&once, make_key);
        if (pthread_setspecific(key, &tl)) {
            free(p);
            return;
        }
        tl.registered = true;
    }
    block *b = p;
    b->next = tl.head[c];
    tl.head[c] = b;
    tl.n[c]++;
    POISON(b, (size_t)(c + 1) * 64);
}

void ltc_slab_trim(void) {
    lists_trim(&tl);
    tl.trimmed = true;
}
