#!/usr/bin/env python3
"""Runs a server and records every line that crosses its stdio, for schema checks.

Usage: tap.py LOG -- COMMAND [ARGS...]. Each line of LOG is {"dir": "c2s"|"s2c", "line": ...}.
"""
import json
import os
import subprocess
import sys
import threading

log_path = sys.argv[1]
cmd = sys.argv[sys.argv.index("--") + 1:]
child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
log = open(log_path, "a", buffering=1)
lock = threading.Lock()


def record(direction, line):
    with lock:
        log.write(json.dumps({"dir": direction, "line": line.decode("utf-8", "replace").rstrip("\r\n")}) + "\n")


def pump_in():
    for line in sys.stdin.buffer:
        record("c2s", line)
        try:
            child.stdin.write(line)
            child.stdin.flush()
        except BrokenPipeError:
            break
    try:
        child.stdin.close()
    except BrokenPipeError:
        pass


threading.Thread(target=pump_in, daemon=True).start()
for line in child.stdout:
    record("s2c", line)
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
sys.exit(child.wait())
