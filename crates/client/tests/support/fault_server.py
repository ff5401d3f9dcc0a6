#!/usr/bin/env python3
"""A misbehaving MCP server for the client's bad-input tests.

It speaks just enough of the legacy era to get connected, then does what a broken or hostile
server can do on the wire, chosen by the first argument. Everything it does, a real server has
been seen to do (see the project's notes on server quirks) or could do by crashing.

Set FAULT_COUNT to a file's path and every execution of a tool is appended to it, one line
each, so a test can insist that nothing ran twice.
"""
import json
import os
import sys
import threading
import time

scenario = sys.argv[1]
out = sys.stdout.buffer
# Big enough to break the client's default 16 MiB frame limit; a test with a smaller limit can ask
# for less.
BIG = int(os.environ.get("FAULT_BIG", str(17 * 1024 * 1024)))


def executed(tool):
    path = os.environ.get("FAULT_COUNT")
    if path:
        with open(path, "a") as f:
            f.write(tool + "\n")


write_lock = threading.Lock()


def send(obj):
    with write_lock:
        out.write(json.dumps(obj).encode() + b"\n")
        out.flush()


def raw(data: bytes):
    out.write(data)
    out.flush()


def task(tid, status, at, message=None):
    t = {"taskId": tid, "status": status, "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": at, "ttl": None}
    if message:
        t["statusMessage"] = message
    return t


TOOLS = [{"name": "job", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}}]
# A tool that declares nothing about tasks, so the client calls it plainly.
PLAIN_TOOLS = [{"name": "plain", "inputSchema": {"type": "object"}}]


def result_line(mid, result_text):
    """A tasks/result answer whose text is given raw, so it can be anything but valid."""
    return b'{"jsonrpc":"2.0","id":' + json.dumps(mid).encode() + b',"result":' + result_text + b"}\n"


def unreadable_answer(mid):
    """An answer to request `mid` that the client cannot read, of the kind the scenario names."""
    if scenario.endswith("huge"):
        return result_line(mid, b'{"content":[{"type":"text","text":"' + b"x" * BIG + b'"}]}')
    if scenario.endswith("deep"):
        return result_line(mid, b"[" * 100000 + b"]" * 100000)
    if scenario.endswith("surrogate"):
        return result_line(mid, b'{"content":[{"type":"text","text":"\\ud800"}]}')
    if scenario.endswith("id-last"):
        # Key order is the server's choice: the id comes after a result too long to read.
        return b'{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"' + b"x" * BIG + b'"}]},"id":' + json.dumps(mid).encode() + b"}\n"
    raise SystemExit("unknown scenario " + scenario)


if scenario == "silent":
    for line in sys.stdin:
        pass
    sys.exit(0)

if scenario == "exit-at-once":
    # A wrong flag: the server says so and is gone before the client's first line arrives.
    print("error: unknown flag --frobnicate", file=sys.stderr, flush=True)
    sys.exit(2)

# A task's status for tasks/get: the task runs until its result is asked for.
tasks = {}


def modern_task(status, extra=None):
    t = {"taskId": "t:m", "status": status, "createdAt": "2026-01-01T00:00:00Z",
         "lastUpdatedAt": "2026-01-01T00:00:0%dZ" % (1 if status == "input_required" else 2),
         "ttlMs": None, "pollIntervalMs": 50}
    t.update(extra or {})
    return t


# About 220 KB by default: as big as a question a user may still accept gets (the bound is 256 KiB).
BIG_FORM = {"type": "object", "properties": {
    "f%d" % i: {"type": "string", "title": "Field %d" % i, "description": "d" * 100} for i in range(int(os.environ.get("FAULT_FIELDS", "1500")))}}

