/*
 * ltc.h - the public C API of ltc's core: dtypes, shapes, lazy tensors, sync.
 *
 * The core knows nothing of Lua. Functions that can fail return an ltc_status
 * (LTC_OK == 0) and leave a message in a per-thread buffer read by ltc_last_error().
 * Dimensions and indices in this API are 1-based, as in Lua and Torch7; a negative one
 * counts from the end (-1 is the last), as in PyTorch; 0 is an error. Index-valued tensor
 * data (argmax results, class labels, gather indices) is 1-based too. Kernels and shape
 * functions work with 0-based dims once the generated entry has wrapped them.
 *
 * The op entry points (ltc_add, ltc_matmul, ...) are generated from codegen/ops.yaml
 * into gen/ltc_ops.h, which this header includes at the end.
 */
#ifndef LTC_H
#define LTC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status and errors ------------------------------------------------------------ */

typedef enum {
    LTC_OK = 0,
    LTC_ERR_ARG,   /* bad argument: shape, dtype, dim or value; message says which */
    LTC_ERR_NOMEM, /* an allocation failed */
    LTC_ERR_IO,    /* a file could not be read or written */
    LTC_ERR_BACKEND, /* the backend failed to compile or run a computation */
    LTC_ERR_STATE, /* the call is not allowed in the runtime's current state */
} ltc_status;

