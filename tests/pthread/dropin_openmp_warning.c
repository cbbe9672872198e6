/* A program that links OpenMP's libgomp, which the drop-in's threads
 * cannot run (pthread/compat.c): it only asks libgomp a question, starts
 * no parallel region, and must run to its end; openmp_warning.sh checks
 * that the drop-in said why such a program's parallel regions would hang. */
#include <omp.h>

#include "dropin_check.h"

int main(void) {
  report_on_swarm();
  CHECK(omp_get_max_threads() >= 1);
  printf("OK\n");
  return 0;
}
