/*
 * ltc_args.h - argument checks for Lua bindings of ltc: the core's own binding (ltc_lua.c,
 * the generated gen/lua_ops.c) and outside modules (src/distributed/, a plug-in backend's
 * Lua functions), so that every binding raises the same messages. Installed with the
 * public headers (`pkg-config --cflags ltc`); the functions live in core.so.
 *
 * Each check raises a Lua error naming the function and the argument, e.g.
 * "all_reduce: bad argument #2 (integer expected, got string)". Unlike luaL_checkinteger,
 * whose message names the function only when Lua's call info knows it ("bad argument #2 to
 * '?'" once a Lua wrapper tail-calls the binding), these name `fname`.
 */
#ifndef LTC_ARGS_H
#define LTC_ARGS_H

#include <lauxlib.h>
#include <lua.h>

#include "ltc.h"

/* The tensor at `arg` (raises "<fname>: bad argument #N (ltc.Tensor expected, got T)", or
 * "(the tensor was closed)"). Defined in ltc_lua.c, beside the tensor metatable. */
ltc_tensor *ltcL_checktensor(lua_State *L, int arg, const char *fname);
/* The tensor at `arg`, or NULL if it is not one. Defined in ltc_lua.c. */
ltc_tensor *ltcL_testtensor(lua_State *L, int arg);

/* int, int? and float arguments (ltc_args.c): an integer / a number; the opt variants give
 * `def` for nil or absent. Raise "<fname>: bad argument #N (integer expected, got T)"; a
 * float argument given a Lua integer without an exact double (past 2^53) raises too. */
int64_t ltcL_checkint(lua_State *L, int arg, const char *fname);
int64_t ltcL_optint(lua_State *L, int arg, int64_t def, const char *fname);
double ltcL_checknum(lua_State *L, int arg, const char *fname);
double ltcL_optnum(lua_State *L, int arg, double def, const char *fname);
/* A Tensor[] argument must be a table (its entries are checked by ltcL_checkoperands). */
void ltcL_checklist(lua_State *L, int arg, const char *fname);
/* Raises "<fname>: too many arguments (...)" if a non-nil value sits at `arg` or after it
 * (`arg` is the first position past the function's arguments). A one-argument function
 * called with its argument twice is accepted: that is how Lua calls __unm. */
void ltcL_checknoextra(lua_State *L, int arg, const char *fname);

#endif
