# fuzz/fuzz.mk - fuzzing targets, included by the Makefile.
#   make fuzz [SEED=1] [N=2000]   differential fuzzer: random programs on the CPU and the
#                                 reference backend (tools/fuzz.lua); failures, shrunk, go to
#                                 fuzz/failures/ as standalone Lua scripts
#   make fuzz-files [FUZZ_TIME=30] libFuzzer (clang) on the .npy reader, the IDX reader and
#                                 the code generator's YAML loader, FUZZ_TIME seconds each,
#                                 under ASan and UBSan; crashing inputs go to fuzz/failures/
#   make fuzz-asan [SEED=1] [N=300] the differential fuzzer with the C code built under ASan
#                                 and UBSan (build/asan, as make test-asan): an overflow or
#                                 an invalid access aborts the worker and is shrunk as a crash
#   make soak [STEPS=20000]       trains an MLP for STEPS steps watching RSS and tensor counts

SEED ?= 1
N ?= 2000
FUZZ_TIME ?= 30
STEPS ?= 20000
FUZZ_CC ?= clang
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -g -O1 -Wno-pass-failed $(FUZZ_SAN)
FUZZ_BUILD := build/fuzz
FUZZ_CORE_OBJ := $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(CORE_SRC) $(GEN)/ltc_ops.c \
                   $(GEN)/cpu_ops.c $(GEN)/ref_ops.c $(GEN)/derivatives.c src/lua/ltc_builtins.c)
FUZZ_GEN_SRC := $(filter-out codegen/ltcgen.c,$(CODEGEN_SRC))
# the IDX reader is optional (src/core/idx.c)
FUZZ_HARNESSES := npy yaml $(if $(wildcard src/core/idx.c),idx)

.PHONY: fuzz fuzz-asan fuzz-files soak

fuzz: all
	$(LUA) tools/fuzz.lua --seed $(SEED) --n $(N) --out fuzz/failures

fuzz-asan:
	$(MAKE) BUILD=build/asan SAN="$(ASAN_FLAGS)" all
	$(ASAN_ENV) ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 \
	  $(LUA) tools/fuzz.lua --seed $(SEED) --n $(N) --out fuzz/failures

$(FUZZ_BUILD)/obj/%.o: %.c $(HDRS) | $(GEN)/.stamp
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fopenmp-simd -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_BUILD)/npy_fuzz $(FUZZ_BUILD)/idx_fuzz: $(FUZZ_BUILD)/%_fuzz: fuzz/%_fuzz.c $(FUZZ_CORE_OBJ)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS) -llua5.4

$(FUZZ_BUILD)/yaml_fuzz: fuzz/yaml_fuzz.c $(FUZZ_GEN_SRC) $(CODEGEN_HDR)
	@mkdir -p $(FUZZ_BUILD)
	$(FUZZ_CC) -Icodegen $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ fuzz/yaml_fuzz.c $(FUZZ_GEN_SRC) -lyaml

fuzz-files: $(foreach h,$(FUZZ_HARNESSES),$(FUZZ_BUILD)/$(h)_fuzz)
	@mkdir -p fuzz/failures
	@$(if $(wildcard src/core/idx.c),,echo "fuzz-files: no src/core/idx.c: the IDX reader is skipped";) \
	for h in $(FUZZ_HARNESSES); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$h; \
	  echo "fuzz-files: $$h for $(FUZZ_TIME) s"; \
	  $(FUZZ_BUILD)/$${h}_fuzz -max_total_time=$(FUZZ_TIME) -timeout=10 -rss_limit_mb=4096 \
	    -max_len=4096 -close_fd_mask=3 -print_final_stats=1 -artifact_prefix=fuzz/failures/$$h- \
	    $(FUZZ_BUILD)/corpus/$$h fuzz/seeds/$$h >$(FUZZ_BUILD)/$$h.log 2>&1; rc=$$?; \
	  grep -E "stat::number_of_executed_units|ERROR|SUMMARY|Test unit written" $(FUZZ_BUILD)/$$h.log; \
	  [ $$rc -eq 0 ] || { echo "fuzz-files: $$h FAILED (log: $(FUZZ_BUILD)/$$h.log)"; exit 1; }; \
	done

soak: all
	$(LUA) tools/soak.lua --steps $(STEPS)
