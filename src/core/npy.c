/*
 * npy.c - reading and writing NumPy's .npy format (version 1.0 written; 1.0, 2.0 and 3.0
 * read), for the five dtypes: '<f4', '<f8', '<i4', '<i8', '|b1' (also '<b1', '?').
 * C order only. The format: the magic "\x93NUMPY", major and minor version bytes, a
 * little-endian header length (2 bytes in 1.0, 4 in 2.0/3.0), then a Python dict literal
 * {'descr': ..., 'fortran_order': False, 'shape': (...), } padded with spaces and a final
 * newline so that the data starts at a multiple of 64 bytes; then the raw elements.
 * See numpy/lib/format.py.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ltc.h"

static const char magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

static const char *descr_of(ltc_dtype dt) {
    switch (dt) {
    case LTC_F32: return "<f4";
    case LTC_F64: return "<f8";
    case LTC_I32: return "<i4";
    case LTC_I64: return "<i8";
    default: return "|b1";
    }
}

/* Writes t as .npy to the file `path`, or (mem) to a new malloc'd buffer *mem of *mem_len
 * bytes; `path` names it in errors. */
static ltc_status save_npy(const char *path, ltc_tensor *t, char **mem, size_t *mem_len) {
    const ltc_shape *s = ltc_tensor_shape(t);
    size_t nbytes = ltc_shape_nbytes(s);
    void *data = malloc(nbytes ? nbytes : 1);
    if (!data) return ltc_errorf(LTC_ERR_NOMEM, "save: out of memory for %zu bytes", nbytes);
    ltc_status st = ltc_tensor_to_host(t, data);
    if (st) {
        free(data);
        return st;
    }
    char shape[LTC_MAX_DIMS * 24 + 4] = "(";
    size_t n = 1;
    for (int d = 0; d < s->ndim; d++)
        n += (size_t)snprintf(shape + n, sizeof shape - n, "%lld%s", (long long)s->dims[d],
                              s->ndim == 1 ? "," : d + 1 < s->ndim ? ", " : "");
    snprintf(shape + n, sizeof shape - n, ")");
    char header[512];
    int len = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                       descr_of(s->dtype), shape);
    int total = (10 + len + 1 + 63) / 64 * 64; /* magic, version, length, dict, '\n' */
    while (10 + len + 1 < total) header[len++] = ' ';
    header[len++] = '\n';
    unsigned char pre[10];
    memcpy(pre, magic, 6);
    pre[6] = 1, pre[7] = 0, pre[8] = (unsigned char)(len & 0xff), pre[9] = (unsigned char)(len >> 8);
    FILE *f = mem ? open_memstream(mem, mem_len) : fopen(path, "wb");
    if (!f) {
        free(data);
        return ltc_errorf(LTC_ERR_IO, "save: cannot open %s: %s", path, strerror(errno));
    }
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(header, 1, (size_t)len, f) == (size_t)len &&
              (!nbytes || fwrite(data, 1, nbytes, f) == nbytes);
    ok &= fclose(f) == 0;
    free(data);
    if (!ok) {
        if (mem) free(*mem), *mem = NULL;
        return ltc_errorf(LTC_ERR_IO, "save: cannot write %s: %s", path, strerror(errno));
    }
    return LTC_OK;
}

ltc_status ltc_save_npy(const char *path, ltc_tensor *t) { return save_npy(path, t, NULL, NULL); }

ltc_status ltc_save_npy_bytes(ltc_tensor *t, char **out, size_t *len) {
    *out = NULL;
    return save_npy("a .npy in memory", t, out, len);
}

/* Finds the value of 'key' in the header dict; returns a pointer just past "'key':" and
 * its spaces, or NULL. */
static const char *dict_value(const char *h, const char *key) {
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(h, pat);
    if (!p) {
        snprintf(pat, sizeof pat, "\"%s\"", key);
        p = strstr(h, pat);
    }
    if (!p) return NULL;
    p += strlen(pat);
    while (*p == ' ') p++;
    if (*p != ':') return NULL;
    p++;
    while (*p == ' ') p++;
    return p;
}

