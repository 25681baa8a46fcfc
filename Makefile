# fp4diag — the one build file. Targets: all lib check bench bench-e2e bench-ckpt bench-gpu regress mutate
# demo install install-lib install-scripts wheel-aarch64 clean.
#   CUDA=auto|0|1   auto: build kernels/ when nvcc is found (binary still runs without a GPU)
#   MPI=auto|0|1    auto: the mpirun mode when pkg-config finds Open MPI (mpi-c, libopenmpi-dev)
#                   (changing CUDA or MPI for one BUILD recompiles it whole: $(BUILD)/.build-kind)
#   DEVELOPER=1     strict warnings as errors (CI builds with it)
#   SAN=1           AddressSanitizer + UndefinedBehaviorSanitizer
#   PREFIX=/usr/local  for install (also DESTDIR, LIBDIR=PREFIX/lib, INCLUDEDIR=PREFIX/include)
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
CUDA ?= auto
MPI ?= auto
DEVELOPER ?= 0
SAN ?= 0
BUILD ?= build
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90

PKGS := hdf5-serial libcjson openblas libdeflate zlib libxxhash
CC ?= cc
CFLAGS ?= -O2 -g
CFLAGS += -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -fopenmp -Isrc -Iinclude -Ikernels \
          $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -fopenmp -lm
TEST_LDLIBS = $(shell pkg-config --libs cmocka 2>/dev/null)
TEST_CFLAGS = $(shell pkg-config --cflags cmocka 2>/dev/null)

ifeq ($(DEVELOPER),1)
CFLAGS += -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
          -Wno-unused-parameter -Wvla
endif
ifeq ($(SAN),1)
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
BUILD := $(BUILD)-san
endif
# The program: ./fp4diag, or $(BUILD)/fp4diag for a sanitizer build (never mixed up with ./fp4diag).
BIN := $(if $(filter 1,$(SAN)),$(BUILD)/fp4diag,fp4diag)

# --- CUDA detection: one line says what was decided --------------------------------------
ifeq ($(CUDA),auto)
  ifneq ($(NVCC),)
    USE_CUDA := 1
  else
    USE_CUDA := 0
  endif
else
  USE_CUDA := $(CUDA)
