/*
 * config.c - LTC_* configuration: read from the environment once, settable at run time
 * under the same names (ltc.config in Lua).
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

typedef struct {
    const char *name;
    int64_t value, min, max;
    const char *doc;
} option;

static option options[] = {
    {"LTC_COMPILE_CACHE_SIZE", 1024, 1, 1 << 20, "compiled graphs kept in the LRU compile cache"},
    {"LTC_SYNC_GC", 1, 0, 1, "Lua binding: run a full garbage collection before each sync"},
};
static bool loaded;

void ltc_config_init(void) {
    if (loaded) return;
    loaded = true;
    for (size_t i = 0; i < sizeof options / sizeof *options; i++) {
        const char *v = getenv(options[i].name);
        if (!v || !*v) continue;
        char *end;
        long long x = strtoll(v, &end, 10);
        if (*end == 0 && x >= options[i].min && x <= options[i].max) options[i].value = x;
    }
}

static option *find(const char *name) {
    ltc_config_init();
    for (size_t i = 0; i < sizeof options / sizeof *options; i++)
        if (strcmp(options[i].name, name) == 0) return &options[i];
    return NULL;
}

int64_t ltc_config_get_int(const char *name) {
    option *o = find(name);
    return o ? o->value : 0;
}

ltc_status ltc_config_set_int(const char *name, int64_t value) {
    option *o = find(name);
    if (!o) return ltc_errorf(LTC_ERR_ARG, "unknown configuration option '%s'", name);
    if (value < o->min || value > o->max)
        return ltc_errorf(LTC_ERR_ARG, "%s must be in %lld..%lld, got %lld", name,
                          (long long)o->min, (long long)o->max, (long long)value);
    o->value = value;
    return LTC_OK;
}
