#!/usr/bin/env python3
"""A legacy-era server with one plain tool, `connect`, that asks the user to open a page (a URL-mode
`elicitation/create`) and then, as if the page had been finished in the browser, sends
`notifications/elicitation/complete` for it after `delay` seconds without waiting for the answer.
The call ends with the action it was answered with. `connect` with `other: true` completes an
elicitation nobody asked, which must change nothing. `locked` refuses every call with -32042
(URL elicitation required), however often the page is finished."""
import json
import sys
import threading
import time

out = sys.stdout.buffer
lock = threading.Lock()
calls = {}  # elicitation request id -> tools/call request id


def send(msg):
    with lock:
        out.write((json.dumps(msg) + "\n").encode())
        out.flush()


def complete_later(eid, delay):
    time.sleep(delay)
    send({"jsonrpc": "2.0", "method": "notifications/elicitation/complete", "params": {"elicitationId": eid}})


for line in sys.stdin.buffer:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "url-complete", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [
            {"name": "connect", "inputSchema": {"type": "object", "properties": {"other": {"type": "boolean"}}}},
            {"name": "locked", "inputSchema": {"type": "object"}}]}})
    elif method == "tools/call" and (msg.get("params") or {}).get("name") == "locked":
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32042, "message": "Authorization required", "data": {
            "elicitations": [{"mode": "url", "url": "https://example.com/unlock", "message": "Unlock",
                              "elicitationId": "lock-%s" % mid}]}}})
    elif method == "tools/call":
        other = bool((msg.get("params") or {}).get("arguments", {}).get("other"))
        asked = "ask-%s" % mid
        calls[asked] = mid
        send({"jsonrpc": "2.0", "id": asked, "method": "elicitation/create", "params": {
            "mode": "url", "url": "https://example.com/connect?e=e-%s" % mid,
            "message": "Connect your account", "elicitationId": "e-%s" % mid}})
        if other:
            threading.Thread(target=complete_later, args=("nobody-asked", 0.3), daemon=True).start()
        else:
            threading.Thread(target=complete_later, args=("e-%s" % mid, 0.5), daemon=True).start()
    elif method is None and mid in calls:
        action = (msg.get("result") or {}).get("action", "error")
        send({"jsonrpc": "2.0", "id": calls.pop(mid), "result": {
            "content": [{"type": "text", "text": "answered: %s" % action}]}})
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
