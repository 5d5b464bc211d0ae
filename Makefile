# ltc - build, test, run. `make` builds the code generator, the generated code and the C
# module (build/ltc/core.so); `make test` runs every spec; `make demo` runs the main job.
# `make test` and `make demo` install missing Debian packages first (make deps).

CC      ?= cc
LUA     ?= lua5.4
PREFIX  ?= /usr/local
LUA_INC ?= /usr/include/lua5.4
BLAS_INC ?= /usr/include/$(shell gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)

# CFLAGS may come from the command line (luarocks passes its own); ours are kept apart.
CFLAGS  ?= -O2 -g
SAN     ?=
LTC_CFLAGS := -std=c11 -fPIC -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -fopenmp-simd $(SAN)
# Thread-local variables through TLS descriptors where the compiler has them (GCC on x86-64):
# the module is dlopen'ed, where the default dialect calls __tls_get_addr on every access
# (thousands per traced step); with descriptors the loader places a small enough TLS block
# (src/core keeps it under 512 bytes) statically and an access is a load.
ifeq ($(shell $(CC) -mtls-dialect=gnu2 -Werror -E -x c /dev/null >/dev/null 2>&1 && echo y),y)
LTC_CFLAGS += -mtls-dialect=gnu2
endif
ALL_INC := -Isrc/core -Isrc/backend -Isrc/cpu -Isrc/ref -Isrc/lua -Igen -I$(LUA_INC) -I$(BLAS_INC)
CPPFLAGS += $(ALL_INC)
# Per-folder include paths for the module's objects, so the compiler enforces the layering:
# src/core and src/backend see the interfaces only (no backend, no Lua); a backend sees the
# interfaces and its own folder (the reference backend builds on the CPU plan); the binding
# sees the interfaces and Lua (src/lua/ltc_builtins.c wires the built-in backends by path).
INC_core := -Isrc/core -Isrc/backend -Igen
INC_cpu  := $(INC_core) -Isrc/cpu -I$(BLAS_INC)
INC_ref  := $(INC_core) -Isrc/ref -Isrc/cpu
INC_lua  := $(INC_core) -Isrc/lua -I$(LUA_INC)
LDLIBS  += -lopenblas -lxxhash -lz -lmvec -lm -lpthread

# install locations (luarocks passes INST_LIBDIR and INST_LUADIR)
INST_LIBDIR ?= $(PREFIX)/lib/lua/5.4
INST_LUADIR ?= $(PREFIX)/share/lua/5.4
# the public headers (ltc_backend.h says how an outside backend uses them) and ltc.pc
INST_INCDIR ?= $(PREFIX)/include
INST_PCDIR  ?= $(PREFIX)/lib/pkgconfig
# where ltc.pc says core.so is: absolute, or (luarocks, which moves files after install)
# relative to ltc.pc's folder
PC_MODDIR = $(if $(PC_MODDIR_REL),$${pcfiledir}/$(PC_MODDIR_REL),$(INST_LIBDIR)/ltc)
PUBLIC_HDRS  = src/core/ltc.h src/core/ltc_autograd.h src/core/ltc_ir.h src/core/ltc_rng.h src/backend/ltc_backend.h \
               src/backend/ltc_graph.h src/backend/ltc_kernel.h $(GEN)/ltc_ops.h \
               src/backend/ltc_comm.h src/lua/ltc_args.h

BUILD   ?= build
GEN     := gen
GEN_FILES := $(GEN)/ltc_ops.h $(GEN)/ltc_ops.c $(GEN)/cpu_ops.c $(GEN)/ref_ops.c $(GEN)/lua_ops.c \
             $(GEN)/ops.md $(GEN)/derivatives.lua $(GEN)/derivatives.c $(GEN)/ops_meta.lua

CORE_SRC := $(wildcard src/core/*.c src/backend/*.c src/cpu/*.c src/ref/*.c)
LUA_SRC  := $(wildcard src/lua/*.c)
GEN_SRC  := $(GEN)/ltc_ops.c $(GEN)/cpu_ops.c $(GEN)/ref_ops.c $(GEN)/lua_ops.c $(GEN)/derivatives.c
OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(CORE_SRC) $(LUA_SRC) $(GEN_SRC))
HDRS := $(filter-out src/opencl/% src/distributed/%,$(wildcard src/*/*.h)) $(GEN)/ltc_ops.h

