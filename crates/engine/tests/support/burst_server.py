#!/usr/bin/env python3
"""A legacy-era task server that reports a stage, `input_required` and its question in one burst,
as a server does when a task asks at once after saying what it is doing. The engine must keep the
question however it interleaves the three: the stage is older news than the question."""
import json
import sys
import threading

out = sys.stdout.buffer
lock = threading.Lock()
tasks = {}  # task id -> {"status", "at", "waiting": [request ids of tasks/result]}
asked = {}  # elicitation request id -> task id
clock = [0]


def stamp():
    clock[0] += 1
    return "2026-01-01T00:00:%02d.%03dZ" % (clock[0] // 1000, clock[0] % 1000)


def task(tid, message=None):
    t = tasks[tid]
    shown = {"taskId": tid, "status": t["status"], "createdAt": "2026-01-01T00:00:00Z",
             "lastUpdatedAt": t["at"], "ttl": None, "pollInterval": 5000}
    if message:
        shown["statusMessage"] = message
    return shown


def send(*objs):
    # One write for the whole burst, so the client reads the lines back to back.
    with lock:
        out.write(b"".join(json.dumps(o).encode() + b"\n" for o in objs))
        out.flush()


def status(tid, new, message=None):
    tasks[tid]["status"], tasks[tid]["at"] = new, stamp()
    return {"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": task(tid, message)}


def result(tid, rid):
    return {"jsonrpc": "2.0", "id": rid, "result": {
        "content": [{"type": "text", "text": "chose " + tasks[tid]["choice"]}],
        "_meta": {"io.modelcontextprotocol/related-task": {"taskId": tid}}}}


TOOL = {"name": "ask", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}}

for line in sys.stdin:
    msg = json.loads(line)
    method, mid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}},
            "serverInfo": {"name": "burst", "version": "0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [TOOL]}})
    elif method == "tools/call":
        tid = "burst-%d" % len(tasks)
        tasks[tid] = {"status": "working", "at": stamp(), "waiting": [], "choice": None}
        qid = "q-" + tid
        asked[qid] = tid
        send({"jsonrpc": "2.0", "id": mid, "result": {"task": task(tid)}})
        send(status(tid, "working", "Preparing"),
             status(tid, "input_required", "Waiting for a choice"),
             {"jsonrpc": "2.0", "id": qid, "method": "elicitation/create", "params": {
                 "mode": "form", "message": "Pick a colour",
                 "requestedSchema": {"type": "object", "properties": {"colour": {"type": "string"}},
                                     "required": ["colour"]},
                 "_meta": {"io.modelcontextprotocol/related-task": {"taskId": tid}}}})
    elif method == "tasks/get":
        tid = params.get("taskId")
        if tid in tasks:
            send({"jsonrpc": "2.0", "id": mid, "result": task(tid)})
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "unknown task"}})
    elif method == "tasks/result":
        tid = params.get("taskId")
        if tasks.get(tid, {}).get("status") == "completed":
            send(result(tid, mid))
        elif tid in tasks:
            tasks[tid]["waiting"].append(mid)
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "unknown task"}})
    elif method is None and mid in asked:
        tid = asked.pop(mid)
        content = (msg.get("result") or {}).get("content") or {}
        tasks[tid]["choice"] = str(content.get("colour"))
        done = status(tid, "completed")
        send(done, *[result(tid, rid) for rid in tasks[tid]["waiting"]])
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})