endif
ifeq ($(USE_CUDA),1)
  ifeq ($(NVCC),)
    $(error CUDA=1 but nvcc was not found)
  endif
  CU_SRCS := $(wildcard kernels/*.cu)
  CU_OBJS := $(patsubst kernels/%.cu,$(BUILD)/kernels/%.o,$(CU_SRCS))
  CFLAGS += -DFP4_HAVE_CUDA -DFP4_HAVE_CUDA_BACKEND -I$(CUDA_HOME)/include
  LDLIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart_static \
            -lrt -ldl -lpthread -lstdc++
  CUDA_MSG := CUDA: on ($(NVCC), kernels: $(words $(CU_SRCS)))
else
  CU_OBJS :=
  CUDA_MSG := CUDA: off (CUDA=$(CUDA)$(if $(NVCC),,; nvcc not found))
endif
$(info fp4diag build: $(CUDA_MSG))

# --- MPI: `mpirun -n N fp4diag sqnr ...` takes one share per rank (src/cmd/world.c) ------------
ifeq ($(MPI),auto)
  USE_MPI := $(shell pkg-config --exists mpi-c 2>/dev/null && echo 1 || echo 0)
else
  USE_MPI := $(MPI)
endif
ifeq ($(USE_MPI),1)
  ifneq ($(shell pkg-config --exists mpi-c 2>/dev/null && echo ok),ok)
    $(error MPI=1 but pkg-config finds no mpi-c (Debian: apt-get install libopenmpi-dev))
  endif
  CFLAGS += -DFP4_HAVE_MPI $(shell pkg-config --cflags mpi-c)
  MPI_LDLIBS := $(shell pkg-config --libs mpi-c)
  LDLIBS += $(MPI_LDLIBS)
  MPI_MSG := MPI: on (mpirun mode)
else
  MPI_MSG := MPI: off (MPI=$(MPI)$(if $(filter auto,$(MPI)),; mpi-c not found))
endif
$(info fp4diag build: $(MPI_MSG))

# src/ and its layer folders (src/io/, src/engine/, ...; src/engine/arch/); src/tests/ holds the tests
LIB_SRCS := $(filter-out src/main.c src/tests/%,$(wildcard src/*.c src/*/*.c src/engine/arch/*.c))
LIB_OBJS := $(patsubst src/%.c,$(BUILD)/%.o,$(LIB_SRCS))
TEST_SRCS := $(wildcard src/tests/test_*.c)
TEST_BINS := $(patsubst src/tests/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
HDRS := $(filter-out src/tests/%,$(wildcard src/*.h src/*/*.h)) $(wildcard kernels/*.h)

all: $(BIN)

# What the objects of $(BUILD) were compiled for (CUDA on or off, MPI on or off): a file that
# changes only when that does, and every object depends on it, so that a build with CUDA=0 and
# a later one with CUDA=auto or 1 (or MPI) in the same BUILD recompiles everything instead of
# linking objects made for the other setting.
# Goals that build nothing in $(BUILD) (the aarch64 wheel has its own) leave the file alone.
BUILD_KIND := cuda=$(USE_CUDA) mpi=$(USE_MPI)
BUILD_STAMP := $(BUILD)/.build-kind
NO_BUILD_GOALS := aarch64-sysroot wheel-aarch64 clean check-layers
ifneq ($(if $(MAKECMDGOALS),$(filter-out $(NO_BUILD_GOALS),$(MAKECMDGOALS)),all),)
ifneq ($(shell cat $(BUILD_STAMP) 2>/dev/null),$(BUILD_KIND))
  $(shell mkdir -p $(BUILD) && echo '$(BUILD_KIND)' > $(BUILD_STAMP))
endif
endif

$(BIN): $(BUILD)/main.o $(BUILD)/libfp4.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/libfp4.a: $(LIB_OBJS) $(CU_OBJS)
	@rm -f $@
	ar rcs $@ $^

# Each object depends on the headers it includes (-MMD: $(BUILD)/X.d, read below), so a header
# change rebuilds only what includes it.
$(BUILD)/%.o: src/%.c $(BUILD_STAMP) | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

# The CPU engine (src/engine/): no contraction, said explicitly (every variant must give the
# reference's bits), and let the vectorizer if-convert float selects (value-safe: no
# reassociation, contraction or finite-math assumptions; see docs/cpu-perf.md). Every build of
# the engine takes ENGINE_CFLAGS: this one, SAN=1, the fuzz build (clang contracts by default)
# and the aarch64 cross build.
ENGINE_CFLAGS := -ffp-contract=off -fno-trapping-math
ENGINE_OBJS := $(filter $(BUILD)/engine/%,$(LIB_OBJS))
$(ENGINE_OBJS): CFLAGS += $(ENGINE_CFLAGS)
# io/widen.c: plain loops over stored words, on every read: vectorised at -O3 (exact integer
# and float conversions; no value-changing flags)
$(BUILD)/io/widen.o: CFLAGS += -O3

$(BUILD)/kernels/%.o: kernels/%.cu $(HDRS) $(BUILD_STAMP) | $(BUILD)
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -std=c++17 -fmad=false $(CUDA_ARCH) -Isrc -Ikernels -Xcompiler -fPIC -c -o $@ $<

$(BUILD)/tests/%: src/tests/%.c $(BUILD)/libfp4.a $(BUILD_STAMP) | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(TEST_CFLAGS) -Isrc/tests -MMD -MP $(LDFLAGS) -o $@ $< $(BUILD)/libfp4.a $(TEST_LDLIBS) $(LDLIBS)

$(BUILD):
	@mkdir -p $@

# --- The library with a public face: include/fp4diag.h, implemented in src/api/ ------------
# libfp4diag.a and libfp4diag.so.$(LIB_VERSION) (soname libfp4diag.so.$(LIB_SOVERSION)) from
# src/api/ and what lies below it, plus three files of src/cmd/: options.c, libconfig.c and
# libreport.c (the CLI's option parser, through which fp4d_config_parse and fp4d_report name
# options as the CLI does), built
# -fPIC into $(BUILD)/pic/; the .so exports only fp4d_* (src/api/fp4diag.map). The program itself links
# $(BUILD)/libfp4.a, the same sources without -fPIC. SAN=1 builds neither (the sanitizer
# runtimes want the executable; the unit tests link $(BUILD)/libfp4.a, which holds src/api/).
LIB_VERSION := $(shell sed -n 's/^\#define FP4DIAG_VERSION "\(.*\)"/\1/p' src/base/version.h)
LIB_SOVERSION := $(firstword $(subst ., ,$(LIB_VERSION)))
API_SRCS := $(filter-out src/cmd/%,$(LIB_SRCS)) src/cmd/options.c src/cmd/libconfig.c \
            src/cmd/libreport.c
PIC_OBJS := $(patsubst src/%.c,$(BUILD)/pic/%.o,$(API_SRCS))
API_LDLIBS = $(filter-out $(MPI_LDLIBS),$(LDLIBS))
API_A := $(BUILD)/libfp4diag.a
API_SO := $(BUILD)/libfp4diag.so.$(LIB_VERSION)
API_LIBS := $(if $(filter 1,$(SAN)),,$(API_A) $(API_SO))

lib: $(API_LIBS)

$(BUILD)/pic/%.o: src/%.c $(BUILD_STAMP) | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -MMD -MP -c -o $@ $<
$(filter $(BUILD)/pic/engine/%,$(PIC_OBJS)): CFLAGS += $(ENGINE_CFLAGS)
$(BUILD)/pic/io/widen.o: CFLAGS += -O3
-include $(PIC_OBJS:.o=.d)

$(API_A): $(PIC_OBJS) $(CU_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(API_SO): $(PIC_OBJS) $(CU_OBJS) src/api/fp4diag.map
	$(CC) -shared -Wl,-soname,libfp4diag.so.$(LIB_SOVERSION) -Wl,--version-script=src/api/fp4diag.map \
	    -Wl,--no-undefined $(LDFLAGS) -o $@ $(PIC_OBJS) $(CU_OBJS) $(API_LDLIBS)
	ln -sf libfp4diag.so.$(LIB_VERSION) $(BUILD)/libfp4diag.so.$(LIB_SOVERSION)
	ln -sf libfp4diag.so.$(LIB_SOVERSION) $(BUILD)/libfp4diag.so

# the header, both libraries (the .so with its two links) and fp4diag.pc (made here, for the
# PREFIX, LIBDIR and INCLUDEDIR of this install)
install-lib: $(API_LIBS) src/api/fp4diag.pc.in
	$(if $(filter 1,$(SAN)),$(error install-lib: SAN=1 builds no library))
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)
	install -m 644 include/fp4diag.h $(DESTDIR)$(INCLUDEDIR)/fp4diag.h
	install -m 644 $(API_A) $(DESTDIR)$(LIBDIR)/libfp4diag.a
	install -m 755 $(API_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf libfp4diag.so.$(LIB_VERSION) $(DESTDIR)$(LIBDIR)/libfp4diag.so.$(LIB_SOVERSION)
	ln -sf libfp4diag.so.$(LIB_SOVERSION) $(DESTDIR)$(LIBDIR)/libfp4diag.so
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(LIB_VERSION)|g' \
	    -e 's|@LIBS_PRIVATE@|$(strip $(API_LDLIBS))|g' src/api/fp4diag.pc.in \
	    > $(DESTDIR)$(LIBDIR)/pkgconfig/fp4diag.pc
	chmod 644 $(DESTDIR)$(LIBDIR)/pkgconfig/fp4diag.pc

-include $(LIB_OBJS:.o=.d) $(BUILD)/main.d $(TEST_BINS:=.d)

tests: $(TEST_BINS) $(BIN) $(API_LIBS) $(if $(filter 1,$(USE_CUDA)),$(BUILD)/bench_gpu)

# The layer rule first (nothing is built before it), then the unit suites (cmocka prints its
# summary per suite), then the CLI cases.
check: check-layers
	@$(MAKE) --no-print-directory tests
	@FP4DIAG=$(CURDIR)/$(BIN) BUILD=$(BUILD) sh src/tests/run_all.sh $(TEST_BINS)
	@$(if $(CHECK_EXTRA),$(MAKE) --no-print-directory $(CHECK_EXTRA))

# The layer rule of src/ (README, Layout): includes go down the wings only, no cycle between
# wings; the script's self-test shows each of its rules failing on a made-up tree.
check-layers:
	@python3 scripts/check_layers.py --self-test
	@python3 scripts/check_layers.py
.PHONY: check-layers

demo: fp4diag
	@sh scripts/demo.sh

# developer benchmarks (scripts/bench_*.c): not tests, built on demand
$(BUILD)/bench_%: scripts/bench_%.c $(BUILD)/libfp4.a $(HDRS) | $(BUILD)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libfp4.a $(LDLIBS)

# BENCH_FLAGS=--all-isa: also one row per CPU engine variant this CPU runs
bench: fp4diag $(BUILD)/bench_read
	@python3 scripts/bench_cpu.py $(BENCH_FLAGS)

# bench-bundle: make bench for another x86-64 machine (the GPU machine's host) without the
# source tree or the libraries: $(BUILD)/bench-bundle.tar.xz (scripts/bench_bundle.sh says how
# to run it); BENCH_BASE=DIR (a built checkout of an older commit) adds its engine for an A/B
bench-bundle: fp4diag $(BUILD)/bench_read $(BUILD)/bench_engine
	@sh scripts/bench_bundle.sh $(BUILD)/bench-bundle.tar.xz $(BENCH_BASE)

# end to end on float32, f16, bf16, bf16+gzip (and safetensors) files against h5py and, with
# torch + CUDA, a PyTorch script; BENCH_E2E_ARGS e.g. "--mib 1024" on the GPU machine
bench-e2e: fp4diag
	@python3 scripts/bench_e2e.py $(BENCH_E2E_ARGS)

# build/bench_gpu: the GPU throughput driver (kernels/bench/); needs CUDA. nvcc compiles it,
# the C compiler links it with the program's own link line (LDLIBS: HDF5, libdeflate, OpenBLAS,
# OpenMP, MPI, cudart, libstdc++), so it links wherever the program does. `make check` builds it
# when CUDA is on (it runs only where there is a GPU: make bench-gpu).
ifeq ($(USE_CUDA),1)
$(BUILD)/bench/bench_gpu.o: kernels/bench/bench_gpu.cu $(HDRS) | $(BUILD)
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -std=c++17 -fmad=false $(CUDA_ARCH) -Isrc -Ikernels -c -o $@ $<

$(BUILD)/bench_gpu: $(BUILD)/bench/bench_gpu.o $(BUILD)/libfp4.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
else
$(BUILD)/bench_gpu:
	@echo "$@ needs CUDA: nvcc and CUDA=auto or 1 ($(CUDA_MSG))" >&2; exit 1
endif

bench-gpu: fp4diag $(BUILD)/bench_gpu
	@sh scripts/bench_gpu.sh

# bench-ckpt: a generated sharded bf16 safetensors checkpoint of Llama-7B layers (kept in
# BENCH_CKPT_DIR, default $(BUILD)/bench-ckpt) against the read floor of fp4diag's own reader,
# CPU threads 1..all, --device cuda and, with torch + CUDA, the PyTorch peer (scripts/bench_ckpt.py;
# BENCH_CKPT_ARGS e.g. "--gib 1" on a 2-core machine, "--cold" to drop the page cache)
BENCH_CKPT_DIR ?= $(BUILD)/bench-ckpt
bench-ckpt: fp4diag $(BUILD)/bench_ckread
	@python3 scripts/bench_ckpt.py --dir $(BENCH_CKPT_DIR) $(BENCH_CKPT_ARGS)

regress: fp4diag
	@sh scripts/regress.sh

# mutate: is every small, plausible mistake in the numbers caught by a unit test? scripts/mutate.py
# applies each of its one-line mutations (tie rules, E4M3/E8M0 rounding, grid values, RHT signs
# and norm, SQNR/alpha/delta formulas, fp64 merge orders, widening of subnormals and infinities,
# the merge of shares, the default selection, the -o check, safetensors bounds) one at a time
# to a scratch copy under /tmp, builds it and runs ONLY the unit suites (not the CLI goldens),
# and reports each survivor (exit 1). Run it before calling a numerical change done. Slow: about
# a minute per mutation on 2 cores. MUTATE_ARGS="--list" or "--only ID,ID".
mutate: tests
	@nice python3 scripts/mutate.py $(MUTATE_ARGS)

install: fp4diag install-scripts install-lib install-schemas
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 fp4diag $(DESTDIR)$(PREFIX)/bin/fp4diag
	install -m 644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/

# The JSON schemas of the reports, compare --json and ls --json (SPEC §9), for validators:
# PREFIX/share/fp4diag/schema
install-schemas:
	install -d $(DESTDIR)$(PREFIX)/share/fp4diag/schema
	install -m 644 schema/*.schema.json $(DESTDIR)$(PREFIX)/share/fp4diag/schema/

# The user-facing scripts (plots, fp4dump.py, their shared fp4report.py) go to
# PREFIX/share/fp4diag/scripts, each plot_X.py also as the command PREFIX/bin/fp4diag-plot-X
# (a relative symlink; Python finds fp4report.py beside the script it resolves to).
USER_SCRIPTS := $(wildcard scripts/plot_*.py) scripts/fp4report.py $(wildcard scripts/fp4dump.py)
install-scripts:
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/fp4diag/scripts
	install -m 644 scripts/fp4report.py $(DESTDIR)$(PREFIX)/share/fp4diag/scripts/
	install -m 755 $(filter-out scripts/fp4report.py,$(USER_SCRIPTS)) \
	  $(DESTDIR)$(PREFIX)/share/fp4diag/scripts/
	for f in $(notdir $(wildcard scripts/plot_*.py)); do \
	  n=$$(echo "$${f%.py}" | sed 's/^plot_/fp4diag-plot-/; s/_/-/g'); \
	  ln -sf ../share/fp4diag/scripts/$$f $(DESTDIR)$(PREFIX)/bin/$$n || exit 1; \
	done

clean:
	rm -rf build build-san build-fuzz build-aarch64 fp4diag dist

.PHONY: all lib tests check demo bench bench-bundle bench-e2e bench-ckpt bench-gpu regress mutate install \
        install-lib install-scripts install-schemas clean

# --- Hostile inputs (issue 9): sanitizers, valgrind, fuzzing — all run by `make check` -------
#   check           the suites above, then check-san, check-valgrind and fuzz-ci (about 10-12
#                   min on 2 cores); EXTRA_CHECKS=0 skips the three (quick local runs)
#   check-san       unit suites + CLI cases built with ASan+UBSan into build-san/ (= check SAN=1)
#   check-valgrind  CLI cases with the program under valgrind: memory errors and definite
#                   leaks fail (scripts/valgrind_cli.sh: which cases, VALGRIND_CASES='*' for
#                   all; suppressions in scripts/valgrind.supp)
#   fuzz-ci         each libFuzzer target src/tests/fuzz/fuzz_*.c (clang, into build-fuzz/)
#                   replays its regression inputs (a failure fails the build), then fuzzes
#                   FUZZ_SECONDS from its seeds and reports new findings without failing
#   fuzz            the same for FUZZ_LONG_SECONDS (600), keeping what it finds in
#                   build-fuzz/corpus/
#   check-aarch64   the CPU engine and bench_engine cross-built for aarch64 (Debian's
#                   gcc-aarch64-linux-gnu, into build-aarch64/) and run under qemu-user with
#                   FP4DIAG_ISA=generic and neon: `bench_engine check-quick` must print the
#                   x86 build's hashes (cmocka and HDF5 are not cross-installed: the engine only)
# Missing tools (clang's fuzzer runtime, valgrind) skip their pass with a message.
EXTRA_CHECKS ?= 1
FUZZ_SECONDS ?= 60
FUZZ_LONG_SECONDS ?= 600
FUZZ_CC ?= clang
FUZZ_BUILD := build-fuzz
ifeq ($(SAN)$(EXTRA_CHECKS),01)
CHECK_EXTRA := check-san check-valgrind fuzz-ci check-aarch64
endif
ifeq ($(SAN),1)
export ASAN_OPTIONS ?= exitcode=99:detect_leaks=1:abort_on_error=0
export LSAN_OPTIONS ?= suppressions=$(CURDIR)/scripts/lsan.supp:print_suppressions=0
export FP4T_SLOW := 1
export UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1:exitcode=99
endif

check-san:
	@echo "== check-san: unit suites and CLI cases under AddressSanitizer + UBSan (build-san/)"
	@$(MAKE) --no-print-directory SAN=1 EXTRA_CHECKS=0 check

check-valgrind: fp4diag
	@echo "== check-valgrind: CLI cases with fp4diag under valgrind"
	@sh scripts/valgrind_cli.sh $(CURDIR)/fp4diag

FUZZ_SRCS := $(wildcard src/tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst src/tests/fuzz/%.c,$(FUZZ_BUILD)/%,$(FUZZ_SRCS))
FUZZ_OBJS := $(patsubst src/%.c,$(FUZZ_BUILD)/%.o,$(LIB_SRCS))
FUZZ_CFLAGS := -g -O1 -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -fopenmp -Isrc -Iinclude \
               -Ikernels $(shell pkg-config --cflags $(PKGS) 2>/dev/null) \
               -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
               -Wno-pass-failed
FUZZ_LDLIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -fopenmp -lm

$(FUZZ_BUILD)/%.o: src/%.c $(HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(filter $(FUZZ_BUILD)/engine/%,$(FUZZ_OBJS)): FUZZ_CFLAGS += $(ENGINE_CFLAGS)

$(FUZZ_BUILD)/libfp4.a: $(FUZZ_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: src/tests/fuzz/fuzz_%.c src/tests/fuzz/fuzzutil.h $(FUZZ_BUILD)/libfp4.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -Isrc/tests/fuzz -o $@ $< $(FUZZ_BUILD)/libfp4.a \
	    $(FUZZ_LDLIBS)

# $(call fuzz_run,ARGS): build the targets and run scripts/fuzz_run.sh ARGS TARGETS, or skip.
fuzz_run = @if sh scripts/fuzz_run.sh --probe "$(FUZZ_CC)"; then \
	    $(MAKE) --no-print-directory $(FUZZ_BINS) && FUZZ_STRICT=$(2) sh scripts/fuzz_run.sh $(1) $(FUZZ_BINS); \
	else echo "== fuzz: $(FUZZ_CC) with libFuzzer not found; skipped"; fi

fuzz-ci:
	$(call fuzz_run,$(FUZZ_SECONDS),0)

fuzz:
	$(call fuzz_run,--keep $(FUZZ_LONG_SECONDS),1)

# --- aarch64: the engine cross-built and run under qemu-user ------------------------------
CROSS_CC ?= aarch64-linux-gnu-gcc
QEMU_AARCH64 ?= qemu-aarch64 -L /usr/aarch64-linux-gnu
CROSS_BUILD := build-aarch64
# The engine's files and the CPU backend with the widening of stored words it does itself
# (io/widen.c, and io/source.c for fp4_stored_size); --gc-sections drops what bench_engine
# never reaches (the rest of source.c, which needs the other io/ files).
CROSS_SRCS := $(wildcard src/engine/*.c src/engine/arch/*.c) src/num/quant.c src/num/format.c \
              src/num/rht.c src/num/metrics.c src/base/status.c src/base/trace.c src/base/isa.c \
              src/backend/backend.c src/backend/registry.c src/backend/cpu.c \
              src/io/widen.c src/io/source.c
$(CROSS_BUILD)/bench_engine: scripts/bench_engine.c $(CROSS_SRCS) $(HDRS)
	@mkdir -p $(dir $@)
	$(CROSS_CC) -O2 -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -fopenmp \
	    $(ENGINE_CFLAGS) -Wall -Wextra -Werror -Wno-unused-parameter \
	    -ffunction-sections -Wl,--gc-sections -Isrc -Ikernels -o $@ scripts/bench_engine.c \
	    $(CROSS_SRCS) -lm

check-aarch64: $(BUILD)/bench_engine
	@if ! command -v $(CROSS_CC) >/dev/null || ! command -v $(firstword $(QEMU_AARCH64)) >/dev/null; then \
	    echo "== check-aarch64: $(CROSS_CC) or $(firstword $(QEMU_AARCH64)) not found; skipped"; exit 0; fi; \
	echo "== check-aarch64: the engine for aarch64 under qemu-user, against the x86 hashes"; \
	$(MAKE) --no-print-directory $(CROSS_BUILD)/bench_engine >/dev/null || exit 1; \
	$(BUILD)/bench_engine check-quick > $(CROSS_BUILD)/x86.txt || exit 1; \
	for isa in generic neon; do \
	    FP4DIAG_ISA=$$isa $(QEMU_AARCH64) $(CROSS_BUILD)/bench_engine check-quick \
	        > $(CROSS_BUILD)/$$isa.txt 2> $(CROSS_BUILD)/$$isa.err || { cat $(CROSS_BUILD)/$$isa.err; exit 1; }; \
	    if [ -s $(CROSS_BUILD)/$$isa.err ] || ! cmp -s $(CROSS_BUILD)/x86.txt $(CROSS_BUILD)/$$isa.txt; then \
	        echo "check-aarch64: $$isa differs from x86:"; cat $(CROSS_BUILD)/$$isa.err; \
	        diff $(CROSS_BUILD)/x86.txt $(CROSS_BUILD)/$$isa.txt; exit 1; fi; \
	    echo "[ AARCH64 OK ] $$isa: $$(wc -l < $(CROSS_BUILD)/$$isa.txt) shapes, the x86 hashes"; \
	done

# --- aarch64: the Python wheel cross-built against an arm64 sysroot -----------------------
# wheel-aarch64: dist/fp4diag-VERSION-py3-none-linux_aarch64.whl (WHEEL_DIR=DIR elsewhere) on
# this x86-64 machine. scripts/aarch64_sysroot.py unpacks Debian's own arm64 packages (the -dev
# packages the library is built from, python3 and python3-numpy for the test) with everything
# they depend on into $(CROSS_SYSROOT) (private apt state; nothing is installed on the machine;
# it needs the network the first time); then `pip wheel .` runs the in-tree backend with the
# cross compiler pointed at that sysroot, which builds the library into $(CROSS_BUILD)/lib
# (CUDA=0, MPI=0) and tags the wheel linux_aarch64 from its ELF header. The make that pip runs
# gets its variables from this environment only (MAKEFLAGS and the command line's variables
# of this make are not passed on). src/tests/cli/python_wheel_aarch64.sh installs the wheel
# in a fresh arm64 virtual environment under qemu-user and compares it with this CLI.
CROSS_SYSROOT := $(CROSS_BUILD)/sysroot
WHEEL_DIR ?= dist
CROSS_SYSROOT_ABS = $(CURDIR)/$(CROSS_SYSROOT)
CROSS_WHEEL_ENV = env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES \
    CC="$(CROSS_CC) --sysroot=$(CROSS_SYSROOT_ABS)" CUDA=0 MPI=0 SAN=0 \
    DEVELOPER=$(DEVELOPER) BUILD=$(CROSS_BUILD)/lib PKG_CONFIG_SYSROOT_DIR=$(CROSS_SYSROOT_ABS) \
    PKG_CONFIG_LIBDIR=$(CROSS_SYSROOT_ABS)/usr/lib/aarch64-linux-gnu/pkgconfig:$\
$(CROSS_SYSROOT_ABS)/usr/share/pkgconfig

aarch64-sysroot:
	@python3 scripts/aarch64_sysroot.py $(CROSS_BUILD)

wheel-aarch64: aarch64-sysroot
	@command -v $(CROSS_CC) >/dev/null || { echo "wheel-aarch64: $(CROSS_CC) not found" \
	    "(scripts/install-deps.sh installs gcc-aarch64-linux-gnu)" >&2; exit 1; }
	@mkdir -p $(WHEEL_DIR)
	$(CROSS_WHEEL_ENV) python3 -m pip wheel --no-index --no-deps --no-cache-dir \
	    -w $(WHEEL_DIR) .

.PHONY: check-san check-valgrind fuzz-ci fuzz check-aarch64 aarch64-sysroot wheel-aarch64
