/*
 * ltc_autograd.c - the Lua face of the core's autograd engine (src/core/ltc_autograd.h):
 * core._ag, the functions lua/ltc/autograd.lua builds the user API from, and the foreign
 * backward that runs a derivative the generator could not translate to C as its Lua formula
 * (gen/derivatives.lua).
 */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "ltc.h"
#include "ltc_derivative.h"
#include "ltc_lua.h"

/* The state running ltc_backward on this thread (the foreign backward calls into it). */
static _Thread_local lua_State *backward_L;
static const char foreign_key = 'f'; /* registry: the Lua foreign backward function */

static int ag_requires_grad(lua_State *L) {
    ltc_tensor *t = ltcL_checktensor(L, 1, "requires_grad");
    lua_pushboolean(L, ltc_requires_grad(t));
    return 1;
}

static int ag_set_requires_grad(lua_State *L) {
    ltc_tensor *t = ltcL_checktensor(L, 1, "requires_grad");
    if (ltc_set_requires_grad(t, lua_toboolean(L, 2))) return ltcL_error(L);
    return 0;
}

static int ag_is_leaf(lua_State *L) {
    lua_pushboolean(L, ltc_is_leaf(ltcL_checktensor(L, 1, "is_leaf")));
    return 1;
}

/* grad_fn(t) -> name, output (1-based), or nothing for a leaf */
static int ag_grad_fn(lua_State *L) {
    int nr = 0;
    const char *name = ltc_grad_fn_name(ltcL_checktensor(L, 1, "grad_fn"), &nr);
    if (!name) return 0;
    lua_pushstring(L, name);
    lua_pushinteger(L, nr);
    return 2;
}

static int ag_grad(lua_State *L) {
    ltc_tensor *g = ltc_grad_get(ltcL_checktensor(L, 1, "grad"));
    if (!g) return 0;
    ltcL_pushtensor(L, ltc_tensor_retain(g));
    return 1;
}

static int ag_set_grad(lua_State *L) {
    ltc_tensor *t = ltcL_checktensor(L, 1, "grad");
    ltc_tensor *g = lua_isnoneornil(L, 2) ? NULL : ltcL_checktensor(L, 2, "grad");
    ltc_grad_set(t, g);
    return 0;
}

static int ag_detach(lua_State *L) {
    ltc_tensor *out;
    if (ltc_detach(ltcL_checktensor(L, 1, "detach"), &out)) return ltcL_error(L);
    ltcL_pushtensor(L, out);
    return 1;
}

/* backward(t, grad or nil, retain_graph, create_graph) */
static int ag_backward(lua_State *L) {
    ltc_tensor *t = ltcL_checktensor(L, 1, "backward");
    ltc_tensor *g = lua_isnoneornil(L, 2) ? NULL : ltcL_checktensor(L, 2, "backward");
    lua_State *prev = backward_L;
    backward_L = L;
    ltc_status st = ltc_backward(t, g, lua_toboolean(L, 3), lua_toboolean(L, 4));
    backward_L = prev;
    if (st) return ltcL_error(L);
    return 0;
}

/* set_grad_enabled(flag) -> previous */
static int ag_set_grad_enabled(lua_State *L) {
    lua_pushboolean(L, ltc_set_grad_enabled(lua_toboolean(L, 1)));
    return 1;
}

static int ag_is_grad_enabled(lua_State *L) {
    lua_pushboolean(L, ltc_grad_enabled());
    return 1;
}

/* write_(t, v, copy, name): the in-place write with autograd's rules; v a tensor or number */
static int ag_write(lua_State *L) {
    const char *name = luaL_optstring(L, 4, "assign_");
    ltc_tensor *t = ltcL_checktensor(L, 1, name);
    ltcL_checkoperand(L, 2, name);
    ltc_tensor *v = ltcL_operand(L, 2);
    if (!v) return ltcL_error(L);
    ltc_status st = ltc_tensor_write_(t, v, lua_toboolean(L, 3), name);
    ltc_tensor_release(v);
    if (st) return ltcL_error(L);
    lua_settop(L, 1);
    return 1;
}

/* set_foreign(fn): fn(name, a, grads, needs) (a.result: the outputs when the formulas read them) -> gradients by operand ordinal, as the
 * backward functions of gen/derivatives.lua take and return them */
static int ag_set_foreign(lua_State *L) {
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_pushvalue(L, 1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &foreign_key);
    return 0;
}