/* Parses the header dict into shape (dtype and dims); the message names the problem. */
static ltc_status parse_header(const char *path, const char *h, ltc_shape *s) {
    const char *v = dict_value(h, "descr");
    if (!v || (*v != '\'' && *v != '"'))
        return ltc_errorf(LTC_ERR_IO, "load: %s: header has no 'descr'", path);
    char descr[16] = "";
    size_t n = 0;
    for (v++; *v && *v != '\'' && *v != '"' && n + 1 < sizeof descr; v++) descr[n++] = *v;
    descr[n] = 0;
    static const struct {
        const char *descr;
        ltc_dtype dt;
    } known[] = {{"<f4", LTC_F32}, {"<f8", LTC_F64}, {"<i4", LTC_I32}, {"<i8", LTC_I64},
                 {"|b1", LTC_BOOL}, {"<b1", LTC_BOOL}, {"?", LTC_BOOL}, {"|i1", LTC_DTYPE_NONE}};
    s->dtype = LTC_DTYPE_NONE;
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (!strcmp(descr, known[i].descr)) s->dtype = known[i].dt;
    if ((int)s->dtype < 0)
        return ltc_errorf(LTC_ERR_IO, "load: %s: unsupported dtype '%s' (expected <f4, <f8, "
                          "<i4, <i8 or |b1: little-endian float32, float64, int32, int64, bool)",
                          path, descr);
    v = dict_value(h, "fortran_order");
    if (!v) return ltc_errorf(LTC_ERR_IO, "load: %s: header has no 'fortran_order'", path);
    if (!strncmp(v, "True", 4))
        return ltc_errorf(LTC_ERR_IO, "load: %s: Fortran-order arrays are not supported (save "
                          "with numpy.ascontiguousarray)", path);
    if (strncmp(v, "False", 5) != 0)
        return ltc_errorf(LTC_ERR_IO, "load: %s: bad 'fortran_order' value", path);
    v = dict_value(h, "shape");
    if (!v || *v != '(') return ltc_errorf(LTC_ERR_IO, "load: %s: header has no 'shape' tuple", path);
    int64_t dims[LTC_MAX_DIMS];
    int nd = 0;
    for (v++;;) {
        while (*v == ' ' || *v == ',') v++;
        if (*v == ')') break;
        if (!isdigit((unsigned char)*v))
            return ltc_errorf(LTC_ERR_IO, "load: %s: bad 'shape' in the header", path);
        if (nd == LTC_MAX_DIMS)
            return ltc_errorf(LTC_ERR_IO, "load: %s: more than %d dims", path, LTC_MAX_DIMS);
        char *end;
        errno = 0;
        long long d = strtoll(v, &end, 10);
        if (errno) return ltc_errorf(LTC_ERR_IO, "load: %s: a size in 'shape' is too large", path);
        dims[nd++] = d;
        v = end;
        while (*v == 'L') v++; /* Python 2's long suffix */
    }
    if (ltc_shape_make(s, s->dtype, nd, dims))
        return ltc_errorf(LTC_ERR_IO, "load: %s: %s", path, ltc_last_error());
    return LTC_OK;
}

/* Reads a .npy from f (closed here); `path` names it in errors. */
static ltc_status load_npy(FILE *f, const char *path, ltc_tensor **out) {
    ltc_status st = LTC_OK;
    char *header = NULL;
    void *data = NULL;
    unsigned char pre[12];
    if (fread(pre, 1, 8, f) != 8 || memcmp(pre, magic, 6) != 0) {
        st = ltc_errorf(LTC_ERR_IO, "load: %s is not a .npy file (no \\x93NUMPY magic)", path);
        goto done;
    }
    size_t hlen;
    if (pre[6] == 1) {
        if (fread(pre + 8, 1, 2, f) != 2) goto truncated;
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
    } else if (pre[6] == 2 || pre[6] == 3) {
        if (fread(pre + 8, 1, 4, f) != 4) goto truncated;
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    } else {
        st = ltc_errorf(LTC_ERR_IO, "load: %s: unsupported .npy version %d.%d", path, pre[6], pre[7]);
        goto done;
    }
    if (hlen > (1u << 20)) {
        st = ltc_errorf(LTC_ERR_IO, "load: %s: header length %zu is implausible", path, hlen);
        goto done;
    }
    header = malloc(hlen + 1);
    if (!header) {
        st = ltc_errorf(LTC_ERR_NOMEM, "load: out of memory");
        goto done;
    }
    if (fread(header, 1, hlen, f) != hlen) goto truncated;
    header[hlen] = 0;
    ltc_shape s;
    if ((st = parse_header(path, header, &s))) goto done;
    size_t nbytes = ltc_shape_nbytes(&s);
    data = malloc(nbytes ? nbytes : 1);
    if (!data) {
        st = ltc_errorf(LTC_ERR_NOMEM, "load: out of memory for %zu bytes", nbytes);
        goto done;
    }
    if (fread(data, 1, nbytes, f) != nbytes) {
        st = ltc_errorf(LTC_ERR_IO, "load: %s: data is shorter than the header's shape needs "
                        "(%zu bytes)", path, nbytes);
        goto done;
    }
    if (s.dtype == LTC_BOOL)
        for (size_t i = 0; i < nbytes; i++) ((unsigned char *)data)[i] = ((unsigned char *)data)[i] != 0;
    st = ltc_tensor_from_host(&s, data, out);
    goto done;
truncated:
    st = ltc_errorf(LTC_ERR_IO, "load: %s: file ends inside the header", path);
done:
    free(header);
    free(data);
    fclose(f);
    return st;
}

ltc_status ltc_load_npy(const char *path, ltc_tensor **out) {
    FILE *f = fopen(path, "rb");
    if (!f) return ltc_errorf(LTC_ERR_IO, "load: cannot open %s: %s", path, strerror(errno));
    return load_npy(f, path, out);
}

ltc_status ltc_load_npy_bytes(const void *bytes, size_t len, const char *name, ltc_tensor **out) {
    if (len < 8) return ltc_errorf(LTC_ERR_IO, "load: %s is not a .npy file (no \\x93NUMPY magic)", name);
    FILE *f = fmemopen((void *)bytes, len, "rb");
    if (!f) return ltc_errorf(LTC_ERR_NOMEM, "load: %s: %s", name, strerror(errno));
    return load_npy(f, name, out);
}
