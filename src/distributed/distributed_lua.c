/* distributed_lua.c - luaopen_ltc_distributed: the C half of `require "ltc.distributed"`
 * (lua/ltc/distributed.lua loads it and builds the user-facing API on it). Functions:
 *   init(check, timeout) -> rank, size      finalize()            is_initialized()
 *   rank(), size()                          barrier()             abort(code)
 *   set_options(check, timeout)             stats() -> {calls, bytes, seconds, wait_seconds}
 *   reset_stats()
 * When the Lua state closes (the script ended or raised an error) the module finalizes:
 * see ltc_dist_finalize. */
#include <lauxlib.h>
#include <lua.h>

#include "mpi_comm.h"

static int fail(lua_State *L, const char *fn) {
    return luaL_error(L, "ltc.distributed.%s: %s", fn, ltc_last_error());
}

static double opt_timeout(lua_State *L, int idx) {
    double t = luaL_optnumber(L, idx, 300);
    if (!(t > 0)) luaL_argerror(L, idx, "the timeout must be a positive number of seconds");
    return t;
}

static int l_init(lua_State *L) {
    bool check = lua_isnoneornil(L, 1) ? true : lua_toboolean(L, 1);
    double timeout = opt_timeout(L, 2);
    if (ltc_dist_init(check, timeout)) return fail(L, "init");
    lua_pushinteger(L, ltc_dist_rank());
    lua_pushinteger(L, ltc_dist_size());
    return 2;
}

static int l_set_options(lua_State *L) {
    luaL_checkany(L, 1);
    ltc_dist_set(lua_toboolean(L, 1), opt_timeout(L, 2));
    return 0;
}

static int l_finalize(lua_State *L) {
    if (ltc_dist_finalize()) return fail(L, "finalize");
    return 0;
}

static int l_is_initialized(lua_State *L) {
    lua_pushboolean(L, ltc_dist_initialized());
    return 1;
}

static int l_rank(lua_State *L) {
    lua_pushinteger(L, ltc_dist_initialized() ? ltc_dist_rank() : 0);
    return 1;
}

static int l_size(lua_State *L) {
    lua_pushinteger(L, ltc_dist_initialized() ? ltc_dist_size() : 1);
    return 1;
}

static int l_barrier(lua_State *L) {
    if (!ltc_dist_initialized()) return luaL_error(L, "ltc.distributed.barrier: call init() first");
    if (ltc_comm_barrier()) return fail(L, "barrier");
    return 0;
}

static int l_abort(lua_State *L) {
    ltc_dist_abort((int)luaL_optinteger(L, 1, 1));
}

static int l_stats(lua_State *L) {
    ltc_dist_stats s = ltc_dist_get_stats();
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, s.calls);
    lua_setfield(L, -2, "calls");
    lua_pushinteger(L, s.bytes);
    lua_setfield(L, -2, "bytes");
    lua_pushnumber(L, s.seconds);
    lua_setfield(L, -2, "seconds");
    lua_pushnumber(L, s.wait_seconds);
    lua_setfield(L, -2, "wait_seconds");
    return 1;
}

static int l_reset_stats(lua_State *L) {
    (void)L;
    ltc_dist_reset_stats();
    return 0;
}

static int l_at_close(lua_State *L) {
    (void)L;
    ltc_dist_finalize();
    return 0;
}

int luaopen_ltc_distributed(lua_State *L) {
    static const luaL_Reg fns[] = {
        {"init", l_init}, {"set_options", l_set_options}, {"finalize", l_finalize},
        {"is_initialized", l_is_initialized}, {"rank", l_rank}, {"size", l_size},
        {"barrier", l_barrier}, {"abort", l_abort}, {"stats", l_stats},
        {"reset_stats", l_reset_stats}, {NULL, NULL},
    };
    luaL_newlib(L, fns);
    /* finalize when the state closes: a sentinel in the registry, collected at lua_close */
    lua_newuserdatauv(L, 1, 0);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, l_at_close);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, "ltc.distributed.sentinel");
    return 1;
}
