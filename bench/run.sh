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
#   BENCH_ONLY (all)   `stdio` for the stdio lifecycles, progress and resume; `http` for the HTTP part;
#                      `prune` for retention on a big store (needs no Inspector)
#   BENCH_HTTP_CALLS (2000)  plain tools/call round trips per client at c=1 over HTTP
#   BENCH_HTTP_TASKS, BENCH_HTTP_LEGACY_TASKS, BENCH_HTTP_POLL_MS  the HTTP lifecycles' sizes and
#                      pollIntervals (default: BENCH_TASKS, BENCH_LEGACY_TASKS, BENCH_POLL_MS)
#   BENCH_PRUNE_TASKS (100000)  finished tasks seeded for `prune`   BENCH_PRUNE_KEEP (10000)  how many it keeps
#   BENCH_PRUNE_LARGE_EVERY (1000)  every N-th seeded result is about 1 MB (0: none)
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
ONLY=${BENCH_ONLY:-all}
HTTP_CALLS=${BENCH_HTTP_CALLS:-2000}
HTTP_TASKS=${BENCH_HTTP_TASKS:-$TASKS}
HTTP_LEGACY_TASKS=${BENCH_HTTP_LEGACY_TASKS:-$LEGACY_TASKS}
HTTP_POLLS=${BENCH_HTTP_POLL_MS:-$POLLS}
PRUNE_TASKS=${BENCH_PRUNE_TASKS:-100000}
PRUNE_KEEP=${BENCH_PRUNE_KEEP:-10000}
PRUNE_LARGE_EVERY=${BENCH_PRUNE_LARGE_EVERY:-1000}
case "$ONLY" in
  all | stdio | http | prune) ;;
  *) echo "bench: BENCH_ONLY must be all, stdio, http or prune, not $ONLY" >&2; exit 2 ;;
esac
INSPECTOR="$HERE/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"

for b in taskdeck-cli taskdeck-demo-server taskdeck-bench; do
  [ -x "$BIN/$b" ] || { echo "bench: $BIN/$b is missing; build it with --release" >&2; exit 1; }
done
[ "$ONLY" = prune ] || [ -f "$INSPECTOR" ] || { echo "bench: the Inspector is not installed; run npm ci in bench/" >&2; exit 1; }

# Read before HOME moves: rustup finds its toolchains through it.
export BENCH_RUSTC_VERSION=$(rustc --version 2>/dev/null || echo unknown)
WORK=$(mktemp -d)
# The HTTP demo server of the run under way, if any: never left behind by a failed client.
SERVER_PID=
stop_http() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
  fi
}
trap 'stop_http; rm -rf "$WORK"' EXIT
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
if [ "$ONLY" = all ] || [ "$ONLY" = stdio ]; then
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
fi

# Over loopback HTTP: one `taskdeck-demo-server --http 127.0.0.1:0` per client run, with a fresh
# state directory, as the stdio runs have one process each. It prints its URL first on stdout.
# Sets URL and SERVER_PID; the caller ends it with stop_http.
serve_http() {
  local dir=$1 POLL_MS=$2 i lines
  mkdir -p "$dir/state" "$dir/data"
  "$BIN/taskdeck-demo-server" --http 127.0.0.1:0 --state "$dir/state" --poll-interval-ms "$POLL_MS" \
    > "$dir/url" 2> "$dir/server.log" &
  SERVER_PID=$!
  URL=
  for i in $(seq 200); do
    # A whole line, so a URL half written is never read.
    lines=$(wc -l < "$dir/url" 2>/dev/null || true)
    if [ "${lines:-0}" -ge 1 ]; then
      URL=$(head -n 1 "$dir/url")
      return 0
    fi
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.05
  done
  echo "bench: the HTTP demo server gave no URL within 10 s; its log:" >&2
  cat "$dir/server.log" >&2
  exit 1
}

