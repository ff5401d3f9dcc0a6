#!/usr/bin/env python3
"""A misbehaving MCP server for the client's bad-input tests.

It speaks just enough of the legacy era to get connected, then does what a broken or hostile
server can do on the wire, chosen by the first argument. Everything it does, a real server has
been seen to do (see the project's notes on server quirks) or could do by crashing.
"""
import json
import sys
import time

scenario = sys.argv[1]
out = sys.stdout.buffer


def send(obj):
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

if scenario == "silent":
    for line in sys.stdin:
        pass
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
    elif mid is not None and "result" not in msg and "error" not in msg:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})
    elif "result" in msg or "error" in msg:
        # Echo what the client answered on stderr, so a test can read it.
        print("client answered " + json.dumps(msg), file=sys.stderr, flush=True)
