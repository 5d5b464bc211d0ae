#!/bin/sh
# The plug-in proof (make test-plugin): `make install` into a temporary prefix, the toy
# backend (spec/plugin/toy.c) built against that prefix's headers and `pkg-config ltc`
# only, then spec/plugin/toy_test.lua run by busted with only that prefix (and the toy
# module) on the module paths. Usage: spec/plugin/run.sh [build-folder]
set -eu
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ltc-plugin.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM
cd "$ROOT"
make -s BUILD="$BUILD" install PREFIX="$TMP/prefix" >"$TMP/install.log" 2>&1 ||
    { cat "$TMP/install.log"; exit 1; }
export PKG_CONFIG_PATH="$TMP/prefix/lib/pkgconfig"
LUA_INC=${LUA_INC:-/usr/include/lua5.4}
# shellcheck disable=SC2046
cc -std=c11 -shared -fPIC -O1 -g -Wall -Wextra -Werror -I"$LUA_INC" $(pkg-config --cflags ltc) \
    -o "$TMP/toy.so" spec/plugin/toy.c $(pkg-config --libs ltc)
echo "spec/plugin: toy.so built with: $(pkg-config --cflags --libs ltc)"
cp spec/plugin/toy_test.lua "$TMP/"
cd "$TMP" # away from the checkout's .busted, which points at build/ and lua/
env -u LUA_PATH_5_4 -u LUA_CPATH_5_4 \
    LUA_PATH="$TMP/prefix/share/lua/5.4/?.lua;$TMP/prefix/share/lua/5.4/?/init.lua;;" \
    LUA_CPATH="$TMP/prefix/lib/lua/5.4/?.so;$TMP/?.so;;" \
    busted --lua=lua5.4 --pattern=_test toy_test.lua
