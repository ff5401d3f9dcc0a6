// What a person reads every day, in the real webview: a report as a formatted document (and its raw
// text one click away), a task's timeline in plain words, and a tool found by searching.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { By } from 'selenium-webdriver';
import { eventually, muteNotifications, startApp, waitFor } from '../support/app.mjs';

const css = (s) => By.css(s);

/** Sets a text field the way typing does, so Svelte's binding hears it. */
async function setValue(driver, el, text) {
  await driver.executeScript(
    (field, value) => {
      field.value = value;
      field.dispatchEvent(new Event('input', { bubbles: true }));
    },
    el,
    text,
  );
}

test('a generate_report result reads as a document with a heading and a list, and the raw toggle shows the Markdown', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await waitFor(driver, '[data-testid="sidebar"]');
    await muteNotifications(driver);
    await (await waitFor(driver, '[data-testid="empty-run-demo"]')).click();
    const form = await waitFor(driver, '[data-testid="run-form"]');
    // A topic on several lines puts a list of its own right under the title, with markup that must
    // stay text; only the JSON side can hold a newline.
    await form.findElement(css('input[name="topic"]')).sendKeys('x');
    const seconds = await form.findElement(css('input[name="seconds"]'));
    await seconds.clear();
    await seconds.sendKeys('1');
    await form.findElement(css('[data-testid="run-mode-json"]')).click();
    const json = await waitFor(driver, '[data-testid="run-json"]', 5000);
    await setValue(driver, json, JSON.stringify({ topic: 'Reading test\n\n- first point\n- second point <b>bold?</b>', seconds: 1 }));
    await form.findElement(css('[data-testid="run-submit"]')).click();

    const row = await waitFor(driver, '[data-testid="task-row"][data-status="completed"]', 30000);
    const id = await row.getAttribute('data-task-id');
    const detail = await waitFor(driver, `[data-testid="task-detail"][data-task-id="${id}"]`);
    const doc = await waitFor(driver, `[data-testid="task-detail"][data-task-id="${id}"] [data-testid="result-markdown"]`);

    const headings = await doc.findElements(css('[data-md="heading"]'));
    assert.ok(headings.length >= 2, 'the report and its sections are headings');
    assert.equal(await headings[0].getText(), 'Report: Reading test');
    assert.equal(await headings[0].getTagName(), 'h4', 'under the pane’s own headings');
    // The first list is the one under the title (the topic is repeated in each section).
    const items = await (await doc.findElement(css('[data-md="list"]'))).findElements(css(':scope > li'));
    assert.deepEqual(await Promise.all(items.map((li) => li.getText())), ['first point', 'second point <b>bold?</b>']);
    const shown = await doc.getText();
    assert.ok(!shown.includes('# '), `no Markdown signs in the formatted text: ${shown}`);
    assert.match(shown, /Collecting sources/);
    // The markup in the topic is text: no element was made from it.
    assert.equal((await doc.findElements(css('b'))).length, 0);

    await (await detail.findElement(css('[data-testid="result-raw-toggle"]'))).click();
    const raw = await waitFor(driver, `[data-testid="task-detail"][data-task-id="${id}"] [data-testid="result-text"]`, 5000);
    assert.match(await raw.getText(), /^# Report: Reading test/);
    assert.match(await raw.getText(), /\n## Collecting sources\n/);
    assert.equal((await detail.findElements(css('[data-testid="result-markdown"]'))).length, 0);
    await (await detail.findElement(css('[data-testid="result-raw-toggle"]'))).click();
    await waitFor(driver, `[data-testid="task-detail"][data-task-id="${id}"] [data-testid="result-markdown"]`, 5000);
  } finally {
    await app.stop();
  }
});