# One HTTP client run against its own server: CLIENT (engine, bare, floor or inspector), ERA (legacy or
# modern; the Inspector speaks legacy), the result's file name, TOOL, ARGS, how many, how many at
# once, the server's pollInterval.
http_client() {
  local client=$1 era=$2 name=$3 tool=$4 args=$5 n=$6 c=$7 POLL_MS=$8 d
  d="$WORK/$name"
  serve_http "$d" "$POLL_MS"
  case "$client" in
    engine)
      printf '{"mcpServers": {"demo": {"url": "%s", "era": "%s"}}}\n' "$URL" "$era" > "$d/servers.json"
      "$BIN/taskdeck-cli" --config "$d/servers.json" --data-dir "$d/data" bench demo "$tool" \
        --args "$args" --tasks "$n" --concurrency "$c" --json > "$OUT/$name.json" ;;
    bare)
      printf '{"mcpServers": {"demo": {"url": "%s"}}}\n' "$URL" > "$d/servers.json"
      "$BIN/taskdeck-bench" bare --config "$d/servers.json" --era "$era" demo "$tool" --args "$args" \
        --tasks "$n" --concurrency "$c" > "$OUT/$name.json" ;;
    floor)
      printf '{"mcpServers": {"demo": {"url": "%s"}}}\n' "$URL" > "$d/servers.json"
      mkdir -p "$d/floor"
      "$BIN/taskdeck-bench" bare --config "$d/servers.json" --era "$era" demo "$tool" --args "$args" \
        --tasks "$n" --concurrency "$c" --durable "$d/floor" > "$OUT/$name.json" ;;
    inspector)
      node "$INSPECTOR" --cli --format json --quiet --load --load-concurrency "$c" --load-requests "$n" \
        --method tools/call --tool-name "$tool" --tool-args-json "$args" --transport http "$URL" \
        > "$OUT/$name.json" ;;
  esac
  stop_http
}

# Every HTTP run of one measurement, rounds alternating the clients as in the stdio runs: NAME,
# TOOL, ARGS, the count for the modern era and the Inspector, the count for the legacy era,
# concurrency, pollInterval.
http_runs() {
  local name=$1 tool=$2 args=$3 n=$4 legacy_n=$5 c=$6 POLL_MS=$7 r era k
  for r in $(seq "$ROUNDS"); do
    for era in $ERAS; do
      k=$n
      [ "$era" = legacy ] && k=$legacy_n
      step "$name / $era engine, round $r: taskdeck-cli bench over HTTP, $k at $c concurrent"
      http_client engine "$era" "$name-$era-engine-r$r" "$tool" "$args" "$k" "$c" "$POLL_MS"
      step "$name / $era bare client, round $r: taskdeck-bench bare over HTTP, no store"
      http_client bare "$era" "$name-$era-bare-r$r" "$tool" "$args" "$k" "$c" "$POLL_MS"
      step "$name / $era durable floor, round $r: the bare client plus only the commits the contract needs"
      http_client floor "$era" "$name-$era-floor-r$r" "$tool" "$args" "$k" "$c" "$POLL_MS"
    done
    step "$name / inspector, round $r: --cli --load --transport http, $n at $c concurrent"
    http_client inspector legacy "$name-inspector-r$r" "$tool" "$args" "$n" "$c" "$POLL_MS"
  done
}

if [ "$ONLY" = all ] || [ "$ONLY" = http ]; then
  # `notes_search` never runs as a task (taskSupport forbidden), so every client sends one plain
  # tools/call and waits for its answer: the round trip, one at a time.
  http_runs http-call notes_search '{"query":"deploy"}' "$HTTP_CALLS" "$HTTP_CALLS" 1 1000
  for poll in $HTTP_POLLS; do
    http_runs "http-count-$poll" count '{"n":1,"delay_ms":0}' "$HTTP_TASKS" "$HTTP_LEGACY_TASKS" "$CONC" "$poll"
    http_runs "http-report-$poll" generate_report '{"topic":"bench","seconds":0}' "$HTTP_TASKS" "$HTTP_LEGACY_TASKS" \
      "$CONC" "$poll"
  done
