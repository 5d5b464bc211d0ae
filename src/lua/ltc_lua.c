/*
 * ltc_lua.c - the Lua binding's hand-written part: the tensor metatable, argument helpers
 * (ltc_lua.h), tensor construction from tables, element access, sync, metrics and config.
 * The op functions come from gen/lua_ops.c. luaopen_ltc_core returns the core table that
 * lua/ltc/init.lua builds the user-facing module on.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "ltc_backend.h"
#include "ltc_graph.h"
#include "ltc_lua.h"
#include "ltc_builtins.h"

/* ---- userdata --------------------------------------------------------------------------- */

/* registry[&tensor_mt_key] is the tensor metatable too: a look-up by a light userdata key
 * is cheaper than luaL_testudata's by name (which hashes the string on every call). */
static const char tensor_mt_key;

/* A tensor's userdata: the tensor, then a tag that no other userdata holds (the address of
 * tensor_mt_key). test_ud knows a tensor by its size and tag alone, without reading its
 * metatable (a registry look-up and a comparison): it runs for every operand of every op. */
typedef struct {
    ltc_tensor *t; /* NULL once closed */
    const void *tag;
} tensor_box;

static ltc_tensor **test_ud(lua_State *L, int arg) {
    tensor_box *b = lua_touserdata(L, arg);
    if (!b || lua_rawlen(L, arg) != sizeof *b || b->tag != &tensor_mt_key) return NULL;
    return &b->t;
}

ltc_tensor *ltcL_testtensor(lua_State *L, int arg) {
    ltc_tensor **ud = test_ud(L, arg);
    return ud ? *ud : NULL;
}

ltc_tensor *ltcL_checktensor(lua_State *L, int arg, const char *fname) {
    ltc_tensor **ud = test_ud(L, arg);
    if (!ud)
        luaL_error(L, "%s: bad argument #%d (ltc.Tensor expected, got %s)", fname, arg,
                   luaL_typename(L, arg));
    if (!*ud) luaL_error(L, "%s: bad argument #%d (the tensor was closed)", fname, arg);
    return *ud;
}

const char *ltcL_typename(lua_State *L, int arg) {
    ltc_tensor **ud = test_ud(L, arg);
    if (ud) return *ud ? "ltc.Tensor" : "a closed ltc.Tensor";
    return luaL_typename(L, arg);
}

void ltcL_pushtensor(lua_State *L, ltc_tensor *t) {
    tensor_box *b = lua_newuserdatauv(L, sizeof *b, 0);
    b->t = t;
    b->tag = &tensor_mt_key;
    lua_rawgetp(L, LUA_REGISTRYINDEX, &tensor_mt_key);
    lua_setmetatable(L, -2);
}

int ltcL_error(lua_State *L) { return luaL_error(L, "%s", ltc_last_error()); }

int ltcL_error_prefixed(lua_State *L, const char *op) {
    const char *m = ltc_last_error();
    size_t n = strlen(op);
    if (!strncmp(m, op, n) && m[n] == ':') return luaL_error(L, "%s", m);
    return luaL_error(L, "%s: %s", op, m);
}

/* __gc, __close and t:close(): safe to call twice. */
static int t_close(lua_State *L) {
    ltc_tensor **ud = test_ud(L, 1);
    if (!ud) ud = luaL_checkudata(L, 1, LTC_TENSOR_MT); /* raises */
    ltc_tensor_release(*ud);
    *ud = NULL;
    return 0;
}

/* ---- argument helpers ----------------------------------------------------------------------- */

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

