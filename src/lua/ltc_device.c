/*
 * ltc_device.c - the Lua side of the backend registry and of devices: ltc.backends().
 * Talks to backends through ltc_backend.h only.
 */
#include <string.h>

#include "ltc_backend.h"
#include "ltc_lua.h"

/* ltc.backends(): the registered backends' names (device types), in registration order:
 * {"cpu", "ref", ...}; the built-in ones first, then those that outside modules registered
 * on `require`. */
static int l_backends(lua_State *L) {
    int n = ltc_backend_count();
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushstring(L, ltc_backend_get_index(i)->name);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

static void push_device(lua_State *L, ltc_device d) {
    char buf[64];
    ltc_device_format(d, buf, sizeof buf);
    lua_pushstring(L, buf);
}

static ltc_device check_device(lua_State *L, int arg, const char *fname) {
    ltc_device d;
    if (ltc_device_parse(luaL_checkstring(L, arg), &d))
        luaL_error(L, "%s: %s", fname, ltc_last_error());
    return d;
}

/* ltc.devices(): every device of every registered backend, {"cpu:0", "ref:0", ...}, as each
 * backend's devices slot lists them. */
static int l_devices(lua_State *L) {
    lua_newtable(L);
    int k = 0;
    for (int i = 0; i < ltc_backend_count(); i++) {
        ltc_backend *b = ltc_backend_get_index(i);
        ltc_device devs[16];
        int n = b->iface->devices(b, devs, 16);
        for (int j = 0; j < n && j < 16; j++) {
            push_device(L, (ltc_device){b->name, devs[j].ordinal});
            lua_rawseti(L, -2, ++k);
        }
    }
    return 1;
}

/* ltc.default_device(): "cpu:0", where new tensors are made. */
static int l_default_device(lua_State *L) {
    push_device(L, ltc_device_default());
    return 1;
}

/* ltc.set_default_device(dev): "type" or "type:N"; errors name an unknown type or ordinal. */
static int l_set_default_device(lua_State *L) {
    if (ltc_device_set_default(check_device(L, 1, "set_default_device")))
        return luaL_error(L, "set_default_device: %s", ltc_last_error());
    return 0;
}

/* core._device_guard(dev or nil) -> the previous guard ("type:N") or nil: see
 * ltc_device_guard (the creation functions' device option). */
static int l_device_guard(lua_State *L) {
    ltc_device dev = {NULL, 0}, prev;
    if (!lua_isnoneornil(L, 1)) dev = check_device(L, 1, "device");
    if (ltc_device_guard(dev, &prev)) return luaL_error(L, "device: %s", ltc_last_error());
    if (!prev.type) return 0;
    push_device(L, prev);
    return 1;
}

/* core._follow(t) -> nothing when new tensors are made on t's device already; else sets
 * the calling thread's guard to t's device and returns true and the guard it replaced
 * ("type:N", or nil: none) for core._device_guard (ltc_device_follow). */
static int l_follow(lua_State *L) {
    ltc_device prev;
    if (!ltc_device_follow(ltcL_checktensor(L, 1, "device"), &prev)) return 0;
    lua_pushboolean(L, 1);
    if (!prev.type) return 1;
    push_device(L, prev);
    return 2;
}

/* core._follow_args(...): as _follow for the tensor a library call follows (ltc.follow's
 * rule: the first tensor among the arguments, where the first two may also be plain lists
 * whose first element counts); nothing when there is none. One C call on the path of every
 * library call. */
static int l_follow_args(lua_State *L) {
    ltc_tensor *t = NULL;
    int n = lua_gettop(L);
    for (int i = 1; i <= n && !t; i++) {
        if ((t = ltcL_testtensor(L, i))) break;
        if (i <= 2 && lua_type(L, i) == LUA_TTABLE) {
            lua_rawgeti(L, i, 1);
            t = ltcL_testtensor(L, -1);
            lua_pop(L, 1);
        }
    }
    ltc_device prev;
    if (!t || !ltc_device_follow(t, &prev)) return 0;
    lua_pushboolean(L, 1);
    if (!prev.type) return 1;
    push_device(L, prev);
    return 2;
}

/* t:device(): "cpu:0". */
static int l_device(lua_State *L) {
    push_device(L, ltc_tensor_device(ltcL_checktensor(L, 1, "device")));
    return 1;
}

/* core._to_device(t, dev): t on dev (t itself when there already). */
static int l_to_device(lua_State *L) {
    ltc_tensor *t = ltcL_checktensor(L, 1, "to"), *out;
    if (ltc_tensor_to_device(t, check_device(L, 2, "to"), &out))
        return luaL_error(L, "to: %s", ltc_last_error());
    ltcL_pushtensor(L, out);
    return 1;
}

/* core._is_device(s): whether s is meant as a device ("cpu", "toy:0", "cpu:x"), not a dtype:
 * a registered type, or a string with a ':'. */
static int l_is_device(lua_State *L) {
    const char *s = lua_type(L, 1) == LUA_TSTRING ? lua_tostring(L, 1) : NULL;
    lua_pushboolean(L, s && (strchr(s, ':') || ltc_has_backend(s)));
    return 1;
}

/* core._device_lowers_op(dev, op [, dtype]) -> whether device dev ("type" or "type:N")
 * lowers op (a full op name, "lstm_layer", "conv2d.nobias") for operands of dtype (float32
 * when nil): ltc_device_lowers_op. Raises for an unknown device, op or dtype. */
static int l_device_lowers_op(lua_State *L) {
    ltc_device d = check_device(L, 1, "lowers_op");
    const char *name = luaL_checkstring(L, 2);
    ltc_dtype dt = ltcL_checkdtype(L, 3, true, "lowers_op");
    int op = 0;
    while (op < LTC_OP_COUNT && strcmp(ltc_op_name(op), name)) op++;
    if (op == LTC_OP_COUNT) return luaL_error(L, "lowers_op: unknown op '%s'", name);
    lua_pushboolean(L, ltc_device_lowers_op(d, op, dt == LTC_DTYPE_NONE ? LTC_F32 : dt));
    return 1;
}

static const luaL_Reg device_functions[] = {
    {"backends", l_backends}, {"devices", l_devices}, {"default_device", l_default_device},
    {"set_default_device", l_set_default_device}, {"_to_device", l_to_device},
    {"_is_device", l_is_device}, {"device", l_device}, {"_device_guard", l_device_guard},
    {"_follow", l_follow}, {"_follow_args", l_follow_args},
    {"_device_lowers_op", l_device_lowers_op},
    {NULL, NULL},
};

void ltcL_open_device(lua_State *L) { luaL_setfuncs(L, device_functions, 0); }
