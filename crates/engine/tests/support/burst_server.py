#!/usr/bin/env python3
"""A legacy-era task server that reports a stage, `input_required` and its question in one burst,
as a server does when a task asks at once after saying what it is doing. The engine must keep the
question however it interleaves the three: the stage is older news than the question."""
import sys

# No __pycache__ beside the module in the source tree.
sys.dont_write_bytecode = True
from legacy_tasks import Tasks, messages, refuse, send  # noqa: E402

server = Tasks("burst", poll_interval=5000)
TOOL = {"name": "ask", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}}
COLOUR = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}

for msg in messages():
    method, mid = msg.get("method"), msg.get("id")
    if server.handle(msg):
        pass
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [TOOL]}})
    elif method == "tools/call":
        tid = "burst-%d" % len(server.tasks)
        server.start(tid)
        send({"jsonrpc": "2.0", "id": mid, "result": {"task": server.shown(tid)}})
        # One write for the whole burst, so the client reads the lines back to back.
        send(server.status(tid, "working", "Preparing"),
             server.status(tid, "input_required", "Waiting for a choice"),
             server.ask(tid, "Pick a colour", COLOUR))
    elif method is None and mid in server.asked:
        tid = server.asked.pop(mid)
        content = (msg.get("result") or {}).get("content") or {}
        server.finish(tid, "chose " + str(content.get("colour")))
    else:
        refuse(msg)
