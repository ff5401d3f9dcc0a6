// The research task that samples, start to end from the app, in both eras: the demo server's
// summarize_findings pinned once to 2025-11-25 (a server-to-client sampling/createMessage) and once
// to 2026-07-28 (an inputRequests entry answered with tasks/update), each answered by the configured
// model (a stand-in chat-completions server that checks what it receives) and by a reply written by
// hand; and the same task surviving Taskdeck quitting, and being killed, while its question waits.

import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { By, until } from 'selenium-webdriver';
import { appBinary, eventually, invoke, muteNotifications, processesWith, startApp, waitFor } from '../support/app.mjs';
import { startChatStandIn } from '../support/chat-stand-in.mjs';
import { quitFromTray } from '../support/tray.mjs';

const css = (s) => By.css(s);
const ERAS = ['legacy', 'modern'];
const SYSTEM = 'You are a concise analyst. Answer in one sentence.';

/** A scratch dir with a config naming the demo server twice, each pinned to the era it is named for. */
function twoEraSetup(prefix) {
  const scratch = mkdtempSync(join(tmpdir(), prefix));
  const configPath = join(scratch, 'config', 'servers.json');
  mkdirSync(dirname(configPath), { recursive: true });
  const demo = join(dirname(appBinary), 'taskdeck-demo-server');
  const stateOf = (era) => join(scratch, `state-${era}`);
  const mcpServers = Object.fromEntries(ERAS.map((era) => [era, { command: demo, args: ['--state', stateOf(era)], era }]));
  writeFileSync(configPath, JSON.stringify({ mcpServers }));
  return { scratch, configPath, dataDir: join(scratch, 'data'), stateOf };
}

