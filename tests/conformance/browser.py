#!/usr/bin/env python3
"""A browser for the auth scenarios: `$BROWSER URL` follows the authorization URL, whose
authorization server (the suite's) approves at once and redirects to taskdeck-cli's loopback
listener, as a person clicking "Allow" would."""

import sys
import urllib.request

try:
    with urllib.request.urlopen(sys.argv[-1], timeout=20) as r:
        r.read()
except Exception as e:  # the listener's page or an error: taskdeck-cli reports which
    print(f"[browser] {e}", file=sys.stderr)
