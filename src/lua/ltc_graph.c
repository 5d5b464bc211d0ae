/*
 * ltc_graph.c - the Lua binding of graph capture and replay (ltc_graph.h):
 *
 *   local g = ltc.Graph{keep_graph = false, device = "cpu"}
 *   g:capture_begin{pool = h, mode = "thread_local"}   -- both optional
 *   ... work, syncs ...
 *   g:capture_end()
 *   g:replay()
 *   g:instantiate(), g:reset(), g:pool(), g:enable_debug_mode(), g:debug_dump(path)
 *   ltc.graph_pool_handle(), ltc.has_graph_impl("cpu"), ltc.graph_pool_info(h)
 *
 * and the helpers lua/ltc/jit.lua builds on (core._share, core._weak_scalar,
 * core._counter_add). Methods raise Lua errors "<method>: <why>".
 */
#include <stdlib.h>
#include <string.h>

#include "ltc_graph.h"
#include "ltc_lua.h"

#define LTC_GRAPH_MT "ltc.Graph"

static ltc_graph *check_graph(lua_State *L) {
    ltc_graph **ud = luaL_checkudata(L, 1, LTC_GRAPH_MT);
    if (!*ud) luaL_error(L, "Graph: the graph was closed");
    return *ud;
}

/* A full collection first (unless LTC_SYNC_GC is 0): capture_begin and capture_end sync,
 * and capture_end records the tensors still alive and counts the inputs nothing else holds
 * (GraphFrozenInput), which needs every dead tensor finalized, old ones too; a young
 * collection (ltcL_collect) would leave those. Captures are rare: the cost does not matter. */
static void collect(lua_State *L) {
    if (ltc_config_get_int("LTC_SYNC_GC")) lua_gc(L, LUA_GCCOLLECT);
}

/* ltc.Graph([{keep_graph = false, device = "cpu"}]) */
static int l_graph(lua_State *L) {
    ltc_graph_args args = LTC_GRAPH_ARGS_INIT;
    const char *device = "cpu";
    if (!lua_isnoneornil(L, 1)) {
        luaL_checktype(L, 1, LUA_TTABLE);
        lua_getfield(L, 1, "keep_graph");
        args.keep_graph = lua_toboolean(L, -1);
        lua_getfield(L, 1, "device");
        if (!lua_isnil(L, -1)) {
            if (lua_type(L, -1) != LUA_TSTRING)
                return luaL_error(L, "Graph: device must be a string, got %s", luaL_typename(L, -1));
            device = lua_tostring(L, -1);
        }
    }
    ltc_graph **ud = lua_newuserdatauv(L, sizeof *ud, 0);
    *ud = NULL;
    luaL_setmetatable(L, LTC_GRAPH_MT);
    if (!(*ud = ltc_graph_impl_create(device, &args)))
        return luaL_error(L, "Graph: %s", ltc_last_error());
    return 1;
}

static int g_close(lua_State *L) {
    ltc_graph **ud = luaL_checkudata(L, 1, LTC_GRAPH_MT);
    ltc_graph_free(*ud);
    *ud = NULL;
    return 0;
}

static int check(lua_State *L, ltc_status st) {
    if (st) return luaL_error(L, "%s", ltc_last_error());
    return 0;
}

/* g:capture_begin([{pool = handle, mode = "default"|"global"|"thread_local"|"relaxed"}]) */
static int g_capture_begin(lua_State *L) {
    ltc_graph *g = check_graph(L);
    ltc_mempool_id pool = 0;
    ltc_capture_mode mode = LTC_CAPTURE_DEFAULT;
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        if (lua_getfield(L, 2, "pool") != LUA_TNIL) {
            int ok;
            lua_Integer h = lua_tointegerx(L, -1, &ok);
            if (!ok || h <= 0)
                return luaL_error(L, "capture_begin: pool must be a handle from "
                                  "ltc.graph_pool_handle() or g:pool()");
            pool = (ltc_mempool_id)h;
        }
        if (lua_getfield(L, 2, "mode") != LUA_TNIL) {
            const char *m = lua_tostring(L, -1);
            if (!m || ltc_capture_mode_parse(m, &mode))
                return luaL_error(L, "capture_begin: %s", m ? ltc_last_error() : "mode must be a string");
        }
    }
    collect(L);
    check(L, ltc_graph_capture_begin(g, pool, mode));
    lua_settop(L, 1);
    return 1;
}

static int g_capture_end(lua_State *L) {
    ltc_graph *g = check_graph(L);
    collect(L);
    check(L, ltc_graph_capture_end(g));
    lua_settop(L, 1);
    return 1;
}

static int g_instantiate(lua_State *L) {
    check(L, ltc_graph_instantiate(check_graph(L)));
    lua_settop(L, 1);
    return 1;
}

static int g_replay(lua_State *L) {
    check(L, ltc_graph_replay(check_graph(L)));
    lua_settop(L, 1);
    return 1;
}

