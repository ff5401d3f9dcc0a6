#!/usr/bin/env python3
"""The client the MCP conformance suite drives: taskdeck-cli pointed at the scenario's server.

The suite runs `client.py URL` with MCP_CONFORMANCE_SCENARIO naming the scenario (and, for some,
MCP_CONFORMANCE_CONTEXT holding JSON such as pre-registered client credentials). This writes a
Taskdeck config with one remote server at URL into a fresh directory, then runs the taskdeck-cli
commands a user would run for what the scenario exercises. It exits 0 only when every command did;
the suite judges the rest from what reached its server.

TASKDECK_CLI names the binary (default: target/debug/taskdeck-cli of this repository);
TASKDECK_CONFORMANCE_ERA, when set, goes into the entry as its "era" (run.py's NAME@legacy runs);
TASKDECK_CONFORMANCE_STEP_TIMEOUT is each command's time in seconds; TASKDECK_CONFORMANCE_KEEP=DIR
keeps the config, store and logs in DIR/<scenario>/.
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SERVER = "conformance"
# Enter presses at most, for one command at the keyboard.
MAX_ENTERS = 50
# Under the suite's own 30 s, so that a hung command is ended here, with its output kept, rather
# than by the suite killing the shell and leaving taskdeck-cli behind.
STEP_TIMEOUT = float(os.environ.get("TASKDECK_CONFORMANCE_STEP_TIMEOUT", "12"))


def log(msg):
    print(f"[adapter] {msg}", file=sys.stderr, flush=True)


# The Client ID Metadata Document the suite's CIMD scenario expects a client to have published
# (it checks the client id, and fetches nothing); a user who publishes one sets its URL the same way.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


def config_for(url, context):
    entry = {"url": url, "oauth": {"clientMetadataUrl": CLIENT_METADATA_URL}}
    era = os.environ.get("TASKDECK_CONFORMANCE_ERA")
    if era:
        entry["era"] = era
    # Pre-registered credentials go where a user puts them.
    if context.get("client_id"):
        oauth = {"clientId": context["client_id"]}
        if context.get("client_secret"):
            oauth["clientSecret"] = context["client_secret"]
        entry["oauth"] = oauth
    return {"mcpServers": {SERVER: entry}}


class Cli:
    def __init__(self, binary, workdir):
        self.binary = binary
        self.config = workdir / "servers.json"
        self.data = workdir / "data"

    def __call__(self, *args):
        cmd = [self.binary, "--config", str(self.config), "--data-dir", str(self.data), *args]
        log("$ taskdeck-cli " + " ".join(args))
        start = time.monotonic()
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=STEP_TIMEOUT, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            log(f"timed out after {STEP_TIMEOUT:.0f}s")
            sys.stdout.write(e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""))
            sys.stderr.write(e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or ""))
            raise SystemExit(124)
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        log(f"exit {done.returncode} after {time.monotonic() - start:.2f}s")
        if done.returncode != 0:
            raise SystemExit(done.returncode)
        return done.stdout


    def at_keyboard(self, *args, timeout=None):
        """Runs a command as a person at a terminal who presses Enter at every prompt: stdin is a
        pseudo-terminal, so taskdeck-cli asks its questions field by field (on stderr), and an
        empty reply takes the field's default, or leaves it out when there is none."""
        cmd = [self.binary, "--config", str(self.config), "--data-dir", str(self.data), *args]
        log("$ taskdeck-cli " + " ".join(args) + "   (at a terminal, Enter at every prompt)")
        start = time.monotonic()
        keyboard, terminal = os.openpty()
        proc = subprocess.Popen(cmd, stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        os.close(terminal)
        out, err, prompts = [], bytearray(), [0]

        def watch_prompts():
            seen = 0
            while chunk := proc.stderr.read1(4096):
                err.extend(chunk)
                now = err.count(b"  > ")
                # A required field with no default asks again on Enter: give up after a while
                # rather than press Enter forever; the step then times out with what it said.
                for _ in range(now - seen):
                    if prompts[0] < MAX_ENTERS:
                        os.write(keyboard, b"\n")
                        prompts[0] += 1
                seen = now

        readers = [threading.Thread(target=watch_prompts), threading.Thread(target=lambda: out.append(proc.stdout.read()))]
        for t in readers:
            t.start()
        try:
            code = proc.wait(timeout=timeout or STEP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = None
        for t in readers:
            t.join()
        os.close(keyboard)
        sys.stdout.write(b"".join(out).decode(errors="replace"))
        sys.stderr.write(err.decode(errors="replace"))
        if code is None:
            log(f"timed out after {timeout or STEP_TIMEOUT:.0f}s, having pressed Enter {prompts[0]} times")
            raise SystemExit(124)
        log(f"exit {code} after {time.monotonic() - start:.2f}s, having pressed Enter {prompts[0]} times")
        if code != 0:
            raise SystemExit(code)
        return b"".join(out).decode(errors="replace")


def tool_names(cli):
    tools = json.loads(cli("tools", SERVER, "--json"))
    return [t.get("name") for t in tools]


def call(cli, tool, args=None, answers=()):
    argv = ["run", SERVER, tool, "--json", "--args", json.dumps(args or {})]
    for a in answers:
        argv += ["--answer", json.dumps(a)]
    return cli(*argv)


def basic(cli):
    tool_names(cli)


def tools_call(cli):
    if "add_numbers" not in tool_names(cli):
        raise SystemExit("add_numbers is not among the server's tools")
    rec = json.loads(call(cli, "add_numbers", {"a": 2, "b": 3}))
    texts = [c.get("text", "") for c in ((rec.get("result") or {}).get("content") or []) if isinstance(c, dict)]
    if rec.get("status") != "completed" or not any("is 5" in t for t in texts):
        raise SystemExit(f"add_numbers(2, 3) did not come back as 5: {rec.get('status')}, {texts}")


def elicitation_defaults(cli):
    # The scenario checks that the client, not the server, fills in the schema's defaults. A
    # person accepts them by pressing Enter at each field of the CLI's form; `--answer JSON`
    # would send the object exactly as given.
    # Answered, it ends in about a second; a question that never comes (see run.py, ATTEMPTS)
    # should not hold the attempt for long.
    cli.at_keyboard("run", SERVER, "test_client_elicitation_defaults", "--json", timeout=min(STEP_TIMEOUT, 4))


def sse_retry(cli):
    call(cli, "test_reconnection")


def authorized(cli):
    # As a user would: sign in once (the browser is a script that follows the redirect), then use
    # the server.
    cli("login", SERVER)
    tool_names(cli)
    try:
        call(cli, "test-tool")
    except SystemExit as e:
        # Exit 3: waiting for the user, here for a sign-in with more scopes (a step-up), which
        # the user gives with `login` before running the tool again.
        if e.code != 3:
            raise
        cli("login", SERVER)
        call(cli, "test-tool")


def handler(scenario):
    if scenario.startswith("auth/"):
        return authorized
    return {
        "initialize": basic,
        "tools_call": tools_call,
        "tools-call": tools_call,
        "elicitation-sep1034-client-defaults": elicitation_defaults,
        "sse-retry": sse_retry,
    }.get(scenario)


def main():
    if len(sys.argv) < 2:
        raise SystemExit("usage: client.py SERVER_URL (run by the conformance suite)")
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    run = handler(scenario)
    if run is None:
        raise SystemExit(f"no Taskdeck steps for scenario {scenario!r}")
    # The suite's authorization server approves at once; the "browser" only follows its redirect.
    os.environ["BROWSER"] = f"{sys.executable} {Path(__file__).resolve().parent / 'browser.py'}"
    # Sign-ins go to the scenario's own directory, never the keyring of whoever runs the suite.
    os.environ["TASKDECK_SIGN_IN_STORE"] = "file"
    binary = os.environ.get("TASKDECK_CLI") or str(REPO / "target" / "debug" / "taskdeck-cli")
    # TASKDECK_CONFORMANCE_KEEP=DIR keeps the config, store and logs there, to look at afterwards.
    keep = os.environ.get("TASKDECK_CONFORMANCE_KEEP")
    with tempfile.TemporaryDirectory(prefix="taskdeck-conformance-") as tmp:
        workdir = Path(keep) / scenario.replace("/", "_") if keep else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "servers.json").write_text(json.dumps(config_for(url, context), indent=2))
        log(f"scenario {scenario} against {url}")
        run(Cli(binary, workdir))


if __name__ == "__main__":
    main()
