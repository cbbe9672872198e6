# cmake/toolchain-aarch64.cmake — cross-compile swarm for 64-bit ARM Linux
# with Debian's gcc-aarch64-linux-gnu, and run the tests under qemu-user.
# Used by `make test-aarch64` (mk/portability.mk):
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
# Because CTest prefixes every add_test(NAME x COMMAND target) with
# CMAKE_CROSSCOMPILING_EMULATOR, `ctest` runs the whole suite emulated.
# Override SWARM_AARCH64_PREFIX / SWARM_AARCH64_SYSROOT for another toolchain.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(SWARM_AARCH64_PREFIX "aarch64-linux-gnu-" CACHE STRING "cross tool prefix")
set(SWARM_AARCH64_SYSROOT "/usr/aarch64-linux-gnu" CACHE PATH
    "target libraries for the emulator (qemu -L)")

set(CMAKE_C_COMPILER ${SWARM_AARCH64_PREFIX}gcc)
set(CMAKE_ASM_COMPILER ${SWARM_AARCH64_PREFIX}gcc)
set(CMAKE_CXX_COMPILER ${SWARM_AARCH64_PREFIX}g++)

# Debian's multiarch cross layout: headers and libraries of the target live in
# /usr/aarch64-linux-gnu, which the cross gcc already searches; look for
# target packages there and for programs on the host.
set(CMAKE_FIND_ROOT_PATH ${SWARM_AARCH64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

find_program(SWARM_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static)
if(SWARM_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${SWARM_QEMU_AARCH64} -L
      ${SWARM_AARCH64_SYSROOT})
endif()