ltc_tensor *ltcL_operand_once(lua_State *L, int arg) {
    if (lua_type(L, arg) != LUA_TNUMBER) /* a tensor: checked by ltcL_checkoperand */
        return ltc_tensor_retain(((tensor_box *)lua_touserdata(L, arg))->t);
    if (lua_isinteger(L, arg)) return ltcL_operand(L, arg);
    ltc_tensor *t = NULL;
    ltc_tensor_from_float_operand(lua_tonumber(L, arg), &t);
    return t;
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

/* ---- construction from Lua values ------------------------------------------------------------ */

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
    s.dtype = dt != LTC_DTYPE_NONE ? dt : is_bool ? LTC_BOOL : LTC_F32;
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
static int t_len(lua_State *L) {
    const ltc_shape *s = ltc_tensor_shape(ltcL_checktensor(L, 1, "#"));
    if (s->ndim == 0) return luaL_error(L, "#: a 0-d tensor has no length");
    lua_pushinteger(L, s->dims[0]);
    return 1;
}

/* t[i]: a number for a 1-d tensor (syncs), else the view select(1, i) (through the
 * metatable's __select(t, i) when set: lua/ltc/autograd.lua records it). t.key: a method,
 * else a computed field from the metatable's __getters table (t.grad, ...). */
static int t_index(lua_State *L) {
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
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
    if (lua_getfield(L, lua_upvalueindex(2), "__getters") != LUA_TTABLE) return 0;
    lua_pushvalue(L, 2);
    if (lua_rawget(L, -2) == LUA_TNIL) return 0;
    lua_pushvalue(L, 1);
    lua_call(L, 1, 1);
    return 1;
}

/* Raises "<fname>: value <v> cannot be converted to <dtype> without overflow (as in PyTorch)"
 * unless the Lua number at idx fits dt: PyTorch checks a value given at creation or to
 * fill_ (inside arithmetic, integers wrap). */
static void check_value_fits(lua_State *L, int idx, ltc_dtype dt, const char *fname) {
    ltc_status st = lua_isinteger(L, idx) ? ltc_dtype_check_i64(lua_tointeger(L, idx), dt)
                                          : ltc_dtype_check_f64(lua_tonumber(L, idx), dt);
    if (st) luaL_error(L, "%s: %s (as in PyTorch)", fname, ltc_last_error());
}

/* t[i] = v: writes v (a tensor or number, broadcast, cast to t's dtype) into select(1, i)
 * in place (the write is seen by t's base and its other views). t.key = v: the
 * metatable's __setters[key](t, v), else an error. */
static int t_newindex(lua_State *L) {
    ltc_tensor *t = ltcL_checktensor(L, 1, "newindex");
    if (lua_isboolean(L, 3)) { /* PyTorch: t[i] = False is 0 of t's dtype */
        lua_pushinteger(L, lua_toboolean(L, 3));
        lua_replace(L, 3);
    }
    if (lua_type(L, 2) == LUA_TNUMBER) {
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
    if (lua_type(L, 2) == LUA_TTABLE && /* Torch7's t[{...}] = v: __slice_assign */
        lua_getfield(L, lua_upvalueindex(1), "__slice_assign") == LUA_TFUNCTION) {
        lua_pushvalue(L, 1);
        lua_pushvalue(L, 2);
        lua_pushvalue(L, 3);
        lua_call(L, 3, 0);
        return 0;
    }
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

/* ---- metrics, config, misc ----------------------------------------------------------------------- */

static int l_manual_seed(lua_State *L) {
    ltc_manual_seed((uint64_t)luaL_checkinteger(L, 1));
    return 0;
}

/* core._rng_state(numel): the default generator's state {seed, offset} as an int64 [2]
 * tensor, the offset then advanced past numel counters (an op that takes the state as an
 * argument: scaled_dot_product_attention.dropout). */
static int l_rng_state(lua_State *L) {
    lua_Integer n = luaL_checkinteger(L, 1);
    if (n < 0) return luaL_error(L, "_rng_state: numel must be >= 0, got %d", (int)n);
    ltc_tensor *t = NULL;
    if (ltc_rng_state_tensor((int64_t)n, &t)) return ltcL_error(L);
    ltcL_pushtensor(L, t);
    return 1;
}

static int l_counter(lua_State *L) {
    lua_pushinteger(L, ltc_counter_value(luaL_checkstring(L, 1)));
    return 1;
}

static void push_name(const char *name, int64_t value, void *ud) {
    (void)value;
    lua_State *L = ud;
    lua_pushstring(L, name);
    lua_rawseti(L, -2, (lua_Integer)luaL_len(L, -2) + 1);
}

static int l_counter_names(lua_State *L) {
    lua_newtable(L);
    ltc_counter_foreach(push_name, L);
    return 1;
}

static int l_report(lua_State *L) {
    char *r = ltc_metrics_report();
    if (!r) return luaL_error(L, "metrics.report: out of memory");
    lua_pushstring(L, r);
    free(r);
    return 1;
}

static int l_reset(lua_State *L) {
    (void)L;
    ltc_metrics_reset();
    return 0;
}

static int l_config_get(lua_State *L) {
    lua_pushinteger(L, ltc_config_get_int(luaL_checkstring(L, 1)));
    return 1;
}

static int l_config_set(lua_State *L) {
    if (ltc_config_set_int(luaL_checkstring(L, 1), luaL_checkinteger(L, 2)))
        return luaL_error(L, "config: %s", ltc_last_error());
    return 0;
}

static int l_live_info(lua_State *L) {
    ltc_live_info info;
    ltc_live_info_get(&info);
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, info.live_tensors);
    lua_setfield(L, -2, "live_tensors");
    lua_pushinteger(L, info.pending_tensors);
    lua_setfield(L, -2, "pending_tensors");
    lua_pushinteger(L, info.pending_nodes);
    lua_setfield(L, -2, "pending_nodes");
    return 1;
}

/* ltc.clock(): seconds from a monotonic clock, as a float (wall time; for benchmarks and
 * progress lines: os.clock counts CPU time of every thread). */
static int l_clock(lua_State *L) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
    return 1;
}

static int l_is_tensor(lua_State *L) {
    lua_pushboolean(L, ltcL_testtensor(L, 1) != NULL);
    return 1;
}

/* core.typename(v): "ltc.Tensor", "a closed ltc.Tensor" (closed by t:close() or a <close>
 * variable) or v's Lua type name, for argument errors of the Lua-written functions. */
static int l_typename(lua_State *L) {
    luaL_checkany(L, 1);
    lua_pushstring(L, ltcL_typename(L, 1));
    return 1;
}

/* t:has_value(): false when the sync that was to compute t failed (t->failed: using t raises
 * that error). Lets the optimizers drop state made by a step whose sync failed. */
static int l_has_value(lua_State *L) {
    lua_pushboolean(L, ltc_tensor_has_value(ltcL_checktensor(L, 1, "has_value")));
    return 1;
}

/* core.crc32(s [, crc]): the CRC-32 of string s (zlib's crc32, as zip archives use),
 * continuing from crc when given (ltc.io's .npz reader and writer). */
static int l_crc32(lua_State *L) {
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    uLong crc = (uLong)luaL_optinteger(L, 2, 0);
    while (len > 0) { /* zlib takes a uInt length */
        uInt n = len > 0x40000000u ? 0x40000000u : (uInt)len;
        crc = crc32(crc, (const Bytef *)s, n);
        s += n;
        len -= n;
    }
    lua_pushinteger(L, (lua_Integer)crc);
    return 1;
}

/* core.inflate(s, size): the raw deflate stream s (a zip member of method 8, as
 * np.savez_compressed writes) inflated to its `size` bytes; an error when the stream is
 * corrupt or does not give exactly size bytes. */
static int l_inflate(lua_State *L) {
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    lua_Integer size = luaL_checkinteger(L, 2);
    if (size < 0) return luaL_error(L, "inflate: negative size %I", size);
    luaL_Buffer b;
    char *out = luaL_buffinitsize(L, &b, (size_t)size + 1);
    z_stream z = {0};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) return luaL_error(L, "inflate: zlib init failed");
    z.next_in = (Bytef *)s;
    z.next_out = (Bytef *)out;
    size_t in_left = len, out_left = (size_t)size + 1;
    int rc = Z_OK;
    while (rc == Z_OK) { /* zlib counts in uInt: feed at most 1 GiB at a time */
        if (!z.avail_in && in_left) {
            z.avail_in = in_left > 0x40000000u ? 0x40000000u : (uInt)in_left;
            in_left -= z.avail_in;
        }
        if (!z.avail_out && out_left) {
            z.avail_out = out_left > 0x40000000u ? 0x40000000u : (uInt)out_left;
            out_left -= z.avail_out;
        }
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc == Z_BUF_ERROR && (z.avail_in || in_left) && (z.avail_out || out_left)) rc = Z_OK;
    }
    size_t got = (size_t)((char *)z.next_out - out);
    inflateEnd(&z);
    if (rc != Z_STREAM_END || got != (size_t)size)
        return luaL_error(L, "inflate: corrupt deflate data (%s, %I of %I bytes)",
                          rc == Z_STREAM_END ? "wrong size" : "bad stream", (lua_Integer)got, size);
    luaL_pushresultsize(&b, got);
    return 1;
}

