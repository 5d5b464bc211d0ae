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
/* Which node of a computation failed: a backend whose execute fails at one node calls
 * ltc_error_set_node with that node's index in the lowering context's post order; the
 * executor resets it to -1 before each execute and reads it after a failure, so that only
 * the nodes that depend on the failing one lose their value (executor.c). -1: unknown. */
void ltc_error_set_node(int post_index);
int ltc_error_node(void);

/* User-facing op names for runtime errors (PyTorch LTC keeps the user's op in node
 * metadata). A composite op (written over other ops, such as index_fill over one_hot) is
 * traced between ltc_op_scope_enter(name, hint) and ltc_op_scope_exit(); every node made
 * meanwhile on this thread carries the outermost scope's name (nested scopes count depth
 * only, except that one of the outermost's own name may add its hint, kept until the
 * outermost exits: ltc.nn.functional's wrapper names binary_cross_entropy, whose body adds
 * what its check means). When such a node fails while the graph runs ("one_hot: index 5 out of range ..."),
 * the sync's error names the user's op instead: "index_fill: index 5 out of range ...",
 * with the hint, if any, after the name ("masked_scatter: <hint>: index 7 ..."). The name
 * is not part of any hash: a cached computation serves both. Enter fails only when out of
 * memory (the scope still counts, so exit stays paired). */
ltc_status ltc_op_scope_enter(const char *name, const char *hint);
void ltc_op_scope_exit(void);
/* A scope's label made once (interned "name" and "name: hint"), for callers that enter the
 * same scope often: ltc_op_scope_enter_label(l) is ltc_op_scope_enter(name, hint) without
 * the formatting and interning. Make fails only when out of memory; the strings are static. */
typedef struct ltc_op_label {
    const char *name;  /* interned name */
    const char *label; /* interned "name: hint", or name without a hint */
} ltc_op_label;
ltc_status ltc_op_label_make(const char *name, const char *hint, ltc_op_label *out);
void ltc_op_scope_enter_label(const ltc_op_label *l);
/* The current outermost scope's interned label ("name" or "name: hint"), NULL if none. */
const char *ltc_op_scope_label(void);

/* ---- dtypes ----------------------------------------------------------------------- */

typedef enum {
    LTC_F32 = 0, /* float32, the default dtype */
    LTC_F64,     /* float64 */
    LTC_I32,     /* int32 */
    LTC_I64,     /* int64 */
    LTC_BOOL,    /* bool, one byte per element (0 or 1) */
    /* The narrow dtypes: stored in their own width; the kernels only load, store and convert
     * them (to, views, device data). Every other op on them is traced as cast up to the
     * compute dtype (ltc_dtype_compute), the op, cast back down (ltc_trace in trace.c). */
    LTC_U8,      /* uint8 */
    LTC_I8,      /* int8 */
    LTC_I16,     /* int16 */
    LTC_F16,     /* float16 (IEEE half) */
    LTC_BF16,    /* bfloat16 (the top half of a float32) */
    LTC_DTYPE_COUNT
} ltc_dtype;

/* "float32", "float64", "int32", "int64", "bool", "uint8", "int8", "int16", "float16",
 * "bfloat16". */
const char *ltc_dtype_name(ltc_dtype dt);
/* v as the shortest %g text that reads back as the same value of dtype dt (float32: as a
 * float; other dtypes: as a double), "nan" for any NaN; for error messages naming a value
 * (1.0000001 outside [0, 1] must not print as 1). Writes buf (32 bytes) and returns it. */
const char *ltc_value_text(char buf[32], double v, ltc_dtype dt);
/* Short names used in IR text: "f32", "f64", "i32", "i64", "bool", "u8", "i8", "i16", "f16",
 * "bf16". */
const char *ltc_dtype_short(ltc_dtype dt);
/* Parses a dtype name; also accepts Torch7/PyTorch shorthands "float", "double", "int",
 * "long", "byte", "char", "short", "half". Returns LTC_ERR_ARG for an unknown name. */
