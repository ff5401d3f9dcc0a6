// Settings that stick, and the keyboard path through the app: a dark theme and paused notifications
// chosen in the Settings view are there again after a restart, before the first paint, in the tray's
// and the status bar's switch and in settings.json; the tray and the status bar write the setting
// too; retention and the kinds of notifications apply as set; and a task is run and opened from the
// keyboard alone, from `N` to the finished task.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { By, Key } from 'selenium-webdriver';
import { eventually, invoke, muteNotifications, notificationMark, recordedNotifications, startApp, waitFor } from '../support/app.mjs';

const css = (s) => By.css(s);

// The tray over D-Bus, as a panel sees it (as in os-tray.test.mjs: no panel runs under Xvfb).
const ITEM = '/org/ayatana/NotificationItem/tray_icon_tray_app_main';
const gdbus = async (...args) => (await promisify(execFile)('gdbus', ['call', '--session', ...args])).stdout;

async function trayOwner() {
  const names = (await gdbus('--dest', 'org.freedesktop.DBus', '--object-path', '/org/freedesktop/DBus',
    '--method', 'org.freedesktop.DBus.ListNames')).match(/':[0-9.]+'/g).map((n) => n.slice(1, -1));
  for (const name of names) {
    try {
      await gdbus('--timeout', '1', '--dest', name, '--object-path', `${ITEM}/Menu`,
        '--method', 'com.canonical.dbusmenu.GetLayout', '--', '0', '0', '@as []');
      return name;
    } catch {}
  }
  return undefined;
}

/** The tray's "Pause notifications" entry: its id and whether it is checked. */
async function pauseItem(owner) {
  const text = await gdbus('--dest', owner, '--object-path', `${ITEM}/Menu`, '--method', 'com.canonical.dbusmenu.GetLayout', '--', '0', '-1', '@as []');
  const [, id, props] = [...text.matchAll(/<\((\d+), \{([^}]*)\}/g)].find(([, , p]) => p.includes("'Pause notifications'")) ?? [];
  return id === undefined ? undefined : { id: Number(id), checked: props.includes("'toggle-state': <1>") };
}

const rootTheme = (driver) => driver.executeScript('return document.documentElement.getAttribute("data-theme")');
const background = (driver) => driver.executeScript('return getComputedStyle(document.body).backgroundColor');
const activeTestId = (driver) => driver.executeScript('return document.activeElement && document.activeElement.getAttribute("data-testid")');
/** Keys as a user types them, to whatever has focus. */
const press = (driver, ...keys) => driver.actions().sendKeys(...keys).perform();
/** A chord with Ctrl held, as a user presses it (sendKeys would let go of Ctrl before the key). */
const withCtrl = (driver, key) => driver.actions().keyDown(Key.CONTROL).sendKeys(key).keyUp(Key.CONTROL).perform();

