/*
 * ltc_debug.c - Lua bindings of the debugging and configuration functions of the core:
 * IR text and DOT, backend text, the recompile explanation, the LTC_IR_DEBUG source hook,
 * and ltc.config's typed get/set/list. lua/ltc/debug.lua and init.lua build on them.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ltc_lua.h"

/* Collects the tensor arguments from `first` on; *n = 0 (and NULL) when there are none. */
static ltc_tensor **check_tensors(lua_State *L, int first, int *n, const char *fname) {
    int top = lua_gettop(L);
    *n = top - first + 1;
    if (*n <= 0) {
        *n = 0;
        return NULL;
    }
    ltc_tensor **ts = lua_newuserdatauv(L, sizeof *ts * (size_t)*n, 0); /* freed by the GC */
    for (int i = 0; i < *n; i++) ts[i] = ltcL_checktensor(L, first + i, fname);
    return ts;
}

typedef ltc_status (*text_fn)(ltc_tensor *const *ts, int n, char **out);

static int push_text(lua_State *L, text_fn fn, const char *fname) {
    int n;
    ltc_tensor **ts = check_tensors(L, 1, &n, fname);
    /* all pending tensors: collect garbage first, as a sync from Lua does (LTC_SYNC_GC) */
    if (!ts) ltcL_collect(L);
    char *s;
    if (fn(ts, n, &s)) return luaL_error(L, "%s: %s", fname, ltc_last_error());
    lua_pushstring(L, s);
    free(s);
    return 1;
}

/* core.debug_ir(t, ...): the pending IR of the tensors (all pending tensors if none). */
static int l_debug_ir(lua_State *L) { return push_text(L, ltc_debug_ir_text, "debug.ir"); }
/* core.debug_dot(t, ...): the same as Graphviz DOT. */
static int l_debug_dot(lua_State *L) { return push_text(L, ltc_debug_ir_dot, "debug.dot"); }
/* core.debug_backend_text(t, ...): the backend's text of the computation. */
static int l_debug_backend_text(lua_State *L) {
    return push_text(L, ltc_debug_backend_text, "debug.backend_text");
}

/* core.debug_explain_recompile(): why the last compile-cache miss happened. */
static int l_debug_explain(lua_State *L) {
    char *s = ltc_debug_explain_recompile();
    if (!s) return luaL_error(L, "debug.explain_recompile: out of memory");
    lua_pushstring(L, s);
    free(s);
    return 1;
}

/* core.debug_graph(t, ...): the pending graph as data, node i (1-based) in post order:
 * {header =, n =, op = {}, attrs = {}, shape = {}, source = {} (or false), id = {}
 * (lightuserdata), data = {} (parameters' device data, or false), param = {} (0-based, or
 * false), root = {} (0-based, or false), value = {} (0-d parameters, or false), ndim = {},
 * args = {{operand node, ...}}, outs = {{operand output, ...}} (1-based)}. */
static int graph_box_gc(lua_State *L) {
    ltc_debug_graph **box = lua_touserdata(L, 1);
    ltc_debug_graph_free(*box);
    *box = NULL;
    return 0;
}

