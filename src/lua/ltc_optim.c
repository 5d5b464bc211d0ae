/* ltc_optim.c: the steady-state parameter updates of ltc.optim's SGD and Adam/AdamW, one C
 * call per parameter group (PyTorch's foreach optimizers). Each traces the very ops the Lua
 * formulas of lua/ltc/optim.lua trace, in the same order and with the same operands (a Lua
 * number becomes a fresh weak 0-d tensor per use, as in an op from Lua), so graphs, their
 * hashes and ltc.jit's replays are the same; what goes is the Lua dispatch and the
 * userdata of every intermediate tensor. A parameter whose state is missing or was made by
 * a failed step (issue 17) is left to the Lua formula: the call returns its index. */
#include "ltc.h"
#include "ltc_autograd.h"
#include "ltc_backend.h"
#include "ltc_lua.h"

typedef struct {
    ltc_tensor *t[64]; /* every reference the update makes, released at the end (Adam: 45) */
    int n;
    bool failed;
    const char *write_op; /* set when a write failed: its op name prefixes the error */
} refs;

static ltc_tensor *keep(refs *r, ltc_tensor *t, ltc_status st) {
    if (st || !t || r->n == (int)(sizeof r->t / sizeof r->t[0])) {
        if (!st && t) ltc_tensor_release(t);
        r->failed = true;
        return NULL;
    }
    r->t[r->n++] = t;
    return t;
}

/* r->failed after any failed op: the remaining ones are skipped (NULL operands) */
static ltc_tensor *bin(refs *r, ltc_status (*op)(ltc_tensor *, ltc_tensor *, ltc_tensor **),
                       ltc_tensor *a, ltc_tensor *b) {
    ltc_tensor *out = NULL;
    if (r->failed || !a || !b) {
        r->failed = true;
        return NULL;
    }
    return keep(r, out, op(a, b, &out)) ? out : NULL;
}

static ltc_tensor *un(refs *r, ltc_status (*op)(ltc_tensor *, ltc_tensor **), ltc_tensor *a) {
    ltc_tensor *out = NULL;
    if (r->failed || !a) {
        r->failed = true;
        return NULL;
    }
    return keep(r, out, op(a, &out)) ? out : NULL;
}

/* A fresh operand for the value at stack index idx (a Lua number: a weak 0-d tensor, as an
 * op called from Lua makes; a tensor: a new reference). */
static ltc_tensor *num(refs *r, lua_State *L, int idx) {
    ltc_tensor *t = r->failed ? NULL : ltcL_operand(L, idx);
    return keep(r, t, t ? LTC_OK : LTC_ERR_NOMEM);
}

/* x's value becomes v (ltc.optim's assign(x, v, "data")) */
static void write(refs *r, ltc_tensor *x, ltc_tensor *v) {
    if (r->failed || !v) {
        r->failed = true;
    } else if (ltc_tensor_write_(x, v, false, "data")) {
        r->failed = true;
        r->write_op = "data";
    }
}

static void release_all(refs *r) {
    for (int i = 0; i < r->n; i++)
        ltc_tensor_release(r->t[i]);
    r->n = 0;
}

/* The state table of parameter p (on the stack top) if every tensor in it has a value, else
 * nothing pushed and false. st is left on the stack. */
static bool usable_state(lua_State *L, int state) {
    lua_pushvalue(L, -1);
    if (lua_rawget(L, state) != LUA_TTABLE) {
        lua_pop(L, 1);
        return false;
    }
    int st = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, st)) {
        ltc_tensor *v = ltcL_testtensor(L, -1);
        lua_pop(L, 1);
        if (v && !ltc_tensor_has_value(v)) {
            lua_pop(L, 2);
            return false;
        }
    }
    return true;
}

static ltc_tensor *field(lua_State *L, int st, const char *k) {
    lua_getfield(L, st, k);
    ltc_tensor *t = ltcL_testtensor(L, -1);
    lua_pop(L, 1); /* st keeps it */
    return t;
}

/* Runs update(L, r, p, g, st) for params[first..] under p's device guard; returns the index
 * of the first parameter it leaves to Lua (update returns false), or 0. */
