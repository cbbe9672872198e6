# bench/cio/cio.cmake — included (not add_subdirectory: build/bench/cio must
# be the program, not a directory) by bench/CMakeLists.txt. build/bench/cio: swarm's collective I/O against Open MPI's
# MPI-IO (issue 8). Skipped when libswarm-cio is not built (no MPI).
if(NOT TARGET swarm_cio)
  message(STATUS "bench/cio: skipped (libswarm-cio not built, MPI missing)")
  return()
endif()
add_executable(bench_cio ${CMAKE_CURRENT_LIST_DIR}/../cio.c)
set_target_properties(bench_cio PROPERTIES OUTPUT_NAME cio
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
target_link_libraries(bench_cio PRIVATE swarm_cio MPI::MPI_C)
# build/bench/cio-mpich: the same program built against MPICH and its ROMIO,
# linked to libswarm-cio-mpich; run it with mpirun.mpich.
if(TARGET swarm_cio_mpich)
  add_executable(bench_cio_mpich ${CMAKE_CURRENT_LIST_DIR}/../cio.c)
  set_target_properties(bench_cio_mpich PROPERTIES OUTPUT_NAME cio-mpich
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
  target_link_libraries(bench_cio_mpich PRIVATE swarm_cio_mpich)
endif()
