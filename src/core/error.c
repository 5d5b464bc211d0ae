/* error.c - the per-thread error message behind ltc_last_error(). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ltc.h"

/* The message buffer is on the heap, made at the thread's first error: thread-local storage
 * stays small enough for the loader to place it statically (see tensor.c's scalar cache). */
#define ERR_SIZE 1024
static _Thread_local char *err_buf;
static _Thread_local unsigned err_serial; /* counts ltc_errorf calls (ltc_error_serial) */
static pthread_key_t err_key;
static pthread_once_t err_once = PTHREAD_ONCE_INIT;
static char err_nomem[] = "out of memory (for an error message)";

static void err_make_key(void) { (void)pthread_key_create(&err_key, free); }

/* This thread's buffer (NULL when it cannot be made). */
static char *buf_get(void) {
    if (err_buf) return err_buf;
    pthread_once(&err_once, err_make_key);
    char *b = calloc(1, ERR_SIZE);
    if (b && pthread_setspecific(err_key, b)) {
        free(b);
        b = NULL;
    }
    return err_buf = b;
}

const char *ltc_last_error(void) { return err_buf ? err_buf : err_serial ? err_nomem : ""; }
unsigned ltc_error_serial(void) { return err_serial; }

ltc_status ltc_errorf(ltc_status st, const char *fmt, ...) {
    /* formatted aside first: an argument may be ltc_last_error() itself ("load: %s: %s") */
    char tmp[ERR_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    char *b = buf_get();
    if (b) memcpy(b, tmp, ERR_SIZE);
    err_serial++;
    return st;
}

static _Thread_local int err_node = -1;
void ltc_error_set_node(int index) { err_node = index; }
int ltc_error_node(void) { return err_node; }

ltc_status ltc_error_prefix(ltc_status st, const char *op) {
    char *err = err_buf;
    if (!err) return st;
    size_t n = strlen(op), len = strlen(err);
    /* an error already naming the op keeps its text */
    if (strncmp(err, op, n) == 0 && err[n] == ':') return st;
    if (n + 2 >= ERR_SIZE) return st;
    if (len > ERR_SIZE - n - 3) len = ERR_SIZE - n - 3;
    memmove(err + n + 2, err, len);
    memcpy(err, op, n);
    memcpy(err + n, ": ", 2);
    err[n + 2 + len] = 0;
    return st;
}
