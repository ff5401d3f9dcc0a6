// History in the app: the list searched by the store's full-text index (a word that only the
// result holds), a delete that leaves its purge-log line in view, and an export through the save
// dialog. The dialog is driven as ui-export.test.mjs drives it: type a path, press Enter.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { By, Key } from 'selenium-webdriver';
import { eventually, invoke, muteNotifications, startApp, visibleWindowsTitled, waitFor } from '../support/app.mjs';

const run = promisify(execFile);
const css = (s) => By.css(s);

async function answerSaveDialog(title, path) {
  const [win] = await eventually(async () => {
    const ids = await visibleWindowsTitled(title);
    return ids.length > 0 ? ids : undefined;
  }, 15000);
  assert.ok(win, `no "${title}" window appeared`);
  await run('xdotool', ['windowfocus', '--sync', win]);
  await run('xdotool', ['key', '--clearmodifiers', 'ctrl+a']);
  await run('xdotool', ['type', '--delay', '20', path]);
  await run('xdotool', ['key', 'Return']);
}

/** The ids of the rows on screen, or undefined while one re-renders under the probe. */
async function rowIds(driver) {
  try {
    const rows = await driver.findElements(css('[data-testid="task-row"]'));
    return await Promise.all(rows.map((r) => r.getAttribute('data-task-id')));
  } catch {
    return undefined;
  }
}

async function report(driver, topic) {
  const task = await invoke(driver, 'run_tool', { server: 'demo', tool: 'generate_report', arguments: { topic, seconds: 0 } });
  await waitFor(driver, `[data-testid="task-row"][data-task-id="${task.id}"][data-status="completed"]`, 30000);
  return task.id;
}

/** Types into the search box as a user would (`clear()` sends no input event). */
async function search(driver, text) {
  const box = await waitFor(driver, '[data-testid="task-search"]');
  await box.sendKeys(Key.chord(Key.CONTROL, 'a'), Key.BACK_SPACE);
  if (text) await box.sendKeys(text);
}

test('search finds a task by a word in its result, delete leaves the purge line, export writes the file', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await waitFor(driver, '[data-testid="empty-run-demo"]');
    await muteNotifications(driver);
    const zebra = await report(driver, 'zebra');
    const yak = await report(driver, 'yak');

    // "Gathered" is only in the results (arguments hold the topic): both words must match.
    await search(driver, 'gathered zebra');
    const found = await eventually(async () => {
      const ids = await rowIds(driver);
      return ids && ids.length === 1 && ids[0] === zebra ? ids : undefined;
    }, 15000);
    assert.deepEqual(found, [zebra], 'only the zebra report matches');
    const snippet = await waitFor(driver, `[data-task-id="${zebra}"] [data-testid="task-snippet"][data-field="result"]`, 15000);
    const marks = await snippet.findElements(css('[data-testid="search-match"]'));
    const marked = await Promise.all(marks.map((m) => m.getText()));
    assert.ok(marked.includes('Gathered') && marked.includes('zebra'), `marked: ${marked}`);

    // Delete the task found, from its row.
    await (await waitFor(driver, `[data-testid="task-row"][data-task-id="${zebra}"]`)).click();
    await (await waitFor(driver, '[data-testid="tasks-delete"]')).click();
    await waitFor(driver, '[data-testid="delete-dialog"] [data-testid="delete-scope-tasks"]:checked');
    await (await waitFor(driver, '[data-testid="delete-confirm"]')).click();
    const line = await waitFor(driver, `[data-testid="purge-line"][data-task-id="${zebra}"]`, 15000);
    assert.equal(await line.getAttribute('data-why'), 'user');
    assert.match(await line.getText(), /generate_report/);
    await waitFor(driver, '[data-testid="tasks-deleted"]');
    const gone = await eventually(async () => {
      const ids = await rowIds(driver);
      return ids && !ids.includes(zebra) ? true : undefined;
    }, 10000);
    assert.ok(gone, 'the deleted row left the list');
    await assert.rejects(invoke(driver, 'task_detail', { id: zebra }), /not_found/);
    assert.equal((await invoke(driver, 'task_counts', { filter: { statuses: [], server: null, tool: null, created_from: null, created_until: null, waiting: false, search: null } })).total, 1);

    // Export what the whole list holds now (the yak report) as JSON Lines.
    await search(driver, '');
    const listed = await eventually(async () => {
      const ids = await rowIds(driver);
      return ids && ids.length === 1 && ids[0] === yak ? true : undefined;
    }, 15000);
    assert.ok(listed, 'the whole list shows the one task left');
    await (await waitFor(driver, '[data-testid="tasks-export"]')).click();
    await (await waitFor(driver, '[data-testid="export-scope-list"]')).click();
    await (await waitFor(driver, '[data-testid="export-jsonl"]')).click();
    const target = join(mkdtempSync(join(tmpdir(), 'taskdeck-history-')), 'tasks.jsonl');
    await (await waitFor(driver, '[data-testid="export-confirm"]')).click();
    await answerSaveDialog('Export tasks', target);
    const saved = await waitFor(driver, '[data-testid="export-saved"]', 15000);
    assert.match(await saved.getText(), /tasks\.jsonl/);
    assert.ok(existsSync(target), `${target} was not written`);
    const lines = readFileSync(target, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
    assert.equal(lines.length, 1, `exported: ${readFileSync(target, "utf8").slice(0, 500)}`);
    assert.equal(lines[0].id, yak);
    assert.ok(Array.isArray(lines[0].events) && lines[0].events.length > 0, 'the record comes with its events');
  } finally {
    await app.stop();
  }
});

