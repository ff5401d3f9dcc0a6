#!/usr/bin/env python3
"""A Streamable HTTP MCP server on loopback for the client's HTTP tests.

`legacy` speaks 2025-11-25 with a session; each of its tools answers in a way a broken or
hostile server can (the tool's name says which). `modern` speaks 2026-07-28 and refuses, with
400 HeaderMismatch, any request whose Mcp-Method / Mcp-Name / MCP-Protocol-Version headers do
not match its body, so a test against it fails when a header is wrong.

Prints its URL as its first line. With FIXTURE_LOG set, appends one JSON line per request
(method, path, headers, the JSON-RPC method) and per notable event, for the tests to check.
"""
import base64
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

scenario = sys.argv[1]
LOG = os.environ.get("FIXTURE_LOG")
BIG = int(os.environ.get("FIXTURE_BIG", str(200 * 1024)))
SESSION = "sess-1"
GET_DELAY = int(os.environ.get("FIXTURE_GET_DELAY_MS", "0")) / 1000
log_lock = threading.Lock()
state = {"polls": {}, "tasks": 0}


def log(entry):
    if LOG:
        with log_lock:
            try:
                with open(LOG, "a") as f:
                    f.write(json.dumps(entry) + "\n")
            except OSError:
                pass  # the test is over and took its directory with it


def plain(name):
    return {"name": name, "inputSchema": {"type": "object"}}


LEGACY_TOOLS = [plain(n) for n in (
    "echo", "html500", "rpc400", "midevent", "midevent-resume", "forever", "oversized", "oversized-json",
    "session-change", "session-gone", "redirect", "sign-in", "accepted", "bare500",
)]


def decode_header(value):
    if value is not None and value.startswith("=?base64?") and value.endswith("?="):
        return base64.b64decode(value[len("=?base64?"):-2]).decode()
    return value


