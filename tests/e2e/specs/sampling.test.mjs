// Sampling from the app: the demo server's summarize_findings asks the host's language model for a
// summary mid-task. The request is reviewed in the task's detail (system prompt, messages), then
// answered by hand, or sent to a configured model (a stand-in chat-completions server that checks
// what it receives), read, edited and returned; either way the task completes with that reply.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { By, until } from 'selenium-webdriver';
import { appBinary, eventually, invoke, muteNotifications, startApp, waitFor } from '../support/app.mjs';
import { startChatStandIn } from '../support/chat-stand-in.mjs';

const css = (s) => By.css(s);

/** Runs summarize_findings on `topic` from the Tools view; resolves with the sampling review once shown. */
async function summarize(driver, topic) {
  await (await waitFor(driver, '[data-testid="nav-tools"]')).click();
  const tool = await waitFor(driver, '[data-testid="tool-row"][data-tool="summarize_findings"]', 30000);
  await tool.findElement(css('[data-testid="tool-run"]')).click();
  const form = await waitFor(driver, '[data-testid="run-form"][data-tool="summarize_findings"]');
  await form.findElement(css('input[name="topic"]')).sendKeys(topic);
  await form.findElement(css('[data-testid="run-submit"]')).click();
  await waitFor(driver, '[data-testid="task-row"][data-status="input_required"]', 30000);
  return waitFor(driver, '[data-testid="sampling-review"]', 20000);
}

/** The completed task's result text (raw, whatever the Markdown view makes of it). */
async function completedResult(driver) {
  const row = await waitFor(driver, '[data-testid="task-row"][data-status="completed"]', 30000);
  const id = await row.getAttribute('data-task-id');
  const detail = await waitFor(driver, `[data-testid="task-detail"][data-task-id="${id}"]`);
  const toggle = await detail.findElements(css('[data-testid="result-raw-toggle"]'));
  if (toggle.length > 0 && (await toggle[0].getAttribute('aria-pressed')) !== 'true') await toggle[0].click();
  const text = await waitFor(driver, `[data-testid="task-detail"][data-task-id="${id}"] [data-testid="result-text"]`, 5000);
  return text.getText();
}

test('a sampling request is reviewed in the app and a hand-written reply completes the task', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await waitFor(driver, '[data-testid="sidebar"]');
    await muteNotifications(driver);
    const review = await summarize(driver, 'e2e outages');

    // What the server wants the model to read is on screen before anything goes back.
    assert.match(await review.findElement(css('[data-testid="sampling-system"]')).getText(), /You are a concise analyst/);
    const messages = await review.findElements(css('[data-testid="sampling-message"]'));
    assert.equal(messages.length, 1);
    assert.match(await messages[0].getText(), /Summarize these findings on e2e outages in one sentence/);
    assert.match(await review.getText(), /up to 200 tokens/);

    // No model is configured: the model button is disabled, and says where to add one.
    const toModel = await review.findElement(css('[data-testid="sampling-model-send"]'));
    await driver.wait(until.elementIsDisabled(toModel), 5000);
    const reason = await waitFor(driver, '[data-testid="sampling-model-reason"]', 5000);
    await driver.wait(until.elementTextMatches(reason, /Settings → Models/), 5000);

    // An empty reply is refused in place; nothing is sent.
    await review.findElement(css('[data-testid="sampling-send"]')).click();
    assert.match(await (await waitFor(driver, '[data-testid="question-error"]', 5000)).getText(), /Write the reply first/);

    await review.findElement(css('[data-testid="sampling-reply"]')).sendKeys('Two outages, one expired certificate.');
    await review.findElement(css('[data-testid="sampling-send"]')).click();

    const result = await completedResult(driver);
    assert.match(result, /Summary \(human\): Two outages, one expired certificate\./);
  } finally {
    await app.stop();
  }
});

