#!/usr/bin/env python3
"""A protected MCP resource and its OAuth 2.1 authorization server on loopback, for the
client's oauth_* tests.

It is strict on purpose: every authorization and token request is checked (PKCE S256 against
the code's challenge, `state` present, `resource` equal to the protected resource, the exact
registered redirect URI, the client's authentication method, scopes, one use per code and per
refresh token) and anything else is refused with an OAuth error, so a client that gets one
detail wrong fails its test.

Options (one JSON object as argv[1], every key optional):
  legacy           no protected resource metadata and no AS metadata (2025-03-26 defaults)
  challenge_prm    put resource_metadata in the 401 challenge (default true)
  prm_at           "path" (default) or "root": which well-known URI serves the PRM
  prm_resource     the PRM's `resource` (default: the protected resource's URL)
  issuer_path      a path for the issuer, e.g. "/tenant1" (default: none)
  openid           serve OpenID discovery instead of RFC 8414 metadata
  pkce_methods     code_challenge_methods_supported (default ["S256"]; null to omit)
  auth_methods     token_endpoint_auth_methods_supported (default ["none"])
  clients          pre-registered clients: {id: {"secret": s, "method": m, "redirect_uris": [..]}}
  registration     offer dynamic registration (default true)
  scopes_supported the PRM's scopes_supported (default ["mcp:read"])
  challenge_scope  the 401 challenge's scope (default none)
  write_scope      the scope /mcp/write needs (default "mcp:write")
  iss              send `iss` in the authorization response and advertise it
  wrong_iss        send a wrong `iss`
  expires_in       access token lifetime in seconds (default 3600)
  metadata_issuer  the `issuer` the AS metadata claims (default: the real one)
  redirect_prm     the PRM URL redirects to the same server under another host name
  legacy_metadata  with legacy: RFC 8414 metadata at the origin, naming issuer BASE/oauth
  as_scopes        the AS metadata's scopes_supported (default: none)
  cimd             a Client ID Metadata Document URL it accepts as a client id (as if fetched)
  prm_raw          serve this text (as text/html) instead of the PRM
  prm_huge         serve a PRM of this many bytes

Prints its base URL as its first line. GET /admin/log is the list of requests seen (method,
path, refusals); POST /admin/revoke revokes every refresh token.
"""
import base64
import hashlib
import json
import secrets
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

opts = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
lock = threading.Lock()
log = []
clients = {}
for cid, c in (opts.get("clients") or {}).items():
    clients[cid] = {"secret": c.get("secret"), "method": c.get("method", "none"),
                    "redirect_uris": c.get("redirect_uris"), "preregistered": True}
codes = {}
if opts.get("cimd"):
    # What fetching the document would give: a public client with loopback redirects.
    clients[opts["cimd"]] = {"secret": None, "method": "none", "redirect_uris": None, "preregistered": True}
access_tokens = {}
refresh_tokens = {}
BASE = None


def resource():
    return BASE + "/mcp"


def issuer():
    if opts.get("legacy") and opts.get("legacy_metadata"):
        return BASE + "/oauth"
    return BASE + (opts.get("issuer_path") or "")


def as_metadata():
    m = {
        "issuer": opts.get("metadata_issuer", issuer()),
        "authorization_endpoint": BASE + "/authorize",
        "token_endpoint": BASE + "/token",
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": opts.get("auth_methods", ["none"]),
    }
    methods = opts.get("pkce_methods", ["S256"])
    if methods is not None:
        m["code_challenge_methods_supported"] = methods
    if opts.get("registration", True):
        m["registration_endpoint"] = BASE + "/register"
    if opts.get("iss"):
        m["authorization_response_iss_parameter_supported"] = True
    if opts.get("cimd"):
        m["client_id_metadata_document_supported"] = True
    if opts.get("as_scopes"):
        m["scopes_supported"] = opts["as_scopes"]
    return m


def prm():
    return {
        "resource": opts.get("prm_resource", resource()),
        "authorization_servers": [issuer()],
        "scopes_supported": opts.get("scopes_supported", ["mcp:read"]),
        "bearer_methods_supported": ["header"],
    }


