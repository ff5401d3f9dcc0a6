// Starts the real Taskdeck binary under tauri-driver for one test, and tears all of it down afterwards.
//
// The chain is: this process -> tauri-driver -> WebKitWebDriver -> taskdeck -> WebKit helper processes.
// tauri-driver is started as the leader of its own process group and everything below it inherits that
// group, so teardown is one group kill. That matters: after deleteSession the app occasionally lingers
// holding our stdout, and node:test would never exit.

import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Builder, By, until } from 'selenium-webdriver';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '../../..');

/** The binary under test; `make test-e2e` builds it once and every test reuses it. */
export const appBinary = resolve(process.env.TASKDECK_E2E_APP ?? join(repoRoot, 'target/debug/taskdeck'));
const tauriDriver = process.env.TAURI_DRIVER ?? join(repoRoot, '.cache/tools/bin/tauri-driver');
const nativeDriver = process.env.WEBKIT_WEBDRIVER ?? '/usr/bin/WebKitWebDriver';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Resolves with `promise`'s value, or with 'timeout' after `ms`. The timer is cleared either way: a
 * pending timer keeps a test file's process alive, and the suite would idle until it fired.
 */
export function within(promise, ms) {
  let timer;
  const timeout = new Promise((resolve) => (timer = setTimeout(() => resolve('timeout'), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
const run = promisify(execFile);

const liveGroups = new Set();
// A test runner killed by `timeout` must not leave the app behind on the display.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    for (const pgid of liveGroups) killGroup(pgid, 'SIGKILL');
    process.exit(130);
  });
}
process.once('exit', () => {
  for (const pgid of liveGroups) killGroup(pgid, 'SIGKILL');
});

function killGroup(pgid, signal) {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false; // ESRCH: the group is already gone
  }
}

async function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

async function waitForPort(port, deadlineMs, isDead) {
  const until = Date.now() + deadlineMs;
  while (Date.now() < until) {
    if (isDead()) throw new Error('tauri-driver exited before it listened');
    const ok = await new Promise((r) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), r(true)));
      socket.once('error', () => r(false));
    });
    if (ok) return;
    await sleep(50);
  }
  throw new Error(`tauri-driver did not listen on ${port} within ${deadlineMs} ms`);
}

/**
 * Launches Taskdeck with a fresh temporary data dir and config path.
 * Returns the WebDriver, the paths the app was given, and `stop()` which must run in a `finally`.
 * A test that restarts the app passes the first run's `dataDir` and `configPath` to the second; paths
 * given that way are the caller's to remove, `stop()` removes only what it created.
 */
export async function startApp({ extraArgs = [], dataDir: givenDataDir, configPath: givenConfigPath } = {}) {
  const scratch = mkdtempSync(join(tmpdir(), 'taskdeck-e2e-'));
  const dataDir = givenDataDir ?? join(scratch, 'data');
  const configPath = givenConfigPath ?? join(scratch, 'config', 'servers.json');
  const driverLog = join(scratch, 'tauri-driver.log');
  const args = ['--data-dir', dataDir, '--config', configPath, ...extraArgs];

  const port = await freePort();
  const nativePort = await freePort();
  const logFd = openSync(driverLog, 'a');
  const driver = spawn(tauriDriver, ['--port', String(port), '--native-port', String(nativePort), '--native-driver', nativeDriver], {
    detached: true, // leader of a new process group: see the top of this file
    stdio: ['ignore', logFd, logFd],
  });
  closeSync(logFd);
  let exited = false;
  driver.once('exit', () => (exited = true));
  liveGroups.add(driver.pid);

  let session;
  const stop = async () => {
    if (session) {
      // A wedged session must not hang teardown; the group kill below covers what quit() leaves.
      await within(session.quit().catch(() => {}), 5000);
      session = undefined;
    }
    if (killGroup(driver.pid, 'SIGTERM')) {
      await sleep(300);
      killGroup(driver.pid, 'SIGKILL');
    }
    liveGroups.delete(driver.pid);
    if (!process.env.TASKDECK_E2E_KEEP) rmSync(scratch, { recursive: true, force: true });
  };

  try {
    await waitForPort(port, 15000, () => exited);
    session = await new Builder()
      .usingServer(`http://127.0.0.1:${port}/`)
      .withCapabilities({
        browserName: 'wry',
        'tauri:options': { application: appBinary, args },
      })
      .build();
  } catch (err) {
    let log = '';
    try {
      log = readFileSync(driverLog, 'utf8');
    } catch {}
    await stop();
    throw new Error(`could not start ${appBinary}: ${err.message}\n--- tauri-driver log ---\n${log}`);
  }

  return { driver: session, dataDir, configPath, args, stop };
}

