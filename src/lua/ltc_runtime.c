/*
 * ltc_runtime.c - the runtime's functions that are not about one tensor: the default
 * generator (manual_seed, _rng_state), metrics and config (counters, report, reset,
 * config_get/set, live_info, clock), backends (set_backend, get_backend), files (save, load,
 * npy bytes, read_gz, read_idx, crc32, inflate), and small checks for lua/ltc (is_tensor,
 * typename, _any_bool, _bad_arg). ltcL_open_runtime adds them to the core table.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "ltc_backend.h"
#include "ltc_graph.h"
#include "ltc_lua.h"

static int l_manual_seed(lua_State *L) {
    ltc_manual_seed((uint64_t)luaL_checkinteger(L, 1));
    return 0;
}

/* core._rng_state(numel): the default generator's state {seed, offset} as an int64 [2]
 * tensor, the offset then advanced past numel counters (an op that takes the state as an
 * argument: scaled_dot_product_attention.dropout). */
static int l_rng_state(lua_State *L) {
    lua_Integer n = luaL_checkinteger(L, 1);
    if (n < 0) return luaL_error(L, "_rng_state: numel must be >= 0, got %d", (int)n);
    ltc_tensor *t = NULL;
    if (ltc_rng_state_tensor((int64_t)n, &t)) return ltcL_error(L);
    ltcL_pushtensor(L, t);
    return 1;
}

static int l_counter(lua_State *L) {
    lua_pushinteger(L, ltc_counter_value(luaL_checkstring(L, 1)));
    return 1;
}

static void push_name(const char *name, int64_t value, void *ud) {
    (void)value;
    lua_State *L = ud;
    lua_pushstring(L, name);
    lua_rawseti(L, -2, (lua_Integer)luaL_len(L, -2) + 1);
}

static int l_counter_names(lua_State *L) {
    lua_newtable(L);
    ltc_counter_foreach(push_name, L);
    return 1;
}

static int l_report(lua_State *L) {
    char *r = ltc_metrics_report();
    if (!r) return luaL_error(L, "metrics.report: out of memory");
    lua_pushstring(L, r);
    free(r);
    return 1;
}

static int l_reset(lua_State *L) {
    (void)L;
    ltc_metrics_reset();
    return 0;
}

static int l_config_get(lua_State *L) {
    lua_pushinteger(L, ltc_config_get_int(luaL_checkstring(L, 1)));
    return 1;
}

static int l_config_set(lua_State *L) {
    if (ltc_config_set_int(luaL_checkstring(L, 1), luaL_checkinteger(L, 2)))
        return luaL_error(L, "config: %s", ltc_last_error());
    return 0;
}

static int l_live_info(lua_State *L) {
    ltc_live_info info;
    ltc_live_info_get(&info);
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, info.live_tensors);
    lua_setfield(L, -2, "live_tensors");
    lua_pushinteger(L, info.pending_tensors);
    lua_setfield(L, -2, "pending_tensors");
    lua_pushinteger(L, info.pending_nodes);
    lua_setfield(L, -2, "pending_nodes");
    return 1;
}

/* ltc.clock(): seconds from a monotonic clock, as a float (wall time; for benchmarks and
 * progress lines: os.clock counts CPU time of every thread). */
static int l_clock(lua_State *L) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
    return 1;
}

static int l_is_tensor(lua_State *L) {
    lua_pushboolean(L, ltcL_testtensor(L, 1) != NULL);
    return 1;
}

/* core.typename(v): "ltc.Tensor", "a closed ltc.Tensor" (closed by t:close() or a <close>
 * variable) or v's Lua type name, for argument errors of the Lua-written functions. */
static int l_typename(lua_State *L) {
    luaL_checkany(L, 1);
    lua_pushstring(L, ltcL_typename(L, 1));
    return 1;
}

/* core.crc32(s [, crc]): the CRC-32 of string s (zlib's crc32, as zip archives use),
 * continuing from crc when given (ltc.io's .npz reader and writer). */
static int l_crc32(lua_State *L) {
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    uLong crc = (uLong)luaL_optinteger(L, 2, 0);
    while (len > 0) { /* zlib takes a uInt length */
        uInt n = len > 0x40000000u ? 0x40000000u : (uInt)len;
        crc = crc32(crc, (const Bytef *)s, n);
        s += n;
        len -= n;
    }
    lua_pushinteger(L, (lua_Integer)crc);
    return 1;
}

