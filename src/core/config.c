/*
 * config.c - LTC_* configuration: read from the environment once, settable at run time
 * under the same names (ltc.config in Lua). Integer options have a range; string options
 * (LTC_SAVE_GRAPHS, LTC_SAVE_GRAPHS_FMT) may restrict their values.
 */
#include <errno.h>
#include <stdio.h>
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
    {"LTC_SYNC_GC", 1, 0, 2,
     "Lua binding: collect garbage before each sync: 0 no, 1 a young (generational) "
     "collection, 2 a full collection"},
    {"LTC_IR_DEBUG", 0, 0, 1, "record the Lua source line of each IR node (shown by ltc.debug.ir)"},
    {"LTC_TRIM_GRAPH_SIZE", 100000, 0, (int64_t)1 << 40,
     "sync automatically after this many nodes traced without a sync (0: never)"},
    {"LTC_NUM_THREADS", 0, 0, 256, "threads of large CPU kernels and of OpenBLAS (0: one per core)"},
    {"LTC_SPECIAL_SCALARS", 0, 0, 1,
     "Lua numbers 0, 1 and -1 in ops become graph constants, not parameters"},
    {"LTC_FUSION", 1, 0, 1, "CPU backend: fuse elementwise ops into blockwise passes (at compile)"},
    {"LTC_GEMM_EPILOGUE", 1, 0, 1,
     "CPU backend: a fused elementwise step that reads a linear's result (or a "
     "linear_backward's input gradient) runs inside it, on each block of rows as a thread "
     "finishes them (0: a step of its own)"},
    {"LTC_BATCH_STEPS", 1, 0, 1,
     "CPU backend: small fused elementwise steps that make only results (an optimizer's "
     "update of each parameter) run as one step whose blocks the threads share (0: one by one)"},
    {"LTC_CONV_DIRECT", 1, 0, 1,
     "CPU backend: float32 conv2d at stride 1 (forward, input gradient, 3x3 weight gradient) "
     "runs direct AVX-512 kernels where the CPU has AVX-512 (0: im2col and OpenBLAS, as every "
     "other conv2d)"},
    {"LTC_GEMM_SPLIT", 2, 0, 2,
     "CPU backend: the GEMMs of linear and linear_backward from 1M multiply-adds as row blocks "
     "on the threads: 0 never, 1 always, 2 when timing the two ways shows it pays"},
    {"LTC_PROFILE", 0, 0, 1,
     "CPU backend: time each plan step; ltc.debug.backend_text shows the mean and fastest "
     "time per step"},
    {"LTC_DETERMINISTIC", 0, 0, 1,
     "results independent of the thread count: OpenBLAS GEMMs run on one thread "
     "(ltc.use_deterministic_algorithms)"},
};

typedef struct {
    const char *name;
    const char *def;
    const char *const *allowed; /* NULL: any value */
    const char *doc;
    char *value;                /* NULL: the default */
} str_option;

static const char *const save_fmts[] = {"text", "dot", NULL};
static str_option str_options[] = {
    {"LTC_SAVE_GRAPHS", "", NULL, "append every compiled graph to this file (\"\": off)", NULL},
    {"LTC_SAVE_GRAPHS_FMT", "text", save_fmts, "format of LTC_SAVE_GRAPHS: text or dot", NULL},
};

#define N_OPTIONS (sizeof options / sizeof *options)
#define N_STR_OPTIONS (sizeof str_options / sizeof *str_options)
static bool loaded;
/* The options a backend reads when it compiles a graph: part of every graph's hash. */
static const char *const compile_options[] = {"LTC_FUSION", "LTC_GEMM_EPILOGUE",
                                              "LTC_BATCH_STEPS"};
static uint64_t compile_key; /* their values, hashed (update_compile_key) */

static bool is_compile_option(const option *o) {
    for (size_t i = 0; i < sizeof compile_options / sizeof *compile_options; i++)
        if (strcmp(o->name, compile_options[i]) == 0) return true;
    return false;
}

/* FNV-1a over the compile options' values: a graph hash mixes it in, so a graph compiled
 * under one setting is not found under another, and setting an option back finds it again. */
static void update_compile_key(void) {
    uint64_t k = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (is_compile_option(&options[i])) k = (k ^ (uint64_t)options[i].value) * 0x100000001b3ull;
    compile_key = k;
}