ltc_status ltc_dtype_parse(const char *name, ltc_dtype *out);
size_t ltc_dtype_size(ltc_dtype dt);
bool ltc_dtype_is_float(ltc_dtype dt); /* float32, float64, float16, bfloat16 */
/* Whether dt is one of the narrow dtypes (uint8, int8, int16, float16, bfloat16). */
bool ltc_dtype_is_narrow(ltc_dtype dt);
/* The dtype ops compute a narrow dtype in: float32 for float16 and bfloat16, int32 for
 * uint8, int8 and int16 (the result wraps on the cast back, as PyTorch's); dt otherwise. */
ltc_dtype ltc_dtype_compute(ltc_dtype dt);
/* The default dtype (PyTorch's torch.get_default_dtype): the dtype of tensors made from Lua
 * numbers, of creation ops given no dtype (zeros, ones, full, rand, randn, float arange,
 * linspace, eye, scalar_tensor), of a Lua float number in type promotion, and of integer
 * operands promoted to a float (sqrt, mean). float32 at start; one for the process. */
ltc_dtype ltc_default_dtype(void);
/* Sets it (torch.set_default_dtype): float32, float64, float16 or bfloat16; LTC_ERR_ARG
 * for any other dtype. */
ltc_status ltc_set_default_dtype(ltc_dtype dt);

/* float16 and bfloat16 from and to float32 bits, as PyTorch converts (c10/util/Half.h,
 * BFloat16.h): round to nearest even, NaN stays NaN, overflow gives infinity. */
static inline float ltc_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) bits = sign | 0x7f800000u | (man << 13);
    else if (exp) bits = sign | ((exp + 112) << 23) | (man << 13);
    else if (!man) bits = sign;
    else { /* subnormal: normalise */
        int e = -1;
        do { e++; man <<= 1; } while (!(man & 0x400));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
    }
    union { uint32_t u; float f; } v = {bits};
    return v.f;
}
static inline uint16_t ltc_f32_to_f16(float f) {
    union { float f; uint32_t u; } v = {f};
    uint32_t x = v.u, sign = (x >> 16) & 0x8000, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00 | ((ax >> 13) & 0x3ff)); /* NaN */
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds past 65504: inf */
    if (ax < 0x38800000u) { /* below the smallest normal half: a subnormal or 0 */
        if (ax < 0x33000000u) return (uint16_t)sign; /* below half the smallest subnormal */
        uint32_t e = ax >> 23, m = (ax & 0x7fffff) | 0x800000, sh = 126 - e; /* 14..24 */
        uint32_t r = m >> sh, rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ax + 0xfff + ((ax >> 13) & 1); /* round to nearest even at bit 13 */
    return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}