test('a pinned task is listed first under a filter, and a task runs again with changes from its arguments', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await waitFor(driver, '[data-testid="empty-run-demo"]');
    await muteNotifications(driver);
    const older = await report(driver, 'older');
    const newer = await report(driver, 'newer');
    await (await waitFor(driver, `[data-testid="task-row"][data-task-id="${older}"] [data-testid="task-pin"]`)).click();
    await waitFor(driver, `[data-testid="task-row"][data-task-id="${older}"][data-pinned="true"]`, 10000);
    // The whole list stays in time order; under a filter the pinned task comes first.
    assert.deepEqual(await rowIds(driver), [newer, older]);
    const status = await waitFor(driver, '[data-testid="task-filter-status"]');
    await status.findElement(css('option[value="completed"]')).click();
    const first = await eventually(async () => {
      const ids = await rowIds(driver);
      return ids && ids.length === 2 && ids[0] === older ? ids : undefined;
    }, 10000);
    assert.deepEqual(first, [older, newer]);

    // "Run again with changes" opens the run form with the task's arguments in it.
    await (await waitFor(driver, `[data-testid="task-row"][data-task-id="${older}"]`)).click();
    await (await waitFor(driver, `[data-testid="task-detail"][data-task-id="${older}"] [data-testid="task-rerun-edit"]:not([disabled])`)).click();
    const form = await waitFor(driver, '[data-testid="run-form"][data-tool="generate_report"]');
    assert.equal(await form.findElement(css('input[name="topic"]')).getAttribute('value'), 'older');
    assert.equal(await form.findElement(css('input[name="seconds"]')).getAttribute('value'), '0');
  } finally {
    await app.stop();
  }
});

test('under a search, a new task whose arguments match joins the results with its match marked, without searching again', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await waitFor(driver, '[data-testid="empty-run-demo"]');
    await muteNotifications(driver);
    const before = await report(driver, 'wombat');

    await search(driver, 'quokka');
    const emptied = await eventually(async () => {
      const ids = await rowIds(driver);
      return ids && ids.length === 0 ? true : undefined;
    }, 15000);
    assert.ok(emptied, 'nothing matches yet');

    // Run while the search stays as it was: one task that matches, one that does not.
    const other = await invoke(driver, 'run_tool', { server: 'demo', tool: 'generate_report', arguments: { topic: 'wallaby', seconds: 3 } });
    const quokka = await invoke(driver, 'run_tool', { server: 'demo', tool: 'generate_report', arguments: { topic: 'quokka', seconds: 3 } });
    await waitFor(driver, `[data-testid="task-row"][data-task-id="${quokka.id}"]`, 15000);
    const snippet = await waitFor(driver, `[data-task-id="${quokka.id}"] [data-testid="task-snippet"]`, 15000);
    const marks = await snippet.findElements(css('[data-testid="search-match"]'));
    const marked = await Promise.all(marks.map((m) => m.getText()));
    assert.ok(marked.map((m) => m.toLowerCase()).includes('quokka'), `marked: ${marked}`);
    assert.equal(await (await waitFor(driver, '[data-testid="task-search"]')).getAttribute('value'), 'quokka');

    // It stays as it runs on and ends; the others never join.
    await waitFor(driver, `[data-testid="task-row"][data-task-id="${quokka.id}"][data-status="completed"]`, 30000);
    await waitFor(driver, `[data-testid="task-row"][data-task-id="${other.id}"]`, 1).then(
      () => assert.fail('the task that does not match joined the results'),
      () => {},
    );
    const shown = await eventually(() => rowIds(driver), 5000);
    assert.deepEqual(shown, [quokka.id], `neither ${other.id} nor ${before} is shown`);
  } finally {
    await app.stop();
  }
});
