/*
 * npy_fuzz.c - libFuzzer harness for the .npy reader (src/core/npy.c): the input is written
 * to a file and loaded. A malformed file must be an error with a reason (a non-empty
 * message naming the file), never a crash, a hang or a sanitizer report. A file that loads
 * must give a tensor whose size matches its bytes, and must read back. Run by make fuzz-files.
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
    if (!path[0]) {
        ltc_builtins_register();
        snprintf(path, sizeof path, "/tmp/ltc_npy_fuzz_%d.npy", (int)getpid());
    }
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    fwrite(data, 1, size, f);
    fclose(f);
    ltc_tensor *t = NULL;
    ltc_status st = ltc_load_npy(path, &t);
    if (st) {
        const char *msg = ltc_last_error();
        if (!msg || !strstr(msg, "load")) abort(); /* an error without a reason */
        return 0;
    }
    size_t nbytes = ltc_shape_nbytes(ltc_tensor_shape(t));
    if (nbytes > size) abort(); /* more data than the file holds */
    void *host = malloc(nbytes + 1);
    if (host && ltc_tensor_to_host(t, host)) abort();
    free(host);
    ltc_tensor_release(t);
    return 0;
}