static inline float ltc_bf16_to_f32(uint16_t b) {
    union { uint32_t u; float f; } v = {(uint32_t)b << 16};
    return v.f;
}
static inline uint16_t ltc_f32_to_bf16(float f) {
    union { float f; uint32_t u; } v = {f};
    if ((v.u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0; /* NaN: PyTorch's one quiet NaN */
    return (uint16_t)((v.u + 0x7fff + ((v.u >> 16) & 1)) >> 16);
}

/* Element i of dtype dt at p, as a double or an int64 (floats truncate toward zero, as C
 * casts); and the store of a double or int64 into it with PyTorch's conversion (float16 and
 * bfloat16 through float32; a double into int32 or narrower through int32, INT32_MIN when out
 * of its range, then wrapping to the width, as PyTorch's casts on x86: 300.0 to uint8 is 44,
 * 1e10 is 0; bool is v != 0). */
double ltc_dtype_load_f64(const void *p, ltc_dtype dt, int64_t i);
int64_t ltc_dtype_load_i64(const void *p, ltc_dtype dt, int64_t i);
void ltc_dtype_store_f64(void *p, ltc_dtype dt, int64_t i, double v);
void ltc_dtype_store_i64(void *p, ltc_dtype dt, int64_t i, int64_t v);
/* Element si of (src, sd) into element di of (dst, dd), converted as ltc.to converts. */
void ltc_dtype_convert_elem(void *dst, ltc_dtype dd, int64_t di, const void *src, ltc_dtype sd,
                            int64_t si);
/* Whether a value converts to dt without overflow, as PyTorch checks a value given at a
 * tensor's creation ("value cannot be converted to type int32_t without overflow"): an
 * integer dtype takes integers (or floats) inside its range, never NaN or an infinity;
 * float32 takes every value but finite ones beyond its largest (which would become inf);
 * float64 and bool take everything. ltc_dtype_fits_f64 is for a float value, _i64 for an
 * integer one. Inside arithmetic, integers wrap around as in PyTorch (no check there). */
bool ltc_dtype_fits_f64(double v, ltc_dtype dt);
bool ltc_dtype_fits_i64(int64_t v, ltc_dtype dt);
/* LTC_ERR_ARG with "value <v> cannot be converted to <dt> without overflow" unless the value
 * fits (the caller prefixes its op). The _i64 variant for integer values. */
ltc_status ltc_dtype_check_f64(double v, ltc_dtype dt);
ltc_status ltc_dtype_check_i64(int64_t v, ltc_dtype dt);
/* The same check for the one element of dtype src at p, converted to dst. */
ltc_status ltc_dtype_check_elem(const void *p, ltc_dtype src, ltc_dtype dst);

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
/* The check behind ltc_shape_make, for a shape built in place (a shape rule's output): the
 * dtype is valid, 0 <= ndim <= LTC_MAX_DIMS, no size is negative, and the product of the
 * non-zero sizes times the element size fits in int64 (overflow-safe arithmetic). Every IR
 * node's output shapes pass through it (ltc_node_new), so no rule can hand a kernel a size
 * whose element or byte count wraps. Fails with LTC_ERR_ARG naming the sizes. */
ltc_status ltc_shape_check(const ltc_shape *s);
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
ltc_status ltc_tensor_from_bool(bool v, bool weak, ltc_tensor **out); /* a bool 0-d tensor */
/* A weak float64 0-d tensor for a number passed to one op call (a binding's argument): the
 * caller passes it to that one op and then only releases it. The op's type promotion may then
 * convert it in place to float32 (what a float32 op makes of it anyway) instead of making a
 * second tensor; the op (and what it records for backward) sees the converted scalar. */
ltc_status ltc_tensor_from_float_operand(double v, ltc_tensor **out);

const ltc_shape *ltc_tensor_shape(const ltc_tensor *t);
bool ltc_tensor_is_weak(const ltc_tensor *t);
/* True when the tensor's value is pending IR (not yet computed). */
bool ltc_tensor_is_pending(const ltc_tensor *t);
/* False when the sync that was to compute t failed and t had no earlier value to go back to
 * (using t raises that sync's error). */
bool ltc_tensor_has_value(const ltc_tensor *t);
/* The number of view ops recorded from t's base to t (0 for a tensor that is not a view).
 * Steps that compose are merged (narrows of one dim, reshapes, a transpose undone), so a
 * chain of such views does not grow it. For ltc.debug.view_steps and the specs. */
int ltc_tensor_view_steps(const ltc_tensor *t);
/* Whether t's device computes t's pending op itself: false when its backend's `lowers` slot
 * refuses the node (the core's eager fallback would run it on another backend); true for a
 * computed tensor and on a backend that lowers everything (the CPU). For modules that pick
 * between a fused op and a composite of ops (ltc.nn.LSTM) and ltc.debug.lowered. */
bool ltc_tensor_lowered(const ltc_tensor *t);
/* In-place writes (PyTorch's Tensor.copy_ and the `_` ops). Both are seen by t's base and
 * every other view of it; values are recorded lazily like any op.
 * ltc_tensor_copy_: t's values become src broadcast to t's shape and cast to t's dtype.
 * ltc_tensor_assign_: t's value becomes `value` (same sizes; cast to t's dtype unless that
 * would lose the category, e.g. a float result into an int tensor, which is an error). */
ltc_status ltc_tensor_copy_(ltc_tensor *t, ltc_tensor *src);
ltc_status ltc_tensor_assign_(ltc_tensor *t, ltc_tensor *value);
/* Torch7's / PyTorch's resize_ underneath: t (not a view) takes value's sizes and value
 * (same dtype), in place; t's views then raise when read ("its base was resized"). A failed
 * sync of the new value leaves t failed rather than restored. LTC_ERR_ARG for a view or
 * another dtype. */
ltc_status ltc_tensor_set_(ltc_tensor *t, ltc_tensor *value);
/* PyTorch's `param.data = value` (what nn.Module.to does to each parameter): t (not a view)
 * takes value's sizes, dtype, device and data in place, keeping its identity and autograd
 * state (requires_grad, grad, hooks), so an optimizer holding t keeps updating it. value
 * must be computed (not pending): LTC_ERR_ARG otherwise, and for a view. t's views then
 * raise when read, as after resize_. */
ltc_status ltc_tensor_rebind(ltc_tensor *t, ltc_tensor *value);
/* How many ltc_tensor_set_ and ltc_tensor_rebind calls there were (also counter
 * "TensorRebind"): a graph replay and ltc.jit compare it with its capture's, as a tensor the
 * graph reads may then have another shape, dtype or device. */
int64_t ltc_tensor_rebinds(void);
/* The strides and storage offset (in elements) PyTorch would give t: those of its view ops
 * applied to its contiguous base (strides.c). False when no strides express t (a `view` of
 * a non-contiguous tensor, which ltc allows and PyTorch refuses). */
bool ltc_tensor_strides(const ltc_tensor *t, int64_t *strides, int64_t *offset);
/* PyTorch's computeStride: the strides of `old` (with strides ost) reshaped to ndims[nnd]
 * as a view, into nst; false when a view cannot express it (reshape must copy). */
bool ltc_strides_reshape(const ltc_shape *old, const int64_t *ost, const int64_t *ndims, int nnd,
                         int64_t *nst);

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

/* Bytes of backend data that syncs have computed since the process started (every output
 * of every executed computation, on any thread). A binding that frees tensors from a
 * garbage collector can use it to collect fully once much new data has appeared (the Lua
 * binding does, see LTC_SYNC_GC). */
int64_t ltc_computed_bytes(void);

/* Live-tensor and pending-graph sizes (for ltc.debug.pending and soak tests). */
typedef struct ltc_live_info {
    int64_t live_tensors;   /* ltc_tensor objects alive */
    int64_t pending_tensors; /* of those, holding pending IR */
    int64_t pending_nodes;  /* IR nodes reachable from them */
} ltc_live_info;
void ltc_live_info_get(ltc_live_info *out);

/* Installs, for this thread, a function that runs just before a trim sync (the automatic
 * sync past LTC_TRIM_GRAPH_SIZE traced nodes). The Lua binding uses it to collect garbage,
 * so that unreachable tensors do not join the graph as roots. NULL removes it. It must not
 * trace ops; it may release tensors. */
void ltc_set_trim_hook(void (*fn)(void *ud), void *ud);

/* Releases what the core keeps between syncs (the compile cache). Call when the last user
 * of the runtime goes away; the runtime stays usable (the next sync recompiles). */
void ltc_shutdown(void);

/* ---- random numbers ----------------------------------------------------------------- */

/* Seeds the default generator (Philox 4x32-10, counter = offset). PyTorch: manual_seed. */
void ltc_manual_seed(uint64_t seed);
/* A new 1-d int64 [2] tensor {seed, offset} holding the default generator's state, then
 * advances the offset past `numel` draws (counters). Random ops take it as their last
 * operand; an op that takes it as a schema argument (scaled_dot_product_attention.dropout)
 * gets it from here. The caller owns *out. Under capture, replays make it afresh. */
ltc_status ltc_rng_state_tensor(int64_t numel, ltc_tensor **out);

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

/* Reads an IDX file (the MNIST format; gzip or not, idx.c) into a new tensor of `dtype` with
 * the file's sizes; each value becomes value * scale + offset (scale 1/255 for pixels in
 * [0, 1], offset 1 for 1-based labels). Fails with LTC_ERR_IO on a bad or truncated file. */
ltc_status ltc_read_idx(const char *path, ltc_dtype dtype, double scale, double offset,
                        ltc_tensor **out);

/* NumPy .npy files (npy.c): every dtype ('<f4', '<f8', '<i4', '<i8', '|b1', '|u1', '|i1',
 * '<i2', '<f2'; bfloat16 is written as '<f4'). ltc_save_npy syncs t if pending and writes
 * version 1.0, little-endian, C order. ltc_load_npy reads versions 1.0 to 3.0 in either byte
 * order and C or Fortran order (converted on load) into a new tensor (one reference); a
 * missing, truncated or malformed file or an unsupported dtype fail with LTC_ERR_IO and a
 * message naming the path and the problem. */
ltc_status ltc_save_npy(const char *path, ltc_tensor *t);
ltc_status ltc_load_npy(const char *path, ltc_tensor **out);
/* The same in memory (the members of a .npz archive, ltc.io): ltc_save_npy_bytes returns a
 * malloc'd buffer (*out, *len; the caller frees it); ltc_load_npy_bytes reads `len` bytes,
 * naming them `name` in errors. */
ltc_status ltc_save_npy_bytes(ltc_tensor *t, char **out, size_t *len);
ltc_status ltc_load_npy_bytes(const void *bytes, size_t len, const char *name, ltc_tensor **out);

/* ---- configuration -------------------------------------------------------------------- */

/* Reads LTC_* environment variables (done once, lazily, by the first call into the core).
 * LTC_COMPILE_CACHE_SIZE: compiled graphs kept in the LRU compile cache (default 1024).
 * An environment value that does not parse or is out of range is ignored (default kept). */
void ltc_config_init(void);
/* An integer option's value; 0 for an unknown name or a string option. */
int64_t ltc_config_get_int(const char *name);
/* The value slot of an integer option (NULL for an unknown name): stable for the process,
 * it always holds the current value. For hot paths (a sync, a plan run, a kernel launch),
 * which look the name up once and then read the slot. */
int64_t *ltc_config_slot(const char *name);
/* Sets an integer option. LTC_ERR_ARG for an unknown name, a string option, or a value out
 * of the option's range (the message gives the range). */
ltc_status ltc_config_set_int(const char *name, int64_t value);
/* A hash of the options a backend reads when it compiles a graph (LTC_FUSION, LTC_BATCH_STEPS,
 * LTC_GEMM_EPILOGUE). Every graph hash mixes it in, so setting such an option at run time
 * reaches graphs already in the compile cache (they compile again under the new value, and
 * setting it back finds the earlier computation). A captured graph keeps the computation it
 * was captured with. */
uint64_t ltc_config_compile_key(void);
/* A string option's value (LTC_SAVE_GRAPHS, LTC_SAVE_GRAPHS_FMT), borrowed: valid until the
 * option is next set. NULL for an unknown name or an integer option. "" when unset. */
const char *ltc_config_get_str(const char *name);
/* Sets a string option (the core keeps a copy). LTC_ERR_ARG for an unknown name, an integer
 * option or a value the option does not accept (LTC_SAVE_GRAPHS_FMT: "text" or "dot");
 * LTC_ERR_NOMEM if the copy cannot be made. */
ltc_status ltc_config_set_str(const char *name, const char *value);

/* One configuration option, for listing them (ltc.config.list()). Strings are borrowed. */
typedef struct ltc_config_entry {
    const char *name;
    const char *doc;
    bool is_str;
    int64_t value, min, max; /* integer options */
    const char *str;         /* string options: the value ("" when unset) */
} ltc_config_entry;
/* The i-th option (0-based, in table order); false past the last one. */
bool ltc_config_entry_get(int i, ltc_config_entry *out);

/* ---- debugging: IR dumps, backend text, recompile explanations ----------------------------- */

/* The pending IR of the given tensors (n >= 1, borrowed), or of every live tensor with pending
 * IR when ts is NULL (the graph the next sync computes), as text: a header line, then one node
 * a line in post order, "%5 = mul(%3, %4) f32[128,64]", attributes named from the op's schema
 * with dims 1-based ("sum(%2, dim=2, keepdim=true)"), parameters marked "param #k" (0-d ones
 * with their value), the roots "root #k", and "-- file:line" when the node was traced with
 * LTC_IR_DEBUG=1. *out is malloc'ed, the caller frees. Traces nothing, runs nothing; a given
 * tensor that holds data appears as its parameter. Errors: LTC_ERR_ARG (n < 1), NOMEM. */
ltc_status ltc_debug_ir_text(ltc_tensor *const *ts, int n, char **out);
/* The same graph as Graphviz DOT (`digraph ltc { ... }`); as ltc_debug_ir_text. */
ltc_status ltc_debug_ir_dot(ltc_tensor *const *ts, int n, char **out);
/* The default backend's text of the computation for that graph (its computation_text: steps,
 * buffers, sizes), without running it: taken from the compile cache when the graph's hash is
 * there, else compiled for this call and freed (not cached, not counted as a compile).
 * Errors as ltc_debug_ir_text, plus LTC_ERR_STATE when the backend has no text and the
 * backend's compile errors. */
ltc_status ltc_debug_backend_text(ltc_tensor *const *ts, int n, char **out);
/* One node of a graph exported by ltc_debug_graph_export, in post order. */
typedef struct ltc_debug_node {
    const char *op;       /* the op's name (static) */
    const char *attrs;    /* "dim=2, keepdim=true" as ltc_debug_ir_text prints them, or "" */
    const char *shape;    /* "f32[2,3]", or "(f32[2], i64[2])" for several outputs */
    const char *source;   /* "file:line" (LTC_IR_DEBUG), or NULL */
    const void *id;       /* the node's identity, as ltc_debug_tensor_ids gives it */
    const void *data;     /* a parameter's device data identity, else NULL */
    int param;            /* position among the graph's parameters, or -1 */
    int root;             /* the first root it is (0-based), or -1 */
    int ndim;             /* dimensions of output 0 */
    bool has_value;       /* a 0-d parameter whose value was read: value */
    double value;
    int n_operands;
    const int32_t *operands; /* node index * 256 + output index, n_operands */
} ltc_debug_node;

typedef struct ltc_debug_graph {
    char *header;         /* "graph: 4 nodes, 2 parameters, 1 root; hash ..." */
    int n_nodes;
    ltc_debug_node *nodes;
    void *pool;           /* the strings and operands the nodes point into */
} ltc_debug_graph;

/* The pending graph of the tensors (as ltc_debug_ir_text) as data, for drawing it (ltc.debug.
 * dot with options, ltc.debug.render). *out is the caller's: free with ltc_debug_graph_free.
 * Errors as ltc_debug_ir_text. */
ltc_status ltc_debug_graph_export(ltc_tensor *const *ts, int n, ltc_debug_graph **out);
void ltc_debug_graph_free(ltc_debug_graph *g);
/* The identities a tensor's node and device data have in an export (NULL when it has none). */
void ltc_debug_tensor_ids(const ltc_tensor *t, const void **node, const void **data);

/* Why the last compile-cache miss happened: the graph against the nearest of the last 8
 * compiled graphs, aligned by a diff of the two post orders keyed by op and source line
 * (Myers), naming the first real difference with its source line ("first difference: node %0
 * device_data: shape f32[64,4] now f32[32,4]"), the first differing nodes and the diff as
 * text; or that the same graph was evicted. Compiles are numbered from 1 after
 * ltc_metrics_reset. Made when asked for. Malloc'ed, caller frees; NULL on allocation failure. */
char *ltc_debug_explain_recompile(void);
/* Forgets the compiled-graph signatures and the last explanation. */
void ltc_debug_reset(void);

/* Source locations of nodes: when LTC_IR_DEBUG is 1, each new node (except parameters) asks
 * the hook for the location of the code that traced it ("file:line", written into buf of n
 * bytes; return false for none). The core keeps one interned copy of each distinct string
 * (node->source, never freed). The hook must not call into the core. NULL removes it. */
typedef bool (*ltc_source_fn)(void *ud, char *buf, size_t n);
void ltc_debug_set_source_hook(ltc_source_fn fn, void *ud);
/* The installed hook and its ud (NULL if none). */
ltc_source_fn ltc_debug_source_hook(void **ud);

#ifdef __cplusplus
}
#endif

#include "ltc_autograd.h" /* autograd: grad mode, backward */
#include "ltc_ops.h" /* generated: op enum and op entry points */

#endif
