/*
 * ltc_kwargs.c - PyTorch's keyword arguments for the generated ops (ltc_lua.h): a last
 * argument that is a table with a string key holds keywords, x:sum{dim = 1, keepdim = true};
 * its array part continues the positional arguments, ltc.cat{{a, b}, dim = 2}. The generated
 * entry of each name (gen/lua_ops.c) checks for one and hands it here with the argument names
 * of the name's overloads, from their ops.yaml schemas. The ops that Lua functions replaced
 * (cat, clamp, stack, ...) reach the same code through core._kwbind (lua/ltc/keywords.lua):
 * the matching and its messages are written once, here.
 */
#include <string.h>

#include "ltc_lua.h"

#define MAX_KEYS 32

bool ltcL_haskeywords(lua_State *L) {
    int top = lua_gettop(L);
    if (top == 0 || lua_type(L, top) != LUA_TTABLE) return false;
    /* from the end of the array part on: a list of tensors costs one step, not its length */
    lua_Unsigned n = lua_rawlen(L, top);
    if (n) lua_pushinteger(L, (lua_Integer)n);
    else lua_pushnil(L);
    while (lua_next(L, top)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) == LUA_TSTRING) {
            lua_pop(L, 1);
            return true;
        }
    }
    return false;
}

/* The place of `key` among names, -1 if none. */
static int find_name(const char *const *names, const char *key) {
    for (int j = 0; names[j]; j++)
        if (!strcmp(names[j], key)) return j;
    return -1;
}

/* Raises "<fname>: unknown keyword argument '<key>' (expected <the overloads' names at or
 * after place p, each once>)". */
static int unknown_key(lua_State *L, const ltcL_kwoverload *ovs, int n, int p, const char *key,
                       const char *fname) {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    int listed = 0;
    for (int o = 0; o < n; o++)
        for (int j = p; ovs[o].names[j]; j++) {
            bool seen = false;
            for (int q = 0; q < o && !seen; q++) {
                int at = find_name(ovs[q].names, ovs[o].names[j]);
                seen = at >= p;
            }
            for (int k = p; k < j && !seen; k++) seen = !strcmp(ovs[o].names[k], ovs[o].names[j]);
            if (seen) continue;
            if (listed++) luaL_addstring(&b, ", ");
            luaL_addstring(&b, ovs[o].names[j]);
        }
    if (!listed) {
        luaL_addstring(&b, "none after ");
        for (int j = 0; ovs[0].names[j]; j++) {
            if (j) luaL_addstring(&b, ", ");
            luaL_addstring(&b, ovs[0].names[j]);
        }
    }
    luaL_pushresult(&b);
    return luaL_error(L, "%s: unknown keyword argument '%s' (expected %s)", fname, key,
                      lua_tostring(L, -1));
}

int ltcL_kwarrange(lua_State *L, const ltcL_kwoverload *ovs, int n, const char *fname) {
    const int top = lua_gettop(L);
    const lua_Integer len = (lua_Integer)lua_rawlen(L, top);
    const int p = top - 1 + (int)len; /* the positional arguments */
    const char *keys[MAX_KEYS];
    int n_keys = 0;
    lua_pushnil(L);
    while (lua_next(L, top)) {
        lua_pop(L, 1);
        if (lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 1 && lua_tointeger(L, -1) <= len)
            continue;
        if (lua_type(L, -1) != LUA_TSTRING)
            return luaL_error(L, "%s: bad keyword table (a key of type %s; keywords are names, "
                                 "positional values come first)", fname, luaL_typename(L, -1));
        if (n_keys == MAX_KEYS) return luaL_error(L, "%s: too many keyword arguments", fname);
        keys[n_keys++] = lua_tostring(L, -1); /* the string stays in the table */
    }
    int fit = -1, full = -1;
    for (int o = 0; o < n && full < 0; o++) {
        bool fits = true;
        for (int k = 0; k < n_keys && fits; k++) fits = find_name(ovs[o].names, keys[k]) >= p;
        if (!fits) continue;
        if (fit < 0) fit = o;
        bool all = true;
        for (int j = p; j < ovs[o].n_required && all; j++) {
            bool given = false;
            for (int k = 0; k < n_keys && !given; k++) given = !strcmp(keys[k], ovs[o].names[j]);
            all = given;
        }
        if (all) full = o;
    }
    if (full >= 0) fit = full;
    if (fit < 0) {
        /* a key no overload names; else one whose place a positional argument filled: over
         * every key, so that the order of the table's keys does not pick the message */
        const char *bad = NULL, *dup = NULL;
        for (int k = 0; k < n_keys && !bad; k++) {
            bool known = false;
            for (int o = 0; o < n; o++) {
                int j = find_name(ovs[o].names, keys[k]);
                known = known || j >= 0;
                if (j >= 0 && j < p && !dup) dup = keys[k];
            }
            if (!known) bad = keys[k];
        }
        if (dup && !bad)
            return luaL_error(L, "%s: argument '%s' given by position and by keyword", fname, dup);
        return unknown_key(L, ovs, n, p, bad ? bad : keys[0], fname);
    }
    const ltcL_kwoverload *ov = &ovs[fit];
    int end = p; /* one past the last place a keyword fills */
    for (int k = 0; k < n_keys; k++) {
        int j = find_name(ov->names, keys[k]);
        if (j + 1 > end) end = j + 1;
    }
    luaL_checkstack(L, end + 2, fname);
    lua_rotate(L, 1, 1); /* the table first, then the positional arguments */
    for (lua_Integer i = 1; i <= len; i++) lua_rawgeti(L, 1, i);
    for (int j = p; j < end; j++) lua_getfield(L, 1, ov->names[j]);
    lua_remove(L, 1);
    return fit;
}

