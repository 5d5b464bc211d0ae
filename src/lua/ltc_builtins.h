/*
 * ltc_builtins.h - the one place that wires the built-in backends and graph implementations
 * into the registries (ltc_builtins.c). src/core and src/backend name no concrete backend;
 * whoever opens the runtime calls this first: the Lua module at open, the fuzz harnesses.
 */
#ifndef LTC_BUILTINS_H
#define LTC_BUILTINS_H

/* Reads the configuration (LTC_* variables), then registers "cpu" (the default backend),
 * "ref" (the reference backend: the specs' oracle and the CPU backend's eager fallback) and
 * the "cpu" graph implementation with its pool statistics. Once per process, whichever
 * thread comes first; later calls return at once. */
void ltc_builtins_register(void);

#endif