/* core.inflate(s, size): the raw deflate stream s (a zip member of method 8, as
 * np.savez_compressed writes) inflated to its `size` bytes; an error when the stream is
 * corrupt or does not give exactly size bytes. */
static int l_inflate(lua_State *L) {
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    lua_Integer size = luaL_checkinteger(L, 2);
    if (size < 0) return luaL_error(L, "inflate: negative size %I", size);
    luaL_Buffer b;
    char *out = luaL_buffinitsize(L, &b, (size_t)size + 1);
    z_stream z = {0};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) return luaL_error(L, "inflate: zlib init failed");
    z.next_in = (Bytef *)s;
    z.next_out = (Bytef *)out;
    size_t in_left = len, out_left = (size_t)size + 1;
    int rc = Z_OK;
    while (rc == Z_OK) { /* zlib counts in uInt: feed at most 1 GiB at a time */
        if (!z.avail_in && in_left) {
            z.avail_in = in_left > 0x40000000u ? 0x40000000u : (uInt)in_left;
            in_left -= z.avail_in;
        }
        if (!z.avail_out && out_left) {
            z.avail_out = out_left > 0x40000000u ? 0x40000000u : (uInt)out_left;
            out_left -= z.avail_out;
        }
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc == Z_BUF_ERROR && (z.avail_in || in_left) && (z.avail_out || out_left)) rc = Z_OK;
    }
    size_t got = (size_t)((char *)z.next_out - out);
    inflateEnd(&z);
    if (rc != Z_STREAM_END || got != (size_t)size)
        return luaL_error(L, "inflate: corrupt deflate data (%s, %I of %I bytes)",
                          rc == Z_STREAM_END ? "wrong size" : "bad stream", (lua_Integer)got, size);
    luaL_pushresultsize(&b, got);
    return 1;
}

/* core.read_gz(path): the file's bytes as a string, gunzipped when it is gzip. */
static int l_read_gz(lua_State *L) {
    char *data;
    size_t len;
    if (ltc_read_file_gz(luaL_checkstring(L, 1), &data, &len)) return ltcL_error(L);
    lua_pushlstring(L, data, len);
    free(data);
    return 1;
}

/* core.set_backend(name): the backend syncs run on and new data is made on ("cpu", "ref").
 * Data made on one backend feeds the other (both are host memory). */
static int l_set_backend(lua_State *L) {
    if (ltc_backend_set_default(luaL_checkstring(L, 1)))
        return luaL_error(L, "set_backend: %s", ltc_last_error());
    return 0;
}

/* core.get_backend(): the name of the current backend. */
static int l_get_backend(lua_State *L) {
    lua_pushstring(L, ltc_backend_default()->name);
    return 1;
}

/* core.save(path, t): writes t to a NumPy .npy file (syncs t). */
static int l_save(lua_State *L) {
    const char *path = luaL_checkstring(L, 1);
    if (ltc_save_npy(path, ltcL_checktensor(L, 2, "save"))) return ltcL_error(L);
    return 0;
}

/* core.npy_bytes(t): t as the bytes of a .npy file (a string). */
static int l_npy_bytes(lua_State *L) {
    char *buf;
    size_t len;
    if (ltc_save_npy_bytes(ltcL_checktensor(L, 1, "save"), &buf, &len)) return ltcL_error(L);
    lua_pushlstring(L, buf, len);
    free(buf);
    return 1;
}

/* core.npy_load_bytes(s, name): the tensor of the .npy bytes s (name: for errors). */
static int l_npy_load_bytes(lua_State *L) {
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    ltc_tensor *t;
    if (ltc_load_npy_bytes(s, len, luaL_checkstring(L, 2), &t)) return ltcL_error(L);
    ltcL_pushtensor(L, t);
    return 1;
}

/* core.load(path): a tensor read from a NumPy .npy file. */
static int l_load(lua_State *L) {
    ltc_tensor *t;
    if (ltc_load_npy(luaL_checkstring(L, 1), &t)) return ltcL_error(L);
    ltcL_pushtensor(L, t);
    return 1;
}