def challenge_b64(verifier):
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


class Refused(Exception):
    def __init__(self, error, description, status=400):
        super().__init__(description)
        self.error, self.description, self.status = error, description, status


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def note(self, **kw):
        with lock:
            log.append(dict(method=self.command, path=self.path.split("?")[0], **kw))

    def send(self, status, body=None, headers=None, ctype="application/json"):
        data = b"" if body is None else (json.dumps(body).encode() if ctype == "application/json" else body.encode())
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if body is not None:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def refuse(self, r):
        self.note(refused=r.error, why=r.description)
        self.send(r.status, {"error": r.error, "error_description": r.description})

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    # ---- GET -------------------------------------------------------------------------------
    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        self.note()
        legacy = opts.get("legacy")
        if path == "/admin/log":
            with lock:
                return self.send(200, list(log))
        if opts.get("redirect_prm") and path == "/.well-known/oauth-protected-resource/mcp":
            return self.send(302, None, {"Location": BASE.replace("127.0.0.1", "localhost") + path})
        if path == "/.well-known/oauth-protected-resource/mcp" and "prm_raw" in opts:
            return self.send(200, opts["prm_raw"], ctype="text/html")
        if path == "/.well-known/oauth-protected-resource/mcp" and "prm_huge" in opts:
            doc = dict(prm(), padding="x" * int(opts["prm_huge"]))
            return self.send(200, doc)
        if not legacy and path == ("/.well-known/oauth-protected-resource/mcp" if opts.get("prm_at", "path") == "path"
                                   else "/.well-known/oauth-protected-resource"):
            return self.send(200, prm())
        ip = opts.get("issuer_path") or ""
        if legacy and opts.get("legacy_metadata") and path == "/.well-known/oauth-authorization-server":
            return self.send(200, as_metadata())
        if not legacy and not opts.get("openid") and path == "/.well-known/oauth-authorization-server" + ip:
            return self.send(200, as_metadata())
        if not legacy and opts.get("openid") and path == "/.well-known/openid-configuration" + ip:
            return self.send(200, as_metadata())
        if path == "/authorize":
            try:
                return self.authorize(dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True)),
                                      urllib.parse.parse_qs(url.query))
            except Refused as r:
                return self.refuse(r)
        if path in ("/mcp", "/mcp/write"):
            return self.protected(path)
        self.send(404, {"error": "not_found"})

    def protected(self, path):
        auth = self.headers.get("Authorization") or ""
        token = auth[7:] if auth.startswith("Bearer ") else None
        with lock:
            t = access_tokens.get(token)
        if not t or t["expires"] < time.time() or t["resource"] != resource():
            parts = []
            if opts.get("challenge_prm", True) and not opts.get("legacy"):
                parts.append('resource_metadata="%s"' % (BASE + "/.well-known/oauth-protected-resource/mcp"))
            if opts.get("challenge_scope"):
                parts.append('scope="%s"' % opts["challenge_scope"])
            if token:
                parts.append('error="invalid_token"')
            header = "Bearer " + ", ".join(parts) if parts else "Bearer"
            return self.send(401, {"error": "unauthorized"}, {"WWW-Authenticate": header})
        need = opts.get("write_scope", "mcp:write") if path == "/mcp/write" else None
        if need and need not in t["scopes"]:
            header = 'Bearer error="insufficient_scope", scope="%s", resource_metadata="%s"' % (
                need, BASE + "/.well-known/oauth-protected-resource/mcp")
            return self.send(403, {"error": "insufficient_scope"}, {"WWW-Authenticate": header})
        self.send(200, {"ok": True, "scopes": t["scopes"]})

    def authorize(self, q, multi):
        for k, v in multi.items():
            if len(v) != 1:
                raise Refused("invalid_request", "parameter %s repeated" % k)
        if q.get("response_type") != "code":
            raise Refused("unsupported_response_type", "response_type must be code")
        client = clients.get(q.get("client_id"))
        if not client:
            raise Refused("invalid_client", "unknown client_id")
        redirect = q.get("redirect_uri")
        if client["redirect_uris"] is not None and redirect not in client["redirect_uris"]:
            raise Refused("invalid_request", "redirect_uri is not registered")
        if not redirect or not redirect.startswith("http://127.0.0.1:") or not redirect.endswith("/callback"):
            raise Refused("invalid_request", "redirect_uri must be a loopback callback")
        if q.get("code_challenge_method") != "S256":
            raise Refused("invalid_request", "code_challenge_method must be S256")
        cc = q.get("code_challenge") or ""
        if len(cc) != 43:
            raise Refused("invalid_request", "code_challenge missing or malformed")
        if not q.get("state"):
            raise Refused("invalid_request", "state is required here")
        if q.get("resource") != resource():
            raise Refused("invalid_target", "resource must be %s, was %r" % (resource(), q.get("resource")))
        scopes = (q.get("scope") or "").split()
        allowed = set(opts.get("scopes_supported", ["mcp:read"])) | {opts.get("write_scope", "mcp:write")}
        if opts.get("challenge_scope"):
            allowed |= set(opts["challenge_scope"].split())
        allowed |= set(opts.get("as_scopes") or [])
        if any(s not in allowed for s in scopes):
            raise Refused("invalid_scope", "unknown scope in %r" % scopes)
        code = secrets.token_urlsafe(24)
        with lock:
            codes[code] = {"client_id": q["client_id"], "redirect_uri": redirect, "challenge": cc,
                           "resource": q["resource"], "scopes": scopes, "expires": time.time() + 60}
        params = {"code": code, "state": q["state"]}
        if opts.get("iss") or opts.get("wrong_iss"):
            params["iss"] = "https://attacker.example" if opts.get("wrong_iss") else issuer()
        self.note(issued="code")
        self.send(302, None, {"Location": redirect + "?" + urllib.parse.urlencode(params)})

    # ---- POST ------------------------------------------------------------------------------
    def do_POST(self):
        path = urllib.parse.urlsplit(self.path).path
        raw = self.body()
        self.note()
        try:
            if path == "/admin/revoke":
                with lock:
                    refresh_tokens.clear()
                return self.send(200, {})
            if path == "/register" and opts.get("registration", True):
                return self.register(raw)
            if path == "/token":
                return self.token(raw)
            if path in ("/mcp", "/mcp/write"):
                return self.protected(path)
        except Refused as r:
            return self.refuse(r)
        self.send(404, {"error": "not_found"})

    def register(self, raw):
        if (self.headers.get("Content-Type") or "").split(";")[0].strip() != "application/json":
            raise Refused("invalid_client_metadata", "registration must be JSON")
        try:
            m = json.loads(raw)
        except ValueError:
            raise Refused("invalid_client_metadata", "not JSON")
        uris = m.get("redirect_uris")
        if not isinstance(uris, list) or not uris or not all(
                isinstance(u, str) and u.startswith("http://127.0.0.1:") and u.endswith("/callback") for u in uris):
            raise Refused("invalid_redirect_uri", "redirect_uris must be loopback callbacks")
        method = m.get("token_endpoint_auth_method", "client_secret_basic")
        if method not in opts.get("auth_methods", ["none"]):
            raise Refused("invalid_client_metadata", "token_endpoint_auth_method %s not supported" % method)
        if m.get("application_type") != "native":
            raise Refused("invalid_client_metadata", "a loopback redirect needs application_type native")
        if "authorization_code" not in (m.get("grant_types") or []):
            raise Refused("invalid_client_metadata", "grant_types must include authorization_code")
        cid = "dyn-" + secrets.token_hex(6)
        secret = None if method == "none" else secrets.token_urlsafe(16)
        with lock:
            clients[cid] = {"secret": secret, "method": method, "redirect_uris": uris, "preregistered": False}
        out = {"client_id": cid, "redirect_uris": uris, "token_endpoint_auth_method": method,
               "grant_types": m.get("grant_types")}
        if secret:
            out["client_secret"] = secret
        self.note(issued="client")
        self.send(201, out)

    def client_auth(self, form):
        """The client, authenticated exactly as it registered; anything else is refused."""
        header = self.headers.get("Authorization")
        if header:
            if not header.startswith("Basic "):
                raise Refused("invalid_client", "unknown Authorization scheme", 401)
            try:
                cid, _, secret = base64.b64decode(header[6:]).decode().partition(":")
            except ValueError:
                raise Refused("invalid_client", "bad Basic credentials", 401)
            cid, secret = urllib.parse.unquote_plus(cid), urllib.parse.unquote_plus(secret)
            c = clients.get(cid)
            if not c or c["method"] != "client_secret_basic" or c["secret"] != secret:
                raise Refused("invalid_client", "client authentication failed", 401)
            if "client_secret" in form:
                raise Refused("invalid_request", "two client authentication methods")
            if "client_id" in form and form["client_id"] != cid:
                raise Refused("invalid_client", "client_id differs from the Basic user")
            return cid
        cid = form.get("client_id")
        c = clients.get(cid)
        if not c:
            raise Refused("invalid_client", "unknown client_id", 401)
        if c["method"] == "none":
            if "client_secret" in form:
                raise Refused("invalid_client", "a public client sends no secret", 401)
        elif c["method"] == "client_secret_post":
            if form.get("client_secret") != c["secret"]:
                raise Refused("invalid_client", "client authentication failed", 401)
        else:
            raise Refused("invalid_client", "this client authenticates with %s" % c["method"], 401)
        return cid

    def token(self, raw):
        if (self.headers.get("Content-Type") or "").split(";")[0].strip() != "application/x-www-form-urlencoded":
            raise Refused("invalid_request", "the token request must be a form")
        pairs = urllib.parse.parse_qsl(raw.decode(), keep_blank_values=True)
        form = dict(pairs)
        if len(form) != len(pairs):
            raise Refused("invalid_request", "a parameter is repeated")
        cid = self.client_auth(form)
        if form.get("resource") != resource():
            raise Refused("invalid_target", "resource must be %s" % resource())
        grant = form.get("grant_type")
        if grant == "authorization_code":
            with lock:
                c = codes.pop(form.get("code"), None)
            if not c or c["expires"] < time.time():
                raise Refused("invalid_grant", "unknown, used or expired code")
            if c["client_id"] != cid:
                raise Refused("invalid_grant", "the code was issued to another client")
            if form.get("redirect_uri") != c["redirect_uri"]:
                raise Refused("invalid_grant", "redirect_uri differs from the authorization request")
            if challenge_b64(form.get("code_verifier") or "") != c["challenge"]:
                raise Refused("invalid_grant", "PKCE verification failed")
            if c["resource"] != form["resource"]:
                raise Refused("invalid_target", "resource differs from the authorization request")
            scopes = c["scopes"]
        elif grant == "refresh_token":
            with lock:
                r = refresh_tokens.pop(form.get("refresh_token"), None)
            if not r or r["client_id"] != cid:
                raise Refused("invalid_grant", "unknown or revoked refresh token")
            scopes = r["scopes"]
        else:
            raise Refused("unsupported_grant_type", "grant_type %r" % grant)
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        expires_in = int(opts.get("expires_in", 3600))
        with lock:
            access_tokens[access] = {"resource": resource(), "scopes": scopes, "expires": time.time() + expires_in}
            # Refresh tokens rotate, as OAuth 2.1 requires for public clients.
            refresh_tokens[refresh] = {"client_id": cid, "scopes": scopes}
        self.note(issued="tokens", grant=grant)
        self.send(200, {"access_token": access, "token_type": "Bearer", "expires_in": expires_in,
                        "refresh_token": refresh, "scope": " ".join(scopes)})


def main():
    global BASE
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    BASE = "http://127.0.0.1:%d" % server.server_address[1]
    print(BASE, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