CODEGEN_SRC := $(wildcard codegen/*.c)
CODEGEN_HDR := $(wildcard codegen/*.h)

DEBIAN_PKGS := lua5.4 liblua5.4-dev libopenblas-dev libyaml-dev lua-busted libxxhash-dev \
               zlib1g-dev luarocks graphviz dataset-fashion-mnist pkgconf

export LUA_PATH  := $(CURDIR)/lua/?.lua;$(CURDIR)/lua/?/init.lua;;
export LUA_CPATH := $(CURDIR)/$(BUILD)/?.so;;

.PHONY: all gen docs test test-c test-graph-threads test-codegen test-lua test-install test-asan test-valgrind demo deps clean install bench test-plugin test-docs test-tls

all: $(BUILD)/ltc/core.so


# ---- code generator --------------------------------------------------------------------

$(BUILD)/ltcgen: $(CODEGEN_SRC) $(CODEGEN_HDR)
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror $(SAN) -o $@ $(CODEGEN_SRC) -lyaml

# The generator rewrites a file only when its content changes.
$(GEN)/.stamp: $(BUILD)/ltcgen codegen/ops.yaml codegen/cpu_backend.yaml codegen/opencl_backend.yaml \
               src/core/shape_inference.h $(wildcard src/cpu/*.c src/ref/*.c)
	@mkdir -p $(GEN)
	$(BUILD)/ltcgen --source codegen/ops.yaml --backend-yaml codegen/cpu_backend.yaml \
	  --output-dir $(GEN) --impl-path src/cpu --shape-header src/core/shape_inference.h \
	  --backend-name cpu --ref-impl-path src/ref --device-yaml codegen/opencl_backend.yaml
	@touch $@

# The empty recipe makes make look at the files' times again once the stamp's recipe ran:
# with no recipe, GNU make keeps the times it read before, so after an ops.yaml edit the
# objects compiled from regenerated files were not rebuilt (a stale core.so).
$(GEN_FILES): $(GEN)/.stamp ;

gen: $(GEN)/.stamp

# The op reference, generated from ops.yaml, is committed as docs/ops.md (linked from README).
docs: $(GEN)/.stamp
	@mkdir -p docs
	cp $(GEN)/ops.md docs/ops.md

# ---- the C module ------------------------------------------------------------------------

$(BUILD)/obj/src/core/%.o $(BUILD)/obj/src/backend/%.o $(BUILD)/obj/$(GEN)/ltc_ops.o \
  $(BUILD)/obj/$(GEN)/derivatives.o: INC = $(INC_core)
$(BUILD)/obj/src/cpu/%.o $(BUILD)/obj/$(GEN)/cpu_ops.o: INC = $(INC_cpu)
$(BUILD)/obj/src/ref/%.o $(BUILD)/obj/$(GEN)/ref_ops.o: INC = $(INC_ref)
$(BUILD)/obj/src/lua/%.o $(BUILD)/obj/$(GEN)/lua_ops.o: INC = $(INC_lua)
# The generated elementwise loops read no errno: without it sqrt is one vector instruction
# (with it, a scalar loop that may call sqrtf per element: AdamW's update spent a quarter of
# its time there). The values are the same; the loops already call libmvec through vmath.h.
$(BUILD)/obj/$(GEN)/cpu_ops.o: XFLAGS = -fno-math-errno

$(BUILD)/obj/%.o: %.c $(HDRS) | $(GEN)/.stamp
	@mkdir -p $(dir $@)
	$(CC) $(INC) $(filter-out $(ALL_INC),$(CPPFLAGS)) $(LTC_CFLAGS) $(XFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/ltc/core.so: $(OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LTC_CFLAGS) $(CFLAGS) $(LDFLAGS) -shared -Wl,-z,nodelete -o $@ $(OBJ) $(LDLIBS)

# ---- tests --------------------------------------------------------------------------------

test: deps all test-docs test-tls test-c test-graph-threads test-codegen test-lua test-install test-plugin

test-lua: all
	busted --lua=$(LUA) --cpath="$(CURDIR)/$(BUILD)/?.so" spec

# make install and luarocks make into temporary trees, then require "ltc" from elsewhere.
test-install: all
	sh spec/install_test.sh $(BUILD)

# A third backend, spec/plugin/toy.c, built against a `make install` into a temporary prefix
# (its headers and ltc.pc only), and its specs run with only that prefix on the module paths.
test-plugin: all
	sh spec/plugin/run.sh $(BUILD)

# docs/ops.md must be what the generator writes from ops.yaml (refresh it with make docs).
test-docs: $(GEN)/.stamp
	@cmp -s $(GEN)/ops.md docs/ops.md || { echo "docs/ops.md differs from $(GEN)/ops.md (generated from codegen/ops.yaml): run make docs" >&2; exit 1; }

# The module's thread-local block must fit the 512 bytes glibc sets aside for the static TLS
# of dlopen'ed modules (glibc.rtld.optional_static_tls), or every thread-local access calls
# _dl_tlsdesc_dynamic: at 516 bytes that took 4.8% of a traced step with backward (perf).
test-tls: all
	@n=$$(readelf -lW $(BUILD)/ltc/core.so | awk '$$1 == "TLS" { print $$6 }'); n=$$(( $${n:-0} )); \
	  if [ $$n -gt 512 ]; then echo "core.so's TLS block is $$n bytes, over 512: shrink the _Thread_local variables" >&2; exit 1; fi; \
	  echo "core.so's TLS block: $$n bytes (at most 512)"

test-codegen: $(BUILD)/ltcgen
	sh codegen/tests/run.sh $(BUILD)/ltcgen

$(BUILD)/kernels_test: spec/c/kernels_test.c spec/c/kernel_stubs.c $(wildcard src/cpu/*.c) src/core/rng.c $(HDRS)
	$(CC) $(CPPFLAGS) $(LTC_CFLAGS) $(CFLAGS) -o $@ spec/c/kernels_test.c spec/c/kernel_stubs.c \
	  $(filter-out src/cpu/cpu_backend.c src/cpu/plan.c src/cpu/fuse.c src/cpu/epilogue.c src/cpu/batch.c src/cpu/fold.c src/cpu/threads.c src/cpu/capture.c src/cpu/collective.c,$(wildcard src/cpu/*.c)) src/core/rng.c $(LDLIBS)

# The timed split choice of src/cpu/threads.c, with the core's configuration stubbed.
$(BUILD)/split_test: spec/c/split_test.c src/cpu/threads.c src/cpu/threads.h
	$(CC) $(INC_cpu) $(LTC_CFLAGS) $(CFLAGS) -o $@ spec/c/split_test.c src/cpu/threads.c \
	  -lopenblas -lpthread

test-c: $(BUILD)/kernels_test $(BUILD)/split_test
	$(BUILD)/kernels_test
	$(BUILD)/split_test

# Graph capture modes and concurrent capture/replay with real threads (a Lua state each).
$(BUILD)/graph_threads_test: spec/c/graph_threads_test.c
	$(CC) $(LTC_CFLAGS) $(CFLAGS) -I$(LUA_INC) -o $@ $< -llua5.4 -lpthread

test-graph-threads: all $(BUILD)/graph_threads_test
	$(BUILD)/graph_threads_test $(CURDIR) $(BUILD)

# The whole suite with the C code built under AddressSanitizer and UBSan (no recovery).
# lua5.4 itself is not instrumented, so the ASan runtime is preloaded. busted exits without
# closing its Lua state (finalizers never run), so leaks are checked on the digits example,
# which closes its state.
ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ASAN_ENV = LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" \
  LUA_CPATH="$(CURDIR)/build/asan/?.so;;"
test-asan: deps
	$(MAKE) BUILD=build/asan SAN="$(ASAN_FLAGS)" all build/asan/kernels_test build/asan/ltcgen
	build/asan/kernels_test
	sh codegen/tests/run.sh build/asan/ltcgen
	$(ASAN_ENV) ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 busted --lua=$(LUA) --cpath="$(CURDIR)/build/asan/?.so" spec
	$(ASAN_ENV) ASAN_OPTIONS=detect_leaks=1 $(LUA) examples/digits.lua 50

# The main job and the specs under valgrind memcheck: no leaks, no invalid accesses.
VALGRIND := valgrind --trace-children=yes --trace-children-skip='*/dot,*/sh' --error-exitcode=99 --leak-check=full --show-possibly-lost=no --errors-for-leak-kinds=definite,indirect -q
test-valgrind: deps all
	$(VALGRIND) $(LUA) examples/digits.lua
	$(VALGRIND) $(LUA) /usr/bin/busted spec

# ---- benchmarks: ltc against NumPy, PyTorch, raw OpenBLAS and the memory bandwidth -------
# `make bench` runs every bench/*.lua suite; `make bench BENCH="chain gemm"` some of them.

bench: all
	BUILD=$(BUILD) sh bench/run.sh $(BENCH)

# ---- the main job ----------------------------------------------------------------------------

# Fashion-MNIST (Debian's dataset-fashion-mnist); without it, the digits example. A failing
# `make deps` (not root) does not stop the demo: it has said what to install.
FASHION_MNIST_DIR ?= /usr/share/datasets/fashion-mnist
demo:
	-@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory all
	@if [ -f $(FASHION_MNIST_DIR)/train-images-idx3-ubyte.gz ] || \
	    [ -f $(FASHION_MNIST_DIR)/train-images-idx3-ubyte ]; then \
	  LTC_BUILD=$(BUILD) bin/ltc examples/fashion_mnist.lua --data $(FASHION_MNIST_DIR) \
	    --plot $(BUILD)/fashion_mnist_loss.svg; \
	else \
	  echo "demo: Fashion-MNIST is not in $(FASHION_MNIST_DIR); install it with"; \
	  echo "      sudo apt-get install dataset-fashion-mnist   (or: sudo make deps)"; \
	  echo "demo: running the digits example instead"; \
	  LTC_BUILD=$(BUILD) bin/ltc examples/digits.lua; \
	fi

# ---- Debian packages ---------------------------------------------------------------------------

deps:
	@missing=""; for p in $(DEBIAN_PKGS); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else \
	    echo "missing Debian packages:$$missing"; \
	    echo "run: sudo apt-get install$$missing"; exit 1; \
	  fi; \
	fi

# ---- installation (also what luarocks' make build type calls) --------------------------------

install: all
	install -d $(DESTDIR)$(INST_LIBDIR)/ltc $(DESTDIR)$(INST_LUADIR)/ltc
	install -m 755 $(BUILD)/ltc/core.so $(DESTDIR)$(INST_LIBDIR)/ltc/core.so
	install -m 644 lua/ltc/*.lua $(DESTDIR)$(INST_LUADIR)/ltc/
	install -m 644 $(GEN)/derivatives.lua $(DESTDIR)$(INST_LUADIR)/ltc/derivatives.lua
	install -m 644 $(GEN)/ops.md $(DESTDIR)$(INST_LUADIR)/ltc/ops.md
	$(call install_dev,$(DESTDIR)$(INST_INCDIR),$(DESTDIR)$(INST_PCDIR),$(INST_INCDIR)/ltc,$(PC_MODDIR))

# The public headers and ltc.pc: headers into $(1)/ltc, ltc.pc into $(2), saying the headers
# are in $(3) and core.so in $(4) (the paths after installation, without DESTDIR).
define install_dev
	install -d $(1)/ltc $(2)
	install -m 644 $(PUBLIC_HDRS) $(1)/ltc/
	printf '%s\n' 'includedir=$(3)' 'moduledir=$(4)' '' \
	  'Name: ltc' 'Description: lazy tensor runtime: headers and core module for outside backends' \
	  'Version: 0.1' 'Cflags: -I$${includedir}' \
	  'Libs: -L$${moduledir} -l:core.so -Wl,-rpath,$${moduledir}' \
	  > $(2)/ltc.pc
endef

# The same, staged in the build folder for the modules that build as outside modules do
# (src/distributed/distributed.mk): headers in $(SDK)/include/ltc, ltc.pc in
# $(SDK)/lib/pkgconfig naming this build's core.so. A fresh clone needs no installed ltc.
SDK := $(BUILD)/sdk
$(SDK)/lib/pkgconfig/ltc.pc: $(PUBLIC_HDRS) Makefile
	@rm -rf $(SDK)
	$(call install_dev,$(SDK)/include,$(SDK)/lib/pkgconfig,$(abspath $(SDK))/include/ltc,$(abspath $(BUILD))/ltc)

clean:
	rm -rf $(BUILD) $(GEN)
include fuzz/fuzz.mk
include src/distributed/distributed.mk
include src/opencl/opencl.mk
include src/repl/repl.mk
