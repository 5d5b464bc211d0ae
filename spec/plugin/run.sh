#!/bin/sh
# The plug-in proof (make test-plugin): `make install` into a temporary prefix, the toy
# backend (spec/plugin/toy.c) built against that prefix's headers and `pkg-config ltc`
# only, then spec/plugin/toy_test.lua run by busted with only that prefix (and the toy
# module) on the module paths. Where Open MPI is, the ltc.distributed module is built the same
# way (src/distributed/ against the prefix's headers and ltc.pc only) and loaded from there.
# Usage: spec/plugin/run.sh [build-folder]
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
# ltc.distributed as an outside module: the prefix's headers and ltc.pc, Open MPI, Lua
if pkg-config --exists ompi 2>/dev/null || command -v mpicc >/dev/null 2>&1; then
    MPI_CFLAGS=$(pkg-config --cflags ompi 2>/dev/null || mpicc --showme:compile)
    MPI_LIBS=$(pkg-config --libs ompi 2>/dev/null || mpicc --showme:link)
    mkdir -p "$TMP/dist/ltc"
    # shellcheck disable=SC2046,SC2086
    cc -std=c11 -shared -fPIC -O1 -g -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L \
        -I"$LUA_INC" -Isrc/distributed $(pkg-config --cflags ltc) $MPI_CFLAGS \
        -o "$TMP/dist/ltc/distributed.so" src/distributed/*.c $(pkg-config --libs ltc) $MPI_LIBS -lpthread
    (cd "$TMP" && env -u LUA_PATH_5_4 -u LUA_CPATH_5_4 \
        LUA_PATH="$TMP/prefix/share/lua/5.4/?.lua;$TMP/prefix/share/lua/5.4/?/init.lua;;" \
        LUA_CPATH="$TMP/dist/?.so;$TMP/prefix/lib/lua/5.4/?.so;;" lua5.4 -e '
local ltc, dist = require "ltc", require "ltc.distributed"
assert(package.searchpath("ltc.distributed", package.cpath):find("/dist/ltc/distributed.so", 1, true))
assert(dist.is_available() and dist.world_size() == 1)
local t = ltc.tensor({1, 2})
assert(dist.all_reduce(t, "sum") == t and t:totable()[2] == 2)
print("spec/plugin: ltc.distributed built outside the tree against the installed headers: ok")')
else
    echo "spec/plugin: ltc.distributed outside the tree skipped (no Open MPI)"
fi
cp spec/plugin/toy_test.lua "$TMP/"
cd "$TMP" # away from the checkout's .busted, which points at build/ and lua/
env -u LUA_PATH_5_4 -u LUA_CPATH_5_4 \
    LUA_PATH="$TMP/prefix/share/lua/5.4/?.lua;$TMP/prefix/share/lua/5.4/?/init.lua;;" \
    LUA_CPATH="$TMP/prefix/lib/lua/5.4/?.so;$TMP/?.so;;" \
    busted --lua=lua5.4 --pattern=_test toy_test.lua
