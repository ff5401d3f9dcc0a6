#!/usr/bin/env python3
"""A stand-in for the user's browser, as `$BROWSER`: follows the authorization URL to the
authorization server, which redirects (the user consenting) to the loopback callback, and
follows that. With --wrong-state-first it first calls the callback with a forged `state`, as
another program on the machine could. With --log FILE it writes what it saw there (statuses and
pages, never codes)."""
import sys
import urllib.error
import urllib.parse
import urllib.request

args = sys.argv[1:]
url = args[-1]
log_path = args[args.index("--log") + 1] if "--log" in args else None
seen = []


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):
        return None


opener = urllib.request.build_opener(NoRedirect)


def get(u):
    try:
        with opener.open(u, timeout=10) as r:
            return r.status, dict(r.headers), r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode(errors="replace")


query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
if "--wrong-state-first" in args:
    status, _, page = get(query["redirect_uri"] + "?code=forged&state=forged")
    seen.append("forged %d %s" % (status, page.strip()))
status, headers, page = get(url)
seen.append("authorize %d" % status)
location = headers.get("Location")
if status == 302 and location:
    status, _, page = get(location)
    seen.append("callback %d %s" % (status, page.strip()))
else:
    seen.append("refused " + page.strip())
if log_path:
    with open(log_path, "w") as f:
        f.write("\n".join(seen) + "\n")
