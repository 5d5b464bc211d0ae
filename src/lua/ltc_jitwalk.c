/* ltc_jitwalk.c - the guard walk of ltc.jit (lua/ltc/jit.lua) in C: every replay walks the
 * Lua values reachable from the jitted function to check that none changed since the
 * capture. The walk in Lua took 25 us for the 65 values of a small training step (400 ns a
 * value in the interpreter), a sixth of the replay; here it is the same walk through the
 * C API.
 *
 * core._jit_walk(roots, vals, cmp, live, skip, libfn, is_libfn) -> n, at, now, full
 *   roots: a list of {name, value}; vals: the snapshot (values by walk index, written when
 *   cmp is false, compared when true); live[container][key] marks values read live (only
 *   their number kind counts); skip: tables never entered; libfn: the cache of is_libfn
 *   (function -> boolean), called on a miss. Order and rules are jit.lua's make_walker's:
 *   table fields by `next` (raw), the upvalues of Lua functions that are not library
 *   functions; tensors and other userdata compared by identity and never entered, but a
 *   tensor's requires_grad flag follows it as a field "requires_grad" (freezing a parameter
 *   changes what backward and the optimizer do: a replay would not). Returns
 *   the count of values seen, the index and value of the first difference (nil when none)
 *   and whether the walk stopped at max values. */
#include <lauxlib.h>
#include <lua.h>

#include "ltc_args.h"
#include "ltc_autograd.h"
#include "ltc_lua.h"

enum { A_ROOTS = 1, A_VALS, A_CMP, A_LIVE, A_SKIP, A_LIBFN, A_ISLIB, A_MAX, A_SEEN };

typedef struct {
    lua_Integer n, max, at;
    bool cmp, full;
} walk;

static bool scan(lua_State *L, walk *w, int idx);

/* Whether the value at the top (a function) is a library function (libfn's cache, else
 * is_libfn's answer, cached). Leaves the stack as it was. */
static bool is_library_fn(lua_State *L) {
    lua_pushvalue(L, -1);
    if (lua_rawget(L, A_LIBFN) == LUA_TNIL) {
        lua_pop(L, 1);
        lua_pushvalue(L, A_ISLIB);
        lua_pushvalue(L, -2);
        lua_call(L, 1, 1);
        lua_pushvalue(L, -2);
        lua_pushvalue(L, -2);
        lua_rawset(L, A_LIBFN);
    }
    bool r = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return r;
}

/* Two values equal as the snapshot means: raw equality, NaN equal to NaN, and a number of
 * the same kind (integer or float). */
static bool same(lua_State *L, int a, int b) {
    if (lua_rawequal(L, a, b))
        return lua_type(L, a) != LUA_TNUMBER || lua_isinteger(L, a) == lua_isinteger(L, b);
    if (lua_type(L, a) == LUA_TNUMBER && lua_type(L, b) == LUA_TNUMBER) {
        lua_Number x = lua_tonumber(L, a), y = lua_tonumber(L, b);
        return x != x && y != y;
    }
    return false;
}

/* One value: the top of the stack, found at key (index k) of container (index c). Pops it.
 * Returns true when the walk must stop (a difference, or max values). */
