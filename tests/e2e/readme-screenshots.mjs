// Takes the README's screenshots from the real app (docs/screenshots/): a history with a report
// rendered, a failure, a question, the tools, the run form and the settings in the dark theme.
// Outside specs/, so the suite does not run it:  tests/e2e/run.sh readme-screenshots.mjs
// (after `make app-build demo-build`).

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { By, Key } from 'selenium-webdriver';
import { eventually, invoke, muteNotifications, repoRoot, startApp, waitFor } from './support/app.mjs';

const out = join(repoRoot, 'docs/screenshots');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function shot(driver, name) {
  // Past the next frames, so that what changed is drawn; the pointer is out of the way.
  await sleep(400);
  writeFileSync(join(out, `${name}.png`), await driver.takeScreenshot(), 'base64');
}

const run = (driver, tool, args) => invoke(driver, 'run_tool', { server: 'demo', tool, arguments: args });
const status = async (driver, id) => (await invoke(driver, 'task_detail', { id })).task.status;
const until = (driver, id, wanted) => eventually(async () => wanted.includes(await status(driver, id)), 60000, 200);

test('README screenshots', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await waitFor(driver, '[data-testid="sidebar"]');
    await muteNotifications(driver);

    // A history of a few days' work, oldest first.
    const done = [];
    for (const topic of ['Onboarding survey', 'Churn in EMEA', 'Pricing page tests']) {
      done.push((await run(driver, 'generate_report', { topic, seconds: 0 })).id);
    }
    const failed = (await run(driver, 'flaky_export', { fail_at: 35 })).id;
    const counted = (await run(driver, 'count', { n: 40, delay_ms: 0 })).id;
    const asking = (await run(driver, 'diagnose_incident', {})).id;
    const report = (await run(driver, 'generate_report', { topic: 'Q3 revenue', seconds: 1 })).id;
    for (const id of [...done, counted, report]) await until(driver, id, ['completed']);
    await until(driver, failed, ['failed']);
    await until(driver, asking, ['input_required']);
    const working = (await run(driver, 'generate_report', { topic: 'Q4 forecast', seconds: 600 })).id;
    await until(driver, working, ['working']);
    await sleep(1500); // some progress on the bar

    await (await waitFor(driver, `[data-testid="task-row"][data-task-id="${report}"]`)).click();
    await waitFor(driver, `[data-testid="task-detail"][data-task-id="${report}"] [data-testid="result-markdown"]`);
    await shot(driver, 'tasks');

    await (await waitFor(driver, `[data-testid="task-row"][data-task-id="${failed}"]`)).click();
    await waitFor(driver, `[data-testid="task-detail"][data-task-id="${failed}"] [data-testid="task-error"]`);
    await shot(driver, 'failed-task');

    await (await waitFor(driver, `[data-testid="task-row"][data-task-id="${asking}"]`)).click();
    await waitFor(driver, `[data-testid="task-detail"][data-task-id="${asking}"] [data-testid="question-form"]`);
    await shot(driver, 'question');

    await (await waitFor(driver, '[data-testid="nav-tools"]')).click();
    const search = await waitFor(driver, '[data-testid="tools-search"]');
    await waitFor(driver, '[data-testid="tool-row"]', 30000);
    await search.sendKeys('report');
    await shot(driver, 'tools');
    await search.clear();
    await search.sendKeys(Key.ESCAPE);

    const row = await waitFor(driver, '[data-testid="tool-row"][data-tool="generate_report"]');
    await row.findElement(By.css('[data-testid="tool-run"]')).click();
    const form = await waitFor(driver, '[data-testid="run-form"]');
    await form.findElement(By.css('input[name="topic"]')).sendKeys('Q4 forecast');
    await shot(driver, 'run-form');
    await driver.actions().sendKeys(Key.ESCAPE).perform();

    await invoke(driver, 'update_settings', {
      update: { theme: 'dark', retention: { keep_days: 90, keep_tasks: null, max_mb: 500 } },
    });
    await (await waitFor(driver, '[data-testid="nav-settings"]')).click();
    await waitFor(driver, '[data-testid="settings-retention"]');
    await shot(driver, 'settings-dark');
    await invoke(driver, 'update_settings', { update: { theme: 'system' } });
    await invoke(driver, 'cancel_task', { id: working });
  } finally {
    await app.stop();
  }
});
