#!/usr/bin/python3
"""A stand-in desktop notification server for end-to-end tests.

Owns org.freedesktop.Notifications on the session bus, answers like a real server, and appends each
Notify call as one JSON line to the file named by $TASKDECK_E2E_NOTIFICATIONS, so a test can assert
what the app told the user. Runs with Debian's python3-dbus and python3-gi (not a virtualenv python).
"""

import json
import os
import signal
import sys

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

BUS_NAME = "org.freedesktop.Notifications"
OBJECT_PATH = "/org/freedesktop/Notifications"


def plain(value):
    """dbus-python wraps every value in its own types; JSON wants the Python ones."""
    if isinstance(value, (dbus.String, dbus.ObjectPath, dbus.Signature)):
        return str(value)
    if isinstance(value, dbus.Boolean):
        return bool(value)
    if isinstance(value, (dbus.Byte, dbus.Int16, dbus.Int32, dbus.Int64, dbus.UInt16, dbus.UInt32, dbus.UInt64)):
        return int(value)
    if isinstance(value, dbus.Double):
        return float(value)
    if isinstance(value, dbus.Dictionary):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (dbus.Array, dbus.Struct, list, tuple)):
        # Image hints are large byte arrays that no test asserts on.
        if len(value) > 256:
            return f"<{len(value)} items>"
        return [plain(v) for v in value]
    return value


class Recorder(dbus.service.Object):
    def __init__(self, bus, out_path):
        super().__init__(bus, OBJECT_PATH)
        self.out_path = out_path
        self.next_id = 1

    def record(self, entry):
        with open(self.out_path, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")

    @dbus.service.method(BUS_NAME, in_signature="susssasa{sv}i", out_signature="u")
    def Notify(self, app_name, replaces_id, app_icon, summary, body, actions, hints, expire_timeout):
        notification_id = int(replaces_id) or self.next_id
        if not int(replaces_id):
            self.next_id += 1
        self.record({
            "id": notification_id,
            "app_name": plain(app_name),
            "replaces_id": int(replaces_id),
            "app_icon": plain(app_icon),
            "summary": plain(summary),
            "body": plain(body),
            "actions": plain(actions),
            "hints": plain(hints),
            "expire_timeout": int(expire_timeout),
        })
        return dbus.UInt32(notification_id)

    @dbus.service.method(BUS_NAME, in_signature="u", out_signature="")
    def CloseNotification(self, notification_id):
        self.record({"closed": int(notification_id)})
        self.NotificationClosed(notification_id, dbus.UInt32(3))

    @dbus.service.method(BUS_NAME, in_signature="", out_signature="as")
    def GetCapabilities(self):
        return ["body", "actions", "persistence"]

    @dbus.service.method(BUS_NAME, in_signature="", out_signature="ssss")
    def GetServerInformation(self):
        return ("taskdeck-e2e-recorder", "taskdeck", "1.0", "1.2")

    @dbus.service.signal(BUS_NAME, signature="uu")
    def NotificationClosed(self, notification_id, reason):
        pass


def main():
    out_path = os.environ.get("TASKDECK_E2E_NOTIFICATIONS")
    if not out_path:
        sys.exit("notify-recorder: set TASKDECK_E2E_NOTIFICATIONS to the file to append to")
    DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    # Refuse to queue behind another server: a test that thinks it records while someone else answers
    # would pass or fail for the wrong reason.
    name = dbus.service.BusName(BUS_NAME, bus, do_not_queue=True)
    recorder = Recorder(bus, out_path)
    loop = GLib.MainLoop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, sig, loop.quit)
    loop.run()
    del recorder, name


if __name__ == "__main__":
    main()