function cleanUp(scratch) {
  // The demo servers run in their own process groups: none may outlive the test.
  for (const { pid } of processesWith(scratch)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
  if (!process.env.TASKDECK_E2E_KEEP) rmSync(scratch, { recursive: true, force: true });
}

/** The ids of the tasks listed now. */
async function listedIds(driver) {
  const rows = await driver.findElements(css('[data-testid="task-row"]'));
  return new Set(await Promise.all(rows.map((r) => r.getAttribute('data-task-id'))));
}

/**
 * Runs summarize_findings on `server` from the Tools view; resolves with the new task's id once its
 * sampling review is on screen.
 */
async function summarize(driver, server, topic) {
  await (await waitFor(driver, '[data-testid="nav-tasks"]')).click();
  const before = await listedIds(driver);
  await (await waitFor(driver, '[data-testid="nav-tools"]')).click();
  const tool = await waitFor(driver, `[data-testid="tool-row"][data-server="${server}"][data-tool="summarize_findings"]`, 30000);
  await tool.findElement(css('[data-testid="tool-run"]')).click();
  const form = await waitFor(driver, '[data-testid="run-form"][data-tool="summarize_findings"]');
  await form.findElement(css('input[name="topic"]')).sendKeys(topic);
  await form.findElement(css('[data-testid="run-submit"]')).click();
  // The app shows the task it started.
  const id = await eventually(async () => {
    const details = await driver.findElements(css('[data-testid="task-detail"]'));
    const shown = details.length ? await details[0].getAttribute('data-task-id') : null;
    return shown && !before.has(shown) ? shown : null;
  }, 20000, 50);
  assert.ok(id, `no new task shown after running summarize_findings on ${server}`);
  await review(driver, id, topic);
  return id;
}

/** The task's sampling review, once shown, checked to be the one asked for `topic`. */
async function review(driver, id, topic) {
  const shown = await waitFor(driver, `[data-testid="task-detail"][data-task-id="${id}"] [data-testid="sampling-review"]`, 30000);
  assert.equal(await shown.findElement(css('[data-testid="sampling-system"]')).getText(), SYSTEM);
  const messages = await shown.findElements(css('[data-testid="sampling-message"]'));
  assert.equal(messages.length, 1);
  assert.match(await messages[0].getText(), new RegExp(`Summarize these findings on ${topic} in one sentence`));
  return shown;
}

/** Waits until the sidebar counts `n` tasks waiting for an answer. */
async function waitingCount(driver, n) {
  const shown = await eventually(async () => {
    const counts = await driver.findElements(css('[data-testid="nav-waiting"]'));
    const text = counts.length ? await counts[0].getText() : '0';
    return text === String(n) ? text : null;
  }, 20000);
  assert.equal(shown, String(n), `the sidebar does not count ${n} waiting`);
}

/** Opens the task from the list (its detail and, while one is pending, its question). */
async function openTask(driver, id) {
  await (await waitFor(driver, '[data-testid="nav-tasks"]')).click();
  await (await waitFor(driver, `[data-testid="task-row"][data-task-id="${id}"]`, 30000)).click();
  return waitFor(driver, `[data-testid="task-detail"][data-task-id="${id}"]`);
}

/** Writes `text` as the reply to the task's sampling question and returns it to the server. */
async function replyByHand(driver, id, topic, text) {
  const shown = await review(driver, id, topic);
  await shown.findElement(css('[data-testid="sampling-reply"]')).sendKeys(text);
  await shown.findElement(css('[data-testid="sampling-send"]')).click();
}

/** Sends the task's sampling question to the configured model and returns its completion unchanged. */
async function replyByModel(driver, id, topic, completion) {
  const shown = await review(driver, id, topic);
  const toModel = await shown.findElement(css('[data-testid="sampling-model-send"]'));
  await driver.wait(until.elementIsEnabled(toModel), 10000);
  assert.equal(await toModel.getText(), 'Send to standin/e2e-analyst');
  await toModel.click();
  await waitFor(driver, `[data-testid="task-detail"][data-task-id="${id}"] [data-testid="sampling-completion"]`, 20000);
  const box = await shown.findElement(css('[data-testid="sampling-reply"]'));
  assert.equal(await box.getAttribute('value'), completion);
  await shown.findElement(css('[data-testid="sampling-send"]')).click();
}

/** The completed task's result text as shown (raw), its record and its event log. */
async function completedResult(driver, id) {
  await waitFor(driver, `[data-testid="task-row"][data-task-id="${id}"][data-status="completed"]`, 30000);
  const detail = await openTask(driver, id);
  const toggle = await detail.findElements(css('[data-testid="result-raw-toggle"]'));
  if (toggle.length > 0 && (await toggle[0].getAttribute('aria-pressed')) !== 'true') await toggle[0].click();
  const text = await waitFor(driver, `[data-testid="task-detail"][data-task-id="${id}"] [data-testid="result-text"]`, 5000);
  const { task, events } = await invoke(driver, 'task_detail', { id });
  return { text: await text.getText(), task, events };
}

/** Keeps model keys in the 0600 file (the test session has no OS keyring); returns the undo. */
function fileKeyStore() {
  const previous = process.env.TASKDECK_SIGN_IN_STORE;
  process.env.TASKDECK_SIGN_IN_STORE = 'file';
  return () => {
    if (previous === undefined) delete process.env.TASKDECK_SIGN_IN_STORE;
    else process.env.TASKDECK_SIGN_IN_STORE = previous;
  };
}

async function configureModel(driver, stand, key) {
  await invoke(driver, 'update_settings', {
    update: { models: { providers: [{ name: 'standin', kind: 'openai', base_url: stand.baseUrl, models: [{ id: 'e2e-analyst' }] }] } },
  });
  await invoke(driver, 'set_model_key', { provider: 'standin', key });
}

test('a sampling research task runs to its end from the app in both eras, answered by the model and by hand', async () => {
  const setup = twoEraSetup('taskdeck-e2e-sampling-eras-');
  const key = `sk-e2e-eras-${process.pid}`;
  const completion = 'Two rollbacks and one small pool.';
  const stand = await startChatStandIn({
    expect: { key, model: 'e2e-analyst', maxTokens: 200, system: SYSTEM, userIncludes: 'Summarize these findings on model ' },
    reply: completion,
  });
  let app;
  const restoreKeyStore = fileKeyStore();
  try {
    app = await startApp({ dataDir: setup.dataDir, configPath: setup.configPath });
    const { driver } = app;
    await waitFor(driver, '[data-testid="sidebar"]');
    await muteNotifications(driver);
    await configureModel(driver, stand, key);

    for (const era of ERAS) {
      const byModel = await summarize(driver, era, `model ${era}`);
      await replyByModel(driver, byModel, `model ${era}`, completion);
      const modelDone = await completedResult(driver, byModel);
      assert.equal(modelDone.task.era, era);
      // The model's own result went back: the server names the model that wrote it.
      assert.match(modelDone.text, new RegExp(`Findings on model ${era}: Three incidents`));
      assert.match(modelDone.text, /Summary \(e2e-analyst\): Two rollbacks and one small pool\./);

      const byHand = await summarize(driver, era, `hand ${era}`);
      await replyByHand(driver, byHand, `hand ${era}`, `Written by hand in ${era}.`);
      const handDone = await completedResult(driver, byHand);
      assert.equal(handDone.task.era, era);
      assert.match(handDone.text, new RegExp(`Summary \\(human\\): Written by hand in ${era}\\.`));
    }
    assert.deepEqual(stand.problems, [], 'the stand-in refused what it received');
    // One completion per model-answered task, each for its own task's findings.
    assert.deepEqual(
      stand.requests.map((r) => r.body.messages.find((m) => m.role === 'user').content.match(/findings on (model \w+)/)[1]),
      ['model legacy', 'model modern'],
    );
  } finally {
    await app?.stop();
    await stand.close();
    cleanUp(setup.scratch);
    restoreKeyStore();
  }
});

/** How many times Taskdeck logged its clean exit (the shutdown path a quit takes and a kill skips). */
function cleanExits(dataDir) {
  const dir = join(dataDir, 'logs');
  if (!existsSync(dir)) return 0;
  return readdirSync(dir)
    .filter((f) => f.startsWith('taskdeck.'))
    .reduce((n, f) => n + readFileSync(join(dir, f), 'utf8').split('taskdeck exits').length - 1, 0);
}

/** Waits until no process of the app on `dataDir` and no demo server of `scratch` is left. */
async function gone(t, dataDir, scratch) {
  assert.ok(await eventually(() => processesWith(appBinary, dataDir).length === 0, 15000), 'taskdeck is still running');
  // With their stdin closed the demo servers stop on their own, before the next instance starts
  // others on the same state.
  const servers = await eventually(() => processesWith(join(scratch, 'state-')).length === 0, 5000);
  if (!servers) t.diagnostic(`demo servers left after the app: ${JSON.stringify(processesWith(join(scratch, 'state-')))}`);
  assert.ok(servers, 'the demo servers exit once the app is gone');
}

test('a sampling question pending in either era survives Taskdeck quitting and being killed, and its answer reaches the server', async (t) => {
  const setup = twoEraSetup('taskdeck-e2e-sampling-restart-');
  const { dataDir, configPath } = setup;
  const key = `sk-e2e-restart-${process.pid}`;
  const completion = 'One cause, found after the restart.';
  const stand = await startChatStandIn({
    expect: { key, model: 'e2e-analyst', maxTokens: 200, system: SYSTEM, userIncludes: 'Summarize these findings on crash ' },
    reply: completion,
  });
  let app;
  const life = async () => {
    app = await startApp({ dataDir, configPath });
    await waitFor(app.driver, '[data-testid="sidebar"]');
    await muteNotifications(app.driver);
    return app.driver;
  };
  const pids = () => processesWith(appBinary, dataDir).map((p) => p.pid);
  const restoreKeyStore = fileKeyStore();
  try {
    // ---- first life: one question asked in each era, then Quit ----
    let driver = await life();
    const quitting = {};
    for (const era of ERAS) quitting[era] = await summarize(driver, era, `quit ${era}`);
    await quitFromTray(pids());
    await gone(t, dataDir, setup.scratch);
    assert.equal(cleanExits(dataDir), 1, 'the quit stopped the engine cleanly');
    await app.stop();
    app = undefined;

    // ---- second life: both asked again and answered; two more asked, then a crash ----
    driver = await life();
    await waitingCount(driver, 2);
    for (const era of ERAS) {
      await openTask(driver, quitting[era]);
      await replyByHand(driver, quitting[era], `quit ${era}`, `Answered after a quit in ${era}.`);
      const { text, task } = await completedResult(driver, quitting[era]);
      assert.equal(task.era, era);
      assert.match(text, new RegExp(`Summary \\(human\\): Answered after a quit in ${era}\\.`));
    }
    const crashing = {};
    for (const era of ERAS) crashing[era] = await summarize(driver, era, `crash ${era}`);
    const apps = processesWith(appBinary, dataDir);
    assert.equal(apps.length, 1, `one taskdeck process on ${dataDir}: ${JSON.stringify(apps)}`);
    process.kill(apps[0].pid, 'SIGKILL');
    await gone(t, dataDir, setup.scratch);
    assert.equal(cleanExits(dataDir), 1, 'the kill left no clean exit');
    await app.stop();
    app = undefined;

    // ---- third life: both asked again, sent to the model this time, finished ----
    driver = await life();
    await waitingCount(driver, 2);
    await configureModel(driver, stand, key);
    for (const era of ERAS) {
      await openTask(driver, crashing[era]);
      await replyByModel(driver, crashing[era], `crash ${era}`, completion);
      const { text, task, events } = await completedResult(driver, crashing[era]);
      assert.equal(task.era, era);
      assert.match(text, new RegExp(`Findings on crash ${era}: Three incidents`));
      assert.match(text, /Summary \(e2e-analyst\): One cause, found after the restart\./);
      // The log says which model wrote the reply and who let it go.
      const answers = events.filter((e) => e.kind === 'answer');
      assert.equal(answers.length, 1, JSON.stringify(events.map((e) => e.kind)));
      assert.deepEqual(
        { model: answers[0].data?.sampling?.model, approved_by: answers[0].data?.sampling?.approved_by, outcome: answers[0].data?.sampling?.outcome },
        { model: 'e2e-analyst', approved_by: 'user', outcome: 'sent' },
        JSON.stringify(answers[0].data),
      );
    }
    assert.deepEqual(stand.problems, [], 'the stand-in refused what it received');
    assert.equal(stand.requests.length, 2);
  } finally {
    await app?.stop();
    await stand.close();
    cleanUp(setup.scratch);
    restoreKeyStore();
  }
});
