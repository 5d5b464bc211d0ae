/*
 * ltc_gradcheck.c - a test binding for the derivative formulas generated as C
 * (gen/derivatives.c): core._c_backward calls an op's C backward function with Lua values,
 * so spec/derivatives_c_spec.lua can compare it with the Lua formulas of derivatives.lua.
 * Not part of the public API.
 */
#include <stdlib.h>
#include <string.h>

#include "grad_formulas.h"
#include "ltc_derivative.h"
#include "ltc_lua.h"

/* Everything one call owns, freed on every path (the Lua errors are raised after). */
typedef struct gc_call {
    ltc_ag_arg *a;
    ltc_ag_grad *g;
    ltc_tensor **results, **grads;
    bool *needs;
    ltc_tensor **owned; /* numbers made weak scalars */
    int n_owned, n_args, n_out;
} gc_call;

static void gc_free(gc_call *c) {
    for (int i = 0; i < c->n_owned; i++)
        ltc_tensor_release(c->owned[i]);
    for (int i = 0; c->a && i < c->n_args; i++) {
        free(c->a[i].list);
        free(c->a[i].ints);
    }
    for (int i = 0; c->g && i < c->n_args; i++) {
        ltc_tensor_release(c->g[i].t);
        for (int j = 0; c->g[i].list && j < c->g[i].n; j++)
            ltc_tensor_release(c->g[i].list[j]);
        free(c->g[i].list);
    }
    free(c->a), free(c->g), free(c->results), free(c->grads), free(c->needs), free(c->owned);
}

/* The tensor at stack index idx: a tensor (borrowed) or a number (a new weak scalar, owned
 * by c); NULL after pushing an error message. */
static ltc_tensor *operand(lua_State *L, int idx, gc_call *c) {
    ltc_tensor *t = ltcL_testtensor(L, idx);
    if (t) return t;
    if (lua_type(L, idx) != LUA_TNUMBER) return NULL;
    t = ltcL_operand(L, idx);
    if (t) c->owned[c->n_owned++] = t;
    return t;
}

/* Fills c->a[i] from the Lua value at idx by the kind k; false with a message on the stack. */
static bool to_arg(lua_State *L, int idx, ltc_ag_kind k, gc_call *c, int i) {
    ltc_ag_arg *a = &c->a[i];
    if (lua_isnil(L, idx)) return true; /* LTC_AG_NONE */
    a->kind = k;
    switch (k) {
    case LTC_AG_TENSOR:
        if ((a->t = operand(L, idx, c))) return true;
        break;
    case LTC_AG_LIST:
    case LTC_AG_INTS: {
        if (!lua_istable(L, idx)) break;
        int n = (int)luaL_len(L, idx);
        a->n = n;
        if (k == LTC_AG_LIST)
            a->list = calloc((size_t)n + 1, sizeof *a->list);
        else
            a->ints = calloc((size_t)n + 1, sizeof *a->ints);
        if (!a->list && !a->ints) {
            lua_pushliteral(L, "out of memory");
            return false;
        }
        for (int j = 0; j < n; j++) {
            lua_geti(L, idx, j + 1);
            bool ok = true;
            if (k == LTC_AG_LIST)
                ok = (a->list[j] = operand(L, -1, c)) != NULL;
            else if (lua_isinteger(L, -1))
                a->ints[j] = lua_tointeger(L, -1);
            else
                ok = false;
            lua_pop(L, 1);
            if (!ok) {
                lua_pushfstring(L, "argument %d: entry %d has the wrong type", i + 1, j + 1);
                return false;
            }
        }
        return true;
    }
    case LTC_AG_INT:
        if (lua_isinteger(L, idx)) {
            a->i = lua_tointeger(L, idx);
            return true;
        }
        break;
    case LTC_AG_FLOAT:
        if (lua_type(L, idx) == LUA_TNUMBER) {
            a->f = lua_tonumber(L, idx);
            return true;
        }
        break;
    case LTC_AG_BOOL:
        a->b = lua_toboolean(L, idx);
        return true;
    case LTC_AG_DTYPE: {
        ltc_dtype dt;
        if (lua_type(L, idx) == LUA_TSTRING &&
            ltc_dtype_parse(lua_tostring(L, idx), &dt) == LTC_OK) {
            a->i = dt;
            return true;
        }
        break;
    }
    case LTC_AG_NONE:
        return true;
    }
    lua_pushfstring(L, "argument %d: %s does not fit its kind", i + 1, luaL_typename(L, idx));
    return false;
}