/* The message of the last failing call on this thread ("" if none). */
const char *ltc_last_error(void);
/* Sets the thread's error message, printf-style; returns `st` for `return ltc_errorf(...)`. */
ltc_status ltc_errorf(ltc_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefixes the current message with "<op>: " (used by the generated op entries). */
ltc_status ltc_error_prefix(ltc_status st, const char *op);

/* ---- dtypes ----------------------------------------------------------------------- */

typedef enum {
    LTC_F32 = 0, /* float32, the default dtype */
    LTC_F64,     /* float64 */
    LTC_I32,     /* int32 */
    LTC_I64,     /* int64 */
    LTC_BOOL,    /* bool, one byte per element (0 or 1) */
    LTC_DTYPE_COUNT
} ltc_dtype;

/* "float32", "float64", "int32", "int64", "bool". */
const char *ltc_dtype_name(ltc_dtype dt);
/* Short names used in IR text: "f32", "f64", "i32", "i64", "bool". */
const char *ltc_dtype_short(ltc_dtype dt);
/* Parses a dtype name; also accepts Torch7-style shorthands "float", "double", "int",
 * "long". Returns LTC_ERR_ARG for an unknown name. */
ltc_status ltc_dtype_parse(const char *name, ltc_dtype *out);
size_t ltc_dtype_size(ltc_dtype dt);
bool ltc_dtype_is_float(ltc_dtype dt);

/* ---- shapes ----------------------------------------------------------------------- */

#define LTC_MAX_DIMS 8
/* "Absent" value of an optional int argument (schema type `int?` / `dim?`). */
#define LTC_NONE INT64_MIN
/* "Absent" value of an optional dtype argument (schema type `ScalarType?`). */
#define LTC_DTYPE_NONE ((ltc_dtype)-1)

/* The dtype and sizes of a tensor or IR value. Always row-major contiguous. */
typedef struct ltc_shape {
    ltc_dtype dtype;
    int ndim; /* 0 for a scalar (0-d) tensor */
    int64_t dims[LTC_MAX_DIMS];
} ltc_shape;

/* Builds a shape; fails if ndim > LTC_MAX_DIMS, a size is negative, or the byte count
 * overflows. */
ltc_status ltc_shape_make(ltc_shape *out, ltc_dtype dt, int ndim, const int64_t *dims);
int64_t ltc_shape_numel(const ltc_shape *s);
size_t ltc_shape_nbytes(const ltc_shape *s);
bool ltc_shape_equal(const ltc_shape *a, const ltc_shape *b); /* dtype and sizes */
/* Writes "[2,3]" (sizes only) into buf; returns buf. */
char *ltc_shape_str(const ltc_shape *s, char *buf, size_t n);
/* Maps a 1-based or negative dim onto 0..ndim-1 (PyTorch's maybe_wrap_dim, 1-based); a
 * 0-d tensor accepts 1 and -1. Fails with "dim D out of range for a N-d tensor". */
ltc_status ltc_dim_wrap(int64_t dim, int ndim, int *out);

/* ---- lazy tensors ----------------------------------------------------------------- */

typedef struct ltc_tensor ltc_tensor;

/* Reference counting: every function returning a new ltc_tensor * hands the caller one
 * reference; release it with ltc_tensor_release. */
ltc_tensor *ltc_tensor_retain(ltc_tensor *t);
void ltc_tensor_release(ltc_tensor *t);

/* A tensor holding a copy of `host` (contiguous row-major data of shape->dtype). */
ltc_status ltc_tensor_from_host(const ltc_shape *shape, const void *host, ltc_tensor **out);
/* A 0-d tensor from a Lua-style number: an integer gives int64, a float gives float64.
 * `weak` marks a wrapped number for type promotion (PyTorch's wrapped-number rule: a
 * float32 tensor times 0.5 stays float32). Scalars enter graphs as parameters. */
ltc_status ltc_tensor_from_int(int64_t v, bool weak, ltc_tensor **out);
ltc_status ltc_tensor_from_float(double v, bool weak, ltc_tensor **out);

const ltc_shape *ltc_tensor_shape(const ltc_tensor *t);
bool ltc_tensor_is_weak(const ltc_tensor *t);
/* True when the tensor's value is pending IR (not yet computed). */
bool ltc_tensor_is_pending(const ltc_tensor *t);
/* Copies the tensor's values into `host` (ltc_shape_nbytes bytes). Syncs if pending. */
ltc_status ltc_tensor_to_host(ltc_tensor *t, void *host);
/* Reads one element (flat row-major index) as a double / int64. Syncs if pending. */
ltc_status ltc_tensor_read_f64(ltc_tensor *t, int64_t flat, double *out);
ltc_status ltc_tensor_read_i64(ltc_tensor *t, int64_t flat, int64_t *out);

/* ---- sync (mark step) --------------------------------------------------------------- */

/* Computes every live tensor that holds pending IR, as one graph: post order, graph hash,
 * compile-cache look-up (compile on a miss), execute, install the results as backend data.
 * PyTorch LTC: LazyGraphExecutor::SyncLiveTensorsGraph / torch._lazy.mark_step(). */
ltc_status ltc_sync(void);

/* Live-tensor and pending-graph sizes (for ltc.debug.pending and soak tests). */
typedef struct ltc_live_info {
    int64_t live_tensors;   /* ltc_tensor objects alive */
    int64_t pending_tensors; /* of those, holding pending IR */
    int64_t pending_nodes;  /* IR nodes reachable from them */
} ltc_live_info;
void ltc_live_info_get(ltc_live_info *out);

/* Releases what the core keeps between syncs (the compile cache). Call when the last user
 * of the runtime goes away; the runtime stays usable (the next sync recompiles). */
void ltc_shutdown(void);

/* ---- random numbers ----------------------------------------------------------------- */

/* Seeds the default generator (Philox 4x32-10, counter = offset). PyTorch: manual_seed. */
void ltc_manual_seed(uint64_t seed);

/* ---- metrics ------------------------------------------------------------------------ */

/* Counters by name (CachedCompile, UncachedCompile, MarkStep, CreateLtcTensor,
 * DestroyLtcTensor, ...). Unknown names read 0. */
int64_t ltc_counter_value(const char *name);
void ltc_counter_add(const char *name, int64_t delta);
/* Calls fn for every counter that has been touched, in name order. */
void ltc_counter_foreach(void (*fn)(const char *name, int64_t value, void *ud), void *ud);
void ltc_metrics_reset(void);
/* A report in PyTorch LTC's text format; caller frees. NULL on allocation failure. */
char *ltc_metrics_report(void);

/* ---- files ------------------------------------------------------------------------------ */

/* Reads a whole file, decompressing it if it is gzip (zlib). *data is malloc'ed, caller frees.
 * Fails with LTC_ERR_IO naming the path and the reason. */
ltc_status ltc_read_file_gz(const char *path, char **data, size_t *len);

/* NumPy .npy files (npy.c): C order; float32, float64, int32, int64 and bool (little-endian
 * '<f4', '<f8', '<i4', '<i8', '|b1'). ltc_save_npy syncs t if pending and writes version
 * 1.0. ltc_load_npy reads versions 1.0 to 3.0 into a new tensor (one reference); a missing,
 * truncated or malformed file, an unsupported dtype or Fortran order fail with LTC_ERR_IO
 * and a message naming the path and the problem. */
ltc_status ltc_save_npy(const char *path, ltc_tensor *t);
ltc_status ltc_load_npy(const char *path, ltc_tensor **out);

/* ---- configuration -------------------------------------------------------------------- */

/* Reads LTC_* environment variables (done once, lazily, by the first call into the core).
 * LTC_COMPILE_CACHE_SIZE: compiled graphs kept in the LRU compile cache (default 1024). */
void ltc_config_init(void);
int64_t ltc_config_get_int(const char *name);
ltc_status ltc_config_set_int(const char *name, int64_t value);

#ifdef __cplusplus
}
#endif

#include "ltc_ops.h" /* generated: op enum and op entry points */

#endif