typedef bool (*update_fn)(lua_State *L, refs *r, ltc_tensor *p, ltc_tensor *g, int st);

static int foreach (lua_State *L, update_fn update, const char *name) {
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_Integer n = (lua_Integer)lua_rawlen(L, 1), first = luaL_checkinteger(L, 3);
    for (lua_Integer j = first; j <= n; j++) {
        lua_rawgeti(L, 1, j);
        ltc_tensor *p = ltcL_checktensor(L, -1, name);
        ltc_tensor *g = ltc_grad_get(p);
        if (!g) {
            lua_pop(L, 1);
            continue;
        }
        if (!usable_state(L, 2)) {
            lua_pushinteger(L, j);
            return 1;
        }
        refs r = {.n = 0, .failed = false, .write_op = NULL};
        ltc_device prev;
        bool moved = ltc_device_follow(p, &prev);
        bool done = update(L, &r, p, ltc_tensor_retain(g), lua_gettop(L));
        if (moved) ltc_device_guard(prev, NULL);
        if (r.failed) {
            release_all(&r);
            return r.write_op ? ltcL_error_prefixed(L, r.write_op) : ltcL_error(L);
        }
        release_all(&r);
        if (!done) {
            lua_pushinteger(L, j);
            return 1;
        }
        lua_pop(L, 2);
    }
    return 0;
}

/* SGD: arguments 4.. are lr (a number or live tensor), weight_decay, momentum,
 * 1 - dampening, nesterov (as optim.SGD's formula reads them). */
static bool sgd_update(lua_State *L, refs *r, ltc_tensor *p, ltc_tensor *g, int st) {
    keep(r, g, LTC_OK);
    if (lua_tonumber(L, 5) != 0) /* g = g + wd * p */
        g = bin(r, ltc_add, g, bin(r, ltc_mul, num(r, L, 5), p));
    if (lua_tonumber(L, 6) != 0) {
        ltc_tensor *buf = field(L, st, "momentum_buffer");
        if (!buf) return false; /* the first step makes it */
        /* ema(buf, momentum, (1 - dampening) * g) */
        ltc_tensor *y = bin(r, ltc_mul, num(r, L, 7), g);
        write(r, buf, bin(r, ltc_add, bin(r, ltc_mul, buf, num(r, L, 6)), y));
        if (lua_toboolean(L, 8))
            g = bin(r, ltc_add, g, bin(r, ltc_mul, num(r, L, 6), buf));
        else
            g = buf;
    }
    write(r, p, bin(r, ltc_sub, p, bin(r, ltc_mul, num(r, L, 4), g)));
    return true;
}

/* core._sgd_(params, state, first, lr, weight_decay, momentum, 1 - dampening, nesterov) ->
 * nothing, or the index of a parameter left to the Lua formula (from which to go on). */
static int l_sgd(lua_State *L) {
    return foreach (L, sgd_update, "SGD");
}

/* optim._one(g) (lua/ltc/optim.lua): where(isnan(g's first element), 1.0, 1.0) as float64 */
static ltc_tensor *one(refs *r, lua_State *L, ltc_tensor *g) {
    int64_t flat = -1;
    ltc_tensor *x = NULL;
    if (r->failed || !keep(r, x, ltc_reshape(g, &flat, 1, &x))) return NULL;
    ltc_tensor *s = NULL;
    if (!keep(r, s, ltc_select(x, 1, 1, &s))) return NULL;
    ltc_tensor *nan = un(r, ltc_isnan, s);
    lua_pushnumber(L, 1.0);
    ltc_tensor *a = num(r, L, -1), *b = num(r, L, -1);
    lua_pop(L, 1);
    ltc_tensor *w = NULL;
    if (r->failed || !keep(r, w, ltc_where(nan, a, b, &w))) return NULL;
    ltc_tensor *out = NULL;
    return keep(r, out, ltc_to(w, LTC_F64, &out)) ? out : NULL;
}

/* Adam and AdamW without amsgrad: arguments 4.. are lr, weight_decay, b1, b2, 1 - b1,
 * 1 - b2, eps, decoupled (AdamW), and for AdamW with a number lr 1 - lr * wd. */
