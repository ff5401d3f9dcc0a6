// The UI's main path, driven through the data-testid hooks listed in ui/src/tasks/TasksView.svelte:
// run a tool from the first-launch empty state, watch it finish, then answer a server's question.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { By } from 'selenium-webdriver';
import { startApp, waitFor } from '../support/app.mjs';

const css = (s) => By.css(s);

test('the empty state runs generate_report through the run form, and the row finishes with its report', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await (await waitFor(driver, '[data-testid="empty-run-demo"]')).click();

    const form = await waitFor(driver, '[data-testid="run-form"]');
    // Submitting without the required topic is refused next to the field, before anything is sent.
    await form.findElement(css('[data-testid="run-submit"]')).click();
    await waitFor(driver, '[data-testid="run-error"]', 5000);
    assert.equal(await form.findElement(css('input[name="topic"]')).getAttribute('aria-invalid'), 'true');

    // Switching to JSON and back never drops what was typed: a value one side cannot hold keeps the
    // user where they are, with the reason.
    const seconds = () => form.findElement(css('input[name="seconds"]'));
    await (await seconds()).clear();
    await (await seconds()).sendKeys('soon');
    await form.findElement(css('[data-testid="run-mode-json"]')).click();
    assert.match(await (await waitFor(driver, '[data-testid="run-error"]', 5000)).getText(), /Fix or clear/);
    assert.equal(await (await seconds()).getAttribute('value'), 'soon');

    await (await seconds()).clear();
    await (await seconds()).sendKeys('1');
    await form.findElement(css('input[name="topic"]')).sendKeys('E2E <b>report</b>');
    await form.findElement(css('[data-testid="run-mode-json"]')).click();
    const json = await waitFor(driver, '[data-testid="run-json"]', 5000);
    assert.deepEqual(JSON.parse(await json.getAttribute('value')), { topic: 'E2E <b>report</b>', seconds: 1 });
    await driver.executeScript(
      (el, text) => {
        el.value = text;
        el.dispatchEvent(new Event('input', { bubbles: true }));
      },
      json,
      JSON.stringify({ topic: 'E2E <b>report</b>', seconds: 1, priority: 'high' }),
    );
    await form.findElement(css('[data-testid="run-mode-form"]')).click();
    assert.match(await (await waitFor(driver, '[data-testid="run-error"]', 5000)).getText(), /cannot show “priority”/);
    assert.equal((await form.findElements(css('[data-testid="run-json"]'))).length, 1, 'still in JSON');
    await driver.executeScript(
      (el, text) => {
        el.value = text;
        el.dispatchEvent(new Event('input', { bubbles: true }));
      },
      json,
      JSON.stringify({ topic: 'E2E <b>report</b>', seconds: 1 }),
    );
    await form.findElement(css('[data-testid="run-mode-form"]')).click();
    assert.equal(await (await form.findElement(css('input[name="topic"]'))).getAttribute('value'), 'E2E <b>report</b>');
    await form.findElement(css('[data-testid="run-submit"]')).click();

    // The new task is selected in the Tasks view and finishes on its own.
    const row = await waitFor(driver, '[data-testid="task-row"][data-status="completed"]', 30000);
    const id = await row.getAttribute('data-task-id');
    const detail = await waitFor(driver, `[data-testid="task-detail"][data-task-id="${id}"]`);
    // The report is Markdown: its raw text is one click away (reading.test.mjs covers the formatted view).
    await (await detail.findElement(css('[data-testid="result-raw-toggle"]'))).click();
    const result = await waitFor(driver, `[data-testid="task-detail"][data-task-id="${id}"] [data-testid="result-text"]`, 5000);
    // Markup from the server is shown as text, never rendered.
    assert.match(await result.getText(), /# Report: E2E <b>report<\/b>/);
    assert.equal((await detail.findElements(css('[data-testid="task-cancel"]'))).length, 0);
  } finally {
    await app.stop();
  }
});

test('a question is answered from the generated form and the task completes with the answer', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await (await waitFor(driver, '[data-testid="nav-tools"]')).click();
    const tool = await waitFor(driver, '[data-testid="tool-row"][data-tool="diagnose_incident"]');
    await tool.findElement(css('[data-testid="tool-run"]')).click();
    await (await waitFor(driver, '[data-testid="run-submit"]')).click();

    await waitFor(driver, '[data-testid="task-row"][data-status="input_required"] [data-testid="needs-input-badge"]', 30000);
    const question = await waitFor(driver, '[data-testid="question-form"]');
    assert.match(await question.getText(), /demo asks:/);

    await question.findElement(css('[data-testid="answer-accept"]')).click();
    await waitFor(driver, '[data-testid="question-error"]', 5000);
    assert.equal(await question.findElement(css('select[name="service"]')).getAttribute('aria-invalid'), 'true');

    const options = await question.findElements(css('select[name="service"] option'));
    let picked = false;
    for (const option of options) {
      if ((await option.getText()) === 'Auth gateway') {
        await option.click();
        picked = true;
      }
    }
    assert.ok(picked, 'the titled options are labelled by title');
    await question.findElement(css('input[name="notes"]')).sendKeys('seen since 09:00');
    await question.findElement(css('[data-testid="answer-accept"]')).click();

    await waitFor(driver, '[data-testid="task-row"][data-status="completed"]', 30000);
    const result = await waitFor(driver, '[data-testid="result-text"]');
    assert.match(await result.getText(), /Diagnosis for Auth gateway[\s\S]*seen since 09:00/);
  } finally {
    await app.stop();
  }
});