class Handler(BaseHTTPRequestHandler):
    # HTTP/1.0: every answer ends with its connection, so a stream needs no chunking.
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    # -- plumbing ---------------------------------------------------------------------------
    def record(self, body_method=None, **extra):
        entry = {"verb": self.command, "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                 "method": body_method}
        entry.update(extra)
        log(entry)

    def json(self, status, obj, headers=None):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def empty(self, status, headers=None):
        self.send_response(status)
        self.send_header("Content-Length", "0")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()

    def sse_start(self, headers=None):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()

    def event(self, obj=None, raw=None, event_id=None):
        out = b""
        if event_id:
            out += b"id: " + event_id.encode() + b"\n"
        out += b"data: " + (raw if raw is not None else json.dumps(obj).encode()) + b"\n\n"
        self.wfile.write(out)
        self.wfile.flush()

    # -- verbs ------------------------------------------------------------------------------
    def do_GET(self):
        self.record()
        if scenario == "modern":
            return self.empty(405)
        last = self.headers.get("Last-Event-ID")
        if last == "p1":
            # The resumed stream of `midevent-resume`: the answer it broke off before.
            self.sse_start()
            return self.event({"jsonrpc": "2.0", "id": state.get("resume_id"),
                               "result": {"content": [{"type": "text", "text": "resumed"}]}}, event_id="p2")
        # The standalone stream: opened (after FIXTURE_GET_DELAY_MS, as a slow server would), then
        # held quietly until the client goes.
        time.sleep(GET_DELAY)
        self.sse_start()
        log({"event": "GET stream open"})
        try:
            while True:
                time.sleep(0.5)
                self.wfile.write(b": quiet\n\n")
                self.wfile.flush()
        except OSError:
            pass

    def do_DELETE(self):
        self.record()
        self.empty(200)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        msg = json.loads(self.rfile.read(length))
        method = msg.get("method")
        self.record(method, body=msg if method == "tools/call" else None)
        if scenario == "modern":
            return self.modern(msg, method)
        return self.legacy(msg, method)

    # -- legacy -----------------------------------------------------------------------------
    def legacy(self, msg, method):
        mid = msg.get("id")
        if method == "initialize":
            return self.json(200, {"jsonrpc": "2.0", "id": mid, "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "http-fixture", "version": "1"}}}, {"Mcp-Session-Id": SESSION})
        if self.headers.get("Mcp-Session-Id") != SESSION:
            # As the reference SDK does for anything before initialize (the modern probe).
            return self.json(400, {"jsonrpc": "2.0", "id": None,
                                   "error": {"code": -32000, "message": "Bad Request: Server not initialized"}})
        if mid is None:
            return self.empty(202)
        if method == "tools/list":
            return self.json(200, {"jsonrpc": "2.0", "id": mid, "result": {"tools": LEGACY_TOOLS}})
        if method == "ping":
            return self.json(200, {"jsonrpc": "2.0", "id": mid, "result": {}})
        if method != "tools/call":
            return self.json(200, {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no"}})
        tool = msg["params"]["name"]
        text = {"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": tool}]}}
        if tool == "echo":
            self.sse_start()
            self.event({"jsonrpc": "2.0", "method": "notifications/message",
                        "params": {"level": "info", "data": "before the answer"}})
            return self.event(text)
        if tool == "html500":
            page = b"<html><body><h1>500 Internal Server Error</h1></body></html>"
            self.send_response(500)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            return self.wfile.write(page)
        if tool == "bare500":
            return self.empty(500)
        if tool == "rpc400":
            return self.json(400, {"jsonrpc": "2.0", "id": None,
                                   "error": {"code": -32602, "message": "the arguments are wrong"}})
        if tool == "midevent":
            self.sse_start()
            self.wfile.write(b'data: {"jsonrpc":"2.0","id":' + json.dumps(mid).encode() + b',"resu')
            return self.wfile.flush()
        if tool == "midevent-resume":
            state["resume_id"] = mid
            self.sse_start()
            self.wfile.write(b"id: p1\nretry: 300\ndata: \n\n")
            self.wfile.write(b'data: {"jsonrpc":"2.0","id":' + json.dumps(mid).encode() + b',"resu')
            self.wfile.flush()
            log({"event": "broke off", "at": time.time()})
            return
        if tool == "forever":
            self.sse_start()
            try:
                while True:
                    self.wfile.write(b": still working\n\n")
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                log({"event": "stream closed by the client", "id": mid})
            return
        if tool == "oversized":
            self.sse_start()
            return self.event(raw=b'{"jsonrpc":"2.0","id":' + json.dumps(mid).encode()
                              + b',"result":{"content":[{"type":"text","text":"' + b"x" * BIG + b'"}]}}')
        if tool == "oversized-json":
            body = b'{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"' + b"x" * BIG + b'"}]},"id":' \
                + json.dumps(mid).encode() + b"}"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            return self.wfile.write(body)
        if tool == "session-change":
            return self.json(200, text, {"Mcp-Session-Id": "sess-2"})
        if tool == "session-gone":
            return self.json(404, {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": "Session not found"}})
        if tool == "redirect":
            host = "localhost:%d" % self.server.server_address[1]
            return self.empty(307, {"Location": "http://%s/elsewhere" % host})
        if tool == "sign-in":
            return self.json(401, {"error": "invalid_token"}, {
                "WWW-Authenticate": 'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"'})
        if tool == "accepted":
            return self.empty(202)
        return self.json(200, text)

    # -- modern -----------------------------------------------------------------------------
    def modern(self, msg, method):
        mid = msg.get("id")
        params = msg.get("params") or {}
        version = (params.get("_meta") or {}).get("io.modelcontextprotocol/protocolVersion")
        expected_name = {"tools/call": params.get("name"), "tasks/get": params.get("taskId"),
                         "tasks/update": params.get("taskId"), "tasks/cancel": params.get("taskId")}.get(method)
        problems = []
        if self.headers.get("MCP-Protocol-Version") != version or version is None:
            problems.append("MCP-Protocol-Version %r vs _meta %r" % (self.headers.get("MCP-Protocol-Version"), version))
        if self.headers.get("Mcp-Method") != method:
            problems.append("Mcp-Method %r vs %r" % (self.headers.get("Mcp-Method"), method))
        if decode_header(self.headers.get("Mcp-Name")) != expected_name:
            problems.append("Mcp-Name %r vs %r" % (self.headers.get("Mcp-Name"), expected_name))
        if self.headers.get("Mcp-Session-Id") is not None:
            problems.append("a session id in the modern era")
        if method == "tools/call" and params.get("name") == "regional":
            region = (params.get("arguments") or {}).get("region")
            header = decode_header(self.headers.get("Mcp-Param-Region"))
            if header != region:
                problems.append("Mcp-Param-Region %r vs %r" % (self.headers.get("Mcp-Param-Region"), region))
        if problems:
            log({"event": "header mismatch", "problems": problems})
            return self.json(400, {"jsonrpc": "2.0", "id": mid,
                                   "error": {"code": -32020, "message": "Header mismatch: " + "; ".join(problems)}})
        now = "2026-12-01T00:00:00Z"
        if method == "server/discover":
            return self.json(200, {"jsonrpc": "2.0", "id": mid, "result": {
                "supportedVersions": ["2026-07-28"], "resultType": "complete",
                "capabilities": {"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
                "serverInfo": {"name": "http-fixture-modern", "version": "1"}}})
        if method == "tools/list":
            return self.json(200, {"jsonrpc": "2.0", "id": mid, "result": {"resultType": "complete", "tools": [
                plain("slow job ☂"), plain("hang"),
                {"name": "regional", "inputSchema": {"type": "object", "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"}, "query": {"type": "string"}}}},
                {"name": "misannotated", "inputSchema": {"type": "object", "properties": {
                    "xs": {"type": "array", "items": {"type": "string", "x-mcp-header": "X"}}}}}]}})
        if method == "tools/call" and params.get("name") == "hang":
            self.sse_start()
            try:
                while True:
                    self.wfile.write(b": working\n\n")
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                log({"event": "stream closed by the client", "id": mid})
            return
        if method == "tools/call" and params.get("name") == "regional":
            return self.json(200, {"jsonrpc": "2.0", "id": mid, "result": {
                "resultType": "complete", "content": [{"type": "text", "text": "ran in " + params["arguments"]["region"]}]}})
        if method == "tools/call":
            state["tasks"] += 1
            tid = "task-%d" % state["tasks"]
            state["polls"][tid] = 0
            # A per-request stream: a notification about the request, then its answer.
            self.sse_start()
            self.event({"jsonrpc": "2.0", "method": "notifications/message",
                        "params": {"level": "info", "data": "creating the task"}})
            return self.event({"jsonrpc": "2.0", "id": mid, "result": {
                "resultType": "task", "taskId": tid, "status": "working", "createdAt": now, "lastUpdatedAt": now,
                "ttlMs": 60000, "pollIntervalMs": 100}})
        if method == "tasks/get":
            tid = params["taskId"]
            if tid not in state["polls"]:
                return self.json(200, {"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "no such task"}})
            state["polls"][tid] += 1
            task = {"resultType": "complete", "taskId": tid, "createdAt": now, "lastUpdatedAt": now, "ttlMs": 60000,
                    "pollIntervalMs": 100, "status": "working"}
            if state["polls"][tid] >= 2:
                task.update({"status": "completed", "lastUpdatedAt": "2026-12-01T00:00:01Z",
                             "result": {"content": [{"type": "text", "text": "done " + tid}]}})
            return self.json(200, {"jsonrpc": "2.0", "id": mid, "result": task})
        if mid is None:
            return self.empty(202)
        return self.json(404, {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
scheme = "http"
if os.environ.get("FIXTURE_TLS_CERT"):
    import ssl
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.environ["FIXTURE_TLS_CERT"], os.environ["FIXTURE_TLS_KEY"])
    server.socket = context.wrap_socket(server.socket, server_side=True)
    scheme = "https"
print("%s://127.0.0.1:%d/mcp" % (scheme, server.server_address[1]), flush=True)
server.serve_forever()