static bool adam_update(lua_State *L, refs *r, ltc_tensor *p, ltc_tensor *g, int st) {
    ltc_tensor *p0 = p; /* AdamW's decay makes p a new tensor */
    keep(r, g, LTC_OK);
    ltc_tensor *m = field(L, st, "exp_avg"), *v = field(L, st, "exp_avg_sq");
    ltc_tensor *t = field(L, st, "step");
    if (!m || !v || !t || ltc_shape_numel(ltc_tensor_shape(g)) == 0) return false;
    if (lua_tonumber(L, 5) != 0) {
        if (!lua_toboolean(L, 11)) { /* Adam: g = g + wd * p */
            g = bin(r, ltc_add, g, bin(r, ltc_mul, num(r, L, 5), p));
        } else if (lua_type(L, 4) == LUA_TNUMBER) { /* AdamW: p = p * (1 - lr * wd) */
            p = bin(r, ltc_mul, p, num(r, L, 12));
        } else {
            lua_pushinteger(L, 1);
            ltc_tensor *one_ = num(r, L, -1);
            lua_pop(L, 1);
            p = bin(r, ltc_mul, p,
                    bin(r, ltc_sub, one_, bin(r, ltc_mul, num(r, L, 4), num(r, L, 5))));
        }
    }
    /* ema(m, b1, g * (1 - b1)); ema(v, b2, g * g * (1 - b2)) */
    ltc_tensor *y = bin(r, ltc_mul, g, num(r, L, 8));
    write(r, m, bin(r, ltc_add, bin(r, ltc_mul, m, num(r, L, 6)), y));
    y = bin(r, ltc_mul, g, g);
    y = bin(r, ltc_mul, y, num(r, L, 9));
    write(r, v, bin(r, ltc_add, bin(r, ltc_mul, v, num(r, L, 7)), y));
    /* bc1, bc2 = 1 - b1 ^ (t + 1), 1 - b2 ^ (t + 1): the count after this step, from the old
     * count (t itself counts in one(m) after the update, as optim.lua's adam_step says) */
    lua_pushinteger(L, 1);
    int onei = lua_gettop(L);
    ltc_tensor *tn = bin(r, ltc_add, t, num(r, L, onei));
    ltc_tensor *bc1 = bin(r, ltc_sub, num(r, L, onei), bin(r, ltc_pow, num(r, L, 6), tn));
    ltc_tensor *bc2 = bin(r, ltc_sub, num(r, L, onei), bin(r, ltc_pow, num(r, L, 7), tn));
    /* denom = v:sqrt() * (1 / bc2:sqrt()) + eps */
    ltc_tensor *sq = un(r, ltc_sqrt, v);
    ltc_tensor *inv = bin(r, ltc_div, num(r, L, onei), un(r, ltc_sqrt, bc2));
    lua_pop(L, 1);
    ltc_tensor *denom = bin(r, ltc_add, bin(r, ltc_mul, sq, inv), num(r, L, 10));
    /* p - m / denom * (lr / bc1) */
    ltc_tensor *a = bin(r, ltc_div, m, denom);
    ltc_tensor *b = bin(r, ltc_div, num(r, L, 4), bc1);
    write(r, p0, bin(r, ltc_sub, p, bin(r, ltc_mul, a, b)));
    /* t:add_(one(m)) */
    ltc_tensor *o = one(r, L, m);
    if (!r->failed) {
        ltc_tensor *sum = bin(r, ltc_add, t, o);
        if (!r->failed && ltc_tensor_write_(t, sum, false, "add_")) {
            r->failed = true;
            r->write_op = "add_";
        }
    }
    return true;
}

/* core._adam_(params, state, first, lr, weight_decay, b1, b2, 1 - b1, 1 - b2, eps, decoupled,
 * 1 - lr * wd) -> as core._sgd_ (amsgrad stays in Lua). */
static int l_adam(lua_State *L) {
    return foreach (L, adam_update, "Adam");
}

static const luaL_Reg optim_functions[] = {
    {"_sgd_", l_sgd},
    {"_adam_", l_adam},
    {NULL, NULL},
};

void ltcL_open_optim(lua_State *L) {
    luaL_setfuncs(L, optim_functions, 0);
}
