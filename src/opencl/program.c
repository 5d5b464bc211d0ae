/*
 * program.c - building programs, cached by the hash of their source: in memory for the
 * process, and on disk with the driver's binary (clGetProgramInfo(CL_PROGRAM_BINARIES)),
 * so a second run of a script builds nothing from source.
 *
 * The disk cache is LTC_OPENCL_CACHE if set ("" or "off" disables it), else
 * $XDG_CACHE_HOME/ltc/opencl, else ~/.cache/ltc/opencl. A file is named by the hash of the
 * device's name and driver version and of the source; a binary the driver refuses is
 * ignored (rebuilt from source and rewritten). Counters: OpenCLProgramBuild (driver builds
 * from source), OpenCLProgramDiskHit, OpenCLProgramMemHit.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ocl.h"

#define MEM_CACHE_MAX 256

static struct {
    ltc_hash h;
    cl_program p;
} mem_cache[MEM_CACHE_MAX];
static int n_mem;
/* The program cache is shared by every thread that compiles for the backend; a build runs
 * under the lock too (the same source built once). */
static pthread_mutex_t prog_lock = PTHREAD_MUTEX_INITIALIZER;
static char *last_log; /* the source and log of the last failed build */

const char *ocl_last_build_log(void) { return last_log ? last_log : ""; }

void ocl_program_cache_clear(void) {
    pthread_mutex_lock(&prog_lock);
    for (int i = 0; i < n_mem; i++) clReleaseProgram(mem_cache[i].p);
    n_mem = 0;
    pthread_mutex_unlock(&prog_lock);
}

/* The cache directory (created), or false when the disk cache is off. */
static bool cache_dir(char *out, size_t n) {
    const char *v = getenv("LTC_OPENCL_CACHE");
    if (v && (!*v || !strcmp(v, "off") || !strcmp(v, "0"))) return false;
    if (v) snprintf(out, n, "%s", v);
    else if (getenv("XDG_CACHE_HOME") && *getenv("XDG_CACHE_HOME"))
        snprintf(out, n, "%s/ltc/opencl", getenv("XDG_CACHE_HOME"));
    else if (getenv("HOME")) snprintf(out, n, "%s/.cache/ltc/opencl", getenv("HOME"));
    else return false;
    for (char *s = out + 1; *s; s++) { /* mkdir -p */
        if (*s != '/') continue;
        *s = 0;
        mkdir(out, 0777);
        *s = '/';
    }
    return mkdir(out, 0777) == 0 || errno == EEXIST;
}

static void cache_path(char *out, size_t n, const char *dir, ltc_hash h) {
    char dev[512];
    char drv[128] = "";
    clGetDeviceInfo(ocl.device, CL_DRIVER_VERSION, sizeof drv, drv, NULL);
    drv[sizeof drv - 1] = 0;
    snprintf(dev, sizeof dev, "%s|%s|%s", ocl.info.platform_name, ocl.info.name, drv);
    ltc_hash dh = ltc_hash_bytes(dev, strlen(dev), (ltc_hash){0, 0});
    snprintf(out, n, "%s/%016llx-%016llx%016llx.bin", dir, (unsigned long long)dh.lo,
             (unsigned long long)h.hi, (unsigned long long)h.lo);
}

static const char *build_options(const char *src) {
    /* float literals in float-only programs: no accidental double arithmetic */
    return strstr(src, "double") ? "" : "-cl-single-precision-constant";
}

static cl_program from_disk(const char *path, const char *src) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    cl_program p = NULL;
    unsigned char *bin = NULL;
    if (fseek(f, 0, SEEK_END) != 0) goto done;
    long len = ftell(f);
    if (len <= 0 || fseek(f, 0, SEEK_SET) != 0) goto done;
    bin = malloc((size_t)len);
    if (!bin || fread(bin, 1, (size_t)len, f) != (size_t)len) goto done;
    size_t sz = (size_t)len;
    const unsigned char *bins[1] = {bin};
    cl_int e, bst;
    p = clCreateProgramWithBinary(ocl.ctx, 1, &ocl.device, &sz, bins, &bst, &e);
    if (e != CL_SUCCESS || bst != CL_SUCCESS) {
        if (p) clReleaseProgram(p);
        p = NULL;
        goto done;
    }
    if (clBuildProgram(p, 1, &ocl.device, build_options(src), NULL, NULL) != CL_SUCCESS) {
        clReleaseProgram(p);
        p = NULL;
    }
done:
    free(bin);
    fclose(f);
    return p;
}

