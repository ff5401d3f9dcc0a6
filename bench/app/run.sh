#!/usr/bin/env bash
# Runs the desktop app benchmarks once and writes OUT_DIR/results.json and OUT_DIR/results.md.
# Usage: bench/app/run.sh BIN_DIR OUT_DIR   (BIN_DIR holds release builds of taskdeck, taskdeck-cli,
# taskdeck-demo-server and bench-minimal-app). Knobs, all environment variables:
#   BENCH_APP_ROUNDS (5)        start-up/memory launches per app   BENCH_APP_SETTLE (5)  idle s before PSS
#   BENCH_APP_FRAME_ROUNDS (3)  frame runs per page                 BENCH_APP_FRAME_SECONDS (10)
#   BENCH_APP_TASKS (10000)     tasks in the seeded store           BENCH_APP_RUNNING (50)  live tasks
#   BENCH_APP_POLL_MS (250)     demo server pollInterval in the frame run
#   BENCH_APP_ENV ("")          VAR=VALUE pairs set for both apps, e.g. WEBKIT_SKIA_ENABLE_CPU_RENDERING=1
#   BENCH_APP_HISTORY=1         only the history runs (OUT_DIR/results-history.*): stores of
#     BENCH_APP_HISTORY_SIZES (0,10000,100000) tasks seeded by taskdeck-bench, every
#     BENCH_APP_LARGE_EVERY (1000)-th result 1 MB; BENCH_APP_SEARCHES (40) timed searches each
#   TAURI_DRIVER (.cache/tools/bin/tauri-driver)   BENCH_APP_KEEP=1 keeps the scratch directory
set -euo pipefail

BIN=$(cd "${1:?BIN_DIR}" && pwd)
mkdir -p "${2:?OUT_DIR}"
OUT=$(cd "$2" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DRIVER=${TAURI_DRIVER:-$ROOT/.cache/tools/bin/tauri-driver}

needed="taskdeck taskdeck-cli taskdeck-demo-server bench-minimal-app"
[ -n "${BENCH_APP_HISTORY:-}" ] && needed="taskdeck taskdeck-bench"
for b in $needed; do
  [ -x "$BIN/$b" ] || { echo "bench-app: $BIN/$b is missing; build it with --release" >&2; exit 1; }
done
[ -x "$DRIVER" ] || { echo "bench-app: no tauri-driver at $DRIVER (make e2e-deps installs it)" >&2; exit 1; }

export BENCH_APP_TAURI_VERSION=$(awk '/^name = "tauri"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' "$ROOT/Cargo.lock")
# GTK's accessibility bridge would start a bus per app that outlives it.
export NO_AT_BRIDGE=1
# The demo server's log reaches the UI (the Servers view shows it): keep its default level, as a user has it.
unset RUST_LOG

args=(--bin "$BIN" --minimal "$BIN/bench-minimal-app" --driver "$DRIVER" --out "$OUT"
  --rounds "${BENCH_APP_ROUNDS:-5}" --settle "${BENCH_APP_SETTLE:-5}"
  --frame-rounds "${BENCH_APP_FRAME_ROUNDS:-3}" --frame-seconds "${BENCH_APP_FRAME_SECONDS:-10}"
  --tasks "${BENCH_APP_TASKS:-10000}" --running "${BENCH_APP_RUNNING:-50}" --poll-ms "${BENCH_APP_POLL_MS:-250}")
for kv in ${BENCH_APP_ENV:-}; do args+=(--app-env "$kv"); done
[ -n "${BENCH_APP_KEEP:-}" ] && args+=(--keep)
[ -n "${BENCH_APP_HISTORY:-}" ] && args+=(--history --history-sizes "${BENCH_APP_HISTORY_SIZES:-0,10000,100000}"
  --large-every "${BENCH_APP_LARGE_EVERY:-1000}" --searches "${BENCH_APP_SEARCHES:-40}")

# One private session bus and one display for every launch, so each app finds the same desktop.
cd "$ROOT"
exec dbus-run-session -- xvfb-run -a -s "-screen 0 1280x800x24 -nolisten tcp" \
  /usr/bin/python3 "$HERE/appbench.py" "${args[@]}"
