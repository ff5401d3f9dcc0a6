#!/usr/bin/env python3
"""A legacy (2025-11-25) Streamable HTTP server whose one tool, `ask_model`, runs as a task and
asks its client for a language model's reply as a client-hosted task: a `sampling/createMessage`
with `params.task`, sent on the standalone GET stream. It then follows that task as a server
does, with `tasks/get` every 200 ms and `tasks/result` once it has ended, for up to two minutes,
sending each poll again on whatever GET stream is open, so a client that restarts and resumes
the session (same `Mcp-Session-Id`) is asked again. Its own task ends with what it got:
"the server got: <text>", or "the server got an error: <message>".

Prints its URL as its first line. Appends one JSON line per notable event to FIXTURE_LOG.
`elicit` as the first argument asks an `elicitation/create` instead. While the file FIXTURE_PAUSE
names exists it sends no poll, as a server that looks again only hours later.
"""
import json
import os
import queue
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SESSION = "hosted-session-1"
LOG = os.environ.get("FIXTURE_LOG")
PAUSE = os.environ.get("FIXTURE_PAUSE")
ELICIT = len(sys.argv) > 1 and sys.argv[1] == "elicit"
outbox = queue.Queue()
answers = {}
answered = threading.Condition()
lock = threading.Lock()
task = {"status": None, "result": None}
task_done = threading.Condition(lock)
counter = [0]


def log(entry):
    if LOG:
        with open(LOG, "a") as f:
            f.write(json.dumps(entry) + "\n")


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


def task_json():
    return {"taskId": "srv-1", "status": task["status"], "createdAt": now(), "lastUpdatedAt": now(),
            "ttl": None, "pollInterval": 200}


def ask(method, params, wait=2.0):
    """Sends a request to the client on the GET stream; its answer, or None after `wait`."""
    with answered:
        counter[0] += 1
        rid = f"s{counter[0]}"
    outbox.put({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    deadline = time.time() + wait
    with answered:
        while rid not in answers:
            left = deadline - time.time()
            if left <= 0:
                return None
            answered.wait(left)
        return answers.pop(rid)


def finish(text):
    with lock:
        task["status"] = "completed"
        task["result"] = {"content": [{"type": "text", "text": text}]}
        task_done.notify_all()
    log({"event": "finished", "text": text})


def work():
    related = {"io.modelcontextprotocol/related-task": {"taskId": "srv-1"}}
    if ELICIT:
        method, params = "elicitation/create", {
            "mode": "form", "message": "Which colour?", "task": {"ttl": 600000}, "_meta": related,
            "requestedSchema": {"type": "object", "properties": {"colour": {"type": "string"}}}}
    else:
        method, params = "sampling/createMessage", {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Name a colour."}}],
            "maxTokens": 20, "task": {"ttl": 600000}, "_meta": related}
    with lock:
        task["status"] = "input_required"
    created = ask(method, params, wait=30)
    hosted = ((created or {}).get("result") or {}).get("task", {}).get("taskId")
    log({"event": "created", "answer": created})
    if not hosted:
        return finish(f"the server got no task: {json.dumps(created)}")
    deadline = time.time() + 120
    status = None
    while time.time() < deadline:
        time.sleep(0.2)
        if PAUSE and os.path.exists(PAUSE):
            deadline = time.time() + 120
            continue
        got = ask("tasks/get", {"taskId": hosted})
        if got is None:
            continue  # nobody answered: the client may be restarting
        if "error" in got:
            log({"event": "tasks/get refused", "error": got["error"]})
            continue
        status = got["result"].get("status")
        if status in ("completed", "failed", "cancelled"):
            break
    log({"event": "hosted task ended", "status": status})
    result = None
    while time.time() < deadline and result is None:
        result = ask("tasks/result", {"taskId": hosted})
    if result is None:
        return finish("the server got nothing")
    if "error" in result:
        return finish("the server got an error: " + result["error"].get("message", ""))
    r = result["result"]
    if ELICIT:
        return finish("the server got: " + json.dumps(r.get("content")))
    return finish("the server got: " + (r.get("content") or {}).get("text", ""))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def reply(self, status, obj=None, headers=None):
        data = json.dumps(obj).encode() if obj is not None else b""
        self.send_response(status)
        if obj is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_DELETE(self):
        log({"event": "session deleted"})
        self.reply(200)

    def do_GET(self):
        if self.headers.get("Mcp-Session-Id") != SESSION:
            return self.reply(404)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        log({"event": "GET stream open"})
        while True:
            try:
                msg = outbox.get(timeout=0.5)
            except queue.Empty:
                msg = None
            try:
                if msg is None:
                    self.wfile.write(b": quiet\n\n")
                else:
                    self.wfile.write(b"data: " + json.dumps(msg).encode() + b"\n\n")
                self.wfile.flush()
            except OSError:
                if msg is not None and msg.get("method") != "tasks/get":
                    outbox.put(msg)  # for the next stream
                return

    def do_POST(self):
        msg = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        method, mid = msg.get("method"), msg.get("id")
        if method == "initialize":
            caps = {"tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}}
            log({"event": "initialize", "capabilities": msg["params"].get("capabilities")})
            return self.reply(200, {"jsonrpc": "2.0", "id": mid, "result": {
                "protocolVersion": "2025-11-25", "capabilities": caps,
                "serverInfo": {"name": "hosted-fixture", "version": "1"}}}, {"Mcp-Session-Id": SESSION})
        if self.headers.get("Mcp-Session-Id") is None:
            # As the reference SDK answers anything before initialize (the modern probe).
            return self.reply(400, {"jsonrpc": "2.0", "id": None,
                                    "error": {"code": -32000, "message": "Bad Request: Server not initialized"}})
        if self.headers.get("Mcp-Session-Id") != SESSION:
            return self.reply(404, {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": "no session"}})
        if method is None:
            # The client's answer to one of our requests.
            with answered:
                answers[mid] = msg
                answered.notify_all()
            return self.reply(202)
        if mid is None:
            return self.reply(202)
        ok = lambda result: self.reply(200, {"jsonrpc": "2.0", "id": mid, "result": result})
        if method == "ping":
            return ok({})
        if method == "tools/list":
            return ok({"tools": [{"name": "ask_model", "inputSchema": {"type": "object"},
                                  "execution": {"taskSupport": "required"}}]})
        if method == "tools/call":
            with lock:
                started = task["status"] is not None
                task["status"] = task["status"] or "working"
            if not started:
                threading.Thread(target=work, daemon=True).start()
            return ok({"task": task_json()})
        if method == "tasks/get":
            with lock:
                return ok(task_json())
        if method == "tasks/result":
            with lock:
                while task["result"] is None:
                    task_done.wait()
                result = dict(task["result"])
            result["_meta"] = {"io.modelcontextprotocol/related-task": {"taskId": "srv-1"}}
            try:
                return ok(result)
            except OSError:
                return
        if method == "tasks/cancel":
            with lock:
                task["status"] = "cancelled"
                return ok(task_json())
        return self.reply(200, {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": method}})


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(f"http://127.0.0.1:{server.server_address[1]}/mcp", flush=True)
server.serve_forever()
