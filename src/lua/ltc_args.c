/*
 * ltc_args.c - argument checks of the generated binding (gen/lua_ops.c) for int, int? and
 * float arguments and for extra arguments. Unlike luaL_checkinteger, whose message names
 * the function only when Lua's call info knows it ("bad argument #2 to '?'" once a Lua
 * wrapper such as the autograd layer tail-calls the binding), these name the op.
 */
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
