#!/usr/bin/env python3
"""A legacy-era task server that sends more than anyone should: `ask` asks a question as big as its
arguments say (`fields` properties described in `pad`
more characters each, and an enum of `options` entries), `chatty` reports
`messages` distinct status messages and one huge one, and writes a huge line to stderr and an
error without an id whose message is huge. Each task ends once its question is answered (with the
answer's action) or, for `chatty`, at once after its messages."""
import json
import sys
import threading

out = sys.stdout.buffer
lock = threading.Lock()
tasks = {}  # task id -> {"status", "at", "waiting": [tasks/result ids], "text"}
asked = {}  # elicitation request id -> task id
clock = [0]
HUGE = 10 * 1024 * 1024


def stamp():
    clock[0] += 1
    return "2026-01-01T%02d:%02d:%02d.%03dZ" % (clock[0] // 3600000, clock[0] // 60000 % 60,
                                                 clock[0] // 1000 % 60, clock[0] % 1000)


def task(tid, message=None):
    t = tasks[tid]
    shown = {"taskId": tid, "status": t["status"], "createdAt": "2026-01-01T00:00:00Z",
             "lastUpdatedAt": t["at"], "ttl": None, "pollInterval": 60000}
    if message is not None:
        shown["statusMessage"] = message
    return shown


def send(*objs):
    with lock:
        out.write(b"".join(json.dumps(o).encode() + b"\n" for o in objs))
        out.flush()


def status(tid, new, message=None):
    tasks[tid]["status"], tasks[tid]["at"] = new, stamp()
    return {"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": task(tid, message)}


def result(tid, rid):
    return {"jsonrpc": "2.0", "id": rid, "result": {
        "content": [{"type": "text", "text": tasks[tid]["text"]}],
        "_meta": {"io.modelcontextprotocol/related-task": {"taskId": tid}}}}


def finish(tid, text):
    tasks[tid]["text"] = text
    send(status(tid, "completed"), *[result(tid, rid) for rid in tasks[tid]["waiting"]])


def schema(fields, options, pad=0):
    props = {"f%d" % i: {"type": "string", "title": "Field %d" % i,
                         "description": "The field numbered %d. " % i + "." * pad}
             for i in range(fields)}
    props["pick"] = {"type": "string", "enum": ["option-%d" % i for i in range(options)]}
    return {"type": "object", "properties": props}


TOOLS = [{"name": n, "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}}
         for n in ("ask", "chatty")]

for line in sys.stdin:
    msg = json.loads(line)
    method, mid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}},
            "serverInfo": {"name": "bounds", "version": "0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        tid = "t-%d" % len(tasks)
        tasks[tid] = {"status": "working", "at": stamp(), "waiting": [], "text": None}
        args = params.get("arguments") or {}
        send({"jsonrpc": "2.0", "id": mid, "result": {"task": task(tid)}})
        if params.get("name") == "ask":
            qid = "q-" + tid
            asked[qid] = tid
            send(status(tid, "input_required", "Waiting for a choice"),
                 {"jsonrpc": "2.0", "id": qid, "method": "elicitation/create", "params": {
                     "mode": "form", "message": "Pick one",
                     "requestedSchema": schema(args.get("fields", 10), args.get("options", 10), args.get("pad", 0)),
                     "_meta": {"io.modelcontextprotocol/related-task": {"taskId": tid}}}})
        else:
            n = args.get("messages", 10)
            for i in range(0, n, 500):
                send(*[status(tid, "working", "step %d" % j) for j in range(i, min(n, i + 500))])
            send(status(tid, "working", "h" * HUGE))
            sys.stderr.write("e" * HUGE + "\n")
            sys.stderr.flush()
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x" * HUGE}})
            finish(tid, "chatted")
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
        finish(tid, "answered: " + str((msg.get("result") or {}).get("action")))
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})
