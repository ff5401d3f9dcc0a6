// Desktop notifications as the notification server sees them (support/notify-recorder.py): one per
// finished task or question, none while paused, and a click brings the task forward.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { By, until } from 'selenium-webdriver';
import { eventually, invoke, notificationMark, recordedNotifications, startApp } from '../support/app.mjs';

const run = promisify(execFile);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The recorder's log is shared by the whole suite: each test here reads only what came after it
// started.
let mark = 0;

async function withApp(body) {
  mark = notificationMark();
  const app = await startApp();
  try {
    await app.driver.wait(until.elementLocated(By.css('[data-testid="sidebar"]')), 15000);
    await body(app.driver, app);
  } finally {
    await app.stop();
  }
}


/** Collects the payloads of a Tauri event in the page, for `heard` to read. */
async function listen(driver, event) {
  await driver.executeAsyncScript(
    `const done = arguments[arguments.length - 1];
     const event = arguments[0];
     const seen = (window.__heard ??= {});
     seen[event] = [];
     const handler = window.__TAURI_INTERNALS__.transformCallback((e) => seen[event].push(e.payload));
     window.__TAURI_INTERNALS__.invoke('plugin:event|listen', { event, target: { kind: 'Any' }, handler })
       .then(() => done(), (e) => done(String(e)));`,
    event,
  );
}

const heard = (driver, event) => driver.executeScript('return (window.__heard ?? {})[arguments[0]] ?? []', event);

async function runTool(driver, tool, args) {
  return invoke(driver, 'run_tool', { server: 'demo', tool, arguments: args });
}

async function waitForTask(driver, id, what, ok, ms = 20000) {
  const task = await eventually(async () => {
    const { task } = await invoke(driver, 'task_detail', { id });
    return ok(task) ? task : undefined;
  }, ms, 100);
  assert.ok(task, `task ${id} was not ${what} within ${ms} ms`);
  return task;
}

const completed = (driver, id) => waitForTask(driver, id, 'completed', (t) => t.status === 'completed');

const notificationsAbout = (summary) => recordedNotifications(mark).filter((n) => n.summary === summary);

test('a finished task notifies once with its status message, and clicking it focuses the task', async () => {
  await withApp(async (driver) => {
    await listen(driver, 'focus-task');
    const started = await runTool(driver, 'generate_report', { topic: 'x', seconds: 1 });
    const done = await completed(driver, started.id);

    const sent = await eventually(() => notificationsAbout('generate_report on demo: Done').length > 0, 5000);
    assert.ok(sent, `no notification; recorded: ${JSON.stringify(recordedNotifications(mark))}`);
    const [note] = notificationsAbout('generate_report on demo: Done');
    assert.equal(note.app_name, 'Taskdeck');
    assert.equal(note.body, done.status_message);
    assert.deepEqual(note.actions, ['default', 'Show']);

    // Later updates of the same finished task are not news.
    await sleep(300);
    assert.equal(recordedNotifications(mark).filter((n) => n.summary).length, 1);

    // The click as a notification server reports it; the app waits for it on its own thread, which
    // starts listening just after the notification is shown, so say it until the app hears it.
    const clicked = await eventually(async () => {
      await run('gdbus', [
        'emit', '--session', '--object-path', '/org/freedesktop/Notifications',
        '--signal', 'org.freedesktop.Notifications.ActionInvoked', `uint32 ${note.id}`, "'default'",
      ]);
      return (await heard(driver, 'focus-task')).length > 0;
    }, 5000, 200);
    assert.ok(clicked, 'no focus-task event after the click');
    assert.deepEqual((await heard(driver, 'focus-task'))[0], { id: started.id });
  });
});

