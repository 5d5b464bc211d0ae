# src/opencl/opencl.mk - the OpenCL backend module, build/ltc/opencl.so (`require "ltc.opencl"`),
# included by the Makefile. Built by `make` where `pkg-config OpenCL` succeeds and CLBlast's
# header is installed; elsewhere `make` says it skips it. The module links the core (core.so,
# found beside it through its rpath $ORIGIN), OpenCL (the ICD loader) and CLBlast.
# `make deps` installs its packages; PoCL (pocl-opencl-icd) gives OpenCL on any CPU.

OPENCL_PKGS := ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd clinfo libclblast-dev
DEBIAN_PKGS += $(OPENCL_PKGS)
OPENCL_OK := $(shell pkg-config --exists OpenCL 2>/dev/null && test -f /usr/include/clblast_c.h && echo yes)
OPENCL_SRC := $(wildcard src/opencl/*.c)

ifeq ($(OPENCL_OK),yes)
all: $(BUILD)/ltc/opencl.so
else
all: opencl-skip
endif

.PHONY: opencl-skip install-opencl
opencl-skip:
	@echo "ltc.opencl: skipped (no OpenCL development files or CLBlast: pkg-config OpenCL or" \
	  "/usr/include/clblast_c.h missing; sudo apt-get install $(OPENCL_PKGS))"

$(BUILD)/ltc/opencl.so: $(OPENCL_SRC) $(wildcard src/opencl/*.h) $(HDRS) $(BUILD)/ltc/core.so
	$(CC) $(INC_core) -I$(LUA_INC) $(LTC_CFLAGS) $(CFLAGS) $(LDFLAGS) -shared -Wl,-z,nodelete -o $@ \
	  $(OPENCL_SRC) -L$(BUILD)/ltc -l:core.so -Wl,-rpath,'$$ORIGIN' \
	  $$(pkg-config --libs OpenCL) -lclblast -lm

install: install-opencl
install-opencl: all
	@if [ -f $(BUILD)/ltc/opencl.so ]; then \
	  install -D -m 755 $(BUILD)/ltc/opencl.so $(DESTDIR)$(INST_LIBDIR)/ltc/opencl.so; \
	else echo "install: ltc.opencl not built (no OpenCL), not installed"; fi

# The differential fuzzer on the OpenCL backend (against the reference backend); a short
# budget by default: each new graph is a driver build (PoCL: about a second).
OPENCL_FUZZ_N ?= 10
.PHONY: fuzz-opencl
fuzz-opencl: all
	$(LUA) tools/fuzz.lua --backend opencl --seed $(SEED) --n $(OPENCL_FUZZ_N) --out fuzz/failures
