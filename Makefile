# swarm — the front door.
#   make          build (RelWithDebInfo: -O2 with debug info) into build/
#   make test     install deps, build, run the whole suite (plain + ASan/UBSan + install check,
#                 and the core, sync, I/O and drop-in suites again at 1 and 4 workers: mk/workers.mk)
#   make demo     install deps, build, run the fib benchmark on 1 and on all workers
#   make deps     install the Debian packages the build, tests and benchmarks need
#   make package  Debian packages in build/packages (mk/package.mk, docs/packaging.md)
#   make format   clang-format the sources
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
CMAKE_GEN  := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")

.PHONY: all build deps test test-unit test-asan test-install demo clean format

all: build

deps:
	@tools/install-deps.sh $(DEPS_GROUPS)

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test-unit: build
	cd $(BUILD) && ctest --output-on-failure -j 2 --timeout 300

$(ASAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(ASAN_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DSWARM_SANITIZE=ON -DSWARM_BUILD_BENCH=OFF

test-asan: $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j 2 --timeout 600

test-install: build
	tests/install/run.sh $(BUILD)

# Optional parts add their own targets and append to EXTRA_TESTS / DEPS_GROUPS.
EXTRA_TESTS :=
DEPS_GROUPS := core
-include bench/bench.mk
-include mk/portability.mk
-include mk/cio.mk
-include mk/dist.mk
-include mk/examples.mk
-include mk/package.mk
-include mk/workers.mk

test: deps
	$(MAKE) test-unit
	$(MAKE) test-asan
	$(MAKE) test-install
	$(foreach t,$(EXTRA_TESTS),$(MAKE) $(t) &&) true
	@echo "make test: all suites passed"

demo: deps build
	@tools/demo.sh $(BUILD)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
