/*
 * ltc_values.c - values between Lua and tensors: the sync from Lua (a collection first),
 * reading values (t:item(), t:totable(), t[i], t:size(), t:dtype(), t:has_value()), and
 * writing them (t[i] = v, t:copy_(v), core.fill_, core.assign_, the overflow check of a
 * number given for a dtype). ltcL_open_values adds the functions to the core table;
 * ltcL_open_value_methods the methods; the __len, __index and __newindex of the tensor
 * metatable are ltcL_tensor_len/index/newindex (ltc_lua.c installs them).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ltc_graph.h"
#include "ltc_lua.h"

/* ---- sync ------------------------------------------------------------------------------------ */

/* Every sync from Lua first collects garbage (LTC_SYNC_GC, ltc_trim.c): tensors that are
 * unreachable but not yet finalized would otherwise join the graph as roots, making the
 * graph (and its hash) depend on the collector's timing. */
/* A Graph dropped by a Lua error between capture_begin and capture_end keeps its thread
 * capturing until it is finalized, and the young collection of each sync may not reach it
 * (it has grown old). So while a capture is active, a sync or a read runs a full collection
 * first: the next one after the error ends the capture (issue 17, r18). A capture that is
 * still in use pays one full collection per sync (captures are short). */
static void collect_for_sync(lua_State *L) {
    if (ltc_capture_active()) lua_gc(L, LUA_GCCOLLECT);
    else ltcL_collect(L);
}

static void sync_all(lua_State *L) {
    collect_for_sync(L);
    if (ltc_sync()) ltcL_error(L);
}

static void sync_if_pending(lua_State *L, ltc_tensor *t) {
    if (ltc_capture_active()) collect_for_sync(L);
    if (ltc_capture_check_read()) ltcL_error(L); /* a value read during a graph capture */
    if (ltc_tensor_is_pending(t)) sync_all(L);
}

static int l_sync(lua_State *L) {
    sync_all(L);
    return 0;
}


/* ---- reading values ---------------------------------------------------------------------------- */

static void push_elem(lua_State *L, ltc_tensor *t, int64_t flat) {
    ltc_dtype dt = ltc_tensor_shape(t)->dtype;
    if (ltc_dtype_is_float(dt)) {
        double v;
        if (ltc_tensor_read_f64(t, flat, &v)) ltcL_error(L);
        lua_pushnumber(L, v);
    } else {
        int64_t v;
        if (ltc_tensor_read_i64(t, flat, &v)) ltcL_error(L);
        if (dt == LTC_BOOL) lua_pushboolean(L, (int)v);
        else lua_pushinteger(L, v);
    }
}

/* t:item(): the value of a one-element tensor as a Lua number (boolean for bool). Syncs. */
static int l_item(lua_State *L) {
    ltc_tensor *t = ltcL_checktensor(L, 1, "item");
    int64_t n = ltc_shape_numel(ltc_tensor_shape(t));
    if (n != 1) return luaL_error(L, "item: needs a tensor with one element, got %I", (lua_Integer)n);
    sync_if_pending(L, t);
    push_elem(L, t, 0);
    return 1;
}

/* core._read_elem(t, flat): element `flat` (1-based, in row-major order) of t as item()
 * gives it, read from t's data with no graph (after syncing t if it is pending): Torch7's
 * t[{i, j}] element read, which would otherwise bake (i, j) into a graph of its own. */
static int l_read_elem(lua_State *L) {
    ltc_tensor *t = ltcL_checktensor(L, 1, "index");
    lua_Integer flat = luaL_checkinteger(L, 2);
    int64_t n = ltc_shape_numel(ltc_tensor_shape(t));
    if (flat < 1 || flat > n)
        return luaL_error(L, "index: element %I out of range for %I elements", flat, (lua_Integer)n);
    sync_if_pending(L, t);
    push_elem(L, t, (int64_t)flat - 1);
    return 1;
}

/* Pushes element `flat` of host values `buf` of dtype dt. */
static void push_host_elem(lua_State *L, ltc_dtype dt, const void *buf, int64_t flat) {
    if (dt == LTC_BOOL) lua_pushboolean(L, ((const uint8_t *)buf)[flat] != 0);
    else if (ltc_dtype_is_float(dt)) lua_pushnumber(L, ltc_dtype_load_f64(buf, dt, flat));
    else lua_pushinteger(L, ltc_dtype_load_i64(buf, dt, flat));
}