/** Live (not zombie) processes whose command line contains every one of `needles`: `{pid, ppid, argv}`. */
export function processesWith(...needles) {
  const found = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (!argv.length || !needles.every((n) => argv.some((a) => a.includes(n)))) continue;
      // PID 1 here does not reap orphans: a zombie still has a /proc entry (with an empty cmdline,
      // but check the state too).
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (state === 'Z' || state === 'X') continue;
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      found.push({ pid: Number(entry), ppid, argv });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Ids of visible X11 windows whose title is exactly `title` (needs xdotool and $DISPLAY). */
export async function visibleWindowsTitled(title) {
  const escaped = title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  try {
    const { stdout } = await run('xdotool', ['search', '--onlyvisible', '--name', `^${escaped}$`]);
    return stdout.split('\n').filter(Boolean);
  } catch {
    return []; // xdotool exits 1 when nothing matches
  }
}

/** Calls one of the app's commands from the page, as the UI does; fails the test on a rejection. */
export async function invoke(driver, cmd, args = {}) {
  const reply = await driver.executeAsyncScript(
    `const done = arguments[arguments.length - 1];
     window.__TAURI_INTERNALS__.invoke(arguments[0], arguments[1])
       .then((value) => done({ ok: true, value }), (error) => done({ ok: false, error: JSON.stringify(error) }));`,
    cmd,
    args,
  );
  if (!reply.ok) throw new Error(`${cmd} failed: ${reply.error}`);
  return reply.value;
}

/** Polls `probe` until it returns a truthy value or `ms` pass; returns the last value. */
export async function eventually(probe, ms = 10000, every = 100) {
  const until = Date.now() + ms;
  let value;
  do {
    value = await probe();
    if (value) return value;
    await sleep(every);
  } while (Date.now() < until);
  return value;
}

/**
 * Desktop notifications sent since `mark` (see `notificationMark`), as recorded by
 * support/notify-recorder.py, which run.sh starts on the session bus before any app. The log is
 * shared by the whole suite, so a test reads from its own mark on. Each is `{id, app_name, summary,
 * body, hints, …}`.
 */
export function recordedNotifications(mark = 0) {
  const file = process.env.TASKDECK_E2E_NOTIFICATIONS;
  if (!file) throw new Error('TASKDECK_E2E_NOTIFICATIONS is unset: run the suite through tests/e2e/run.sh');
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return []; // nothing recorded yet
  }
  return text
    .split('\n')
    .filter(Boolean)
    .slice(mark)
    .map((line) => JSON.parse(line));
}

/** Where the notification log stands now: pass it to `recordedNotifications` to see only what follows. */
export function notificationMark() {
  return recordedNotifications().length;
}

/** The element matching the CSS `selector`, once there is one. */
export async function waitFor(driver, selector, ms = 20000) {
  return driver.wait(until.elementLocated(By.css(selector)), ms, `no ${selector} within ${ms} ms`);
}

/** Fills the open run form of the demo's generate_report and submits it. */
export async function submitReport(driver, topic, seconds) {
  const form = await waitFor(driver, '[data-testid="run-form"]');
  // sendKeys types every character, quotes and angle brackets included.
  await form.findElement(By.css('input[name="topic"]')).sendKeys(topic);
  const s = await form.findElement(By.css('input[name="seconds"]'));
  await s.clear();
  await s.sendKeys(String(seconds));
  await form.findElement(By.css('[data-testid="run-submit"]')).click();
}

/** Pauses the app's notifications, for specs that finish tasks but are not about notifying. */
export async function muteNotifications(driver) {
  await invoke(driver, 'set_notifications_muted', { muted: true });
  const info = await invoke(driver, 'app_info');
  if (info.notifications_muted !== true) throw new Error('notifications did not pause');
}