static int l_debug_graph(lua_State *L) {
    int n;
    ltc_tensor **ts = check_tensors(L, 1, &n, "debug.graph");
    if (!ts) ltcL_collect(L);
    ltc_debug_graph *g;
    if (ltc_debug_graph_export(ts, n, &g)) return luaL_error(L, "debug.graph: %s", ltc_last_error());
    /* a box whose __gc frees the export if building the table raises (out of memory) */
    ltc_debug_graph **box = lua_newuserdatauv(L, sizeof *box, 0);
    *box = g;
    if (luaL_newmetatable(L, "ltc.debug_graph")) {
        lua_pushcfunction(L, graph_box_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    int nn = g->n_nodes;
    lua_createtable(L, 0, 14);
    lua_pushstring(L, g->header);
    lua_setfield(L, -2, "header");
    lua_pushinteger(L, nn);
    lua_setfield(L, -2, "n");
    static const char *fields[] = {"op", "attrs", "shape", "source", "id", "data", "param",
                                   "root", "value", "ndim", "args", "outs"};
    for (int f = 0; f < 12; f++) {
        lua_createtable(L, nn, 0);
        for (int i = 0; i < nn; i++) {
            const ltc_debug_node *d = &g->nodes[i];
            switch (f) {
            case 0: lua_pushstring(L, d->op); break;
            case 1: lua_pushstring(L, d->attrs); break;
            case 2: lua_pushstring(L, d->shape); break;
            case 3: if (d->source) lua_pushstring(L, d->source); else lua_pushboolean(L, 0); break;
            case 4: lua_pushlightuserdata(L, (void *)d->id); break;
            case 5: if (d->data) lua_pushlightuserdata(L, (void *)d->data); else lua_pushboolean(L, 0); break;
            case 6: if (d->param >= 0) lua_pushinteger(L, d->param); else lua_pushboolean(L, 0); break;
            case 7: if (d->root >= 0) lua_pushinteger(L, d->root); else lua_pushboolean(L, 0); break;
            case 8: if (d->has_value) lua_pushnumber(L, d->value); else lua_pushboolean(L, 0); break;
            case 9: lua_pushinteger(L, d->ndim); break;
            default:
                lua_createtable(L, d->n_operands, 0);
                for (int k = 0; k < d->n_operands; k++) {
                    int32_t r = d->operands[k];
                    lua_pushinteger(L, f == 10 ? r / 256 + 1 : r % 256 + 1);
                    lua_rawseti(L, -2, k + 1);
                }
            }
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, fields[f]);
    }
    ltc_debug_graph_free(g);
    *box = NULL;
    return 1;
}

/* core.debug_tensor_ids(t): t's node and device data identities as in core.debug_graph (false
 * when it has none). */
static int l_debug_tensor_ids(lua_State *L) {
    const void *node, *data;
    ltc_debug_tensor_ids(ltcL_checktensor(L, 1, "debug.tensor_ids"), &node, &data);
    if (node) lua_pushlightuserdata(L, (void *)node); else lua_pushboolean(L, 0);
    if (data) lua_pushlightuserdata(L, (void *)data); else lua_pushboolean(L, 0);
    return 2;
}

/* ---- LTC_IR_DEBUG: the Lua line that traced a node ------------------------------------------ */

/* The state whose main thread the hook reads, and the source prefixes of ltc's own Lua files
 * (frames there are skipped, so a node points at the user's line, not at init.lua; the source
 * tree's gen/derivatives.lua as well, which an install puts beside them). The hook reads the
 * main thread's stack: inside a coroutine the line is where it was resumed. One per OS thread,
 * as the core's hook (each thread runs its own Lua state). */
#define SKIP_MAX 4
#define SCOPE_MAX 64
/* This state and the module scopes below, per OS thread, on the heap (made when the module
 * opens): thread-local storage stays small enough for the loader to place it statically. */
typedef struct {
    lua_State *L;
    char skip[SKIP_MAX][512];
    struct {
        int depth[SCOPE_MAX]; /* strictly increasing */
        int n;
    } scopes;
} debug_state;
static debug_state no_state; /* (before the module opens on this thread: nothing, read only) */
static _Thread_local debug_state *dbg = &no_state;
static pthread_key_t dbg_key;
static pthread_once_t dbg_once = PTHREAD_ONCE_INIT;
static void dbg_make_key(void) { (void)pthread_key_create(&dbg_key, free); }
#define hook (*dbg)

static bool skipped(const char *source) {
    for (int i = 0; i < SKIP_MAX; i++) {
        size_t n = strlen(hook.skip[i]);
        if (n && strncmp(source, hook.skip[i], n) == 0) return true;
    }
    return false;
}

/* ---- the module that runs (LTC_IR_DEBUG) --------------------------------------------------
 * ltc.nn's module call (nn.lua's call_module) calls core.debug_scope_enter(self) before it
 * tail-calls forward. An entry is the module and the depth of its frame from the bottom of
 * the main thread's stack; it holds while the frame at that depth is still that call: a tail
 * call (forward, and whatever forward tail-calls, replace the frame) or a frame whose `self`
 * is the module. Entries are dropped when a call at their depth or above enters, or when the
 * hook finds their frame gone. Forward is still tail-called, so error levels are unchanged.
 * Inside a coroutine nothing is tracked (the hook reads the main thread). */
#define scopes (dbg->scopes)
static const char scopes_key = 0; /* registry[&scopes_key]: {module, ...}, as the depths */

static int stack_depth(lua_State *L) {
    lua_Debug ar;
    int lo = 0, hi = 1;
    while (lua_getstack(L, hi, &ar)) lo = hi, hi *= 2; /* frames lo exists, hi does not */
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (lua_getstack(L, mid, &ar)) lo = mid;
        else hi = mid;
    }
    return lo + 1;
}

static void scopes_table(lua_State *L) {
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &scopes_key) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_createtable(L, SCOPE_MAX, 0);
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &scopes_key);
    }
}

