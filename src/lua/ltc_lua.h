/*
 * ltc_lua.h - helpers shared by the hand-written binding (src/lua/) and the generated
 * one (gen/lua_ops.c). Argument checking happens once, at the boundary; the checks raise
 * Lua errors that name the function and the argument.
 */
#ifndef LTC_LUA_H
#define LTC_LUA_H

#include <lauxlib.h>
#include <lua.h>

#include "ltc.h"
#include "ltc_args.h" /* the argument checks (ltcL_checktensor, ltcL_checkint, ...) */

#define LTC_TENSOR_MT "ltc.Tensor"

/* ---- errors at the user's line ----
 * luaL_error names the line of the function that called the C function (luaL_where(L, 1)):
 * for an op called from one of ltc's own Lua files (lua/ltc/ops.lua's chunk, init.lua's
 * in-place ops, ...) a line inside ltc. The binding's errors are raised by ltcL_raise instead,
 * which names the innermost caller outside those files (the prefixes ltc.debug sets, as the
 * LTC_IR_DEBUG hook skips them), or no line when a C function (pcall) comes first, as
 * luaL_where does. Every luaL_error of the binding is ltcL_raise (the define below). */
int ltcL_raise(lua_State *L, const char *fmt, ...);
/* Pushes the position ltcL_raise uses: "chunk:line: " or "". */
void ltcL_where(lua_State *L);
/* Raises the error value on top again, a string without a position led by ltcL_where's (as
 * core._raise): for an error caught by a pcall of the binding's own, whose C frame left it
 * without the user's line. */
int ltcL_reraise(lua_State *L);
#define luaL_error ltcL_raise

/* lauxlib's argument checks, raising "<name>: bad argument #n (...)" at the user's line with
 * the function's name in the ltc module (ltc_argerror.c), instead of "bad argument #n to 'f'"
 * with the caller's name for it. The luaL_checkstring, luaL_optstring and luaL_argcheck
 * macros of lauxlib.h reach these too. */
int ltcL_argerror(lua_State *L, int arg, const char *extramsg);
int ltcL_typeerror(lua_State *L, int arg, const char *tname);
const char *ltcL_checklstring(lua_State *L, int arg, size_t *len);
const char *ltcL_optlstring(lua_State *L, int arg, const char *def, size_t *len);
lua_Number ltcL_checknumber(lua_State *L, int arg);
lua_Number ltcL_optnumber(lua_State *L, int arg, lua_Number def);
lua_Integer ltcL_checkinteger(lua_State *L, int arg);
lua_Integer ltcL_optinteger(lua_State *L, int arg, lua_Integer def);
void ltcL_checktype(lua_State *L, int arg, int t);
void ltcL_checkany(lua_State *L, int arg);
void *ltcL_checkudata(lua_State *L, int arg, const char *tname);
#define luaL_argerror ltcL_argerror
#define luaL_typeerror ltcL_typeerror
#define luaL_checklstring ltcL_checklstring
#define luaL_optlstring ltcL_optlstring
#define luaL_checknumber ltcL_checknumber
#define luaL_optnumber ltcL_optnumber
#define luaL_checkinteger ltcL_checkinteger
#define luaL_optinteger ltcL_optinteger
#define luaL_checktype ltcL_checktype
#define luaL_checkany ltcL_checkany
#define luaL_checkudata ltcL_checkudata

/* The name of the value at arg for an argument error: "ltc.Tensor", "a closed ltc.Tensor" or
 * its Lua type name (luaL_typename). */
const char *ltcL_typename(lua_State *L, int arg);
/* Checks that `arg` is a tensor or a number; raises otherwise. Allocates nothing. */
void ltcL_checkoperand(lua_State *L, int arg, const char *fname);
/* A new reference to the operand at `arg` (checked before): the tensor itself, or a new
 * weak 0-d tensor for a Lua number (int64 for an integer, float64 for a float). Never
 * raises; returns NULL on allocation failure with the core's error set. */
ltc_tensor *ltcL_operand(lua_State *L, int arg);
/* As ltcL_operand (the operand checked by ltcL_checkoperand before), for a generated op
 * binding that passes the operand to its one op call and then only releases it: a float
 * number may then be converted in place by the op's type promotion
 * (ltc_tensor_from_float_operand). */
ltc_tensor *ltcL_operand_once(lua_State *L, int arg);
/* A list of operands: a Lua table of tensors/numbers at `arg`. Checks, then fills `out`
 * with new references (at most `max`); returns the count. Raises on a bad entry. */
int ltcL_checkoperands(lua_State *L, int arg, ltc_tensor **out, int max, const char *fname);
/* Releases n references made by ltcL_operand/ltcL_checkoperands (NULL entries skipped). */
void ltcL_release(ltc_tensor **ts, int n);

