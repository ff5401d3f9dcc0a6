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
# Which parts ran: `all`, `stdio` (lifecycles, progress, resume), `http` or `prune`.
ONLY = os.environ.get("BENCH_ONLY", "all")
STDIO, HTTP, PRUNE = ONLY in ("all", "stdio"), ONLY in ("all", "http"), ONLY in ("all", "prune")
PRUNE_TASKS = int(os.environ.get("BENCH_PRUNE_TASKS", "100000"))
PRUNE_KEEP = int(os.environ.get("BENCH_PRUNE_KEEP", "10000"))
PRUNE_LARGE_EVERY = int(os.environ.get("BENCH_PRUNE_LARGE_EVERY", "1000"))
# The prune target (issue 13): 90,000 tasks removed in under 10 s, and the file shrinks.
PRUNE_TARGET_S = 10
HTTP_CALLS = int(os.environ.get("BENCH_HTTP_CALLS", "0") or 0)
HTTP_TASKS = int(os.environ.get("BENCH_HTTP_TASKS", tasks))
HTTP_LEGACY_TASKS = int(os.environ.get("BENCH_HTTP_LEGACY_TASKS", LEGACY_TASKS))
HTTP_POLLS = [int(p) for p in os.environ.get("BENCH_HTTP_POLL_MS", polls).split()]
# The HTTP targets (issue 11): ahead of the Inspector, at least 0.8x the bare client.
HTTP_TARGETS = {"engine_vs_inspector": 1.0, "engine_vs_bare": 0.8}
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


progress, resume = (load("progress"), load("resume")) if STDIO else (None, None)

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
    """The range of all rounds, in brackets after the median's figure; nothing for one round."""
    return f" ({min(xs)}–{max(xs)})" if len(xs) > 1 else ""


def http_round_trips(era):
    """Plain tools/call round trips at c=1 over HTTP. Ratios are speeds (the other's latency over
    the engine's, calls/s over calls/s), so above 1 means Taskdeck is faster, as for lifecycles."""
    engine, e_all = median_round(f"http-call-{era}-engine", lambda x: -x["latency_ms"]["p50"])
    bare, b_all = median_round(f"http-call-{era}-bare", lambda x: -x["latency_ms"]["p50"])
    insp, i_all = median_round("http-call-inspector", lambda x: -x["latencyMs"]["p50"])
    floor, f_all = median_round(f"http-call-{era}-floor", lambda x: -x["latency_ms"]["p50"])
    el, bl, il, fl = engine["latency_ms"], bare["latency_ms"], insp["latencyMs"], floor["latency_ms"]
    return {
        "workload": {"tool": "notes_search", "arguments": {"query": "deploy"}, "calls": engine["tasks"],
                     "concurrency": 1, "era": era, "transport": "http"},
        "engine": dict(engine, rounds_p50_ms=[-x for x in e_all]),
        "bare_client": dict(bare, rounds_p50_ms=[-x for x in b_all]),
        "inspector": dict(insp, version=inspector_version, era="legacy", rounds_p50_ms=[-x for x in i_all]),
        "ratio_engine_vs_inspector": {"p50": ratio(il["p50"], el["p50"]), "p99": ratio(il["p99"], el["p99"]),
                                      "calls_per_s": ratio(engine["tasks_per_s"], insp["throughput"])},
        "ratio_engine_vs_bare": {"p50": ratio(bl["p50"], el["p50"]), "p99": ratio(bl["p99"], el["p99"]),
                                 "calls_per_s": ratio(engine["tasks_per_s"], bare["tasks_per_s"])},
        "durable_floor": dict(floor, rounds_p50_ms=[-x for x in f_all]),
        "ratio_engine_vs_floor": {"p50": ratio(fl["p50"], el["p50"]), "p99": ratio(fl["p99"], el["p99"]),
                                  "calls_per_s": ratio(engine["tasks_per_s"], floor["tasks_per_s"])},
        "targets": HTTP_TARGETS,
    }


def http_lifecycles(name, tool, args, poll_ms, era):
    r = lifecycles(f"http-{name}", tool, args, poll_ms, era)
    r["workload"]["transport"] = "http"
    r["targets"] = HTTP_TARGETS
    floor, f_all = median_round(f"http-{name}-{poll_ms}-{era}-floor", lambda x: x["tasks_per_s"])
    r["durable_floor"] = dict(floor, rounds_tasks_per_s=f_all)
    r["ratio_engine_vs_floor"] = ratio(r["engine"]["tasks_per_s"], floor["tasks_per_s"])
    return r


