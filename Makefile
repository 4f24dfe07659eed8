# Top-level convenience Makefile for colors.
#
# CMake is the real build system; this file only strings together the usual
# developer / CI workflows so that `make test` works on a fresh Debian 12
# checkout. Every target is phony: CMake/ctest do their own dependency
# tracking, so we always delegate to them.
#
#   make bootstrap   install missing Debian packages (no-op if all present)
#   make build       configure + build into ./build
#   make test        build, then run all test suites
#   make demo        build, then run scripts/demo.sh
#   make bench       build, then run the benchmark executable
#   make asan        build + test with AddressSanitizer in ./build-asan
#   make tsan        build + test with ThreadSanitizer in ./build-tsan
#   make install     install ./build into $(PREFIX)
#   make clean       remove all build directories

# Overridable knobs, e.g. `make test JOBS=8` or `make install PREFIX=/opt/colors`.
BUILD_DIR  ?= build
BUILD_TYPE ?= RelWithDebInfo
GENERATOR  ?= Unix Makefiles
JOBS       ?= 2
# Debug information: full (-g) or lines (-g1, about a quarter less compile time; CI uses it).
COLORS_DEBUG_INFO ?= full
PREFIX     ?= /usr/local
# Benchmark executable (built by tests/bench/CMakeLists.txt).
BENCH      ?= $(BUILD_DIR)/tests/bench/colors-bench

# Sub-makes spawned by `cmake --build` inherit MAKEFLAGS; keep their output terse.
MAKEFLAGS += --no-print-directory

CTEST_FLAGS = --output-on-failure -j$(JOBS) --timeout 300

# Runs a suite and prints "time: <label> <seconds> s" after it (where a CI run's time goes).
TIMED = bash scripts/timed.sh

# configure_and_build(<build dir>, <extra cmake args>)
define configure_and_build
	cmake -S . -B $(1) -G '$(GENERATOR)' -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DCOLORS_DEBUG_INFO=$(COLORS_DEBUG_INFO) $(2)
	$(TIMED) build-$(1) cmake --build $(1) -j$(JOBS)
endef

.PHONY: all bootstrap build test demo bench asan tsan install clean

all: build

bootstrap:
	@bash scripts/bootstrap.sh

build: bootstrap
	$(call configure_and_build,$(BUILD_DIR),)

test: build
	$(TIMED) ctest ctest --test-dir $(BUILD_DIR) $(CTEST_FLAGS)
	BUILD_DIR=$(BUILD_DIR) JOBS=$(JOBS) $(TIMED) python bash bindings-python/run-tests.sh
	BUILD_DIR=$(BUILD_DIR) JOBS=$(JOBS) $(TIMED) java bash bindings-java/run-tests.sh
	BUILD_DIR=$(BUILD_DIR) JOBS=$(JOBS) $(TIMED) oo7-java bash oo7/java/run-tests.sh
	BUILD_DIR=$(BUILD_DIR) $(TIMED) bank python3 tests/bank/run
	BUILD_DIR=$(BUILD_DIR) $(TIMED) rpc-bench-smoke bash rpc-bench/run --smoke

# The demo script is run with the build environment loaded (colors-server
# on PATH, COLORS_BUILD_DIR / COLORS_SOURCE_DIR set).
demo: build
	@if [ ! -f scripts/demo.sh ]; then \
	    echo "make demo: scripts/demo.sh does not exist yet" >&2; exit 1; \
	fi
	. ./$(BUILD_DIR)/env.sh && bash scripts/demo.sh

bench: build
	@if [ ! -x $(BENCH) ]; then \
	    echo "make bench: benchmark executable $(BENCH) was not built" >&2; exit 1; \
	fi
	. ./$(BUILD_DIR)/env.sh && ./$(BENCH)
	. ./$(BUILD_DIR)/env.sh && python3 bindings-python/benchmarks/bench.py
	. ./$(BUILD_DIR)/env.sh && python3 bindings-python/benchmarks/bench_transactions.py
	. ./$(BUILD_DIR)/env.sh && python3 bindings-python/benchmarks/bench_durability.py
	. ./$(BUILD_DIR)/env.sh && python3 colors-server/bench/durability.py
	BUILD_DIR=$(BUILD_DIR) bash bindings-java/run-bench.sh
	BUILD_DIR=$(BUILD_DIR) bash rpc-bench/run --quick
	BUILD_DIR=$(BUILD_DIR) bash oo7/run --quick

# Sanitizer builds live in their own directories so they never pollute the
# normal build (sanitizer flags are global, see COLORS_SANITIZE in
# CMakeLists.txt). The *SAN_OPTIONS are exported for the build step too,
# because catch_discover_tests runs the test binaries at build time.
asan: export ASAN_OPTIONS = detect_leaks=1
asan: bootstrap
	$(call configure_and_build,build-asan,-DCOLORS_SANITIZE=address -DCOLORS_BUILD_BENCHMARKS=OFF)
	$(TIMED) ctest-asan ctest --test-dir build-asan $(CTEST_FLAGS)

# second_deadlock_stack=1: report both stacks for lock-order inversions,
# which matters for the cross-process robust mutexes.
# die_after_fork=0: many multi-process tests fork children from a process whose threads (the
# server watcher) already run; TSan kills such children by default, before they run a line.
# report_thread_leaks=0: a child that ends after its server was killed leaves the finished
# watcher thread unjoined (it ends with the connection; detach() would join it), by design.
# suppressions: accesses ordered through another process, which TSan cannot see (the file says
# which, and why each is ordered).
tsan: export TSAN_OPTIONS = second_deadlock_stack=1 die_after_fork=0 report_thread_leaks=0 suppressions=$(CURDIR)/tests/tsan.supp
# Excluded under TSan only, for a false positive: GCC 12's TSan does not record a lock taken by
# pthread_mutex_timedlock when it returns EOWNERDEAD, and reports the following unlock. The test
# runs in `make test` and `make asan`.
TSAN_EXCLUDE = a waiter blocked on the dead holder.s monitor is released
tsan: bootstrap
	$(call configure_and_build,build-tsan,-DCOLORS_SANITIZE=thread -DCOLORS_BUILD_BENCHMARKS=OFF)
	ctest --test-dir build-tsan $(CTEST_FLAGS) -E "$(TSAN_EXCLUDE)"

install: build
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

clean:
	rm -rf $(sort build build-asan build-tsan $(BUILD_DIR))
