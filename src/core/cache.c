/*
 * cache.c - the compile cache: computations keyed by graph hash, least recently used
 * evicted past LTC_COMPILE_CACHE_SIZE. PyTorch LTC: util/cache.h (LRU Cache).
 * A hash table with open addressing for look-up, a doubly linked list for recency.
 */
#include <pthread.h>
#include <stdlib.h>

#include "core.h"

/* Threads share the cache: one recursive mutex guards it (ltc_cache_lock). */
static pthread_mutex_t mu;
static pthread_once_t mu_once = PTHREAD_ONCE_INIT;
static void mu_init(void) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&mu, &a);
    pthread_mutexattr_destroy(&a);
}
void ltc_cache_lock(void) {
    pthread_once(&mu_once, mu_init);
    pthread_mutex_lock(&mu);
}
void ltc_cache_unlock(void) { pthread_mutex_unlock(&mu); }

typedef struct entry {
    ltc_hash key;
    ltc_computation *comp;
    struct entry *prev, *next; /* recency: head is the most recent */
} entry;

static entry **table; /* open addressing; NULL empty, &tomb deleted */
static size_t table_cap;
static entry tomb;
static entry *head, *tail;
static int64_t count, tombs;

static size_t slot_of(ltc_hash h, size_t cap) { return (size_t)(h.lo ^ h.hi) & (cap - 1); }

static void unlink_entry(entry *e) {
    if (e->prev) e->prev->next = e->next;
    else head = e->next;
    if (e->next) e->next->prev = e->prev;
    else tail = e->prev;
    e->prev = e->next = NULL;
}

static void push_front(entry *e) {
    e->next = head;
    e->prev = NULL;
    if (head) head->prev = e;
    head = e;
    if (!tail) tail = e;
}

static entry **find_slot(ltc_hash h) {
    if (!table_cap) return NULL;
    for (size_t i = slot_of(h, table_cap), k = 0; k < table_cap; i = (i + 1) & (table_cap - 1), k++) {
        if (!table[i]) return NULL;
        if (table[i] != &tomb && ltc_hash_equal(table[i]->key, h)) return &table[i];
    }
    return NULL;
}

static bool rehash(size_t cap) {
    entry **nt = calloc(cap, sizeof *nt);
    if (!nt) return false;
    for (entry *e = head; e; e = e->next) {
        size_t i = slot_of(e->key, cap);
        while (nt[i]) i = (i + 1) & (cap - 1);
        nt[i] = e;
    }
    free(table);
    table = nt;
    table_cap = cap;
    tombs = 0;
    return true;
}

static void evict(entry **slot) {
    entry *e = *slot;
    *slot = &tomb;
    tombs++;
    unlink_entry(e);
    ltc_computation_free(e->comp);
    free(e);
    count--;
}

static ltc_computation *cache_get(ltc_hash h) {
    entry **s = find_slot(h);
    if (!s) return NULL;
    unlink_entry(*s);
    push_front(*s);
    return (*s)->comp;
}

ltc_computation *ltc_cache_get(ltc_hash h) {
    ltc_cache_lock();
    ltc_computation *c = cache_get(h);
    ltc_cache_unlock();
    return c;
}

static bool cache_put(ltc_hash h, ltc_computation *c);
bool ltc_cache_put(ltc_hash h, ltc_computation *c) {
    ltc_cache_lock();
    bool ok = cache_put(h, c);
    ltc_cache_unlock();
    return ok;
}

static bool cache_put(ltc_hash h, ltc_computation *c) {
    entry *e = malloc(sizeof *e);
    size_t need = (size_t)(count + tombs + 1) * 2;
    if (!e || (need > table_cap && !rehash((size_t)(count + 1) * 2 > table_cap / 2 ? (table_cap ? table_cap * 2 : 64) : table_cap))) {
        free(e); /* cannot cache: the caller keeps ownership */
        return false;
    }
    e->key = h;
    e->comp = c;
    push_front(e);
    size_t i = slot_of(h, table_cap);
    while (table[i] && table[i] != &tomb) i = (i + 1) & (table_cap - 1);
    if (table[i] == &tomb) tombs--;
    table[i] = e;
    count++;
    int64_t limit = ltc_config_get_int("LTC_COMPILE_CACHE_SIZE");
    while (count > limit && tail != e) evict(find_slot(tail->key));
    return true;
}

void ltc_cache_clear(void) {
    ltc_cache_lock();
    while (tail) evict(find_slot(tail->key));
    free(table);
    table = NULL;
    table_cap = 0;
    ltc_cache_unlock();
}

int64_t ltc_cache_size(void) { return count; }
