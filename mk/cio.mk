# mk/cio.mk — collective I/O over MPI (src/cio, issue 8), included by the
# Makefile.
#   make test-cio   the cio tests under mpirun -n 2 and -n 3 (ctest -L cio);
#                   SKIPPED with a reason, and succeeds, only when MPI
#                   (mpicc/mpirun, tools/deps/mpi.txt) is missing
#   make bench-cio  sweep build/bench/cio: hpio and contig, read and write,
#                   P = 2, 4, cb 1..64 MiB, warm and cold, vs Open MPI's
#                   romio321 and ompio; JSON lines to $(CIO_RESULTS)
DEPS_GROUPS += mpi
EXTRA_TESTS += test-cio

CIO_PER_RANK ?= 64M
CIO_RANKS    ?= 2 4
CIO_CBS      ?= 1M 4M 16M 64M
CIO_RESULTS  ?= $(BUILD)/bench/cio-results.jsonl
CIO_MPIRUN   ?= mpirun --allow-run-as-root --oversubscribe

.PHONY: test-cio bench-cio

test-cio:
	@if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then \
	  echo "test-cio: SKIPPED, MPI not found (mpicc/mpirun); 'make deps' installs tools/deps/mpi.txt"; exit 0; fi; \
	set -e; \
	[ -f $(BUILD)/CMakeCache.txt ] || cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo; \
	grep -q 'SWARM_HAVE_CIO:INTERNAL=ON' $(BUILD)/CMakeCache.txt || cmake $(BUILD); \
	cmake --build $(BUILD) -j $(JOBS); \
	cd $(BUILD) && ctest -L cio --output-on-failure --no-tests=error --timeout 120; \
	echo "test-cio: passed (byte-identical to MPI-IO, 2 and 3 ranks)"

bench-cio: build
	@command -v mpirun >/dev/null 2>&1 || { echo "bench-cio: mpirun not found; 'make deps'"; exit 1; }
	@[ -x $(BUILD)/bench/cio ] || { echo "bench-cio: $(BUILD)/bench/cio not built (MPI missing at configure?)"; exit 1; }
	@: > $(CIO_RESULTS); \
	for p in $(CIO_RANKS); do for pat in hpio contig; do for op in read write; do \
	  for cb in $(CIO_CBS); do for cache in warm cold; do for io in romio ompio; do \
	    c=""; [ $$cache = cold ] && c=--cold; \
	    $(CIO_MPIRUN) -n $$p $(BUILD)/bench/cio --pattern $$pat --op $$op --cb $$cb \
	      --per-rank $(CIO_PER_RANK) --mpiio $$io $$c | tee -a $(CIO_RESULTS) || exit 1; \
	  done; done; done; done; done; done; \
	echo "bench-cio: results in $(CIO_RESULTS)"
