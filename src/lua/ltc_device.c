/*
 * ltc_device.c - the Lua side of the backend registry and of devices: ltc.backends().
 * Talks to backends through ltc_backend.h only.
 */
#include "ltc_backend.h"
#include "ltc_lua.h"

/* ltc.backends(): the registered backends' names (device types), in registration order:
 * {"cpu", "ref", ...}; the built-in ones first, then those that outside modules registered
 * on `require`. */
static int l_backends(lua_State *L) {
    int n = ltc_backend_count();
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushstring(L, ltc_backend_get_index(i)->name);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

static const luaL_Reg device_functions[] = {
    {"backends", l_backends},
    {NULL, NULL},
};

void ltcL_open_device(lua_State *L) { luaL_setfuncs(L, device_functions, 0); }
