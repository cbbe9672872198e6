# bench/dist — the distributed benchmark programs build/bench/dist/<workload>
# (issue 7), included from bench/CMakeLists.txt. Built only with
# libswarm-dist (MPI, x86-64); run them under mpirun.
if(NOT TARGET swarm_dist_static)
  message(STATUS "bench/dist: skipped (libswarm-dist not built)")
  return()
endif()
set(SWARM_BENCH_DIST_DIR ${CMAKE_BINARY_DIR}/bench/dist)
add_custom_target(bench_dist)
foreach(w ${SWARM_BENCH_WORKLOADS})
  add_executable(bench_dist_${w} ${CMAKE_CURRENT_LIST_DIR}/${w}.c)
  set_target_properties(bench_dist_${w} PROPERTIES OUTPUT_NAME ${w}
    RUNTIME_OUTPUT_DIRECTORY ${SWARM_BENCH_DIST_DIR})
  target_link_libraries(bench_dist_${w} PRIVATE swarm_dist_static bench_common
    MPI::MPI_C)
  target_compile_options(bench_dist_${w} PRIVATE ${SWARM_DIST_CFLAGS})
  if(w STREQUAL "uts")
    target_link_libraries(bench_dist_${w} PRIVATE bench_uts_tree)
  endif()
  add_dependencies(bench_dist bench_dist_${w})
endforeach()
# How long work waits for a thief while its victim computes (issue 14).
add_executable(bench_dist_steal_busy ${CMAKE_CURRENT_LIST_DIR}/steal_busy.c)
set_target_properties(bench_dist_steal_busy PROPERTIES OUTPUT_NAME steal_busy
  RUNTIME_OUTPUT_DIRECTORY ${SWARM_BENCH_DIST_DIR})
target_link_libraries(bench_dist_steal_busy PRIVATE swarm_dist_static
  bench_common MPI::MPI_C)
target_compile_options(bench_dist_steal_busy PRIVATE ${SWARM_DIST_CFLAGS})
add_dependencies(bench_dist bench_dist_steal_busy)

# The MPICH copies, build/bench/dist-mpich/<workload> (run them with
# mpirun.mpich / mpiexec.hydra), when libswarm-dist-mpich is built.
if(TARGET swarm_dist_mpich_static)
  foreach(w ${SWARM_BENCH_WORKLOADS} steal_busy)
    add_executable(bench_dist_mpich_${w} ${CMAKE_CURRENT_LIST_DIR}/${w}.c)
    set_target_properties(bench_dist_mpich_${w} PROPERTIES OUTPUT_NAME ${w}
      RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench/dist-mpich)
    target_link_libraries(bench_dist_mpich_${w} PRIVATE swarm_dist_mpich_static
      bench_common)
    target_compile_options(bench_dist_mpich_${w} PRIVATE ${SWARM_DIST_CFLAGS})
    if(w STREQUAL "uts")
      target_link_libraries(bench_dist_mpich_${w} PRIVATE bench_uts_tree)
    endif()
    add_dependencies(bench_dist bench_dist_mpich_${w})
  endforeach()
endif()
