/* split_test.c - the timed split-or-not choice of src/cpu/threads.c (ltc_cpu_split_begin and
 * _end, and a computation's way: ltc_cpu_split_plan_begin and _end), linked with threads.c alone and a stub of the core's configuration. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "threads.h"

/* LTC_GEMM_SPLIT 2 (timed), the rest (LTC_NUM_THREADS, LTC_DETERMINISTIC) 0 */
int64_t *ltc_config_slot(const char *name) {
    static int64_t split = 2, other = 0;
    return strcmp(name, "LTC_GEMM_SPLIT") == 0 ? &split : &other;
}

static int n_fail;
#define CHECK(c)                                                                               \
    do {                                                                                       \
        if (!(c)) {                                                                            \
            printf("#   %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c);                   \
            n_fail++;                                                                          \
        }                                                                                      \
    } while (0)

static void busy_us(long us) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

/* One call of kind `key` whose split way takes split_us and the other one_us: true if it
 * split. */
static bool call(uint64_t key, long split_us, long one_us) {
    ltc_cpu_split_t s;
    bool split = ltc_cpu_split_begin(&s, key);
    busy_us(split ? split_us : one_us);
    ltc_cpu_split_end(&s);
    return split;
}

/* Two kinds of call that shared a slot of the old 64-slot table (the top 6 bits of
 * (key | 1) * 0x9E3779B97F4A7C15) and took it over from each other on every call, as two of
 * tiny_gpt's GEMMs and two AdamW updates did: each call was a first call again, which
 * splits, so the slower way ran every time. Each kind must settle on the faster way. */
static void t_interleaved_kinds(void) {
    uint64_t k1 = 0x3bb765056418c307u, k2 = 0;
    unsigned slot1 = (unsigned)(((k1 | 1) * 0x9E3779B97F4A7C15u) >> 58);
    for (uint64_t k = 2;; k += 2)
        if ((unsigned)(((k | 1) * 0x9E3779B97F4A7C15u) >> 58) == slot1) {
            k2 = k;
            break;
        }
    int late_splits[2] = {0, 0};
    for (int i = 0; i < 40; i++) {
        bool s1 = call(k1, 300, 20), s2 = call(k2, 300, 20);
        if (i >= 8) late_splits[0] += s1, late_splits[1] += s2;
    }
    /* after the first calls of each way, only a probe every 4 x LTC_SPLIT_PROBE calls */
    CHECK(late_splits[0] <= 1);
    CHECK(late_splits[1] <= 1);
}

/* A computation of two calls of one kind, each faster alone unsplit (20 us against 30), but
 * a run where any call did not split pays 200 us more at its end (as when the workers went
 * to sleep and the next kernel's split wakes them): the computation's way must settle on
 * splitting every call, against each call's own timing. */
static void t_plan_way(void) {
    ltc_cpu_split_plan plan;
    memset(&plan, 0, sizeof plan);
    int late_all = 0, late_runs = 0;
    for (int i = 0; i < 48; i++) {
        ltc_cpu_split_run r;
        ltc_cpu_split_plan_begin(&plan, &r);
        bool a = call(0x51ed27u, 30, 20), b = call(0x51ed27u, 30, 20);
        if (!a || !b) busy_us(200);
        ltc_cpu_split_plan_end(&plan, &r, true);
        if (i >= 12) late_runs++, late_all += a && b;
    }
    /* after the first runs of each way, a run of the other way every LTC_SPLIT_PROBE runs */
    CHECK(late_all >= late_runs - 3);
    /* a computation with no timed call is not timed after its first run */
    ltc_cpu_split_plan quiet;
    memset(&quiet, 0, sizeof quiet);
    for (int i = 0; i < 3; i++) {
        ltc_cpu_split_run r;
        ltc_cpu_split_plan_begin(&quiet, &r);
        ltc_cpu_split_plan_end(&quiet, &r, true);
        CHECK(r.way == (i == 0 ? 1 : -1));
    }
}

int main(void) {
    t_interleaved_kinds();
    printf("%s - the timed split settles on the faster way for two interleaved kinds of call\n",
           n_fail ? "not ok 1" : "ok 1");
    if (ltc_cpu_threads() < 2) {
        printf("ok 2 # skip one core: computations are not timed\n");
        return n_fail ? 1 : 0;
    }
    int before = n_fail;
    t_plan_way();
    printf("%s - a computation's runs settle on splitting every call when that is faster in "
           "all, though each call alone is not\n", n_fail > before ? "not ok 2" : "ok 2");
    return n_fail ? 1 : 0;
}
