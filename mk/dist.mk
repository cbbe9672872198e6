# mk/dist.mk — distributed work stealing over MPI (src/dist, issue 7),
# included by the Makefile.
#   make test-dist   the dist tests under mpirun, 1..4 oversubscribed ranks,
#                    RMA and message stealing (ctest -L dist); SKIPPED with a
#                    reason, and succeeds, only when MPI (mpicc/mpirun,
#                    tools/deps/mpi.txt) is missing or the CPU is not x86-64
#   make test-cluster the dist and cio tests across simulated nodes that
#                    share no memory (tools/cluster: namespaces, Open MPI
#                    over TCP; 2x1, 2x2, 4x1 nodes x ranks; UTS T3's count;
#                    the cio patterns under MPICH too); SKIPPED with the
#                    reason, and succeeds, where namespaces cannot be made
#                    (not root) or MPI is missing
#   make bench-dist  build/bench/dist/{fib,uts,nqueens,btc} under mpirun:
#                    creation cost vs the shared-memory runtime, one steal's
#                    latency and breakdown, UTS/BTC throughput for P = 1, 2,
#                    RMA vs message stealing; and, where tools/cluster can
#                    make nodes, UTS/BTC/fib across 2 and 4 simulated nodes
#                    x 1-2 ranks and steal_busy (tools/bench-dist.py
#                    --cluster); JSON lines to $(DIST_RESULTS)
#   make bench-dist-t1l issue 14's goal: UTS T1L on 2 simulated nodes x 1
#                    rank vs 1 rank, Open MPI and MPICH, interleaved
DEPS_GROUPS += mpi cluster
EXTRA_TESTS += test-dist test-cluster

DIST_RESULTS ?= $(BUILD)/bench/dist-results.jsonl
DIST_MPIRUN  ?= mpirun --allow-run-as-root --oversubscribe
DIST_REPS    ?= 5

.PHONY: test-dist test-cluster bench-dist bench-dist-t1l

test-dist:
	@if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then \
	  echo "test-dist: SKIPPED, MPI not found (mpicc/mpirun); 'make deps' installs tools/deps/mpi.txt"; exit 0; fi; \
	case "$$(uname -m)" in x86_64) ;; *) \
	  echo "test-dist: SKIPPED, uni-address threads are x86-64 only (this is $$(uname -m))"; exit 0;; esac; \
	set -e; \
	[ -f $(BUILD)/CMakeCache.txt ] || cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo; \
	grep -q 'SWARM_HAVE_DIST:INTERNAL=ON' $(BUILD)/CMakeCache.txt || cmake $(BUILD); \
	cmake --build $(BUILD) -j $(JOBS); \
	cd $(BUILD) && ctest -L dist --output-on-failure --no-tests=error --timeout 120; \
	echo "test-dist: passed (published counts for P = 1..4, migrations, spawn_on, address check)"

test-cluster:
	@if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then \
	  echo "test-cluster: SKIPPED, MPI not found (mpicc/mpirun); 'make deps' installs tools/deps/mpi.txt"; exit 0; fi; \
	if ! why=$$(tools/cluster check); then echo "test-cluster: SKIPPED, $$why"; exit 0; fi; \
	set -e; \
	[ -f $(BUILD)/CMakeCache.txt ] || cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo; \
	cmake --build $(BUILD) -j $(JOBS); \
	tools/cluster-test $(BUILD)

bench-dist: build
	@command -v mpirun >/dev/null 2>&1 || { echo "bench-dist: mpirun not found; 'make deps'"; exit 1; }
	@[ -x $(BUILD)/bench/dist/fib ] || { echo "bench-dist: $(BUILD)/bench/dist not built (MPI missing at configure?)"; exit 1; }
	@cluster=--cluster; why=$$(tools/cluster check) || { cluster=; \
	  echo "bench-dist: no figures across simulated nodes: $$why"; }; \
	python3 tools/bench-dist.py --build $(BUILD) --out $(DIST_RESULTS) --reps $(DIST_REPS) \
	  --mpirun "$(DIST_MPIRUN)" $$cluster

# Issue 14's goal alone: UTS T1L on 2 simulated nodes x 1 rank against 1
# rank, Open MPI and MPICH, interleaved rounds (DIST_ROUNDS, default 3).
# Needs two free cores to show a speed-up.
DIST_ROUNDS ?= 3
bench-dist-t1l: build
	@why=$$(tools/cluster check) || { echo "bench-dist-t1l: $$why"; exit 1; }; \
	python3 tools/bench-dist.py --build $(BUILD) --out $(BUILD)/bench/dist-t1l.jsonl \
	  --t1l-goal --rounds $(DIST_ROUNDS)
