#!/usr/bin/env python3
"""A FastMCP 4 server whose tools run as tasks through fastmcp-tasks (the
io.modelcontextprotocol/tasks extension of the 2026-07-28 era), over Streamable HTTP on
loopback: an independent modern-era peer for Taskdeck's tests, written the way the package's
own documentation says a task server is written (`TasksExtension` on the server, `task=` on the
tool, `ctx.report_progress` for status, the guard pattern for a question).

usage: fastmcp_tasks_server.py [--port PORT]
Run with tests/peers/.venv/bin/python (`make peers` makes it). PORT 0, the default, takes a free
one; a given port is reused at once after a killed predecessor. Its first line on stdout is its
MCP endpoint, http://127.0.0.1:PORT/mcp; FastMCP's own logs go to stderr.

Tasks live in fastmcp-tasks' default `memory://` backend, so they die with the process: a
restart is, to a client, a server that no longer knows its tasks.
"""

import argparse
import socket


def listener(port: int) -> socket.socket:
    """The listening socket, bound before anything else so that the printed URL is the real one."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # A test restarts the server on the port of the one it killed.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    return sock


# The port is taken before FastMCP is imported, which takes seconds: a restarted server is
# reachable at once, and what a client sends meanwhile waits in the socket's backlog instead of
# being refused.
if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    SOCKET = listener(parser.parse_args().port)
    print(f"http://127.0.0.1:{SOCKET.getsockname()[1]}/mcp", flush=True)

import asyncio  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from datetime import timedelta  # noqa: E402

import mcp_types  # noqa: E402
from fastmcp import Context, FastMCP  # noqa: E402
from fastmcp.dependencies import CurrentContext  # noqa: E402
from fastmcp.exceptions import ToolError  # noqa: E402
from fastmcp.utilities.tasks import TaskConfig  # noqa: E402
from fastmcp_tasks import TasksExtension  # noqa: E402

# FastMCP's default poll interval is 5 s; the tests would spend most of their time waiting.
TASK = TaskConfig(mode="required", poll_interval=timedelta(milliseconds=100))

mcp = FastMCP("fastmcp-tasks-peer")
mcp.add_extension(TasksExtension())


@mcp.tool(task=TASK)
async def write_report(topic: str, steps: int = 4, step_seconds: float = 0.25, ctx: Context = CurrentContext()) -> str:
    """Writes a report on a topic in a few steps, saying which step it is on."""
    steps = max(1, min(steps, 100))
    for step in range(1, steps + 1):
        # In a task this is the task's statusMessage on tasks/get; the numbers are kept by the
        # server but never reach the wire (the extension has no progress field).
        await ctx.report_progress(step, steps, f"Writing section {step} of {steps}")
        await asyncio.sleep(step_seconds)
    return f"# Report: {topic}\n\n{steps} sections written."


@mcp.tool(task=TASK)
async def deploy(service: str, ctx: Context = CurrentContext()) -> str | mcp_types.InputRequiredResult:
    """Deploys a service after asking which environment to deploy it to."""
    answer = (ctx.input_responses or {}).get("environment")
    if answer is None:
        await ctx.report_progress(1, 2, f"Preparing {service}")
        # A task asks by returning its question: the worker ends, the task shows input_required
        # with this request on tasks/get, and tasks/update runs the tool again with the answer.
        return mcp_types.InputRequiredResult(
            input_requests={
                "environment": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestFormParams(
                        message=f"Where should {service} be deployed?",
                        requested_schema={
                            "type": "object",
                            "properties": {
                                "environment": {
                                    "type": "string",
                                    "title": "Environment",
                                    "enum": ["staging", "production"],
                                },
                                "note": {"type": "string", "title": "Note for the log"},
                            },
                            "required": ["environment"],
                        },
                    )
                )
            }
        )
    if answer.action != "accept" or not answer.content:
        said = {"decline": "declined", "cancel": "dismissed"}.get(answer.action, "not answered")
        raise ToolError(f"Deployment of {service} stopped: the question was {said}")
    environment = answer.content.get("environment")
    await ctx.report_progress(2, 2, f"Deploying {service} to {environment}")
    await asyncio.sleep(0.3)
    note = answer.content.get("note")
    return f"Deployed {service} to {environment}." + (f" Note: {note}" if note else "")


@mcp.tool(task=TASK)
async def export_rows(rows: int = 10, fail_at: int = 3, ctx: Context = CurrentContext()) -> str:
    """Exports rows, and fails with a tool error at row `fail_at` (0 never fails)."""
    for row in range(1, rows + 1):
        await ctx.report_progress(row, rows, f"Exporting row {row} of {rows}")
        if row == fail_at:
            # fastmcp-tasks makes this a *completed* task whose result has isError: true.
            raise ToolError(f"Export failed at row {row}: the destination refused it")
        await asyncio.sleep(0.05)
    return f"Exported {rows} rows."


@mcp.tool(task=TASK)
async def crunch(seconds: float = 60.0, ctx: Context = CurrentContext()) -> str:
    """Crunches numbers for a while: long enough to be cancelled, or to outlive a restart."""
    seconds = max(0.0, min(seconds, 600.0))
    loop = asyncio.get_running_loop()
    start = loop.time()
    while (elapsed := loop.time() - start) < seconds:
        await ctx.report_progress(int(elapsed), int(seconds), f"Crunched for {int(elapsed)} s")
        await asyncio.sleep(min(0.2, seconds - elapsed))
    return f"Crunched for {seconds:g} s."


def exit_with_parent() -> None:
    """Ends the server when whoever started it is gone (a test run killed), so none is left behind."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def main() -> None:
    exit_with_parent()
    port = SOCKET.getsockname()[1]
    asyncio.run(
        mcp.run_http_async(
            show_banner=False,
            host="127.0.0.1",
            port=port,
            path="/mcp",
            log_level="warning",
            sockets=[SOCKET],
        )
    )


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)
