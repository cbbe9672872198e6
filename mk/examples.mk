# mk/examples.mk — the example programs (examples/, issue 17), included by the
# Makefile. `make` builds them into build/examples/ and `make test` runs the
# httpd correctness test (CTest example_httpd_*).
#   make bench-httpd  examples/httpd vs the same source on NPTL vs Debian's
#                     nginx, under wrk, at $(HTTPD_CONNS) keep-alive
#                     connections, 1 KiB and 1 MiB files: requests/s,
#                     p50/p99, server CPU per request; JSON lines to
#                     $(HTTPD_RESULTS), a table on stdout. Part of make bench.
#                     Needs tools/deps/web.txt (nginx, wrk), installed here.
#                     Default: 3 interleaved repetitions of 3 s at the 6
#                     points, 54 runs, about 6 minutes on a quiet machine.
.PHONY: examples bench-httpd

HTTPD_WORKERS ?= $(JOBS)
HTTPD_CONNS   ?= 100,1000,10000
HTTPD_SIZES   ?= 1k,1m
HTTPD_SECONDS ?= 3
HTTPD_REPS    ?= 3
HTTPD_RESULTS ?= results/httpd.jsonl

examples: build

bench-httpd: build
	@tools/install-deps.sh web
	python3 examples/httpd/bench_httpd.py --build $(BUILD) --workers $(HTTPD_WORKERS) \
	  --conns $(HTTPD_CONNS) --sizes $(HTTPD_SIZES) --seconds $(HTTPD_SECONDS) \
	  --reps $(HTTPD_REPS) --json $(HTTPD_RESULTS)

bench: bench-httpd