/* core.read_gz(path): the file's bytes as a string, gunzipped when it is gzip. */
static int l_read_gz(lua_State *L) {
    char *data;
    size_t len;
    if (ltc_read_file_gz(luaL_checkstring(L, 1), &data, &len)) return ltcL_error(L);
    lua_pushlstring(L, data, len);
    free(data);
    return 1;
}

/* core.set_backend(name): the backend syncs run on and new data is made on ("cpu", "ref").
 * Data made on one backend feeds the other (both are host memory). */
static int l_set_backend(lua_State *L) {
    if (ltc_backend_set_default(luaL_checkstring(L, 1)))
        return luaL_error(L, "set_backend: %s", ltc_last_error());
    return 0;
}

/* core.get_backend(): the name of the current backend. */
static int l_get_backend(lua_State *L) {
    lua_pushstring(L, ltc_backend_default()->name);
    return 1;
}

/* core.save(path, t): writes t to a NumPy .npy file (syncs t). */
static int l_save(lua_State *L) {
    const char *path = luaL_checkstring(L, 1);
    if (ltc_save_npy(path, ltcL_checktensor(L, 2, "save"))) return ltcL_error(L);
    return 0;
}

/* core.npy_bytes(t): t as the bytes of a .npy file (a string). */
static int l_npy_bytes(lua_State *L) {
    char *buf;
    size_t len;
    if (ltc_save_npy_bytes(ltcL_checktensor(L, 1, "save"), &buf, &len)) return ltcL_error(L);
    lua_pushlstring(L, buf, len);
    free(buf);
    return 1;
}