results = {
    "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    "machine": machine,
    "only": ONLY,
}
if STDIO:
    results |= {
        "lifecycles": {f"{name}-poll{p}-{era}": lifecycles(name, tool, args, p, era)
                       for p in POLLS for name, tool, args, _ in WORKLOADS for era in ERAS},
        "progress": progress,
        "resume": resume,
    }
if HTTP:
    results["http"] = {
        "round_trips": {era: http_round_trips(era) for era in ERAS},
        "lifecycles": {f"{name}-poll{p}-{era}": http_lifecycles(name, tool, args, p, era)
                       for p in HTTP_POLLS for name, tool, args, _ in WORKLOADS for era in ERAS},
    }
if PRUNE:
    seed, before, after, pruned = load("prune-seed"), load("prune-before"), load("prune-after"), load("prune")
    seconds = round(pruned["wall_ms"] / 1000, 2)
    results["prune"] = {
        "workload": {"tasks": PRUNE_TASKS, "keep": PRUNE_KEEP, "large_every": PRUNE_LARGE_EVERY,
                     "command": f"taskdeck-cli prune --keep {PRUNE_KEEP} --json"},
        "seed": seed,
        "before": before,
        "after": after,
        "removed": pruned["removed"],
        "seconds": seconds,
        "space_reported": pruned["space"],
        "file_ratio_after_vs_before": ratio(after["file_bytes"], before["file_bytes"]),
        "targets": {"seconds": PRUNE_TARGET_S, "file_shrinks": True, "remaining": PRUNE_KEEP},
        "met": {
            "seconds": seconds < PRUNE_TARGET_S,
            "file_shrinks": after["file_bytes"] < before["file_bytes"],
            "remaining": after["tasks"] == min(PRUNE_KEEP, PRUNE_TASKS),
        },
    }

with open(os.path.join(out, "results.json"), "w") as f:
    json.dump(results, f, indent=2)
    f.write("\n")


def lat(d):
    return f"{d['p50']} / {d['p90']} / {d['p99']} / {d['max']}"


def lifecycle_rows(found, polls, inspector_how):
    """The lifecycle table's rows, for the stdio runs or the HTTP ones."""
    rows = []
    for (name, tool, args, inspector_does), p in [(w, p) for p in polls for w in WORKLOADS]:
        w = f"{p} ms | `{tool} {json.dumps(args, separators=(',', ':'))}`"
        for era in ERAS:
            r = found[f"{name}-poll{p}-{era}"]
            e, b = r["engine"], r["bare_client"]
            rows += [
                f"| {w} | engine (`taskdeck-cli bench`) | {era} | task; store, driver, events; {HOW[era]} | "
                f"{e['tasks_per_s']}{spread(e['rounds_tasks_per_s'])} | {lat(e['latency_ms'])} | {e['failed']} | 1 |",
                f"| {w} | bare client (`taskdeck-bench bare`) | {era} | task; no store; progress asked and counted "
                f"({b.get('progress_notifications', 0)} arrived); {HOW[era]} | "
                f"{b['tasks_per_s']}{spread(b['rounds_tasks_per_s'])} | {lat(b['latency_ms'])} | {b['failed']} | "
                f"**{r['ratio_engine_vs_bare']}x** |",
            ]
        i = found[f"{name}-poll{p}-{ERAS[0]}"]["inspector"]
        vs = ", ".join(f"{era} engine **{found[f'{name}-poll{p}-{era}']['ratio_engine_vs_inspector']}x**"
                       for era in ERAS)
        rows.append(f"| {w} | Inspector {inspector_version} {inspector_how} | legacy | {inspector_does} | "
                    f"{i['throughput']}{spread(i['rounds_throughput'])} | "
                    f"{lat(i['latencyMs'])} | {i['errors'] + i['toolErrors']} | {vs} |")
    return rows


LIFECYCLE_HEAD = [
    "| server pollInterval | workload | client | era | what one lifecycle is | tasks/s (range) | latency ms p50 / p90 / p99 / max | failed | engine (same row's era) ÷ this |",
    "| ---: | --- | --- | --- | --- | ---: | --- | ---: | ---: |",
]


def met(x, target, strictly=False):
    """Whether a ratio meets its target; "ahead of" the Inspector is strictly above 1."""
    ok = x is not None and (x > target if strictly else x >= target)
    return "met" if ok else "**missed**"


