/*
 * ltc_trim.c - a full garbage collection before each trim sync, as before every sync that
 * Lua asks for (LTC_SYNC_GC): tensors that are unreachable but not yet finalized would
 * otherwise be computed as roots and keep their buffers until the collector gets to them.
 */
#include "ltc_lua.h"

/* The Lua state whose collector the hook runs (one per OS thread, as the core's hook). */
static _Thread_local lua_State *trim_state;

static void collect(void *ud) {
    (void)ud;
    if (trim_state && ltc_config_get_int("LTC_SYNC_GC")) lua_gc(trim_state, LUA_GCCOLLECT);
}

/* The state is closing: the hook must not touch it any more. */
static int trim_close(lua_State *L) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    if (trim_state == lua_tothread(L, -1)) {
        ltc_set_trim_hook(NULL, NULL);
        trim_state = NULL;
    }
    return 0;
}

void ltcL_install_trim_gc(lua_State *L) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    trim_state = lua_tothread(L, -1);
    lua_pop(L, 1);
    ltc_set_trim_hook(collect, NULL);
    /* one sentinel per state: a module opened again (busted insulates package.loaded) must
     * not leave an old sentinel whose finalizer would remove the hook */
    if (lua_getfield(L, LUA_REGISTRYINDEX, "ltc.trim_sentinel") != LUA_TNIL) {
        lua_pop(L, 1);
        return;
    }
    lua_pop(L, 1);
    lua_newuserdatauv(L, 1, 0); /* its __gc runs when the state closes */
    lua_newtable(L);
    lua_pushcfunction(L, trim_close);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, "ltc.trim_sentinel");
}
