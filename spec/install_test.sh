#!/bin/sh
# Installation test: `make install PREFIX=...` and `luarocks --lua-version=5.4 make --tree ...`
# into temporary trees, then, from another directory and with only that tree on the module
# paths, `lua5.4 -e 'print(require("ltc").ones(2))'` and `lua5.4 -l ltc -i` (the REPL).
# Also: a Lua module built with the installed headers and `pkg-config ltc` only sees the
# core that `require "ltc"` loaded (the way an outside backend registers).
# Offline: luarocks builds from this checkout (--deps-mode=none). Usage:
#   spec/install_test.sh [build-folder]     (the Makefile's BUILD, default build)
# Prints TAP-style "ok N - name" lines; exits non-zero if a test failed.
set -u
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ltc-install.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT INT TERM
n=0
failed=0
expected=" 1
 1
[ltc.float32 of size 2 on cpu:0]"

check() { # check NAME ACTUAL-FILE: compares with $expected
    n=$((n + 1))
    if [ "$(cat "$2")" = "$expected" ]; then
        echo "ok $n - $1"
    else
        failed=$((failed + 1))
        echo "not ok $n - $1"
        sed 's/^/#   /' "$2"
    fi
}

# run_in TREE_LUA TREE_LIB OUT: the two one-liners from $TMP/elsewhere, no other module paths.
run_in() {
    mkdir -p "$TMP/elsewhere"
    (cd "$TMP/elsewhere" && env -u LUA_PATH_5_4 -u LUA_CPATH_5_4 \
        LUA_PATH="$1/?.lua;$1/?/init.lua" LUA_CPATH="$2/?.so" \
        lua5.4 -e 'print(require("ltc").ones(2))') >"$3" 2>&1
    (cd "$TMP/elsewhere" && printf 'print(ltc.ones(2))\n' | env -u LUA_PATH_5_4 -u LUA_CPATH_5_4 \
        LUA_PATH="$1/?.lua;$1/?/init.lua" LUA_CPATH="$2/?.so" \
        lua5.4 -l ltc -i 2>&1 | grep -v '^Lua 5\|^> *$' | sed 's/^> .*//; /^$/d') >"$3.repl"
}

cd "$ROOT" || exit 2

# 1-2. make install into a prefix
if make -s BUILD="$BUILD" install PREFIX="$TMP/prefix" >"$TMP/make.log" 2>&1; then
    run_in "$TMP/prefix/share/lua/5.4" "$TMP/prefix/lib/lua/5.4" "$TMP/out1"
else
    cp "$TMP/make.log" "$TMP/out1"
    cp "$TMP/make.log" "$TMP/out1.repl"
fi
check "make install PREFIX=...: require(\"ltc\") from another directory" "$TMP/out1"
check "make install PREFIX=...: lua5.4 -l ltc -i prints a tensor" "$TMP/out1.repl"

# 3. the installed headers and ltc.pc build a Lua module against the installed core.so
n=$((n + 1))
cat >"$TMP/outside.c" <<'EOC'
#include <lua.h>
#include "ltc_backend.h"
#include "ltc_graph.h"
int luaopen_outside(lua_State *L) {
    lua_pushinteger(L, LTC_BACKEND_IFACE_VERSION * 100 + ltc_backend_count());
    return 1;
}
EOC
PC="$TMP/prefix/lib/pkgconfig"
if cc -std=c11 -shared -fPIC -I/usr/include/lua5.4 -o "$TMP/outside.so" "$TMP/outside.c" \
    $(PKG_CONFIG_PATH="$PC" pkg-config --cflags --libs ltc) >"$TMP/outside.log" 2>&1 &&
    (cd "$TMP" && env -u LUA_PATH_5_4 -u LUA_CPATH_5_4 \
        LUA_PATH="$TMP/prefix/share/lua/5.4/?.lua;$TMP/prefix/share/lua/5.4/?/init.lua" \
        LUA_CPATH="$TMP/prefix/lib/lua/5.4/?.so;$TMP/?.so" \
        lua5.4 -e 'require "ltc"; io.write((require "outside"))') >"$TMP/outside.out" 2>&1 &&
    [ "$(cat "$TMP/outside.out")" = "302" ]; then # interface version 3, 2 backends
    echo "ok $n - make install: the headers and ltc.pc build a module that sees the loaded core"
else
    failed=$((failed + 1))
    echo "not ok $n - make install: the headers and ltc.pc build a module that sees the loaded core"
    sed 's/^/#   /' "$TMP/outside.log" "$TMP/outside.out" 2>/dev/null
fi

# 4-5. luarocks make into a tree (offline; the build reuses this checkout's BUILD folder)
if ! command -v luarocks >/dev/null 2>&1; then
    echo "ok $((n + 1)) - luarocks make # SKIP luarocks is not installed"
    echo "ok $((n + 2)) - luarocks make REPL # SKIP luarocks is not installed"
    n=$((n + 2))
else
    if BUILD="$BUILD" luarocks --lua-version=5.4 make --tree="$TMP/rocks" --deps-mode=none \
        ltc-scm-1.rockspec >"$TMP/rocks.log" 2>&1; then
        run_in "$TMP/rocks/share/lua/5.4" "$TMP/rocks/lib/lua/5.4" "$TMP/out2"
    else
        cp "$TMP/rocks.log" "$TMP/out2"
        cp "$TMP/rocks.log" "$TMP/out2.repl"
    fi
    check "luarocks make --tree=...: require(\"ltc\") from another directory" "$TMP/out2"
    check "luarocks make --tree=...: lua5.4 -l ltc -i prints a tensor" "$TMP/out2.repl"
fi

echo "1..$n"
[ "$failed" -eq 0 ]
