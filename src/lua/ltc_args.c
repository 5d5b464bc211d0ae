/*
 * ltc_args.c - argument checks of the generated binding (gen/lua_ops.c) and the hand-written
 * one: operands (tensors or numbers, lists of them), int[] and int[N] sizes, dtypes and dims
 * (ltc_lua.h), and int, int? and float arguments and extra arguments (ltc_args.h); and the
 * keyword tables and Lua functions of composite overloads (ltc_lua.h). Unlike
 * luaL_checkinteger, whose message names the function only when Lua's call info knows it
 * ("bad argument #2 to '?'" once a Lua wrapper such as the autograd layer tail-calls the
 * binding), these name the op.
 */
#include <string.h>

#include "ltc_lua.h" /* ltc_args.h, and luaL_error as ltcL_raise (errors at the user's line) */

static int bad_arg(lua_State *L, int arg, const char *fname, const char *expected) {
    if (lua_type(L, arg) == LUA_TNUMBER)
        return luaL_error(L, "%s: bad argument #%d (%s expected, got the number %s)", fname, arg,
                          expected, lua_tostring(L, arg));
    return luaL_error(L, "%s: bad argument #%d (%s expected, got %s)", fname, arg, expected,
                      ltcL_typename(L, arg));
}

int64_t ltcL_checkint(lua_State *L, int arg, const char *fname) {
    int ok;
    lua_Integer v = lua_tointegerx(L, arg, &ok);
    if (!ok || lua_type(L, arg) != LUA_TNUMBER) bad_arg(L, arg, fname, "integer");
    return (int64_t)v;
}

int64_t ltcL_optint(lua_State *L, int arg, int64_t def, const char *fname) {
    return lua_isnoneornil(L, arg) ? def : ltcL_checkint(L, arg, fname);
}

double ltcL_checknum(lua_State *L, int arg, const char *fname) {
    if (lua_type(L, arg) != LUA_TNUMBER) bad_arg(L, arg, fname, "number");
    if (lua_isinteger(L, arg)) {
        /* a float argument (a clamp bound, arange's start) is a double: an integer past 2^53
         * that has no exact double raises rather than being silently rounded */
        lua_Integer i = lua_tointeger(L, arg);
        double d = (double)i;
        if (d >= 9223372036854775808.0 || (lua_Integer)d != i)
            luaL_error(L, "%s: argument #%d: the integer %I has no exact float64 value (this "
                          "argument is a float64; integers are exact up to 2^53)",
                       fname, arg, i);
        return d;
    }
    return (double)lua_tonumber(L, arg);
}

double ltcL_optnum(lua_State *L, int arg, double def, const char *fname) {
    return lua_isnoneornil(L, arg) ? def : ltcL_checknum(L, arg, fname);
}

void ltcL_checknoextra(lua_State *L, int arg, const char *fname) {
    int top = lua_gettop(L);
    /* Lua calls __unm with the operand twice: neg(t, t) is unary minus */
    if (arg == 2 && top == 2 && lua_rawequal(L, 1, 2)) return;
    for (int i = top; i >= arg; i--)
        if (!lua_isnil(L, i))
            luaL_error(L, "%s: too many arguments (at most %d expected, got %d: argument #%d is %s)",
                       fname, arg - 1, top, i, ltcL_typename(L, i));
}

void ltcL_checklist(lua_State *L, int arg, const char *fname) {
    if (!lua_istable(L, arg)) bad_arg(L, arg, fname, "table of tensors");
}

/* ---- operands, sizes, dtypes, dims (ltc_lua.h) ----------------------------------------------- */

void ltcL_checkoperand(lua_State *L, int arg, const char *fname) {
    if (lua_type(L, arg) == LUA_TNUMBER) return;
    ltcL_checktensor(L, arg, fname);
}

ltc_tensor *ltcL_operand(lua_State *L, int arg) {
    ltc_tensor *t = NULL;
    if (lua_type(L, arg) == LUA_TNUMBER) {
        if (lua_isinteger(L, arg)) ltc_tensor_from_int(lua_tointeger(L, arg), true, &t);
        else ltc_tensor_from_float(lua_tonumber(L, arg), true, &t);
        return t;
    }
    return ltc_tensor_retain(ltcL_testtensor(L, arg));
}