static void push_table(lua_State *L, const void *buf, const ltc_shape *s, int d, int64_t *flat) {
    if (d == s->ndim) {
        push_host_elem(L, s->dtype, buf, (*flat)++);
        return;
    }
    lua_createtable(L, (int)s->dims[d], 0);
    for (int64_t i = 1; i <= s->dims[d]; i++) {
        push_table(L, buf, s, d + 1, flat);
        lua_rawseti(L, -2, i);
    }
}

/* t:totable(): nested Lua tables of the values (a number for a 0-d tensor). Syncs. */
static int l_totable(lua_State *L) {
    ltc_tensor *t = ltcL_checktensor(L, 1, "totable");
    sync_if_pending(L, t);
    const ltc_shape *s = ltc_tensor_shape(t);
    /* one copy to host through the backend (data_to_host), freed by the GC */
    void *buf = lua_newuserdatauv(L, ltc_shape_nbytes(s) + 1, 0);
    if (ltc_tensor_to_host(t, buf)) return ltcL_error(L);
    int64_t flat = 0;
    luaL_checkstack(L, LTC_MAX_DIMS + 4, "totable");
    push_table(L, buf, s, 0, &flat);
    return 1;
}

/* t:size() -> {sizes}; t:size(d) -> the size of dim d (1-based, negative from the end). */
static int l_size(lua_State *L) {
    const ltc_shape *s = ltc_tensor_shape(ltcL_checktensor(L, 1, "size"));
    if (!lua_isnoneornil(L, 2)) {
        int d;
        if (ltc_dim_wrap(ltcL_checkdim(L, 2, false, "size"), s->ndim, &d) || s->ndim == 0)
            return luaL_error(L, "size: %s", s->ndim ? ltc_last_error() : "a 0-d tensor has no dims");
        lua_pushinteger(L, s->dims[d]);
        return 1;
    }
    lua_createtable(L, s->ndim, 0);
    for (int i = 0; i < s->ndim; i++) {
        lua_pushinteger(L, s->dims[i]);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

static int l_dim(lua_State *L) {
    lua_pushinteger(L, ltc_tensor_shape(ltcL_checktensor(L, 1, "dim"))->ndim);
    return 1;
}

static int l_numel(lua_State *L) {
    lua_pushinteger(L, ltc_shape_numel(ltc_tensor_shape(ltcL_checktensor(L, 1, "numel"))));
    return 1;
}

static int l_dtype(lua_State *L) {
    lua_pushstring(L, ltc_dtype_name(ltc_tensor_shape(ltcL_checktensor(L, 1, "dtype"))->dtype));
    return 1;
}

/* #t: the size of dim 1. */
int ltcL_tensor_len(lua_State *L) {
    const ltc_shape *s = ltc_tensor_shape(ltcL_checktensor(L, 1, "#"));
    if (s->ndim == 0) return luaL_error(L, "#: a 0-d tensor has no length");
    lua_pushinteger(L, s->dims[0]);
    return 1;
}

/* t[i]: a number for a 1-d tensor (syncs), else the view select(1, i) (through the
 * metatable's __select(t, i) when set: lua/ltc/autograd.lua records it). t[{...}]: the
 * metatable's __slice; t[mask] or t[index] (a tensor key): its __tensor_index. t.key: a
 * method, else a computed field from the metatable's __getters table (t.grad, ...). */
int ltcL_tensor_index(lua_State *L) {
    if (lua_type(L, 2) == LUA_TNUMBER) {
        ltc_tensor *t = ltcL_checktensor(L, 1, "index");
        const ltc_shape *s = ltc_tensor_shape(t);
        int64_t i = ltcL_checkdim(L, 2, false, "index");
        if (s->ndim == 0) return luaL_error(L, "index: cannot index a 0-d tensor (use item())");
        int64_t i0 = i > 0 ? i - 1 : s->dims[0] + i;
        if (i0 < 0 || i0 >= s->dims[0])
            return luaL_error(L, "index: index %I out of range for dim 1 of size %I",
                              (lua_Integer)i, (lua_Integer)s->dims[0]);
        if (s->ndim == 1) {
            sync_if_pending(L, t);
            push_elem(L, t, i0);
            return 1;
        }
        if (lua_getfield(L, lua_upvalueindex(2), "__select") == LUA_TFUNCTION) {
            lua_pushvalue(L, 1);
            lua_pushinteger(L, (lua_Integer)i);
            lua_call(L, 2, 1);
            return 1;
        }
        ltc_tensor *out;
        if (ltc_select(t, 1, i, &out)) return ltcL_error(L);
        ltcL_pushtensor(L, out);
        return 1;
    }
    if (lua_type(L, 2) == LUA_TTABLE) { /* Torch7's t[{i, j}] / t[{{a, b}, j}]: __slice */
        if (lua_getfield(L, lua_upvalueindex(2), "__slice") == LUA_TFUNCTION) {
            lua_pushvalue(L, 1);
            lua_pushvalue(L, 2);
            lua_call(L, 2, 1);
            return 1;
        }
        return luaL_error(L, "index: a table index (Torch7's t[{...}]) is not supported; use "
                          "t[i][j], t:select(dim, i) or t:narrow(dim, start, length)");
    }
    if (ltcL_testtensor(L, 2) && /* t[mask], t[index]: __tensor_index (lua/ltc/torch7.lua) */
        lua_getfield(L, lua_upvalueindex(2), "__tensor_index") == LUA_TFUNCTION) {
        lua_pushvalue(L, 1);
        lua_pushvalue(L, 2);
        lua_call(L, 2, 1);
        return 1;
    }
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
    if (lua_getfield(L, lua_upvalueindex(2), "__getters") != LUA_TTABLE) return 0;
    lua_pushvalue(L, 2);
    if (lua_rawget(L, -2) == LUA_TNIL) return 0;
    lua_pushvalue(L, 1);
    lua_call(L, 1, 1);
    return 1;
}

/* ---- writing values ---------------------------------------------------------------------------- */

/* Raises "<fname>: value <v> cannot be converted to <dtype> without overflow (as in PyTorch)"
 * unless the Lua number at idx fits dt: PyTorch checks a value given at creation or to
 * fill_ (inside arithmetic, integers wrap). */
static void check_value_fits(lua_State *L, int idx, ltc_dtype dt, const char *fname) {
    ltc_status st = lua_isinteger(L, idx) ? ltc_dtype_check_i64(lua_tointeger(L, idx), dt)
                                          : ltc_dtype_check_f64(lua_tonumber(L, idx), dt);
    if (st) luaL_error(L, "%s: %s (as in PyTorch)", fname, ltc_last_error());
}

/* t[i] = v: writes v (a tensor, number or boolean, broadcast, cast to t's dtype) into
 * select(1, i) in place (the write is seen by t's base and its other views). t[{...}] = v
 * and t[mask] = v, t[index] = v: the metatable's __slice_assign and __tensor_assign.
 * t.key = v: the metatable's __setters[key](t, v), else an error. */
int ltcL_tensor_newindex(lua_State *L) {
    ltc_tensor *t = ltcL_checktensor(L, 1, "newindex");
    if (lua_type(L, 2) == LUA_TNUMBER) {
        if (lua_isboolean(L, 3)) { /* PyTorch: t[i] = False is 0 of t's dtype */
            lua_pushinteger(L, lua_toboolean(L, 3));
            lua_replace(L, 3);
        }
        int64_t i = ltcL_checkdim(L, 2, false, "newindex");
        ltcL_checkoperand(L, 3, "newindex");
        if (lua_type(L, 3) == LUA_TNUMBER) /* PyTorch checks the value, as fill_ does */
            check_value_fits(L, 3, ltc_tensor_shape(t)->dtype, "newindex");
        ltc_tensor *slot, *v;
        if (ltc_select(t, 1, i, &slot)) return ltcL_error(L);
        if (!(v = ltcL_operand(L, 3))) {
            ltc_tensor_release(slot);
            return ltcL_error(L);
        }
        /* a number fills (PyTorch: t[i] = 2.0 is fill_, allowed through an expand) */
        ltc_status st = lua_type(L, 3) == LUA_TNUMBER ? ltc_tensor_fill_(slot, v, "newindex")
                                                      : ltc_tensor_write_(slot, v, true, "newindex");
        ltc_tensor_release(slot);
        ltc_tensor_release(v);
        if (st) return ltcL_error_prefixed(L, "newindex");
        return 0;
    }
    /* Torch7's t[{...}] = v: __slice_assign; t[mask] = v, t[index] = v: __tensor_assign */
    const char *assign = lua_type(L, 2) == LUA_TTABLE ? "__slice_assign"
                         : ltcL_testtensor(L, 2)      ? "__tensor_assign"
                                                      : NULL;
    if (assign && lua_getfield(L, lua_upvalueindex(1), assign) == LUA_TFUNCTION) {
        lua_pushvalue(L, 1);
        lua_pushvalue(L, 2);
        lua_pushvalue(L, 3);
        lua_call(L, 3, 0);
        return 0;
    }
    /* t.key = v: a boolean stays one (t.requires_grad = false) */
    if (lua_getfield(L, lua_upvalueindex(1), "__setters") == LUA_TTABLE) {
        lua_pushvalue(L, 2);
        if (lua_rawget(L, -2) == LUA_TFUNCTION) {
            lua_pushvalue(L, 1);
            lua_pushvalue(L, 3);
            lua_call(L, 2, 0);
            return 0;
        }
    }
    return luaL_error(L, "cannot set field '%s' of a tensor", luaL_tolstring(L, 2, NULL));
}

/* t:copy_(src): writes src (a tensor or number; broadcast to t's shape, cast to t's dtype)
 * into t in place. PyTorch Tensor.copy_. Returns t. */
static int l_copy_(lua_State *L) {
    ltc_tensor *t = ltcL_checktensor(L, 1, "copy_");
    ltcL_checkoperand(L, 2, "copy_");
    ltc_tensor *v = ltcL_operand(L, 2);
    if (!v) return ltcL_error(L);
    ltc_status st = ltc_tensor_copy_(t, v);
    ltc_tensor_release(v);
    if (st) return ltcL_error_prefixed(L, "copy_");
    lua_settop(L, 1);
    return 1;
}

/* core._check_value(v, dtype, fname): check_value_fits for a number v (dtype nil: float32);
 * anything else passes. */
static int l_check_value(lua_State *L) {
    const char *fname = luaL_checkstring(L, 3);
    ltc_dtype dt = ltcL_checkdtype(L, 2, true, fname);
    if (lua_type(L, 1) == LUA_TNUMBER) check_value_fits(L, 1, dt == LTC_DTYPE_NONE ? LTC_F32 : dt, fname);
    return 0;
}

/* core.fill_(t, value, name): every element of t becomes value (a number, a boolean (1 or
 * 0) or one-element tensor, cast to t's dtype), in place; unlike copy_, also through a view that repeats
 * elements (an expand), as PyTorch's fill_. Errors are named `name` (fill_, zero_, ...).
 * Returns t. */
static int l_fill_(lua_State *L) {
    const char *name = luaL_optstring(L, 3, "fill_");
    ltc_tensor *t = ltcL_checktensor(L, 1, name);
    if (lua_isboolean(L, 2)) { /* PyTorch: fill_(True) is 1 of t's dtype */
        lua_pushinteger(L, lua_toboolean(L, 2));
        lua_replace(L, 2);
    }
    ltcL_checkoperand(L, 2, name);
    if (lua_type(L, 2) == LUA_TNUMBER) check_value_fits(L, 2, ltc_tensor_shape(t)->dtype, name);
    ltc_tensor *v = ltcL_operand(L, 2);
    if (!v) return ltcL_error(L);
    ltc_status st = ltc_tensor_fill_(t, v, name);
    ltc_tensor_release(v);
    if (st) return ltcL_error_prefixed(L, name);
    lua_settop(L, 1);
    return 1;
}

/* core.assign_(t, value): t's value becomes value (same shape; cast to t's dtype, which must
 * not lose the category: a float result cannot go into an int tensor). The in-place ops
 * (add_, mul_, ...) of lua/ltc/init.lua are built on it. Returns t. */
static int l_assign_(lua_State *L) {
    if (!lua_isnoneornil(L, 3) && lua_type(L, 3) != LUA_TSTRING)
        return luaL_error(L, "assign_: bad argument #3 (the op name, a string, expected, got %s)",
                          ltcL_typename(L, 3));
    const char *name = luaL_optstring(L, 3, "assign_");
    ltc_tensor *t = ltcL_checktensor(L, 1, name);
    ltc_tensor *v = ltcL_checktensor(L, 2, name);
    if (ltc_tensor_write_(t, v, false, name)) return ltcL_error_prefixed(L, name);
    lua_settop(L, 1);
    return 1;
}

/* t:has_value(): false when the sync that was to compute t failed (t->failed: using t raises
 * that error). Lets the optimizers drop state made by a step whose sync failed. */
static int l_has_value(lua_State *L) {
    lua_pushboolean(L, ltc_tensor_has_value(ltcL_checktensor(L, 1, "has_value")));
    return 1;
}

static const luaL_Reg value_functions[] = {
    {"sync", l_sync}, {"assign_", l_assign_}, {"fill_", l_fill_}, {"_read_elem", l_read_elem},
    {"_check_value", l_check_value}, {NULL, NULL},
};

static const luaL_Reg value_methods[] = {
    {"copy_", l_copy_}, {"item", l_item}, {"totable", l_totable}, {"size", l_size}, {"dim", l_dim},
    {"numel", l_numel}, {"dtype", l_dtype}, {"has_value", l_has_value}, {NULL, NULL},
};

void ltcL_open_values(lua_State *L) { luaL_setfuncs(L, value_functions, 0); }

void ltcL_open_value_methods(lua_State *L) { luaL_setfuncs(L, value_methods, 0); }
