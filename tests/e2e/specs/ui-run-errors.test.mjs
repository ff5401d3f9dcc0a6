// A run the engine refuses points at the field it refused, through the error's path and never its
// message text. The form checks what it can before sending; the JSON editor sends what was written,
// so the refusal there comes from the engine, judged against the tool's own inputSchema.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { By } from 'selenium-webdriver';
import { eventually, startApp, waitFor } from '../support/app.mjs';

const css = (s) => By.css(s);

/** Calls a command from the page and returns how it settled, a rejection included. */
async function settle(driver, cmd, args) {
  return driver.executeAsyncScript(
    `const done = arguments[arguments.length - 1];
     window.__TAURI_INTERNALS__.invoke(arguments[0], arguments[1])
       .then((value) => done({ ok: true, value }), (error) => done({ ok: false, error }));`,
    cmd,
    args,
  );
}

test('a refused run_tool carries its code and the JSON Pointer of the bad argument', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await waitFor(driver, '[data-testid="sidebar"]');
    const reply = await settle(driver, 'run_tool', { server: 'demo', tool: 'generate_report', arguments: { topic: 'x', seconds: 7200 } });
    assert.equal(reply.ok, false);
    assert.equal(reply.error.code, 'invalid_arguments');
    assert.equal(reply.error.path, '/seconds');
    assert.equal(reply.error.status, null);

    const unknown = await settle(driver, 'run_tool', { server: 'nowhere', tool: 'x', arguments: {} });
    assert.equal(unknown.error.code, 'unknown_server');
    assert.equal(unknown.error.server, 'nowhere');
  } finally {
    await app.stop();
  }
});

test('arguments the engine refuses from the JSON editor are marked on their field in the run form', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await (await waitFor(driver, '[data-testid="empty-run-demo"]')).click();
    const form = await waitFor(driver, '[data-testid="run-form"]');
    // The form switches to JSON only with what it holds valid; the topic is required.
    await form.findElement(css('input[name="topic"]')).sendKeys('too long a wait');
    await form.findElement(css('[data-testid="run-mode-json"]')).click();
    const json = await waitFor(driver, '[data-testid="run-json"]', 5000);
    // Two hours is past the tool's declared maximum; only the schema, judged by the engine, says so.
    await driver.executeScript(
      (el, text) => {
        el.value = text;
        el.dispatchEvent(new Event('input', { bubbles: true }));
      },
      json,
      JSON.stringify({ topic: 'too long a wait', seconds: 7200 }),
    );
    await form.findElement(css('[data-testid="run-submit"]')).click();

    const seconds = await eventually(async () => {
      const found = await form.findElements(css('input[name="seconds"]'));
      return found.length && (await found[0].getAttribute('aria-invalid')) === 'true' ? found[0] : null;
    });
    assert.ok(seconds, 'the seconds field is marked');
    // The form shows what was sent, so the user can fix it where it is marked.
    assert.equal(await seconds.getAttribute('value'), '7200');
    assert.equal(await form.findElement(css('input[name="topic"]')).getAttribute('aria-invalid'), null);
    assert.equal((await form.findElements(css('[data-testid="run-json"]'))).length, 0, 'back in the form');
    assert.match(await (await waitFor(driver, '[data-testid="run-error"]', 5000)).getText(), /seconds/);
    // Nothing was started.
    assert.equal((await driver.findElements(css('[data-testid="task-row"]'))).length, 0);

    // Fixed where it is marked, the same run starts.
    await seconds.clear();
    await seconds.sendKeys('1');
    await form.findElement(css('[data-testid="run-submit"]')).click();
    await waitFor(driver, '[data-testid="task-row"]', 15000);
  } finally {
    await app.stop();
  }
});
