/*
 * ltc_lua.c - the Lua binding's hub: the tensor userdata (ltcL_pushtensor, ltcL_checktensor,
 * close) and luaopen_ltc_core, which builds the core table from the generated op functions
 * (gen/lua_ops.c) and the hand-written parts: ltc_args.c (argument helpers),
 * ltc_construct.c (tensors from Lua values), ltc_values.c (sync, reading and writing
 * values), ltc_runtime.c (metrics, config, RNG, files), ltc_debug.c, ltc_graph.c, ... The
 * core table is what lua/ltc/init.lua builds the user-facing module on.
 */
#include <stdlib.h>
#include <string.h>

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

/* As ltcL_operand, for an operand checked before (here: it reads the userdata directly). */
ltc_tensor *ltcL_operand_once(lua_State *L, int arg) {
    if (lua_type(L, arg) != LUA_TNUMBER) /* a tensor: checked by ltcL_checkoperand */
        return ltc_tensor_retain(((tensor_box *)lua_touserdata(L, arg))->t);
    if (lua_isinteger(L, arg)) return ltcL_operand(L, arg);
    ltc_tensor *t = NULL;
    ltc_tensor_from_float_operand(lua_tonumber(L, arg), &t);
    return t;
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

/* ---- opening the module --------------------------------------------------------------------- */

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
    ltcL_open_overloads(L); /* core._overloads: the Lua functions of composite overloads */
    ltcL_open_keywords(L); /* core._keywords: the ops' argument names (ltc_kwargs.c) */
    lua_newtable(L); /* core.inplace_ops: ops.yaml's `inplace: true` names */
    for (int i = 0; ltc_lua_inplace[i]; i++) {
        lua_pushstring(L, ltc_lua_inplace[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "inplace_ops");
    ltcL_open_construct(L);
    ltcL_open_values(L);
    ltcL_open_runtime(L);
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
    ltcL_open_value_methods(L);
    lua_pushcfunction(L, t_close); /* t:close(): what a <close> variable does at scope end */
    lua_setfield(L, -2, "close");

    luaL_newmetatable(L, LTC_TENSOR_MT);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &tensor_mt_key);
    lua_pushcfunction(L, t_close);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, t_close);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, ltcL_tensor_len);
    lua_setfield(L, -2, "__len");
    lua_pushvalue(L, -2); /* upvalue 1: methods */
    lua_pushvalue(L, -2); /* upvalue 2: the metatable */
    lua_pushcclosure(L, ltcL_tensor_index, 2);
    lua_setfield(L, -2, "__index");
    lua_pushvalue(L, -1);
    lua_pushcclosure(L, ltcL_tensor_newindex, 1);
    lua_setfield(L, -2, "__newindex");
    luaL_setfuncs(L, ltc_lua_operators, 0); /* ops.yaml's `operator:` keys */
    lua_setfield(L, -3, "metatable"); /* core.metatable */
    lua_setfield(L, -2, "methods");   /* core.methods */
    return 1;
}
