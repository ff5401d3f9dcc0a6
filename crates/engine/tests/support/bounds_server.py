#!/usr/bin/env python3
"""A legacy-era task server that sends more than anyone should: `ask` asks a question as big as its
arguments say (`fields` properties described in `pad`
more characters each, and an enum of `options` entries), `chatty` reports
`messages` distinct status messages and one huge one, and writes a huge line to stderr and an
error without an id whose message is huge. Each task ends once its question is answered (with the
answer's action) or, for `chatty`, at once after its messages."""
import sys

# No __pycache__ beside the module in the source tree.
sys.dont_write_bytecode = True
from legacy_tasks import Tasks, messages, refuse, send  # noqa: E402

server = Tasks("bounds", poll_interval=60000)
HUGE = 10 * 1024 * 1024


def schema(fields, options, pad=0):
    props = {"f%d" % i: {"type": "string", "title": "Field %d" % i,
                         "description": "The field numbered %d. " % i + "." * pad}
             for i in range(fields)}
    props["pick"] = {"type": "string", "enum": ["option-%d" % i for i in range(options)]}
    return {"type": "object", "properties": props}


TOOLS = [{"name": n, "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}}
         for n in ("ask", "chatty")]

for msg in messages():
    method, mid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if server.handle(msg):
        pass
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        tid = "t-%d" % len(server.tasks)
        server.start(tid)
        args = params.get("arguments") or {}
        send({"jsonrpc": "2.0", "id": mid, "result": {"task": server.shown(tid)}})
        if params.get("name") == "ask":
            form = schema(args.get("fields", 10), args.get("options", 10), args.get("pad", 0))
            send(server.status(tid, "input_required", "Waiting for a choice"), server.ask(tid, "Pick one", form))
        else:
            n = args.get("messages", 10)
            for i in range(0, n, 500):
                send(*[server.status(tid, "working", "step %d" % j) for j in range(i, min(n, i + 500))])
            send(server.status(tid, "working", "h" * HUGE))
            sys.stderr.write("e" * HUGE + "\n")
            sys.stderr.flush()
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x" * HUGE}})
            server.finish(tid, "chatted")
    elif method is None and mid in server.asked:
        tid = server.asked.pop(mid)
        server.finish(tid, "answered: " + str((msg.get("result") or {}).get("action")))
    else:
        refuse(msg)
