# bench/dist — the distributed benchmark programs build/bench/dist/<workload>
# (issue 7), included from bench/CMakeLists.txt, and their MPICH copies
# build/bench/dist-mpich/<workload> (issue 14; run with mpirun.mpich or
# mpiexec.hydra) when libswarm-dist-mpich is built. Built only with
# libswarm-dist (MPI, x86-64); run them under mpirun. steal_busy measures how
# long work waits for a thief while its victim computes.
if(NOT TARGET swarm_dist_static)
  message(STATUS "bench/dist: skipped (libswarm-dist not built)")
  return()
endif()
add_custom_target(bench_dist)

# swarm_dist_bench(<program> <target prefix> <output dir> <libraries...>)
function(swarm_dist_bench w prefix dir)
  add_executable(${prefix}_${w} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${w}.c)
  set_target_properties(${prefix}_${w} PROPERTIES OUTPUT_NAME ${w}
    RUNTIME_OUTPUT_DIRECTORY ${dir})
  target_link_libraries(${prefix}_${w} PRIVATE ${ARGN} bench_common)
  target_compile_options(${prefix}_${w} PRIVATE ${SWARM_DIST_CFLAGS})
  if(w STREQUAL "uts")
    target_link_libraries(${prefix}_${w} PRIVATE bench_uts_tree)
  endif()
  add_dependencies(bench_dist ${prefix}_${w})
endfunction()

foreach(w ${SWARM_BENCH_WORKLOADS} steal_busy)
  swarm_dist_bench(${w} bench_dist ${CMAKE_BINARY_DIR}/bench/dist
    swarm_dist_static MPI::MPI_C)
  if(TARGET swarm_dist_mpich_static)
    swarm_dist_bench(${w} bench_dist_mpich ${CMAKE_BINARY_DIR}/bench/dist-mpich
      swarm_dist_mpich_static)
  endif()
endforeach()
