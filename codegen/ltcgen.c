/*
 * ltcgen.c - the op code generator's command line (the part of torchgen's
 * gen_lazy_tensor.py that ltc needs): loads codegen/ops.yaml and a backend YAML, checks
 * them against the shape header and the hand-written kernels, and writes the generated
 * files. Files whose content is unchanged are not touched, so make rebuilds nothing.
 *
 *   ltcgen --source codegen/ops.yaml --backend-yaml codegen/cpu_backend.yaml \
 *          --output-dir gen --impl-path src/cpu --shape-header src/core/shape_inference.h \
 *          --backend-name cpu [--dry-run]
 *
 * With --backend-only it writes one more backend's glue (<name>_ops.c) and nothing of the
 * core, as gen_lazy_tensor.py runs once per backend: the core's files come from ops.yaml
 * alone, so they need no rewriting for another backend YAML.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model.h"

static const char usage[] =
    "usage: ltcgen [--source FILE] [--backend-yaml FILE] [--output-dir DIR] [--impl-path DIR]\n"
    "              [--shape-header FILE] [--backend-name NAME] [--ref-impl-path DIR]\n"
    "              [--device-yaml FILE] [--backend-only] [--dry-run]\n"
    "Generates ltc_ops.h, ltc_ops.c, <backend>_ops.c, lua_ops.c, ops.md and ops_meta.lua\n"
    "from the op schemas, and ref_ops.c (the reference backend's kernels, hand-written ones in DIR)\n"
    "when --ref-impl-path is given. Defaults: codegen/ops.yaml, codegen/cpu_backend.yaml,\n"
    "gen, src/cpu, src/core/shape_inference.h, cpu. --dry-run checks and lists the files\n"
    "without writing. --device-yaml adds a device backend's column (its `lowered` ops) to\n"
    "ops.md. --backend-only writes only <backend>_ops.c (another backend's glue; the core's\n"
    "files, which come from the op schemas alone, are left alone) and checks only that\n"
    "backend's lowerings.\n";

/* Parses the command line into o; returns false (after a message) on a bad option. */
static bool parse_args(int argc, char **argv, gen_options *o) {
    struct {
        const char *name;
        const char **slot;
    } opts[] = {
        {"--source", &o->source},         {"--backend-yaml", &o->backend_yaml},
        {"--output-dir", &o->output_dir}, {"--impl-path", &o->impl_path},
        {"--shape-header", &o->shape_header}, {"--backend-name", &o->backend_name},
        {"--ref-impl-path", &o->ref_impl_path}, {"--device-yaml", &o->device_yaml},
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--dry-run")) {
            o->dry_run = true;
            continue;
        }
        if (!strcmp(a, "--backend-only")) {
            o->backend_only = true;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            exit(0);
        }
        bool found = false;
        for (size_t k = 0; k < sizeof opts / sizeof opts[0] && !found; k++) {
            size_t n = strlen(opts[k].name);
            if (strncmp(a, opts[k].name, n) != 0) continue;
            if (a[n] == '=') {
                *opts[k].slot = a + n + 1;
                found = true;
            } else if (a[n] == '\0') {
                if (i + 1 >= argc) {
                    cg_error("%s needs a value", a);
                    return false;
                }
                *opts[k].slot = argv[++i];
                found = true;
            }
        }
        if (!found) {
            cg_error("unknown option '%s'\n%s", a, usage);
            return false;
        }
    }
    if (o->backend_only && (o->ref_impl_path || o->device_yaml)) {
        cg_error("--backend-only writes only the backend's glue: %s belongs to the core's run",
                 o->ref_impl_path ? "--ref-impl-path" : "--device-yaml");
        return false;
    }
    return true;
}

/* Creates dir and its parents if missing. */
static bool make_dirs(const char *dir) {
    char *p = cg_strdup(dir);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) break;
        *s = '/';
    }
    bool ok = mkdir(p, 0777) == 0 || errno == EEXIST;
    if (!ok) cg_error("cannot create %s: %s", p, strerror(errno));
    free(p);
    return ok;
}