int ltcL_checkoperands(lua_State *L, int arg, ltc_tensor **out, int max, const char *fname) {
    if (lua_type(L, arg) != LUA_TTABLE)
        luaL_error(L, "%s: bad argument #%d (a table of tensors expected, got %s)", fname, arg,
                   ltcL_typename(L, arg));
    int n = (int)luaL_len(L, arg);
    if (n < 0) luaL_error(L, "%s: bad argument #%d (the list's length is %d)", fname, arg, n);
    if (n > max) luaL_error(L, "%s: at most %d tensors, got %d", fname, max, n);
    /* Read once: the entries are copied into a plain table and checked there, then taken
     * from it with raw reads. A list whose __index answers differently on a second read
     * cannot see one, and one that raises does so before any reference is taken. */
    lua_createtable(L, n, 0);
    int copy = lua_gettop(L);
    for (int i = 1; i <= n; i++) {
        lua_geti(L, arg, i);
        if (lua_type(L, -1) != LUA_TNUMBER && !ltcL_testtensor(L, -1))
            luaL_error(L, "%s: bad argument #%d (entry %d is %s, expected ltc.Tensor or number)",
                       fname, arg, i, ltcL_typename(L, -1));
        lua_rawseti(L, copy, i);
    }
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, copy, i);
        out[i - 1] = ltcL_operand(L, lua_gettop(L));
        lua_pop(L, 1);
        if (!out[i - 1]) {
            ltcL_release(out, i - 1);
            ltcL_error(L);
        }
    }
    lua_pop(L, 1);
    return n;
}

void ltcL_release(ltc_tensor **ts, int n) {
    for (int i = 0; i < n; i++) ltc_tensor_release(ts[i]);
}

int ltcL_checkints(lua_State *L, int *arg, int64_t *out, bool varargs, const char *fname) {
    int n = 0;
    if (lua_istable(L, *arg)) {
        n = (int)luaL_len(L, *arg);
        if (n > LTC_MAX_DIMS) luaL_error(L, "%s: %d sizes given, at most %d", fname, n, LTC_MAX_DIMS);
        for (int i = 1; i <= n; i++) {
            lua_geti(L, *arg, i);
            int ok;
            out[i - 1] = lua_tointegerx(L, -1, &ok);
            if (!ok)
                luaL_error(L, "%s: bad argument #%d (entry %d is %s, expected an integer)", fname,
                           *arg, i, ltcL_typename(L, -1));
            lua_pop(L, 1);
        }
        (*arg)++;
        return n;
    }
    if (!varargs || lua_type(L, *arg) != LUA_TNUMBER) {
        if (!varargs || !lua_isnoneornil(L, *arg))
            luaL_error(L, "%s: bad argument #%d (table of sizes expected, got %s)", fname, *arg,
                       ltcL_typename(L, *arg));
        return 0;
    }
    while (lua_type(L, *arg) == LUA_TNUMBER) {
        int ok;
        int64_t v = lua_tointegerx(L, *arg, &ok);
        if (!ok) luaL_error(L, "%s: bad argument #%d (size %s is not an integer)", fname, *arg,
                            lua_tostring(L, *arg));
        if (n == LTC_MAX_DIMS) luaL_error(L, "%s: more than %d sizes given", fname, LTC_MAX_DIMS);
        out[n++] = v;
        (*arg)++;
    }
    return n;
}