if scenario == "modern-big-question":
    # A modern server whose one question is big; it lists it until its answer arrives.
    for line in sys.stdin:
        msg = json.loads(line)
        method, mid = msg.get("method"), msg.get("id")
        if method == "server/discover":
            send({"jsonrpc": "2.0", "id": mid, "result": {"supportedVersions": ["2026-07-28"], "capabilities": {
                "tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
                "serverInfo": {"name": "fault", "version": "0"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
        elif method in ("tools/call", "tasks/get"):
            if method == "tools/call":
                executed("job")
            if tasks.get("answered"):
                result = modern_task("completed", {"result": {"content": [{"type": "text", "text": "done"}]}})
            else:
                result = modern_task("input_required", {"inputRequests": {"q1": {"method": "elicitation/create", "params": {
                    "mode": "form", "message": "Fill in", "requestedSchema": BIG_FORM}}}})
            if method == "tools/call":
                result["resultType"] = "task"
            send({"jsonrpc": "2.0", "id": mid, "result": result})
        elif method == "tasks/update":
            tasks["answered"] = True
            send({"jsonrpc": "2.0", "id": mid, "result": {}})
        elif mid is not None and "result" not in msg and "error" not in msg:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})
    sys.exit(0)

for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}}},
            "serverInfo": {"name": "fault", "version": "0"}}})
    elif method == "tools/list":
        if scenario == "garbage":
            raw(b"this is not json\n")
            raw(b'{"jsonrpc":"2.0","id":1,"result":"' + b"x" * 10000 + b'"}\n')
            raw(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"\xff\xfe"}}\n')
            send({"jsonrpc": "2.0", "id": 987654, "result": {}})
            send({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": task("nobody", "working", "2026-01-01T00:00:01Z")})
            send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": "lots"}})
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
        elif scenario == "hang":
            pass
        elif scenario == "exit-mid-request":
            print("fatal: out of cheese", file=sys.stderr, flush=True)
            raw(b'{"jsonrpc":"2.0","id":')
            sys.exit(3)
        elif scenario in ("error-text", "refuses-plain", "plain-huge"):
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": PLAIN_TOOLS}})
        else:
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
    elif method == "tools/call" and scenario == "statuses":
        # Status before the handle, then duplicates, a stale one, the end, and a late one.
        send({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": task("t:1", "input_required", "2026-01-01T00:00:02Z")})
        send({"jsonrpc": "2.0", "id": mid, "result": {"task": task("t:1", "working", "2026-01-01T00:00:01Z")}})
        send({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": task("t:1", "input_required", "2026-01-01T00:00:02Z")})
        send({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": task("t:1", "working", "2026-01-01T00:00:01.500Z")})
        send({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": task("t:1", "completed", "2026-01-01T00:00:03Z")})
        send({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": task("t:1", "working", "2026-01-01T00:00:09Z")})
    elif method == "tools/call" and scenario == "questions":
        # Server-to-client requests with a string id and with id 0, one tied to a task.
        send({"jsonrpc": "2.0", "id": mid, "result": {"task": task("t:2", "input_required", "2026-01-01T00:00:01Z")}})
        send({"jsonrpc": "2.0", "id": 0, "method": "ping"})
        send({"jsonrpc": "2.0", "id": "task-t:2-0", "method": "elicitation/create", "params": {
            "message": "Pick one", "requestedSchema": {"type": "object", "properties": {"x": {"type": "string"}}},
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t:2"}}}})
        send({"jsonrpc": "2.0", "id": 5, "method": "elicitation/create", "params": {"mode": "telepathy", "message": "?"}})
    elif method == "tools/call" and scenario == "error-text":
        # A plain tool that ran and failed, and whose message happens to name -32601.
        executed("plain")
        send({"jsonrpc": "2.0", "id": mid, "result": {"isError": True, "content": [
            {"type": "text", "text": "upstream said: MCP error -32601: no such endpoint"}]}})
    elif method == "tools/call" and scenario == "plain-huge":
        # A plain call whose result is too long to read.
        executed("plain")
        raw(unreadable_answer(mid))
    elif method == "tools/call" and scenario == "refuses-plain":
        # Needs a task without saying so in its tool list: refuses the plain call itself.
        if "task" not in msg["params"]:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "this tool must be called as a task"}})
        else:
            executed("plain")
            tasks["t:p"] = "completed"
            send({"jsonrpc": "2.0", "id": mid, "result": {"task": task("t:p", "working", "2026-01-01T00:00:01Z")}})
    elif method == "tools/call" and scenario == "quirk4":
        # Quirk 4 as the SDKs have it: a required tool called without a task is an error result
        # naming -32601, and nothing ran.
        if "task" not in msg["params"]:
            send({"jsonrpc": "2.0", "id": mid, "result": {"isError": True, "content": [
                {"type": "text", "text": "MCP error -32601: Tool job requires task augmentation (taskSupport: 'required')"}]}})
        else:
            executed("job")
            tasks["t:q"] = "completed"
            send({"jsonrpc": "2.0", "id": mid, "result": {"task": task("t:q", "working", "2026-01-01T00:00:01Z")}})
    elif method == "tools/call" and (scenario.startswith("result-") or scenario in ("wrong-task", "close-stdin")
                                     or scenario.startswith("polls-") or scenario == "ended-no-result"):
        executed("job")
        tid = "t:" + scenario
        tasks[tid] = "working"
        handle = task(tid, "working", "2026-01-01T00:00:01Z")
        handle["pollInterval"] = 100
        send({"jsonrpc": "2.0", "id": mid, "result": {"task": handle}})
        if scenario == "close-stdin":
            # Stops reading but lives on: whatever the client writes next meets a closed pipe.
            os.close(0)
            time.sleep(3600)
    elif method == "tools/call" and scenario == "token-owner":
        # Keeps the token it was given where another server can find it; ends a while later.
        executed("job")
        with open(os.environ["FAULT_TOKEN"] + ".tmp", "w") as f:
            f.write(msg["params"]["_meta"]["progressToken"])
        os.rename(os.environ["FAULT_TOKEN"] + ".tmp", os.environ["FAULT_TOKEN"])
        tasks["t:owner"] = "working"
        send({"jsonrpc": "2.0", "id": mid, "result": {"task": task("t:owner", "working", "2026-01-01T00:00:01Z")}})
    elif method == "tasks/result" and scenario == "token-owner":
        def finish(mid=mid):
            tasks["t:owner"] = "completed"
            send({"jsonrpc": "2.0", "method": "notifications/tasks/status",
                  "params": task("t:owner", "completed", "2026-01-01T00:00:09Z")})
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "done"}]}})
        threading.Timer(float(os.environ.get("FAULT_DELAY", "1.5")), finish).start()
    elif method == "tools/call" and scenario == "token-thief":
        # Progress for another server's task, by the token that server was given.
        executed("job")
        with open(os.environ["FAULT_TOKEN"]) as f:
            stolen = f.read()
        send({"jsonrpc": "2.0", "method": "notifications/progress",
              "params": {"progressToken": stolen, "progress": 99, "total": 100, "message": "stolen"}})
        tasks["t:thief"] = "completed"
        send({"jsonrpc": "2.0", "id": mid, "result": {"task": task("t:thief", "working", "2026-01-01T00:00:01Z")}})
    elif method == "tasks/get" and scenario == "wrong-task":
        # About another task, one that was cancelled; after a few of those, ours completes.
        send({"jsonrpc": "2.0", "id": mid, "result": task("someone-else", "cancelled", "2026-01-01T00:00:05Z")})
        tasks["gets"] = tasks.get("gets", 0) + 1
        if tasks["gets"] == 5 and "result-for" in tasks:
            send({"jsonrpc": "2.0", "method": "notifications/tasks/status",
                  "params": task("t:wrong-task", "completed", "2026-01-01T00:00:09Z")})
            send({"jsonrpc": "2.0", "id": tasks["result-for"], "result": {"content": [{"type": "text", "text": "done"}]}})
    elif method == "tasks/get" and scenario.startswith("polls-"):
        # The first poll is fine; every one after it cannot be read.
        if tasks.get("polled"):
            raw(unreadable_answer(mid))
        else:
            tasks["polled"] = True
            send({"jsonrpc": "2.0", "id": mid, "result": task(msg["params"]["taskId"], "working", "2026-01-01T00:00:02Z")})
    elif method == "tasks/get" and msg["params"]["taskId"] not in tasks and scenario == "close-stdin":
        # A new process: the task went with the old one.
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "unknown task"}})
    elif method == "tasks/get" and scenario == "ended-no-result":
        # Says the task completed, and never answers the tasks/result that should bring its result.
        send({"jsonrpc": "2.0", "id": mid, "result": task(msg["params"]["taskId"], "completed", "2026-01-01T00:00:02Z")})
    elif method == "tasks/result" and scenario == "ended-no-result":
        pass
    elif method == "tasks/get":
        tid = msg["params"]["taskId"]
        send({"jsonrpc": "2.0", "id": mid, "result": task(tid, tasks.get(tid, "working"), "2026-01-01T00:00:02Z")})
    elif method == "tasks/result" and scenario.startswith("result-"):
        raw(unreadable_answer(mid))
    elif method == "tasks/result" and scenario.startswith("polls-"):
        # Answered before the end, as some servers do: the client goes on polling alone.
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32603, "message": "no result yet"}})
    elif method == "tasks/result" and scenario == "wrong-task":
        tasks["result-for"] = mid
    elif method == "tasks/result":
        tid = msg["params"]["taskId"]
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "done " + tid}]}})
    elif mid is not None and "result" not in msg and "error" not in msg:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})
    elif "result" in msg or "error" in msg:
        # Echo what the client answered on stderr, so a test can read it.
        print("client answered " + json.dumps(msg), file=sys.stderr, flush=True)
