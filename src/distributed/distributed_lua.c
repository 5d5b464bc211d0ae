/* distributed_lua.c - luaopen_ltc_distributed: the C half of `require "ltc.distributed"`
 * (lua/ltc/distributed.lua loads it and builds the user-facing API on it). Functions:
 *   init(check, timeout) -> rank, size      finalize()            is_initialized()
 *   rank(), size()                          barrier()             abort(code)
 *   set_options(check, timeout)             stats() -> {calls, bytes, seconds, wait_seconds,
 *                                                       checks}
 *   reset_stats()                           all_reduce_(t, op), broadcast_(t, root) -> t
 *   _raw_all_reduce(t [, op])
 * Arguments are checked with the core binding's checks (ltc_args.h), so messages read alike.
 * When the Lua state closes (the script ended or raised an error) the module finalizes:
 * see ltc_dist_finalize. */
#include <lauxlib.h>
#include <lua.h>

#include <string.h>

#include "ltc_args.h"
#include "ltc_autograd.h"
#include "ltc_backend.h"
#include "ltc_graph.h"
#include "ltc_ir.h"
#include "ltc_ops.h"
#include "mpi_comm.h"

static int fail(lua_State *L, const char *fn) {
    return luaL_error(L, "ltc.distributed.%s: %s", fn, ltc_last_error());
}

static double opt_timeout(lua_State *L, int idx, const char *fname) {
    double t = ltcL_optnum(L, idx, 300, fname);
    if (!(t > 0))
        luaL_error(L, "%s: the timeout must be a positive number of seconds, got %f", fname, t);
    return t;
}

static int l_init(lua_State *L) {
    bool check = lua_isnoneornil(L, 1) ? true : lua_toboolean(L, 1);
    double timeout = opt_timeout(L, 2, "ltc.distributed.init");
    if (ltc_dist_init(check, timeout)) return fail(L, "init");
    lua_pushinteger(L, ltc_dist_rank());
    lua_pushinteger(L, ltc_dist_size());
    return 2;
}

static int l_set_options(lua_State *L) {
    luaL_checkany(L, 1);
    ltc_dist_set(lua_toboolean(L, 1), opt_timeout(L, 2, "ltc.distributed.set_options"));
    return 0;
}

static int l_finalize(lua_State *L) {
    if (ltc_dist_finalize()) return fail(L, "finalize");
    return 0;
}

static int l_is_initialized(lua_State *L) {
    lua_pushboolean(L, ltc_dist_initialized());
    return 1;
}

static int l_rank(lua_State *L) {
    lua_pushinteger(L, ltc_dist_initialized() ? ltc_dist_rank() : 0);
    return 1;
}

static int l_size(lua_State *L) {
    lua_pushinteger(L, ltc_dist_initialized() ? ltc_dist_size() : 1);
    return 1;
}

static int l_barrier(lua_State *L) {
    if (!ltc_dist_initialized()) return luaL_error(L, "ltc.distributed.barrier: call init() first");
    if (ltc_comm_barrier()) return fail(L, "barrier");
    return 0;
}

static int l_abort(lua_State *L) {
    ltc_dist_abort((int)ltcL_optint(L, 1, 1, "ltc.distributed.abort"));
}

static int l_stats(lua_State *L) {
    ltc_dist_stats s = ltc_dist_get_stats();
    lua_createtable(L, 0, 5);
    lua_pushinteger(L, s.calls);
    lua_setfield(L, -2, "calls");
    lua_pushinteger(L, s.bytes);
    lua_setfield(L, -2, "bytes");
    lua_pushnumber(L, s.seconds);
    lua_setfield(L, -2, "seconds");
    lua_pushnumber(L, s.wait_seconds);
    lua_setfield(L, -2, "wait_seconds");
    lua_pushinteger(L, s.checks);
    lua_setfield(L, -2, "checks");
    return 1;
}

static int l_reset_stats(lua_State *L) {
    (void)L;
    ltc_dist_reset_stats();
    return 0;
}

/* ---- in-place collectives on tensors ------------------------------------------------------- */

/* Whether t's collective may run on its own buffer: t holds its value in host memory (a
 * CPU-family backend) and nothing else uses that buffer (ltc_tensor_owns_data: no view, no
 * pending graph that reads t, no other tensor sharing its value, no value autograd saved). */
static bool runs_in_place(ltc_tensor *t) {
    ltc_data *d = ltc_tensor_data(t);
    return d && d->ptr && d->backend &&
           (!strcmp(d->backend->name, "cpu") || !strcmp(d->backend->name, "ref")) &&
           ltc_tensor_owns_data(t);
}

/* The checks of the op's shape rule that a collective on t's own buffer makes itself (it
 * traces no op): an op number and a floating dtype for avg; a root within the ranks. */
static ltc_status check_in_place(int kind, const ltc_shape *sh, int64_t arg) {
    int size = ltc_comm_size();
    if (kind == LTC_COLL_ALL_REDUCE && (arg < 0 || arg >= LTC_REDUCE_COUNT))
        return ltc_errorf(LTC_ERR_ARG, "all_reduce: op must be 0 (sum), 1 (avg), 2 (max), 3 (min) "
                          "or 4 (prod), got %lld", (long long)arg);
    if (kind == LTC_COLL_ALL_REDUCE && arg == LTC_REDUCE_AVG && !ltc_dtype_is_float(sh->dtype))
        return ltc_errorf(LTC_ERR_ARG, "all_reduce: op avg needs a floating-point tensor, got %s",
                          ltc_dtype_name(sh->dtype));
    if (kind == LTC_COLL_BROADCAST && (arg < 0 || arg >= size))
        return ltc_errorf(LTC_ERR_ARG, "root %lld is out of range for %d rank%s (ranks are 0..%d)",
                          (long long)arg, size, size == 1 ? "" : "s", size - 1);
    return LTC_OK;
}

