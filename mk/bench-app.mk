# `make bench-app`: the desktop app's start-up, idle memory and frame times, each against a minimal
# Tauri 2 app built and measured in the same run (docs/benchmarks.md, "Desktop app"). Results in
# target/bench-app/ (results.json, results.md). Not part of `make test`: release builds, several
# minutes of headless runs, and figures that depend on the machine.

BENCH_APP_OUT := target/bench-app

.PHONY: bench-app bench-app-build bench-app-history

# Taskdeck as `make package` builds it (the Tauri CLI adds tauri/custom-protocol to release builds),
# the CLI and demo server as `make bench` builds them, so both targets reuse the same artifacts. The
# minimal app is a workspace of its own, so `make test` never builds it; it builds into the same
# target/ with the same dependency versions.
bench-app-build: ui-build bench-build
	cargo build --release --locked -p taskdeck-app --bins --features tauri/custom-protocol
	cd bench/minimal-app && CARGO_TARGET_DIR=$(CURDIR)/target cargo build --release --locked

# A hang fails the run instead of holding the display; the run itself takes about ten minutes.
bench-app: bench-app-build $(TAURI_DRIVER)
	timeout --kill-after=15 1800 bench/app/run.sh target/release $(BENCH_APP_OUT)

# The history runs (issue 13): first paint, idle memory, search latency and scrolling with stores of
# 0, 10,000 and 100,000 tasks (BENCH_APP_HISTORY_SIZES), into target/bench-app/results-history.*.
bench-app-history: bench-app-build $(TAURI_DRIVER)
	BENCH_APP_HISTORY=1 timeout --kill-after=15 3600 bench/app/run.sh target/release $(BENCH_APP_OUT)
