// The tray as a panel sees it: the StatusNotifierItem and its dbusmenu on the session bus (no panel
// runs under Xvfb, so the test reads and clicks the menu over D-Bus, as a panel would).

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { By, until } from 'selenium-webdriver';
import { eventually, invoke, notificationMark, recordedNotifications, startApp, visibleWindowsTitled } from '../support/app.mjs';

const run = promisify(execFile);
const ITEM = '/org/ayatana/NotificationItem/tray_icon_tray_app_main';

const gdbus = async (...args) => (await run('gdbus', ['call', '--session', ...args])).stdout;

/** The bus name of the app's tray: the one connection that serves its menu. */
async function trayOwner() {
  const names = (await gdbus('--dest', 'org.freedesktop.DBus', '--object-path', '/org/freedesktop/DBus',
    '--method', 'org.freedesktop.DBus.ListNames')).match(/':[0-9.]+'/g).map((n) => n.slice(1, -1));
  for (const name of names) {
    try {
      // Some connections never answer a call they don't serve: don't wait the default 25 s for them.
      await gdbus('--timeout', '1', '--dest', name, '--object-path', `${ITEM}/Menu`,
        '--method', 'com.canonical.dbusmenu.GetLayout', '--', '0', '0', '@as []');
      return name;
    } catch {}
  }
  return undefined;
}

const menuLayout = (owner) =>
  gdbus('--dest', owner, '--object-path', `${ITEM}/Menu`, '--method', 'com.canonical.dbusmenu.GetLayout', '--', '0', '-1', '@as []');

/** Menu entries as `{id, label, checked}`, separators left out. */
async function menu(owner) {
  const text = await menuLayout(owner);
  return [...text.matchAll(/<\((\d+), \{([^}]*)\}/g)]
    .filter(([, , props]) => !props.includes("'separator'"))
    .map(([, id, props]) => ({
      id: Number(id),
      label: props.match(/'label': <'([^']*)'>/)?.[1],
      checked: props.includes("'toggle-state': <1>"),
    }));
}

async function panelLabel(owner) {
  const text = await gdbus('--dest', owner, '--object-path', ITEM, '--method', 'org.freedesktop.DBus.Properties.Get',
    'org.kde.StatusNotifierItem', 'XAyatanaLabel');
  return text.match(/<'([^']*)'>/)[1];
}


test('the tray counts running tasks and its Pause item mutes notifications and tells the webview', async () => {
  const mark = notificationMark();
  const app = await startApp();
  try {
    const { driver } = app;
    await driver.wait(until.elementLocated(By.css('[data-testid="sidebar"]')), 15000);
    const owner = await eventually(trayOwner, 5000);
    assert.ok(owner, 'no tray item on the session bus');
    assert.deepEqual((await menu(owner)).map((e) => e.label), ['Nothing running', 'Show Taskdeck', 'Pause notifications', 'Quit']);
    assert.equal(await panelLabel(owner), '');

    const task = await invoke(driver, 'run_tool', { server: 'demo', tool: 'generate_report', arguments: { topic: 'x', seconds: 2 } });
    assert.ok(await eventually(async () => (await menu(owner))[0].label === '1 task running', 5000));
    assert.equal(await panelLabel(owner), '1');

    await driver.executeAsyncScript(
      `const done = arguments[arguments.length - 1];
       window.__mutedEvents = [];
       const handler = window.__TAURI_INTERNALS__.transformCallback((e) => window.__mutedEvents.push(e.payload));
       window.__TAURI_INTERNALS__.invoke('plugin:event|listen', { event: 'notifications-muted', target: { kind: 'Any' }, handler })
         .then(() => done(), () => done());`,
    );
    const pause = (await menu(owner)).find((e) => e.label === 'Pause notifications');
    await gdbus('--dest', owner, '--object-path', `${ITEM}/Menu`, '--method', 'com.canonical.dbusmenu.Event',
      '--', String(pause.id), 'clicked', '<0>', 'uint32 0');
    const events = await eventually(async () => {
      const seen = await driver.executeScript('return window.__mutedEvents');
      return seen.length ? seen : undefined;
    }, 5000);
    assert.deepEqual(events, [{ muted: true }]);
    assert.equal((await invoke(driver, 'app_info')).notifications_muted, true);
    assert.equal((await menu(owner)).find((e) => e.id === pause.id).checked, true);

    // Finishing while paused: the count goes back down, and nothing is announced.
    assert.ok(await eventually(async () => (await menu(owner))[0].label === 'Nothing running', 20000));
    assert.equal((await invoke(driver, 'task_detail', { id: task.id })).task.status, 'completed');
    assert.equal(await panelLabel(owner), '');
    assert.deepEqual(recordedNotifications(mark), []);

    // The webview's own switch moves the tray's check mark back.
    await invoke(driver, 'set_notifications_muted', { muted: false });
    assert.ok(await eventually(async () => !(await menu(owner)).find((e) => e.id === pause.id).checked, 5000));

    // Quit while a task runs asks first, natively, and nothing quits meanwhile.
    await invoke(driver, 'run_tool', { server: 'demo', tool: 'generate_report', arguments: { topic: 'y', seconds: 5 } });
    assert.ok(await eventually(async () => (await menu(owner))[0].label === '1 task running', 5000));
    const quit = (await menu(owner)).find((e) => e.label === 'Quit');
    await gdbus('--dest', owner, '--object-path', `${ITEM}/Menu`, '--method', 'com.canonical.dbusmenu.Event',
      '--', String(quit.id), 'clicked', '<0>', 'uint32 0');
    assert.ok(await eventually(async () => (await visibleWindowsTitled('Quit Taskdeck?')).length === 1, 5000), 'no quit dialog');
    assert.equal((await invoke(driver, 'app_info')).engine_error, null);
  } finally {
    await app.stop();
  }
});
