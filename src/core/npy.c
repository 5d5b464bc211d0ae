/*
 * npy.c - reading and writing NumPy's .npy format (version 1.0 written; 1.0, 2.0 and 3.0
 * read), for the dtypes f2, f4, f8, i1, i2, i4, i8, u1, b1 ('?'). Written little-endian in
 * C order; read in either byte order ('<', '>', '|', '=') and in C or Fortran order, the
 * data converted to ltc's (little-endian, row-major) on load. bfloat16 has no NumPy dtype:
 * it is written as '<f4' (exact; torch users write t.float().numpy()) and loads as float32.
 * The format: the magic "\x93NUMPY", major and minor version bytes, a
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

static const struct {
    char kind;
    int size;
    ltc_dtype dt;
} kinds[] = {{'f', 2, LTC_F16}, {'f', 4, LTC_F32}, {'f', 8, LTC_F64}, {'i', 1, LTC_I8},
             {'i', 2, LTC_I16}, {'i', 4, LTC_I32}, {'i', 8, LTC_I64}, {'u', 1, LTC_U8},
             {'b', 1, LTC_BOOL}};

static const char *descr_of(ltc_dtype dt) {
    switch (dt) {
    case LTC_F32: case LTC_BF16: return "<f4";
    case LTC_F64: return "<f8";
    case LTC_I32: return "<i4";
    case LTC_I64: return "<i8";
    case LTC_F16: return "<f2";
    case LTC_I16: return "<i2";
    case LTC_I8: return "|i1";
    case LTC_U8: return "|u1";
    default: return "|b1";
    }
}

/* Writes t as .npy to the file `path`, or (mem) to a new malloc'd buffer *mem of *mem_len
 * bytes; `path` names it in errors. One buffer holds the preamble, the header and the data,
 * which the backend writes in place (bfloat16 is widened to float32 in place). */
