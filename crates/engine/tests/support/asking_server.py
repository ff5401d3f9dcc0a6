#!/usr/bin/env python3
"""A server that asks its client what a host may not be able to serve, in the era ERA names
(`legacy` or `modern`). Every reply the client sends it is appended to the file REPLIES names, one
JSON line each (`{"tool", "reply"}`), and each call ends with that reply as its text. The method
of every request it gets is appended to the file METHODS names, when set. It serves no
`subscriptions/listen` (modern): its tasks are followed by polls alone.

- `pick` asks `widgets/pick`, a method no MCP client serves (legacy: a server-to-client request;
  modern: an input request, beside a `roots/list` one).
- `search_with_model` asks for a completion with a `search` tool offered to the model, as a server
  may only when the client declared `sampling.tools` (2025-11-25 and 2026-07-28 alike); without
  that declaration the call ends with a tool error saying so, as a careful server would.
- `ask_after` (legacy) answers at once, then asks a question of no task (`elicitation/create`
  without a related task, once no call is in flight)."""
import json
import os
import sys
import threading

out = sys.stdout.buffer
ERA = os.environ.get("ERA", "legacy")
SEARCH = {"name": "search", "description": "Search the release notes",
          "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}
SAMPLING = {"messages": [{"role": "user", "content": {"type": "text", "text": "When did 3.0 ship?"}}],
            "maxTokens": 60, "tools": [SEARCH], "toolChoice": {"mode": "auto"}}
TOOLS = [{"name": "pick", "inputSchema": {"type": "object"}},
         {"name": "ask_after", "inputSchema": {"type": "object"}},
         {"name": "search_with_model", "inputSchema": {"type": "object"}}]
NO_TOOLS = "the client did not declare sampling.tools, so no tool can be offered to its model"
state = {"caps": {}, "calls": {}, "tasks": {}, "clock": 0}


_lock = threading.Lock()


def send(obj):
    with _lock:
        out.write(json.dumps(obj).encode() + b"\n")
        out.flush()


def record(tool, reply):
    with open(os.environ["REPLIES"], "a") as f:
        f.write(json.dumps({"tool": tool, "reply": reply}) + "\n")


def text_result(text, is_error=False):
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def declares_tools(caps):
    return isinstance((caps.get("sampling") or {}).get("tools"), dict)


def stamp():
    state["clock"] += 1
    return "2026-01-01T00:00:%02d.%03dZ" % (state["clock"] // 1000 % 60, state["clock"] % 1000)


def snapshot(tid):
    t = state["tasks"][tid]
    shown = {"taskId": tid, "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": t["at"],
             "ttlMs": None, "pollIntervalMs": 50}
    pending = {k: v for k, v in t["asks"].items() if k not in t["replies"]}
    if t["end"] is not None:
        shown.update(status="completed", result=t["end"])
    elif pending:
        shown.update(status="input_required", inputRequests=pending)
    else:
        shown.update(status="completed", result=text_result(json.dumps(t["replies"], sort_keys=True)))
    return shown


def legacy(msg, method, mid):
    params = msg.get("params") or {}
    if method == "initialize":
        state["caps"] = params.get("capabilities") or {}
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "asking", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
    elif method == "tools/call" and params.get("name") == "ask_after":
        send({"jsonrpc": "2.0", "id": mid, "result": text_result("asking later")})
        threading.Timer(0.3, lambda: send({"jsonrpc": "2.0", "id": "late-1", "method": "elicitation/create",
                                          "params": {"mode": "form", "message": "Anything else?",
                                                     "requestedSchema": {"type": "object", "properties": {}}}})).start()
    elif method is None and mid == "late-1":
        record("ask_after", {k: msg[k] for k in ("result", "error") if k in msg})
    elif method == "tools/call":
        tool = params.get("name")
        if tool == "search_with_model" and not declares_tools(state["caps"]):
            send({"jsonrpc": "2.0", "id": mid, "result": text_result(NO_TOOLS, True)})
            return
        ask = "ask-%s" % mid
        state["calls"][ask] = (mid, tool)
        if tool == "pick":
            send({"jsonrpc": "2.0", "id": ask, "method": "widgets/pick", "params": {"from": ["a", "b"]}})
        else:
            send({"jsonrpc": "2.0", "id": ask, "method": "sampling/createMessage", "params": SAMPLING})
    elif method is None and mid in state["calls"]:
        call, tool = state["calls"].pop(mid)
        reply = {k: msg[k] for k in ("result", "error") if k in msg}
        record(tool, reply)
        send({"jsonrpc": "2.0", "id": call, "result": text_result(json.dumps(reply, sort_keys=True))})
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})


def modern(msg, method, mid):
    params = msg.get("params") or {}
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": mid, "result": {"supportedVersions": ["2026-07-28"], "capabilities": {
            "tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
            "serverInfo": {"name": "asking", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        tool = params.get("name")
        caps = (params.get("_meta") or {}).get("io.modelcontextprotocol/clientCapabilities") or {}
        tid = "t:%s" % mid
        task = {"tool": tool, "at": stamp(), "replies": {}, "end": None, "asks": {}}
        if tool == "pick":
            task["asks"] = {"pick": {"method": "widgets/pick", "params": {"from": ["a", "b"]}},
                            "dirs": {"method": "roots/list", "params": {}}}
        elif declares_tools(caps):
            task["asks"] = {"s": {"method": "sampling/createMessage", "params": SAMPLING}}
        else:
            task["end"] = text_result(NO_TOOLS, True)
        state["tasks"][tid] = task
        send({"jsonrpc": "2.0", "id": mid, "result": dict(snapshot(tid), resultType="task")})
    elif method == "tasks/get" and params.get("taskId") in state["tasks"]:
        send({"jsonrpc": "2.0", "id": mid, "result": snapshot(params["taskId"])})
    elif method == "tasks/update" and params.get("taskId") in state["tasks"]:
        task = state["tasks"][params["taskId"]]
        for key, reply in (params.get("inputResponses") or {}).items():
            if key in task["asks"] and key not in task["replies"]:
                task["replies"][key] = reply
                record(task["tool"], {key: reply})
        task["at"] = stamp()
        send({"jsonrpc": "2.0", "id": mid, "result": {"resultType": "complete"}})
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})


for line in sys.stdin.buffer:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if os.environ.get("METHODS") and msg.get("method") and msg.get("id") is not None:
        with open(os.environ["METHODS"], "a") as f:
            f.write(msg["method"] + "\n")
    (modern if ERA == "modern" else legacy)(msg, msg.get("method"), msg.get("id"))
