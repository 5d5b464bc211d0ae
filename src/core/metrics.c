/*
 * metrics.c - counters and timed metrics, reported in PyTorch LTC's text format
 * (torch/csrc/lazy/core/metrics.cpp: "Metric:"/"Counter:" blocks).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

#include "core.h"

#define MAX_COUNTERS 256
#define MAX_METRICS 32
#define RING 1024

typedef struct {
    char name[64];
    int64_t value;
} counter;

typedef struct {
    char name[64];
    int64_t count;
    double total;
    double samples[RING]; /* the latest RING samples, for percentiles and rates */
    double stamps[RING];  /* when each was taken (ltc_now_ns) */
} metric;

/* Registration of names and the sample rings are guarded; counter values are updated with
 * atomic adds (LTC_COUNT) once their slot exists, and slots never move. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static counter counters[MAX_COUNTERS];
static int n_counters;
static metric metrics[MAX_METRICS];
static int n_metrics;

double ltc_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int64_t *ltc_counter_slot(const char *name) {
    int64_t *slot = NULL;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_counters && !slot; i++)
        if (strcmp(counters[i].name, name) == 0) slot = &counters[i].value;
    if (!slot) {
        /* the last slot is shared by every name past the table's size, named so in the
         * report, with one warning: a counter is never silently 0 */
        bool full = n_counters >= MAX_COUNTERS - 1;
        const char *nm = full ? "OtherCounters" : name;
        if (full && n_counters == MAX_COUNTERS) slot = &counters[MAX_COUNTERS - 1].value;
        else {
            counter *c = &counters[n_counters];
            snprintf(c->name, sizeof c->name, "%s", nm);
            slot = &c->value;
            __atomic_store_n(&n_counters, n_counters + 1, __ATOMIC_RELEASE);
        }
        static bool warned;
        if (full && !warned) {
            warned = true;
            fprintf(stderr, "ltc: warning: more than %d counter names; \"%s\" and later ones "
                    "are counted together as OtherCounters\n", MAX_COUNTERS - 1, name);
        }
    }
    pthread_mutex_unlock(&lock);
    return slot;
}

int64_t ltc_counter_value(const char *name) {
    ltc_tensor_counts_flush();
    for (int i = 0; i < n_counters; i++)
        if (strcmp(counters[i].name, name) == 0) return counters[i].value;
    return 0;
}

void ltc_counter_add(const char *name, int64_t delta) {
    int64_t *slot = ltc_counter_slot(name);
    if (slot) __atomic_fetch_add(slot, delta, __ATOMIC_RELAXED);
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const counter *)a)->name, ((const counter *)b)->name);
}

void ltc_counter_foreach(void (*fn)(const char *name, int64_t value, void *ud), void *ud) {
    ltc_tensor_counts_flush();
    counter sorted[MAX_COUNTERS];
    pthread_mutex_lock(&lock);
    int n = n_counters;
    for (int i = 0; i < n; i++) {
        memcpy(sorted[i].name, counters[i].name, sizeof sorted[i].name);
        sorted[i].value = __atomic_load_n(&counters[i].value, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&lock);
    qsort(sorted, (size_t)n, sizeof *sorted, by_name);
    for (int i = 0; i < n; i++)
        if (sorted[i].value) fn(sorted[i].name, sorted[i].value, ud);
}

void ltc_metric_add_sample(const char *name, double ns) {
    metric *m = NULL;
    double now = ltc_now_ns();
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_metrics && !m; i++)
        if (strcmp(metrics[i].name, name) == 0) m = &metrics[i];
    if (!m && n_metrics < MAX_METRICS) {
        m = &metrics[n_metrics++];
        snprintf(m->name, sizeof m->name, "%s", name);
    }
    if (m) {
        m->samples[m->count % RING] = ns;
        m->stamps[m->count % RING] = now;
        m->count++;
        m->total += ns;
    }
    pthread_mutex_unlock(&lock);
}

