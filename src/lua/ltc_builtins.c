/*
 * ltc_builtins.c - wires the built-in backends and graph implementations in (ltc_builtins.h),
 * and the Lua functions that only the built-in CPU backend can answer. The only file outside
 * src/cpu and src/ref that names them: it includes their wiring headers by path, since the
 * binding's include flags do not reach those folders.
 */
#include <pthread.h>
#include <stdio.h>

#include "../cpu/ltc_cpu.h"
#include "../ref/ltc_ref.h"
#include "ltc_builtins.h"
#include "ltc_lua.h"

static void register_once(void) {
    ltc_config_init();
    /* static vtables that satisfy the checks: a failure here is a bug of ours */
    if (ltc_backend_register(ltc_cpu_backend()) || ltc_backend_register(ltc_ref_backend()) ||
        ltc_graph_impl_register("cpu", ltc_cpu_graph_new) ||
        ltc_graph_impl_register_pool_stats("cpu", ltc_cpu_pool_stats))
        fprintf(stderr, "ltc: registering the built-in backends failed: %s\n", ltc_last_error());
}

void ltc_builtins_register(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_once);
}

/* core._blas_core(): the kernels OpenBLAS uses ("SkylakeX", ...; see src/cpu/threads.h), for
 * make bench, which gives the peers that use OpenBLAS the same (OPENBLAS_CORETYPE). */
static int l_blas_core(lua_State *L) {
    lua_pushstring(L, ltc_cpu_blas_core());
    return 1;
}

void ltcL_open_builtins(lua_State *L) {
    ltc_builtins_register();
    lua_pushcfunction(L, l_blas_core);
    lua_setfield(L, -2, "_blas_core");
}