static void scopes_truncate(lua_State *L, int n) {
    if (n >= scopes.n) return;
    scopes_table(L);
    for (int i = n; i < scopes.n; i++) {
        lua_pushnil(L);
        lua_rawseti(L, -2, i + 1);
    }
    lua_pop(L, 1);
    scopes.n = n;
}

/* core.debug_scope_enter(module): see above; nothing unless LTC_IR_DEBUG is on. */
static int l_scope_enter(lua_State *L) {
    static int64_t *flag;
    if (!flag) flag = ltc_config_slot("LTC_IR_DEBUG");
    if (!flag || !*flag || L != hook.L) return 0;
    int depth = stack_depth(L) - 2; /* the caller's frame (level 1), counted from the bottom */
    int n = scopes.n;
    while (n > 0 && scopes.depth[n - 1] >= depth) n--;
    scopes_truncate(L, n);
    if (n == SCOPE_MAX) return 0;
    scopes_table(L);
    lua_pushvalue(L, 1);
    lua_rawseti(L, -2, n + 1);
    scopes.depth[n] = depth;
    scopes.n = n + 1;
    return 0;
}

/* Appends " in <path> (<Class>)" for the modules that run, named from the outermost by the
 * names their parents registered them under (" in 1.attn (MultiheadAttention)"; " in GRU"
 * for a module called by itself); nothing outside modules. */