/* An int[] argument starting at *arg: a table of integers, or (when `varargs`) a run of
 * integer arguments. Advances *arg past what it consumed; returns the count. Raises if an
 * entry is not an integer or there are more than LTC_MAX_DIMS. */
int ltcL_checkints(lua_State *L, int *arg, int64_t *out, bool varargs, const char *fname);
/* An int[N] argument (PyTorch's int[2] of conv and pooling): a number (every entry) or a
 * table of 1 (every entry) or N integers, into out[0..n-1]. Nil or absent gives `def` in
 * every entry when has_def, and otherwise leaves `out` alone and returns false (the caller
 * supplies the default); true when a value was read. Raises "<fname>: bad argument #A
 * '<what>' (...)" for anything else. */
bool ltcL_checkfixedints(lua_State *L, int arg, int64_t *out, int n, bool has_def, int64_t def,
                         const char *fname, const char *what);
/* A dtype name ("float32", "float64", "int32", "int64", "bool", or the shorthands "float",
 * "double", "int", "long"); LTC_DTYPE_NONE when the argument is nil or absent and `opt`. */
ltc_dtype ltcL_checkdtype(lua_State *L, int arg, bool opt, const char *fname);
/* A dim or index argument: an integer, not 0 (1-based; negative counts from the end).
 * For `opt`, nil gives LTC_NONE. Raises "<fname>: dim 0 is invalid (dims are 1-based)". */
int64_t ltcL_checkdim(lua_State *L, int arg, bool opt, const char *fname);

/* ---- composite overloads (ops.yaml's `overload_of:` on a composite entry) ----
 * PyTorch's keyword-only arguments come from Lua as a table after the positional ones
 * (t:div(other, {rounding_mode = "trunc"})); the generated dispatcher of the name picks the
 * composite by that table and calls these two. */
/* Replaces the keyword table at `arg` (the top of the stack) by the values of `keywords`
 * (NULL-terminated), in that order, nil for those not given. Raises "<fname>: unknown option
 * '<key>' (expected <keywords>)" for any other key. */
void ltcL_keywords(lua_State *L, int arg, const char *const *keywords, const char *fname);
/* Calls core._overloads[full_name], the Lua function a composite file registered, with the
 * arguments on the stack and returns its results (for `return ltcL_call_overload(...)` in a
 * lua_CFunction). Its errors are raised again at the user's line (ltcL_reraise). */
int ltcL_call_overload(lua_State *L, const char *full_name, const char *fname);
/* Adds core._overloads (full op name -> Lua function, filled by lua/ltc/ops.lua) to the table
 * on top. */
void ltcL_open_overloads(lua_State *L);

/* ---- keyword tables of generated ops (ltc_kwargs.c) ----
 * PyTorch's keyword arguments for every op of ops.yaml: x:sum{dim = 1, keepdim = true},
 * ltc.cat{{a, b}, dim = 2}, x:clamp(0, {max = 1}). The last argument, a table with a string
 * key, holds keywords (its array part continues the positional arguments); they go to the
 * places the schema's argument names give them. The generator emits, for each name, one
 * ltcL_kwoverload per overload. */
typedef struct ltcL_kwoverload {
    lua_CFunction fn;          /* the overload's binding, called with the arguments in place */
    const char *const *names;  /* its schema's argument names, NULL-terminated */
    int n_required;            /* schema position of its last required argument (0: none) */
} ltcL_kwoverload;
/* Whether the last argument is a keyword table: a Lua table with a string key. */
bool ltcL_haskeywords(lua_State *L);
/* Replaces the keyword table (the last argument) by its values in their places for the
 * first overload (of n) that takes all its keys and gets its required arguments (else the
 * first that takes all its keys): its array part, then the named values up to the last one
 * given, nil for the places between. Returns that overload's index. Raises "<fname>: unknown
 * keyword argument '<key>' (expected <names>)" when no overload takes a key, and "<fname>:
 * argument '<name>' given by position and by keyword" when a key names a place already
 * filled. The one implementation of keyword tables: the generated entries reach it through
 * ltcL_kwcall, the Lua-written ops through core._kwbind. */
int ltcL_kwarrange(lua_State *L, const ltcL_kwoverload *ovs, int n, const char *fname);
/* ltcL_kwarrange, then that overload's binding; returns its results. */
int ltcL_kwcall(lua_State *L, const ltcL_kwoverload *ovs, int n, const char *fname);
/* One name's overloads, for core._keywords (name -> a list per overload of its argument
 * names, with n_required) and core._kwbind. */
typedef struct ltcL_kwentry {
    const char *name;
    const ltcL_kwoverload *ovs;
    int n;
} ltcL_kwentry;
/* Sets core._keywords on the table on top from ltc_lua_keywords, and core._kwbind(name, fn
 * [, fname]): a C closure (ltcL_kwbound) that calls fn with its arguments, a last keyword
 * table first put in place by ltcL_kwarrange with the overloads of the op `name`, its errors
 * naming fname (default name). lua/ltc/keywords.lua gives it the ops Lua functions replaced. */
