#!/usr/bin/env python3
"""A legacy-era task server whose task handles come late: a task-augmented `tools/call` of `slow`
is answered with its task after `--delay` seconds. With `--honour-cancel` a
`notifications/cancelled` for the call before then stops it (no task is made); without it the task
is made and its handle sent anyway, as a server that read the cancel too late would. Every
`notifications/cancelled` and `tasks/cancel` it hears is written, one per line, to the file named
by `--heard`."""
import argparse
import json
import sys
import threading
import time

parser = argparse.ArgumentParser()
parser.add_argument("--delay", type=float, default=1.0)
parser.add_argument("--honour-cancel", action="store_true")
parser.add_argument("--heard", required=True)
args = parser.parse_args()

out = sys.stdout.buffer
lock = threading.Lock()
cancelled = set()
tasks = {}


def send(obj):
    with lock:
        out.write(json.dumps(obj).encode() + b"\n")
        out.flush()


def heard(line):
    with open(args.heard, "a") as f:
        f.write(line + "\n")


def task(tid):
    return {"taskId": tid, "status": tasks[tid], "createdAt": "2026-01-01T00:00:00Z",
            "lastUpdatedAt": "2026-01-01T00:00:01Z", "ttl": None, "pollInterval": 100}


def late_handle(rid):
    time.sleep(args.delay)
    if args.honour_cancel and json.dumps(rid) in cancelled:
        heard("stopped %s before a task was made" % json.dumps(rid))
        return
    tid = "late-%s" % json.dumps(rid)
    tasks[tid] = "working"
    send({"jsonrpc": "2.0", "id": rid, "result": {"task": task(tid)}})


for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}}},
            "serverInfo": {"name": "late-handle", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [
            {"name": "slow", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}}]}})
    elif method == "tools/call":
        threading.Thread(target=late_handle, args=(mid,), daemon=True).start()
    elif method == "notifications/cancelled":
        rid = json.dumps(msg["params"].get("requestId"))
        cancelled.add(rid)
        heard("notifications/cancelled %s" % rid)
    elif method == "tasks/cancel":
        tid = msg["params"]["taskId"]
        heard("tasks/cancel %s" % tid)
        tasks[tid] = "cancelled"
        send({"jsonrpc": "2.0", "id": mid, "result": task(tid)})
    elif method == "tasks/get":
        tid = msg["params"]["taskId"]
        send({"jsonrpc": "2.0", "id": mid, "result": task(tid)})
    elif method == "tasks/result":
        pass  # never ends here: the tests cancel
    elif mid is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