/* core.npy_load_bytes(s, name): the tensor of the .npy bytes s (name: for errors). */
static int l_npy_load_bytes(lua_State *L) {
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    ltc_tensor *t;
    if (ltc_load_npy_bytes(s, len, luaL_checkstring(L, 2), &t)) return ltcL_error(L);
    ltcL_pushtensor(L, t);
    return 1;
}

/* core.load(path): a tensor read from a NumPy .npy file. */
static int l_load(lua_State *L) {
    ltc_tensor *t;
    if (ltc_load_npy(luaL_checkstring(L, 1), &t)) return ltcL_error(L);
    ltcL_pushtensor(L, t);
    return 1;
}

/* core.read_idx(path [, dtype="float32" [, scale=1 [, offset=0]]]): an IDX file (MNIST
 * format, gzip or not) as a tensor, each value times scale plus offset. */
static int l_read_idx(lua_State *L) {
    const char *path = luaL_checkstring(L, 1);
    ltc_dtype dt = ltcL_checkdtype(L, 2, true, "read_idx");
    ltc_tensor *t;
    if (ltc_read_idx(path, dt == LTC_DTYPE_NONE ? LTC_F32 : dt, luaL_optnumber(L, 3, 1),
                     luaL_optnumber(L, 4, 0), &t))
        return ltcL_error(L);
    ltcL_pushtensor(L, t);
    return 1;
}

/* core._any_bool(a, b): whether a or b is a bool tensor (one call on the path of every
 * subtraction: ops.lua's sub check). */
static int l_any_bool(lua_State *L) {
    bool any = false;
    for (int i = 1; i <= 2 && !any; i++) {
        ltc_tensor *t = ltcL_testtensor(L, i);
        any = t && ltc_tensor_shape(t)->dtype == LTC_BOOL;
    }
    lua_pushboolean(L, any);
    return 1;
}

/* core._bad_arg(codes, ...): the position of the first argument that is not of its kind,
 * nothing when all are. codes holds one letter per argument: t a tensor, n a tensor or a
 * number, i an integer, s an integer or a table, ? nil or an integer (nn.functional's
 * argument checks, one C call per functional call; the message is made in Lua). */
static int l_bad_arg(lua_State *L) {
    size_t n;
    const char *codes = luaL_checklstring(L, 1, &n);
    for (size_t i = 0; i < n; i++) {
        int a = (int)i + 2;
        bool ok = false;
        switch (codes[i]) {
        case 't': ok = ltcL_testtensor(L, a) != NULL; break;
        case 'n': ok = lua_type(L, a) == LUA_TNUMBER || ltcL_testtensor(L, a) != NULL; break;
        case 'i': ok = lua_isinteger(L, a); break;
        case 's': ok = lua_isinteger(L, a) || lua_type(L, a) == LUA_TTABLE; break;
        case '?': ok = lua_isnoneornil(L, a) || lua_isinteger(L, a); break;
        default: return luaL_error(L, "_bad_arg: unknown kind '%c'", codes[i]);
        }
        if (!ok) {
            lua_pushinteger(L, (lua_Integer)i + 1);
            return 1;
        }
    }
    return 0;
}

