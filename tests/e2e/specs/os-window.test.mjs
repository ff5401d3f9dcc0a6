// The window's life: closing hides it while tasks run (a second launch brings it back), closing with
// nothing running quits, and the window's geometry is saved in the app's own data dir.

import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { By, until } from 'selenium-webdriver';
import { appBinary, eventually, invoke, startApp, visibleWindowsTitled, within } from '../support/app.mjs';

const run = promisify(execFile);

// What a window manager sends when the user clicks the close button. No window manager runs under
// Xvfb, so say it directly: GTK turns it into the same close request.
const WM_DELETE = `
import ctypes, sys
x = ctypes.cdll.LoadLibrary("libX11.so.6")
x.XOpenDisplay.restype = ctypes.c_void_p
x.XInternAtom.restype = ctypes.c_ulong
x.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
x.XSendEvent.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_long, ctypes.c_void_p]
x.XFlush.argtypes = [ctypes.c_void_p]
class ClientMessage(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
                ("display", ctypes.c_void_p), ("window", ctypes.c_ulong), ("message_type", ctypes.c_ulong),
                ("format", ctypes.c_int), ("data", ctypes.c_long * 5)]
class Event(ctypes.Union):
    _fields_ = [("xclient", ClientMessage), ("pad", ctypes.c_long * 24)]
d = x.XOpenDisplay(None)
win = int(sys.argv[1])
e = Event()
e.xclient.type = 33
e.xclient.window = win
e.xclient.message_type = x.XInternAtom(d, b"WM_PROTOCOLS", 0)
e.xclient.format = 32
e.xclient.data[0] = x.XInternAtom(d, b"WM_DELETE_WINDOW", 0)
x.XSendEvent(d, win, 0, 0, ctypes.byref(e))
x.XFlush(d)
`;

async function closeWindow() {
  const [id] = await visibleWindowsTitled('Taskdeck');
  assert.ok(id, 'no visible Taskdeck window to close');
  await run('python3', ['-c', WM_DELETE, id]);
}


const visible = async () => (await visibleWindowsTitled('Taskdeck')).length;

test('closing while a task runs hides the window; the task goes on and a second launch shows it again', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await driver.wait(until.elementLocated(By.css('[data-testid="sidebar"]')), 15000);
    const task = await invoke(driver, 'run_tool', {
      server: 'demo',
      tool: 'generate_report',
      arguments: { topic: 'x', seconds: 2 },
    });

    await closeWindow();
    assert.equal(await eventually(async () => ((await visible()) === 0 ? 'hidden' : ''), 5000), 'hidden');

    // The app is alive behind the tray: the task finishes while the window is away.
    const done = await eventually(async () => {
      const { task: t } = await invoke(driver, 'task_detail', { id: task.id });
      return t.status === 'completed';
    }, 20000);
    assert.ok(done, 'the task did not finish while the window was hidden');

    const second = spawn(appBinary, app.args, { detached: true, stdio: 'ignore' });
    const exit = new Promise((resolve) => second.once('exit', (code) => resolve(code)));
    assert.equal(await within(exit, 15000), 0);
    assert.equal(await eventually(visible, 5000), 1);
  } finally {
    await app.stop();
  }
});

test('closing with nothing running quits, saving the window geometry in the data dir', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await driver.wait(until.elementLocated(By.css('[data-testid="sidebar"]')), 15000);
    const stateFile = join(app.dataDir, 'window-state.json');
    assert.equal(existsSync(stateFile), false);

    await closeWindow();
    assert.ok(await eventually(() => existsSync(stateFile), 10000), 'no window state saved on quit');
    const saved = JSON.parse(readFileSync(stateFile, 'utf8'));
    assert.ok(saved.main && saved.main.width >= 760 && saved.main.height >= 480, JSON.stringify(saved));
    // The state file is written as the window goes; the window itself may take a moment longer.
    assert.ok(await eventually(async () => (await visible()) === 0, 10000), 'the window is still shown after quitting');
  } finally {
    await app.stop();
  }
});
