/*
 * ltc_argerror.c - lauxlib's argument checks (luaL_checkstring, luaL_checkinteger,
 * luaL_optnumber, luaL_argerror, ...) for the hand-written binding, which ltc_lua.h maps
 * here. lauxlib's own name the function as the caller spelled it ("bad argument #1 to 'f'"
 * for a function called through a local f, '?' when Lua cannot tell) at the caller's line,
 * which is a line of lua/ltc/ when one of ltc's Lua functions made the call. These raise
 * "<name>: bad argument #n (...)" at the user's line (ltcL_where), where <name> is the name
 * the function has in the ltc module (ltc.config_get is "config_get" whatever the caller
 * called it), else the caller's name for it.
 */
#include <stdio.h>
#include <string.h>

#include "ltc_lua.h"

/* The undefined names are lauxlib's own below. */
#undef luaL_argerror
#undef luaL_typeerror
#undef luaL_checklstring
#undef luaL_optlstring
#undef luaL_checknumber
#undef luaL_optnumber
#undef luaL_checkinteger
#undef luaL_optinteger
#undef luaL_checktype
#undef luaL_checkany
#undef luaL_checkudata

/* Copies into buf the key under which table t (absolute index) holds the value on top of the
 * stack, if a string key does. */
static bool find_key(lua_State *L, int t, char *buf, size_t n) {
    if (lua_type(L, t) != LUA_TTABLE) return false;
    int f = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, t)) {
        if (lua_type(L, -2) == LUA_TSTRING && lua_rawequal(L, -1, f)) {
            snprintf(buf, n, "%s", lua_tostring(L, -2));
            lua_pop(L, 2);
            return true;
        }
        lua_pop(L, 1);
    }
    return false;
}

/* The name of the running C function (level 0): its key in the ltc module, in ltc.core, or
 * among the tensor methods; else what the caller called it; else "?". *method: the caller
 * called it as a method (self is argument 0 of the message). */
static void function_name(lua_State *L, char *buf, size_t n, bool *method) {
    lua_Debug ar;
    int top = lua_gettop(L);
    *method = false;
    snprintf(buf, n, "?");
    if (!lua_getstack(L, 0, &ar) || !lua_getinfo(L, "nf", &ar)) return;
    *method = ar.namewhat && strcmp(ar.namewhat, "method") == 0;
    int f = lua_gettop(L);
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    int loaded = lua_gettop(L);
    /* ltc's functions, the core's, the tensor methods (core.methods), the graph methods (the
     * __index table of its metatable), then the tensor's metamethods */
    bool found = false;
    for (int i = 0; i < 5 && !found; i++) {
        if (i == 0) lua_getfield(L, loaded, "ltc");
        else if (i <= 2) lua_getfield(L, loaded, "ltc.core");
        if (i == 2 && lua_type(L, -1) == LUA_TTABLE) lua_getfield(L, -1, "methods");
        if (i == 3 && luaL_getmetatable(L, "ltc.Graph") == LUA_TTABLE) lua_getfield(L, -1, "__index");
        if (i == 4) luaL_getmetatable(L, LTC_TENSOR_MT);
        lua_pushvalue(L, f);
        found = find_key(L, lua_gettop(L) - 1, buf, n);
        lua_settop(L, loaded);
    }
    if (!found && ar.name) snprintf(buf, n, "%s", ar.name);
    lua_settop(L, top);
}

int ltcL_argerror(lua_State *L, int arg, const char *extramsg) {
    char name[128];
    bool method;
    function_name(L, name, sizeof name, &method);
    lua_pushstring(L, extramsg); /* kept on the stack: extramsg may be a string we pushed */
    if (method && --arg == 0)
        return ltcL_raise(L, "%s: bad self (%s)", name, lua_tostring(L, -1));
    return ltcL_raise(L, "%s: bad argument #%d (%s)", name, arg, lua_tostring(L, -1));
}

int ltcL_typeerror(lua_State *L, int arg, const char *tname) {
    const char *msg = lua_pushfstring(L, "%s expected, got %s", tname, ltcL_typename(L, arg));
    return ltcL_argerror(L, arg, msg);
}

static void tag_error(lua_State *L, int arg, int tag) {
    ltcL_typeerror(L, arg, lua_typename(L, tag));
}

const char *ltcL_checklstring(lua_State *L, int arg, size_t *len) {
    const char *s = lua_tolstring(L, arg, len);
    if (!s) tag_error(L, arg, LUA_TSTRING);
    return s;
}

const char *ltcL_optlstring(lua_State *L, int arg, const char *def, size_t *len) {
    if (lua_isnoneornil(L, arg)) {
        if (len) *len = def ? strlen(def) : 0;
        return def;
    }
    return ltcL_checklstring(L, arg, len);
}

lua_Number ltcL_checknumber(lua_State *L, int arg) {
    int ok;
    lua_Number d = lua_tonumberx(L, arg, &ok);
    if (!ok) tag_error(L, arg, LUA_TNUMBER);
    return d;
}

lua_Number ltcL_optnumber(lua_State *L, int arg, lua_Number def) {
    return lua_isnoneornil(L, arg) ? def : ltcL_checknumber(L, arg);
}

lua_Integer ltcL_checkinteger(lua_State *L, int arg) {
    int ok;
    lua_Integer d = lua_tointegerx(L, arg, &ok);
    if (!ok) {
        if (lua_isnumber(L, arg)) ltcL_argerror(L, arg, "number has no integer representation");
        else tag_error(L, arg, LUA_TNUMBER);
    }
    return d;
}

lua_Integer ltcL_optinteger(lua_State *L, int arg, lua_Integer def) {
    return lua_isnoneornil(L, arg) ? def : ltcL_checkinteger(L, arg);
}

void ltcL_checktype(lua_State *L, int arg, int t) {
    if (lua_type(L, arg) != t) tag_error(L, arg, t);
}

void *ltcL_checkudata(lua_State *L, int arg, const char *tname) {
    void *p = luaL_testudata(L, arg, tname);
    if (!p) ltcL_typeerror(L, arg, tname);
    return p;
}

void ltcL_checkany(lua_State *L, int arg) {
    if (lua_type(L, arg) == LUA_TNONE) ltcL_argerror(L, arg, "value expected");
}
