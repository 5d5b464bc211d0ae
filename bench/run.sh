#!/bin/sh
# bench/run.sh - `make bench`: builds the C peers driver and runs bench/run.lua (ltc itself
# is built by make first). BUILD is the build folder (default build); arguments select suites.
set -e
BUILD=${BUILD:-build}
CC=${CC:-cc}
BLAS_INC=${BLAS_INC:-/usr/include/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)}
mkdir -p "$BUILD"
if [ ! -x "$BUILD/bench_peers" ] || [ bench/peers.c -nt "$BUILD/bench_peers" ]; then
  $CC -O2 -march=native -std=c11 -I"$BLAS_INC" -o "$BUILD/bench_peers" bench/peers.c \
    -lopenblas -lpthread -lm
fi
for p in python3-numpy python3-torch; do
  dpkg -s $p >/dev/null 2>&1 || echo "bench: $p is not installed (apt-get install -y $p); its peers show n/a"
done
export BENCH_PEERS="$BUILD/bench_peers"
export LUA_PATH="$(pwd)/?.lua;$(pwd)/lua/?.lua;$(pwd)/lua/?/init.lua;;"
export LUA_CPATH="$(pwd)/$BUILD/?.so;;"
exec lua5.4 bench/run.lua "$@"
