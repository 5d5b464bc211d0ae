/*
 * ltc_construct.c - tensors made from Lua values: core.tensor (nested tables of numbers or
 * booleans, their shape found by following first elements, the dtype inferred or given),
 * core.result_type (PyTorch's promotion of tensors and numbers), and the internal _set_
 * and _strides. ltcL_open_construct adds them to the core table.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ltc_backend.h" /* ltc_ir.h: ltc_trace_result_type */
#include "ltc_lua.h"

/* Finds the nested table's shape by following first elements. */
static void table_shape(lua_State *L, int idx, ltc_shape *s, bool *is_bool) {
    lua_pushvalue(L, idx);
    s->ndim = 0;
    while (lua_istable(L, -1)) {
        if (s->ndim == LTC_MAX_DIMS) luaL_error(L, "tensor: more than %d nested levels", LTC_MAX_DIMS);
        s->dims[s->ndim++] = (int64_t)luaL_len(L, -1);
        lua_geti(L, -1, 1);
        lua_remove(L, -2);
    }
    *is_bool = lua_isboolean(L, -1);
    lua_pop(L, 1);
}

static void store(void *buf, int64_t i, ltc_dtype dt, lua_State *L, int idx, const char *where) {
    int t = lua_type(L, idx);
    if (t != LUA_TNUMBER && t != LUA_TBOOLEAN)
        luaL_error(L, "tensor: element %s is %s, expected a number or boolean", where, ltcL_typename(L, idx));
    double f = t == LUA_TBOOLEAN ? lua_toboolean(L, idx) : lua_tonumber(L, idx);
    int64_t n = t == LUA_TBOOLEAN ? lua_toboolean(L, idx)
                : lua_isinteger(L, idx) ? lua_tointeger(L, idx) : (int64_t)0;
    bool integral = t == LUA_TBOOLEAN || lua_isinteger(L, idx);
    if (!integral && !ltc_dtype_is_float(dt) && dt != LTC_BOOL) {
        if (!isfinite(f) || f != floor(f))
            luaL_error(L, "tensor: element %s (%f) is not an integer, as %s needs", where, f, ltc_dtype_name(dt));
        if (!ltc_dtype_fits_f64(f, dt)) {
            char num[32];
            snprintf(num, sizeof num, "%.15g", f);
            luaL_error(L, "tensor: element %s (%s) cannot be converted to %s without overflow "
                       "(as in PyTorch)", where, num, ltc_dtype_name(dt));
        }
        n = (int64_t)f;
    }
    if (integral && ltc_dtype_check_i64(n, dt)) /* uint8 takes -255..-1, as in PyTorch */
        luaL_error(L, "tensor: element %s (%I) cannot be converted to %s without overflow (as in "
                   "PyTorch)", where, (lua_Integer)n, ltc_dtype_name(dt));
    if (dt == LTC_BOOL) ((uint8_t *)buf)[i] = integral ? n != 0 : f != 0;
    else if (integral || !ltc_dtype_is_float(dt)) ltc_dtype_store_i64(buf, dt, i, n);
    else ltc_dtype_store_f64(buf, dt, i, f);
}

/* Whether every element of the nested table at idx (nesting depth d of s->ndim) is a boolean:
 * PyTorch infers bool only then (a number among booleans makes them 0/1 of its dtype). */
static bool all_bool(lua_State *L, int idx, const ltc_shape *s, int d) {
    if (d == s->ndim) return lua_isboolean(L, idx);
    if (!lua_istable(L, idx)) return false; /* ragged: fill() reports it */
    lua_Integer n = luaL_len(L, idx);
    bool ok = true;
    for (lua_Integer i = 1; ok && i <= n; i++) {
        lua_geti(L, idx, i);
        ok = all_bool(L, lua_gettop(L), s, d + 1);
        lua_pop(L, 1);
    }
    return ok;
}

/* Copies the nested table at idx (checked against s from dim d) into buf from *pos. */
static void fill(lua_State *L, int idx, const ltc_shape *s, int d, void *buf, int64_t *pos, char *path) {
    if (d == s->ndim) {
        store(buf, (*pos)++, s->dtype, L, idx, path[0] ? path : "[]");
        return;
    }
    if (!lua_istable(L, idx) || (int64_t)luaL_len(L, idx) != s->dims[d])
        luaL_error(L, "tensor: ragged nested table at %s (expected %I elements, got %s)",
                   path[0] ? path : "top level", (lua_Integer)s->dims[d],
                   lua_istable(L, idx) ? lua_pushfstring(L, "%d", (int)luaL_len(L, idx)) : ltcL_typename(L, idx));
    size_t plen = strlen(path);
    for (int64_t i = 1; i <= s->dims[d]; i++) {
        lua_geti(L, idx, i);
        if (plen < 200) snprintf(path + plen, 256 - plen, "[%lld]", (long long)i);
        fill(L, lua_gettop(L), s, d + 1, buf, pos, path);
        lua_pop(L, 1);
    }
    path[plen] = 0;
}

/* ltc.tensor(data [, dtype]): data is a number, a boolean or a nested table of them.
 * float32 by default (bool when every element is a boolean), as Torch7's default tensor type. */
