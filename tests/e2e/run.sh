#!/usr/bin/env bash
# Runs the end-to-end suite headless: a private session bus (so nothing GTK/WebKit autolaunches outlives
# the run), a notification recorder on it, and a throwaway X server. Arguments go to `node --test`.
set -euo pipefail
cd "$(dirname "$0")"

export TASKDECK_E2E_NOTIFICATIONS="${TASKDECK_E2E_NOTIFICATIONS:-$(mktemp -t taskdeck-notifications.XXXXXX.jsonl)}"
# Without this GTK starts an accessibility bus per app that can linger after the test.
export NO_AT_BRIDGE=1

exec dbus-run-session -- bash -euo pipefail -c '
  /usr/bin/python3 support/notify-recorder.py &
  recorder=$!
  trap "kill $recorder 2>/dev/null || true" EXIT
  gdbus wait --session --timeout 10 org.freedesktop.Notifications
  xvfb-run -a -s "-screen 0 1280x800x24 -nolisten tcp" \
    node --test --test-concurrency=1 --test-timeout=120000 "${@:-specs/}"
' bash "$@"