static ltc_status save_npy(const char *path, ltc_tensor *t, char **mem, size_t *mem_len) {
    const ltc_shape *s = ltc_tensor_shape(t);
    bool bf16 = s->dtype == LTC_BF16; /* written as float32: twice the bytes */
    size_t nbytes = ltc_shape_nbytes(s), out_bytes = bf16 ? 2 * nbytes : nbytes;
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
    size_t head = 10 + (size_t)len;
    unsigned char *buf = malloc(head + out_bytes);
    if (!buf) return ltc_errorf(LTC_ERR_NOMEM, "save: out of memory for %zu bytes", out_bytes);
    memcpy(buf, magic, 6);
    buf[6] = 1, buf[7] = 0, buf[8] = (unsigned char)(len & 0xff), buf[9] = (unsigned char)(len >> 8);
    memcpy(buf + 10, header, (size_t)len);
    void *data = buf + head;
    ltc_status st = ltc_tensor_to_host(t, data);
    if (st) {
        free(buf);
        return st;
    }
    if (bf16) { /* widen in place, from the end */
        for (int64_t i = ltc_shape_numel(s) - 1; i >= 0; i--) {
            float v = ltc_bf16_to_f32(((const uint16_t *)data)[i]);
            memcpy((char *)data + (size_t)i * 4, &v, 4);
        }
    }
    if (mem) {
        *mem = (char *)buf, *mem_len = head + out_bytes;
        return LTC_OK;
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(buf);
        return ltc_errorf(LTC_ERR_IO, "save: cannot open %s: %s", path, strerror(errno));
    }
    bool ok = fwrite(buf, 1, head + out_bytes, f) == head + out_bytes;
    ok &= fclose(f) == 0;
    free(buf);
    if (!ok) return ltc_errorf(LTC_ERR_IO, "save: cannot write %s: %s", path, strerror(errno));
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
static ltc_status parse_header(const char *path, const char *h, ltc_shape *s, bool *swap,
                               bool *fortran) {
    const char *v = dict_value(h, "descr");
    if (!v || (*v != '\'' && *v != '"'))
        return ltc_errorf(LTC_ERR_IO, "load: %s: header has no 'descr'", path);
    char descr[16] = "";
    size_t n = 0;
    for (v++; *v && *v != '\'' && *v != '"' && n + 1 < sizeof descr; v++) descr[n++] = *v;
    descr[n] = 0;
    /* [byte order] kind size: '<f4', '>i8', '|u1', 'f2' (native), '?' (bool) */
    const char *d = descr;
    char order = strchr("<>|=", *d) && *d ? *d++ : '=';
    char kind = *d ? *d++ : 0;
    int size = kind == '?' && !*d ? 1 : atoi(d);
    if (kind == '?') kind = 'b';
    s->dtype = LTC_DTYPE_NONE;
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (kinds[i].kind == kind && kinds[i].size == size && (isdigit((unsigned char)*d) || !*d))
            s->dtype = kinds[i].dt;
    if ((int)s->dtype < 0)
        return ltc_errorf(LTC_ERR_IO, "load: %s: unsupported dtype '%s' (expected f2, f4, f8, i1, "
                          "i2, i4, i8, u1 or b1, either byte order)", path, descr);
    *swap = order == '>' && size > 1; /* ltc runs on little-endian machines */
    v = dict_value(h, "fortran_order");
    if (!v) return ltc_errorf(LTC_ERR_IO, "load: %s: header has no 'fortran_order'", path);
    if (!strncmp(v, "True", 4)) *fortran = true;
    else if (!strncmp(v, "False", 5)) *fortran = false;
    else return ltc_errorf(LTC_ERR_IO, "load: %s: bad 'fortran_order' value", path);
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

/* Reverses the bytes of each of the n elements of es bytes (a big-endian file). */
static void swap_bytes(void *data, int64_t n, size_t es) {
    unsigned char *p = data;
    for (int64_t i = 0; i < n; i++, p += es)
        for (size_t a = 0, b = es - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b], p[b] = t;
        }
}

/* A new row-major copy of the column-major (Fortran-order) elements of shape s, or NULL. */
static void *from_fortran(const void *src, const ltc_shape *s) {
    size_t es = ltc_dtype_size(s->dtype), nbytes = ltc_shape_nbytes(s);
    int64_t n = ltc_shape_numel(s), idx[LTC_MAX_DIMS] = {0}, fstride[LTC_MAX_DIMS], acc = 1;
    unsigned char *dst = malloc(nbytes ? nbytes : 1);
    if (!dst) return NULL;
    for (int d = 0; d < s->ndim; d++) fstride[d] = acc, acc *= s->dims[d];
    int64_t off = 0; /* the Fortran offset of idx, walked in row-major order */
    for (int64_t i = 0; i < n; i++) {
        memcpy(dst + (size_t)i * es, (const unsigned char *)src + (size_t)off * es, es);
        for (int d = s->ndim - 1; d >= 0; d--) {
            off += fstride[d];
            if (++idx[d] < s->dims[d]) break;
            off -= fstride[d] * s->dims[d];
            idx[d] = 0;
        }
    }
    return dst;
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
    bool swap = false, fortran = false;
    if ((st = parse_header(path, header, &s, &swap, &fortran))) goto done;
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
    if (swap) swap_bytes(data, ltc_shape_numel(&s), ltc_dtype_size(s.dtype));
    if (fortran && s.ndim > 1) {
        void *c = from_fortran(data, &s);
        if (!c) {
            st = ltc_errorf(LTC_ERR_NOMEM, "load: out of memory for %zu bytes", nbytes);
            goto done;
        }
        free(data);
        data = c;
    }
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

/* The .npy in memory, parsed in place: the data goes to the backend straight from `bytes`
 * when it needs no conversion (a .npz member: one copy, not three). Errors as load_npy's. */
ltc_status ltc_load_npy_bytes(const void *bytes, size_t len, const char *name, ltc_tensor **out) {
    const unsigned char *p = bytes;
    if (len < 10 || memcmp(p, magic, 6) != 0)
        return ltc_errorf(LTC_ERR_IO, "load: %s is not a .npy file (no \\x93NUMPY magic)", name);
    size_t hlen, off;
    if (p[6] == 1) {
        hlen = (size_t)p[8] | (size_t)p[9] << 8, off = 10;
    } else if (p[6] == 2 || p[6] == 3) {
        if (len < 12) return ltc_errorf(LTC_ERR_IO, "load: %s: file ends inside the header", name);
        hlen = (size_t)p[8] | (size_t)p[9] << 8 | (size_t)p[10] << 16 | (size_t)p[11] << 24, off = 12;
    } else {
        return ltc_errorf(LTC_ERR_IO, "load: %s: unsupported .npy version %d.%d", name, p[6], p[7]);
    }
    if (hlen > (1u << 20))
        return ltc_errorf(LTC_ERR_IO, "load: %s: header length %zu is implausible", name, hlen);
    if (len - off < hlen) return ltc_errorf(LTC_ERR_IO, "load: %s: file ends inside the header", name);
    char *header = malloc(hlen + 1);
    if (!header) return ltc_errorf(LTC_ERR_NOMEM, "load: out of memory");
    memcpy(header, p + off, hlen);
    header[hlen] = 0;
    ltc_shape s;
    bool swap = false, fortran = false;
    ltc_status st = parse_header(name, header, &s, &swap, &fortran);
    free(header);
    if (st) return st;
    off += hlen;
    size_t nbytes = ltc_shape_nbytes(&s);
    if (len - off < nbytes)
        return ltc_errorf(LTC_ERR_IO, "load: %s: data is shorter than the header's shape needs "
                          "(%zu bytes)", name, nbytes);
    if (!swap && !(fortran && s.ndim > 1) && s.dtype != LTC_BOOL)
        return ltc_tensor_from_host(&s, p + off, out);
    FILE *f = fmemopen((void *)bytes, len, "rb"); /* the general path, which converts */
    if (!f) return ltc_errorf(LTC_ERR_NOMEM, "load: %s: %s", name, strerror(errno));
    return load_npy(f, name, out);
}
