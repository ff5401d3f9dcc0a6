// Export asks where to save, through the system's own save dialog, and writes the stored result
// there. The GTK dialog is driven like a user would: type a path, press Enter.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { eventually, invoke, startApp, submitReport, visibleWindowsTitled, waitFor } from '../support/app.mjs';

const run = promisify(execFile);

/** Types into the dialog titled `title` and confirms; there is no window manager to give it focus. */
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

test('Export asks where to save the result and writes it there', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await (await waitFor(driver, '[data-testid="empty-run-demo"]')).click();
    await submitReport(driver, 'exported', 0);
    const row = await waitFor(driver, '[data-testid="task-row"][data-status="completed"]', 30000);
    const id = await row.getAttribute('data-task-id');

    const target = join(mkdtempSync(join(tmpdir(), 'taskdeck-export-')), 'report.json');
    await (await waitFor(driver, `[data-testid="task-detail"][data-task-id="${id}"] [data-testid="result-export"]`)).click();
    await answerSaveDialog('Export result', target);

    const shown = await waitFor(driver, '[data-testid="result-exported"]', 15000);
    assert.match(await shown.getText(), /report\.json/);
    assert.ok(existsSync(target), `${target} was not written`);
    const { task } = await invoke(driver, 'task_detail', { id });
    assert.deepEqual(JSON.parse(readFileSync(target, 'utf8')), task.result);
  } finally {
    await app.stop();
  }
});