static void module_scope(lua_State *L, char *buf, size_t n) {
    if (scopes.n == 0) return;
    int top = lua_gettop(L);
    if (!lua_checkstack(L, SCOPE_MAX + 8)) return;
    int total = stack_depth(L), valid = 0;
    scopes_table(L);
    int tab = lua_gettop(L);
    for (; valid < scopes.n; valid++) {
        lua_Debug ar;
        int d = scopes.depth[valid];
        if (d >= total || !lua_getstack(L, total - 1 - d, &ar) || !lua_getinfo(L, "t", &ar)) break;
        if (ar.istailcall) continue;
        lua_rawgeti(L, tab, valid + 1);
        const char *name = lua_getlocal(L, &ar, 1);
        bool same = name && strcmp(name, "self") == 0 && lua_rawequal(L, -1, -2);
        lua_pop(L, name ? 2 : 1);
        if (!same) break;
    }
    lua_settop(L, top);
    scopes_truncate(L, valid);
    if (valid == 0) return;
    scopes_table(L);
    char path[200] = "";
    size_t len = 0;
    for (int i = 1; i < valid; i++) {
        lua_rawgeti(L, tab, i);                 /* parent */
        lua_rawgeti(L, tab, i + 1);             /* child */
        const char *key = NULL;
        lua_pushliteral(L, "_slots");
        if (lua_istable(L, -3) && lua_rawget(L, -3) == LUA_TTABLE) {
            lua_pushnil(L);
            while (lua_next(L, -2)) {
                if (lua_rawequal(L, -1, -4) && lua_type(L, -2) == LUA_TSTRING) {
                    key = lua_tostring(L, -2); /* a key of the parent's _slots, still there */
                    lua_pop(L, 2);
                    break;
                }
                lua_pop(L, 1);
            }
        }
        lua_pop(L, 3);
        if (!key) { /* called by a module that does not own it: the path starts again */
            len = 0;
            path[0] = 0;
            continue;
        }
        int k = snprintf(path + len, sizeof path - len, "%s%s", len ? "." : "", key);
        if (k > 0) len += (size_t)k < sizeof path - len ? (size_t)k : sizeof path - len - 1;
    }
    const char *cls = "module";
    lua_rawgeti(L, tab, valid);
    if (lua_getmetatable(L, -1) && lua_getfield(L, -1, "__name") == LUA_TSTRING) {
        cls = lua_tostring(L, -1); /* stays in the class table */
        if (strncmp(cls, "ltc.nn.", 7) == 0) cls += 7;
    }
    size_t used = strlen(buf);
    if (len) snprintf(buf + used, n - used, " in %s (%s)", path, cls);
    else snprintf(buf + used, n - used, " in %s", cls);
    lua_settop(L, top);
}

static bool lua_source(void *ud, char *buf, size_t n) {
    (void)ud;
    lua_Debug ar;
    for (int level = 0; lua_getstack(hook.L, level, &ar); level++) {
        if (!lua_getinfo(hook.L, "Sl", &ar) || ar.currentline <= 0) continue;
        if (skipped(ar.source)) continue;
        snprintf(buf, n, "%s:%d", ar.short_src, ar.currentline);
        module_scope(hook.L, buf, n);
        return true;
    }
    return false;
}

void ltcL_where(lua_State *L) {
    lua_Debug ar;
    for (int level = 1; lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar)) break;
        if (ar.what[0] == 'C') { /* pcall, ...: no line; core._kwbind's closure: its caller's */
            lua_getinfo(L, "f", &ar);
            bool kwbound = lua_tocfunction(L, -1) == ltcL_kwbound;
            lua_pop(L, 1);
            if (kwbound) continue;
            break;
        }
        if (skipped(ar.source)) continue;
        if (ar.currentline > 0) {
            lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
            return;
        }
        break;
    }
    lua_pushliteral(L, "");
}

int ltcL_raise(lua_State *L, const char *fmt, ...) {
    va_list ap;
    ltcL_where(L);
    va_start(ap, fmt);
    lua_pushvfstring(L, fmt, ap);
    va_end(ap);
    lua_concat(L, 2);
    return lua_error(L);
}

/* True when msg starts with a position, "chunk:line: " (as error() and ltcL_raise add). */
static bool has_position(const char *msg) {
    const char *c = strchr(msg, ':');
    if (!c || c == msg || memchr(msg, '\n', (size_t)(c - msg))) return false;
    const char *d = c + 1;
    while (*d >= '0' && *d <= '9') d++;
    return d > c + 1 && d[0] == ':' && d[1] == ' ';
}

/* core._raise(msg): raises msg led by the line of the innermost caller outside ltc's own Lua
 * files (ltcL_where), for the checks of lua/ltc/ that run a few calls deep, and to raise
 * again an error caught by one of ltc's own pcalls (whose C frame left it with no line). A
 * msg that has a position already, or is no string, is raised unchanged. */
int ltcL_reraise(lua_State *L) {
    if (lua_type(L, -1) != LUA_TSTRING || has_position(lua_tostring(L, -1))) return lua_error(L);
    ltcL_where(L);
    lua_insert(L, -2);
    lua_concat(L, 2);
    return lua_error(L);
}

static int l_raise(lua_State *L) {
    lua_settop(L, 1);
    return ltcL_reraise(L);
}