/* Reads n tensors from the table at idx into out (nil entries NULL when `holes`); false with
 * a message on the stack. */
static bool tensors(lua_State *L, int idx, ltc_tensor **out, int n, bool holes, const char *what) {
    for (int j = 0; j < n; j++) {
        lua_geti(L, idx, j + 1);
        bool nil = lua_isnil(L, -1);
        out[j] = ltcL_testtensor(L, -1);
        lua_pop(L, 1);
        if (!out[j] && !(nil && holes)) {
            lua_pushfstring(L, "%s[%d] is not a tensor", what, j + 1);
            return false;
        }
    }
    return true;
}

/* core._c_backward(op_full_name, args, results, grads, needs) -> {gradient per schema
 * argument} (a tensor, a table of tensors for a Tensor[] argument, or nil), or nil when the
 * op has no C backward. args are the normalised arguments in schema order (dims positive),
 * results (nil where not saved) and grads one tensor per output, needs one boolean per schema
 * argument. */
static int l_c_backward(lua_State *L) {
    const char *name = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    luaL_checktype(L, 3, LUA_TTABLE);
    luaL_checktype(L, 4, LUA_TTABLE);
    luaL_checktype(L, 5, LUA_TTABLE);
    const ltc_derivative *d = ltc_derivative_find(name);
    if (!d) return luaL_error(L, "_c_backward: no op '%s'", name);
    if (!d->backward) return 0;
    gc_call c = {.n_args = d->n_args, .n_out = d->n_outputs};
    int n_owned = 0;
    for (int i = 0; i < d->n_args; i++) {
        lua_geti(L, 2, i + 1);
        n_owned += lua_istable(L, -1) ? (int)luaL_len(L, -1) + 1 : 1;
        lua_pop(L, 1);
    }
    c.a = calloc((size_t)d->n_args + 1, sizeof *c.a);
    c.g = calloc((size_t)d->n_args + 1, sizeof *c.g);
    c.needs = calloc((size_t)d->n_args + 1, sizeof *c.needs);
    c.results = calloc((size_t)d->n_outputs + 1, sizeof *c.results);
    c.grads = calloc((size_t)d->n_outputs + 1, sizeof *c.grads);
    c.owned = calloc((size_t)n_owned + 1, sizeof *c.owned);
    bool ok = c.a && c.g && c.needs && c.results && c.grads && c.owned;
    if (!ok) lua_pushliteral(L, "out of memory");
    for (int i = 0; ok && i < d->n_args; i++) {
        lua_geti(L, 2, i + 1);
        ok = to_arg(L, lua_gettop(L), d->kinds[i], &c, i);
        if (ok)
            lua_pop(L, 1);
        else
            lua_remove(L, -2);
        lua_geti(L, 5, i + 1);
        c.needs[i] = lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
    ok = ok && tensors(L, 3, c.results, d->n_outputs, true, "results") &&
         tensors(L, 4, c.grads, d->n_outputs, false, "grads");
    if (!ok) {
        gc_free(&c);
        return luaL_error(L, "_c_backward(%s): %s", name, lua_tostring(L, -1));
    }
    if (d->backward(c.a, c.results, c.grads, c.needs, c.g) != LTC_OK) {
        gc_free(&c);
        return luaL_error(L, "%s backward: %s", name, ltc_last_error());
    }
    lua_createtable(L, d->n_args, 0);
    for (int i = 0; i < d->n_args; i++) {
        if (c.g[i].list) {
            lua_createtable(L, c.g[i].n, 0);
            for (int j = 0; j < c.g[i].n; j++) {
                if (!c.g[i].list[j]) continue;
                ltcL_pushtensor(L, c.g[i].list[j]); /* takes the reference */
                c.g[i].list[j] = NULL;
                lua_rawseti(L, -2, j + 1);
            }
            lua_rawseti(L, -2, i + 1);
        } else if (c.g[i].t) {
            ltcL_pushtensor(L, c.g[i].t);
            c.g[i].t = NULL;
            lua_rawseti(L, -2, i + 1);
        }
    }
    gc_free(&c);
    return 1;
}

/* core._c_backward_exists(op_full_name) -> whether the op's formulas were translated to C. */
static int l_c_backward_exists(lua_State *L) {
    const ltc_derivative *d = ltc_derivative_find(luaL_checkstring(L, 1));
    lua_pushboolean(L, d && d->backward);
    return 1;
}

/* core._c_derivative_table() -> {full name = {op = LTC_OP_*, n_args, n_outputs, view,
 * save_result, not_differentiable}} for every op ltc_derivative_of knows; raises if the two
 * look-ups (by number and by name) disagree. */
static int l_c_derivative_table(lua_State *L) {
    lua_newtable(L);
    for (int op = 0; op < LTC_OP_COUNT; op++) {
        const ltc_derivative *d = ltc_derivative_of(op);
        if (!d) continue;
        if (d->op != op || ltc_derivative_find(d->name) != d)
            return luaL_error(L, "_c_derivative_table: op %d (%s) is misfiled", op, d->name);
        lua_createtable(L, 0, 6);
        lua_pushinteger(L, d->op);
        lua_setfield(L, -2, "op");
        lua_pushinteger(L, d->n_args);
        lua_setfield(L, -2, "n_args");
        lua_pushinteger(L, d->n_outputs);
        lua_setfield(L, -2, "n_outputs");
        lua_pushboolean(L, d->view);
        lua_setfield(L, -2, "view");
        lua_pushboolean(L, d->save_result);
        lua_setfield(L, -2, "save_result");
        lua_pushboolean(L, d->not_differentiable);
        lua_setfield(L, -2, "not_differentiable");
        lua_setfield(L, -2, d->name);
    }
    return 1;
}

/* core._c_sum_to(g, size) -> ltc_grad_sum_to(g, size): the engine's reduction of a broadcast
 * gradient, for comparison with F.sum_to. */
static int l_c_sum_to(lua_State *L) {
    ltc_tensor *g = ltcL_checktensor(L, 1, "_c_sum_to");
    luaL_checktype(L, 2, LUA_TTABLE);
    int64_t size[LTC_MAX_DIMS];
    int n = (int)luaL_len(L, 2);
    if (n > LTC_MAX_DIMS) return luaL_error(L, "_c_sum_to: %d sizes", n);
    for (int i = 0; i < n; i++) {
        lua_geti(L, 2, i + 1);
        size[i] = luaL_checkinteger(L, -1);
        lua_pop(L, 1);
    }
    ltc_tensor *out = NULL;
    if (ltc_grad_sum_to(g, size, n, &out) != LTC_OK) return ltcL_error(L);
    ltcL_pushtensor(L, out);
    return 1;
}

void ltcL_open_gradcheck(lua_State *L) {
    lua_pushcfunction(L, l_c_sum_to);
    lua_setfield(L, -2, "_c_sum_to");
    lua_pushcfunction(L, l_c_derivative_table);
    lua_setfield(L, -2, "_c_derivative_table");
    lua_pushcfunction(L, l_c_backward);
    lua_setfield(L, -2, "_c_backward");
    lua_pushcfunction(L, l_c_backward_exists);
    lua_setfield(L, -2, "_c_backward_exists");
}
