#!/usr/bin/env bash
# Runs every benchmark once, in one go, on this machine, and writes OUT/results.json (raw figures,
# ratios, machine facts) and OUT/results.md (the section docs/benchmarks.md carries).
# Usage: bench/run.sh BIN_DIR OUT_DIR   (BIN_DIR holds release builds of taskdeck-cli,
# taskdeck-demo-server and taskdeck-bench). Knobs, all environment variables:
#   BENCH_TASKS (500)  lifecycles per client    BENCH_POLL_MS ("250 50")  server pollIntervals to run
#   BENCH_LEGACY_TASKS (2500)  lifecycles per legacy-era engine and bare-client run
#   BENCH_CONCURRENCY (10)                      BENCH_RESUME_SIZES ("10000 20000")
#   BENCH_ERAS ("legacy modern")  eras the engine and the bare client speak (the Inspector speaks legacy)
#   BENCH_ROUNDS (3)   rounds of every lifecycle run; the summary takes each client's median
set -euo pipefail

BIN=$(cd "${1:?BIN_DIR}" && pwd)
mkdir -p "${2:?OUT_DIR}"
OUT=$(cd "$2" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
TASKS=${BENCH_TASKS:-500}
# A legacy lifecycle takes milliseconds, not a poll interval: 500 of them are over in half a
# second, too short to measure steadily, so the engine and the bare client run more there.
LEGACY_TASKS=${BENCH_LEGACY_TASKS:-2500}
POLLS=${BENCH_POLL_MS:-250 50}
CONC=${BENCH_CONCURRENCY:-10}
ERAS=${BENCH_ERAS:-legacy modern}
ROUNDS=${BENCH_ROUNDS:-3}
SIZES=${BENCH_RESUME_SIZES:-10000 20000}
INSPECTOR="$HERE/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"

for b in taskdeck-cli taskdeck-demo-server taskdeck-bench; do
  [ -x "$BIN/$b" ] || { echo "bench: $BIN/$b is missing; build it with --release" >&2; exit 1; }
done
[ -f "$INSPECTOR" ] || { echo "bench: the Inspector is not installed; run npm ci in bench/" >&2; exit 1; }

# Read before HOME moves: rustup finds its toolchains through it.
export BENCH_RUSTC_VERSION=$(rustc --version 2>/dev/null || echo unknown)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# The Inspector keeps a catalog and client state under HOME; keep them out of the user's.
export HOME="$WORK/home" MCP_CATALOG_PATH="$WORK/home/mcp.json" RUST_LOG=warn
mkdir -p "$HOME"

# One config per client, each with a fresh demo-server state directory, so no client inherits
# another's task table. A third argument pins the server's era (the entry's "era" setting).
config() {
  local dir="$WORK/$1" POLL_MS=${2:-250} era=""
  [ -n "${3:-}" ] && era=$(printf ', "era": "%s"' "$3")
  mkdir -p "$dir/state" "$dir/data"
  printf '{"mcpServers": {"demo": {"command": "%s", "args": ["--state", "%s", "--poll-interval-ms", "%s"]%s}}}\n' \
    "$BIN/taskdeck-demo-server" "$dir/state" "$POLL_MS" "$era" > "$dir/servers.json"
  echo "$dir"
}

step() { echo "bench: $*" >&2; }

# Two workloads: `count`, the cheap tool the brief names, which the Inspector calls plainly because
# its taskSupport is optional; and `generate_report` with seconds=0, which is task-required, so the
# Inspector runs it as a task too and the comparison is task against task.
lifecycles() {
  local name=$1 tool=$2 args=$3 POLL_MS=$4 d r
  name="$name-$POLL_MS"
  # Rounds alternate the clients, so a burst of other load on the machine falls on all of them
  # alike; the summary takes each client's median round.
  for r in $(seq "$ROUNDS"); do
    for era in $ERAS; do
      n=$TASKS
      [ "$era" = legacy ] && n=$LEGACY_TASKS
      step "$name / $era engine, round $r: taskdeck-cli bench, $n lifecycles at $CONC concurrent"
      d=$(config "$name-$era-engine-r$r" "$POLL_MS" "$era")
      "$BIN/taskdeck-cli" --config "$d/servers.json" --data-dir "$d/data" bench demo "$tool" \
        --args "$args" --tasks "$n" --concurrency "$CONC" --json > "$OUT/$name-$era-engine-r$r.json"

      step "$name / $era bare client, round $r: taskdeck-bench bare, same workload, no store"
      d=$(config "$name-$era-bare-r$r" "$POLL_MS")
      "$BIN/taskdeck-bench" bare --config "$d/servers.json" --era "$era" demo "$tool" --args "$args" \
        --tasks "$n" --concurrency "$CONC" > "$OUT/$name-$era-bare-r$r.json"
    done

    step "$name / inspector, round $r: --cli --load, same workload"
    d=$(config "$name-inspector-r$r" "$POLL_MS")
    node "$INSPECTOR" --cli --format json --quiet --load --load-concurrency "$CONC" --load-requests "$TASKS" \
      --method tools/call --tool-name "$tool" --tool-args-json "$args" \
      "$BIN/taskdeck-demo-server" --state "$d/state" --poll-interval-ms "$POLL_MS" > "$OUT/$name-inspector-r$r.json"
  done
}
for poll in $POLLS; do
  lifecycles count count '{"n":1,"delay_ms":0}' "$poll"
  lifecycles report generate_report '{"topic":"bench","seconds":0}' "$poll"
done

step "progress: commit per update, batched, engine flush path"
"$BIN/taskdeck-bench" progress > "$OUT/progress.json"

step "resume: $SIZES unfinished tasks"
d=$(config resume)
sizes=()
for s in $SIZES; do sizes+=(--size "$s"); done
"$BIN/taskdeck-bench" resume --config "$d/servers.json" "${sizes[@]}" > "$OUT/resume.json"

step "summary"
BENCH_ERAS="$ERAS" BENCH_ROUNDS="$ROUNDS" BENCH_LEGACY_TASKS="$LEGACY_TASKS" python3 "$HERE/summarize.py" "$OUT" "$TASKS" "$CONC" "$POLLS" \
  "$(node -e 'console.log(require(process.argv[1]).version)' "$HERE/node_modules/@modelcontextprotocol/inspector/package.json")"
