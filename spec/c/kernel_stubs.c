/* kernel_stubs.c - test-only stand-ins for the src/core functions the CPU kernels call, so
 * that spec/c/kernels_test.c links without the rest of the core. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fuse.h"
#include "ltc.h"

static char errbuf[512];

/* Returns the last message set by ltc_errorf. */
const char *ltc_last_error(void) {
    return errbuf;
}

/* Formats the message into the (single-threaded) buffer and returns st. */
ltc_status ltc_errorf(ltc_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
    return st;
}

/* The dtype's long name. */
const char *ltc_dtype_name(ltc_dtype dt) {
    static const char *const names[] = {"float32", "float64", "int32", "int64", "bool"};
    return dt >= 0 && dt < LTC_DTYPE_COUNT ? names[dt] : "?";
}

/* A value for a message (%g; the core's finds the shortest text that reads back). */
const char *ltc_value_text(char buf[32], double v, ltc_dtype dt) {
    (void)dt;
    snprintf(buf, 32, "%g", v);
    return buf;
}

/* Bytes per element. */
size_t ltc_dtype_size(ltc_dtype dt) {
    static const size_t sizes[] = {4, 8, 4, 8, 1};
    return dt >= 0 && dt < LTC_DTYPE_COUNT ? sizes[dt] : 0;
}

/* True for float32 and float64. */
bool ltc_dtype_is_float(ltc_dtype dt) {
    return dt == LTC_F32 || dt == LTC_F64;
}

/* Test stand-ins: every value fits; the prefix is left out. */
ltc_status ltc_dtype_check_elem(const void *p, ltc_dtype src, ltc_dtype dst) {
    (void)p, (void)src, (void)dst;
    return LTC_OK;
}

ltc_status ltc_error_prefix(ltc_status st, const char *op) {
    (void)op;
    return st;
}

/* Product of the sizes (1 for 0-d). */
int64_t ltc_shape_numel(const ltc_shape *s) {
    int64_t n = 1;
    for (int d = 0; d < s->ndim; d++)
        n *= s->dims[d];
    return n;
}

/* numel times the element size. */
size_t ltc_shape_nbytes(const ltc_shape *s) {
    return (size_t)ltc_shape_numel(s) * ltc_dtype_size(s->dtype);
}

/* The worker pool (src/cpu/threads.c needs the core's configuration): the caller does it all. */
#include "threads.h"
void ltc_cpu_parallel_for(int64_t n, int64_t grain, ltc_cpu_range_fn fn, void *ctx) {
    (void)grain;
    if (n > 0) fn(ctx, 0, n, 0);
}
void ltc_cpu_parallel_tasks(int64_t n, ltc_cpu_range_fn fn, void *ctx) {
    if (n > 0) fn(ctx, 0, n, 0);
}

/* One thread, so OpenBLAS's count is left alone. */
int ltc_cpu_threads(void) { return 1; }
void ltc_cpu_blas_single(bool single) { (void)single; }
void ltc_cpu_blas_prepare(int64_t macs) { (void)macs; }
bool ltc_cpu_split_begin(ltc_cpu_split_t *s, uint64_t key) {
    (void)key;
    s->split = false;
    return false;
}
void ltc_cpu_split_end(ltc_cpu_split_t *s) { (void)s; }

/* The options the kernels read, at their defaults (src/core/config.c). */
int64_t ltc_config_get_int(const char *name) {
    return strcmp(name, "LTC_CONV_DIRECT") == 0;
}
int64_t *ltc_config_slot(const char *name) {
    static int64_t split = 2, other = 0; /* LTC_GEMM_SPLIT's default; the rest read 0 */
    return strcmp(name, "LTC_GEMM_SPLIT") == 0 ? &split : &other;
}

/* The kernels tested here run no epilogue groups (those are src/cpu/fuse.c's, tested through
 * plans by spec/epilogue_spec.lua). */
bool ltc_cpu_fused_run_range(const ltc_fused *f, const void *const *in, void *const *out,
                             int64_t lo, int64_t hi) {
    (void)f, (void)in, (void)out, (void)lo, (void)hi;
    return false;
}
ltc_status ltc_cpu_fused_kernel(const ltc_kernel_args *a) {
    (void)a;
    return LTC_ERR_BACKEND;
}
const char *ltc_op_name(int op) {
    (void)op;
    return "?";
}