static bool see(lua_State *L, walk *w, int c, int k) {
    int v = lua_gettop(L);
    if (++w->n > w->max) {
        w->full = true;
        lua_pop(L, 1);
        return true;
    }
    bool islive = false;
    lua_pushvalue(L, c);
    if (lua_rawget(L, A_LIVE) == LUA_TTABLE) {
        lua_pushvalue(L, k);
        islive = lua_rawget(L, -2) != LUA_TNIL && lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    if (islive) { /* its kind alone: math.type(v) or type(v) */
        const char *kind = lua_type(L, v) == LUA_TNUMBER
                               ? (lua_isinteger(L, v) ? "integer" : "float")
                               : lua_typename(L, lua_type(L, v));
        lua_pushstring(L, kind);
        lua_replace(L, v);
    }
    if (w->cmp) {
        lua_rawgeti(L, A_VALS, w->n);
        bool eq = same(L, v, -1);
        lua_pop(L, 1);
        if (!eq) {
            w->at = w->n;
            return true; /* v stays on the stack: the caller returns it */
        }
    } else {
        lua_pushvalue(L, v);
        lua_rawseti(L, A_VALS, w->n);
    }
    int t = lua_type(L, v);
    bool stop = false;
    ltc_tensor *tensor = t == LUA_TUSERDATA && !islive ? ltcL_testtensor(L, v) : NULL;
    if (tensor) { /* its requires_grad, as a field of the tensor */
        lua_pushliteral(L, "requires_grad");
        lua_pushboolean(L, ltc_requires_grad(tensor));
        stop = see(L, w, v, v + 1);
        if (!stop) lua_pop(L, 1); /* the key */
        else lua_remove(L, v + 1);
    }
    if (!islive && (t == LUA_TTABLE || t == LUA_TFUNCTION)) {
        lua_pushvalue(L, v);
        bool seen = lua_rawget(L, A_SEEN) != LUA_TNIL;
        lua_pop(L, 1);
        lua_pushvalue(L, v);
        bool skipped = lua_rawget(L, A_SKIP) != LUA_TNIL && lua_toboolean(L, -1);
        lua_pop(L, 1);
        if (!seen && !skipped) {
            lua_pushvalue(L, v);
            lua_pushboolean(L, 1);
            lua_rawset(L, A_SEEN);
            stop = scan(L, w, v);
        }
    }
    if (stop) { /* the difference's value is on top: keep it, drop v below it */
        lua_remove(L, v);
        return true;
    }
    lua_pop(L, 1);
    return false;
}

/* The fields of a table or the upvalues of a Lua function at idx, in walk order. */
static bool scan(lua_State *L, walk *w, int idx) {
    luaL_checkstack(L, 8, "jit guard walk");
    if (lua_type(L, idx) == LUA_TTABLE) {
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            int k = lua_gettop(L) - 1;
            if (see(L, w, idx, k)) { /* stack: key, difference */
                lua_remove(L, k);
                return true;
            }
        }
        return false;
    }
    if (is_library_fn(L)) return false;
    for (int i = 1; i <= 255; i++) {
        const char *name = lua_getupvalue(L, idx, i);
        if (!name) break;
        lua_pushstring(L, name);
        lua_insert(L, -2); /* name, value */
        int k = lua_gettop(L) - 1;
        if (see(L, w, idx, k)) {
            lua_remove(L, k);
            return true;
        }
        lua_pop(L, 1);
    }
    return false;
}

static int l_jit_walk(lua_State *L) {
    luaL_checktype(L, A_ROOTS, LUA_TTABLE);
    luaL_checktype(L, A_VALS, LUA_TTABLE);
    luaL_checktype(L, A_LIVE, LUA_TTABLE);
    luaL_checktype(L, A_SKIP, LUA_TTABLE);
    luaL_checktype(L, A_LIBFN, LUA_TTABLE);
    luaL_checktype(L, A_ISLIB, LUA_TFUNCTION);
    walk w = {.n = 0, .max = luaL_checkinteger(L, A_MAX), .at = 0,
              .cmp = lua_toboolean(L, A_CMP), .full = false};
    lua_settop(L, A_MAX);
    lua_createtable(L, 0, 32); /* A_SEEN */
    lua_Integer nroots = (lua_Integer)lua_rawlen(L, A_ROOTS);
    bool stop = false;
    for (lua_Integer r = 1; r <= nroots && !stop; r++) {
        lua_rawgeti(L, A_ROOTS, r);
        int root = lua_gettop(L);
        lua_rawgeti(L, root, 1); /* the key: the root's name */
        lua_rawgeti(L, root, 2);
        stop = see(L, &w, A_ROOTS, root + 1);
        if (!stop) lua_settop(L, A_SEEN);
    }
    int top = lua_gettop(L);
    lua_pushinteger(L, w.n);
    if (w.at) {
        lua_pushinteger(L, w.at);
        lua_pushvalue(L, top);
    } else {
        lua_pushnil(L);
        lua_pushnil(L);
    }
    lua_pushboolean(L, w.full);
    return 4;
}

static const luaL_Reg jitwalk_functions[] = {
    {"_jit_walk", l_jit_walk},
    {NULL, NULL},
};

void ltcL_open_jitwalk(lua_State *L) {
    luaL_setfuncs(L, jitwalk_functions, 0);
}