/* core._op_scope(name [, hint]) or core._op_scope(label): the nodes traced until the
 * returned value is closed carry name as the user's op (ltc_op_scope_enter), so that a
 * runtime error of an internal op names the composite the user called. For a to-be-closed
 * variable, which exits the scope on return and on error alike:
 * `local _ <close> = core._op_scope("index_fill")`. The value is one shared table whose
 * __close is ltc_op_scope_exit. A label from core._op_label(name [, hint]), made once where
 * the wrapper is defined, spares every call the formatting and interning of the name. */
typedef struct {
    ltc_op_label l;
    const void *tag; /* &label_tag: a label, not another userdata of this size */
} label_box;
static const char label_tag;

static int l_op_scope(lua_State *L) {
    label_box *b = lua_touserdata(L, 1);
    if (b && lua_rawlen(L, 1) == sizeof *b && b->tag == &label_tag) {
        ltc_op_scope_enter_label(&b->l);
    } else {
        const char *name = luaL_checkstring(L, 1), *hint = luaL_optstring(L, 2, NULL);
        (void)ltc_op_scope_enter(name, hint); /* out of memory: no name, still paired */
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    return 1;
}

/* core._op_label(name [, hint]): a label for core._op_scope (a userdata; its strings are
 * interned for the process's life). Raises when out of memory. */
static int l_op_label(lua_State *L) {
    const char *name = luaL_checkstring(L, 1), *hint = luaL_optstring(L, 2, NULL);
    label_box *b = lua_newuserdatauv(L, sizeof *b, 0);
    b->tag = &label_tag;
    if (ltc_op_label_make(name, hint, &b->l)) return ltcL_error(L);
    return 1;
}

static int l_op_scope_close(lua_State *L) {
    (void)L;
    ltc_op_scope_exit();
    return 0;
}

/* core._set_source_skip(prefix, ...): frames whose source starts with one of the prefixes
 * (at most 4) are skipped. Internal (ltc.debug sets lua/ltc/ once): it was public as
 * ltc.debug_set_source_skip, where a call with no prefixes put every error at a line of
 * lua/ltc/. */
static int l_set_source_skip(lua_State *L) {
    int n = lua_gettop(L);
    if (n > SKIP_MAX) return luaL_error(L, "_set_source_skip: at most %d prefixes", SKIP_MAX);
    for (int i = 0; i < SKIP_MAX; i++)
        snprintf(hook.skip[i], sizeof hook.skip[i], "%s", i < n ? luaL_checkstring(L, i + 1) : "");
    return 0;
}

/* The state is closing: the hook must not read it any more. */
static int hook_close(lua_State *L) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    if (hook.L == lua_tothread(L, -1)) {
        ltc_debug_set_source_hook(NULL, NULL);
        hook.L = NULL;
    }
    return 0;
}

/* ---- ltc.config ---------------------------------------------------------------------------- */

/* core.config_value(name): an integer option's number, a string option's string; error for
 * an unknown name. */
static int l_config_value(lua_State *L) {
    const char *name = luaL_checkstring(L, 1);
    for (int i = 0;; i++) {
        ltc_config_entry e;
        if (!ltc_config_entry_get(i, &e)) break;
        if (strcmp(e.name, name) != 0) continue;
        if (e.is_str) lua_pushstring(L, e.str);
        else lua_pushinteger(L, e.value);
        return 1;
    }
    return luaL_error(L, "config: unknown configuration option '%s'", name);
}

/* core.config_assign(name, value): a number (or boolean, as 1/0) for an integer option, a
 * string for a string option. */