test('a dark theme and paused notifications chosen in Settings survive a restart of the app', async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'taskdeck-e2e-settings-'));
  const dataDir = join(scratch, 'data');
  const configPath = join(scratch, 'config', 'servers.json');
  let app;
  try {
    app = await startApp({ dataDir, configPath });
    let { driver } = app;
    await (await waitFor(driver, '[data-testid="nav-settings"]')).click();
    await waitFor(driver, '[data-testid="settings-view"]');
    const light = await background(driver);

    await (await waitFor(driver, '[data-testid="settings-theme"][data-theme="dark"]')).click();
    assert.equal(await eventually(() => rootTheme(driver).then((t) => t === 'dark' && t)), 'dark', 'applied at once');
    const dark = await background(driver);
    assert.notEqual(dark, light, 'the page is drawn in the dark palette');

    await (await waitFor(driver, '[data-testid="settings-paused"]')).click();
    assert.ok(await eventually(async () => (await invoke(driver, 'app_info')).notifications_muted), 'paused');
    const mute = await waitFor(driver, '[data-testid="notifications-mute"]');
    assert.equal(await eventually(() => mute.getText().then((t) => t === 'Notifications off' && t)), 'Notifications off', 'the status bar follows');

    const onDisk = JSON.parse(readFileSync(join(dataDir, 'settings.json'), 'utf8'));
    assert.equal(onDisk.theme, 'dark');
    assert.equal(onDisk.notifications.paused, true);

    await app.stop();
    app = undefined;

    // ---- the next launch ----
    app = await startApp({ dataDir, configPath });
    driver = app.driver;
    await waitFor(driver, '[data-testid="sidebar"]');
    // Said by the shell before the page's scripts ran, so the first paint was dark already.
    assert.equal(await driver.executeScript('return window.__TASKDECK_THEME__'), 'dark');
    assert.equal(await rootTheme(driver), 'dark');
    assert.equal(await background(driver), dark);
    assert.equal((await invoke(driver, 'app_info')).notifications_muted, true, 'still paused');
    const settings = await invoke(driver, 'get_settings');
    assert.equal(settings.theme, 'dark');
    assert.equal(settings.notifications.paused, true);
    const muteAgain = await waitFor(driver, '[data-testid="notifications-mute"]');
    assert.equal(await muteAgain.getText(), 'Notifications off');

    // The status bar writes the setting too, and the Settings view follows it.
    await (await waitFor(driver, '[data-testid="nav-settings"]')).click();
    const paused = await waitFor(driver, '[data-testid="settings-paused"]');
    assert.equal(await paused.isSelected(), true);
    await muteAgain.click();
    assert.equal(await eventually(async () => !(await paused.isSelected())), true, 'the view follows the status bar');
    assert.equal(JSON.parse(readFileSync(join(dataDir, 'settings.json'), 'utf8')).notifications.paused, false);

    // A theme chosen back is applied at once as well.
    await (await waitFor(driver, '[data-testid="settings-theme"][data-theme="light"]')).click();
    assert.equal(await eventually(() => rootTheme(driver).then((t) => t === 'light' && t)), 'light');
    assert.equal(await background(driver), light);
  } finally {
    if (app) await app.stop();
    if (!process.env.TASKDECK_E2E_KEEP) rmSync(scratch, { recursive: true, force: true });
  }
});

test('a settings file Taskdeck cannot read is shown with its error and left byte for byte as it was', async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'taskdeck-e2e-broken-settings-'));
  const dataDir = join(scratch, 'data');
  const file = join(dataDir, 'settings.json');
  const broken = '{"theme": "dark", "notifications": {"paused": tru';
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(file, broken);
  const app = await startApp({ dataDir, configPath: join(scratch, 'config', 'servers.json') });
  try {
    const { driver } = app;
    await waitFor(driver, '[data-testid="sidebar"]');
    assert.equal(await rootTheme(driver), null, 'the defaults apply: the system theme');
    await (await waitFor(driver, '[data-testid="nav-settings"]')).click();
    const error = await waitFor(driver, '[data-testid="settings-error"]');
    assert.match(await error.getText(), /settings\.json/);
    assert.match(await error.getText(), /not JSON/);
    // The status bar's pause still holds for this run, and says why it will not last.
    await (await waitFor(driver, '[data-testid="notifications-mute"]')).click();
    const alert = await waitFor(driver, '[data-testid="status-bar"] [role="alert"]');
    assert.match(await alert.getText(), /settings file cannot be read/);
    assert.equal((await invoke(driver, 'app_info')).notifications_muted, true);
    assert.equal(readFileSync(file, 'utf8'), broken, 'the file is as the user left it');
  } finally {
    await app.stop();
    if (!process.env.TASKDECK_E2E_KEEP) rmSync(scratch, { recursive: true, force: true });
  }
});