/* core.read_idx(path [, dtype="float32" [, scale=1 [, offset=0]]]): an IDX file (MNIST
 * format, gzip or not) as a tensor, each value times scale plus offset. */
static int l_read_idx(lua_State *L) {
    const char *path = luaL_checkstring(L, 1);
    ltc_dtype dt = ltcL_checkdtype(L, 2, true, "read_idx");
    ltc_tensor *t;
    if (ltc_read_idx(path, dt == LTC_DTYPE_NONE ? LTC_F32 : dt, luaL_optnumber(L, 3, 1),
                     luaL_optnumber(L, 4, 0), &t))
        return ltcL_error(L);
    ltcL_pushtensor(L, t);
    return 1;
}

/* core._any_bool(a, b): whether a or b is a bool tensor (one call on the path of every
 * subtraction: ops.lua's sub check). */
static int l_any_bool(lua_State *L) {
    bool any = false;
    for (int i = 1; i <= 2 && !any; i++) {
        ltc_tensor *t = ltcL_testtensor(L, i);
        any = t && ltc_tensor_shape(t)->dtype == LTC_BOOL;
    }
    lua_pushboolean(L, any);
    return 1;
}

/* core._bad_arg(codes, ...): the position of the first argument that is not of its kind,
 * nothing when all are. codes holds one letter per argument: t a tensor, n a tensor or a
 * number, i an integer, s an integer or a table, ? nil or an integer (nn.functional's
 * argument checks, one C call per functional call; the message is made in Lua). */
static int l_bad_arg(lua_State *L) {
    size_t n;
    const char *codes = luaL_checklstring(L, 1, &n);
    for (size_t i = 0; i < n; i++) {
        int a = (int)i + 2;
        bool ok = false;
        switch (codes[i]) {
        case 't': ok = ltcL_testtensor(L, a) != NULL; break;
        case 'n': ok = lua_type(L, a) == LUA_TNUMBER || ltcL_testtensor(L, a) != NULL; break;
        case 'i': ok = lua_isinteger(L, a); break;
        case 's': ok = lua_isinteger(L, a) || lua_type(L, a) == LUA_TTABLE; break;
        case '?': ok = lua_isnoneornil(L, a) || lua_isinteger(L, a); break;
        default: return luaL_error(L, "_bad_arg: unknown kind '%c'", codes[i]);
        }
        if (!ok) {
            lua_pushinteger(L, (lua_Integer)i + 1);
            return 1;
        }
    }
    return 0;
}

/* ltc.get_default_dtype(): the default dtype's name ("float32" at start; ltc.h). */
static int l_get_default_dtype(lua_State *L) {
    lua_pushstring(L, ltc_dtype_name(ltc_default_dtype()));
    return 1;
}

/* ltc.set_default_dtype(dtype): float32, float64, float16 or bfloat16 (torch.set_default_dtype). */
static int l_set_default_dtype(lua_State *L) {
    ltc_dtype dt = ltcL_checkdtype(L, 1, false, "set_default_dtype");
    if (ltc_set_default_dtype(dt)) return luaL_error(L, "set_default_dtype: %s", ltc_last_error());
    return 0;
}

static const luaL_Reg runtime_functions[] = {
    {"get_default_dtype", l_get_default_dtype}, {"set_default_dtype", l_set_default_dtype},
    {"_any_bool", l_any_bool}, {"_bad_arg", l_bad_arg},
    {"set_backend", l_set_backend}, {"get_backend", l_get_backend},
    {"save", l_save}, {"load", l_load},
    {"read_gz", l_read_gz}, {"read_idx", l_read_idx}, {"crc32", l_crc32}, {"inflate", l_inflate},
    {"npy_bytes", l_npy_bytes}, {"npy_load_bytes", l_npy_load_bytes},
    {"manual_seed", l_manual_seed}, {"_rng_state", l_rng_state},
    {"counter", l_counter}, {"counter_names", l_counter_names}, {"metrics_report", l_report},
    {"metrics_reset", l_reset}, {"config_get", l_config_get}, {"config_set", l_config_set},
    {"live_info", l_live_info}, {"is_tensor", l_is_tensor}, {"typename", l_typename}, {"clock", l_clock},
    {NULL, NULL},
};

void ltcL_open_runtime(lua_State *L) { luaL_setfuncs(L, runtime_functions, 0); }
