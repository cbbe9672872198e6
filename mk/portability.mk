# mk/portability.mk — proving the port layer (included by the Makefile).
#   make test-portable  the whole suite with the portable context backend
#                       (-DSWARM_CONTEXT=portable) on this machine
#   make test-aarch64   cross-build for AArch64 and run the whole suite under
#                       qemu-aarch64 (CTest runs each test through
#                       CMAKE_CROSSCOMPILING_EMULATOR, set by the toolchain)
#   make check-models   model-check the deque and the park/ready handshake
#                       (models/, spin)
# test-aarch64 and check-models skip with a printed reason, and succeed, only
# when their tools are missing (`make deps` installs them: tools/deps/cross.txt).
# Anything that fails once the tools are there fails the target.
DEPS_GROUPS += cross
EXTRA_TESTS += test-portable test-aarch64 check-models

PORTABLE_BUILD ?= build-portable
AARCH64_BUILD  ?= build-aarch64
# Iteration factor for tests under emulation (tests read SWARM_TEST_SCALE).
AARCH64_TEST_SCALE ?= 0.25
AARCH64_PREFIX ?= aarch64-linux-gnu-
AARCH64_SYSROOT ?= /usr/aarch64-linux-gnu

.PHONY: test-portable test-aarch64 check-models

$(PORTABLE_BUILD)/CMakeCache.txt:
	cmake -S . -B $(PORTABLE_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DSWARM_CONTEXT=portable -DSWARM_BUILD_BENCH=OFF

test-portable: $(PORTABLE_BUILD)/CMakeCache.txt
	cmake --build $(PORTABLE_BUILD) -j $(JOBS)
	cd $(PORTABLE_BUILD) && ctest --output-on-failure --no-tests=error -j 2 --timeout 300
	@echo "test-portable: passed (portable context backend, $$(uname -m))"

test-aarch64:
	@missing=""; \
	command -v $(AARCH64_PREFIX)gcc >/dev/null 2>&1 || missing="$$missing $(AARCH64_PREFIX)gcc (gcc-aarch64-linux-gnu)"; \
	command -v qemu-aarch64 >/dev/null 2>&1 || missing="$$missing qemu-aarch64 (qemu-user)"; \
	[ -e $(AARCH64_SYSROOT)/lib/ld-linux-aarch64.so.1 ] || missing="$$missing $(AARCH64_SYSROOT) (libc6-dev-arm64-cross)"; \
	if [ -n "$$missing" ]; then \
	  echo "test-aarch64: SKIPPED, not found:$$missing; 'make deps' installs them"; exit 0; fi; \
	set -e; \
	[ -f $(AARCH64_BUILD)/CMakeCache.txt ] || \
	  cmake -S . -B $(AARCH64_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/cmake/toolchain-aarch64.cmake \
	    -DSWARM_AARCH64_PREFIX=$(AARCH64_PREFIX) -DSWARM_AARCH64_SYSROOT=$(AARCH64_SYSROOT) \
	    -DSWARM_BUILD_BENCH=OFF; \
	cmake --build $(AARCH64_BUILD) -j $(JOBS); \
	cd $(AARCH64_BUILD) && SWARM_TEST_SCALE=$(AARCH64_TEST_SCALE) \
	  ctest --output-on-failure --no-tests=error -j 2 --timeout 600; \
	echo "test-aarch64: passed (aarch64 under qemu-user)"

check-models:
	@command -v spin >/dev/null 2>&1 && command -v cc >/dev/null 2>&1 || { \
	  echo "check-models: SKIPPED, spin not found; 'make deps' installs it"; exit 0; }; \
	models/check.sh