test("the tray's Pause item writes the setting, the Settings view follows it, and the next launch starts paused", async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'taskdeck-e2e-tray-'));
  const dataDir = join(scratch, 'data');
  const configPath = join(scratch, 'config', 'servers.json');
  let app;
  try {
    app = await startApp({ dataDir, configPath });
    let { driver } = app;
    await (await waitFor(driver, '[data-testid="nav-settings"]')).click();
    const paused = await waitFor(driver, '[data-testid="settings-paused"]');
    assert.equal(await paused.isSelected(), false);
    let owner = await eventually(trayOwner, 5000);
    assert.ok(owner, 'no tray item on the session bus');
    const item = await pauseItem(owner);
    assert.equal(item.checked, false);
    await gdbus('--dest', owner, '--object-path', `${ITEM}/Menu`, '--method', 'com.canonical.dbusmenu.Event',
      '--', String(item.id), 'clicked', '<0>', 'uint32 0');
    assert.equal(await eventually(() => paused.isSelected()), true, 'the Settings view follows the tray');
    assert.equal(JSON.parse(readFileSync(join(dataDir, 'settings.json'), 'utf8')).notifications.paused, true);

    await app.stop();
    app = undefined;
    app = await startApp({ dataDir, configPath });
    driver = app.driver;
    await waitFor(driver, '[data-testid="sidebar"]');
    owner = await eventually(trayOwner, 5000);
    assert.ok(owner, 'no tray item after the restart');
    assert.equal((await pauseItem(owner)).checked, true, 'the tray starts paused');

    // Resumed from the Settings view: the tray's check mark follows.
    await (await waitFor(driver, '[data-testid="nav-settings"]')).click();
    await (await waitFor(driver, '[data-testid="settings-paused"]')).click();
    assert.ok(await eventually(async () => !(await pauseItem(owner)).checked, 5000), 'the tray follows the view');
  } finally {
    if (app) await app.stop();
    if (!process.env.TASKDECK_E2E_KEEP) rmSync(scratch, { recursive: true, force: true });
  }
});

test('a retention policy saved in Settings is applied at once, and a wrong limit is refused by its field', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await waitFor(driver, '[data-testid="sidebar"]');
    await muteNotifications(driver);
    const ids = [];
    for (const seconds of [0, 0, 0]) {
      const task = await invoke(driver, 'run_tool', { server: 'demo', tool: 'generate_report', arguments: { topic: 'old', seconds } });
      ids.push(task.id);
    }
    for (const id of ids) {
      await waitFor(driver, `[data-testid="task-row"][data-task-id="${id}"][data-status="completed"]`, 30000);
    }

    await (await waitFor(driver, '[data-testid="nav-settings"]')).click();
    const keep = await waitFor(driver, '[data-testid="retention-keep_tasks"]');
    await keep.sendKeys('0');
    await (await waitFor(driver, '[data-testid="retention-save"]')).click();
    const error = await waitFor(driver, '[data-testid="retention-error"]');
    assert.match(await error.getText(), /at least 1/);
    assert.equal(await keep.getAttribute('aria-invalid'), 'true');

    // Fixed from the keyboard: Enter in the field saves the form.
    await keep.click();
    await press(driver, Key.BACK_SPACE, '1', Key.ENTER);
    const summary = await waitFor(driver, '[data-testid="retention-summary"]');
    assert.match(await eventually(() => summary.getText().then((t) => /up to 1 of them/.test(t) && t)), /kept up to 1 of them/);
    // The two older reports go; the newest stays.
    const exists = (id) => invoke(driver, 'task_detail', { id }).then(() => true, () => false);
    assert.ok(await eventually(async () => !(await exists(ids[0])) && !(await exists(ids[1])), 15000), 'the older finished tasks were removed');
    assert.equal(await exists(ids[2]), true, 'the newest is kept');
    const onDisk = JSON.parse(readFileSync(join(app.dataDir, 'settings.json'), 'utf8'));
    assert.deepEqual(onDisk.retention, { keep_days: null, keep_tasks: 1, max_mb: null });
  } finally {
    await app.stop();
  }
});

test('with finished tasks unticked in Settings, a finished report notifies nothing and a question still does', async () => {
  const mark = notificationMark();
  const app = await startApp();
  try {
    const { driver } = app;
    await waitFor(driver, '[data-testid="sidebar"]');
    await (await waitFor(driver, '[data-testid="nav-settings"]')).click();
    await (await waitFor(driver, '[data-testid="settings-kind"][data-kind="finished"]')).click();
    assert.equal((await invoke(driver, 'get_settings')).notifications.finished, false);

    // The window is on another view, so nothing is held back for being on screen.
    const report = await invoke(driver, 'run_tool', { server: 'demo', tool: 'generate_report', arguments: { topic: 'quiet', seconds: 0 } });
    const done = await eventually(async () => (await invoke(driver, 'task_detail', { id: report.id })).task.status === 'completed', 20000);
    assert.ok(done, 'the report finished');
    await new Promise((r) => setTimeout(r, 1500)); // past the planner's gathering window
    assert.deepEqual(recordedNotifications(mark), [], 'no notification for the finished report');

    await invoke(driver, 'run_tool', { server: 'demo', tool: 'diagnose_incident', arguments: {} });
    const asked = await eventually(() => recordedNotifications(mark).find((n) => /Needs your input/.test(n.summary)), 20000);
    assert.ok(asked, 'the question was notified');
  } finally {
    await app.stop();
  }
});

