"""Joins the per-benchmark JSON files of one `make bench` run into results.json and results.md,
with every ratio taken between figures of that same run, and prints the summary."""

import json
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone

out, tasks, conc, polls, inspector_version = sys.argv[1:6]
POLLS = [int(p) for p in polls.split()]
ERAS = os.environ.get("BENCH_ERAS", "legacy modern").split()
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "1"))
LEGACY_TASKS = int(os.environ.get("BENCH_LEGACY_TASKS", tasks))
# How each client follows a task, per era.
HOW = {
    "legacy": "`tasks/result` outstanding until the end, status notifications",
    "modern": "`tasks/get` polling at the server's interval",
}

WORKLOADS = [
    ("count", "count", {"n": 1, "delay_ms": 0},
     "plain `tools/call`: `count` is taskSupport optional, and the Inspector makes a task only when required"),
    ("report", "generate_report", {"topic": "bench", "seconds": 0},
     "task (`generate_report` is task-required): the Inspector's own task path"),
]


def load(name):
    with open(os.path.join(out, name + ".json")) as f:
        return json.load(f)


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def cmd(*argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def ratio(a, b):
    return round(a / b, 2) if b else None


progress, resume = load("progress"), load("resume")

machine = {
    "nproc": os.cpu_count(),
    "cpu": cpu_model(),
    "loadavg_at_end": open("/proc/loadavg").read().split()[:3],
    "kernel": platform.release(),
    "node": cmd("node", "--version"),
    "rustc": os.environ.get("BENCH_RUSTC_VERSION") or cmd("rustc", "--version"),
    "commit": cmd("git", "rev-parse", "--short", "HEAD"),
    "worktree_dirty": cmd("git", "status", "--porcelain", "--untracked-files=no") not in ("", "unknown"),
}

def median_round(name, rate):
    """Every round of one client's run, and the round with the median rate (its latencies are the
    ones shown)."""
    rounds = [load(f"{name}-r{r}") for r in range(1, ROUNDS + 1)]
    rounds = [x.get("result", x) for x in rounds]
    ordered = sorted(rounds, key=rate)
    return ordered[len(ordered) // 2], [rate(x) for x in rounds]


def lifecycles(name, tool, args, poll_ms, era):
    name = f"{name}-{poll_ms}"
    engine, e_all = median_round(f"{name}-{era}-engine", lambda x: x["tasks_per_s"])
    bare, b_all = median_round(f"{name}-{era}-bare", lambda x: x["tasks_per_s"])
    insp, i_all = median_round(name + "-inspector", lambda x: x["throughput"])
    e, b, i = engine["tasks_per_s"], bare["tasks_per_s"], insp["throughput"]
    return {
        "workload": {"tool": tool, "arguments": args, "tasks": engine["tasks"], "concurrency": int(conc),
                     "server_poll_interval_ms": int(poll_ms), "era": era},
        "engine": dict(engine, rounds_tasks_per_s=e_all),
        "bare_client": dict(bare, rounds_tasks_per_s=b_all),
        "inspector": dict(insp, version=inspector_version, era="legacy", rounds_throughput=i_all),
        "ratio_engine_vs_inspector": ratio(e, i),
        "ratio_engine_vs_bare": ratio(e, b),
        "targets": {"engine_vs_inspector": 3.0, "engine_vs_bare": 0.7},
    }


def spread(xs):
    return f"{min(xs)}–{max(xs)}" if len(xs) > 1 else ""


results = {
    "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    "machine": machine,
    "lifecycles": {f"{name}-poll{p}-{era}": lifecycles(name, tool, args, p, era)
                   for p in POLLS for name, tool, args, _ in WORKLOADS for era in ERAS},
    "progress": progress,
    "resume": resume,
}
with open(os.path.join(out, "results.json"), "w") as f:
    json.dump(results, f, indent=2)
    f.write("\n")


def lat(d):
    return f"{d['p50']} / {d['p90']} / {d['p99']} / {d['max']}"


pe, ps, pb = progress["engine_path"], progress["commit_per_update"], progress["batched_every_update"]
by = {(r["shape"], r["tasks"]): r for r in resume["runs"]}
sizes = sorted({r["tasks"] for r in resume["runs"]})
md = [
    f"Run of {results['when']} on commit `{machine['commit']}`: {machine['nproc']} cores, {machine['cpu']}, "
    f"load average {' '.join(machine['loadavg_at_end'])} at the end; {machine['rustc']}, node {machine['node']}.",
    "",
    f"**Lifecycles**: {tasks} per client and workload ({LEGACY_TASKS} for the engine and the bare client in the "
    f"legacy era, whose lifecycles take milliseconds), {conc} concurrent on one server process; "
    f"{ROUNDS} rounds, clients alternating; each figure is the client's median round, with the range "
    f"of all rounds in brackets.",
    "",
    "| server pollInterval | workload | client | era | what one lifecycle is | tasks/s (range) | latency ms p50 / p90 / p99 / max | failed | engine (same row's era) ÷ this |",
    "| ---: | --- | --- | --- | --- | ---: | --- | ---: | ---: |",
]
for (name, tool, args, inspector_does), p in [(w, p) for p in POLLS for w in WORKLOADS]:
    w = f"{p} ms | `{tool} {json.dumps(args, separators=(',', ':'))}`"
    for era in ERAS:
        r = results["lifecycles"][f"{name}-poll{p}-{era}"]
        e, b = r["engine"], r["bare_client"]
        md += [
            f"| {w} | engine (`taskdeck-cli bench`) | {era} | task; store, driver, events; {HOW[era]} | "
            f"{e['tasks_per_s']} ({spread(e['rounds_tasks_per_s'])}) | {lat(e['latency_ms'])} | {e['failed']} | 1 |",
            f"| {w} | bare client (`taskdeck-bench bare`) | {era} | task; no store; progress asked and counted "
            f"({b.get('progress_notifications', 0)} arrived); {HOW[era]} | "
            f"{b['tasks_per_s']} ({spread(b['rounds_tasks_per_s'])}) | {lat(b['latency_ms'])} | {b['failed']} | "
            f"**{r['ratio_engine_vs_bare']}x** |",
        ]
    i = results["lifecycles"][f"{name}-poll{p}-{ERAS[0]}"]["inspector"]
    vs = ", ".join(f"{era} engine **{results['lifecycles'][f'{name}-poll{p}-{era}']['ratio_engine_vs_inspector']}x**"
                   for era in ERAS)
    md.append(f"| {w} | Inspector {inspector_version} `--cli --load` | legacy | {inspector_does} | "
              f"{i['throughput']} ({spread(i['rounds_throughput'])}) | "
              f"{lat(i['latencyMs'])} | {i['errors'] + i['toolErrors']} | {vs} |")
md += [
    "",
    f"**Durable progress** ({pe['tasks']} tasks):",
    "",
    "| path | updates/s | commits | vs one commit each |",
    "| --- | ---: | ---: | ---: |",
    f"| one commit per update | {ps['updates_per_s']} | {ps['commits']} | 1 |",
    f"| `apply_batch` of {pb['batch']}, every update written | {pb['updates_per_s']} | {pb['commits']} | "
    f"{progress['ratio_batched_vs_single']}x |",
    f"| engine path: latest per task, one `apply_batch` per {pe['flush_interval_ms']} ms | "
    f"{pe['updates_per_s']} | {pe['commits']} ({pe['rows_written']} rows) | {progress['ratio_engine_vs_single']}x |",
    "",
    f"Engine path: slowest flush {pe['slowest_flush_ms']:.1f} ms, so a value is on disk at most "
    f"{pe['flush_interval_ms'] + pe['slowest_flush_ms']:.0f} ms after it arrived.",
    "",
    "**Resume**:",
    "",
    "| tasks | `call`: resume() (all failed as interrupted) | `task`: resume() returns | `task`: all re-attached and settled |",
    "| ---: | ---: | ---: | ---: |",
]
for n in sizes:
    c, t = by.get(("call", n), {}), by.get(("task", n), {})
    md.append(f"| {n} | {c.get('resume_returned_ms')} ms | {t.get('resume_returned_ms')} ms | "
              f"{t.get('all_settled_ms')} ms |")
if len(sizes) >= 2:
    lo, hi = sizes[0], sizes[-1]
    growth = {shape: ratio(by[(shape, hi)][key], by[(shape, lo)][key])
              for shape, key in [("call", "resume_returned_ms"), ("task", "all_settled_ms")]}
    results["resume"]["growth"] = {"from": lo, "to": hi, "size_ratio": ratio(hi, lo), **growth}
    md += ["", f"From {lo} to {hi} tasks ({ratio(hi, lo)}x): `call` resume grows {growth['call']}x, "
           f"`task` settle grows {growth['task']}x."]
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")

with open(os.path.join(out, "results.md"), "w") as f:
    f.write("\n".join(md) + "\n")
print("\n".join(md))
print(f"\nwritten: {out}/results.json and {out}/results.md")