static int l_tensor(lua_State *L) {
    if (!lua_istable(L, 1) && !lua_isnumber(L, 1) && !lua_isboolean(L, 1))
        return luaL_error(L, "tensor: bad argument #1 (a table, number or boolean expected, got %s)",
                          ltcL_typename(L, 1));
    ltc_shape s = {0};
    bool is_bool;
    if (lua_istable(L, 1) && luaL_len(L, 1) == 0) { /* {} is an empty tensor; {a = 1} is a mistake */
        lua_pushnil(L);
        if (lua_next(L, 1)) return luaL_error(L, "tensor: the table has keys that are not 1..n "
                                              "(a key %s)", luaL_tolstring(L, -2, NULL));
    }
    table_shape(L, 1, &s, &is_bool);
    ltc_dtype dt = ltcL_checkdtype(L, 2, true, "tensor");
    if (is_bool && dt == LTC_DTYPE_NONE) is_bool = all_bool(L, 1, &s, 0);
    s.dtype = dt != LTC_DTYPE_NONE ? dt : is_bool ? LTC_BOOL : ltc_default_dtype();
    if (ltc_shape_make(&s, s.dtype, s.ndim, s.dims)) return luaL_error(L, "tensor: %s", ltc_last_error());
    void *buf = lua_newuserdatauv(L, ltc_shape_nbytes(&s) + 1, 0); /* freed by the GC */
    int64_t pos = 0;
    char path[256] = "";
    fill(L, 1, &s, 0, buf, &pos, path);
    ltc_tensor *t;
    if (ltc_tensor_from_host(&s, buf, &t)) return luaL_error(L, "tensor: %s", ltc_last_error());
    ltcL_pushtensor(L, t);
    return 1;
}

/* core.result_type(a, b, ...): the dtype name an op on these operands (tensors, Lua numbers,
 * booleans) computes in, as torch.result_type (a Lua number is a weak scalar). */
static int l_result_type(lua_State *L) {
    int n = lua_gettop(L);
    ltc_tensor *ts[16];
    if (n < 1 || n > 16) return luaL_error(L, "result_type: expected 1 to 16 operands, got %d", n);
    for (int i = 1; i <= n; i++)
        if (!lua_isboolean(L, i)) ltcL_checkoperand(L, i, "result_type");
    int made = 0;
    for (; made < n; made++) {
        if (lua_isboolean(L, made + 1)) {
            if (ltc_tensor_from_bool(lua_toboolean(L, made + 1), true, &ts[made])) ts[made] = NULL;
        } else {
            ts[made] = ltcL_operand(L, made + 1);
        }
        if (!ts[made]) break;
    }
    if (made < n) {
        ltcL_release(ts, made);
        return luaL_error(L, "result_type: %s", ltc_last_error());
    }
    ltc_dtype dt = ltc_trace_result_type(ts, n);
    ltcL_release(ts, n);
    lua_pushstring(L, ltc_dtype_name(dt));
    return 1;
}

/* core._set_(t, value): ltc_tensor_set_ (resize_ in lua/ltc/torch7.lua). Returns t. */
static int l_set_(lua_State *L) {
    ltc_tensor *t = ltcL_checktensor(L, 1, "resize_"), *v = ltcL_checktensor(L, 2, "resize_");
    if (ltc_tensor_set_(t, v)) return luaL_error(L, "%s", ltc_last_error());
    lua_settop(L, 1);
    return 1;
}

/* core._set_data(t, value): ltc_tensor_rebind (t.data = value across dtypes or devices,
 * nn.Module.to); syncs a pending value first. Returns t. */
static int l_set_data(lua_State *L) {
    ltc_tensor *t = ltcL_checktensor(L, 1, "data"), *v = ltcL_checktensor(L, 2, "data");
    if (ltc_tensor_is_pending(v) && ltc_sync()) return luaL_error(L, "data: %s", ltc_last_error());
    if (ltc_tensor_rebind(t, v)) return luaL_error(L, "%s", ltc_last_error());
    lua_settop(L, 1);
    return 1;
}

/* core._rebinds(): ltc_tensor_rebinds() (ltc.jit recaptures when it changed). */
static int l_rebinds(lua_State *L) {
    lua_pushinteger(L, (lua_Integer)ltc_tensor_rebinds());
    return 1;
}

/* core._strides(t): PyTorch's strides of t (a table) and its storage offset, or nil when no
 * strides express it (ltc_tensor_strides; stride() and isContiguous() in lua/ltc/torch7.lua). */
static int l_strides(lua_State *L) {
    ltc_tensor *t = ltcL_checktensor(L, 1, "stride");
    int64_t st[LTC_MAX_DIMS], off;
    if (!ltc_tensor_strides(t, st, &off)) return 0;
    int nd = ltc_tensor_shape(t)->ndim;
    lua_createtable(L, nd, 0);
    for (int d = 0; d < nd; d++) {
        lua_pushinteger(L, (lua_Integer)st[d]);
        lua_rawseti(L, -2, d + 1);
    }
    lua_pushinteger(L, (lua_Integer)off);
    return 2;
}

static const luaL_Reg construct_functions[] = {
    {"tensor", l_tensor}, {"result_type", l_result_type}, {"_set_", l_set_}, {"_set_data", l_set_data}, {"_rebinds", l_rebinds}, {"_strides", l_strides},
    {NULL, NULL},
};

void ltcL_open_construct(lua_State *L) { luaL_setfuncs(L, construct_functions, 0); }