test('a sampling request is sent to the configured model, its completion edited in the app and returned', async () => {
  const key = `sk-e2e-${process.pid}`;
  const completion = 'The outages share one cause: an expired certificate.';
  const stand = await startChatStandIn({
    expect: {
      key,
      model: 'e2e-analyst',
      maxTokens: 200,
      system: 'You are a concise analyst. Answer in one sentence.',
      userIncludes: 'Summarize these findings on model outages',
    },
    reply: completion,
  });
  const previousStore = process.env.TASKDECK_SIGN_IN_STORE;
  // The key goes to the 0600 file: the test session has no OS keyring.
  process.env.TASKDECK_SIGN_IN_STORE = 'file';
  let app;
  try {
    app = await startApp();
    const { driver } = app;
    await waitFor(driver, '[data-testid="sidebar"]');
    await muteNotifications(driver);
    await invoke(driver, 'update_settings', {
      update: { models: { providers: [{ name: 'standin', kind: 'openai', base_url: stand.baseUrl, models: [{ id: 'e2e-analyst' }] }] } },
    });
    await invoke(driver, 'set_model_key', { provider: 'standin', key });

    const review = await summarize(driver, 'model outages');
    const toModel = await review.findElement(css('[data-testid="sampling-model-send"]'));
    await driver.wait(until.elementIsEnabled(toModel), 10000);
    assert.equal(await toModel.getText(), 'Send to standin/e2e-analyst');
    await toModel.click();

    // The completion lands in the reply box, and nothing has gone to the server yet.
    const note = await waitFor(driver, '[data-testid="sampling-completion"]', 20000);
    assert.match(await note.getText(), /From e2e-analyst \(42 tokens in, 7 out\)/);
    const box = await review.findElement(css('[data-testid="sampling-reply"]'));
    assert.equal(await box.getAttribute('value'), completion);
    assert.deepEqual(stand.problems, [], 'the stand-in refused what it received');
    assert.equal(stand.requests.length, 1);
    const row = await driver.findElement(css('[data-testid="task-row"]'));
    assert.equal(await row.getAttribute('data-status'), 'input_required');

    await box.sendKeys(' It expired on Friday.');
    await review.findElement(css('[data-testid="sampling-send"]')).click();
    const result = await completedResult(driver);
    // An edited completion is the user's reply.
    assert.match(result, /Summary \(human\): The outages share one cause: an expired certificate\. It expired on Friday\./);
    assert.equal(stand.requests.length, 1, 'returning the reply asks the model nothing more');
  } finally {
    await app?.stop();
    await stand.close();
    if (previousStore === undefined) delete process.env.TASKDECK_SIGN_IN_STORE;
    else process.env.TASKDECK_SIGN_IN_STORE = previousStore;
  }
});

test('a task asking a form and a sampling request at once is answered in one form with one send', async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'taskdeck-e2e-sampling-'));
  const configPath = join(scratch, 'config', 'servers.json');
  mkdirSync(dirname(configPath), { recursive: true });
  // plan_release asks its two questions only in the 2026-07-28 era.
  const demo = { command: join(dirname(appBinary), 'taskdeck-demo-server'), args: ['--state', join(scratch, 'state')], era: 'modern' };
  writeFileSync(configPath, JSON.stringify({ mcpServers: { demo } }));
  let app;
  try {
    app = await startApp({ configPath });
    const { driver } = app;
    await waitFor(driver, '[data-testid="sidebar"]');
    await muteNotifications(driver);
    await (await waitFor(driver, '[data-testid="nav-tools"]')).click();
    const tool = await waitFor(driver, '[data-testid="tool-row"][data-tool="plan_release"]', 30000);
    await tool.findElement(css('[data-testid="tool-run"]')).click();
    const form = await waitFor(driver, '[data-testid="run-form"][data-tool="plan_release"]');
    await form.findElement(css('input[name="version"]')).sendKeys('2.4.0');
    await form.findElement(css('[data-testid="run-submit"]')).click();

    const all = await waitFor(driver, '[data-testid="all-questions"]', 30000);
    const items = await all.findElements(css('[data-testid="all-questions-item"]'));
    assert.deepEqual(await Promise.all(items.map((i) => i.getAttribute('data-kind'))), ['form', 'sampling']);
    assert.match(await items[0].getText(), /Where should 2\.4\.0 be released\?/);
    assert.match(await items[1].findElement(css('[data-testid="sampling-system"]')).getText(), /You write short release notes/);
    // One set of buttons for both: neither question sends on its own.
    assert.equal((await all.findElements(css('[data-testid="answer-accept"], [data-testid="sampling-send"]'))).length, 0);

    // Both must be answered before anything is sent.
    await all.findElement(css('[data-testid="all-questions-send"]')).click();
    await waitFor(driver, '[data-testid="all-questions-error"]', 5000);
    const row = await driver.findElement(css('[data-testid="task-row"]'));
    assert.equal(await row.getAttribute('data-status'), 'input_required');

    let picked = false;
    for (const option of await items[0].findElements(css('select[name="environment"] option'))) {
      if ((await option.getText()) === 'Production') {
        await option.click();
        picked = true;
      }
    }
    assert.ok(picked, 'the environment is offered by title');
    await items[1].findElement(css('[data-testid="sampling-reply"]')).sendKeys('Faster search.');
    await all.findElement(css('[data-testid="all-questions-send"]')).click();

    const result = await completedResult(driver);
    assert.match(result, /Release 2\.4\.0 to production planned\.\s+Release note \(human\): Faster search\./);
    // One update carried both answers: the task's answer names both questions.
    const id = await row.getAttribute('data-task-id');
    const detail = await eventually(async () => {
      const d = await invoke(driver, 'task_detail', { id });
      return d.task.status === 'completed' ? d : null;
    });
    assert.equal(detail.events.filter((e) => e.kind === 'answer').length, 1, JSON.stringify(detail.events.map((e) => e.kind)));
  } finally {
    await app?.stop();
    if (!process.env.TASKDECK_E2E_KEEP) rmSync(scratch, { recursive: true, force: true });
  }
});
