// One submission of the run form is one task: the form sends one idempotency key per submission,
// so a second submit while the first is on its way, or the same key sent again, starts nothing
// new (`Engine::run_once`).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { By } from 'selenium-webdriver';
import { eventually, startApp, waitFor } from '../support/app.mjs';

const css = (s) => By.css(s);

test('a double submit of the run form starts one task', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await (await waitFor(driver, '[data-testid="empty-run-demo"]')).click();
    const form = await waitFor(driver, '[data-testid="run-form"]');
    await form.findElement(css('input[name="topic"]')).sendKeys('twice');
    // Both submits in one turn of the event loop, before the first one's reply could disable
    // anything: what a double click or a repeated Enter does at its worst.
    await driver.executeScript((f) => {
      f.requestSubmit();
      f.requestSubmit();
    }, form);
    await waitFor(driver, '[data-testid="task-row"]', 15000);
    // Whatever else arrives, it is the same task.
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal((await driver.findElements(css('[data-testid="task-row"]'))).length, 1);
  } finally {
    await app.stop();
  }
});

test('run_tool with a key already used gives back the task it made', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await waitFor(driver, '[data-testid="sidebar"]');
    const run = (key) =>
      driver.executeAsyncScript(
        `const done = arguments[arguments.length - 1];
         window.__TAURI_INTERNALS__.invoke('run_tool', { server: 'demo', tool: 'generate_report',
           arguments: { topic: 'once', seconds: 0.2 }, idempotencyKey: arguments[0] })
           .then((t) => done(t.id), (e) => done('error: ' + JSON.stringify(e)));`,
        key,
      );
    const first = await run('e2e-key');
    assert.doesNotMatch(first, /^error/);
    assert.equal(await run('e2e-key'), first);
    assert.notEqual(await run('another key'), first);
    const rows = await eventually(async () => {
      const found = await driver.findElements(css('[data-testid="task-row"]'));
      return found.length === 2 ? found : null;
    });
    assert.ok(rows, 'two tasks: one per key');
  } finally {
    await app.stop();
  }
});
