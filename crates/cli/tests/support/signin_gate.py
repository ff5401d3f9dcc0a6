#!/usr/bin/env python3
"""A remote MCP server that needs a sign-in, for the CLI's sign-in tests: the client's strict
authorization-server fixture (crates/client/tests/support/oauth_fixture.py, loaded as it is),
whose protected resource /mcp is here a proxy to a real MCP server (the demo server over HTTP)
for requests whose bearer token the fixture issued and still honours.

usage: signin_gate.py UPSTREAM_MCP_URL [FIXTURE_OPTIONS_JSON]
Prints its base URL as its first line; the MCP endpoint is BASE/mcp. Besides the fixture's own
/admin/revoke (every refresh token), POST /admin/expire makes every access token expire now, and
POST /admin/guard-calls-only lets every request but `tools/call` through without a token (a server
that refuses only the work itself).
"""
import importlib.util
import json
import sys
import time
import urllib.error
import urllib.request
from http.server import ThreadingHTTPServer
from pathlib import Path

UPSTREAM = sys.argv[1]
FIXTURE = Path(__file__).resolve().parents[3] / "client" / "tests" / "support" / "oauth_fixture.py"
sys.argv = [str(FIXTURE)] + sys.argv[2:]
spec = importlib.util.spec_from_file_location("oauth_fixture", FIXTURE)
fx = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fx)

# Hop-by-hop headers, and what the proxy sets itself.
guard = {"calls_only": False}

SKIP = {"host", "content-length", "transfer-encoding", "connection", "authorization", "keep-alive"}


class Gate(fx.Handler):
    def allowed(self):
        """The fixture's own check of the bearer token; answers 401 itself when it fails."""
        auth = self.headers.get("Authorization") or ""
        token = auth[7:] if auth.startswith("Bearer ") else None
        with fx.lock:
            t = fx.access_tokens.get(token)
        if t and t["expires"] >= time.time() and t["resource"] == fx.resource():
            return True
        fx.log.append({"method": self.command, "path": "/mcp", "refused": "no valid token"})
        header = 'Bearer resource_metadata="%s"' % (fx.BASE + "/.well-known/oauth-protected-resource/mcp")
        if token:
            header += ', error="invalid_token"'
        self.send(401, {"error": "unauthorized"}, {"WWW-Authenticate": header})
        return False

    def open_to(self, body):
        if not guard["calls_only"]:
            return False
        try:
            return json.loads(body or b"{}").get("method") != "tools/call"
        except (ValueError, AttributeError):
            return False

    def forward(self):
        # Read first, refused or not: an unread body would be taken for the next request.
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if not self.open_to(body) and not self.allowed():
            return
        req = urllib.request.Request(UPSTREAM, data=body, method=self.command)
        for k, v in self.headers.items():
            if k.lower() not in SKIP:
                req.add_header(k, v)
        try:
            up = urllib.request.urlopen(req, timeout=600)
        except urllib.error.HTTPError as e:
            up = e
        self.send_response(up.status if hasattr(up, "status") else up.code)
        for k, v in up.headers.items():
            if k.lower() not in SKIP:
                self.send_header(k, v)
        self.send_header("Connection", "close")
        self.end_headers()
        # Event streams are relayed as they come.
        while True:
            chunk = up.read1(65536) if hasattr(up, "read1") else up.read(65536)
            if not chunk:
                break
            self.wfile.write(chunk)
            self.wfile.flush()
        self.close_connection = True

    def do_POST(self):
        if self.path.split("?")[0] == "/admin/expire":
            with fx.lock:
                for t in fx.access_tokens.values():
                    t["expires"] = 0
            return self.send(200, {})
        if self.path.split("?")[0] == "/admin/guard-calls-only":
            guard["calls_only"] = True
            return self.send(200, {})
        if self.path.split("?")[0] == "/mcp":
            return self.forward()
        return super().do_POST()

    def do_GET(self):
        if self.path.split("?")[0] == "/mcp":
            return self.forward()
        return super().do_GET()

    def do_DELETE(self):
        if self.path.split("?")[0] == "/mcp":
            return self.forward()
        self.send(404, {"error": "not_found"})


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Gate)
    server.daemon_threads = True
    fx.BASE = "http://127.0.0.1:%d" % server.server_address[1]
    print(fx.BASE, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