static void push_arg(lua_State *L, const ltc_ag_arg *a) {
    switch (a->kind) {
    case LTC_AG_TENSOR:
        if (!a->t) { /* not saved: no formula reads it */
            lua_pushnil(L);
            break;
        }
        if (ltc_tensor_is_weak(a->t)) { /* a Lua number, as the formulas were given it */
            const ltc_shape *s = ltc_tensor_shape(a->t);
            int64_t i;
            double f;
            if (ltc_dtype_is_float(s->dtype) && !ltc_tensor_read_f64(a->t, 0, &f)) {
                lua_pushnumber(L, f);
                break;
            }
            if (!ltc_dtype_is_float(s->dtype) && !ltc_tensor_read_i64(a->t, 0, &i)) {
                if (s->dtype == LTC_BOOL) lua_pushboolean(L, i != 0);
                else lua_pushinteger(L, i);
                break;
            }
        }
        ltcL_pushtensor(L, ltc_tensor_retain(a->t));
        break;
    case LTC_AG_LIST:
        lua_createtable(L, a->n, 0);
        for (int j = 0; j < a->n; j++) {
            if (!a->list[j]) continue;
            ltcL_pushtensor(L, ltc_tensor_retain(a->list[j]));
            lua_rawseti(L, -2, j + 1);
        }
        break;
    case LTC_AG_INT: lua_pushinteger(L, a->i); break;
    case LTC_AG_FLOAT: lua_pushnumber(L, a->f); break;
    case LTC_AG_BOOL: lua_pushboolean(L, a->b); break;
    case LTC_AG_INTS:
        lua_createtable(L, a->n, 0);
        for (int j = 0; j < a->n; j++) {
            lua_pushinteger(L, a->ints[j]);
            lua_rawseti(L, -2, j + 1);
        }
        break;
    case LTC_AG_DTYPE: lua_pushstring(L, ltc_dtype_name((ltc_dtype)a->i)); break;
    default: lua_pushnil(L); break;
    }
}

/* Takes the tensor at idx (a new reference) or NULL. */
static ltc_tensor *take_tensor(lua_State *L, int idx) {
    ltc_tensor *t = ltcL_testtensor(L, idx);
    return ltc_tensor_retain(t);
}

static int call_foreign(lua_State *L) {
    const ltc_derivative *d = lua_touserdata(L, 1);
    const ltc_ag_arg *a = lua_touserdata(L, 2);
    ltc_tensor *const *results = lua_touserdata(L, 3);
    ltc_tensor *const *grads = lua_touserdata(L, 4);
    const bool *needs = lua_touserdata(L, 5);
    ltc_ag_grad *g = lua_touserdata(L, 6);
    lua_settop(L, 0);
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &foreign_key) != LUA_TFUNCTION)
        return luaL_error(L, "backward: op '%s' has no derivative formula", d->name);
    lua_pushstring(L, d->name);
    lua_createtable(L, d->n_args, 1); /* a */
    for (int i = 0; i < d->n_args; i++) {
        push_arg(L, &a[i]);
        lua_rawseti(L, -2, i + 1);
    }
    if (d->save_result) {
        lua_createtable(L, d->n_outputs, 0);
        for (int r = 0; r < d->n_outputs; r++) {
            ltcL_pushtensor(L, ltc_tensor_retain(results[r]));
            lua_rawseti(L, -2, r + 1);
        }
        lua_setfield(L, -2, "result");
    }
    lua_createtable(L, d->n_outputs, 0);
    for (int r = 0; r < d->n_outputs; r++) {
        ltcL_pushtensor(L, ltc_tensor_retain(grads[r]));
        lua_rawseti(L, -2, r + 1);
    }
    lua_newtable(L); /* needs, by operand ordinal */
    for (int i = 0, k = 0; i < d->n_args; i++) {
        if (d->kinds[i] != LTC_AG_TENSOR && d->kinds[i] != LTC_AG_LIST) continue;
        lua_pushboolean(L, needs[i]);
        lua_rawseti(L, -2, ++k);
    }
    lua_call(L, 4, 1);
    int res = lua_gettop(L);
    for (int i = 0, k = 0; i < d->n_args; i++) {
        if (d->kinds[i] != LTC_AG_TENSOR && d->kinds[i] != LTC_AG_LIST) continue;
        k++;
        if (!needs[i] || lua_type(L, res) != LUA_TTABLE) continue;
        lua_rawgeti(L, res, k);
        if (d->kinds[i] == LTC_AG_TENSOR) {
            g[i].t = take_tensor(L, -1);
        } else if (lua_type(L, -1) == LUA_TTABLE) {
            int n = a[i].n;
            g[i].list = calloc((size_t)n + 1, sizeof *g[i].list);
            g[i].n = g[i].list ? n : 0;
            for (int j = 0; j < g[i].n; j++) {
                lua_rawgeti(L, -1, j + 1);
                g[i].list[j] = take_tensor(L, -1);
                lua_pop(L, 1);
            }
        }
        lua_pop(L, 1);
    }
    return 0;
}

