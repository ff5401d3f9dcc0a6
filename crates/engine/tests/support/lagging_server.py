#!/usr/bin/env python3
"""A modern-era task server whose `tasks/update` acknowledgement is eventually consistent, as the
tasks extension allows: after it takes the answer, its polls go on listing the same question
(under the same key) for LAG more polls, then the task completes. The question is several
megabytes (too large to show, so only declined), unless FIELDS says fewer fields.

Every answer it receives is appended to the file ANSWERS names, one JSON line each."""
import json
import os
import sys

out = sys.stdout.buffer
LAG = int(os.environ.get("LAG", "10"))
FIELDS = int(os.environ.get("FIELDS", "10000"))
FORM = {"type": "object", "properties": {
    "f%d" % i: {"type": "string", "description": "d" * 300} for i in range(FIELDS)}}
state = {"answered": False, "lag": LAG}


def send(obj):
    out.write(json.dumps(obj).encode() + b"\n")
    out.flush()


def snapshot(status, extra=None):
    t = {"taskId": "t:lag", "status": status, "createdAt": "2026-01-01T00:00:00Z",
         "lastUpdatedAt": "2026-01-01T00:00:01Z", "ttlMs": None, "pollIntervalMs": 50}
    t.update(extra or {})
    return t


for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": mid, "result": {"supportedVersions": ["2026-07-28"], "capabilities": {
            "tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
            "serverInfo": {"name": "lagging", "version": "0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [{"name": "job", "inputSchema": {"type": "object"}}]}})
    elif method in ("tools/call", "tasks/get"):
        if state["answered"] and state["lag"] <= 0:
            result = snapshot("completed", {"result": {"content": [{"type": "text", "text": "done"}]}})
        else:
            if state["answered"]:
                state["lag"] -= 1
            result = snapshot("input_required", {"inputRequests": {"q1": {"method": "elicitation/create", "params": {
                "mode": "form", "message": "Fill in", "requestedSchema": FORM}}}})
        if method == "tools/call":
            result["resultType"] = "task"
        send({"jsonrpc": "2.0", "id": mid, "result": result})
    elif method == "tasks/update":
        with open(os.environ["ANSWERS"], "a") as f:
            f.write(json.dumps(msg["params"]) + "\n")
        state["answered"] = True
        send({"jsonrpc": "2.0", "id": mid, "result": {"resultType": "complete"}})
    elif mid is not None and "result" not in msg and "error" not in msg:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})
