// Cancel, run again, the progress bar and keyboard selection in the Tasks view, through the
// data-testid hooks listed in ui/src/tasks/TasksView.svelte.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { By, Key } from 'selenium-webdriver';
import { eventually, startApp, submitReport, waitFor } from '../support/app.mjs';

const css = (s) => By.css(s);

test('a running task shows a determinate bar, can be cancelled, and run again as a new selected task', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await (await waitFor(driver, '[data-testid="empty-run-demo"]')).click();
    await submitReport(driver, 'slow report', 60);

    const row = await waitFor(driver, '[data-testid="task-row"][data-status="working"]', 30000);
    const first = await row.getAttribute('data-task-id');
    // generate_report reports a total, so the bar gets a value once the first stage is reported.
    const now = await eventually(async () => {
      try {
        const bar = await driver.findElement(css(`[data-task-id="${first}"] [data-testid="task-progress"]`));
        return await bar.getAttribute('aria-valuenow');
      } catch {
        return undefined; // re-rendered between the find and the read: look again
      }
    }, 20000);
    assert.ok(Number(now) >= 0 && Number(now) <= 100, `aria-valuenow ${now}`);

    await (await waitFor(driver, `[data-testid="task-detail"][data-task-id="${first}"] [data-testid="task-cancel"]`)).click();
    await waitFor(driver, `[data-testid="task-row"][data-task-id="${first}"][data-status="cancelled"]`, 20000);
    // A finished task has neither a cancel button nor a progress bar.
    assert.equal((await driver.findElements(css('[data-testid="task-cancel"]'))).length, 0);
    assert.equal((await driver.findElements(css(`[data-task-id="${first}"] [data-testid="task-progress"]`))).length, 0);

    await (await waitFor(driver, '[data-testid="task-rerun"]')).click();
    // The detail pane is rebuilt per task, so wait on selectors, not on an element that may go stale.
    const detail = await waitFor(driver, `[data-testid="task-detail"]:not([data-task-id="${first}"])`);
    const second = await detail.getAttribute('data-task-id');
    const rows = await driver.findElements(css('[data-testid="task-row"]'));
    assert.equal(rows.length, 2);
    assert.equal(await rows[0].getAttribute('data-task-id'), second, 'newest first');

    // Arrow keys move the selection through the list, which keeps the focus.
    await driver.findElement(css('[data-testid="task-list"]')).sendKeys(Key.ARROW_DOWN);
    await waitFor(driver, `[data-testid="task-detail"][data-task-id="${first}"]`, 5000);
    assert.equal(await driver.findElement(css(`[data-testid="task-row"][data-task-id="${first}"]`)).getAttribute('aria-selected'), 'true');
    await driver.findElement(css('[data-testid="task-list"]')).sendKeys(Key.ARROW_UP);
    await waitFor(driver, `[data-testid="task-detail"][data-task-id="${second}"]`, 5000);

    await driver.findElement(css('[data-testid="task-cancel"]')).click();
    await waitFor(driver, `[data-testid="task-row"][data-task-id="${second}"][data-status="cancelled"]`, 20000);
  } finally {
    await app.stop();
  }
});
