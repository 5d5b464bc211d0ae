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
# ltc replaces OpenBLAS's "Prescott" fallback on a CPU model OpenBLAS does not know by the
# kernels the CPU's features allow (src/cpu/threads.c); the peers that use OpenBLAS (the C
# driver, NumPy, PyTorch's matmul) get the same kernels through OPENBLAS_CORETYPE.
if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
  core=$(lua5.4 -e 'io.write(require("ltc.core")._blas_core())' 2>/dev/null || true)
  [ -n "$core" ] && export OPENBLAS_CORETYPE="$core" && echo "bench: OpenBLAS kernels $core"
fi
exec lua5.4 bench/run.lua "$@"