bool ltcL_checkfixedints(lua_State *L, int arg, int64_t *out, int n, bool has_def, int64_t def,
                         const char *fname, const char *what) {
    if (lua_isnoneornil(L, arg)) {
        for (int i = 0; has_def && i < n; i++) out[i] = def;
        return has_def;
    }
    int len = 1, ok = 0;
    if (lua_istable(L, arg)) {
        len = (int)luaL_len(L, arg);
        if (len != 1 && len != n)
            luaL_error(L, "%s: bad argument #%d '%s' (a number or a table of 1 or %d integers "
                       "expected, got a table of %d)", fname, arg, what, n, len);
        for (int i = 1; i <= len; i++) {
            lua_geti(L, arg, i);
            out[i - 1] = lua_tointegerx(L, -1, &ok);
            if (!ok)
                luaL_error(L, "%s: bad argument #%d '%s' (entry %d is %s, expected an integer)",
                           fname, arg, what, i, ltcL_typename(L, -1));
            lua_pop(L, 1);
        }
    } else {
        out[0] = lua_tointegerx(L, arg, &ok);
        if (!ok || lua_type(L, arg) != LUA_TNUMBER)
            luaL_error(L, "%s: bad argument #%d '%s' (an integer or a table of %d integers "
                       "expected, got %s)", fname, arg, what, n, ltcL_typename(L, arg));
    }
    for (int i = len; i < n; i++) out[i] = out[0];
    return true;
}

ltc_dtype ltcL_checkdtype(lua_State *L, int arg, bool opt, const char *fname) {
    if (opt && lua_isnoneornil(L, arg)) return LTC_DTYPE_NONE;
    const char *name = lua_tostring(L, arg);
    if (!name || lua_type(L, arg) != LUA_TSTRING)
        luaL_error(L, "%s: bad argument #%d (dtype name expected, got %s)", fname, arg,
                   ltcL_typename(L, arg));
    ltc_dtype dt;
    if (ltc_dtype_parse(name, &dt)) luaL_error(L, "%s: %s", fname, ltc_last_error());
    return dt;
}

int64_t ltcL_checkdim(lua_State *L, int arg, bool opt, const char *fname) {
    if (opt && lua_isnoneornil(L, arg)) return LTC_NONE;
    int ok;
    int64_t d = lua_tointegerx(L, arg, &ok);
    if (!ok)
        luaL_error(L, "%s: bad argument #%d (integer expected, got %s)", fname, arg,
                   lua_type(L, arg) == LUA_TNUMBER ? "a non-integer number" : ltcL_typename(L, arg));
    if (d == 0) luaL_error(L, "%s: bad argument #%d (0 is invalid: dims and indices are 1-based)",
                           fname, arg);
    return d;
}

/* ---- composite overloads ---- */

static const char overloads_key = 0; /* registry[&overloads_key]: core._overloads */

void ltcL_open_overloads(lua_State *L) {
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &overloads_key);
    lua_setfield(L, -2, "_overloads");
}

void ltcL_keywords(lua_State *L, int arg, const char *const *keywords, const char *fname) {
    lua_settop(L, arg);
    lua_pushnil(L);
    while (lua_next(L, arg)) {
        lua_pop(L, 1);
        const char *key = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        bool known = false;
        for (int k = 0; keywords[k] && key && !known; k++) known = !strcmp(key, keywords[k]);
        if (known) continue;
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        for (int k = 0; keywords[k]; k++) {
            if (k) luaL_addstring(&b, ", ");
            luaL_addstring(&b, keywords[k]);
        }
        luaL_pushresult(&b);
        luaL_tolstring(L, -2, NULL);
        luaL_error(L, "%s: unknown option '%s' (expected %s)", fname, lua_tostring(L, -1),
                   lua_tostring(L, -2));
    }
    for (int k = 0; keywords[k]; k++) lua_getfield(L, arg, keywords[k]);
    lua_remove(L, arg);
}

int ltcL_call_overload(lua_State *L, const char *full_name, const char *fname) {
    int n = lua_gettop(L);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &overloads_key);
    if (lua_getfield(L, -1, full_name) != LUA_TFUNCTION)
        return luaL_error(L, "%s: core._overloads[\"%s\"] is not a function (its composite "
                             "file did not register it)", fname, full_name);
    lua_remove(L, -2);
    lua_insert(L, 1);
    if (lua_pcall(L, n, LUA_MULTRET, 0) != LUA_OK) return ltcL_reraise(L);
    return lua_gettop(L);
}