static int g_reset(lua_State *L) {
    check(L, ltc_graph_reset(check_graph(L)));
    lua_settop(L, 1);
    return 1;
}

static int g_pool(lua_State *L) {
    ltc_mempool_id id;
    check(L, ltc_graph_pool(check_graph(L), &id));
    lua_pushinteger(L, (lua_Integer)id);
    return 1;
}

static int g_enable_debug_mode(lua_State *L) {
    ltc_graph_enable_debug_mode(check_graph(L));
    lua_settop(L, 1);
    return 1;
}

static int g_debug_dump(lua_State *L) {
    ltc_graph *g = check_graph(L);
    check(L, ltc_graph_debug_dump(g, luaL_checkstring(L, 2)));
    lua_settop(L, 1);
    return 1;
}

static int g_tostring(lua_State *L) {
    ltc_graph **ud = luaL_checkudata(L, 1, LTC_GRAPH_MT);
    lua_pushfstring(L, "ltc.Graph (%s)%s", *ud ? (*ud)->device : "closed", "");
    return 1;
}

/* ltc.graph_pool_handle(): a new pool handle (an integer) for capture_begin{pool = h}. */
static int l_pool_handle(lua_State *L) {
    lua_pushinteger(L, (lua_Integer)ltc_graph_pool_handle());
    return 1;
}

/* ltc.has_graph_impl(device): whether ltc.Graph{device = device} works. */
static int l_has_graph_impl(lua_State *L) {
    lua_pushboolean(L, ltc_has_graph_impl(luaL_checkstring(L, 1)));
    return 1;
}

/* ltc.graph_pool_info(handle): {graphs, live, free_buffers, bytes, mallocs, reuses} of a
 * pool, or nil when there is no such pool (never used, or released). */
static int l_pool_info(lua_State *L) {
    ltc_pool_stats s;
    if (!ltc_graph_pool_stats((ltc_mempool_id)luaL_checkinteger(L, 1), &s)) return 0;
    lua_createtable(L, 0, 6);
    lua_pushinteger(L, s.graphs);
    lua_setfield(L, -2, "graphs");
    lua_pushinteger(L, s.live);
    lua_setfield(L, -2, "live");
    lua_pushinteger(L, s.free_buffers);
    lua_setfield(L, -2, "free_buffers");
    lua_pushinteger(L, s.bytes);
    lua_setfield(L, -2, "bytes");
    lua_pushinteger(L, s.mallocs);
    lua_setfield(L, -2, "mallocs");
    lua_pushinteger(L, s.reuses);
    lua_setfield(L, -2, "reuses");
    return 1;
}

/* core._share(t): a new tensor holding t's data (t synced first if pending). */
static int l_share(lua_State *L) {
    ltc_tensor *t = ltcL_checktensor(L, 1, "share"), *out;
    if (ltc_tensor_is_pending(t) && ltc_sync()) return ltcL_error(L);
    if (ltc_tensor_share(t, &out)) return ltcL_error(L);
    ltcL_pushtensor(L, out);
    return 1;
}

/* core._weak_scalar(x): the 0-d tensor a Lua number becomes in an op (weak for promotion). */
static int l_weak_scalar(lua_State *L) {
    luaL_checknumber(L, 1);
    ltc_tensor *t = ltcL_operand(L, 1);
    if (!t) return ltcL_error(L);
    ltcL_pushtensor(L, t);
    return 1;
}

/* core._counter_add(name, n) */
static int l_counter_add(lua_State *L) {
    ltc_counter_add(luaL_checkstring(L, 1), luaL_optinteger(L, 2, 1));
    return 0;
}

static const luaL_Reg graph_methods[] = {
    {"capture_begin", g_capture_begin}, {"capture_end", g_capture_end},
    {"instantiate", g_instantiate}, {"replay", g_replay}, {"reset", g_reset},
    {"pool", g_pool}, {"enable_debug_mode", g_enable_debug_mode},
    {"debug_dump", g_debug_dump}, {NULL, NULL},
};

static const luaL_Reg graph_functions[] = {
    {"Graph", l_graph}, {"graph_pool_handle", l_pool_handle},
    {"has_graph_impl", l_has_graph_impl}, {"graph_pool_info", l_pool_info},
    {"_share", l_share}, {"_weak_scalar", l_weak_scalar}, {"_counter_add", l_counter_add},
    {NULL, NULL},
};

void ltcL_open_graph(lua_State *L) {
    luaL_setfuncs(L, graph_functions, 0);
    if (luaL_newmetatable(L, LTC_GRAPH_MT)) {
        lua_newtable(L);
        luaL_setfuncs(L, graph_methods, 0);
        lua_setfield(L, -2, "__index");
        lua_pushcfunction(L, g_close);
        lua_setfield(L, -2, "__gc");
        lua_pushcfunction(L, g_close);
        lua_setfield(L, -2, "__close");
        lua_pushcfunction(L, g_tostring);
        lua_setfield(L, -2, "__tostring");
    }
    lua_pop(L, 1);
}
