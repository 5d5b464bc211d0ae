/*
 * idx_fuzz.c - libFuzzer harness for the IDX reader (src/core/idx.c, MNIST's format): the
 * input is written to a file (the first byte picks the target dtype) and read. A malformed
 * file must be an error with a reason, never a crash, a hang or a sanitizer report.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ltc.h"
#include "ltc_backend.h"
#include "ltc_builtins.h"

static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    if (!path[0]) {
        ltc_builtins_register();
        snprintf(path, sizeof path, "/tmp/ltc_idx_fuzz_%d.idx", (int)getpid());
    }
    ltc_dtype dt = (ltc_dtype)(data[0] % LTC_DTYPE_COUNT);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    fwrite(data + 1, 1, size - 1, f);
    fclose(f);
    ltc_tensor *t = NULL;
    ltc_status st = ltc_read_idx(path, dt, data[0] & 0x80 ? 1.0 / 255 : 1.0, 0.0, &t);
    if (st) {
        const char *msg = ltc_last_error();
        if (!msg || !*msg) abort(); /* an error without a reason */
        return 0;
    }
    int64_t n = ltc_shape_numel(ltc_tensor_shape(t));
    if (n > (int64_t)size) abort(); /* more elements than the file has bytes */
    ltc_tensor_release(t);
    return 0;
}
