# cmake/packaging.cmake — Debian packages with CPack (`make package`, or
# `cpack -G DEB` in a build directory); docs/packaging.md says what goes
# where. One package per install component (the COMPONENT of each install()
# rule):
#   runtime -> libswarm0       the shared runtime library
#   dropin  -> swarmrun        libswarm-pthread.so, swarmrun, swarm-trace,
#                              swarmrun(1)
#   dev     -> libswarm-dev    headers, the .so link and static library,
#                              swarm.pc, the CMake package, man pages (3)
#   mpi     -> libswarm-mpi0   libswarm-dist and libswarm-cio (only when MPI
#                              was found); its Depends name the MPI library
#                              the build linked (dpkg-shlibdeps reads them)
# Dependencies on system libraries come from dpkg-shlibdeps, so a package
# built against Open MPI depends on that Open MPI's runtime package.
# The files go under /usr with the library directory the build was
# configured with (lib/ by default): the .pc file and the CMake package are
# relocatable, and swarmrun finds libswarm-pthread.so as ../lib beside it.
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "swarm")
set(CPACK_PACKAGE_VENDOR "swarm")
set(CPACK_PACKAGE_CONTACT "swarm developers <swarm@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "lightweight user-level threads on a work-stealing scheduler")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_OUTPUT_FILE_PREFIX "${CMAKE_BINARY_DIR}/packages")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# shlibs files and the ldconfig trigger for the packages with shared libraries
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION "libs")
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
# Only what a user installs: tests and benchmarks install nothing.
set(CPACK_COMPONENTS_ALL runtime dropin dev)
if(SWARM_HAVE_DIST OR SWARM_HAVE_CIO)
  list(APPEND CPACK_COMPONENTS_ALL mpi)
endif()

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME "libswarm0")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "swarm runtime library\n user-level threads (swarm_spawn/swarm_join), blocking I/O that parks\n a thread instead of a worker, and the synchronisation objects")

set(CPACK_DEBIAN_DROPIN_PACKAGE_NAME "swarmrun")
set(CPACK_DEBIAN_DROPIN_PACKAGE_SECTION "utils")
set(CPACK_DEBIAN_DROPIN_PACKAGE_DEPENDS "python3")
set(CPACK_DEBIAN_DROPIN_PACKAGE_SUGGESTS "python3-matplotlib")
set(CPACK_COMPONENT_DROPIN_DESCRIPTION
    "run unmodified pthread programs on swarm threads\n swarmrun preloads libswarm-pthread.so, a drop-in for the pthread\n functions, so a program's threads become swarm threads; swarm-trace\n reads the runtime's traces (SWARM_TRACE).")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME "libswarm-dev")
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION "libdevel")
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libswarm0 (= ${PROJECT_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE})")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "swarm runtime: development files\n headers (swarm.h, swarm.hpp, swarm/*.h), the static library, swarm.pc\n for pkg-config, the CMake package for find_package(swarm), and a man\n page for every public function.")

set(CPACK_DEBIAN_MPI_PACKAGE_NAME "libswarm-mpi0")
set(CPACK_COMPONENT_MPI_DESCRIPTION
    "swarm over MPI: distributed work stealing and collective I/O\n libswarm-dist (threads stolen and migrated between ranks) and\n libswarm-cio (two-phase collective MPI-IO), built for the MPI this\n package depends on.")

include(CPack)
