/* io.c - reading files, gzip-compressed or not (zlib's gzread reads both). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ltc.h"

ltc_status ltc_read_file_gz(const char *path, char **data, size_t *len) {
    gzFile f = gzopen(path, "rb");
    if (!f) return ltc_errorf(LTC_ERR_IO, "cannot open '%s': %s", path, strerror(errno ? errno : ENOENT));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    ltc_status st = LTC_OK;
    if (!buf) {
        st = ltc_errorf(LTC_ERR_NOMEM, "out of memory reading '%s'", path);
        goto done;
    }
    for (;;) {
        if (n == cap) {
            char *nb = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
            if (!nb) {
                st = ltc_errorf(LTC_ERR_NOMEM, "out of memory reading '%s'", path);
                goto done;
            }
            buf = nb, cap *= 2;
        }
        int want = cap - n > (1u << 30) ? 1 << 30 : (int)(cap - n);
        int got = gzread(f, buf + n, (unsigned)want);
        if (got < 0) {
            int errnum;
            const char *msg = gzerror(f, &errnum);
            st = ltc_errorf(LTC_ERR_IO, "cannot read '%s': %s", path, msg);
            goto done;
        }
        if (got == 0) break;
        n += (size_t)got;
    }
done:
    gzclose(f);
    if (st) {
        free(buf);
        return st;
    }
    *data = buf;
    *len = n;
    return LTC_OK;
}
