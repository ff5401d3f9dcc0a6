# `make bench`: every benchmark in docs/benchmarks.md, on release builds in the default target/,
# with results in target/bench/ (results.json, results.md). Not part of `make test`: the figures
# depend on the machine, and a slow CI runner must not fail a build.

BENCH_OUT := target/bench
BENCH_BINS := taskdeck-cli taskdeck-demo-server taskdeck-bench

.PHONY: bench bench-http bench-prune bench-deps bench-build

# The Inspector the lifecycle benchmark compares against, pinned in bench/package-lock.json. Its web
# UI's vite is overridden to 7: vite 8 lists an optional package the registry here lacks, so npm ci
# rejects the lock; the CLI that is benchmarked never loads vite.
bench-deps: bench/node_modules/.installed
bench/node_modules/.installed: bench/package.json bench/package-lock.json | deps
	cd bench && npm ci --no-audit --no-fund --loglevel=error
	touch $@

bench-build: | deps
	cargo build --release --locked $(addprefix -p ,$(BENCH_BINS))

# A hang fails the run instead of holding the machine; the whole run takes about 25 minutes on
# 2 cores, the stdio part about 15 of them. BENCH_ONLY=stdio, http or prune runs one part.
bench: bench-build bench-deps
	timeout --kill-after=15 2400 bench/run.sh target/release $(BENCH_OUT)

# Only the HTTP benchmarks (round trips at c=1, lifecycles at c=10, over loopback).
bench-http: bench-build bench-deps
	BENCH_ONLY=http timeout --kill-after=15 2400 bench/run.sh target/release $(BENCH_OUT)

# Only retention on a big store: 100,000 finished tasks seeded, `taskdeck-cli prune --keep 10000`
# timed, the file read before and after (BENCH_PRUNE_TASKS, BENCH_PRUNE_KEEP to change the sizes).
# Needs no Inspector. Seeding takes most of the time.
bench-prune: bench-build
	BENCH_ONLY=prune timeout --kill-after=15 1800 bench/run.sh target/release $(BENCH_OUT)