/* The foreign backward: the Lua formula, run protected on the state that called backward. */
static ltc_status foreign(void *ud, const ltc_derivative *d, const ltc_ag_arg *a,
                          ltc_tensor *const *results, ltc_tensor *const *grads,
                          const bool *needs, ltc_ag_grad *g) {
    (void)ud;
    lua_State *L = backward_L;
    if (!L) return ltc_errorf(LTC_ERR_STATE, "backward: op '%s' needs its Lua formula, and no "
                              "Lua state is running backward", d->name);
    lua_pushcfunction(L, call_foreign);
    lua_pushlightuserdata(L, (void *)d);
    lua_pushlightuserdata(L, (void *)a);
    lua_pushlightuserdata(L, (void *)results);
    lua_pushlightuserdata(L, (void *)grads);
    lua_pushlightuserdata(L, (void *)needs);
    lua_pushlightuserdata(L, g);
    if (lua_pcall(L, 6, 0, 0) != LUA_OK) {
        ltc_status st = ltc_errorf(LTC_ERR_ARG, "%s", lua_tostring(L, -1));
        lua_pop(L, 1);
        for (int i = 0; i < d->n_args; i++) {
            ltc_tensor_release(g[i].t);
            for (int j = 0; g[i].list && j < g[i].n; j++) ltc_tensor_release(g[i].list[j]);
            free(g[i].list);
            memset(&g[i], 0, sizeof g[i]);
        }
        return st;
    }
    return LTC_OK;
}

/* ---- autograd.grad, retain_grad, hooks ---- */

/* The tensors of list argument arg (a table of tensors) into a new array (borrowed). */
static ltc_tensor **check_tensor_list(lua_State *L, int arg, int *n, const char *what) {
    luaL_checktype(L, arg, LUA_TTABLE);
    int len = (int)luaL_len(L, arg);
    ltc_tensor **ts = lua_newuserdatauv(L, sizeof *ts * (size_t)(len + 1), 0); /* freed by GC */
    for (int i = 0; i < len; i++) {
        lua_rawgeti(L, arg, i + 1);
        ts[i] = ltcL_testtensor(L, -1);
        if (!ts[i] && !(lua_isnil(L, -1) && !strcmp(what, "grad_outputs")))
            luaL_error(L, "grad: %s[%d] is %s, not a tensor", what, i + 1, ltcL_typename(L, -1));
        lua_pop(L, 1);
    }
    *n = len;
    return ts;
}

/* grad(outputs, inputs, grad_outputs or nil, retain_graph, create_graph, allow_unused) */
static int ag_autograd_grad(lua_State *L) {
    int n_out, n_in, n_go = 0;
    ltc_tensor **outs = check_tensor_list(L, 1, &n_out, "outputs");
    ltc_tensor **ins = check_tensor_list(L, 2, &n_in, "inputs");
    ltc_tensor **gos = lua_isnoneornil(L, 3) ? NULL : check_tensor_list(L, 3, &n_go, "grad_outputs");
    if (gos && n_go != n_out)
        return luaL_error(L, "grad: %d grad_outputs for %d outputs", n_go, n_out);
    ltc_tensor **grads = lua_newuserdatauv(L, sizeof *grads * (size_t)(n_in + 1), 0);
    lua_State *prev = backward_L;
    backward_L = L;
    ltc_status st = ltc_autograd_grad(outs, gos, n_out, ins, n_in, lua_toboolean(L, 4),
                                      lua_toboolean(L, 5), lua_toboolean(L, 6), grads);
    backward_L = prev;
    if (st) return ltcL_error(L);
    lua_createtable(L, n_in, 0);
    for (int k = 0; k < n_in; k++) {
        if (!grads[k]) continue;
        ltcL_pushtensor(L, grads[k]);
        lua_rawseti(L, -2, k + 1);
    }
    return 1;
}

static int ag_retain_grad(lua_State *L) {
    if (ltc_retain_grad(ltcL_checktensor(L, 1, "retain_grad"))) return ltcL_error(L);
    return 0;
}

static int ag_retains_grad(lua_State *L) {
    lua_pushboolean(L, ltc_retains_grad(ltcL_checktensor(L, 1, "retains_grad")));
    return 1;
}

/* Hook functions: registry table hooks_key, id -> function, in the state that registered
 * them (tensors are released on their state's thread). */
static const char hooks_key = 'h';
static _Thread_local lua_State *hooks_L;
static int next_hook_id;

