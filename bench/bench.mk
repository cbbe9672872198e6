# bench/bench.mk — the benchmark suite's make targets (issue 3), included by
# the top-level Makefile:
#   make bench        build everything (peers too), run every workload on every
#                     system at 1 and all workers: results/bench.json + .png
#                     and pingpong (issue 5) for every server, load shape and
#                     connection count: results/pingpong.json + .png
#   make bench-locks  contended mutex/rwlock/cond: NPTL, drop-in, native:
#                     results/locks.json
#   make bench-instr  callgrind instructions per task, fib(22), 1 worker, every
#                     system: results/bench-instr.json
#   make bench-build  just build swarm's benchmark programs and the peers
# (make demo runs tools/demo.sh, the short version.) The Go peers are built
# by tools/bench.py with `go build`.
DEPS_GROUPS += bench

.PHONY: bench bench-instr bench-build bench-locks

# Re-run CMake's configure step first: a build directory configured before
# `make deps` installed oneTBB or OpenSSL would otherwise keep skipping them.
bench-build: build
	@cmake -S . -B $(BUILD) -DSWARM_BUILD_BENCH=ON >/dev/null
	cmake --build $(BUILD) --target bench_all -j $(JOBS)

bench: deps
	$(MAKE) bench-build
	python3 tools/bench.py --mode full --build $(BUILD)
	$(MAKE) bench-locks

# Contended mutex, rwlock and condition variable, 2-64 threads on 2 workers:
# NPTL, the drop-in and the native API side by side (issue 18).
bench-locks: build
	@mkdir -p results
	$(BUILD)/bench/locks --reps 5 --seconds 0.5 -w 2 --threads 2,4,8,16,64 --json results/locks.json

bench-instr: deps
	$(MAKE) bench-build
	python3 tools/bench.py --mode instr --build $(BUILD)