fi

# What the file says of itself, read before and after the prune: its size on disk (and its WAL's),
# pages in use and free, and how many tasks it holds. Read-only, so reading changes nothing.
store_facts() {
  python3 - "$1" <<'PY'
import json, os, sqlite3, sys
path = sys.argv[1]
size = lambda p: os.path.getsize(p) if os.path.exists(p) else 0
facts = {"file_bytes": size(path), "wal_bytes": size(path + "-wal")}
db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
for pragma in ("page_size", "page_count", "freelist_count", "auto_vacuum"):
    facts[pragma] = db.execute(f"PRAGMA {pragma}").fetchone()[0]
facts["tasks"] = db.execute("SELECT count(*) FROM tasks").fetchone()[0]
facts["events"] = db.execute("SELECT count(*) FROM task_events").fetchone()[0]
db.close()
print(json.dumps(facts))
PY
}

# Retention on a big store (issue 13: "prune of 90,000 tasks under 10 s and the file shrinks"): a
# store of finished tasks seeded through the store's own API (results of a few KB, every
# BENCH_PRUNE_LARGE_EVERY-th about 1 MB), then `taskdeck-cli prune --keep N` as a user runs it, timed
# whole (the process, its lock, the deletes, the vacuum), with the file read before and after.
if [ "$ONLY" = all ] || [ "$ONLY" = prune ]; then
  d="$WORK/prune"
  mkdir -p "$d/data"
  # No server: prune starts none, and no config of the user's is read.
  echo '{"mcpServers": {}}' > "$d/servers.json"
  step "prune: seeding $PRUNE_TASKS finished tasks (every ${PRUNE_LARGE_EVERY}th result about 1 MB)"
  "$BIN/taskdeck-bench" history-store --data-dir "$d/data" --tasks "$PRUNE_TASKS" \
    --large-every "$PRUNE_LARGE_EVERY" > "$OUT/prune-seed.json"
  store_facts "$d/data/taskdeck.sqlite3" > "$OUT/prune-before.json"
  step "prune: taskdeck-cli prune --keep $PRUNE_KEEP"
  t0=$(date +%s%N)
  "$BIN/taskdeck-cli" --config "$d/servers.json" --data-dir "$d/data" prune --keep "$PRUNE_KEEP" --json \
    > "$d/report.json"
  t1=$(date +%s%N)
  store_facts "$d/data/taskdeck.sqlite3" > "$OUT/prune-after.json"
  # The report lists every task removed; the summary needs how many and the space it says.
  python3 - "$d/report.json" "$(( (t1 - t0) / 1000000 ))" > "$OUT/prune.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
print(json.dumps({"wall_ms": int(sys.argv[2]), "removed": len(report["removed"]), "space": report["space"]}))
PY
fi

step "summary"
INSPECTOR_VERSION=none
[ -f "$INSPECTOR" ] && INSPECTOR_VERSION=$(node -e 'console.log(require(process.argv[1]).version)' \
  "$HERE/node_modules/@modelcontextprotocol/inspector/package.json")
BENCH_PRUNE_TASKS="$PRUNE_TASKS" BENCH_PRUNE_KEEP="$PRUNE_KEEP" BENCH_PRUNE_LARGE_EVERY="$PRUNE_LARGE_EVERY" \
BENCH_ERAS="$ERAS" BENCH_ROUNDS="$ROUNDS" BENCH_LEGACY_TASKS="$LEGACY_TASKS" BENCH_ONLY="$ONLY" \
  BENCH_HTTP_CALLS="$HTTP_CALLS" BENCH_HTTP_TASKS="$HTTP_TASKS" BENCH_HTTP_LEGACY_TASKS="$HTTP_LEGACY_TASKS" \
  BENCH_HTTP_POLL_MS="$HTTP_POLLS" python3 "$HERE/summarize.py" "$OUT" "$TASKS" "$CONC" "$POLLS" "$INSPECTOR_VERSION"
