/* error.c - the per-thread error message behind ltc_last_error(). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ltc.h"

static _Thread_local char err_buf[1024];
static _Thread_local unsigned err_serial; /* counts ltc_errorf calls (ltc_error_serial) */

const char *ltc_last_error(void) { return err_buf; }
unsigned ltc_error_serial(void) { return err_serial; }

ltc_status ltc_errorf(ltc_status st, const char *fmt, ...) {
    /* formatted aside first: an argument may be ltc_last_error() itself ("load: %s: %s") */
    char tmp[sizeof err_buf];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    memcpy(err_buf, tmp, sizeof err_buf);
    err_serial++;
    return st;
}

static _Thread_local int err_node = -1;
void ltc_error_set_node(int index) { err_node = index; }
int ltc_error_node(void) { return err_node; }

ltc_status ltc_error_prefix(ltc_status st, const char *op) {
    size_t n = strlen(op), len = strlen(err_buf);
    /* an error already naming the op keeps its text */
    if (strncmp(err_buf, op, n) == 0 && err_buf[n] == ':') return st;
    if (n + 2 >= sizeof err_buf) return st;
    if (len > sizeof err_buf - n - 3) len = sizeof err_buf - n - 3;
    memmove(err_buf + n + 2, err_buf, len);
    memcpy(err_buf, op, n);
    memcpy(err_buf + n, ": ", 2);
    err_buf[n + 2 + len] = 0;
    return st;
}
