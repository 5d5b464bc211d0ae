/*
 * lua_opencl.c - luaopen_ltc_opencl, the C half of `require "ltc.opencl"` (the Lua half is
 * lua/ltc/opencl.lua). Opening registers the backend "opencl" with the core; nothing
 * touches a device until the first use (ltc.opencl.open(), or a sync on the backend).
 */
#include <lauxlib.h>
#include <lua.h>
#include <string.h>

#include "ocl.h"

static void push_info(lua_State *L, const ocl_device_info *d, int index) {
    lua_createtable(L, 0, 12);
    lua_pushinteger(L, index);
    lua_setfield(L, -2, "index");
    lua_pushinteger(L, d->platform);
    lua_setfield(L, -2, "platform");
    lua_pushinteger(L, d->device);
    lua_setfield(L, -2, "device");
    lua_pushstring(L, d->platform_name);
    lua_setfield(L, -2, "platform_name");
    lua_pushstring(L, d->name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, d->vendor);
    lua_setfield(L, -2, "vendor");
    lua_pushstring(L, d->version);
    lua_setfield(L, -2, "version");
    lua_pushinteger(L, (lua_Integer)d->global_mem);
    lua_setfield(L, -2, "memory");
    lua_pushinteger(L, (lua_Integer)d->max_alloc);
    lua_setfield(L, -2, "max_alloc");
    lua_pushinteger(L, d->compute_units);
    lua_setfield(L, -2, "compute_units");
    lua_pushboolean(L, d->fp64);
    lua_setfield(L, -2, "fp64");
}

/* devices() -> list of {index, platform, device, platform_name, name, vendor, version,
 * memory, max_alloc, compute_units, fp64}; or nil, message when no platform exists. */
static int l_devices(lua_State *L) {
    ocl_device_info d[32];
    int n = ocl_list_devices(d, 32);
    if (n < 0) {
        lua_pushnil(L);
        lua_pushstring(L, ltc_last_error());
        return 2;
    }
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        push_info(L, &d[i], i);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

/* open([spec]) -> info of the device the backend runs on (spec "P:D" or "N"; default
 * LTC_OPENCL_DEVICE, else the first GPU, else the first device). Errors when there is
 * none. Once open, the device stays (spec is then ignored). */
static int l_open(lua_State *L) {
    if (ocl_open(luaL_optstring(L, 1, NULL))) return luaL_error(L, "%s", ltc_last_error());
    push_info(L, &ocl.info, -1);
    return 1;
}

/* set_memory_limit(bytes): caps the device memory the allocator hands out (0: the
 * device's global memory). For tests of the out-of-memory path. */
static int l_set_memory_limit(lua_State *L) {
    ocl_mem_set_limit((size_t)luaL_checkinteger(L, 1));
    return 0;
}

/* trim(): returns every cached (unused) device buffer to the driver. */
static int l_trim(lua_State *L) {
    (void)L;
    if (ocl.ready) ocl_mem_trim();
    return 0;
}

/* last_build_log() -> the source and build log of the last failed program build. */
static int l_last_build_log(lua_State *L) {
    lua_pushstring(L, ocl_last_build_log());
    return 1;
}

/* _try_build(src): builds OpenCL C as given; raises the build error (tests). */
static int l_try_build(lua_State *L) {
    if (ocl_program_try(luaL_checkstring(L, 1))) return luaL_error(L, "%s", ltc_last_error());
    return 0;
}

/* lowered_ops() -> set {name = true} of the ops the backend runs on the device (float32
 * operands); every other op runs through the eager fallback. */
static int l_lowered_ops(lua_State *L) {
    lua_newtable(L);
    for (int op = 0; op < LTC_OP_COUNT; op++)
        if (op != LTC_OP_DEVICE_DATA && ocl_op_lowered(op)) {
            lua_pushboolean(L, 1);
            lua_setfield(L, -2, ltc_op_name(op));
        }
    return 1;
}

/* finish(): waits until the device has run everything enqueued (a sync enqueues its
 * kernels without waiting; reading a value waits for it). Raises if the device failed. */
static int l_finish(lua_State *L) {
    if (ocl_finish()) return luaL_error(L, "%s", ltc_last_error());
    return 0;
}

/* _fail_run_after(n): the n-th next run on the device fails as a lost device would (tests
 * of the device-lost path; 0 disarms). */
static int l_fail_run_after(lua_State *L) {
    ocl_fail_run_after((int)luaL_checkinteger(L, 1));
    return 0;
}

/* ltc.graph_pool_info for the pools of opencl graphs. */
static bool pool_stats(ltc_mempool_id id, ltc_pool_stats *out) {
    return ltc_pool_stats_of("opencl", id, out);
}

void ocl_bench_open(lua_State *L); /* bench.c: _bench_copy, _bench_gemm */

static const luaL_Reg fns[] = {
    {"lowered_ops", l_lowered_ops},
    {"devices", l_devices}, {"open", l_open}, {"set_memory_limit", l_set_memory_limit},
    {"trim", l_trim}, {"last_build_log", l_last_build_log}, {"_try_build", l_try_build},
    {"_fail_run_after", l_fail_run_after}, {"finish", l_finish},
    {NULL, NULL},
};

int luaopen_ltc_opencl(lua_State *L) {
    if (!ltc_has_backend("opencl") && ltc_backend_register(ocl_backend()))
        return luaL_error(L, "ltc.opencl: %s", ltc_last_error());
    if (!ltc_has_graph_impl("opencl") &&
        (ltc_graph_impl_register("opencl", ocl_graph_new) ||
         ltc_graph_impl_register_pool_stats("opencl", pool_stats)))
        return luaL_error(L, "ltc.opencl: %s", ltc_last_error());
    lua_newtable(L);
    luaL_setfuncs(L, fns, 0);
    ocl_bench_open(L);
    return 1;
}