void ltcL_open_keywords(lua_State *L);
/* The closures of core._kwbind. ltcL_where looks through their frames (the user called fn). */
int ltcL_kwbound(lua_State *L);

/* Makes trim syncs of this thread collect this state's garbage first (ltc_trim.c). */
void ltcL_install_trim_gc(lua_State *L);
/* Calls fn when the state closes: registry[key] becomes a userdata whose __gc is fn. With
 * `keep`, a state that has registry[key] already keeps that one (a module opened again, as
 * busted's insulation does, must not leave an old sentinel whose finalizer undoes the new
 * setup); without, the new one replaces it (the old one's __gc runs when it is collected). */
void ltcL_at_close(lua_State *L, const char *key, lua_CFunction fn, bool keep);
/* Collects garbage before a sync from Lua, as LTC_SYNC_GC says: 0 not at all; 1 (default)
 * one step of the collector, a young (minor) collection in the generational mode that
 * luaopen_ltc_core selects; 2 a full collection (also right under the incremental mode, where
 * a step may not reach the dead tensors). */
void ltcL_collect(lua_State *L);

/* Pushes a tensor userdata that takes over the reference `t`. */
void ltcL_pushtensor(lua_State *L, ltc_tensor *t);
/* Raises the core's last error as a Lua error. */
int ltcL_error(lua_State *L);
/* The same, as "<op>: message" unless the message already starts with "<op>:". */
int ltcL_error_prefixed(lua_State *L, const char *op);

/* ltc_construct.c: adds tensor, result_type, _set_ and _strides to the table on top. */
void ltcL_open_construct(lua_State *L);
/* ltc_values.c: adds sync, assign_, fill_, _read_elem and _check_value to the table on top;
 * ltcL_open_value_methods adds item, totable, size, dim, numel, dtype, copy_ and has_value
 * to the methods table on top. The tensor metatable's __len, __index (upvalues: methods, the
 * metatable) and __newindex (upvalue: the metatable) are the three below. */
void ltcL_open_values(lua_State *L);
void ltcL_open_value_methods(lua_State *L);
int ltcL_tensor_len(lua_State *L);
int ltcL_tensor_index(lua_State *L);
int ltcL_tensor_newindex(lua_State *L);
/* ltc_runtime.c: adds the RNG, metrics, config, backend and file functions to that table. */
void ltcL_open_runtime(lua_State *L);
/* ltc_debug.c: adds the debug and config functions to the table on top of the stack and
 * installs the LTC_IR_DEBUG source hook for this state. */
void ltcL_open_debug(lua_State *L);
/* ltc_builtins.c: registers the built-in backends (ltc_builtins.h) and adds the functions
 * only they answer (_blas_core) to that table. */
void ltcL_open_builtins(lua_State *L);
/* ltc_autograd.c: adds core._ag (the autograd engine's functions) to that table and
 * installs the foreign backward (Lua formulas) hook. */
void ltcL_open_autograd(lua_State *L);
/* ltc_device.c: adds backends() (and the device functions) to that table. */
void ltcL_open_device(lua_State *L);
/* ltc_graph.c: adds ltc.Graph, graph_pool_handle, has_graph_impl, ... to that table. */
void ltcL_open_graph(lua_State *L);
/* ltc_gradcheck.c: adds _c_backward and its helpers (the C derivative formulas, for the
 * specs) to that table. */
void ltcL_open_gradcheck(lua_State *L);

/* ltc_optim.c: adds _sgd_ and _adam_ (ltc.optim's steady-state updates in C) to that table. */
void ltcL_open_optim(lua_State *L);
/* core._jit_walk, ltc.jit's guard walk (ltc_jitwalk.c). */
void ltcL_open_jitwalk(lua_State *L);

/* Generated in gen/lua_ops.c: every op's Lua function ({NULL, NULL}-terminated), and the
 * subset that are methods (their first argument is `Tensor self`). */
extern const luaL_Reg ltc_lua_functions[];
extern const luaL_Reg ltc_lua_methods[];
/* Generated from ops.yaml's `operator:` keys: tensor metamethods -> op bindings. */
extern const luaL_Reg ltc_lua_operators[];
/* Generated from ops.yaml's `inplace: true` keys: the op names with a t:<name>_ variant,
 * NULL-terminated (core.inplace_ops; lua/ltc/init.lua makes the methods). */
extern const char *const ltc_lua_inplace[];
/* Generated: the keyword tables of every name with a Lua function ({NULL}-terminated). */
extern const ltcL_kwentry ltc_lua_keywords[];

#endif