/* all_reduce_(t, op) and broadcast_(t, root): t takes the collective's result, in place;
 * returns t.
 *
 * With more than one rank the collective runs now, as torch.distributed's does: pending work
 * is synced first (as reading a value syncs), then the collective runs on t's own buffer when
 * runs_in_place says so (no copy, no graph: the op's checks are made here), else it is
 * recorded (the op, then t's value becomes it, as copy_ would) and synced at once. Either way
 * every rank runs it at the same point of its program, whatever is pending, shared or a view
 * on each rank (a rank that filled t before `broadcast(t, 0)` and one that did not agree), and
 * its descriptor reads "collective 1 of 1 in its step" both ways. While this thread captures
 * a graph (ltc.jit) it is recorded only, so that replays repeat it; on one rank (the
 * identity) nothing is synced. */
static int inplace_collective(lua_State *L, int kind) {
    const char *fname = kind == LTC_COLL_ALL_REDUCE ? "ltc.distributed.all_reduce"
                                                    : "ltc.distributed.broadcast";
    ltc_tensor *t = ltcL_checktensor(L, 1, fname);
    int64_t arg = ltcL_checkint(L, 2, fname);
    ltc_status st = LTC_OK;
    ltcL_checknoextra(L, 3, fname);
    bool grad = ltc_set_grad_enabled(false); /* an in-place write under no_grad */
    bool record = ltc_capture_active(), now_too = !record && ltc_comm_size() > 1;
    if (now_too && (st = ltc_sync())) goto fail;
    if (!record && runs_in_place(t)) {
        ltc_data *d = ltc_tensor_data(t);
        const ltc_shape *sh = &d->shape;
        int64_t n = ltc_shape_numel(sh);
        if ((st = check_in_place(kind, sh, arg))) goto fail;
        ltc_comm_plan_begin(1, 0); /* a step of one collective, as the recorded op's sync would be */
        st = kind == LTC_COLL_ALL_REDUCE ? ltc_comm_all_reduce(d->ptr, n, sh->dtype, (int)arg)
                                         : ltc_comm_broadcast(d->ptr, n, sh->dtype, (int)arg);
        ltc_comm_plan_begin(0, 0);
        if (st) goto fail;
        ltc_tensor_install(&t, &d, 1); /* an in-place write: its views recompute */
    } else {
        ltc_tensor *r = NULL;
        st = kind == LTC_COLL_ALL_REDUCE ? ltc_all_reduce(t, arg, &r) : ltc_broadcast(t, arg, &r);
        if (!st) st = ltc_tensor_assign_(t, r);
        ltc_tensor_release(r);
        if (st || (now_too && (st = ltc_sync()))) goto fail;
    }
    ltc_set_grad_enabled(grad);
    lua_settop(L, 1);
    return 1;
fail:
    ltc_set_grad_enabled(grad);
    return luaL_error(L, "%s: %s", fname, ltc_last_error());
}

static int l_all_reduce_(lua_State *L) { return inplace_collective(L, LTC_COLL_ALL_REDUCE); }
static int l_broadcast_(lua_State *L) { return inplace_collective(L, LTC_COLL_BROADCAST); }

/* _raw_all_reduce(t [, op]): MPI_Allreduce in place on t's buffer and nothing else, for the
 * bench's peer figure on the same buffer. t must hold host data (synced). */
static int l_raw_all_reduce(lua_State *L) {
    const char *fname = "ltc.distributed._raw_all_reduce";
    ltc_tensor *t = ltcL_checktensor(L, 1, fname);
    int op = (int)ltcL_optint(L, 2, LTC_REDUCE_SUM, fname);
    ltc_data *d = ltc_tensor_data(t);
    if (!d || !d->ptr)
        return luaL_error(L, "%s: the tensor holds no host data (sync it first)", fname);
    if (ltc_dist_raw_all_reduce(d->ptr, ltc_shape_numel(&d->shape), d->shape.dtype, op))
        return fail(L, "_raw_all_reduce");
    return 0;
}

static int l_at_close(lua_State *L) {
    (void)L;
    ltc_dist_finalize();
    return 0;
}

int luaopen_ltc_distributed(lua_State *L) {
    static const luaL_Reg fns[] = {
        {"init", l_init}, {"set_options", l_set_options}, {"finalize", l_finalize},
        {"is_initialized", l_is_initialized}, {"rank", l_rank}, {"size", l_size},
        {"barrier", l_barrier}, {"abort", l_abort}, {"stats", l_stats},
        {"reset_stats", l_reset_stats}, {"all_reduce_", l_all_reduce_},
        {"broadcast_", l_broadcast_}, {"_raw_all_reduce", l_raw_all_reduce}, {NULL, NULL},
    };
    luaL_newlib(L, fns);
    /* finalize when the state closes: a sentinel in the registry, collected at lua_close.
     * Opened again in the same state (package.loadlib, busted's insulation), the first one
     * stays: a replaced sentinel would be collected and finalize MPI mid-run. */
    if (lua_getfield(L, LUA_REGISTRYINDEX, "ltc.distributed.sentinel") != LUA_TNIL) {
        lua_pop(L, 1);
        return 1;
    }
    lua_pop(L, 1);
    lua_newuserdatauv(L, 1, 0);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, l_at_close);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, "ltc.distributed.sentinel");
    return 1;
}