/* Slots stay allocated (hot paths cache pointers to them); values go to zero. */
void ltc_metrics_reset(void) {
    ltc_tensor_counts_flush();
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_counters; i++) __atomic_store_n(&counters[i].value, 0, __ATOMIC_RELAXED);
    for (int i = 0; i < n_metrics; i++) metrics[i].count = 0, metrics[i].total = 0;
    pthread_mutex_unlock(&lock);
    ltc_debug_metrics_reset(); /* "compile #N" counts from 1 again, as UncachedCompile */
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* "1s234ms567.000us" in LTC's style, from nanoseconds. */
static void fmt_time(char *buf, size_t n, double ns) {
    long long s = (long long)(ns / 1e9);
    double rem = ns - (double)s * 1e9;
    long long ms = (long long)(rem / 1e6);
    double us = (rem - (double)ms * 1e6) / 1e3;
    if (s) snprintf(buf, n, "%llds%03lldms%07.3fus", s, ms, us);
    else if (ms) snprintf(buf, n, "%lldms%07.3fus", ms, us);
    else snprintf(buf, n, "%.3fus", us);
}

typedef struct {
    char *buf;
    size_t len, cap;
    bool failed;
} strbuf;

static void sb_printf(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(strbuf *sb, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
        va_end(ap);
        if (k < 0) { sb->failed = true; return; }
        if (sb->len + (size_t)k < sb->cap) { sb->len += (size_t)k; return; }
        size_t nc = (sb->cap + (size_t)k) * 2;
        char *nb = realloc(sb->buf, nc);
        if (!nb) { sb->failed = true; return; }
        sb->buf = nb, sb->cap = nc;
    }
}

static void report_counter(const char *name, int64_t value, void *ud) {
    sb_printf(ud, "Counter: %s\n  Value: %lld\n", name, (long long)value);
}

char *ltc_metrics_report(void) {
    ltc_tensor_counts_flush();
    strbuf sb = {malloc(1024), 0, 1024, false};
    if (!sb.buf) return NULL;
    sb.buf[0] = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_metrics; i++) {
        metric *m = &metrics[i];
        if (!m->count) continue;
        int n = m->count < RING ? (int)m->count : RING;
        double sorted[RING];
        memcpy(sorted, m->samples, sizeof(double) * (size_t)n);
        qsort(sorted, (size_t)n, sizeof(double), cmp_double);
        char acc[64];
        fmt_time(acc, sizeof acc, m->total);
        sb_printf(&sb, "Metric: %s\n  TotalSamples: %lld\n  Accumulator: %s\n", m->name,
                  (long long)m->count, acc);
        /* LTC: over the retained samples, value and count per second of their time span */
        int64_t first = m->count > RING ? m->count % RING : 0;
        double span = m->stamps[(m->count - 1) % RING] - m->stamps[first];
        if (span > 0) {
            double total = 0;
            for (int k = 0; k < n; k++) total += m->samples[k];
            char vr[64];
            fmt_time(vr, sizeof vr, total / (span / 1e9));
            sb_printf(&sb, "  ValueRate: %s / second\n  Rate: %g / second\n", vr,
                      (double)n / (span / 1e9));
        }
        sb_printf(&sb, "  Percentiles: ");
        static const int pct[] = {1, 5, 10, 20, 50, 80, 90, 95, 99};
        for (size_t k = 0; k < sizeof pct / sizeof *pct; k++) {
            char v[64];
            /* nearest rank: the smallest sample with at least pct% of them at or below it
             * (so the top percentiles of a few samples show the largest) */
            size_t rank = ((size_t)n * (size_t)pct[k] + 99) / 100;
            fmt_time(v, sizeof v, sorted[rank ? rank - 1 : 0]);
            sb_printf(&sb, "%s%d%%=%s", k ? "; " : "", pct[k], v);
        }
        sb_printf(&sb, "\n");
    }
    pthread_mutex_unlock(&lock);
    ltc_counter_foreach(report_counter, &sb);
    /* each backend's own report (its metric_report slot), in LTC's format too */
    for (int i = 0; i < ltc_backend_count(); i++) {
        ltc_backend *b = ltc_backend_get_index(i);
        char *r = b->iface->metric_report ? b->iface->metric_report(b) : NULL;
        if (r && r[0]) sb_printf(&sb, "%s%s", r, r[strlen(r) - 1] == '\n' ? "" : "\n");
        free(r);
    }
    if (sb.failed) {
        free(sb.buf);
        return NULL;
    }
    return sb.buf;
}