test('the timeline of a diagnose_incident that asked and was answered reads in words', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await waitFor(driver, '[data-testid="sidebar"]');
    await muteNotifications(driver);
    await (await waitFor(driver, '[data-testid="nav-tools"]')).click();
    const tool = await waitFor(driver, '[data-testid="tool-row"][data-tool="diagnose_incident"]');
    await tool.findElement(css('[data-testid="tool-run"]')).click();
    await (await waitFor(driver, '[data-testid="run-submit"]')).click();

    const question = await waitFor(driver, '[data-testid="question-form"]', 30000);
    let picked = false;
    for (const option of await question.findElements(css('select[name="service"] option'))) {
      if ((await option.getText()) === 'Search cluster') {
        await option.click();
        picked = true;
      }
    }
    assert.ok(picked, 'Search cluster is offered');
    await question.findElement(css('input[name="notes"]')).sendKeys('slow since 09:00');
    await question.findElement(css('[data-testid="answer-accept"]')).click();

    const row = await waitFor(driver, '[data-testid="task-row"][data-status="completed"]', 30000);
    const id = await row.getAttribute('data-task-id');
    const timeline = await waitFor(driver, `[data-testid="task-detail"][data-task-id="${id}"] [data-testid="task-timeline"]`);
    const lines = async () => Promise.all((await timeline.findElements(css('[data-testid="timeline-text"]'))).map((el) => el.getText()));
    const texts = await eventually(async () => {
      const now = await lines();
      return now.some((t) => t.startsWith('Completed in')) ? now : null;
    }, 10000);
    assert.ok(texts, `the timeline ends with its completion: ${JSON.stringify(await lines())}`);
    assert.equal(texts[0], 'Started as a task');
    assert.ok(texts.includes('The server accepted the task'), JSON.stringify(texts));
    assert.ok(texts.includes('Asked: Which service is affected by the incident?'), JSON.stringify(texts));
    const answered = texts.find((t) => t.startsWith('You answered:'));
    assert.ok(answered, JSON.stringify(texts));
    assert.match(answered, /^You answered: Search cluster, slow since 09:00/);
    assert.match(texts.at(-1), /^Completed in \d+s$/);
    // Nothing of the engine's vocabulary reaches the sentences.
    for (const t of texts) assert.doesNotMatch(t, /→|input_required|tasks\/|remote/, t);

    const values = await timeline.findElement(css('[data-testid="timeline-values"]'));
    assert.match(await values.getText(), /Affected service:?\s*Search cluster/);
    assert.doesNotMatch(await values.getText(), /"search"|\{/);

    // The server's own word and the raw event stay one click away.
    const last = (await timeline.findElements(css('[data-testid="timeline-line"]'))).at(-1);
    const summary = await last.findElement(css('details summary'));
    assert.match(await summary.getText(), /server said “completed”/);
    await summary.click();
    assert.match(await last.getText(), /server_status/);

    // The tool just run is offered again from the Tools view.
    await (await waitFor(driver, '[data-testid="nav-tools"]')).click();
    await waitFor(driver, '[data-testid="recent-tools"] [data-testid="recent-tool"][data-tool="diagnose_incident"]');
  } finally {
    await app.stop();
  }
});

test('the tools search narrows to one tool, and a server folds', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await (await waitFor(driver, '[data-testid="nav-tools"]')).click();
    await waitFor(driver, '[data-testid="tool-row"][data-tool="generate_report"]');
    const rows = () => driver.findElements(css('[data-testid="tool-row"]'));
    const all = (await rows()).length;
    assert.ok(all > 3, `the demo offers several tools (${all})`);

    const search = await waitFor(driver, '[data-testid="tools-search"]');
    await search.sendKeys('INCIDENT service');
    const narrowed = await eventually(async () => ((await rows()).length === 1 ? rows() : null), 5000);
    assert.ok(narrowed, 'one tool is left');
    assert.equal(await narrowed[0].getAttribute('data-tool'), 'diagnose_incident');
    assert.equal(await (await waitFor(driver, '[data-testid="tools-match-count"]')).getText(), '1 tool matches');
    // The modern era dropped the per-tool annotation: there the server decides on each call.
    const support = await narrowed[0].findElement(css('[data-testid="tool-support"]'));
    const word = { required: 'runs as a task', optional: 'can run as a task', forbidden: 'never a task', server: 'server decides' };
    assert.equal(await support.getText(), word[await support.getAttribute('data-support')]);

    // Its description in full, on demand.
    await (await narrowed[0].findElement(css('[data-testid="tool-more"]'))).click();
    assert.match(await narrowed[0].getText(), /continues once answered/);
    assert.match(await narrowed[0].getText(), /as a task/);

    await search.sendKeys(' nothing-like-this');
    await waitFor(driver, '[data-testid="tools-no-match"]', 5000);
    await setValue(driver, search, '');
    await eventually(async () => (await rows()).length === all, 5000);

    const server = await waitFor(driver, '[data-testid="tools-server"][data-server="demo"]');
    await (await server.findElement(css('[data-testid="tools-server-toggle"]'))).click();
    await eventually(async () => (await server.getAttribute('data-folded')) === 'true', 5000);
    assert.equal((await server.findElements(css('[data-testid="tool-row"]'))).length, 0, 'a folded server shows no tools');
    assert.equal(await (await server.findElement(css('[data-testid="tools-server-toggle"]'))).getAttribute('aria-expanded'), 'false');

    // Folding is remembered while the app runs: another view and back keeps it folded.
    await (await waitFor(driver, '[data-testid="nav-tasks"]')).click();
    await (await waitFor(driver, '[data-testid="nav-tools"]')).click();
    const again = await waitFor(driver, '[data-testid="tools-server"][data-server="demo"]');
    assert.equal(await again.getAttribute('data-folded'), 'true');
    await (await again.findElement(css('[data-testid="tools-server-toggle"]'))).click();
    await waitFor(driver, '[data-testid="tool-row"][data-tool="generate_report"]', 5000);
  } finally {
    await app.stop();
  }
});