/* Writes text to dir/name unless the file already holds exactly that text (then the file
 * and its timestamp are left alone). A dry run only says what it would do. */
static bool write_if_changed(const gen_options *o, const char *name, const strbuf *text) {
    strbuf path = {0}, tmp = {0};
    sb_printf(&path, "%s/%s", o->output_dir, name);
    size_t len = 0;
    char *old = cg_read_file(path.s, &len);
    bool same = old && len == text->len && memcmp(old, text->s, len) == 0;
    free(old);
    bool ok = true;
    if (o->dry_run) {
        printf("%s %s\n", same ? "unchanged:  " : "would write:", path.s);
    } else if (!same) {
        sb_printf(&tmp, "%s.tmp%ld", path.s, (long)getpid());
        FILE *f = fopen(tmp.s, "wb");
        ok = f && fwrite(text->s, 1, text->len, f) == text->len;
        if (f && fclose(f) != 0) ok = false;
        if (ok && rename(tmp.s, path.s) != 0) ok = false;
        if (!ok) {
            cg_error("cannot write %s: %s", path.s, strerror(errno));
            remove(tmp.s);
        } else {
            printf("ltcgen: wrote %s\n", path.s);
        }
    }
    sb_free(&path);
    sb_free(&tmp);
    return ok;
}

int main(int argc, char **argv) {
    gen_options o = {
        .source = "codegen/ops.yaml",
        .backend_yaml = "codegen/cpu_backend.yaml",
        .output_dir = "gen",
        .impl_path = "src/cpu",
        .shape_header = "src/core/shape_inference.h",
        .backend_name = "cpu",
    };
    if (!parse_args(argc, argv, &o)) return 1;
    gen_model m = {0};
    if (!model_load(&m, o.source, o.backend_yaml) || !model_validate(&m, &o)) {
        fprintf(stderr, "ltcgen: %d error%s; nothing written\n", cg_error_count(),
                cg_error_count() == 1 ? "" : "s");
        model_free(&m);
        return 1;
    }
    char *device_name = NULL;
    if (o.device_yaml && !model_load_device(&m, o.device_yaml, &device_name)) {
        fprintf(stderr, "ltcgen: %d error%s in %s; nothing written\n", cg_error_count(),
                cg_error_count() == 1 ? "" : "s", o.device_yaml);
        free(device_name);
        model_free(&m);
        return 1;
    }
    o.device_name = device_name;
    struct {
        const char *name;
        void (*emit)(const gen_model *, const gen_options *, strbuf *);
    } files[] = {
        {"ltc_ops.h", emit_ops_h}, {"ltc_ops.c", emit_ops_c}, {NULL, emit_backend_c},
        {"lua_ops.c", emit_lua_c}, {"ops.md", emit_doc_md}, {"ref_ops.c", emit_ref_c},
        {"derivatives.lua", emit_autograd_lua}, {"derivatives.c", emit_derivs_c},
        {"ops_meta.lua", emit_meta_lua},
    };
    strbuf backend_file = {0};
    sb_printf(&backend_file, "%s_ops.c", o.backend_name);
    files[2].name = backend_file.s;
    if (!o.dry_run && !make_dirs(o.output_dir)) {
        model_free(&m);
        return 1;
    }
    bool ok = true;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        if (files[i].emit == emit_ref_c && !o.ref_impl_path) continue;
        if (o.backend_only && files[i].emit != emit_backend_c) continue;
        strbuf text = {0};
        files[i].emit(&m, &o, &text);
        ok &= write_if_changed(&o, files[i].name, &text);
        sb_free(&text);
    }
    sb_free(&backend_file);
    free(device_name);
    model_free(&m);
    return ok ? 0 : 1;
}
