/*
 * ltc_trim.c - garbage collection before syncs (LTC_SYNC_GC): before every sync that Lua asks
 * for, and before each trim sync. Tensors that are unreachable but not yet finalized would
 * otherwise be computed as roots (a graph, and a hash, that depend on the collector's
 * timing: recompiles) and keep their buffers until the collector gets to them.
 */
#include "ltc_lua.h"

/* See ltc_lua.h. A full collection visits the whole Lua heap (about 90 us a step in the
 * mlp-step benchmark, a fifth of the step); a young collection of the generational mode
 * visits only what was made since the previous one, which is where a step's dead tensors
 * are: a tensor that survives two collections was computed at a sync (every sync computes
 * all live pending tensors), so if it dies later it holds data and is not a root. */
/* A young collection is not always enough, for two reasons, and then a full one runs:
 * - Lua's own major collections do not come to the rescue: an explicit step clears the GC
 *   debt that its "time for a major?" test requires, and the young collection then pushes
 *   the debt far below zero, so with a step per sync old garbage was never collected (the
 *   heap grew 4 MB per 1000 mlp-step iterations and the step slowed from 0.6 to 1 ms). So a
 *   full collection runs once the heap has doubled since the last full one (Lua's default
 *   major multiplier is 100%).
 * - Lua does not see the backend data a tensor holds: a dead tensor that has grown old
 *   (`y = nil; y = f(a); ltc.sync()` in a loop: the old y survived two collections) keeps
 *   its buffer until a full collection, which raised the chain's peak memory by a whole
 *   output (1.00x to 1.25x). So a full collection also runs once syncs have computed
 *   FULL_GC_BYTES of new data since the last one: at most that much waits for the collector,
 *   and a full collection (~0.1 ms for a small heap) is cheap next to computing it. */
#define FULL_GC_BYTES ((int64_t)64 << 20)
static _Thread_local int heap_base_kb;     /* the Lua heap after the last full collection */
static _Thread_local int64_t computed_base; /* ltc_computed_bytes() then */

void ltcL_collect(lua_State *L) {
    static int64_t *slot;
    if (!slot) slot = ltc_config_slot("LTC_SYNC_GC");
    int64_t mode = *slot;
    if (mode == 0) return;
    int64_t computed = ltc_computed_bytes();
    if (mode == 1 && lua_gc(L, LUA_GCCOUNT) < 2 * heap_base_kb &&
        computed - computed_base < FULL_GC_BYTES) {
        lua_gc(L, LUA_GCSTEP, 0);
        return;
    }
    lua_gc(L, LUA_GCCOLLECT);
    heap_base_kb = lua_gc(L, LUA_GCCOUNT);
    if (heap_base_kb < 256) heap_base_kb = 256;
    computed_base = computed;
}

/* The Lua state whose collector the hook runs (one per OS thread, as the core's hook). */
static _Thread_local lua_State *trim_state;

static void collect(void *ud) {
    (void)ud;
    if (trim_state) ltcL_collect(trim_state);
}

/* The state is closing: the hook must not touch it any more. */
static int trim_close(lua_State *L) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    if (trim_state == lua_tothread(L, -1)) {
        ltc_set_trim_hook(NULL, NULL);
        trim_state = NULL;
    }
    return 0;
}

void ltcL_install_trim_gc(lua_State *L) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    trim_state = lua_tothread(L, -1);
    lua_pop(L, 1);
    ltc_set_trim_hook(collect, NULL);
    ltcL_at_close(L, "ltc.trim_sentinel", trim_close, true);
}