static int ag_register_hook(lua_State *L) {
    ltc_tensor *t = ltcL_checktensor(L, 1, "register_hook");
    luaL_checktype(L, 2, LUA_TFUNCTION);
    int id = ++next_hook_id;
    if (ltc_register_hook(t, id)) return ltcL_error(L);
    hooks_L = L;
    lua_rawgetp(L, LUA_REGISTRYINDEX, &hooks_key);
    lua_pushvalue(L, 2);
    lua_rawseti(L, -2, id);
    lua_pushinteger(L, id);
    return 1;
}

static int ag_remove_hook(lua_State *L) {
    ltc_tensor *t = ltcL_checktensor(L, 1, "remove_hook");
    lua_pushboolean(L, ltc_remove_hook(t, (int)luaL_checkinteger(L, 2)));
    return 1;
}

static int call_hook(lua_State *L) {
    int id = (int)lua_tointeger(L, 1);
    ltc_tensor *g = lua_touserdata(L, 2);
    ltc_tensor **out = lua_touserdata(L, 3);
    lua_settop(L, 0);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &hooks_key);
    if (lua_rawgeti(L, 1, id) != LUA_TFUNCTION) return 0;
    ltcL_pushtensor(L, ltc_tensor_retain(g));
    lua_call(L, 1, 1);
    if (lua_isnil(L, -1)) return 0;
    ltc_tensor *r = ltcL_testtensor(L, -1);
    if (!r) return luaL_error(L, "hook: a hook must return a tensor or nil, not %s",
                              luaL_typename(L, -1));
    const ltc_shape *a = ltc_tensor_shape(r), *b = ltc_tensor_shape(g);
    if (!ltc_shape_equal(a, b)) {
        char x[128], y[128];
        return luaL_error(L, "hook: the hook returned a gradient of size %s for one of size %s",
                          ltc_shape_str(a, x, sizeof x), ltc_shape_str(b, y, sizeof y));
    }
    *out = ltc_tensor_retain(r);
    return 0;
}

static ltc_status run_hook(void *ud, int id, ltc_tensor *grad, ltc_tensor **out) {
    (void)ud;
    lua_State *L = backward_L;
    if (!L) return LTC_OK;
    lua_pushcfunction(L, call_hook);
    lua_pushinteger(L, id);
    lua_pushlightuserdata(L, grad);
    lua_pushlightuserdata(L, out);
    if (lua_pcall(L, 3, 0, 0) != LUA_OK) {
        ltc_status st = ltc_errorf(LTC_ERR_ARG, "%s", lua_tostring(L, -1));
        lua_pop(L, 1);
        ltc_tensor_release(*out);
        *out = NULL;
        return st;
    }
    return LTC_OK;
}

static void free_hook(void *ud, int id) {
    (void)ud;
    lua_State *L = hooks_L;
    if (!L) return;
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &hooks_key) == LUA_TTABLE) {
        lua_pushnil(L);
        lua_rawseti(L, -2, id);
    }
    lua_pop(L, 1);
}

/* use_lua_formulas(flag): every backward runs its Lua formula (for the specs) */
static int ag_use_lua_formulas(lua_State *L) {
    ltc_autograd_use_foreign(lua_toboolean(L, 1));
    return 0;
}

static const luaL_Reg ag_functions[] = {
    {"use_lua_formulas", ag_use_lua_formulas}, {"grad_of", ag_autograd_grad},
    {"retain_grad", ag_retain_grad}, {"retains_grad", ag_retains_grad},
    {"register_hook", ag_register_hook}, {"remove_hook", ag_remove_hook},
    {"requires_grad", ag_requires_grad}, {"set_requires_grad", ag_set_requires_grad},
    {"is_leaf", ag_is_leaf}, {"grad_fn", ag_grad_fn}, {"grad", ag_grad},
    {"set_grad", ag_set_grad}, {"detach", ag_detach}, {"backward", ag_backward},
    {"set_grad_enabled", ag_set_grad_enabled}, {"is_grad_enabled", ag_is_grad_enabled},
    {"write_", ag_write}, {"set_foreign", ag_set_foreign},
    {NULL, NULL},
};

void ltcL_open_autograd(lua_State *L) {
    ltc_autograd_set_foreign(foreign, NULL);
    ltc_autograd_set_hooks(run_hook, free_hook, NULL);
    hooks_L = L;
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &hooks_key) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &hooks_key);
    } else {
        lua_pop(L, 1);
    }
    lua_newtable(L);
    luaL_setfuncs(L, ag_functions, 0);
    lua_setfield(L, -2, "_ag");
}