test('from N to a finished task by keyboard alone: pick a tool by name, fill its form, open the result', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await waitFor(driver, '[data-testid="sidebar"]');
    await muteNotifications(driver);
    // One task already there, so that J and K have somewhere to go.
    const first = await invoke(driver, 'run_tool', { server: 'demo', tool: 'generate_report', arguments: { topic: 'earlier', seconds: 0 } });
    await waitFor(driver, `[data-testid="task-row"][data-task-id="${first.id}"][data-status="completed"]`, 30000);
    await driver.executeScript('document.activeElement && document.activeElement.blur()');

    // A shortcut waits while the user types: N in the search box is a letter of the query.
    await withCtrl(driver, 'k');
    assert.equal(await activeTestId(driver), 'task-search', 'Ctrl+K focuses the task search');
    await press(driver, 'n');
    assert.equal((await driver.findElements(css('[data-testid="tool-picker"]'))).length, 0, 'no picker while typing');
    const search = await waitFor(driver, '[data-testid="task-search"]');
    assert.equal(await search.getAttribute('value'), 'n');
    await search.clear();
    await press(driver, Key.ESCAPE);
    await driver.executeScript('document.activeElement && document.activeElement.blur()');

    // `N`: the tool picker, a tool found by part of its name, Enter opens its form.
    await press(driver, 'n');
    await waitFor(driver, '[data-testid="tool-picker"][open]');
    assert.equal(await activeTestId(driver), 'tool-picker-search');
    await press(driver, 'report');
    const best = await waitFor(driver, '[data-testid="tool-picker-option"][aria-selected="true"]');
    assert.equal(await best.getAttribute('data-tool'), 'generate_report');
    await press(driver, Key.ENTER);
    const form = await waitFor(driver, '[data-testid="run-form"][data-tool="generate_report"]');

    // The form starts in its first field; Tab moves on; Enter in a field runs the tool.
    await press(driver, 'typed by keyboard');
    const seconds = await form.findElement(css('input[name="seconds"]'));
    await seconds.clear();
    await seconds.sendKeys('1', Key.ENTER);
    const row = await waitFor(driver, '[data-testid="task-row"][data-status="completed"]:not([data-task-id="' + first.id + '"])', 30000);
    const id = await row.getAttribute('data-task-id');
    const detail = await waitFor(driver, `[data-testid="task-detail"][data-task-id="${id}"]`);
    assert.match(await detail.getText(), /typed by keyboard/);

    // Esc closes the detail; J and K move through the tasks; Enter opens the selected one.
    await driver.executeScript('document.activeElement && document.activeElement.blur()');
    await press(driver, Key.ESCAPE);
    assert.ok(await eventually(async () => (await driver.findElements(css('[data-testid="task-detail"]'))).length === 0), 'Esc closed the detail');
    await driver.executeScript('document.activeElement && document.activeElement.blur()');
    await press(driver, 'j');
    await waitFor(driver, `[data-testid="task-row"][data-task-id="${first.id}"][aria-selected="true"]`, 5000);
    await press(driver, 'k');
    await waitFor(driver, `[data-testid="task-row"][data-task-id="${id}"][aria-selected="true"]`, 5000);
    await press(driver, 'j', Key.ENTER);
    const opened = await waitFor(driver, `[data-testid="task-detail"][data-task-id="${first.id}"]`, 5000);
    assert.match(await opened.getText(), /earlier/);

    // `?` lists the shortcuts; Esc closes the list.
    await driver.executeScript('document.activeElement && document.activeElement.blur()');
    await press(driver, '?');
    const list = await waitFor(driver, '[data-testid="shortcuts"][open]');
    assert.match(await list.getText(), /Ctrl K/);
    assert.match(await list.getText(), /Run a tool/);
    await press(driver, Key.ESCAPE);
    assert.ok(await eventually(async () => (await driver.findElements(css('[data-testid="shortcuts"]'))).length === 0), 'Esc closed the list');
  } finally {
    await app.stop();
  }
});