md = [
    f"Run of {results['when']} on commit `{machine['commit']}`: {machine['nproc']} cores, {machine['cpu']}, "
    f"load average {' '.join(machine['loadavg_at_end'])} at the end; {machine['rustc']}, node {machine['node']}"
    + ("" if ONLY == "all" else f"; only the {ONLY} part (`BENCH_ONLY={ONLY}`)") + ".",
]
if STDIO:
    pe, ps, pb = progress["engine_path"], progress["commit_per_update"], progress["batched_every_update"]
    by = {(r["shape"], r["tasks"]): r for r in resume["runs"]}
    sizes = sorted({r["tasks"] for r in resume["runs"]})
    md += [
        "",
        f"**Lifecycles**: {tasks} per client and workload ({LEGACY_TASKS} for the engine and the bare client in the "
        f"legacy era, whose lifecycles take milliseconds), {conc} concurrent on one server process; "
        f"{ROUNDS} rounds, clients alternating; each figure is the client's median round, with the range "
        f"of all rounds in brackets.",
        "",
        *LIFECYCLE_HEAD,
        *lifecycle_rows(results["lifecycles"], POLLS, "`--cli --load`"),
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

if HTTP:
    h = results["http"]
    md += [
        "",
        f"**HTTP round trips**: plain `tools/call` of `notes_search {{\"query\":\"deploy\"}}` (taskSupport "
        f"forbidden, so no client makes a task), {HTTP_CALLS} per client, one at a time, over loopback HTTP "
        f"to its own `taskdeck-demo-server --http 127.0.0.1:0`; {ROUNDS} rounds, clients alternating; each "
        f"figure is the client's median round by p50, with the p50 of all rounds in brackets. Ratios are "
        f"speeds: the other client's latency ÷ the engine's, so above 1 means Taskdeck is faster.",
        "",
        "| client | era | what one call is | calls/s | latency ms p50 (rounds) / p90 / p99 / max | failed | "
        "p50: engine vs this | p99: engine vs this |",
        "| --- | --- | --- | ---: | --- | ---: | ---: | ---: |",
    ]
    for era in ERAS:
        r = h["round_trips"][era]
        e, b = r["engine"], r["bare_client"]
        el, bl = e["latency_ms"], b["latency_ms"]
        md += [
            f"| engine (`taskdeck-cli bench`) | {era} | call written to the store, sent by its driver, result "
            f"stored, `Engine::wait` woken ({e.get('plain_calls')} of {e['tasks']} answered without a task) | "
            f"{e['tasks_per_s']} | {el['p50']}{spread(e['rounds_p50_ms'])} / {el['p90']} / {el['p99']} / "
            f"{el['max']} | {e['failed']} | 1 | 1 |",
            f"| bare client (`taskdeck-bench bare`) | {era} | `start_tool` on one session, nothing stored "
            f"({b.get('plain_calls')} of {b['tasks']} answered without a task) | {b['tasks_per_s']} | "
            f"{bl['p50']}{spread(b['rounds_p50_ms'])} / {bl['p90']} / {bl['p99']} / {bl['max']} | {b['failed']} | "
            f"**{r['ratio_engine_vs_bare']['p50']}x** | **{r['ratio_engine_vs_bare']['p99']}x** |",
        ]
        f, fl = r["durable_floor"], r["durable_floor"]["latency_ms"]
        md.append(
            f"| durable floor (`taskdeck-bench bare --durable`) | {era} | the bare client plus the two commits a "
            f"recorded call needs (on disk before it is sent, its outcome before it is reported), one bare table | "
            f"{f['tasks_per_s']} | {fl['p50']}{spread(f['rounds_p50_ms'])} / {fl['p90']} / {fl['p99']} / "
            f"{fl['max']} | {f['failed']} | **{r['ratio_engine_vs_floor']['p50']}x** | "
            f"**{r['ratio_engine_vs_floor']['p99']}x** |")
    i = h["round_trips"][ERAS[0]]["inspector"]
    il = i["latencyMs"]
    vs = lambda q: ", ".join(f"{era} engine **{h['round_trips'][era]['ratio_engine_vs_inspector'][q]}x**"
                             for era in ERAS)
    md.append(f"| Inspector {inspector_version} `--cli --load --transport http` | legacy | `callTool` on one "
              f"connection | {i['throughput']} | {il['p50']}{spread(i['rounds_p50_ms'])} / {il['p90']} / "
              f"{il['p99']} / {il['max']} | {i['errors'] + i['toolErrors']} | {vs('p50')} | {vs('p99')} |")
    md += [
        "",
        f"**HTTP lifecycles**: {HTTP_TASKS} per client and workload ({HTTP_LEGACY_TASKS} for the engine and the "
        f"bare client in the legacy era), {conc} concurrent, each client run against its own "
        f"`taskdeck-demo-server --http 127.0.0.1:0`; {ROUNDS} rounds as above.",
        "",
        *LIFECYCLE_HEAD,
        *lifecycle_rows(h["lifecycles"], HTTP_POLLS, "`--cli --load --transport http`"),
        "",
        f"**HTTP targets** (ahead of the Inspector: above {HTTP_TARGETS['engine_vs_inspector']}x; at least "
        f"{HTTP_TARGETS['engine_vs_bare']}x the bare client):",
        "",
        "| measurement | era | engine vs Inspector | | engine vs bare client | | engine vs durable floor |",
        "| --- | --- | ---: | --- | ---: | --- | ---: |",
    ]
    ti, tb = HTTP_TARGETS["engine_vs_inspector"], HTTP_TARGETS["engine_vs_bare"]
    for era in ERAS:
        r = h["round_trips"][era]
        for q in ("p50", "p99"):
            vi, vb = r["ratio_engine_vs_inspector"][q], r["ratio_engine_vs_bare"][q]
            md.append(f"| round trip {q}, c=1 | {era} | {vi}x | {met(vi, ti, strictly=True)} | "
                      f"{vb}x | {met(vb, tb)} | {r['ratio_engine_vs_floor'][q]}x |")
    for p in HTTP_POLLS:
        # `count` is a plain call for the Inspector, so only `generate_report` is task against task.
        for era in ERAS:
            r = h["lifecycles"][f"report-poll{p}-{era}"]
            vi, vb = r["ratio_engine_vs_inspector"], r["ratio_engine_vs_bare"]
            md.append(f"| `generate_report` lifecycles/s, c=10, {p} ms | {era} | {vi}x | "
                      f"{met(vi, ti, strictly=True)} | {vb}x | {met(vb, tb)} | {r['ratio_engine_vs_floor']}x |")
        for era in ERAS:
            r = h["lifecycles"][f"count-poll{p}-{era}"]
            vb = r["ratio_engine_vs_bare"]
            md.append(f"| `count` lifecycles/s, c=10, {p} ms | {era} | ({r['ratio_engine_vs_inspector']}x, "
                      f"against plain calls) | | {vb}x | {met(vb, tb)} | {r['ratio_engine_vs_floor']}x |")

if PRUNE:
    r = results["prune"]
    b, a, m = r["before"], r["after"], r["met"]
    mib = lambda n: f"{n / (1 << 20):.1f} MiB"
    yes = lambda ok: "met" if ok else "**missed**"
    md += [
        "",
        f"**Prune**: a store of {PRUNE_TASKS} finished tasks seeded by `taskdeck-bench history-store` (results "
        f"of a few KB, every {PRUNE_LARGE_EVERY}th about 1 MB; {r['seed'].get('seconds')} s to seed), then "
        f"`{r['workload']['command']}` timed whole, as a user runs it (process start, lock, deletes in chunks "
        f"with their purge lines, the index merged, space given back).",
        "",
        "| | tasks | events | file | pages in use / free | |",
        "| --- | ---: | ---: | ---: | --- | --- |",
        f"| before | {b['tasks']} | {b['events']} | {mib(b['file_bytes'])} | "
        f"{b['page_count'] - b['freelist_count']} / {b['freelist_count']} | |",
        f"| after | {a['tasks']} | {a['events']} | {mib(a['file_bytes'])} ({r['file_ratio_after_vs_before']}x) | "
        f"{a['page_count'] - a['freelist_count']} / {a['freelist_count']} | "
        f"file shrinks: {yes(m['file_shrinks'])}; {PRUNE_KEEP} remain: {yes(m['remaining'])} |",
        "",
        f"Removed {r['removed']} tasks in **{r['seconds']} s** (target under {PRUNE_TARGET_S} s: "
        f"{yes(m['seconds'])}).",
    ]

with open(os.path.join(out, "results.json"), "w") as f:
    json.dump(results, f, indent=2)
    f.write("\n")
with open(os.path.join(out, "results.md"), "w") as f:
    f.write("\n".join(md) + "\n")
print("\n".join(md))
print(f"\nwritten: {out}/results.json and {out}/results.md")