int ltcL_kwcall(lua_State *L, const ltcL_kwoverload *ovs, int n, const char *fname) {
    const ltcL_kwoverload *ov = &ovs[ltcL_kwarrange(L, ovs, n, fname)];
    if (ltcL_haskeywords(L)) /* the entry would take it for keywords again */
        return luaL_error(L, "%s: bad argument #%d (a table with names, as a keyword's value)",
                          fname, lua_gettop(L));
    return ov->fn(L);
}

/* ---- core._kwbind: the keyword tables of the ops that Lua functions replaced ----
 * Upvalues: 1 the function, 2 its ltcL_kwentry (light userdata), 3 the name errors give. */

static int kwbound_done(lua_State *L, int status, lua_KContext ctx) {
    (void)status, (void)ctx;
    return lua_gettop(L);
}

int ltcL_kwbound(lua_State *L) {
    if (ltcL_haskeywords(L)) {
        const ltcL_kwentry *e = lua_touserdata(L, lua_upvalueindex(2));
        ltcL_kwarrange(L, e->ovs, e->n, lua_tostring(L, lua_upvalueindex(3)));
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_callk(L, lua_gettop(L) - 1, LUA_MULTRET, 0, kwbound_done);
    return kwbound_done(L, LUA_OK, 0);
}

/* core._kwbind(name, fn [, fname]): fn taking keyword tables by the overloads of the op
 * `name` (ltc_lua_keywords), its errors naming fname (default name; "clamp_" for the in-place
 * method of clamp). An error when name has no keyword table. */
static int l_kwbind(lua_State *L) {
    const char *name = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    const ltcL_kwentry *e = ltc_lua_keywords;
    while (e->name && strcmp(e->name, name)) e++;
    if (!e->name) return luaL_error(L, "_kwbind: no op named '%s' takes keywords", name);
    lua_settop(L, 3);
    if (lua_isnil(L, 3)) lua_copy(L, 1, 3);
    else luaL_checkstring(L, 3);
    lua_pushvalue(L, 2);
    lua_pushlightuserdata(L, (void *)e);
    lua_pushvalue(L, 3);
    lua_pushcclosure(L, ltcL_kwbound, 3);
    return 1;
}

void ltcL_open_keywords(lua_State *L) {
    lua_newtable(L);
    for (const ltcL_kwentry *e = ltc_lua_keywords; e->name; e++) {
        lua_createtable(L, e->n, 0);
        for (int o = 0; o < e->n; o++) {
            lua_newtable(L);
            for (int j = 0; e->ovs[o].names[j]; j++) {
                lua_pushstring(L, e->ovs[o].names[j]);
                lua_rawseti(L, -2, j + 1);
            }
            lua_pushinteger(L, e->ovs[o].n_required);
            lua_setfield(L, -2, "n_required");
            lua_rawseti(L, -2, o + 1);
        }
        lua_setfield(L, -2, e->name);
    }
    lua_setfield(L, -2, "_keywords");
    lua_pushcfunction(L, l_kwbind);
    lua_setfield(L, -2, "_kwbind");
}
