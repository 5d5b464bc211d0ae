/*
 * yaml_fuzz.c - libFuzzer harness for the code generator's YAML loader (codegen/model.c,
 * schema.c): the input is written as an ops.yaml and loaded with a fixed backend YAML. A
 * malformed file must be reported (an error count above 0), never a crash, a hang or a
 * sanitizer report. Diagnostics go to stderr (run with -close_fd_mask=2).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"

static char ops_path[64], backend_path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!ops_path[0]) {
        snprintf(ops_path, sizeof ops_path, "/tmp/ltc_yaml_fuzz_%d.yaml", (int)getpid());
        snprintf(backend_path, sizeof backend_path, "/tmp/ltc_yaml_fuzz_%d_b.yaml", (int)getpid());
        FILE *b = fopen(backend_path, "wb");
        if (!b) abort();
        fputs("backend: cpu\nfull_codegen:\n  - add\nsupported:\n  - sum\n", b);
        fclose(b);
    }
    FILE *f = fopen(ops_path, "wb");
    if (!f) abort();
    fwrite(data, 1, size, f);
    fclose(f);
    int before = cg_error_count();
    gen_model m = {0};
    bool ok = model_load(&m, ops_path, backend_path);
    if (!ok && cg_error_count() == before) abort(); /* a failure nobody was told about */
    if (ok) {
        /* what the emitters read must be consistent */
        for (int i = 0; i < m.n_ops; i++) {
            const gen_op *op = &m.ops[i];
            if (!op->full_name || !op->cname || !op->enum_name) abort();
            for (int k = 0; k < op->n_args; k++)
                if (!op->args[k].name || (int)op->args[k].type >= ARG_TYPE_COUNT) abort();
        }
        strbuf b = {0};
        gen_options o = {.source = ops_path, .backend_yaml = backend_path, .output_dir = "/tmp",
                         .impl_path = "/nonexistent", .shape_header = "/nonexistent",
                         .backend_name = "cpu", .dry_run = true};
        emit_meta_lua(&m, &o, &b);
        emit_doc_md(&m, &o, &b);
        sb_free(&b);
    }
    model_free(&m);
    return 0;
}
