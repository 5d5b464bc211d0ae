/*
 * bench.c - the device's own limits, for bench/opencl.lua: the bandwidth of a plain copy
 * kernel (the floor a memory-bound chain is measured against) and the time of a raw
 * CLBlast SGEMM on device buffers (what the backend's GEMM steps are measured against).
 * Both run on the backend's device and queue, best of `reps` after one warm-up.
 */
#include <lauxlib.h>
#include <lua.h>
#include <time.h>

#include "ocl.h"
#include <clblast_c.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char copy_src[] =
    "__kernel void ltc_bench_copy(__global float *out, __global const float *in, long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i < n) out[i] = in[i];\n}\n";

/* _bench_copy(n_floats, reps) -> GB/s moved (read + write) by the copy kernel. */
static int l_bench_copy(lua_State *L) {
    int64_t n = luaL_checkinteger(L, 1);
    int reps = (int)luaL_optinteger(L, 2, 10);
    if (ocl_open(NULL)) return luaL_error(L, "%s", ltc_last_error());
    cl_program p;
    if (ocl_program_get(copy_src, &p)) return luaL_error(L, "%s", ltc_last_error());
    cl_int e;
    cl_kernel k = clCreateKernel(p, "ltc_bench_copy", &e);
    ocl_buf *a = ocl_buf_new((size_t)n * 4), *b = a ? ocl_buf_new((size_t)n * 4) : NULL;
    if (e != CL_SUCCESS || !a || !b) {
        ocl_buf_release(a);
        ocl_buf_release(b);
        if (k) clReleaseKernel(k);
        clReleaseProgram(p);
        return luaL_error(L, "bench_copy: %s", e != CL_SUCCESS ? ocl_err(e) : ltc_last_error());
    }
    cl_long nn = n;
    clSetKernelArg(k, 0, sizeof(cl_mem), &b->mem);
    clSetKernelArg(k, 1, sizeof(cl_mem), &a->mem);
    clSetKernelArg(k, 2, sizeof nn, &nn);
    size_t global = (size_t)n;
    double best = 1e30;
    for (int r = 0; r <= reps; r++) {
        double t0 = now_s();
        clEnqueueNDRangeKernel(ocl.queue, k, 1, NULL, &global, NULL, 0, NULL, NULL);
        clFinish(ocl.queue);
        double t = now_s() - t0;
        if (r > 0 && t < best) best = t;
    }
    ocl_buf_release(a);
    ocl_buf_release(b);
    clReleaseKernel(k);
    clReleaseProgram(p);
    lua_pushnumber(L, 8.0 * (double)n / best * 1e-9);
    return 1;
}

/* _bench_gemm(m, n, k, reps) -> ms of one raw CLBlast SGEMM (row-major, no transposes). */
static int l_bench_gemm(lua_State *L) {
    size_t m = (size_t)luaL_checkinteger(L, 1), n = (size_t)luaL_checkinteger(L, 2),
           k = (size_t)luaL_checkinteger(L, 3);
    int reps = (int)luaL_optinteger(L, 4, 10);
    if (ocl_open(NULL)) return luaL_error(L, "%s", ltc_last_error());
    ocl_buf *a = ocl_buf_new(m * k * 4), *b = ocl_buf_new(k * n * 4), *c = ocl_buf_new(m * n * 4);
    if (!a || !b || !c) {
        ocl_buf_release(a);
        ocl_buf_release(b);
        ocl_buf_release(c);
        return luaL_error(L, "bench_gemm: %s", ltc_last_error());
    }
    cl_float zero = 0;
    clEnqueueFillBuffer(ocl.queue, a->mem, &zero, sizeof zero, 0, m * k * 4, 0, NULL, NULL);
    clEnqueueFillBuffer(ocl.queue, b->mem, &zero, sizeof zero, 0, k * n * 4, 0, NULL, NULL);
    double best = 1e30;
    CLBlastStatusCode st = CLBlastSuccess;
    for (int r = 0; r <= reps && st == CLBlastSuccess; r++) {
        double t0 = now_s();
        st = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, m, n, k,
                          1.0f, a->mem, 0, k, b->mem, 0, n, 0.0f, c->mem, 0, n, &ocl.queue, NULL);
        clFinish(ocl.queue);
        double t = now_s() - t0;
        if (r > 0 && t < best) best = t;
    }
    ocl_buf_release(a);
    ocl_buf_release(b);
    ocl_buf_release(c);
    if (st != CLBlastSuccess) return luaL_error(L, "bench_gemm: CLBlast status %d", (int)st);
    lua_pushnumber(L, best * 1e3);
    return 1;
}

void ocl_bench_open(lua_State *L) {
    lua_pushcfunction(L, l_bench_copy);
    lua_setfield(L, -2, "_bench_copy");
    lua_pushcfunction(L, l_bench_gemm);
    lua_setfield(L, -2, "_bench_gemm");
}
