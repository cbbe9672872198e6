# mk/workers.mk — the core, sync, I/O and drop-in suites at other worker
# counts (issue 21 item 8; included by the Makefile).
#   make test-workers   ctest -L '^(core|sync|io|pthread)$' with SWARM_WORKERS=1
#                       and =4 (the drop-in's programs: swarmrun -w 1 / -w 4
#                       through DROPIN_WORKERS). The plain suite
#                       (test-unit) runs them at the machine's default.
# Left out: tests that set their own worker count or limits and would only
# repeat themselves (limits_*, the real programs under swarmrun, which take
# minutes), and idle_cpu (a CPU-time figure needing a quiet machine).
EXTRA_TESTS += test-workers

WORKERS_COUNTS  ?= 1 4
WORKERS_EXCLUDE ?= limits|real_programs|idle_cpu

.PHONY: test-workers
test-workers: build
	@set -e; for n in $(WORKERS_COUNTS); do \
	  echo "== core, sync, io, drop-in suites at $$n worker(s)"; \
	  ( cd $(BUILD) && SWARM_WORKERS=$$n DROPIN_WORKERS=$$n \
	    ctest -L '^(core|sync|io|pthread)$$' -E '$(WORKERS_EXCLUDE)' \
	      --output-on-failure -j 2 --timeout 300 ); \
	done