static void to_disk(const char *path, cl_program p) {
    size_t sz = 0;
    if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof sz, &sz, NULL) != CL_SUCCESS || !sz)
        return;
    unsigned char *bin = malloc(sz);
    unsigned char *bins[1] = {bin};
    if (bin && clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS) {
        char tmp[1100];
        snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
        FILE *f = fopen(tmp, "wb");
        bool ok = f && fwrite(bin, 1, sz, f) == sz;
        if (f && fclose(f) != 0) ok = false;
        if (ok) ok = rename(tmp, path) == 0;
        if (!ok) remove(tmp);
    }
    free(bin);
}

static ltc_status program_get(const char *src, cl_program *out);

ltc_status ocl_program_get(const char *src, cl_program *out) {
    pthread_mutex_lock(&prog_lock);
    ltc_status st = program_get(src, out);
    pthread_mutex_unlock(&prog_lock);
    return st;
}

static ltc_status program_get(const char *src, cl_program *out) {
    ltc_hash h = ltc_hash_bytes(src, strlen(src), (ltc_hash){0x6f70656e636cULL, 0});
    for (int i = 0; i < n_mem; i++)
        if (ltc_hash_equal(mem_cache[i].h, h)) {
            ltc_counter_add("OpenCLProgramMemHit", 1);
            clRetainProgram(mem_cache[i].p);
            *out = mem_cache[i].p;
            return LTC_OK;
        }
    char dir[900], path[1024];
    bool disk = cache_dir(dir, sizeof dir);
    cl_program p = NULL;
    if (disk) {
        cache_path(path, sizeof path, dir, h);
        if ((p = from_disk(path, src))) ltc_counter_add("OpenCLProgramDiskHit", 1);
    }
    if (!p) {
        cl_int e;
        p = clCreateProgramWithSource(ocl.ctx, 1, &src, NULL, &e);
        if (e != CL_SUCCESS)
            return ltc_errorf(LTC_ERR_BACKEND, "opencl: clCreateProgramWithSource failed: %s",
                              ocl_err(e));
        ltc_counter_add("OpenCLProgramBuild", 1);
        e = clBuildProgram(p, 1, &ocl.device, build_options(src), NULL, NULL);
        if (e != CL_SUCCESS) {
            size_t n = 0;
            clGetProgramBuildInfo(p, ocl.device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
            char *log = malloc(n + 1);
            if (log) {
                log[0] = 0;
                clGetProgramBuildInfo(p, ocl.device, CL_PROGRAM_BUILD_LOG, n, log, NULL);
                log[n] = 0;
            }
            /* the whole source and log go to stderr and ltc.opencl.last_build_log(); the
             * error (1 KB at most) names the device and starts the log */
            fprintf(stderr, "ltc.opencl: build failed on %s (%s)\n---- source ----\n%s"
                    "---- build log ----\n%s\n---- end ----\n", ocl.info.name, ocl_err(e), src,
                    log ? log : "(no log)");
            free(last_log);
            last_log = NULL;
            size_t need = strlen(src) + (log ? strlen(log) : 0) + 64;
            if ((last_log = malloc(need)))
                snprintf(last_log, need, "---- source ----\n%s---- build log ----\n%s", src,
                         log ? log : "(no log)");
            ltc_errorf(LTC_ERR_BACKEND,
                       "opencl: building the generated program failed on %s (%s; source and "
                       "build log printed to stderr and in ltc.opencl.last_build_log()): %.600s",
                       ocl.info.name, ocl_err(e), log ? log : "(no log)");
            free(log);
            clReleaseProgram(p);
            return LTC_ERR_BACKEND;
        }
        if (disk) to_disk(path, p);
    }
    if (n_mem == MEM_CACHE_MAX) { /* full: drop the oldest */
        clReleaseProgram(mem_cache[0].p);
        memmove(mem_cache, mem_cache + 1, sizeof mem_cache[0] * (MEM_CACHE_MAX - 1));
        n_mem--;
    }
    mem_cache[n_mem].h = h;
    mem_cache[n_mem].p = p;
    n_mem++;
    clRetainProgram(p);
    *out = p;
    return LTC_OK;
}

/* Builds `src` as given (no cache): for the bad-input spec, a build error's message. */
ltc_status ocl_program_try(const char *src) {
    cl_program p;
    ltc_status st = ocl_open(NULL);
    if (st) return st;
    char *copy = malloc(strlen(src) + 64);
    if (!copy) return ltc_errorf(LTC_ERR_NOMEM, "opencl: out of memory");
    snprintf(copy, strlen(src) + 64, "%s\n// %p\n", src, (void *)copy); /* never a cache hit */
    st = ocl_program_get(copy, &p);
    free(copy);
    if (!st) clReleaseProgram(p);
    return st;
}