static int l_config_assign(lua_State *L) {
    const char *name = luaL_checkstring(L, 1);
    ltc_status st;
    if (lua_type(L, 2) == LUA_TSTRING) {
        st = ltc_config_set_str(name, lua_tostring(L, 2));
    } else if (lua_isboolean(L, 2)) {
        st = ltc_config_set_int(name, lua_toboolean(L, 2));
    } else {
        int ok;
        lua_Integer v = lua_tointegerx(L, 2, &ok);
        if (!ok && lua_type(L, 2) == LUA_TNUMBER)
            return luaL_error(L, "config: %s needs an integer, a boolean or a string, got the "
                              "non-integer number %s", name, luaL_tolstring(L, 2, NULL));
        if (!ok)
            return luaL_error(L, "config: %s needs an integer, a boolean or a string, got %s",
                              name, ltcL_typename(L, 2));
        st = ltc_config_set_int(name, v);
    }
    if (st) return luaL_error(L, "config: %s", ltc_last_error());
    return 0;
}

/* core.config_list(): {{name=, value=, doc=, min=, max=}, ...} in table order. */
static int l_config_list(lua_State *L) {
    lua_newtable(L);
    for (int i = 0;; i++) {
        ltc_config_entry e;
        if (!ltc_config_entry_get(i, &e)) break;
        lua_createtable(L, 0, 5);
        lua_pushstring(L, e.name);
        lua_setfield(L, -2, "name");
        lua_pushstring(L, e.doc);
        lua_setfield(L, -2, "doc");
        if (e.is_str) {
            lua_pushstring(L, e.str);
            lua_setfield(L, -2, "value");
        } else {
            lua_pushinteger(L, e.value);
            lua_setfield(L, -2, "value");
            lua_pushinteger(L, e.min);
            lua_setfield(L, -2, "min");
            lua_pushinteger(L, e.max);
            lua_setfield(L, -2, "max");
        }
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

/* core.debug_view_steps(t): see ltc_tensor_view_steps. */
static int l_debug_view_steps(lua_State *L) {
    lua_pushinteger(L, ltc_tensor_view_steps(ltcL_checktensor(L, 1, "view_steps")));
    return 1;
}

/* core.debug_lowered(t): see ltc_tensor_lowered. */
static int l_debug_lowered(lua_State *L) {
    lua_pushboolean(L, ltc_tensor_lowered(ltcL_checktensor(L, 1, "lowered")));
    return 1;
}

static const luaL_Reg debug_functions[] = {
    {"debug_lowered", l_debug_lowered},
    {"debug_view_steps", l_debug_view_steps},
    {"debug_ir", l_debug_ir},
    {"debug_dot", l_debug_dot},
    {"debug_graph", l_debug_graph},
    {"debug_tensor_ids", l_debug_tensor_ids},
    {"debug_backend_text", l_debug_backend_text},
    {"debug_explain_recompile", l_debug_explain},
    {"_set_source_skip", l_set_source_skip}, {"_raise", l_raise},
    {"debug_scope_enter", l_scope_enter},
    {"config_value", l_config_value},
    {"config_assign", l_config_assign},
    {"config_list", l_config_list},
    {NULL, NULL},
};

void ltcL_open_debug(lua_State *L) {
    if (dbg == &no_state) {
        pthread_once(&dbg_once, dbg_make_key);
        debug_state *d = calloc(1, sizeof *d);
        if (!d || pthread_setspecific(dbg_key, d)) {
            free(d);
            luaL_error(L, "ltc: out of memory opening the module");
        }
        dbg = d;
    }
    luaL_setfuncs(L, debug_functions, 0);
    lua_newtable(L); /* the closer of core._op_scope */
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, l_op_scope_close);
    lua_setfield(L, -2, "__close");
    lua_setmetatable(L, -2);
    lua_pushcclosure(L, l_op_scope, 1);
    lua_setfield(L, -2, "_op_scope");
    lua_pushcfunction(L, l_op_label);
    lua_setfield(L, -2, "_op_label");
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    hook.L = lua_tothread(L, -1);
    lua_pop(L, 1);
    ltc_debug_set_source_hook(lua_source, NULL);
    ltcL_at_close(L, "ltc.debug_sentinel", hook_close, true);
}
