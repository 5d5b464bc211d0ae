/*
 * device.c - OpenCL platforms and devices: listing them, opening one (context and in-order
 * queue), and the names of OpenCL error codes.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

ocl_state ocl;

const char *ocl_err(cl_int e) {
    switch (e) {
#define E(x) case x: return #x;
    E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE)
    E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
    E(CL_BUILD_PROGRAM_FAILURE) E(CL_INVALID_VALUE) E(CL_INVALID_PLATFORM)
    E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT) E(CL_INVALID_COMMAND_QUEUE)
    E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS)
    E(CL_INVALID_PROGRAM) E(CL_INVALID_PROGRAM_EXECUTABLE) E(CL_INVALID_KERNEL_NAME)
    E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX) E(CL_INVALID_ARG_VALUE)
    E(CL_INVALID_ARG_SIZE) E(CL_INVALID_KERNEL_ARGS) E(CL_INVALID_WORK_DIMENSION)
    E(CL_INVALID_WORK_GROUP_SIZE) E(CL_INVALID_GLOBAL_WORK_SIZE) E(CL_INVALID_BUFFER_SIZE)
    E(CL_INVALID_OPERATION)
#undef E
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "CL error";
    }
}

static void str_info(cl_device_id d, cl_device_info what, char *out, size_t n) {
    out[0] = 0;
    if (clGetDeviceInfo(d, what, n, out, NULL) != CL_SUCCESS) snprintf(out, n, "?");
    out[n - 1] = 0;
}

static void fill_info(ocl_device_info *o, cl_platform_id p, cl_device_id d, int pi, int di) {
    memset(o, 0, sizeof *o);
    o->platform = pi;
    o->device = di;
    clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof o->platform_name, o->platform_name, NULL);
    o->platform_name[sizeof o->platform_name - 1] = 0;
    str_info(d, CL_DEVICE_NAME, o->name, sizeof o->name);
    str_info(d, CL_DEVICE_VENDOR, o->vendor, sizeof o->vendor);
    str_info(d, CL_DEVICE_VERSION, o->version, sizeof o->version);
    cl_ulong mem = 0, alloc = 0;
    cl_uint cu = 0;
    cl_device_fp_config fp = 0;
    clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
    clGetDeviceInfo(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof alloc, &alloc, NULL);
    clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
    clGetDeviceInfo(d, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp, &fp, NULL);
    o->global_mem = mem;
    o->max_alloc = alloc;
    o->compute_units = (int)cu;
    o->fp64 = fp != 0;
}

/* Calls fn for each device of each platform until it returns true. Returns the number
 * of devices seen, or -1 with the error set when there is no platform. */
static int each_device(bool (*fn)(cl_platform_id, cl_device_id, int, int, void *), void *ud) {
    cl_platform_id plats[16];
    cl_uint np = 0;
    cl_int e = clGetPlatformIDs(16, plats, &np);
    if (e != CL_SUCCESS || np == 0) {
        ltc_errorf(LTC_ERR_STATE, "opencl: no OpenCL platform found (%s); install an ICD "
                   "such as pocl-opencl-icd, or a GPU driver", e ? ocl_err(e) : "0 platforms");
        return -1;
    }
    int seen = 0;
    for (cl_uint p = 0; p < np; p++) {
        cl_device_id devs[16];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, devs, &nd) != CL_SUCCESS) continue;
        for (cl_uint d = 0; d < nd; d++, seen++)
            if (fn(plats[p], devs[d], (int)p, (int)d, ud)) return seen + 1;
    }
    return seen;
}

struct list_ud {
    ocl_device_info *out;
    int max, n;
};

static bool list_one(cl_platform_id p, cl_device_id d, int pi, int di, void *ud) {
    struct list_ud *u = ud;
    if (u->n < u->max) fill_info(&u->out[u->n], p, d, pi, di);
    u->n++;
    return false;
}

int ocl_list_devices(ocl_device_info *out, int max) {
    struct list_ud u = {out, max, 0};
    if (each_device(list_one, &u) < 0) return -1;
    return u.n < max ? u.n : max;
}

struct pick_ud {
    int want_p, want_d, want_n; /* -1: any */
    bool gpu_only;
    int n;
    bool found;
    cl_platform_id p;
    cl_device_id d;
    int pi, di;
};

static bool pick_one(cl_platform_id p, cl_device_id d, int pi, int di, void *ud) {
    struct pick_ud *u = ud;
    int n = u->n++;
    bool ok;
    if (u->want_n >= 0) ok = n == u->want_n;
    else if (u->want_p >= 0) ok = pi == u->want_p && di == u->want_d;
    else if (u->gpu_only) {
        cl_device_type t = 0;
        clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof t, &t, NULL);
        ok = (t & CL_DEVICE_TYPE_GPU) != 0;
    } else ok = true;
    if (ok) {
        u->found = true;
        u->p = p;
        u->d = d;
        u->pi = pi;
        u->di = di;
    }
    return ok;
}

static ltc_status open_device(const char *spec);
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;

ltc_status ocl_open(const char *spec) {
    if (__atomic_load_n(&ocl.ready, __ATOMIC_ACQUIRE)) return LTC_OK;
    pthread_mutex_lock(&open_lock);
    ltc_status st = ocl.ready ? LTC_OK : open_device(spec);
    pthread_mutex_unlock(&open_lock);
    return st;
}

static ltc_status open_device(const char *spec) {
    if (!spec || !*spec) spec = getenv("LTC_OPENCL_DEVICE");
    struct pick_ud u = {.want_p = -1, .want_d = -1, .want_n = -1};
    if (spec && *spec) {
        int a, b;
        char tail;
        if (sscanf(spec, "%d:%d%c", &a, &b, &tail) == 2) {
            u.want_p = a;
            u.want_d = b;
        } else if (sscanf(spec, "%d%c", &a, &tail) == 1) {
            u.want_n = a;
        } else {
            return ltc_errorf(LTC_ERR_ARG, "opencl: bad device '%s' (LTC_OPENCL_DEVICE or "
                              "device=): give 'P:D' (platform and device index) or 'N'", spec);
        }
    } else {
        u.gpu_only = true;
    }
    if (each_device(pick_one, &u) < 0) return LTC_ERR_STATE;
    if (!u.found && u.gpu_only) {
        u.gpu_only = false;
        u.n = 0;
        each_device(pick_one, &u);
    }
    if (!u.found)
        return ltc_errorf(LTC_ERR_ARG, "opencl: no OpenCL device '%s' (ltc.opencl.devices() "
                          "lists them)", spec ? spec : "");
    cl_int e;
    cl_context ctx = clCreateContext(NULL, 1, &u.d, NULL, NULL, &e);
    if (e != CL_SUCCESS)
        return ltc_errorf(LTC_ERR_BACKEND, "opencl: clCreateContext failed: %s", ocl_err(e));
    cl_command_queue q = clCreateCommandQueue(ctx, u.d, 0, &e);
    if (e != CL_SUCCESS) {
        clReleaseContext(ctx);
        return ltc_errorf(LTC_ERR_BACKEND, "opencl: clCreateCommandQueue failed: %s", ocl_err(e));
    }
    fill_info(&ocl.info, u.p, u.d, u.pi, u.di);
    ocl.platform = u.p;
    ocl.device = u.d;
    ocl.ctx = ctx;
    ocl.queue = q;
    __atomic_store_n(&ocl.ready, true, __ATOMIC_RELEASE);
    return LTC_OK;
}
