/*
 * ltc_ref.h - the reference backend ("ref"), for the code that wires it in
 * (src/lua/ltc_builtins.c): obvious loops, one kernel per op; the oracle of the specs and the
 * CPU backend's eager fallback.
 */
#ifndef LTC_REF_H
#define LTC_REF_H

#include "ltc_backend.h"

/* The reference backend, static storage: register it with ltc_backend_register. */
ltc_backend *ltc_ref_backend(void);

#endif