static const luaL_Reg core_functions[] = {
    {"_any_bool", l_any_bool}, {"_bad_arg", l_bad_arg},
    {"set_backend", l_set_backend}, {"get_backend", l_get_backend},
    {"save", l_save}, {"load", l_load},
    {"read_gz", l_read_gz}, {"read_idx", l_read_idx}, {"crc32", l_crc32}, {"inflate", l_inflate},
    {"npy_bytes", l_npy_bytes}, {"npy_load_bytes", l_npy_load_bytes},
    {"_set_", l_set_}, {"_strides", l_strides},
    {"tensor", l_tensor}, {"result_type", l_result_type}, {"sync", l_sync}, {"manual_seed", l_manual_seed},
    {"_rng_state", l_rng_state},
    {"counter", l_counter}, {"counter_names", l_counter_names}, {"metrics_report", l_report},
    {"metrics_reset", l_reset}, {"config_get", l_config_get}, {"config_set", l_config_set},
    {"live_info", l_live_info}, {"is_tensor", l_is_tensor}, {"typename", l_typename}, {"assign_", l_assign_},
    {"fill_", l_fill_}, {"_read_elem", l_read_elem}, {"_check_value", l_check_value}, {"clock", l_clock},
    {NULL, NULL},
};

static const luaL_Reg core_methods[] = {
    {"copy_", l_copy_}, {"item", l_item}, {"totable", l_totable}, {"size", l_size}, {"dim", l_dim},
    {"numel", l_numel}, {"dtype", l_dtype}, {"has_value", l_has_value}, {NULL, NULL},
};

/* Lua states that have the module open; the last one to close releases the core's caches. */
static int open_states;

void ltcL_at_close(lua_State *L, const char *key, lua_CFunction fn, bool keep) {
    if (keep && lua_getfield(L, LUA_REGISTRYINDEX, key) != LUA_TNIL) {
        lua_pop(L, 1);
        return;
    }
    if (keep) lua_pop(L, 1);
    lua_newuserdatauv(L, 1, 0);
    lua_newtable(L);
    lua_pushcfunction(L, fn);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, key);
}

static int state_close(lua_State *L) {
    (void)L;
    if (__atomic_sub_fetch(&open_states, 1, __ATOMIC_ACQ_REL) == 0) ltc_shutdown();
    return 0;
}

int luaopen_ltc_core(lua_State *L) {
    ltc_builtins_register();
    ltcL_install_trim_gc(L);
    /* Lua's generational collector: a step's garbage is young, and the young collection
     * before each sync (LTC_SYNC_GC=1) finds it without visiting the whole heap */
    lua_gc(L, LUA_GCGEN, 0, 0);
    __atomic_add_fetch(&open_states, 1, __ATOMIC_ACQ_REL); /* states may live on several threads */
    ltcL_at_close(L, "ltc.state_sentinel", state_close, false); /* one close per open */

    lua_newtable(L); /* the core table */
    luaL_setfuncs(L, ltc_lua_functions, 0);
    lua_newtable(L); /* core.inplace_ops: ops.yaml's `inplace: true` names */
    for (int i = 0; ltc_lua_inplace[i]; i++) {
        lua_pushstring(L, ltc_lua_inplace[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "inplace_ops");
    luaL_setfuncs(L, core_functions, 0);
    ltcL_open_debug(L);
    ltcL_open_graph(L);
    ltcL_open_gradcheck(L);
    ltcL_open_builtins(L);
    ltcL_open_device(L);
    ltcL_open_autograd(L);
    ltcL_open_optim(L);
    ltcL_open_jitwalk(L);

    lua_newtable(L); /* methods */
    luaL_setfuncs(L, ltc_lua_methods, 0);
    luaL_setfuncs(L, core_methods, 0);
    lua_pushcfunction(L, t_close); /* t:close(): what a <close> variable does at scope end */
    lua_setfield(L, -2, "close");

    luaL_newmetatable(L, LTC_TENSOR_MT);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &tensor_mt_key);
    lua_pushcfunction(L, t_close);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, t_close);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, t_len);
    lua_setfield(L, -2, "__len");
    lua_pushvalue(L, -2); /* upvalue 1: methods */
    lua_pushvalue(L, -2); /* upvalue 2: the metatable */
    lua_pushcclosure(L, t_index, 2);
    lua_setfield(L, -2, "__index");
    lua_pushvalue(L, -1);
    lua_pushcclosure(L, t_newindex, 1);
    lua_setfield(L, -2, "__newindex");
    luaL_setfuncs(L, ltc_lua_operators, 0); /* ops.yaml's `operator:` keys */
    lua_setfield(L, -3, "metatable"); /* core.metatable */
    lua_setfield(L, -2, "methods");   /* core.methods */
    return 1;
}
