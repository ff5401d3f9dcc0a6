"""What the engine's legacy-era (2025-11-25) task fixture servers share: JSON-RPC lines written
whole, the handshake, and the tasks utility's bookkeeping (`tasks/get`, and `tasks/result`
requests held until their task ends). Each server keeps only what it does differently: its tools,
its questions, and how its tasks end. Imported from beside the script (`python3 path/to/x.py` puts
that folder first on sys.path); standard library only."""
import json
import sys
import threading

_out = sys.stdout.buffer
_lock = threading.Lock()


def send(*objs):
    """Writes the messages as JSON lines in one write under one lock, so that a burst reaches the
    client back to back and lines from two threads never interleave."""
    with _lock:
        _out.write(b"".join(json.dumps(o).encode() + b"\n" for o in objs))
        _out.flush()


def messages():
    """Every message the client sends, in order, until it closes stdin."""
    for line in sys.stdin:
        yield json.loads(line)


class Tasks:
    """A server's tasks: each {"status", "at", "waiting": [tasks/result ids], "text", ...}, and the
    questions it asked, by request id, with the task each belongs to."""

    def __init__(self, name, poll_interval):
        self.name = name
        self.poll_interval = poll_interval
        self.tasks = {}
        self.asked = {}
        self.clock = 0

    def stamp(self):
        """A new, later `lastUpdatedAt` each call (a millisecond apart), so every status is news."""
        self.clock += 1
        c = self.clock
        return "2026-01-01T%02d:%02d:%02d.%03dZ" % (c // 3600000, c // 60000 % 60, c // 1000 % 60, c % 1000)

    def start(self, tid, **extra):
        self.tasks[tid] = {"status": "working", "at": self.stamp(), "waiting": [], "text": None, **extra}

    def shown(self, tid, message=None):
        t = self.tasks[tid]
        shown = {"taskId": tid, "status": t["status"], "createdAt": "2026-01-01T00:00:00Z",
                 "lastUpdatedAt": t["at"], "ttl": None, "pollInterval": self.poll_interval}
        if message is not None:
            shown["statusMessage"] = message
        return shown

    def status(self, tid, new, message=None):
        """Moves the task to `new` and returns the notification that says so."""
        self.tasks[tid]["status"], self.tasks[tid]["at"] = new, self.stamp()
        return {"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": self.shown(tid, message)}

    def result(self, tid, rid):
        return {"jsonrpc": "2.0", "id": rid, "result": {
            "content": [{"type": "text", "text": self.tasks[tid]["text"]}],
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": tid}}}}

    def ask(self, tid, message, schema):
        """A form question for the task, remembered so that its answer finds the task."""
        qid = "q-" + tid
        self.asked[qid] = tid
        return {"jsonrpc": "2.0", "id": qid, "method": "elicitation/create", "params": {
            "mode": "form", "message": message, "requestedSchema": schema,
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": tid}}}}

    def finish(self, tid, text):
        """Completes the task with `text`, in the same write as the results held for it."""
        self.tasks[tid]["text"] = text
        send(self.status(tid, "completed"), *[self.result(tid, rid) for rid in self.tasks[tid]["waiting"]])

    def handle(self, msg):
        """Answers what every such server answers alike; False for what the server must answer."""
        method, mid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        tid = params.get("taskId")
        if method == "server/discover":
            # A legacy server: the client must fall back to initialize.
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})
        elif method == "initialize":
            send({"jsonrpc": "2.0", "id": mid, "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}},
                "serverInfo": {"name": self.name, "version": "0"}}})
        elif method == "tasks/get" and tid in self.tasks:
            send({"jsonrpc": "2.0", "id": mid, "result": self.shown(tid)})
        elif method == "tasks/result" and self.tasks.get(tid, {}).get("status") == "completed":
            send(self.result(tid, mid))
        elif method == "tasks/result" and tid in self.tasks:
            self.tasks[tid]["waiting"].append(mid)
        elif method in ("tasks/get", "tasks/result"):
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "unknown task"}})
        else:
            return False
        return True


def refuse(msg):
    """Method not found for any other request; notifications and replies need no answer."""
    if msg.get("id") is not None and msg.get("method") is not None:
        send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}})
