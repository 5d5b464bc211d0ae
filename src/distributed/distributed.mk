# ---- the distributed module (Open MPI): build/ltc/distributed.so, `require "ltc.distributed"`
# Built by `make` where Open MPI's development files are (pkg-config ompi, or mpicc);
# elsewhere `make` says it skips it. The module links the core (core.so, found beside it
# through its rpath) and Open MPI; the core links no MPI.

# `make deps` installs Open MPI too (a make run that installs it builds the module next time)
DEBIAN_PKGS += libopenmpi-dev openmpi-bin

HAVE_MPI := $(shell (pkg-config --exists ompi || command -v mpicc) >/dev/null 2>&1 && echo yes)
ifeq ($(HAVE_MPI),yes)
MPI_CFLAGS := $(shell pkg-config --cflags ompi 2>/dev/null || mpicc --showme:compile)
MPI_LIBS := $(shell pkg-config --libs ompi 2>/dev/null || mpicc --showme:link)
DIST_SRC := $(wildcard src/distributed/*.c)

all: $(BUILD)/ltc/distributed.so

# Built as an outside module is: against the public headers and core.so through ltc.pc
# (`pkg-config --cflags --libs ltc`), never the source tree's include paths. In the tree that
# ltc.pc is the build folder's staged one ($(SDK), made by the Makefile), so a fresh clone
# builds it before any `make install`; elsewhere, against an installed ltc:
#   cc -std=c11 -shared -fPIC -I/usr/include/lua5.4 -Isrc/distributed $(pkg-config --cflags ltc ompi) \
#      -o distributed.so src/distributed/*.c $(pkg-config --libs ltc ompi)
# The rpath is $ORIGIN (core.so beside it, in the build folder and once installed), not the
# staged ltc.pc's absolute one. Without pkg-config (mpicc found Open MPI), the staged headers'
# folder and core.so are named directly: the same files ltc.pc names.
DIST_PC = PKG_CONFIG_PATH=$(SDK)/lib/pkgconfig pkg-config
$(BUILD)/ltc/distributed.so: $(DIST_SRC) $(wildcard src/distributed/*.h) $(SDK)/lib/pkgconfig/ltc.pc \
                             $(BUILD)/ltc/core.so
	$(CC) -Isrc/distributed -I$(LUA_INC) \
	  $$($(DIST_PC) --cflags ltc 2>/dev/null || echo -I$(SDK)/include/ltc) $(MPI_CFLAGS) \
	  $(LTC_CFLAGS) $(CFLAGS) $(LDFLAGS) -shared -o $@ $(DIST_SRC) \
	  $$($(DIST_PC) --libs-only-L --libs-only-l ltc 2>/dev/null || echo -L$(BUILD)/ltc -l:core.so) \
	  -Wl,-rpath,'$$ORIGIN' $(MPI_LIBS) -lpthread
else
all: dist-skip
endif

.PHONY: dist-skip install-dist demo-dist test-dist
dist-skip:
	@echo "ltc.distributed: skipped (no Open MPI development files: neither pkg-config ompi nor mpicc;"
	@echo "                 sudo apt-get install libopenmpi-dev openmpi-bin)"

install: install-dist
install-dist: all
	@if [ -f $(BUILD)/ltc/distributed.so ]; then \
	  install -D -m 755 $(BUILD)/ltc/distributed.so $(DESTDIR)$(INST_LIBDIR)/ltc/distributed.so; \
	else echo "install: ltc.distributed not built (no Open MPI), not installed"; fi

# The distributed specs alone (spec/distributed_spec.lua: one process, then the scripts of
# spec/dist/ under mpirun with 2 and 3 ranks); part of make test through test-lua.
test-dist: all
	busted --lua=$(LUA) --cpath="$(CURDIR)/$(BUILD)/?.so" spec/distributed_spec.lua

# The main job across processes: Fashion-MNIST data-parallel over DIST_NP ranks of one
# machine (--oversubscribe; --allow-run-as-root when root), one compute thread each.
DIST_NP ?= 2
demo-dist: all
	@if ! command -v mpirun >/dev/null 2>&1 || [ ! -f $(BUILD)/ltc/distributed.so ]; then \
	  echo "demo-dist: needs Open MPI (sudo apt-get install libopenmpi-dev openmpi-bin, then make)"; \
	  exit 1; fi
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 LTC_BUILD=$(BUILD) \
	  mpirun $$([ "$$(id -u)" = 0 ] && echo --allow-run-as-root) --oversubscribe -np $(DIST_NP) \
	  -x LTC_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 \
	  bin/ltc examples/fashion_mnist.lua --distributed --data $(FASHION_MNIST_DIR) \
	  --plot $(BUILD)/fashion_mnist_dist_loss.svg
