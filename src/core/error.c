/* error.c - the per-thread error message behind ltc_last_error(). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ltc.h"

static _Thread_local char err_buf[1024];

const char *ltc_last_error(void) { return err_buf; }

ltc_status ltc_errorf(ltc_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_buf, sizeof err_buf, fmt, ap);
    va_end(ap);
    return st;
}

ltc_status ltc_error_prefix(ltc_status st, const char *op) {
    char tmp[sizeof err_buf];
    size_t n = strlen(op);
    /* an error already naming the op (or an outer op) keeps its text */
    if (strncmp(err_buf, op, n) == 0 && err_buf[n] == ':') return st;
    snprintf(tmp, sizeof tmp, "%s: %s", op, err_buf);
    memcpy(err_buf, tmp, sizeof err_buf);
    return st;
}