test('paused notifications send nothing, and the pause reaches app_info and listeners', async () => {
  await withApp(async (driver) => {
    await listen(driver, 'notifications-muted');
    await invoke(driver, 'set_notifications_muted', { muted: true });
    assert.equal((await invoke(driver, 'app_info')).notifications_muted, true);
    assert.deepEqual(await eventually(() => heard(driver, 'notifications-muted').then((h) => h.length && h)), [
      { muted: true },
    ]);

    const quiet = await runTool(driver, 'generate_report', { topic: 'quiet', seconds: 1 });
    await completed(driver, quiet.id);
    // The engine's event reaches the app a moment after the store has the status.
    await sleep(500);
    assert.deepEqual(recordedNotifications(mark), []);

    // Resumed, the next one is told: the silence above was the pause, not a broken pipe.
    await invoke(driver, 'set_notifications_muted', { muted: false });
    const loud = await runTool(driver, 'generate_report', { topic: 'loud', seconds: 1 });
    await completed(driver, loud.id);
    assert.ok(await eventually(() => recordedNotifications(mark).length === 1, 5000));
    assert.equal(recordedNotifications(mark)[0].summary, 'generate_report on demo: Done');
  });
});

test('a question notifies "Needs your input" with the question as the body', async () => {
  await withApp(async (driver) => {
    const started = await runTool(driver, 'diagnose_incident', {});
    const asking = await waitForTask(driver, started.id, 'asking', (t) => t.status === 'input_required' && t.question);
    const summary = 'diagnose_incident on demo: Needs your input';
    assert.ok(
      await eventually(() => notificationsAbout(summary).length > 0, 5000),
      `no notification; recorded: ${JSON.stringify(recordedNotifications(mark))}`,
    );
    const [note] = notificationsAbout(summary);
    assert.equal(note.body, asking.question.request.params.message);
    assert.match(note.body, /Which service/);
    await invoke(driver, 'cancel_task', { id: started.id });
  });
});

test('a burst of questions from many tasks yields a bounded number of notifications that count them all', async () => {
  await withApp(async (driver) => {
    const runs = 8;
    // Started together, from the page, so the questions arrive as one burst.
    const started = await driver.executeAsyncScript(
      `const done = arguments[arguments.length - 1];
       const runs = arguments[0];
       const one = () => window.__TAURI_INTERNALS__.invoke('run_tool', { server: 'demo', tool: 'diagnose_incident', arguments: {} });
       Promise.all(Array.from({ length: runs }, one)).then((tasks) => done(tasks.map((t) => t.id)), (e) => done(String(e)));`,
      runs,
    );
    assert.ok(Array.isArray(started), `runs failed: ${started}`);
    for (const id of started) await waitForTask(driver, id, 'asking', (t) => t.status === 'input_required' && t.question);

    const single = 'diagnose_incident on demo: Needs your input';
    const counted = (notes) =>
      notes.reduce((sum, n) => {
        if (n.summary === single) return sum + 1;
        const group = /^(\d+) tasks need you$/.exec(n.summary);
        return sum + (group ? Number(group[1]) : 0);
      }, 0);
    const notes = () => recordedNotifications(mark).filter((n) => n.summary);
    // The planner holds what is beyond its cap (3 in 10 s) back, then shows it as one.
    const all = await eventually(() => counted(notes()) >= runs, 15000, 200);
    assert.ok(all, `not every task was told of; recorded: ${JSON.stringify(notes())}`);
    assert.equal(counted(notes()), runs, `a task was told of twice: ${JSON.stringify(notes())}`);
    assert.ok(notes().length <= 3, `${notes().length} notifications for one burst: ${JSON.stringify(notes())}`);
    assert.ok(notes().length < runs, 'the burst was gathered');
    for (const n of notes()) assert.ok(n.body.length <= 300 * 2, 'a body is a few lines, not the questions');
    // Left running they would be resumed by nobody; one that already ended needs no cancel.
    for (const id of started) {
      const { task } = await invoke(driver, 'task_detail', { id });
      if (task.status === 'working' || task.status === 'input_required') await invoke(driver, 'cancel_task', { id });
    }
  });
});