static bool str_allowed(const str_option *o, const char *v) {
    if (!o->allowed) return true;
    for (const char *const *a = o->allowed; *a; a++)
        if (strcmp(*a, v) == 0) return true;
    return false;
}

void ltc_config_init(void) {
    if (loaded) return;
    loaded = true;
    update_compile_key(); /* the defaults, in case the environment sets none */
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const char *v = getenv(options[i].name);
        if (!v || !*v) continue;
        char *end;
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (*end == 0 && !errno && x >= options[i].min && x <= options[i].max)
            options[i].value = x;
        else /* once: the environment is read once */
            fprintf(stderr, "ltc: warning: %s=%s is invalid (expected an integer in %lld..%lld); "
                    "using the default %lld\n", options[i].name, v, (long long)options[i].min,
                    (long long)options[i].max, (long long)options[i].value);
    }
    update_compile_key();
    for (size_t i = 0; i < N_STR_OPTIONS; i++) {
        const char *v = getenv(str_options[i].name);
        if (v && str_allowed(&str_options[i], v)) str_options[i].value = strdup(v);
        else if (v)
            fprintf(stderr, "ltc: warning: %s=%s is invalid; using the default \"%s\"\n",
                    str_options[i].name, v, str_options[i].def);
    }
}

static option *find(const char *name) {
    ltc_config_init();
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (strcmp(options[i].name, name) == 0) return &options[i];
    return NULL;
}

static str_option *find_str(const char *name) {
    ltc_config_init();
    for (size_t i = 0; i < N_STR_OPTIONS; i++)
        if (strcmp(str_options[i].name, name) == 0) return &str_options[i];
    return NULL;
}

int64_t ltc_config_get_int(const char *name) {
    option *o = find(name);
    return o ? o->value : 0;
}

int64_t *ltc_config_slot(const char *name) {
    option *o = find(name);
    return o ? &o->value : NULL;
}

ltc_status ltc_config_set_int(const char *name, int64_t value) {
    option *o = find(name);
    if (!o && find_str(name))
        return ltc_errorf(LTC_ERR_ARG, "%s is a string option, got a number", name);
    if (!o) return ltc_errorf(LTC_ERR_ARG, "unknown configuration option '%s'", name);
    if (value < o->min || value > o->max)
        return ltc_errorf(LTC_ERR_ARG, "%s must be in %lld..%lld, got %lld", name,
                          (long long)o->min, (long long)o->max, (long long)value);
    o->value = value;
    if (is_compile_option(o)) update_compile_key();
    return LTC_OK;
}

uint64_t ltc_config_compile_key(void) {
    ltc_config_init();
    return compile_key;
}

const char *ltc_config_get_str(const char *name) {
    str_option *o = find_str(name);
    if (!o) return NULL;
    return o->value ? o->value : o->def;
}

ltc_status ltc_config_set_str(const char *name, const char *value) {
    str_option *o = find_str(name);
    if (!o && find(name))
        return ltc_errorf(LTC_ERR_ARG, "%s is an integer option, got a string", name);
    if (!o) return ltc_errorf(LTC_ERR_ARG, "unknown configuration option '%s'", name);
    if (!str_allowed(o, value)) {
        char list[128] = "";
        for (const char *const *a = o->allowed; *a; a++) {
            strncat(list, a == o->allowed ? "" : ", ", sizeof list - strlen(list) - 1);
            strncat(list, *a, sizeof list - strlen(list) - 1);
        }
        return ltc_errorf(LTC_ERR_ARG, "%s must be one of %s, got '%s'", name, list, value);
    }
    char *copy = strdup(value);
    if (!copy) return ltc_errorf(LTC_ERR_NOMEM, "%s: out of memory", name);
    free(o->value);
    o->value = copy;
    return LTC_OK;
}

bool ltc_config_entry_get(int i, ltc_config_entry *out) {
    ltc_config_init();
    if (i < 0) return false;
    memset(out, 0, sizeof *out);
    if ((size_t)i < N_OPTIONS) {
        const option *o = &options[i];
        *out = (ltc_config_entry){.name = o->name, .doc = o->doc, .value = o->value,
                                  .min = o->min, .max = o->max};
        return true;
    }
    i -= (int)N_OPTIONS;
    if ((size_t)i >= N_STR_OPTIONS) return false;
    const str_option *o = &str_options[i];
    *out = (ltc_config_entry){.name = o->name, .doc = o->doc, .is_str = true,
                              .str = o->value ? o->value : o->def};
    return true;
}
